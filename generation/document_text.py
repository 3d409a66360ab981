"""A policy document's text as prose: its sentences, whole and in order, and markdown read as
plain text. What knowledge tasks quote and what retrieval shortcuts split."""
from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"(])")


def sentences(body: str) -> list[str]:
    """The document's sentences, whole, in order: each heading is one, each paragraph is split
    after a full stop, question or exclamation mark followed by a capital or a digit."""
    return [s for s, _heading in marked_sentences(body)]


_QUOTE_LINE = re.compile(r"^[ \t]*>[ \t]?", re.MULTILINE)


def marked_sentences(body: str) -> list[tuple[str, bool]]:
    """`sentences`, each with whether it is a heading (a title states no rule)."""
    out = []
    for block in body.split("\n\n"):
        # a quote over several lines is one paragraph: each line's quote mark goes, not only the first
        block = " ".join(_QUOTE_LINE.sub("", block).split())
        if block.startswith("#"):
            out.append((block.lstrip("#").strip(), True))
        elif block:
            out += [(x.strip(), False) for x in _SENTENCE_END.split(block) if x.strip()]
    return out


_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MARKS = (re.compile(r"(\*\*|\*|`)(?=\S)(.+?)(?<=\S)\1"), re.compile(r"(?<!\w)(__|_)(?=\S)(.+?)(?<=\S)\1(?!\w)"))


# What is left of a mark a sentence break cut in two, and a quote or list marker opening a line.
_STRAY = re.compile(r"\*\*|`|(?<!\w)__|__(?!\w)")
_LINE_MARK = re.compile(r"(?:(?<=^)|(?<=[.:;] ))(?:>\s*|[-*+]\s+|\d+[.)]\s+)")


def plain(text: str) -> str:
    """Markdown read as prose: a link as its text, bold, italics and code marks dropped ("From
    **1 April 2024**" -> "From 1 April 2024"), with the half of a mark a sentence break left, and
    quote and list markers; an underscore inside a word stays."""
    text = _LINK.sub(r"\1", text)
    for mark in _MARKS:
        text = mark.sub(r"\2", text)
    return _LINE_MARK.sub("", _STRAY.sub("", text)).strip()
