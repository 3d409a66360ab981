"""dibench agrees with MetricFlow (its engine, in its own environment) on a small ledger of our own,
`tests/fixtures/mf_ledger`: a hand-written semantic manifest over 51 balance and 133 transaction
rows, with what the Jaffle Shop lacks: semi-additive measures (non_additive_dimension, window_choice
min and max, with and without window_groupings, with and without a filter), an exact median and
exact percentiles (continuous and discrete), a ratio and derived metrics dividing integer
measures, derived metrics with an offset_to_grain input (quarter, month), and cumulative metrics
(all time, a 7-day window, month to date; period_agg first and last, and average over all time).
Each imported metric's rule-free answer over three months, ungrouped and by each categorical
dimension, equals MetricFlow's (tolerance 0.005 absolute or 1e-6 relative) on DuckDB and on
PostgreSQL built from the same CSVs. About 10 s: one MetricFlow process (most of it), no dbt
parse, no `dbt build`."""
from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from dibench.core.config import get_settings
from dibench.core.pack import Pack, load_pack
from dibench.ingest.dbt.pack import ImportReport, import_manifest
from dibench.stores.duckdb_warehouse import DuckDBWarehouse
from dibench.stores.pack_data import replacing_schema
from dibench.stores.warehouse import Warehouse, open_warehouse

import bench.metricflow_agreement as agreement_tool

FIXTURE = Path(__file__).parent / "fixtures" / "mf_ledger"
SCHEMA = "mf_ledger"  # the manifest's schema_name; the DuckDB file is ledger.duckdb (never the schema's name)
MONTHS = ("2024-01", "2024-02", "2024-03")
TABLES = ("balances", "transactions")
SEMI_ADDITIVE = ("mf.total_balance", "mf.opening_balance", "mf.account_last_balance", "mf.account_first_balance")
CUMULATIVE = ("amount_to_date", "amount_to_date_last", "amount_last_7_days", "amount_last_7_days_last", "amount_mtd_last")
# MetricFlow's cumulative metrics at month grain, ungrouped and by channel (after the agreement's requests)
MONTH_GRAIN = [{"metrics": list(CUMULATIVE), "group_by": ["metric_time__month", *by]} for by in ([], ["txn__channel"])]


def build_duckdb(project: Path) -> Path:
    """The ledger's tables and a time spine in the DuckDB file the project's profile names."""
    path = project / "ledger.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute(f"CREATE SCHEMA {SCHEMA}")
        conn.execute(f"SET schema = '{SCHEMA}'")
        conn.execute((FIXTURE / "schema.sql").read_text())
        for table in TABLES:
            conn.execute(f"COPY {table} FROM '{FIXTURE / (table + '.csv')}' (HEADER)")
        conn.execute("CREATE TABLE time_spine AS SELECT CAST(d AS DATE) AS date_day "
                     "FROM range(DATE '2023-12-01', DATE '2024-05-01', INTERVAL 1 DAY) AS t(d)")
    return path


def build_postgres(warehouse: Warehouse) -> None:
    with replacing_schema(warehouse.admin(), SCHEMA, FIXTURE / "schema.sql") as cur:
        for table in TABLES:
            with cur.copy(f"COPY {table} FROM STDIN WITH (FORMAT csv, HEADER true)") as copy:
                copy.write((FIXTURE / f"{table}.csv").read_bytes())


class Ledger:
    def __init__(self, project: Path, pack: Pack, report: ImportReport, answers: list[list[dict[str, str | None]]],
                 month_grain: list[list[dict[str, str | None]]], duck: DuckDBWarehouse) -> None:
        self.project, self.pack, self.report, self.answers, self.duck = project, pack, report, answers, duck
        self.month_grain = month_grain


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory, warehouse: Warehouse) -> Iterator[Ledger]:
    tmp = tmp_path_factory.mktemp("mf_ledger")
    project = tmp / "project"
    shutil.copytree(FIXTURE, project)
    duck_path = build_duckdb(project)
    build_postgres(warehouse)
    report = import_manifest(project / "target" / "semantic_manifest.json", tmp / "pack", name="ledger")
    pack = load_pack(tmp / "pack")
    # MetricFlow writes to the file's lock: it runs (and ends) before this process opens its reader.
    answers = agreement_tool.mf_queries(project, agreement_tool.agreement_plan(project, pack, MONTHS).requests
                                        + MONTH_GRAIN)
    duck = open_warehouse(get_settings().model_copy(update={"database_url": f"duckdb://{duck_path}"}))
    assert isinstance(duck, DuckDBWarehouse)
    try:
        yield Ledger(project, pack, report, answers[:-len(MONTH_GRAIN)], answers[-len(MONTH_GRAIN):], duck)
    finally:
        duck.dispose()
        warehouse.drop_schema(SCHEMA)


def test_every_expressible_metric_of_the_ledger_is_imported(ledger: Ledger) -> None:
    assert [(name, reason.split(" (")[0]) for name, reason in ledger.report.skipped] == [
        ("amount_last_7_days_avg", "metric amount_last_7_days_avg: period_agg 'average' over a window"),
        ("txn_count_mtd_avg", "metric txn_count_mtd_avg: period_agg 'average' over a grain_to_date")]
    assert len(ledger.report.imported) == 24
    kinds = dict(ledger.report.imported)
    assert kinds["mf.amount_per_txn"] == "ratio" and kinds["mf.items_per_txn"] == "derived"
    assert kinds["mf.amount_to_date_last"] == "cumulative" and kinds["mf.median_amount"] == "simple"
    assert "mf.amount_since_quarter_start.quarter_first_month" in ledger.report.helpers


@pytest.mark.parametrize("engine", ["duckdb", "postgresql"])
def test_rule_free_answers_equal_metricflow(ledger: Ledger, warehouse: Warehouse, engine: str) -> None:
    wh = ledger.duck if engine == "duckdb" else warehouse
    rows = agreement_tool.agreement(ledger.project, ledger.pack, wh, MONTHS, answered=ledger.answers)
    print("\n" + agreement_tool.table(rows))
    assert [(r.metric, r.grouping, r.examples) for r in rows if r.compared != r.equal] == []
    compared = {(r.metric, r.grouping): r.compared for r in rows}
    assert len({m for m, _ in compared}) == 24 and sum(compared.values()) == 256
    for metric in SEMI_ADDITIVE:  # three months, ungrouped and by region
        assert compared[(metric, "(none)")] == 3 and compared[(metric, "balances.region")] >= 3, metric
    # filtered: the last (first) rows are chosen among the north's rows, as MetricFlow filters first
    for metric in ("mf.north_balance", "mf.north_account_first_balance"):
        assert compared[(metric, "(none)")] == 3 and compared[(metric, "balances.region")] == 3, metric
    # window_groupings: each account's last (first) balance, so every region has one each month
    assert compared[("mf.account_last_balance", "balances.region")] == 8
    for metric in ("mf.median_amount", "mf.p90_amount", "mf.p25_amount", "mf.amount_per_txn", "mf.items_per_txn",
                   "mf.net_per_item", "mf.amount_to_date_avg", "mf.txn_count_to_date_avg",
                   "mf.amount_since_quarter_start", "mf.amount_month_to_grain"):
        assert compared[(metric, "transactions.channel")] == 9, metric


def test_month_grain_cumulative_differs_from_metricflow_only_where_its_answer_is_not_the_periods(
        ledger: Ledger) -> None:
    # MetricFlow's month value of a cumulative metric is the running value on the first (last) day
    # of the month on which the group has one; dibench's is the value on the period's first (last)
    # day, the same day for every group. They are equal wherever the group has a value on that
    # day; elsewhere MetricFlow reads each group on a day of its own, so its groups no longer add
    # up to its total: the answer dibench does not give.
    total, by_channel = ledger.month_grain
    equal = differ = 0
    for name in CUMULATIVE:
        for month in MONTHS:
            ours = agreement_tool.dibench_answers(ledger.duck, ledger.pack, "mf." + name, "transactions.channel", month)
            theirs = {str(r["txn__channel"]): float(str(r[name])) for r in by_channel
                      if str(r["metric_time__month"]).startswith(month) and r[name] is not None}
            for channel, value in theirs.items():
                if channel in ours:
                    assert ours[channel] == value, (name, month, channel)
                    equal += 1
                else:  # no row of the channel up to the period's first day: dibench has no value
                    assert name in ("amount_to_date", "amount_last_7_days") and month == "2024-01"
                    differ += 1
            whole = next(float(str(r[name])) for r in total if str(r["metric_time__month"]).startswith(month))
            if ours:
                assert sum(theirs.values()) == whole == sum(ours.values()), (name, month)
            else:  # MetricFlow's January: web and phone on 2 January, branch on 6 January
                assert (sum(theirs.values()), whole) == (40.0, 49.0), name
    assert (equal, differ) == (39, 6)
