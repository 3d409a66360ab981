"""The time window a metric template reads, on the tree: the task's period itself, the period
shifted back (a MetricFlow offset input), or the rows of a cumulative metric as of one day of
the period (its `period_agg`: first or last), or, over all time, their mean over the period's
days (`average`).

A pack metric is evaluated for a period [:start_date, :end_date). Day `d` of a cumulative metric
reads the rows whose day is in (d - window, d] (a trailing window), in [DATE_TRUNC(grain, d), d]
(grain to date) or up to d (all time). An offset input of `count granularity` reads the period
moved back by that much, an `offset_to_grain` to the start of its grain. Each shape says in
words what it reads; nothing is approximated (docs/architecture.md, "Windows other than the
period")."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp

GRANULARITIES = {"day": ("DAY", 1), "week": ("DAY", 7), "month": ("MONTH", 1), "quarter": ("MONTH", 3),
                 "year": ("YEAR", 1)}


class WindowUnsupported(Exception):
    """A window shape the template cannot state; the message says why."""


def _date(name: str) -> exp.Expression:
    return exp.Cast(this=exp.Placeholder(this=name), to=exp.DataType.build("DATE"))


def interval(count: int, granularity: str, what: str) -> exp.Interval:
    if granularity not in GRANULARITIES or not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise WindowUnsupported(f"{what}: window of {count!r} {granularity!r} (a whole number of "
                                f"{', '.join(GRANULARITIES)})")
    unit, n = GRANULARITIES[granularity]
    return exp.Interval(this=exp.Literal.string(str(count * n)), unit=exp.Var(this=unit))


def _days(n: int) -> exp.Interval:
    return exp.Interval(this=exp.Literal.string(str(n)), unit=exp.Var(this="DAY"))


@dataclass(frozen=True)
class Window:
    """How the period's placeholders bound the time column; `words` completes "rows whose <time> ..."."""

    kind: str  # period, offset, grain_start, cumulative
    words: str
    count: int = 0
    granularity: str = "day"
    grain_to_date: str | None = None
    period_agg: str = "first"

    @property
    def as_of(self) -> str | None:
        """What a value of a cumulative metric is, for the answer format: the running value on one
        day of the period, the same day for every group (MetricFlow's month grain reads each group
        on the first (last) day of the month on which that group has a value, so its groups do not
        add up to its total: docs/architecture.md)."""
        if self.kind != "cumulative":
            return None
        if self.period_agg == "average":
            return ("each value is the mean of the running total (all rows up to and including the day) over the "
                    "period's days from the group's first row on; a group with no rows by the period's end has no "
                    "value")
        day = "first" if self.period_agg == "first" else "last"
        return (f"each value is read on the period's {day} day (the rows of its window up to and including that "
                "day), the same day for every group; a group with no rows in that window has no value")

    def predicates(self, col: exp.Expression) -> list[exp.Expression]:
        """The conditions on `col` (the time column, qualified) for one period."""
        if self.kind == "period":
            return [exp.GTE(this=col.copy(), expression=exp.Placeholder(this="start_date")),
                    exp.LT(this=col.copy(), expression=exp.Placeholder(this="end_date"))]
        if self.kind == "offset":
            shift = interval(self.count, self.granularity, "offset")
            return [exp.GTE(this=col.copy(), expression=exp.Sub(this=_date("start_date"), expression=shift.copy())),
                    exp.LT(this=col.copy(), expression=exp.Sub(this=_date("end_date"), expression=shift.copy()))]
        if self.kind == "grain_start":
            start = exp.Cast(this=exp.func("DATE_TRUNC", exp.Literal.string(str(self.grain_to_date)),
                                            _date("start_date")), to=exp.DataType.build("DATE"))
            length = exp.func("AGE", _date("end_date"), _date("start_date"))
            return [exp.GTE(this=col.copy(), expression=start),
                    exp.LT(this=col.copy(), expression=exp.Cast(this=exp.Add(this=start.copy(), expression=length),
                                                                to=exp.DataType.build("DATE")))]
        if self.period_agg == "average":  # all time (cumulative_window refuses a window or a grain)
            return [exp.LT(this=col.copy(), expression=exp.Placeholder(this="end_date"))]
        # The day, stated with both of the period's placeholders: its first, or its last (never
        # before its first); the rows never past the period's end.
        day = _date("start_date") if self.period_agg == "first" else \
            exp.func("GREATEST", _date("start_date"), exp.Sub(this=_date("end_date"), expression=_days(1)))
        out: list[exp.Expression] = []
        if self.count:
            lower = exp.Add(this=exp.Sub(this=day.copy(), expression=interval(self.count, self.granularity, "window")),
                            expression=_days(1))
            out.append(exp.GTE(this=col.copy(), expression=lower))
        elif self.grain_to_date:
            out.append(exp.GTE(this=col.copy(),
                               expression=exp.func("DATE_TRUNC", exp.Literal.string(self.grain_to_date), day.copy())))
        upper = exp.func("LEAST", exp.Add(this=day.copy(), expression=_days(1)), _date("end_date"))
        out.append(exp.LT(this=col.copy(), expression=upper))
        return out


    def days_holding(self, col: exp.Expression) -> exp.Expression:
        """For `period_agg: average` (all time): the number of the period's days whose running
        total holds a row of day `col`, the row's weight in the mean: from its day (or the
        period's first) to the period's end."""
        return exp.Sub(this=_date("end_date"), expression=exp.func(
            "GREATEST", exp.Cast(this=col.copy(), to=exp.DataType.build("DATE")), _date("start_date")))

    def days_with_value(self, col: exp.Expression) -> exp.Expression:
        """The period's days on which the rows aggregated have a running total (MetricFlow's mean
        is over those days): from the first row's day (or the period's first) to its end."""
        return exp.Sub(this=_date("end_date"), expression=exp.func(
            "GREATEST", exp.Min(this=exp.Cast(this=col.copy(), to=exp.DataType.build("DATE"))), _date("start_date")))


PERIOD = Window("period", "falls in the period")


def offset_window(offset: dict[str, Any] | str, what: str) -> Window:
    """A MetricFlow `offset_window` ({count, granularity}) as the period moved back; an
    `offset_to_grain` (a grain's name) as the period moved back to the start of its grain, as long
    as the period: [DATE_TRUNC(grain, start), that + AGE(end, start)), which for a calendar month
    is MetricFlow's month-grain value (the grain's first month)."""
    if isinstance(offset, str):
        if offset not in GRANULARITIES:
            raise WindowUnsupported(f"{what}: offset_to_grain {offset!r} (one of {', '.join(GRANULARITIES)})")
        return Window("grain_start", f"falls in the period moved back to the start of its {offset} (as long as the "
                                     "period)", grain_to_date=offset)
    if not isinstance(offset, dict) or "count" not in offset:
        raise WindowUnsupported(f"{what}: offset {offset!r} is neither an offset_window nor an offset_to_grain")
    count, gran = offset.get("count"), str(offset.get("granularity"))
    interval(count, gran, what)  # type: ignore[arg-type]
    return Window("offset", f"falls in the period moved back {count} {gran}{'s' if count != 1 else ''}",
                  count=int(count), granularity=gran)  # type: ignore[arg-type]


def cumulative_window(params: dict[str, Any], what: str) -> Window:
    """A MetricFlow cumulative metric's window ({window, grain_to_date, period_agg})."""
    agg = params.get("period_agg") or "first"
    if agg not in ("first", "last", "average"):
        raise WindowUnsupported(f"{what}: period_agg {agg!r}")
    day = {"first": "the period's first day", "last": "the period's last day",
           "average": "each day of the period, averaged over its days from the first row on"}[agg]
    window, grain = params.get("window"), params.get("grain_to_date")
    if agg == "average" and (window or grain):
        # MetricFlow's mean is over the days whose window holds a row: with a window (or a grain)
        # those days are a union of intervals per group, which no one aggregate over rows states.
        raise WindowUnsupported(f"{what}: period_agg 'average' over a {'window' if window else 'grain_to_date'} "
                                "(MetricFlow's mean is over the days whose window holds a row: a union of windows "
                                "per group, not one aggregate)")
    if window:
        count, gran = window.get("count"), str(window.get("granularity"))
        interval(count, gran, what)
        return Window("cumulative", f"is in the {count} {gran}{'s' if count != 1 else ''} up to and including {day}",
                      count=int(count), granularity=gran, period_agg=agg)
    if grain:
        if str(grain) not in GRANULARITIES:
            raise WindowUnsupported(f"{what}: grain_to_date {grain!r}")
        return Window("cumulative", f"is from the start of the {grain} of {day} up to and including it",
                      grain_to_date=str(grain), period_agg=agg)
    return Window("cumulative", f"is any day up to and including {day} (all time)", period_agg=agg)
