"""Every rule in force counts: a rule document without effects that names no metric, only the
thing a metric counts ("ratings"), still makes the policy of every metric aggregating that column
unknown, so generation makes no task of them; one ingest warning names the rule and the metrics,
and `dibench domain check` lists the rule. `effects: []` says the rule changes no computation."""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from dibench.cli.main import main
from dibench.core.pack import load_pack
from dibench.ingest.domain_check import rules_without_effects
from dibench.ingest.pipeline import ingest_pack
from dibench.ingest.rules import mentioned_metrics
from dibench.stores.graph import Graph
from dibench.stores.policies import policy_of
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import copy_pack, delete_domain, ensure_mini_loaded

BODY = ("A rating given by a staff member on their own order is a test rating and does not count; the "
        "quality team removes such ratings every week before the figures are published. ") * 6


def rule(effects: str = "") -> str:
    return ("---\nid: MINI-R-STAFF\ntitle: Staff ratings are not customer ratings\nversion: '1'\n"
            f"effective_date: 2024-01-01\nowner: Quality\nrule_type: exclusionary\n{effects}---\n" + BODY)


def test_a_rule_without_effects_blocks_every_metric_it_concerns(tmp_path: Path, graph: Graph,
                                                                warehouse: Warehouse) -> None:
    ensure_mini_loaded(warehouse)
    name = "mini_noeffects"
    delete_domain(graph, name)
    root = copy_pack(tmp_path / name, name)
    (root / "rules" / "staff.md").write_text(rule())
    try:
        pack = load_pack(root)
        doc = next(d for d in pack.rules if d.id == "MINI-R-STAFF")
        # named neither by id nor by name: by the column their value aggregates
        assert mentioned_metrics(doc, pack) == ["MINI-SAT-001", "MINI-HEALTH-001"]
        assert rules_without_effects(pack) == [{"rule": "MINI-R-STAFF",
                                                "metrics": ["MINI-SAT-001", "MINI-HEALTH-001"]}]
        report = ingest_pack(pack, graph, warehouse)
        lines = [w for w in report.warnings if "staff.md" in w]
        assert len(lines) == 1 and "MINI-SAT-001, MINI-HEALTH-001" in lines[0] and "skips them" in lines[0]
        for metric in ("MINI-SAT-001", "MINI-HEALTH-001"):
            assert "MINI-R-STAFF" in policy_of(graph, name, metric).state.unknown
        assert policy_of(graph, name, "MINI-REV-001").complete
        checked = CliRunner().invoke(main, ["domain", "check", str(root)], terminal_width=200)
        assert "rule without effects MINI-R-STAFF: blocks the tasks of MINI-SAT-001, MINI-HEALTH-001" in " ".join(
            checked.output.split())
        # a document that says it changes no computation blocks nothing
        (root / "rules" / "staff.md").write_text(rule("effects: []\n"))
        assert rules_without_effects(load_pack(root)) == []
    finally:
        delete_domain(graph, name)
