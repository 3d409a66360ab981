"""Effect extraction by the configured model, scored against the rule documents' own front matter.

Each chosen document of an ingested domain is sent to the model as if it had no `effects`, the
way ingest sends it (ingest/extract.py: bounded prompt, validated reply, retries). Its extracted
effects are then verified like an ingest verifies them (ingest/verify.py), and compared with the
effects its front matter states, metric by metric: a metric is *equivalent* when the metric's SQL
with the extracted effects gives the same value as with the front-matter effects on every slice
verification checks (the whole window, each dimension value, each month). Extracted effects on a
metric the front matter does not touch are counted as *extra*.

    DIBENCH_LLM=openai DIBENCH_LLM_BASE_URL=... python bench/extraction_score.py demo
    python bench/extraction_score.py demo --docs RULE-REOPEN-WINDOW,RULE-TEST-SPAM --json out.json
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time
from typing import Any

from dibench.core.errors import DibenchError
from dibench.core.pack import Pack, RuleDoc, load_pack
from dibench.ingest.extract import extract_effects
from dibench.ingest.verify import edge_window, side_answers, slice_keys, verify_effect
from dibench.sqlops.dialect import parse
from dibench.sqlops.ops import AnyEffect, Bound, apply_effects
from dibench.stores.graph import get_graph
from dibench.stores.llm import configured_model, session
from dibench.stores.pack_data import schema_columns
from dibench.stores.warehouse import Warehouse, get_warehouse

# One document of each kind of operation the demo's rules state: exclude, temporal threshold,
# conditional weight, override (two), suppression.
DEFAULT_DOCS = ("RULE-TEST-SPAM", "RULE-SLA-TARGET-2024", "RULE-CSAT-ENTERPRISE-WEIGHT", "RULE-MEDIAN-TIMES",
                "RULE-PRIV-MIN-CUSTOMERS", "RULE-REOPEN-WINDOW")


def effect_line(eff: AnyEffect) -> str:
    return json.dumps(eff.model_dump(mode="json", exclude_none=True, exclude={"metric"}), sort_keys=True)


def same_values(wh: Warehouse, pack: Pack, metric_id: str, rule_id: str, stated: list[AnyEffect],
                extracted: list[AnyEffect]) -> bool:
    """Whether the metric's rounded values agree with either set of effects applied, on the same
    window and slices (verification's, for the effects of both sides)."""
    metric = pack.metric_by_id[metric_id]
    both = [(rule_id, e) for e in [*stated, *extracted]]
    base = Bound(parse(metric.template, where=f"metric {metric.id}: sql"))
    lo, hi = edge_window(wh, metric, both, {}, schema=pack.schema)
    keys = slice_keys(metric, base.tree, [*stated, *extracted])

    def values(effects: list[AnyEffect]) -> dict[str, Any]:
        gold = apply_effects(base, [(rule_id, e) for e in effects], metric)
        params = {"start_date": lo, "end_date": hi, **metric.params, **gold.params}
        return side_answers(wh, gold.tree, params, keys, metric.rounding, schema=pack.schema)

    return values(stated) == values(extracted)


def score_document(doc: RuleDoc, pack: Pack, wh: Warehouse, extracted: list[AnyEffect]) -> dict[str, Any]:
    stated: dict[str, list[AnyEffect]] = {}
    for e in doc.front.effects or []:
        stated.setdefault(e.metric, []).append(e)
    got: dict[str, list[AnyEffect]] = {}
    for e in extracted:
        got.setdefault(e.metric, []).append(e)
    per_metric: list[dict[str, Any]] = []
    for metric_id, effs in stated.items():
        mine = got.get(metric_id, [])
        if not mine:
            per_metric.append({"metric": metric_id, "outcome": "missed"})
            continue
        try:
            same = same_values(wh, pack, metric_id, doc.id, effs, mine)
        except DibenchError as exc:
            per_metric.append({"metric": metric_id, "outcome": "error", "error": str(exc)[:200]})
            continue
        per_metric.append({"metric": metric_id, "outcome": "equivalent" if same else "different",
                           "stated": [effect_line(e) for e in effs], "extracted": [effect_line(e) for e in mine]})
    extra = [{"metric": m, "extracted": [effect_line(e) for e in effs]} for m, effs in got.items() if m not in stated]
    return {"metrics": per_metric, "extra": extra}


def run(domain: str, docs: list[str]) -> dict[str, Any]:
    pack = load_pack(domain)
    wh, graph = get_warehouse(), get_graph()
    columns = schema_columns(wh, pack.schema)
    llm = configured_model()
    if llm is None:
        raise SystemExit("no LLM configured: set DIBENCH_LLM and DIBENCH_LLM_BASE_URL (see the README's LLM section)")
    unknown = [d for d in docs if d not in {r.id for r in pack.rules}]
    if unknown:
        raise SystemExit(f"no rule {', '.join(unknown)} in {domain}: give rule ids (the `id` of a document's front matter)")
    out = []
    for doc_id in docs:
        doc = pack.rule(doc_id)
        bare = dataclasses.replace(doc, front=doc.front.model_copy(update={"effects": None}))
        before = session().snapshot()
        t0 = time.perf_counter()
        row: dict[str, Any] = {"doc": doc_id, "stated_effects": len(doc.front.effects or [])}
        try:
            extracted = list(extract_effects(bare, pack, llm, graph, columns).effects)
        except DibenchError as exc:
            extracted, row["failure"] = [], str(exc)
        row["seconds"] = round(time.perf_counter() - t0, 1)
        spent = session().since(before)
        row["calls"] = spent["calls"].get("extract", 0)
        row["prompt_tokens"] = spent["prompt_tokens"].get("extract", 0)
        row["extracted_effects"] = len(extracted)
        row["effects"] = [e.model_dump(mode="json", exclude_none=True) for e in extracted]
        row["verified"] = []
        for eff in extracted:
            if eff.metric not in pack.metric_by_id:
                continue
            metric = pack.metric_by_id[eff.metric]
            window = edge_window(wh, metric, [(doc_id, eff)], {}, schema=pack.schema)
            check = verify_effect(wh, metric, doc_id, eff, window, schema=pack.schema)
            row["verified"].append({"metric": eff.metric, "verified": check.verified, "error": check.error})
        row.update(score_document(doc, pack, wh, extracted))
        out.append(row)
        print(json.dumps(row, default=str), flush=True)
    metrics = [m for r in out for m in r["metrics"]]
    return {"domain": domain, "documents": len(out),
            "documents_extracted": sum(1 for r in out if "failure" not in r),
            "stated_metrics": len(metrics),
            "equivalent": sum(1 for m in metrics if m["outcome"] == "equivalent"),
            "different": sum(1 for m in metrics if m["outcome"] == "different"),
            "missed": sum(1 for m in metrics if m["outcome"] == "missed"),
            "extra_metrics": sum(len(r["extra"]) for r in out),
            "seconds": round(sum(r["seconds"] for r in out), 1),
            "calls": sum(r["calls"] for r in out), "prompt_tokens": sum(r["prompt_tokens"] for r in out),
            "per_document": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("domain", nargs="?", default="demo")
    ap.add_argument("--docs", default=",".join(DEFAULT_DOCS), help="rule ids, comma-separated")
    ap.add_argument("--json", dest="json_out", help="also write the result to this file")
    args = ap.parse_args()
    result = run(args.domain, [d for d in args.docs.split(",") if d])
    summary = {k: v for k, v in result.items() if k != "per_document"}
    print(json.dumps(summary, indent=1))
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=1, default=str)


if __name__ == "__main__":
    main()
