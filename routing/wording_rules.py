"""Rules a request's wording must keep, read off the text: no word written twice in a row ("that
that"), no two closings in a row ("Thanks. That is all."), no joining phrase stacked ("a as well
as b as well as c"), no two questions fused by a dash ("... than 200 - what are ..."). The first
rule broken is named; the validator refuses the request with it. A closing holds one closing phrase
("Thanks, and that is all." stacks two), and three asks in a row are not strung on bare commas.
"""
from __future__ import annotations

import re

_REPEATED = re.compile(r"\b([a-z]+)\s+\1\b", re.IGNORECASE)
_SENTENCE = re.compile(r"[^.?!]+[.?!]*")
_CLOSING = re.compile(r"^\s*(?:also,?\s+)?(?:thanks|thank you|that is all|that's all)\b", re.IGNORECASE)
_CLOSING_PHRASE = re.compile(r"\b(?:thanks|thank you|that is all|that's all)\b", re.IGNORECASE)
_ASK = r"(?:what|which|how|who|list|show|find|give|return|count|tell)\b"
_ASKS_RUN = re.compile(rf",\s+{_ASK}[^.?!]*,\s+{_ASK}[^.?!]*,\s+{_ASK}", re.IGNORECASE)  # ", what ..., how ..., list"
_FUSED = re.compile(r"\s[-\u2013]\s+(?:what|which|how|who|list|show|find|give|return|count|tell)\b", re.IGNORECASE)
STACKED = ("as well as", "and also", "along with")  # joining phrases written at most once
REPEATABLE = frozenset({"had"})  # a word a person may well write twice in a row


def broken_rule(text: str) -> str | None:
    """The first wording rule text breaks, in words, or None."""
    m = _REPEATED.search(text)
    if m and m.group(1).lower() not in REPEATABLE:
        return f"repeats the word {m.group(1)!r}"
    sentences = [s for s in _SENTENCE.findall(text) if s.strip()]
    if any(_CLOSING.match(a) and _CLOSING.match(b) for a, b in zip(sentences, sentences[1:])):
        return "stacks two closings"
    if any(len(_CLOSING_PHRASE.findall(s)) > 1 for s in sentences):  # "Thanks, and that is all."
        return "stacks two closings"
    if _ASKS_RUN.search(text):
        return "runs three asks together with bare commas"
    low = text.lower()
    for phrase in STACKED:
        if len(re.findall(rf"\b{phrase}\b", low)) > 1:
            return f"stacks {phrase!r}"
    if _FUSED.search(text):
        return "fuses two questions with a dash"
    return None
