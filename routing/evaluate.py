"""Run a router over contracts in the environment, execute its routes, score, and audit retrieval."""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from dibench.routing.clarify import ClarificationSimulator
from dibench.routing.environment import CatalogIndexes, RoutingEnvironment
from dibench.routing.errors import RouteInvalid
from dibench.routing.execution import BranchOutcomes, RouteExecutor, gold_branch_route
from dibench.routing.models import Contract, Route
from dibench.routing.routers import Router, RouterTask
from dibench.routing.routers.layout import LayoutRouter
from dibench.routing.routers.random_router import RandomRouter
from dibench.routing.scoring import ScoreConfig, Summary, TaskScore, match_branches, score_task, summarise

AUDIT_KS = (10, 50)


@dataclass
class AuditRow:
    k: int
    recall: float  # mean share of required sources within the top k
    complete: float  # share of tasks whose whole required set is within the top k


@dataclass
class EvalResult:
    router: str
    summary: Summary
    executor: str  # which reference executor wrote the SQL of contributions that brought none
    scores: list[TaskScore]
    invalid_routes: int = 0
    asked: int = 0
    errors: list[str] = field(default_factory=list)


def retrieval_audit(contracts: list[Contract], indexes: CatalogIndexes, ks: tuple[int, ...] = AUDIT_KS) -> list[AuditRow]:
    """BM25 over capability summaries with the request as query (the lexical router's retriever)."""
    rows = []
    rankings = [[pid for pid, _ in indexes.capabilities.rank(c.request)] for c in contracts]
    for k in ks:
        recall = complete = 0.0
        for c, ranking in zip(contracts, rankings):
            required = c.required_databases()
            found = required & set(ranking[:k])
            recall += len(found) / len(required)
            complete += found == required
        n = max(len(contracts), 1)
        rows.append(AuditRow(k, recall / n, complete / n))
    return rows


def evaluate(contracts: list[Contract], indexes: CatalogIndexes, route_executor: RouteExecutor, router: Router,
             *, clarify: bool = False, cfg: ScoreConfig = ScoreConfig(),
             progress: Callable[[int], None] | None = None) -> EvalResult:
    simulator = ClarificationSimulator(contracts) if clarify else None
    scores: list[TaskScore] = []
    invalid = 0
    errors: list[str] = []
    for c in contracts:
        env = RoutingEnvironment(indexes, simulator.for_task(c.task_id) if simulator else None)
        try:
            route = router.route(RouterTask(c.task_id, c.request), env)
        except RouteInvalid as exc:
            invalid += 1
            errors.append(f"{c.task_id}: {exc}")
            route = Route(behaviour="single", branches=[])
        # each submitted branch runs against the gold branch it is scored with (the oracle executor's only input)
        scored = c.scored_branches()
        gold_of = {si: scored[gi] for gi, si in enumerate(match_branches(scored, route.branches)) if si is not None}
        outcomes: list[BranchOutcomes] = [route_executor.run_branch(b, gold_of.get(i))
                                              for i, b in enumerate(route.branches)]
        gold = [route_executor.run_branch(gold_branch_route(b)) for b in scored]
        scores.append(score_task(c, route, outcomes, gold, cfg))
        if progress:
            progress(1)
    return EvalResult(router.name, summarise(scores), route_executor.writer.name, scores, invalid,
                      sum(s.asked for s in scores), errors)


def behaviour_mix(contracts: list[Contract]) -> dict[str, int]:
    return dict(Counter(str(c.behaviour) for c in contracts))


def size_mix(contracts: list[Contract]) -> dict[str, dict[int, int]]:
    """behaviour -> databases per gold branch -> tasks (an interactive reading is one branch)."""
    out: dict[str, Counter[int]] = {}
    for c in contracts:
        out.setdefault(str(c.behaviour), Counter())[len(c.branches[0].databases)] += 1
    return {b: dict(sizes) for b, sizes in out.items()}


def random_router(seed: int, contracts: list[Contract]) -> RandomRouter:
    """The random router stratified by these contracts' behaviour mix and gold set sizes."""
    return RandomRouter(seed, behaviour_mix(contracts), size_mix(contracts))


def chance_routers(seed: int, contracts: list[Contract]) -> list[Router]:
    """The routers whose scores say what chance and the request's layout alone give on these
    contracts: random (drawing labels and sizes with the contracts' mix) and layout-only."""
    return [random_router(seed, contracts), LayoutRouter(seed)]
