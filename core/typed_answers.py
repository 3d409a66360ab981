"""Typed knowledge answers: the one thing a knowledge question asks for, compared exactly.

A knowledge task asks for one specific thing its documents state, and its answer has the type
of that thing: a number with its unit, a date, a name (a category, a flag, a column), or a short
list of names. The kind is read from the expected value (a number, an ISO date, a string, a
list), so a stored contract needs no more than its field names. An answer holding competing
candidates of the kind asked fails: a list where one number is asked is the wrong type, a name
"spam, test or internal" names three, a list with one name too many has an extra item.
Pure functions (docs/contracts.md, "Typed knowledge answers").
"""
from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from dibench.core.facts import stated

FactKind = Literal["number", "date", "name", "list"]

# A name is a few words: an answer naming a category in a sentence is not a name but a summary.
MAX_NAME_WORDS = 6
# A list asked for is short: the documents' rules single out a handful of categories at most.
MAX_LIST_ITEMS = 8
# "the 1st of March, 2024" is the longest way of writing a date.
MAX_DATE_WORDS = 5
# Equal numbers, written differently (0.1 + 0.2 against 0.3 in binary floats).
NUMBER_REL_TOL = 1e-9

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# What separates several names in one string: "spam, internal", "spam and internal", "a/b".
_SEPARATORS = re.compile(r"\s*(?:[,;/&+]|\band\b|\bor\b|\bplus\b)\s*", re.IGNORECASE)
_UNIT_WORDS: dict[str, str] = {
    **{w: "minute" for w in ("minute", "minutes", "min", "mins")},
    **{w: "hour" for w in ("hour", "hours", "h", "hr", "hrs")},
    **{w: "day" for w in ("day", "days", "calendar day", "calendar days")},
    **{w: "week" for w in ("week", "weeks")},
    **{w: "month" for w in ("month", "months")},
    **{w: "year" for w in ("year", "years")},
    **{w: "percent" for w in ("%", "percent", "per cent", "pct", "percentage", "percentage points")},
    **{w: "czk" for w in ("czk", "kc", "kč", "crown", "crowns", "koruna")},
    **{w: "usd" for w in ("usd", "$", "dollar", "dollars", "us dollars")},
    **{w: "eur" for w in ("eur", "€", "euro", "euros")},
}
# The units a document's number may carry, as the text after (or, for currencies, before) it.
_AFTER = re.compile(r"\s*(%|per\s+cent\b|[A-Za-zč]+(?:\s+(?:days?|points?))?)")
_BEFORE = re.compile(r"(czk|usd|eur|kč|\$|€)\s*$", re.IGNORECASE)
_DIGITS = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\d])")


def unit_key(unit: Any) -> str | None:
    """The unit as the contract compares it: a known unit by its name ("days" = "day", "%" =
    "percent"), any other word in lower case without a plural s; None for no unit."""
    if not isinstance(unit, str) or not unit.strip():
        return None
    text = " ".join(unit.replace("_", " ").split()).casefold()
    if text in _UNIT_WORDS:
        return _UNIT_WORDS[text]
    return text[:-1] if text.endswith("s") and len(text) > 3 else text


def known_unit(unit: Any) -> bool:
    """Whether the unit is one of measurement (time, percent, currency), not a counted noun."""
    return unit_key(unit) in set(_UNIT_WORDS.values())


def unit_in(sentence: str, value: Decimal) -> str | None:
    """The unit of measurement the sentence writes with `value` ("more than 60 days" -> "day",
    "CZK 5,000" -> "czk", "35%" -> "percent"); None when it writes none of the known units."""
    for m in _DIGITS.finditer(sentence):
        try:
            number = Decimal(m.group(1).replace(",", "") + (m.group(2) or ""))
        except InvalidOperation:
            continue
        if number != value:
            continue
        after = _AFTER.match(sentence, m.end())
        before = _BEFORE.search(sentence[:m.start()])
        for text in ((after.group(1) if after else None), (after.group(1).split()[0] if after else None),
                     (before.group(1) if before else None)):
            if text is not None and known_unit(text):
                return unit_key(text)
    return None


def unit_named(text: str) -> str | None:
    """The unit of measurement a name ends with ("sla_hours" -> "hour", "DAYS" -> "day")."""
    last = text.replace("_", " ").split()[-1:] if text.strip() else []
    return unit_key(last[0]) if last and known_unit(last[0]) else None


def kind_of(expected: Any) -> FactKind | None:
    """The kind of an expected value; None for a value no typed answer has."""
    if isinstance(expected, bool):
        return None
    if isinstance(expected, (int, float)):
        return "number"
    if isinstance(expected, str):
        return "date" if _ISO_DATE.fullmatch(expected) else "name"
    if isinstance(expected, list) and expected and all(isinstance(x, str) and x.strip() for x in expected):
        return "list"
    return None


def value_problem(kind: FactKind, value: Any) -> str | None:
    """What makes `value` no answer of the kind (malformed), or None."""
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return "is not a number: one number is asked"
        return None if value == value and abs(value) != float("inf") else "is not a finite number"
    if kind == "list":
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            return "is not a list of names"
        return None
    return None if isinstance(value, str) else f"is not a string: one {kind} is asked"


def _norm_name(s: str) -> str:
    return " ".join(re.sub(r"[\W_]+", " ", s).split()).casefold()


def name_matches(expected: str, got: str) -> bool:
    """One name: the same words, or the expected words whole inside a short name ("goodwill
    credits" names "goodwill"), never two names in one ("spam and internal")."""
    want, have = _norm_name(expected), _norm_name(got)
    if not want or not have or len(have.split()) > MAX_NAME_WORDS:
        return False
    if want == have:
        return True
    if len([p for p in _SEPARATORS.split(got) if p.strip()]) > 1 and not _SEPARATORS.search(expected):
        return False
    return re.search(rf"(?<!\w){re.escape(want)}(?:e?s)?(?!\w)", have) is not None


# Durations in minutes: "48 hours" answers "2 days" (a month or a year has no fixed length).
_MINUTES = {"minute": 1, "hour": 60, "day": 1440, "week": 10080}


def number_mismatch(expected: Any, expected_unit: Any, got: Any, got_unit: Any) -> str | None:
    """A number equal to the expected one, in the expected unit of measurement: a percentage
    also as its fraction (35 percent = 0.35), a duration in any unit of time (48 hours = 2 days);
    a counted noun ("5 agents") is not scored."""
    want, unit = Decimal(str(expected)), unit_key(expected_unit)
    have = Decimal(str(got))
    if unit in _MINUTES and unit_key(got_unit) in _MINUTES and unit_key(got_unit) != unit:
        want, have = want * _MINUTES[unit], have * _MINUTES[str(unit_key(got_unit))]
        unit = unit_key(got_unit)
    scale = max(abs(want), Decimal(1)) * Decimal(str(NUMBER_REL_TOL))
    if unit == "percent" and abs(have - want / 100) <= scale / 100 and unit_key(got_unit) in (None, "ratio",
                                                                                            "fraction", "share"):
        return None
    if abs(have - want) > scale:
        return f"value: expected {expected}, got {got}"
    if unit is not None and known_unit(unit) and unit_key(got_unit) != unit:
        return f"unit: expected {expected_unit!r}, got {got_unit!r}"
    return None


def date_mismatch(expected: str, got: str) -> str | None:
    """One date, however written (2024-03-01 = "1 March 2024"), and nothing else: a string with
    two dates names two, a sentence around the date is not a date."""
    if len(got.split()) > MAX_DATE_WORDS:
        return f"value: expected a date, got {len(got.split())} words"
    found = [v for v in stated(got, words=False) if v.date is not None]
    if len(found) != 1:
        return f"value: expected the date {expected}, got {got!r} ({len(found)} dates)"
    return None if found[0].date == dt.date.fromisoformat(expected) else f"value: expected {expected}, got {got!r}"


def list_mismatches(expected: list[str], got: list[str]) -> list[str]:
    """Every expected name once, and nothing else: each item names exactly one expected name."""
    if len(got) > MAX_LIST_ITEMS:
        return [f"value: {len(got)} items, a short list of {len(expected)} is asked"]
    out = []
    matched: set[int] = set()
    for item in got:
        exact = [i for i, e in enumerate(expected) if _norm_name(e) == _norm_name(item)]
        hits = exact or [i for i, e in enumerate(expected) if name_matches(e, item)]
        if len(hits) != 1 or hits[0] in matched:
            out.append(f"extra or ambiguous item {item!r}")
        else:
            matched.add(hits[0])
    missing = [e for i, e in enumerate(expected) if i not in matched]
    if missing:
        out.insert(0, "missing item(s) " + ", ".join(repr(e) for e in missing))
    return out
