"""Knowledge facts in free text: numbers, percentages and dates in their usual renderings.

A fact is found in a text when the text states the same value: a number by value (3 = "three",
"1,000" = 1000, 10% = 0.1 = "ten percent"), a date however it is written (2024-01-01 =
"1 January 2024" = "January 1st, 2024"), anything else as whole words (case-insensitive).
`stated` lists the numbers and dates a text states; `strays` those an answer states that its
sources do not (docs/contracts.md, "Knowledge facts"). Pure functions.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
_MONTH_NUMBER = {m: i for i, m in enumerate(MONTHS, start=1)} | {m[:3]: i for i, m in enumerate(MONTHS, start=1)}
_MONTH_NUMBER["sept"] = 9
_MONTH = r"(" + "|".join(sorted(_MONTH_NUMBER, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_DATES = (
    (re.compile(r"(?<![\w.])(\d{4})-(\d{2})-(\d{2})(?![\w])"), ("y", "m", "d")),
    (re.compile(r"(?<![\w.])" + _DAY + r"(?:\s+of)?\s+" + _MONTH + r",?\s+(\d{4})(?!\w)", re.IGNORECASE),
     ("d", "M", "y")),
    (re.compile(r"(?<![\w.])" + _MONTH + r"\s+" + _DAY + r",?\s+(\d{4})(?!\w)", re.IGNORECASE), ("M", "d", "y")),
)
_PERCENT = r"\s*(%|percent\b|per\s+cent\b)?"
_DIGITS = re.compile(r"(?<![\w.])([-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)(?![\d])" + _PERCENT, re.IGNORECASE)
_UNITS = {w: i for i, w in enumerate(("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                                      "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
                                      "seventeen", "eighteen", "nineteen"))}
_TENS = {w: 10 * i for i, w in enumerate(("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty",
                                          "ninety"), start=2)}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_WORD = re.compile(r"[a-z]+", re.IGNORECASE)


@dataclass(frozen=True)
class Value:
    """A number (`pct`: written as a percentage) or a date that a text states."""

    number: Decimal | None = None
    pct: bool = False
    date: dt.date | None = None

    def candidates(self) -> frozenset[Decimal]:
        """The values a number may stand for: 10% is 10 or 0.1."""
        assert self.number is not None
        return frozenset({self.number, self.number / 100}) if self.pct else frozenset({self.number})

    def same(self, other: Value) -> bool:
        if self.date is not None or other.date is not None:
            return self.date == other.date
        return bool(self.candidates() & other.candidates())

    def render(self) -> str:
        """Canonical text: ISO dates, plain decimals ("0.1", "3", "10%")."""
        if self.date is not None:
            return self.date.isoformat()
        assert self.number is not None
        text = format(self.number.normalize(), "f")
        return text + ("%" if self.pct else "")


def _number(text: str) -> Decimal | None:
    try:
        value = Decimal(text.replace(",", ""))
    except InvalidOperation:
        return None
    return value if value.is_finite() else None


def _dates(text: str) -> list[tuple[int, int, Value]]:
    out = []
    for pattern, order in _DATES:
        for m in pattern.finditer(text):
            parts = dict(zip(order, m.groups()))
            month = int(parts["m"]) if "m" in parts else _MONTH_NUMBER[parts["M"].lower().rstrip(".")]
            try:
                day = dt.date(int(parts["y"]), month, int(parts["d"]))
            except ValueError:
                continue
            out.append((m.start(), m.end(), Value(date=day)))
    return out


def _number_words(text: str) -> list[Value]:
    """Numbers written in words: "three", "twenty-five", "ten percent", "two hundred and five"."""
    out: list[Value] = []
    words = [(m.group(0).lower(), m.end()) for m in _WORD.finditer(text)]
    i = 0
    while i < len(words):
        value, end = _words_value(words, i)
        if end == i:
            i += 1
            continue
        pct = bool(re.match(r"\s*(%|percent\b|per\s+cent\b)", text[words[end - 1][1]:], re.IGNORECASE))
        out.append(Value(number=Decimal(value), pct=pct))
        i = end
    return out


def _words_value(words: list[tuple[str, int]], i: int) -> tuple[int, int]:
    """(value, index after) of the run of number words starting at `words[i]` (index i: none)."""
    total, group, last, j = 0, None, "", i
    while j < len(words):
        w = words[j][0]
        small = _UNITS.get(w, _TENS.get(w))
        if small is not None:
            if group is None:
                group = small
            elif (last == "tens" and w in _UNITS and small < 10) or (last == "hundred" and group % 100 == 0):
                group += small
            else:
                break
            last = "tens" if w in _TENS else "unit"
        elif w == "hundred" and group is not None and group < 100 and last != "hundred":
            group, last = group * 100, "hundred"
        elif w in _SCALES and w != "hundred" and group is not None:
            total, group, last = total + group * _SCALES[w], None, "scale"
        elif w == "and" and last == "hundred" and j + 1 < len(words) and words[j + 1][0] in _UNITS.keys() | _TENS.keys():
            pass
        else:
            break
        j += 1
    if j > i and words[j - 1][0] == "and":
        j -= 1
    return total + (group or 0), j


def stated(text: str, *, words: bool = True) -> list[Value]:
    """Every number and date `text` states, in order of kind (dates, digits, number words); the
    digits of a date are not numbers of their own. `words`: also numbers written in words."""
    dates = _dates(text)
    blanked = list(text)
    for start, end, _ in dates:
        blanked[start:end] = " " * (end - start)
    rest = "".join(blanked)
    out = [v for _, _, v in sorted(dates, key=lambda d: d[0])]
    for m in _DIGITS.finditer(rest):
        number = _number(m.group(1))
        if number is not None:
            out.append(Value(number=number, pct=bool(m.group(2))))
    if words:
        out += _number_words(rest)
    return out


def parse_fact(fact: str) -> Value | None:
    """The value a fact is, when the whole fact is one number or one date."""
    found = stated(fact)
    if len(found) != 1:
        return None
    value = found[0]
    if value.date is not None:
        return value if any(m.group(0).strip() == fact.strip() for p, _ in _DATES for m in p.finditer(fact)) else None
    return value if _DIGITS.fullmatch(fact.strip()) or _is_words(fact) else None


def _is_words(fact: str) -> bool:
    return all(w.lower() in (_UNITS.keys() | _TENS.keys() | _SCALES.keys() | {"and", "percent", "per", "cent"})
               for w in _WORD.findall(fact)) and not re.search(r"\d", fact)


def _squash(s: str) -> str:
    return " ".join(s.replace("_", " ").split()).casefold()


def fact_found(fact: str, text: str) -> bool:
    """A number or date fact must be stated in `text` (any rendering); any other fact must occur
    as whole words (a plural too), case-insensitive, runs of whitespace (and `_`) as one space."""
    value = parse_fact(fact)
    if value is not None:
        return any(value.same(v) for v in stated(text))
    return re.search(r"(?<![^\W_])" + re.escape(_squash(fact)) + r"(?:e?s)?(?![^\W_])", _squash(text)) is not None


def renderings(values: list[Value]) -> list[str]:
    """Canonical texts of `values`, each once, in order."""
    return list(dict.fromkeys(v.render() for v in values))


def strays(text: str, sources: list[str], *, words: bool = False) -> list[str]:
    """The numbers and dates `text` states (in digits; `words`: in words too) that none of
    `sources` states: a value equal to a source value, or a year of a source date, is not a
    stray. Each stray once."""
    allowed = [v for s in sources for v in stated(s)]
    years = {Decimal(v.date.year) for v in allowed if v.date is not None}
    out: list[str] = []
    for v in stated(text, words=words):
        if any(v.same(a) for a in allowed) or (v.number is not None and not v.pct and v.number in years):
            continue
        out.append(v.render())
    return list(dict.fromkeys(out))
