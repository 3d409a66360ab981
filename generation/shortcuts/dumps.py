"""Document dumps for knowledge tasks: every policy document, or the one sharing most words with
the question, as written, with its numbers also listed in digits, with every number written in
words, and with every digit removed. A knowledge contract that counts only digits, or only checks
that a fact occurs somewhere, shows here."""
from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache, partial
from typing import Any

from dibench.core.facts import renderings, stated
from dibench.generation.document_text import sentences
from dibench.generation.shortcuts.base import AuditTask, Corpus, Shortcut, text_field

_UNITS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
          "seventeen eighteen nineteen").split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_WORDS = re.compile(r"[a-z]{3,}")


def in_words(n: int) -> str:
    """A non-negative integer in English words: 1250 -> "one thousand two hundred fifty"."""
    if n < 20:
        return _UNITS[n]
    if n < 100:
        return _TENS[n // 10 - 2] + ("" if n % 10 == 0 else "-" + _UNITS[n % 10])
    for size, word in ((10**9, "billion"), (10**6, "million"), (1000, "thousand"), (100, "hundred")):
        if n >= size:
            head, rest = divmod(n, size)
            return f"{in_words(head)} {word}" + (f" {in_words(rest)}" if rest else "")
    raise AssertionError(n)


def _number_in_words(m: re.Match[str]) -> str:
    whole, _, frac = m.group(0).replace(",", "").partition(".")
    words = in_words(int(whole))
    return words + (" point " + " ".join(_UNITS[int(d)] for d in frac) if frac else "")


def as_written(text: str) -> str:
    return text


def with_digits(text: str) -> str:
    """The text, then every number and date it states (words included) in digits."""
    return text + "\n" + " ".join(renderings(stated(text)))


def numbers_as_words(text: str) -> str:
    return _NUMBER.sub(_number_in_words, text)


def digits_removed(text: str) -> str:
    return re.sub(r"\d", "", text)


RENDERINGS: dict[str, Callable[[str], str]] = {
    "as written": as_written, "numbers as digits": with_digits, "numbers as words": numbers_as_words,
    "digits removed": digits_removed}


@lru_cache(maxsize=16384)
def words_of(text: str) -> frozenset[str]:
    """The distinct words of three letters or more of a text, lower-cased (every strategy of an
    audit asks the same documents again)."""
    return frozenset(_WORDS.findall(text.lower()))


@lru_cache(maxsize=4096)
def nearest_document(question: str, documents: tuple[str, ...]) -> str | None:
    """The document sharing most distinct words (of three letters or more) with the question; of
    equals, the first."""
    if not documents:
        return None
    asked = words_of(question)
    return documents[max(range(len(documents)), key=lambda i: (len(asked & words_of(documents[i])), -i))]


def _dump(render: Callable[[str], str], nearest: bool, task: AuditTask, corpus: Corpus) -> Any:
    field = text_field(task.contract)
    if field is None or not corpus.documents:
        return None
    doc = nearest_document(task.question, corpus.documents) if nearest else "\n\n".join(corpus.documents)
    return {field: render(doc or "")}


def _extract(sentences_kept: int, task: AuditTask, corpus: Corpus) -> Any:
    """The nearest document's sentences sharing most words with the question, within the word cap:
    keyword matching where retrieval and reading are asked for."""
    from dibench.core.contracts import MAX_WORDS

    field = text_field(task.contract)
    doc = nearest_document(task.question, corpus.documents) if field else None
    if field is None or doc is None:
        return None
    return {field: " ".join(" ".join(nearest_sentences(task.question, doc)[:sentences_kept]).split()[:MAX_WORDS])}


def nearest_sentences(question: str, doc: str) -> list[str]:
    """The document's sentences, those sharing most words with the question first."""
    asked = set(_WORDS.findall(question.lower()))
    return sorted(sentences(doc), key=lambda x: -len(asked & set(_WORDS.findall(x.lower()))))


SHORTCUTS: tuple[Shortcut, ...] = (
    *(Shortcut(f"{'nearest document' if nearest else 'every document'}, {name}", partial(_dump, render, nearest))
      for nearest in (False, True) for name, render in RENDERINGS.items()),
    Shortcut("nearest document, the sentence sharing most words with the question", partial(_extract, 1)),
    Shortcut("nearest document, the three sentences sharing most words with the question", partial(_extract, 3)),
)
