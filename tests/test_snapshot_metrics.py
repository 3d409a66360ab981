"""Snapshot metrics (a backlog: tickets still open at the period's end) are measured at the end
of each period of a series, as the metric defines, not at the end of the window; checked on the
demo's unresolved backlog against the metric's own SQL run month by month (real PostgreSQL;
about 5 s with the demo schema loaded, 15 s when it must be loaded)."""
from __future__ import annotations

import random

import pytest

from dibench.core.answers import counterfactual, months, trend_summary
from dibench.core.pack import load_pack
from dibench.generation.analyses import trend
from dibench.generation.executor import Executor
from dibench.generation.grounding import Context, data_window
from dibench.generation.questions import answer_format
from dibench.generation.skeletons import Skeleton
from dibench.ingest.database import load_database
from dibench.stores.pack_data import schema_columns
from dibench.stores.warehouse import Warehouse

PACK = load_pack("demo")
BACKLOG = "MV-BKL-001"


@pytest.fixture(scope="module")
def demo(warehouse: Warehouse) -> None:
    if "tickets" not in schema_columns(warehouse, PACK.schema):
        load_database(PACK, warehouse)


def month_end(period: str) -> str:
    y, m = int(period[:4]), int(period[5:7])
    return f"{y + m // 12:04d}-{m % 12 + 1:02d}-01"


@pytest.mark.parametrize("grouped", [True, False], ids=["grouped plan", "one statement"])
def test_a_backlog_trend_is_measured_at_each_months_end(demo: None, warehouse: Warehouse, grouped: bool) -> None:
    metric = PACK.metric_by_id[BACKLOG]
    sk = Skeleton(PACK.name, BACKLOG, "tickets.created_at", "temporal", "creation date", 20000,
                  ("tickets", "customers", "countries", "agents", "teams"), (), ())
    ctx = Context(metric, sk, Executor(warehouse, schema=PACK.schema, grouped=grouped), random.Random(3),
                  data_window(warehouse, metric, schema=PACK.schema), {})
    out = trend.build(ctx)
    assert out is not None
    periods = months(out.facts["start"], out.facts["end"])
    # the metric as defined, for each month on its own: opened in the month, open at its end
    rows = [(p, warehouse.execute_readonly(str(metric.sql), {"start_date": f"{p}-01", "end_date": month_end(p)},
                                           exact=True).rows[0][0]) for p in periods]
    assert out.gold_answer == trend_summary(rows, metric.rounding, periods, 0)
    # and the answer format says so: an agent applying the end of the months asked to every month is told not to
    assert out.facts["period_edge"] is True
    assert "read at that month's own end" in answer_format("trend_analysis", 0, period_edge=True)


def test_a_series_whose_window_only_bounds_its_time_column_says_nothing_of_period_ends(
        demo: None, warehouse: Warehouse) -> None:
    metric = PACK.metric_by_id["MV-VOL-001"]
    sk = Skeleton(PACK.name, metric.id, "tickets.created_at", "temporal", "creation date", 20000,
                  ("tickets", "customers", "countries", "agents", "teams"), (), ())
    ctx = Context(metric, sk, Executor(warehouse, schema=PACK.schema), random.Random(3),
                  data_window(warehouse, metric, schema=PACK.schema), {})
    out = trend.build(ctx)
    assert out is not None and "period_edge" not in out.facts
    assert "own end" not in answer_format("trend_analysis", 0)


def test_a_counterfactual_by_month_lists_every_month_of_the_calendar() -> None:
    """A month without rows on a side is 0 for a count or a sum and null for an average, as the
    answer format says, so an agent listing every month asked is right (pure)."""
    periods = ["2024-01", "2024-02", "2024-03"]
    current, lifted = [("2024-01", 5, 5), ("2024-03", 2, 2)], [("2024-01", 6, 6), ("2024-02", 1, 1), ("2024-03", 2, 2)]
    counted = counterfactual(current, lifted, 0, periods, 0)["rows"]
    assert counted == [{"group": "2024-01", "current": 5.0, "hypothetical": 6.0},
                       {"group": "2024-02", "current": 0.0, "hypothetical": 1.0},
                       {"group": "2024-03", "current": 2.0, "hypothetical": 2.0}]
    averaged = counterfactual(current, current, 2, periods, None)["rows"]
    assert averaged[1] == {"group": "2024-02", "current": None, "hypothetical": None}
    assert "null for an average" in answer_format("counterfactual", 2)
