"""`dibench generate`: enumerate -> select -> plan skeletons in a Run -> workers -> augmentation
-> summary. Every step is an explicit function; the Run node records seed, phraser, judge,
prompt versions and code version."""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import multiprocessing as mp
import os
import re
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.pool import Pool
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from dibench.core.config import get_settings
from dibench.core.errors import NotFound
from dibench.core.task_counts import count_tasks
from dibench.core.keys import dimension_key, metric_key, rule_key
from dibench.core.models import AdjustEffect, OverrideEffect
from dibench.core.pack import Pack
from dibench.generation import questions, validation
from dibench.generation.analyses import registry
from dibench.generation.runs import Heartbeat, OpenedRun, finish, open_run
from dibench.generation.selection import quality, select
from dibench.generation.shortcut_gate import audit_run, refuse_knowledge
from dibench.generation.skeletons import Skeleton, enumerate_all
from dibench.generation.workers import die_with_parent, work, work_entry
from dibench.generation.writeback import GOLD_MEANING, GOLD_VERSION, reject_ambiguous, reject_duplicates
from dibench.stores import fingerprint
from dibench.stores.graph import DEADLOCK, Graph, retries_between, retry_counts
from dibench.stores.lease import DomainLease, domain_lease
from dibench.stores.llm import configured_model, describe, merge_counts
from dibench.stores.pack_data import warehouse_for

CODE_VERSION = "0.1.0"


@dataclass
class RunSummary:
    run_key: str
    skeletons: int
    admitted: int
    by_type: dict[str, int] = field(default_factory=dict)
    by_tier: dict[str, int] = field(default_factory=dict)
    rejections_by_check: dict[str, int] = field(default_factory=dict)
    candidates: int = 0
    rules_covered: int = 0
    rules_total: int = 0
    featured_covered: int = 0  # rules featured by an admitted task
    multi_decisive: int = 0  # admitted tasks with more than one decisive rule
    metrics_covered: int = 0
    wall_seconds: float = 0.0
    sql_seconds: float = 0.0
    sql_statements: int = 0  # sent to PostgreSQL by the workers (cache hits not counted)
    workers: int = 1
    # Graph transactions the Neo4j driver ran again after a transient error, by error code
    # (workers and driver together); `deadlocks` is the DeadlockDetected share.
    write_retries: dict[str, int] = field(default_factory=dict)
    deadlocks: int = 0
    stage2: str = "skipped"
    skipped_metrics: dict[str, str] = field(default_factory=dict)  # metric -> why its policy is incomplete
    migrated: int = 0  # tasks of an older gold meaning retired before this run
    # admitted standard tasks of the domain from earlier runs that this run did not regenerate
    earlier_tasks: int = 0
    ambiguous: int = 0  # tasks rejected: another task with a different answer asks the same question
    resumed: bool = False
    llm: dict[str, dict[str, int]] = field(default_factory=dict)  # calls, cache hits, failures, prompt tokens per stage
    llm_failures: int = 0  # model calls that failed for good (each recorded against its candidate)
    llm_model: str = "none"
    prompt_versions: dict[str, Any] = field(default_factory=dict)  # as the Run records them
    # analysis type -> {"grouped" | "legacy: <why>" | "mixed: <why>" | "none": candidates} (generation.tasks.sql_plan)
    sql_plan: dict[str, dict[str, int]] = field(default_factory=dict)
    # The best no-understanding strategy per analysis type x tier x variant, beside the oracle
    # (generation/shortcuts/audit.py, ShortcutAudit, the hold-out strategies' table in it), and
    # the tasks not admitted because of it.
    shortcut_audit: dict[str, Any] = field(default_factory=dict)
    shortcut_rejected: dict[str, int] = field(default_factory=dict)
    # The run's tasks in the vocabulary of core.task_counts (admitted standard, with variants, with rejected).
    task_counts: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


# Workers claim the metrics with most work left first (cypher/skeletons_claim.cypher), so that a
# run ends on small metrics rather than with one worker on a large one while the other waits. A
# skeleton of a derived metric, or of one whose value is a distinct count or a percentile (in its
# SQL or in a rule's formula), weighs three: no partials answer it, every window of every
# analysis scans the rows.
HEAVY = re.compile(r"\bDISTINCT\b|\bWITHIN\s+GROUP\b", re.IGNORECASE)
HEAVY_COST = 3


def metric_costs(pack: Pack) -> dict[str, int]:
    """A claim-order weight per metric of `pack` (1, or HEAVY_COST); a scheduling estimate only."""
    heavy = {m.id for m in pack.metrics if m.derived is not None or HEAVY.search(m.sql or "")}
    for doc in pack.rules:
        for eff in doc.front.effects or []:
            if isinstance(eff, (AdjustEffect, OverrideEffect)) and HEAVY.search(eff.expression):
                heavy.add(eff.metric)
    return {m.id: HEAVY_COST if m.id in heavy else 1 for m in pack.metrics}


def plan_rows(skeletons: list[Skeleton], selected_by: str, start: int,
              costs: dict[str, int] | None = None) -> list[dict[str, Any]]:
    rows = []
    for i, s in enumerate(skeletons):
        rows.append({"key": s.key, "props": s.to_row(), "order": start + i, "selected_by": selected_by,
                     "quality": 0.0, "cost": (costs or {}).get(s.metric, 1),
                     "metric_key": metric_key(s.domain, s.metric),
                     "dimension_key": dimension_key(s.domain, s.dimension),
                     "rule_keys": [rule_key(s.domain, r.rule_id) for r in s.rules]})
    return rows


def llm_props(graph: Graph, domain: str, llm: BaseChatModel | None) -> dict[str, Any]:
    """What a Run records of the model behind its tasks: phraser, judge, model, call budget, and
    every prompt version involved, the extraction prompts the domain's rules got their effects
    from included (`prompt_versions`, JSON: {stage: version}; extraction: a list of
    {model, prompt_version})."""
    judging = llm is not None and get_settings().llm_judge
    extraction = graph.read("rules_extraction", domain=domain)
    versions: dict[str, Any] = {"phrase": questions.PROMPT_VERSION if llm else None,
                                "judge": validation.JUDGE_PROMPT_VERSION if judging else None}
    if extraction:
        versions["extract"] = [{"model": r["model"], "prompt_version": r["prompt_version"]} for r in extraction]
    return {"phraser": describe(llm) if llm else "template", "judge": describe(llm) if judging else "skipped",
            "llm_model": describe(llm), "llm_max_calls": get_settings().llm_max_calls,
            "phrase_prompt_version": questions.PROMPT_VERSION, "judge_prompt_version": validation.JUDGE_PROMPT_VERSION,
            "prompt_versions": json.dumps({k: v for k, v in versions.items() if v}, sort_keys=True)}


def create_run(graph: Graph, pack: Pack, seed: int, target: int) -> str:
    llm = configured_model()
    stamp = dt.datetime.now(dt.timezone.utc)
    # A random suffix: two runs started in the same second (tests, parallel drivers) must not
    # MERGE into one Run node and silently share its plan.
    key = f"run:{pack.name}/{stamp:%Y%m%dT%H%M%S}-{seed}-{target}-{uuid.uuid4().hex[:8]}"
    props = {"domain": pack.name, "seed": seed, "target": target, "code_version": CODE_VERSION,
             **llm_props(graph, pack.name, llm),
             "started_at": stamp.isoformat(timespec="seconds"), "gold_version": GOLD_VERSION,
             # What the gold answers were computed on; every task of the run copies it (tasks_write).
             "data_fingerprint": fingerprint.dumps(fingerprint.pack_fingerprint(warehouse_for(pack), pack))}
    graph.write("run_create", key=key, props=props)
    graph.write("run_rules_state", run=key)  # what its workers check their write-backs against
    return key


Counter_ = Callable[[int, int], None]


def plan_states(graph: Graph, run_key: str) -> tuple[int, int]:
    """(done, total) skeletons of a run."""
    states = {r["state"]: r["count"] for r in graph.read("skeletons_pending", run=run_key)}
    return states.get("done", 0), sum(states.values())


GRACE_S = 10.0


def llm_share(workers: int, calls_so_far: int) -> int | None:
    """Each pool worker's share of what is left of --max-llm-calls for a round, so that all rounds
    of all workers together stay within it (None: no budget)."""
    total = get_settings().llm_max_calls
    return None if total is None else max(0, total - calls_so_far) // workers


@contextlib.contextmanager
def worker_pool(workers: int) -> Iterator[Pool | None]:
    """The worker processes of a run, for all its rounds (None: one worker, inline): a worker keeps
    its executor's cache from one round to the next (generation.workers.warm). They die with this
    process (generation.workers.die_with_parent) and are terminated when the run is done."""
    if workers <= 1:
        yield None
        return
    with mp.get_context("spawn").Pool(workers, initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
        yield pool


def process(graph: Graph, run_key: str, pack: Pack, seed: int, workers: int, pool: Pool | None,
            counter: Counter_ | None = None, beat: Callable[[], None] | None = None,
            calls_so_far: int = 0) -> list[dict[str, Any]]:
    """One round: `workers` workers (in `pool`, inline for one) until every planned skeleton is
    done; `beat` is called while they work (the run's heartbeat)."""
    def tick() -> None:
        if counter:
            counter(*plan_states(graph, run_key))
        if beat:
            beat()

    if pool is None:
        return [work(run_key, str(pack.root), seed, "w0", on_skeleton=tick, workers=1)]
    share = llm_share(workers, calls_so_far)
    jobs = [pool.apply_async(work_entry, ((run_key, str(pack.root), seed, f"w{i}", os.getpid(), workers, share),))
            for i in range(workers)]
    done_since: float | None = None
    while not all(j.ready() for j in jobs):
        tick()
        jobs[0].wait(0.5)
        # A worker that died (OOM, a kill) never reports; once the plan is done, the rest
        # get a grace period to return and the lost one is not waited for.
        done, total = plan_states(graph, run_key)
        if done_since is None and done == total:
            done_since = time.monotonic()
        if done_since is not None and time.monotonic() - done_since > GRACE_S:
            break
    tick()
    return [j.get() for j in jobs if j.ready()]


def summarise(graph: Graph, run_key: str, pack: Pack, skeletons: int) -> RunSummary:
    rows = graph.read("run_summary", run=run_key)
    s = RunSummary(run_key, skeletons, 0, candidates=sum(1 for r in rows if r["variant"] == "standard"))
    by_type: Counter[str] = Counter()
    by_tier: Counter[str] = Counter()
    rej: Counter[str] = Counter()
    plans: dict[str, Counter[str]] = {}
    rules: set[str] = set()
    featured: set[str] = set()
    metrics: set[str] = set()
    for r in rows:
        if r["variant"] != "standard":
            continue
        plans.setdefault(r["analysis_type"], Counter())[r["sql_plan"] or "none"] += 1
        if r["status"] == "admitted":
            by_type[r["analysis_type"]] += 1
            by_tier[r["tier"]] += 1
            rules.update(r["rule_ids"] or [])
            metrics.add(r["metric_id"])
            if r["featured_rule"]:
                featured.add(r["featured_rule"])
            s.multi_decisive += int(r["decisive"] > 1)
        for reason in r["rejections"] or []:
            rej[reason.split(":", 1)[0]] += 1
    s.admitted = sum(by_type.values())
    s.task_counts = count_tasks(rows).as_dict()
    s.by_type, s.by_tier, s.rejections_by_check = dict(sorted(by_type.items())), dict(sorted(by_tier.items())), dict(sorted(rej.items()))
    s.rules_covered, s.rules_total, s.metrics_covered = len(rules), len(pack.rules), len(metrics)
    s.featured_covered = len(featured)
    s.sql_plan = {a: dict(sorted(c.items())) for a, c in sorted(plans.items())}
    return s


AUGMENT_ROUNDS = 5


def augmentation_batch(candidates: list[Skeleton], used: set[str], compatible: Callable[[Skeleton], bool],
                       size: int) -> list[Skeleton]:
    """The best unused compatible skeletons, alternating rule-free and rule skeletons."""
    pool = sorted((s for s in candidates if s.key not in used and compatible(s)),
                  key=lambda s: (-quality(s, Counter(), Counter()), s.key))
    plain = [s for s in pool if not s.rules]
    ruled = [s for s in pool if s.rules]
    out: list[Skeleton] = []
    while len(out) < size and (plain or ruled):
        for source in (plain, ruled):
            if source and len(out) < size:
                out.append(source.pop(0))
    return out


def migrate(graph: Graph, domain: str, run_key: str) -> int:
    """Retire admitted tasks whose gold has an older meaning, with one changelog record; and give
    every task of an older graph one current run. The number of tasks retired."""
    graph.write("migrate_one_run_per_task", domain=domain)
    key = f"migration:{domain}/gold-v{GOLD_VERSION}@{run_key}"
    reason = f"gold meaning changed to v{GOLD_VERSION}: {GOLD_MEANING}; regenerated tasks are admitted again"
    retired = int(graph.write_returning("migrate_retire_old_gold", domain=domain, gold_version=GOLD_VERSION,
                                        reason=reason, key=key)[0]["retired"])
    if retired:
        graph.write("migrate_record", domain=domain, key=key,
                    props={"domain": domain, "gold_version": GOLD_VERSION, "retired": retired, "run": run_key,
                           "reason": reason, "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")})
    return retired


def plan_selection(graph: Graph, run_key: str, candidates: list[Skeleton], target: int, seed: int,
                   costs: dict[str, int] | None = None) -> list[str]:
    """MMR selection plus coverage, planned in the run; the planned keys in order."""
    sel = select(candidates, target, seed=seed)
    graph.write("skeletons_plan", run=run_key, rows=plan_rows(list(sel.picked), "mmr", 0, costs)
                + plan_rows(list(sel.coverage_added), "coverage", len(sel.picked), costs))
    return [s.key for s in list(sel.picked) + list(sel.coverage_added)]


def generate(pack: Pack, graph: Graph, *, target: int = 40, seed: int = 42, workers: int = 1,
             min_per_type: int = 3, progress: Callable[[str], None] | None = None,
             counter: Counter_ | None = None, resume: str | None = None, new: bool = False) -> RunSummary:
    """Generate a run's tasks. An unfinished run of the same domain, seed and target whose driver
    is gone is resumed (or the run `resume` names; `new` forces a fresh run): its plan is kept,
    the skeletons not yet done are processed, augmentation goes on from what is there."""
    started = time.perf_counter()
    if not graph.read("eval_domain", domain=pack.name):  # else an empty run, and "0 admitted" says nothing of why
        raise NotFound(f"domain {pack.name!r} is not in the graph", hint=f"run `dibench ingest {pack.name}` first")
    # The domain's write lease, for the whole run: no rule changes under it (update-rule and
    # ingest wait for it, then refuse in one line), so no task is admitted under a superseded
    # version. The worker processes start (and import) while this one enumerates and plans.
    with domain_lease(graph, pack.name, purpose=f"generate, seed {seed}, target {target}") as lease, \
            worker_pool(workers) as pool:
        return _generate(pack, graph, pool, started, lease, target=target, seed=seed, workers=workers,
                         min_per_type=min_per_type, progress=progress, counter=counter, resume=resume, new=new)


def refresh_pending(graph: Graph, run_key: str, domain: str, seed: int, costs: dict[str, int]) -> int:
    """A resumed run's skeletons not yet done, planned again under the domain's rules as they are
    now (a rule may have changed while the run was abandoned): each keeps its place in the plan
    with the current policy; one that is no longer a skeleton (its featured rule left the metric's
    policy, or the policy became incomplete) is dropped. The number dropped."""
    pending = [r["key"] for r in graph.read("run_pending_skeletons", run=run_key)]
    if not pending:
        return 0
    now = {s.key: s for s in enumerate_all(graph, domain, limit=10**9, seed=seed).skeletons}
    fresh = [now[k] for k in pending if k in now]
    gone = sorted(k for k in pending if k not in now)
    if fresh:
        graph.write("skeletons_plan", run=run_key, rows=plan_rows(fresh, "resume", 0, costs))
    if gone:
        graph.write("run_drop_skeletons", run=run_key, keys=gone,
                    reason="no longer a skeleton under the domain's current rules")
    graph.write("run_rules_state", run=run_key)
    return len(gone)


def _generate(pack: Pack, graph: Graph, pool: Pool | None, started: float, lease: DomainLease, *, target: int,
              seed: int, workers: int, min_per_type: int, progress: Callable[[str], None] | None,
              counter: Counter_ | None, resume: str | None, new: bool) -> RunSummary:
    retries_before = retry_counts()
    say = progress or (lambda _m: None)
    enum = enumerate_all(graph, pack.name, seed=seed)
    candidates = enum.skeletons
    say(f"{len(candidates)} skeletons enumerated")
    for metric, why in sorted(enum.skipped.items()):
        say(f"skipping metric {metric}: {why}")
    run: OpenedRun = open_run(graph, pack, seed, target, lambda: create_run(graph, pack, seed, target),
                              resume=resume, new=new)
    run_key = run.key
    heartbeat = Heartbeat(graph, run_key)

    def beat() -> None:
        heartbeat()
        lease.keep()

    migrated = migrate(graph, pack.name, run_key)
    if migrated:
        say(f"{migrated} tasks of an older gold meaning retired (GoldMigration record)")
    planned = [r["key"] for r in graph.read("run_planned", run=run_key)]
    costs = metric_costs(pack)  # the claim order's weights, for the plan and every augmentation round
    if run.resumed:
        dropped = refresh_pending(graph, run_key, pack.name, seed, costs)
        done, total = plan_states(graph, run_key)
        say(f"resuming run {run_key}: {done} of {total} skeletons done, {run.released} abandoned claims taken over"
            + (f", {dropped} no longer skeletons under the current rules" if dropped else ""))
    if not planned:
        planned = plan_selection(graph, run_key, candidates, target, seed, costs)
        selected = sum(1 for r in graph.read("run_planned", run=run_key) if r["selected_by"] == "mmr")
        say(f"{len(planned)} skeletons for --target {target}: {selected} selected by MMR, {len(planned) - selected} "
            f"for coverage; generating")
    stats = process(graph, run_key, pack, seed, workers, pool, counter, beat)
    summary = summarise(graph, run_key, pack, len(planned))
    # Minimum coverage augmentation: more compatible skeletons for under-represented types, in
    # rounds, alternating skeletons with and without rules (a rule rarely flips a label such as a
    # significance verdict, so rule-free skeletons are the reliable source for those types).
    analyses = {a.NAME: a for a in registry()}
    used = set(planned)
    for name, analysis in analyses.items():
        for _round in range(AUGMENT_ROUNDS):
            missing = min_per_type - summary.by_type.get(name, 0)
            if missing <= 0:
                break
            extra = augmentation_batch(candidates, used, analysis.compatible, max(2 * missing, 6))
            if not extra:
                break
            say(f"augmenting {name}: {len(extra)} more skeletons, beyond --target (--min-per-type {min_per_type})")
            used.update(s.key for s in extra)
            graph.write("skeletons_plan", run=run_key,
                        rows=plan_rows(extra, f"augment:{name}", len(planned), costs))
            planned += [s.key for s in extra]
            stats += process(graph, run_key, pack, seed, workers, pool, counter, beat,
                             calls_so_far=llm_calls(stats))
            summary = summarise(graph, run_key, pack, len(planned))
    # One question, one answer, across the whole domain (earlier runs included): a task whose
    # question another task with a different gold shares is rejected with the reason.
    ambiguous = reject_ambiguous(graph, pack.name)
    if ambiguous:
        say(f"{ambiguous} tasks rejected: their question is another task's, with a different answer")
    copies = reject_duplicates(graph, pack.name)
    if copies:
        say(f"{copies} tasks rejected: another task has their question and answer")
    if ambiguous or copies:
        summary = summarise(graph, run_key, pack, len(planned))
    # No score without the skill: a knowledge task a lazy reader or a shortcut answers is refused,
    # then a family a shortcut solves is not admitted.
    knowledge_refused = refuse_knowledge(graph, pack, run_key)
    if knowledge_refused:
        say(f"{sum(knowledge_refused.values())} knowledge tasks refused: a lazy reader or a shortcut answers them "
            f"({', '.join(f'{r} {n}' for r, n in knowledge_refused.items())})")
        summary = summarise(graph, run_key, pack, len(planned))
    table, shortcut_rejected = audit_run(graph, pack, run_key)
    if shortcut_rejected:
        say(f"{sum(shortcut_rejected.values())} tasks not admitted: a shortcut passes more than "
            f"{table.limit_pct:g}% of their family ({', '.join(shortcut_rejected)})")
        summary = summarise(graph, run_key, pack, len(planned))
    summary.shortcut_audit, summary.shortcut_rejected = table.model_dump(mode="json"), shortcut_rejected
    finish(graph, run_key)
    summary.ambiguous = ambiguous
    summary.skeletons = len(planned)
    summary.skipped_metrics, summary.migrated = enum.skipped, migrated
    summary.earlier_tasks = int(graph.read("run_earlier_tasks", domain=pack.name, run=run_key)[0]["n"])
    summary.wall_seconds = round(time.perf_counter() - started, 2)
    summary.sql_seconds = round(sum(s["sql_seconds"] for s in stats), 2)
    summary.sql_statements = sum(int(s["statements"]) for s in stats)
    summary.workers = workers
    # This process's retries (the driver's, and an inline worker's), plus the worker processes'.
    summary.write_retries = merge_retries([retries_between(retries_before, retry_counts())]
                                          + [s["write_retries"] for s in stats if s["pid"] != os.getpid()])
    summary.deadlocks = summary.write_retries.get(DEADLOCK, 0)
    summary.stage2 = stage2_mode()
    summary.resumed = run.resumed
    summary.llm = merge_counts([s["llm"] for s in stats if "llm" in s])
    summary.llm_failures = sum(summary.llm.get("failures", {}).values())
    for row in graph.write_returning("run_llm_usage", key=run_key, usage=json.dumps(summary.llm, sort_keys=True),
                                     calls=sum(summary.llm.get("calls", {}).values()),
                                     failures=summary.llm_failures):
        summary.llm_model = str(row["model"] or "none")
        summary.prompt_versions = json.loads(row["prompt_versions"] or "{}")
    graph.write("run_work_stats", key=run_key, workers=workers, statements=summary.sql_statements,
                sql_seconds=summary.sql_seconds, sql_plan=json.dumps(summary.sql_plan, sort_keys=True),
                retries=json.dumps(summary.write_retries, sort_keys=True), deadlocks=summary.deadlocks)
    return summary


def merge_retries(parts: list[dict[str, int]]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for part in parts:
        total.update(part)
    return dict(sorted(total.items()))


def llm_calls(stats: list[dict[str, Any]]) -> int:
    return sum(sum(s.get("llm", {}).get("calls", {}).values()) for s in stats)


def stage2_mode() -> str:
    if configured_model() is None:
        return "skipped (no LLM configured)"
    return "judged" if get_settings().llm_judge else "skipped (--no-judge)"
