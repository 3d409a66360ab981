"""The best shortcut beside every score: `dibench eval` writes and prints the audit of the tasks it
ran, `dibench score` and `dibench report` print it, and an export records it in its manifest
(service/shortcut_levels.py). On the session's generated evaluation domain (tests/fixtures/evaldomain.py)."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from dibench.cli.main import main
from dibench.generation.shortcuts.audit import ShortcutAudit
from dibench.service.export import export, preset_query
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse
from tests.fixtures.evaldomain import EvalDomain, eval_domain  # noqa: F401  (fixture)

TITLE = "best shortcut per analysis type x tier x variant"
HOLDOUT = "hold-out strategies, never used to admit anything"


def test_eval_score_and_report_print_the_best_shortcut_beside_the_oracle(eval_domain: EvalDomain,  # noqa: F811
                                                                         tmp_path: Path) -> None:
    out = tmp_path / "oracle"
    res = CliRunner().invoke(main, ["eval", "--agent", "oracle", "--domain", eval_domain.name, "--run",
                                    eval_domain.run_key, "-o", str(out), "--no-chance"], terminal_width=240)
    assert res.exit_code == 0, res.output
    assert TITLE in res.output
    table = ShortcutAudit.model_validate_json((out / "shortcuts.json").read_text())
    tasks = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert sum(c.tasks for c in table.cells) == len(tasks)
    assert all(c.oracle_passed == c.tasks for c in table.cells)
    # the run's admitted families are the ones generation let through
    assert all(c.best_pct <= table.limit_pct or c.low_pct <= table.limit_pct for c in table.cells)
    # the hold-out strategies' table beside it, on the same tasks' knowledge families, labelled apart
    assert table.holdout is not None and table.holdout.strategies == 3
    assert all(c.analysis_type == "knowledge_retrieval" for c in table.holdout.cells)
    assert sum(c.tasks for c in table.holdout.cells) == sum(t["analysis_type"] == "knowledge_retrieval" for t in tasks)
    assert HOLDOUT in res.output

    scored = CliRunner().invoke(main, ["score", str(out / "tasks.jsonl"), str(out / "answers.jsonl"),
                                       "--no-chance"], terminal_width=240)
    assert scored.exit_code == 0, scored.output
    assert TITLE in scored.output and HOLDOUT in scored.output
    as_json = CliRunner().invoke(main, ["score", str(out / "tasks.jsonl"), str(out / "answers.jsonl"),
                                        "--no-chance", "--json"])
    assert ShortcutAudit.model_validate(json.loads(as_json.output)["shortcut_audit"]) == table

    html = tmp_path / "r.html"
    reported = CliRunner().invoke(main, ["report", "--results", str(out), "-o", str(html)])
    assert reported.exit_code == 0, reported.output
    page = html.read_text()
    assert "best shortcut" in page and "oracle %" in page and HOLDOUT in page and "not measured" not in page
    # an eval folder written before the hold-out was stored still reports, saying so
    old = json.loads((out / "shortcuts.json").read_text())
    old.pop("holdout")
    (out / "shortcuts.json").write_text(json.dumps(old))
    reported = CliRunner().invoke(main, ["report", "--results", str(out), "-o", str(html)])
    assert reported.exit_code == 0, reported.output
    assert f"{HOLDOUT}: not measured" in html.read_text()


def test_the_export_manifest_records_the_audit(eval_domain: EvalDomain, graph: Graph,  # noqa: F811
                                               warehouse: Warehouse, tmp_path: Path) -> None:
    manifest = export(graph, warehouse, preset_query("domain", {"domain": eval_domain.name}), "jsonl", tmp_path,
                      domain=eval_domain.name, audience="public")
    table = ShortcutAudit.model_validate(manifest["shortcut_audit"])
    admitted = manifest["counts"]["by_status"].get("admitted", 0)
    assert admitted and sum(c.tasks for c in table.cells) == admitted
    assert table.holdout is not None and table.holdout.strategies == 3
    # the run that made the tasks carries its own audit, in a public manifest too
    run = next(r for r in manifest["runs"] if r["key"] == eval_domain.run_key)
    stored = ShortcutAudit.model_validate_json(run["shortcut_audit"])
    assert stored.cells and stored.holdout is not None
