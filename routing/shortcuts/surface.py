"""Surface features of a request: what punctuation and fixed words give away, with no meaning read."""
from __future__ import annotations

from dibench.routing.ask_split import ASK_STARTS, ask_clauses, clause_parts, is_closing, sentences, starts_an_ask, words

__all__ = ["ASK_STARTS", "JOINING_WORDS", "ask_clauses", "asks", "is_closing", "opening", "sentences", "signature",
           "words"]
JOINING_WORDS = frozenset("and also then plus next besides separately first after using".split())


def asks(request: str) -> int:
    """How many asks the request seems to hold: clauses that start like a question or an instruction,
    over its non-closing sentences (at least one)."""
    n = 0
    for s in sentences(request):
        if is_closing(s):
            continue
        n += max(1, sum(1 for p in clause_parts(s) if starts_an_ask(p)))
    return max(n, 1)


def opening(request: str, n: int = 2) -> str:
    """The request's first n words: a fixed opening marks a template's kind of request."""
    return " ".join(words(request)[:n])


def signature(request: str) -> tuple[str, int, int, int]:
    """(opening, sentences, asks, question marks): the whole surface a learned shortcut may use."""
    return opening(request), len(sentences(request)), asks(request), request.count("?")
