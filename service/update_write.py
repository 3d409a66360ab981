"""Write an update plan in ONE Neo4j transaction (all or nothing), with named kill points.

`DIBENCH_UPDATE_KILL_AT=<step>` makes the process SIGKILL itself at that step; the test suite
uses it to show that a kill anywhere leaves the previous graph or the new one, never a mix.
Steps: planned (before the transaction), rule_written and tasks_written (inside it, before
commit), committed (after it).
"""
from __future__ import annotations

import datetime as dt
import json
import os
import signal
from collections.abc import Callable
from typing import Any

from dibench.core.keys import metric_key
from dibench.generation.pipeline import plan_rows
from dibench.generation.writeback import link_variants
from dibench.ingest.pipeline import write_plans
from dibench.service.update import UpdateConflict, UpdatePlan
from dibench.stores.graph import Graph, Tx
from dibench.stores.lease import domain_lease

KILL_ENV = "DIBENCH_UPDATE_KILL_AT"
STEPS = ("planned", "rule_written", "tasks_written", "committed")
WORKER = "update"


def checkpoint(step: str) -> None:
    if os.environ.get(KILL_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)


def _write_regeneration(tx: Tx, plan: UpdatePlan, now: int) -> None:
    regen = plan.regeneration
    if regen is None or not regen.skeletons:
        return
    tx.run("run_create", key=regen.run_key, props=regen.run_props)
    tx.run("skeletons_plan", run=regen.run_key, rows=plan_rows(regen.skeletons, "update", 0))
    tx.run("update_plans_claim", run=regen.run_key, keys=[s.key for s in regen.skeletons], worker=WORKER)
    for sk in regen.skeletons:
        rows = regen.rows_by_skeleton[sk.key]
        tx.run("tasks_write", run=regen.run_key, skeleton=sk.key, worker=WORKER, now=now, rows=rows)
        link_variants(tx, rows, plan.update_key)


def write_update(plan: UpdatePlan, graph: Graph) -> dict[str, int]:
    """Apply `plan`; returns the driver's write counters ({} when there was nothing to write).
    The caller holds the domain's write lease (`run_update`)."""
    checkpoint("planned")
    if not plan.changed:
        return {}
    stamp = dt.datetime.now(dt.timezone.utc)

    def work(tx: Tx) -> dict[str, int]:
        if not tx.run("update_claim_seq", domain=plan.domain, expected=plan.seq):
            raise UpdateConflict(f"domain {plan.domain!r} changed since this update was planned "
                                 f"(update sequence is no longer {plan.seq})")
        if plan.catalog_metrics:
            pass  # the ingest that changed the metrics wrote them; no rule changes here
        elif plan.removed:
            tx.run("update_rule_remove", rule=plan.rule_key, update=plan.update_key)
        else:
            assert plan.pack is not None and plan.rules is not None
            write_plans(tx, plan.pack, None, None, plan.rules)
            tx.run("update_rule_active", rule=plan.rule_key)
        checkpoint("rule_written")
        tx.run_rows("update_tasks_archive", plan.archive)
        tx.run_rows("update_tasks_write", plan.writes, batch_size=500)
        tx.run_rows("update_tasks_retire", plan.retire)
        link_variants(tx, plan.writes, plan.update_key)
        _write_regeneration(tx, plan, int(stamp.timestamp() * 1000))
        checkpoint("tasks_written")
        props: dict[str, Any] = {"domain": plan.domain, "rule_id": plan.rule_id, "seq": plan.seq + 1,
                                 "at": stamp.isoformat(timespec="seconds"),
                                 "changelog": json.dumps(plan.changelog(), sort_keys=True, default=str),
                                 "llm": json.dumps(plan.llm, sort_keys=True, default=str)}
        if plan.catalog_metrics:
            tx.run("update_record_catalog", metrics=[metric_key(plan.domain, m) for m in plan.catalog_metrics],
                   key=plan.update_key, props=props)
        else:
            tx.run("update_record", rule=plan.rule_key, key=plan.update_key, props=props)
        return tx.counters

    counters = graph.transaction(work)
    checkpoint("committed")
    return counters


def run_update(plan_fn: Callable[[], UpdatePlan], graph: Graph, domain: str,
               retries: int = 3) -> tuple[UpdatePlan, dict[str, int]]:
    """Plan and write under `domain`'s write lease, held from before the plan to after the commit:
    no generation run or other writer of the domain changes what the plan read (a run holds the
    lease for its whole length: this waits for it, then refuses in one line). A concurrent update
    that slipped in anyway (a lease taken over) makes us re-plan (bounded)."""
    with domain_lease(graph, domain, purpose="update-rule") as lease:
        for attempt in range(retries):
            plan = plan_fn()
            if plan.domain != domain:
                raise UpdateConflict(f"the update planned domain {plan.domain!r}, not {domain!r}")
            lease.renew()  # a plan that took longer than the lease must not write after a takeover
            try:
                return plan, write_update(plan, graph)
            except UpdateConflict:
                if attempt == retries - 1:
                    raise
    raise AssertionError("unreachable")
