"""Neighbour guesses for knowledge tasks: the word a document writes next to the question's own
words. A question names the column it asks about ("Which value of the loan status ...", "For which
rental store ..."), and a document often writes the value right after that name ("loans with
status D", "at store 2") or the kind right before its noun ("residential customers"); a code in
capitals (UROK, POPLATEK PO OBRATU) stands out of a sentence without being set apart. Each guess
reads the sentence nearest the question in any document, or in the document nearest the question:
the word after a question word, the word before one, the first or last code in capitals, every
code as a list."""
from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any

from dibench.generation.shortcuts.base import AuditTask, Corpus, Shortcut, asked_kind
from dibench.generation.shortcuts.dumps import nearest_document
from dibench.generation.shortcuts.retrieval import all_sentences, content_words, nearest_sentence, \
    sentence_nearest_question

_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-']*(?:\.\d+)?")
# A code written in capitals, several words of it in a row kept together ("SANKC. UROK").
_CODE = re.compile(r"\b[A-Z][A-Z0-9\-]+\.?(?:\s+[A-Z][A-Z0-9\-]+\.?)*")
_FILLER = frozenset("a an the of in on at to by with and or is are be as for from our its their this that "
                    "these those any each every all not no".split())

Where = Callable[[AuditTask, Corpus], str | None]


def _stem(word: str) -> str:
    """Crude: "customers" and "customer" alike."""
    w = word.lower()
    return w[:-1] if w.endswith("s") and len(w) > 3 else w


def _in_nearest_document(task: AuditTask, corpus: Corpus) -> str | None:
    doc = nearest_document(task.question, corpus.documents)
    return None if doc is None else nearest_sentence(task.question, all_sentences((doc,)))


def neighbours(question: str, sentence: str, after: bool) -> list[str]:
    """The words of `sentence` right after (or before) a word the question uses, in order, each
    once; neither filler nor a question word itself."""
    asked = {_stem(w) for w in content_words(question)}
    tokens = _TOKEN.findall(sentence)
    out: list[str] = []
    for i, t in enumerate(tokens):
        j = i + 1 if after else i - 1
        if _stem(t) in asked and 0 <= j < len(tokens):
            w = tokens[j]
            if w.lower() not in _FILLER and _stem(w) not in asked and w not in out:
                out.append(w)
    return out


def codes(sentence: str) -> list[str]:
    """The codes in capitals (two letters or more) of `sentence`, in order, each once."""
    return list(dict.fromkeys(m.group(0).strip().rstrip(".") for m in _CODE.finditer(sentence)))


def _value(kind: str, word: str) -> Any:
    if kind == "number":
        try:
            return {"value": int(word) if word.isdigit() else float(word), "unit": None}
        except ValueError:
            return None
    return {"value": [word] if kind == "list" else word, "unit": None}


def _neighbour(where: Where, after: bool, task: AuditTask, corpus: Corpus) -> Any:
    kind, s = asked_kind(task), where(task, corpus)
    if kind is None or s is None:
        return None
    found = neighbours(task.question, s, after)
    if kind == "list":
        return {"value": found, "unit": None} if found else None
    if kind == "number":
        found = [w for w in found if w[0].isdigit()]
    return _value(kind, found[0]) if found else None


def _code(where: Where, pick: str, task: AuditTask, corpus: Corpus) -> Any:
    kind, s = asked_kind(task), where(task, corpus)
    if kind not in ("name", "list") or s is None:
        return None
    found = codes(s)
    if not found:
        return None
    if kind == "list" or pick == "every":
        return {"value": found, "unit": None}
    return _value(kind, found[0] if pick == "first" else found[-1])


_WHERE: tuple[tuple[str, Where], ...] = (("in any document", sentence_nearest_question),
                                         ("in the nearest document", _in_nearest_document))

SHORTCUTS: tuple[Shortcut, ...] = (
    *(Shortcut(f"sentence nearest the question {w}, the word {side} a question word", partial(_neighbour, f, a))
      for w, f in _WHERE for side, a in (("after", True), ("before", False))),
    *(Shortcut(f"sentence nearest the question {w}, its {p} code in capitals", partial(_code, f, p))
      for w, f in _WHERE for p in ("first", "last", "every")),
)
