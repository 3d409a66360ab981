"""dibench's rule-free answers equal MetricFlow's (`mf query` through its engine, in its own
environment) for every imported simple and ratio metric of the Jaffle Shop, over three months,
without a group and grouped by each categorical dimension MetricFlow names (bench/metricflow_agreement.py;
tolerance 0.005 absolute or 1e-6 relative). About 30 s: one MetricFlow process, no `dbt build`."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from dibench.core.pack import load_pack
from dibench.ingest.database import load_database
from dibench.stores.warehouse import Warehouse

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("metricflow_agreement", ROOT / "bench" / "metricflow_agreement.py")
assert _spec is not None and _spec.loader is not None
agreement_tool = importlib.util.module_from_spec(_spec)
sys.modules["metricflow_agreement"] = agreement_tool  # its dataclasses look their module up
_spec.loader.exec_module(agreement_tool)

# Disagreements known and kept visible: MetricFlow has no row for these (metric, grouping) pairs
# where dibench's template, COALESCEd, answers 0.
KNOWN = {("mf.new_customer", "(none)")}


def test_rule_free_answers_equal_metricflow(warehouse: Warehouse, tmp_path: Path) -> None:
    pack = load_pack("jaffle")
    load_database(pack, warehouse)
    project = agreement_tool.prepare_project(tmp_path)
    rows = agreement_tool.agreement(project, pack, warehouse)
    print("\n" + agreement_tool.table(rows))
    differing = {(r.metric, r.grouping) for r in rows if r.compared != r.equal}
    assert differing == KNOWN
    compared = {r.metric for r in rows if r.compared > 0 and r.compared == r.equal}
    assert len(compared) == 9 and sum(r.compared for r in rows) > 5000
