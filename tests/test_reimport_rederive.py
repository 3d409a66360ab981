"""A re-imported semantic manifest that changes metric definitions: `import-dbt` reports the
changed metrics, and `ingest` then re-derives every task on them (and on the derived metrics built
from them) under the new definitions, as an update of the catalog; the other tasks stay as they
were, and a second ingest re-derives nothing. About 60 s (one generation at target 6)."""
from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

from dibench.core.config import Settings
from dibench.core.pack import load_pack
from dibench.evaluation.tasks import load_tasks
from dibench.generation.pipeline import generate
from dibench.ingest.database import load_database
from dibench.ingest.dbt.pack import import_manifest
from dibench.service.library import ingest_pack
from dibench.stores.graph import Graph, delete_domain
from dibench.stores.warehouse import Warehouse

MANIFEST = Settings().data_dir / "jaffle" / "target" / "semantic_manifest.json"
# Measures doubled by the "changed" manifest, and every imported metric that reads one.
DOUBLED = {"revenue": "product_price * 2", "order_total": "order_total * 2"}
CHANGED = {"mf.revenue", "mf.order_total", "mf.cumulative_revenue", "mf.revenue_growth_mom.revenue_prev_month"}


def test_ingest_rederives_the_tasks_of_metrics_a_reimport_changed(tmp_path: Path, graph: Graph,
                                                                  warehouse: Warehouse) -> None:
    root = shutil.copytree(load_pack("jaffle").root, tmp_path / "jaffle", ignore=shutil.ignore_patterns("__pycache__"))
    pack = load_pack(root)
    load_database(pack, warehouse)
    delete_domain(graph, pack.name)
    try:
        assert ingest_pack(pack, graph=graph, warehouse=warehouse).failures == []
        generate(pack, graph, target=6, seed=42, workers=1, min_per_type=0)
        before = {t.task_id: t for t in load_tasks(graph, pack.name)}

        data = json.loads(MANIFEST.read_text())
        changed = copy.deepcopy(data)
        for model in changed["semantic_models"]:
            for measure in model["measures"]:
                if model["name"] in ("order_item", "orders") and measure["name"] in DOUBLED:
                    measure["expr"] = DOUBLED[measure["name"]]
        src = tmp_path / "semantic_manifest.json"
        src.write_text(json.dumps(changed))
        imported = import_manifest(src, root, name="jaffle", schema="jaffle")
        assert {c.split(" ", 1)[0] for c in imported.changed} == CHANGED, imported.changed

        new_pack = load_pack(root)
        report = ingest_pack(new_pack, graph=graph, warehouse=warehouse)
        assert report.failures == []
        assert report.rederived["metrics"] == sorted(CHANGED) and report.rederived["rules"] == []
        after = {t.task_id: t for t in load_tasks(graph, pack.name, statuses=("admitted", "retired"))}
        affected = CHANGED | {"mf.food_revenue_pct", "mf.order_gross_profit", "mf.revenue_growth_mom"}
        moved = [k for k, t in before.items() if t.metric_ids[0] in affected and t.variant == "standard"]
        assert moved, "seed 42 at target 6 has tasks on the changed metrics"
        assert report.rederived["counts"]["updated"] + report.rederived["counts"]["retired"] >= 1
        for key in moved:  # the stored SQL is the new definition's; a value doubles with it
            now = after[key]
            if now.status != "admitted" or now.analysis_type == "knowledge_retrieval":  # a document's fact: no SQL
                continue
            assert "* 2" in (now.gold_sql or "") + (now.base_sql or ""), key
            if now.analysis_type == "point_query" and now.metric_ids[0] in CHANGED:
                assert now.base_answer is not None and before[key].base_answer is not None
                assert now.base_answer["value"] == 2 * before[key].base_answer["value"], key
        for key, task in before.items():  # a task on an unchanged metric is left as it was
            if task.metric_ids[0] not in affected:
                assert after[key].gold_answer == task.gold_answer and after[key].status == task.status, key

        again = ingest_pack(new_pack, graph=graph, warehouse=warehouse)
        assert again.rederived == {}
    finally:
        delete_domain(graph, pack.name)
