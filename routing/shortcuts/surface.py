"""Surface features of a request: what punctuation and fixed words give away, with no meaning read."""
from __future__ import annotations

import re

_SENTENCE = re.compile(r"[^.?!;]+[.?!;]*")
_WORD = re.compile(r"[A-Za-z0-9']+")
# words a clause of a question or an instruction starts with (any template or person writes them)
ASK_STARTS = frozenset("what which how who whom whose when where why list show find give return count tell "
                       "is are was were do does did can name point i".split())
_CLAUSE_JOIN = re.compile(r",\s*(?:and|also|then|plus)?\s*|\s+-\s+|\s+and\s+(?=(?:" + "|".join(
    sorted(ASK_STARTS)) + r")\b)", re.IGNORECASE)
JOINING_WORDS = frozenset("and also then plus next besides separately first after using".split())


def sentences(request: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(request) if _WORD.search(s)]


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def is_closing(sentence: str) -> bool:
    """A sentence that asks for nothing: short and without a question word (a "Thanks." or "That is all.")."""
    ws = words(sentence)
    return len(ws) <= 6 and not sentence.rstrip().endswith("?") and not (ws and ws[0] in ASK_STARTS - {"i", "is"})


def asks(request: str) -> int:
    """How many asks the request seems to hold: clauses that start like a question or an instruction,
    over its non-closing sentences (at least one)."""
    n = 0
    for s in sentences(request):
        if is_closing(s):
            continue
        parts = [p for p in _CLAUSE_JOIN.split(s) if p and _WORD.search(p)]
        n += max(1, sum(1 for p in parts if words(p)[:1] and words(p)[0] in ASK_STARTS))
    return max(n, 1)


def opening(request: str, n: int = 2) -> str:
    """The request's first n words: a fixed opening marks a template's kind of request."""
    return " ".join(words(request)[:n])


def signature(request: str) -> tuple[str, int, int, int]:
    """(opening, sentences, asks, question marks): the whole surface a learned shortcut may use."""
    return opening(request), len(sentences(request)), asks(request), request.count("?")
