"""Phrasing fidelity: does a question ask exactly the task the facts describe?

A phraser (above all an LLM) can drift: a window of August 2023 to July 2024 becomes "July 2024
to August 2024", a ranking loses its k, a threshold its direction, a question gives the answer
away, a no-rule variant forgets to say that it asks for the catalog's definition alone. Each
check reads the question's text (dates normalised: month names and abbreviations, ISO months,
quarters, years; numbers with separators, k/m suffixes and number words) and compares it with
the facts: the window ("the first quarter" is not April-June), the groups, k, the threshold and
its direction, the answer's shape (a breakdown asks for every group; a knowledge question for
what the documents say), no answer value, the variant's opt-out, and no condition of the policy
written into the question. Each returns a one-line problem or None.
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from typing import Any

MONTHS = {m: i for i, m in enumerate(("january", "february", "march", "april", "may", "june", "july", "august",
                                      "september", "october", "november", "december"), start=1)}
MONTHS.update({name[:3]: i for name, i in list(MONTHS.items())} | {"sept": 9})
WORD_NUMBERS = {w: i for i, w in enumerate(("zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
                                            "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen",
                                            "sixteen", "seventeen", "eighteen", "nineteen", "twenty"))}
_YEAR = re.compile(r"\b(19[5-9]\d|20\d\d)\b")
_ISO_MONTH = re.compile(r"\b(19[5-9]\d|20\d\d)-(0[1-9]|1[0-2])\b")
_QUARTER = re.compile(r"\b(?:q([1-4])|(first|second|third|fourth) quarter)\b")
_MONTH = re.compile(r"\b(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\b\.?")
_NUMBER = re.compile(r"(?<![\w.])(-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?)\s*(k|m|thousand|million|%)?(?![\w])")
AT_LEAST = ("at least", "or more", "or above", "or higher", "above", "exceed", "over", "minimum", "no less than",
            "more than", "reach", "meet", "higher than", ">=")
AT_MOST = ("at most", "or less", "or below", "or lower", "below", "under", "maximum", "no more than", "not exceed",
           "less than", "lower than", "within", "<=")
HIGH_RANK = ("highest", "top", "most", "best", "largest", "biggest", "greatest", "leading", "strongest")
LOW_RANK = ("lowest", "bottom", "least", "fewest", "best", "smallest", "shortest", "fastest", "weakest")
_ORDINAL_QUARTER = {"first": 1, "second": 2, "third": 3, "fourth": 4}


def months_named(q: str) -> set[int]:
    """Months the question names: by name, abbreviation or ISO month; a quarter names its first and last."""
    text = q.lower()
    out = {MONTHS[m.group(1)] for m in _MONTH.finditer(text) if m.group(1) != "may" or _is_month_may(text, m)}
    out |= {int(m.group(2)) for m in _ISO_MONTH.finditer(text)}
    for m in _QUARTER.finditer(text):
        n = int(m.group(1)) if m.group(1) else _ORDINAL_QUARTER[m.group(2)]
        out |= {3 * n - 2, 3 * n}
    return out


def _is_month_may(text: str, m: re.Match[str]) -> bool:
    """"may" is a month only next to a year or another month word ("May 2024", "March to May")."""
    around = text[max(0, m.start() - 15):m.end() + 8]
    return bool(_YEAR.search(around)) or sum(1 for _ in _MONTH.finditer(around)) > 1


def numbers(q: str) -> Iterator[float]:
    """The numbers written in the question, scaled by k/m/thousand/million; number words too."""
    text = q.lower()
    for m in _NUMBER.finditer(text):
        value = float(m.group(1).replace(",", ""))
        scale = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6}.get(m.group(2) or "", 1.0)
        yield value * scale
    for word in re.findall(r"[a-z]+", text):
        if word in WORD_NUMBERS:
            yield float(WORD_NUMBERS[word])


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= max(0.005 * abs(b), 0.005)


def window_problem(q: str, start: str, end: str) -> str | None:
    s, e = dt.date.fromisoformat(start), dt.date.fromisoformat(end) - dt.timedelta(days=1)
    years = {int(y) for y in _YEAR.findall(q)}
    period = f"{s:%B %Y} to {e:%B %Y}"
    missing = sorted({s.year, e.year} - years)
    if missing:
        return f"window: the question does not state the year {missing[0]} of {period}"
    outside = sorted(y for y in years if not s.year <= y <= e.year)
    if outside:
        return f"window: the question names {outside[0]}, outside {period}"
    inside = {(s.year + (s.month - 1 + i) // 12, (s.month - 1 + i) % 12 + 1)
              for i in range((e.year - s.year) * 12 + e.month - s.month + 1)}
    stray = sorted(m for m in months_named(q) if all(month != m for _y, month in inside))
    if stray:
        # "the first quarter" of an April-June window asks for other months than the gold covers.
        return f"window: the question names {dt.date(2000, stray[0], 1):%B}, outside {period}"
    whole_years = s.month == 1 and e.month == 12
    if not whole_years:
        lacking = [dt.date(2000, m, 1).strftime("%B") for m in sorted({s.month, e.month} - months_named(q))]
        if lacking:
            return f"window: the question does not state {' and '.join(lacking)} of {period}"
    return None


def _mentions(q: str, value: Any) -> bool:
    text, v = q.lower(), str(value).lower()
    return v in text or v.replace("_", " ") in text


def group_problem(q: str, facts: dict[str, Any]) -> str | None:
    for key in ("group", "group_a", "group_b"):
        if key in facts and facts[key] is not None and not _mentions(q, facts[key]):
            return f"group: the question does not name {facts[key]!r}"
    return None


def k_problem(q: str, facts: dict[str, Any]) -> str | None:
    if "k" in facts and not any(_close(n, facts["k"]) for n in numbers(q)):
        return f"k: the question does not state how many ({facts['k']})"
    return None


def _has_any(q: str, words: tuple[str, ...]) -> bool:
    text = q.lower()
    return any(re.search(r"(?<![a-z])" + re.escape(w) + r"(?![a-z])", text) for w in words)


def threshold_problem(q: str, facts: dict[str, Any]) -> str | None:
    if "threshold" not in facts:
        return None
    t = float(facts["threshold"])
    if not any(_close(n, t) for n in numbers(q)):
        return f"threshold: the question does not state the threshold {t:g}"
    higher = facts.get("higher_is_better", True)
    if not _has_any(q, AT_LEAST if higher else AT_MOST):
        return f"comparison: the question does not say the value must be {'at least' if higher else 'at most'} {t:g}"
    return None


def rank_direction_problem(q: str, analysis: str, facts: dict[str, Any]) -> str | None:
    if analysis != "ranking":
        return None
    higher = facts.get("higher_is_better", True)
    if not _has_any(q, HIGH_RANK if higher else LOW_RANK):
        return f"comparison: the question does not ask for the {'highest' if higher else 'lowest'} values first"
    return None


def gold_numbers(analysis: str, gold: dict[str, Any]) -> list[float]:
    """The numbers an agent must compute: a question containing one gives the answer away."""
    keys = {"point_query": ("value",), "threshold_crossing": ("value",), "comparison": ("value_a", "value_b"),
            "trend_analysis": ("total_change_pct",), "significance_testing": ("p_value", "t_statistic")}.get(analysis, ())
    out = [float(gold[k]) for k in keys if isinstance(gold.get(k), (int, float))]
    for row in gold.get("rows") or []:
        out += [float(row[k]) for k in ("value", "current", "hypothetical") if isinstance(row.get(k), (int, float))]
    return out


def leak_problem(q: str, analysis: str, gold: dict[str, Any], facts: dict[str, Any]) -> str | None:
    stated = [float(facts[k]) for k in ("threshold", "k") if isinstance(facts.get(k), (int, float))]
    written = [n for n in numbers(q) if not any(_close(n, s) for s in stated) and not 1950 <= n <= 2099]
    for g in gold_numbers(analysis, gold):
        # Small whole numbers (1, 2, 3 ...) are too common in prose to count as the answer.
        if (abs(g) >= 10 or not float(g).is_integer()) and any(_close(n, g) for n in written):
            return "answer_leak: the question contains the answer's value"
    return None


_SET_ASIDE = re.compile(r"\b(?:before|without|ignoring|excluding|disregarding|not applying|setting aside)\s+"
                        r"(?:any|all|the|our|every)?\s*(?:of\s+)?(?:our\s+|the\s+|company\s+)*polic(?:y|ies)")


def asks_catalog_only(q: str) -> bool:
    """Whether the question asks, in words, for the catalog's definition before any policy."""
    text = q.lower()
    return "catalog" in text and _SET_ASIDE.search(text) is not None


def variant_problem(q: str, facts: dict[str, Any]) -> str | None:
    """A no-rule variant (facts `catalog_only`) must ask for the catalog's definition alone; any
    other question must not, since its answer applies the metric's policy."""
    if facts.get("catalog_only") and not asks_catalog_only(q):
        return "variant: the question does not ask for the catalog's definition alone, before any policy adjustments"
    if not facts.get("catalog_only") and asks_catalog_only(q):
        return "variant: the question asks to set the policies aside, but its answer applies them"
    return None


QUOTED = re.compile(r'"[^"]*"|\u201c[^\u201d]*\u201d')
EVERY_GROUP = ("each", "every", "per", "break", "breakdown", "broken down", "all", "by")
POLICY_WORDS = ("policy", "policies", "rule", "guideline", "defin", "calculat", "comput", "treat", "count as",
                "counted", "exclud", "includ", "condition", "requir", "must", "should", "report")
FIGURE = re.compile(r"\b(what|how much|how many|which)\b.{0,60}\b(percentage|percent|share|rate|average|mean|"
                    r"number of|count of|total|sum|median|ratio)\b")


def shape_problem(q: str, analysis: str, facts: dict[str, Any], gold: dict[str, Any]) -> str | None:
    """The question asks for the answer's shape: a breakdown for every group (naming none alone),
    a knowledge question for what the documents say (no computed figure, no period)."""
    text = q.lower()
    if analysis in ("decomposition", "counterfactual") and not facts.get("by_month"):
        groups = [str(r.get("group")) for r in gold.get("rows") or [] if r.get("group") is not None]
        # A quoted rule title may name a group ("Phone orders of basic customers ..."): not a filter.
        unquoted = QUOTED.sub(" ", q)
        named = [g for g in groups if _mentions(unquoted, g)]
        if len(groups) > 1 and named and len(named) < len(groups):
            return f"shape: the answer covers every group, but the question names {named[0]!r} alone"
        if len(groups) > 1 and not _has_any(q, EVERY_GROUP):
            return "shape: the answer covers every group, but the question does not ask for each one"
    if analysis == "knowledge_retrieval":
        if _YEAR.search(q) or _ISO_MONTH.search(q):
            return "shape: a knowledge question asks what the documents say, not a figure for a period"
        if FIGURE.search(text) and not _has_any(q, POLICY_WORDS):
            return "shape: a knowledge question asks what the documents say, not a computed figure"
    return None


def condition_problem(q: str, facts: dict[str, Any], conditions: set[float]) -> str | None:
    """A standard question must not write a rule's condition into its wording ("in the first 30 days
    of their hire date"): no number of the policy's effects that the task's facts do not state."""
    stated = {float(facts[k]) for k in ("threshold", "k") if isinstance(facts.get(k), (int, float))}
    for n in numbers(q):
        if 1950 <= n <= 2099 or any(_close(n, s) for s in stated):
            continue
        if any(_close(n, c) for c in conditions):
            return f"rule_condition: the question states {n:g}, a condition of the policy it should leave to the agent"
    return None


# Wording no fluent analyst writes: a column name made the subject of a set phrase ("as far as the
# active is concerned"), a word doubled ("the the"), an article before a bare yes/no flag ("the is test").
GARBLED = (
    re.compile(r"\bas far as the [\w ]{1,40}? (?:is|are) concerned\b", re.IGNORECASE),
    re.compile(r"\b(the|a|an|of|to|in|for|and) \1\b", re.IGNORECASE),
    re.compile(r"\b(?:the|a|an) (?:is|has) \w+", re.IGNORECASE),
)
# A reference text ending on a short lower-case run with no vowel ("It is pr") ends on a word cut
# short: English words of one to three letters have one ("mix", "fee", "by").
_CUT = re.compile(r"(?<![A-Za-z])([b-df-hj-np-tv-xz]{1,3})$")


def wording_problem(q: str) -> str | None:
    """A phrase no fluent analyst would write."""
    for pattern in GARBLED:
        m = pattern.search(q)
        if m:
            return f"wording: {m.group(0)!r} is not how an analyst writes"
    return None


def cut_reference_problem(gold: dict[str, Any]) -> str | None:
    """A knowledge reference text must be whole sentences: one ending on a word cut short ("It is
    pr") was cut, not quoted."""
    last = _CUT.search(str(gold.get("text") or "").rstrip())
    return f"reference: the text ends on {last.group(1)!r}, a word cut short (whole sentences only)" if last else None


def fidelity_problems(question: str, analysis: str, facts: dict[str, Any], gold: dict[str, Any],
                      conditions: set[float] | None = None) -> list[str]:
    """Every way the question departs from the task's facts (empty: faithful). `conditions` are the
    numbers of the policy's effects (rule thresholds, day counts, minimum sizes)."""
    if analysis == "knowledge_retrieval":
        return [p for p in (shape_problem(question, analysis, facts, gold), wording_problem(question),
                            cut_reference_problem(gold)) if p]
    found = [window_problem(question, facts["start"], facts["end"]) if "start" in facts else None,
             group_problem(question, facts), k_problem(question, facts), threshold_problem(question, facts),
             rank_direction_problem(question, analysis, facts), leak_problem(question, analysis, gold, facts),
             variant_problem(question, facts), shape_problem(question, analysis, facts, gold),
             condition_problem(question, facts, conditions) if conditions else None, wording_problem(question)]
    return [p for p in found if p]
