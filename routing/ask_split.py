"""A request split as a reader of punctuation splits it: sentences, words, closings and asks (the
clauses that start like a question or an instruction). The shortcut routers and the word-matching
guard of generation read requests through these."""
from __future__ import annotations

import re

_SENTENCE = re.compile(r"[^.?!;]+[.?!;]*")
_WORD = re.compile(r"[A-Za-z0-9']+")
# words a clause of a question or an instruction starts with (any template or person writes them)
ASK_STARTS = frozenset("what which how who whom whose when where why list show find give return count tell "
                       "is are was were do does did can name point i".split())
_CLAUSE_JOIN = re.compile(r",\s*(?:and|also|then|plus)?\s*|\s+-\s+|\s+and\s+(?=(?:" + "|".join(
    sorted(ASK_STARTS)) + r")\b)", re.IGNORECASE)


def sentences(request: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(request) if _WORD.search(s)]


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def is_closing(sentence: str) -> bool:
    """A sentence that asks for nothing: short and without a question word (a "Thanks." or "That is all.")."""
    ws = words(sentence)
    return len(ws) <= 6 and not sentence.rstrip().endswith("?") and not (ws and ws[0] in ASK_STARTS - {"i", "is"})


def clause_parts(sentence: str) -> list[str]:
    """The sentence cut at commas, joining words and dashes (the parts holding a word)."""
    return [p for p in _CLAUSE_JOIN.split(sentence) if p and _WORD.search(p)]


def starts_an_ask(part: str) -> bool:
    return bool(words(part)[:1]) and words(part)[0] in ASK_STARTS


def ask_clauses(request: str) -> list[str]:
    """The request's asks as text: over its non-closing sentences, each clause that starts like a
    question or an instruction, with the parts after it up to the next such (a sentence without one
    is one ask)."""
    out: list[str] = []
    for s in sentences(request):
        if is_closing(s):
            continue
        clauses: list[str] = []
        for p in clause_parts(s):
            if not clauses or starts_an_ask(p):
                clauses.append(p)
            else:
                clauses[-1] += ", " + p
        out += clauses
    return out
