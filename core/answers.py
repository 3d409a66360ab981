"""How executed rows become a structured answer, per analysis type.

Generation derives gold answers with these functions, and the reference agents, the pairing
ablation and drift re-derive answers from re-executed SQL with the same ones, so a stored answer
and a re-derived one can only differ when the rows differ. Pure functions, no I/O.
"""
from __future__ import annotations

import math
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Context, Decimal
from typing import Any


Rows = list[tuple[Any, ...]]

TREND_FLAT_PCT = 1.0  # |total change| below this many percent counts as flat
TREND_PCT_DIGITS = 1  # total_change_pct is rounded to this many decimals (its scoring tolerance follows)
WELCH_TEST_NAME = "Welch's t-test (two-tailed)"
WELCH_ALPHA = 0.05


# PostgreSQL turns a double precision value into NUMERIC through its 15 significant digits
# (DBL_DIG): ROUND(x::numeric, d) rounds that decimal, not the binary value.
FLOAT_DIGITS = 15
WIDE = Context(prec=80)  # quantize never runs out of digits (28 by default) on a large value


def exact(v: Any) -> Decimal | None:
    """The exact decimal a value stands for: a NUMERIC (Decimal) as it is, an integer exactly, a
    float as PostgreSQL casts it to NUMERIC (15 significant digits); None for None and for a value
    that is not a finite number."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, Decimal):
        return v if v.is_finite() else None
    if isinstance(v, int):
        return Decimal(v)
    f = float(v)
    return Decimal(f"{f:.{FLOAT_DIGITS}g}") if math.isfinite(f) else None


def rnd(v: Any, digits: int) -> Any:
    """`v` rounded to `digits` decimals exactly as PostgreSQL's ROUND(numeric, digits): on the
    exact decimal, half away from zero (417.325 -> 417.33, -0.125 -> -0.13), as a float for the
    JSON answer. A value that is not a finite number is returned as a float, unrounded."""
    if v is None:
        return None
    d = exact(v)
    if d is None:
        return float(v)
    # + 0.0: NUMERIC has no negative zero (ROUND(-0.001, 2) is 0.00).
    return float(d.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP, context=WIDE)) + 0.0


def exact_tie(v: Any, digits: int) -> bool:
    """Whether `v` lies exactly half way between two values of `digits` decimals (2.345 at 2):
    half up and half even round it apart, and an agent cannot know which the gold chose. An
    integer never does; a value that is not a number neither."""
    if isinstance(v, (bool, int)) or not isinstance(v, (float, Decimal)):
        return False
    d = exact(v)
    if d is None:
        return False
    shifted = d.scaleb(digits)
    return shifted - shifted.to_integral_value(rounding="ROUND_FLOOR") == Decimal("0.5")


# How far from a tie a binary float may lie and still stand for one: arithmetic on float columns
# (a rule's weight on a `real` amount, summed over thousands of rows) drifts by about 1e-13.
FLOAT_TIE_REL = 1e-9


def float_tie(v: Any, digits: int) -> bool:
    """Whether a binary float lies within float error of a tie at `digits` (2.3449999999997 at
    2), without being one exactly: its exact decimal may be the tie, rounded up, or not."""
    if not isinstance(v, float) or not math.isfinite(v) or exact_tie(v, digits):
        return False
    d = exact(v)
    assert d is not None
    shifted = d.scaleb(digits)
    off = shifted - shifted.to_integral_value(rounding="ROUND_FLOOR") - Decimal("0.5")
    return abs(off) <= Decimal(str(FLOAT_TIE_REL)) * max(Decimal(1), abs(shifted))


def tie_rounding(v: Any, digits: int) -> tuple[float, float] | None:
    """(the gold rounding, the other right one) of a value on a tie: on an exact tie half away
    from zero and half to even where they differ (2.345 at 2: 2.35 and 2.34); a float within float
    error of a tie, its rounding and the rounding on the other side (2.3449999999997: 2.34 and
    2.35, which exact arithmetic gives). None otherwise. The contract accepts either."""
    if float_tie(v, digits):
        d = exact(v)
        assert d is not None
        step = Decimal(1).scaleb(-digits)
        up = float(d.quantize(step, rounding="ROUND_CEILING", context=WIDE)) + 0.0
        down = float(d.quantize(step, rounding="ROUND_FLOOR", context=WIDE)) + 0.0
        gold = rnd(v, digits)
        return gold, (up if gold == down else down)
    if not exact_tie(v, digits):
        return None
    d = exact(v)
    assert d is not None  # exact_tie holds only for a finite number
    even = float(d.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_EVEN, context=WIDE)) + 0.0
    up = rnd(v, digits)
    return (up, even) if up != even else None


# ------------------------------------------------------------------ point query, threshold
def point_value(rows: Rows, digits: int) -> dict[str, Any]:
    """The metric value of a one-row result (no row: null)."""
    return {"value": rnd(rows[0][0], digits) if rows else None}


def verdict(value: float | None, threshold: float, higher_is_better: bool) -> str:
    if value is None:
        return "FAIL"
    return "PASS" if (value >= threshold if higher_is_better else value <= threshold) else "FAIL"


def threshold_crossing(value: float | None, threshold: float, higher_is_better: bool) -> dict[str, Any]:
    return {"value": value, "threshold": threshold, "result": verdict(value, threshold, higher_is_better)}


# ------------------------------------------------------------------ trend
def months(start: str, end: str) -> list[str]:
    """The months ("YYYY-MM") of the half-open window [start, end) of ISO dates."""
    y, m = int(start[:4]), int(start[5:7])
    out = []
    while f"{y:04d}-{m:02d}" < end[:7] or (f"{y:04d}-{m:02d}" == end[:7] and end[8:10] > "01"):
        out.append(f"{y:04d}-{m:02d}")
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return out


def on_spine(rows: Rows, periods: list[str], empty: Any) -> Rows:
    """`rows` with a (period, empty) row for every period of the calendar `periods` they lack:
    a month without rows is 0 for a count or a sum (`empty` 0), and has no value for an average
    or a ratio (`empty` None: the month is left out)."""
    if empty is None:
        return rows
    present = {str(r[0]) for r in rows}
    return list(rows) + [(p, empty) for p in periods if p not in present]


def trend_summary(rows: Rows, digits: int, periods: list[str] | None = None, empty: Any = None) -> dict[str, Any] | None:
    """(period, value, ...) rows -> direction, total change and peak; None under three periods,
    or when the first period is 0 and the last is not (no percent change). With the calendar
    `periods`, a month without rows counts `empty` (on_spine). The change is computed on the
    exact values (28 significant digits), then rounded."""
    got = _trend_change(rows, periods, empty)
    if got is None:
        return None
    series, change = got
    direction = "flat" if abs(change) < TREND_FLAT_PCT else ("increasing" if change > 0 else "decreasing")
    peak = max(series, key=lambda p: (p[1], p[0]))[0]
    return {"direction": direction, "total_change_pct": rnd(change, TREND_PCT_DIGITS), "peak_period": peak}


def trend_tie(rows: Rows, periods: list[str] | None = None, empty: Any = None) -> tuple[float, float] | None:
    """(the gold rounding, the other right one) of a trend's total change that lies on a rounding
    tie, or within float error of one: a ratio's months come back as NUMERIC divisions cut after
    about 20 digits (4/17 is 23.5294117647058824), so an exact 6.25 % reads 6.2499999...; the
    contract accepts either rounding. None when the change is not near a tie (or there is none)."""
    got = _trend_change(rows, periods, empty)
    pair = None if got is None else tie_rounding(float(got[1]), TREND_PCT_DIGITS)
    if got is None or pair is None:
        return None
    gold = rnd(got[1], TREND_PCT_DIGITS)
    return gold, (pair[1] if pair[0] == gold else pair[0])


def _trend_change(rows: Rows, periods: list[str] | None, empty: Any) -> tuple[list[tuple[str, Decimal]], Decimal] | None:
    """The sorted (period, exact value) series and its total change in percent, last month against
    the first; None under three periods, or when the first is 0 and the last is not."""
    rows = on_spine(rows, periods, empty) if periods is not None else rows
    series = sorted((str(r[0]), d) for r in rows if r[0] is not None and (d := exact(r[1])) is not None)
    if len(series) < 3:
        return None
    first, last = series[0][1], series[-1][1]
    if first == 0 and last != 0:
        return None
    return series, Decimal(0) if first == 0 else (last - first) / abs(first) * 100


# ------------------------------------------------------------------ groups
def label(v: Any) -> str:
    """A group's name as questions and answers write it: a NUMERIC group value as its float reads
    (4.0, 0.99), whether the row came back exact or not."""
    return str(float(v)) if isinstance(v, Decimal) else str(v)


def grouped_rows(rows: Rows, digits: int) -> list[dict[str, Any]]:
    """(group, value, n) rows -> [{group, value}] sorted by group name."""
    return sorted(({"group": label(r[0]), "value": rnd(r[1], digits)} for r in rows if r[0] is not None),
                  key=lambda x: x["group"])


def comparison(rows: Rows, a: str, b: str, digits: int) -> dict[str, Any]:
    vals = {label(r[0]): rnd(r[1], digits) for r in rows}
    va, vb = vals.get(a), vals.get(b)
    if va is None or vb is None or va == vb:
        higher = "equal" if va == vb and va is not None else "undetermined"
    else:
        higher = a if va > vb else b
    return {"group_a": a, "group_b": b, "value_a": va, "value_b": vb, "higher": higher}


def decomposition(rows: Rows, digits: int, groups: list[str] | None = None) -> dict[str, Any]:
    """Every group of `rows`; with `groups` (the groups of the data without rules), every one of
    those too: a group the policy suppresses or empties is listed with no value (null)."""
    listed = grouped_rows(rows, digits)
    seen = {r["group"] for r in listed}
    missing = [{"group": g, "value": None} for g in (groups or []) if g not in seen]
    return {"rows": sorted(listed + missing, key=lambda x: x["group"])}


def top_k(rows: list[dict[str, Any]], k: int, higher_is_better: bool) -> list[dict[str, Any]]:
    present = [r for r in rows if r["value"] is not None]
    sign = -1 if higher_is_better else 1
    return sorted(present, key=lambda r: (sign * r["value"], r["group"]))[:k]


def ranking(rows: Rows, k: int, higher_is_better: bool, digits: int) -> dict[str, Any]:
    """The top-k answer from (group, value, n) rows."""
    return {"k": k, "rows": top_k(grouped_rows(rows, digits), k, higher_is_better)}


def merge(current: list[dict[str, Any]], hypothetical: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cur = {r["group"]: r["value"] for r in current}
    hyp = {r["group"]: r["value"] for r in hypothetical}
    return [{"group": g, "current": cur.get(g), "hypothetical": hyp.get(g)} for g in sorted(set(cur) | set(hyp))]


def counterfactual(current_rows: Rows, hypothetical_rows: Rows, digits: int, periods: list[str] | None = None,
                   empty: Any = None, groups: list[str] | None = None) -> dict[str, Any]:
    """(group, value, n) rows with the rule (current) and without it (hypothetical) -> the answer.
    With the calendar `periods` (groups are months), every month is a row: one without rows on a
    side is `empty` there (0 for a count or a sum, null for an average or a ratio). With `groups`
    (the groups of the data without rules), every one is a row: one a policy withholds or empties
    on both sides is listed with nulls, as a decomposition lists it."""
    if periods is not None:
        current_rows, hypothetical_rows = calendar(current_rows, periods, empty), calendar(hypothetical_rows,
                                                                                          periods, empty)
    rows = merge(grouped_rows(current_rows, digits), grouped_rows(hypothetical_rows, digits))
    seen = {r["group"] for r in rows}
    rows += [{"group": g, "current": None, "hypothetical": None} for g in groups or [] if g not in seen]
    return {"rows": sorted(rows, key=lambda r: r["group"])}


def calendar(rows: Rows, periods: list[str], empty: Any) -> Rows:
    """`rows` with a (period, empty) row for every period of `periods` they lack, null included."""
    present = {str(r[0]) for r in rows}
    return list(rows) + [(p, empty) for p in periods if p not in present]


# ------------------------------------------------------------------ significance
def _monthly(rows: Rows, group: str, periods: list[str] | None, empty: Any) -> list[float]:
    """One group's monthly values, on the calendar `periods` when given (on_spine)."""
    own = [(r[0], r[2]) for r in rows if label(r[1]) == group]
    if periods is not None:
        own = on_spine(own, periods, empty)
    return [float(v) for _, v in own if v is not None]


def welch(rows: Rows, a: str, b: str, periods: list[str] | None = None, empty: Any = None) -> dict[str, Any] | None:
    """(period, group, value, n) rows -> Welch's two-tailed t-test of group a against b (the
    statistic is positive when a's mean is higher). With the calendar `periods`, a month in which
    a group has no rows counts `empty` for it (0 for a count or a sum; None leaves it out, as
    on_spine does for a trend)."""
    # A statistic: the one answer computed in floats (scipy), from the exact monthly values.
    xa, xb = (_monthly(rows, g, periods, empty) for g in (a, b))
    if len(xa) < 3 or len(xb) < 3:
        return None
    from scipy import stats  # a second of import time, for the significance tasks only

    res = stats.ttest_ind(xa, xb, equal_var=False)
    p = float(res.pvalue)
    if math.isnan(p):
        return None
    # The statistic's sign says which group is higher; with the p-value it is the figure scored
    # beside the verdict (a verdict alone is a coin a constant wins).
    return {"significant": p < WELCH_ALPHA, "p_value": round(p, 4), "t_statistic": round(float(res.statistic), 3),
            "test_name": WELCH_TEST_NAME, "alpha": WELCH_ALPHA}
