"""The four routing metrics, per task and aggregated, plus selection diagnostics.

Per gold branch (weight 1, or 1/2 for each interpretation of an interactive task), matched to
the best submitted branch (each submitted branch used once):
- RA-Set: the branch's selected databases equal the required set.
- RA-Graph: RA-Set, the route's behaviour label, and the dependency edges (as database pairs).
- EA-Micro: over all required contributions (one per gold unit) of all tasks, weighted, the share
  that executed on a branch selecting no database beyond its gold branch and matched a gold result
  of its database (each unit credited once); a missing contribution is wrong, and so is every extra
  selected database (docs/routing.md, "Execution accuracy").
- Route+Exec-Graph: RA-Graph and every contribution of the branch correct.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from dibench.core.intervals import wilson
from dibench.routing.compare import CompareConfig, DEFAULT_DECIMALS, results_match
from dibench.routing.execution import BranchOutcomes, Outcome
from dibench.routing.models import Branch, Contract, ContractUnit, Route, RouteBranch

# An unnecessary clarification question (on a task that is not ambiguous) costs this share of the
# task's routing and end-to-end scores: asking must pay for itself, as the user's time is not free.
UNNEEDED_QUESTION_COST = 0.25


@dataclass(frozen=True)
class ScoreConfig:
    decimals: int | None = DEFAULT_DECIMALS
    unneeded_question_cost: float = UNNEEDED_QUESTION_COST


@dataclass
class BranchScore:
    branch_id: str
    weight: float
    set_ok: bool
    graph_ok: bool
    contributions: dict[str, bool]  # gold unit id -> executed correctly

    @property
    def exec_ok(self) -> bool:
        return all(self.contributions.values())


@dataclass
class TaskScore:
    task_id: str
    behaviour: str
    branches: list[BranchScore]
    required: set[str]
    selected: set[str]
    asked: bool = False
    cost: float = 0.0  # charged for an unnecessary clarification question

    def _weighted(self, attr: str) -> float:
        return sum(b.weight for b in self.branches if getattr(b, attr)) * (1 - self.cost)

    @property
    def ra_set(self) -> float:
        return self._weighted("set_ok")

    @property
    def ra_graph(self) -> float:
        return self._weighted("graph_ok")

    @property
    def route_exec(self) -> float:
        return sum(b.weight for b in self.branches if b.graph_ok and b.exec_ok) * (1 - self.cost)

    @property
    def extra(self) -> int:
        """Selected databases the gold route does not need: each is one wrong contribution."""
        return len(self.selected - self.required)

    @property
    def ea(self) -> tuple[float, float]:
        """(weighted correct contributions, weighted required contributions + extra databases)."""
        ok = sum(b.weight * sum(b.contributions.values()) for b in self.branches)
        return ok, sum(b.weight * len(b.contributions) for b in self.branches) + self.extra

    @property
    def precision(self) -> float:
        return len(self.selected & self.required) / len(self.selected) if self.selected else 0.0

    @property
    def recall(self) -> float:
        return len(self.selected & self.required) / len(self.required) if self.required else 1.0


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def match_branches(gold: list[Branch], submitted: list[RouteBranch]) -> list[int | None]:
    """For each gold branch, the index of its submitted branch (greedy by overlap, each used once)."""
    pairs = sorted(((_jaccard(set(g.databases), set(s.databases)), gi, si)
                    for gi, g in enumerate(gold) for si, s in enumerate(submitted)), key=lambda p: (-p[0], p[1], p[2]))
    out: list[int | None] = [None] * len(gold)
    used: set[int] = set()
    for overlap, gi, si in pairs:
        if overlap > 0 and out[gi] is None and si not in used:
            out[gi] = si
            used.add(si)
    return out


def _matching(fits: list[list[int]]) -> dict[int, int]:
    """A maximum matching of units to outcomes (fits[u]: the outcomes unit u accepts), by augmenting
    paths: unit index -> outcome index."""
    owner: dict[int, int] = {}  # outcome -> unit

    def assign(u: int, seen: set[int]) -> bool:
        for o in fits[u]:
            if o not in seen:
                seen.add(o)
                if o not in owner or assign(owner[o], seen):
                    owner[o] = u
                    return True
        return False

    for u in range(len(fits)):
        assign(u, set())
    return {u: o for o, u in owner.items()}


def _credited(units: list[ContractUnit], got: list[Outcome], want: list[Outcome], decimals: int | None
              ) -> dict[str, bool]:
    """Which gold units of one database the submitted outcomes answer: each outcome answers at most
    one unit, matched by result whatever the order of the asks. want[i] is unit i's gold outcome."""
    def fits(u: ContractUnit, w: Outcome | None, g: Outcome) -> bool:
        return bool(g.result is not None and w is not None and w.result is not None
                    and results_match(w.result.rows, g.result.rows, CompareConfig(u.ordered, decimals)))

    wanted: list[Outcome | None] = [want[i] if i < len(want) else None for i in range(len(units))]
    matched = _matching([[o for o, g in enumerate(got) if fits(u, w, g)] for u, w in zip(units, wanted)])
    return {u.unit_id: i in matched for i, u in enumerate(units)}


def score_task(contract: Contract, route: Route, outcomes: list[BranchOutcomes],
               gold: list[BranchOutcomes], cfg: ScoreConfig = ScoreConfig()) -> TaskScore:
    """outcomes[i]: the submitted branch i's executions; gold[j]: scored gold branch j's executions.

    An interactive task is scored on the reading the user means; a route hedging over several
    readings selects more than that reading and fails RA-Set.
    """
    scored = contract.scored_branches()
    matches = match_branches(scored, route.branches)
    hedged = contract.intended is not None and len(route.branches) > 1
    branches: list[BranchScore] = []
    for gi, (g, si) in enumerate(zip(scored, matches)):
        sub = route.branches[si] if si is not None else None
        set_ok = sub is not None and set(sub.databases) == set(g.databases) and not hedged
        edges_ok = sub is not None and {(e.source, e.target) for e in sub.edges} == {(e.source, e.target)
                                                                                     for e in g.edges}
        graph_ok = set_ok and edges_ok and route.behaviour == contract.behaviour
        # a branch that brings in a source the gold route does not need answers with results that do
        # not belong to the request: none of its contributions is credited
        over = sub is not None and bool(set(sub.databases) - set(g.databases))
        credited: dict[str, bool] = {}
        for db in g.databases:
            units = [u for u in g.units if u.database == db]
            # only as many contributions are read as the source has units: guessing one question
            # many ways buys nothing (and one unit per source reads the first, as before)
            got = outcomes[si].get(db, [])[:len(units)] if si is not None and not over else []
            credited |= _credited(units, got, gold[gi].get(db, []), cfg.decimals)
        contributions = {u.unit_id: credited[u.unit_id] for u in g.units}
        branches.append(BranchScore(g.branch_id, g.weight, set_ok, graph_ok, contributions))
    selected = {d for b in route.branches for d in b.databases}
    required = {d for b in scored for d in b.databases}
    cost = cfg.unneeded_question_cost if route.asked_clarification and contract.intended is None else 0.0
    return TaskScore(contract.task_id, contract.behaviour, branches, required, selected, route.asked_clarification,
                     cost)


@dataclass
class Summary:
    """Means over tasks (RA-Set, RA-Graph, Route+Exec-Graph, the selection figures) and over
    contributions (EA-Micro: `ea_contributions` of them, extra databases included)."""

    tasks: int
    ra_set: float
    ra_graph: float
    ea_micro: float
    route_exec_graph: float
    precision: float
    recall: float
    over_selection: float  # share of tasks selecting a database not required
    under_selection: float  # share of tasks missing a required database
    ea_contributions: float = 0.0  # EA-Micro's denominator
    by_behaviour: dict[str, "Summary"] = field(default_factory=dict)

    def interval(self, metric: str) -> tuple[float, float]:
        """The 95% Wilson interval of a metric of METRIC_NAMES."""
        n = self.ea_contributions if metric == "ea_micro" else self.tasks
        return wilson(getattr(self, metric) * n, n)


def summarise(scores: list[TaskScore], *, breakdown: bool = True) -> Summary:
    n = len(scores)
    if n == 0:
        return Summary(0, 0, 0, 0, 0, 0, 0, 0, 0)
    ok = sum(s.ea[0] for s in scores)
    total = sum(s.ea[1] for s in scores)
    summary = Summary(
        tasks=n, ra_set=sum(s.ra_set for s in scores) / n, ra_graph=sum(s.ra_graph for s in scores) / n,
        ea_micro=ok / total if total else 0.0, route_exec_graph=sum(s.route_exec for s in scores) / n,
        precision=sum(s.precision for s in scores) / n, recall=sum(s.recall for s in scores) / n,
        over_selection=sum(bool(s.selected - s.required) for s in scores) / n,
        under_selection=sum(bool(s.required - s.selected) for s in scores) / n, ea_contributions=total)
    if breakdown:
        groups: dict[str, list[TaskScore]] = defaultdict(list)
        for s in scores:
            groups[s.behaviour].append(s)
        summary.by_behaviour = {b: summarise(g, breakdown=False) for b, g in sorted(groups.items())}
    return summary
