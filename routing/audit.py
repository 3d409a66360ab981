"""The shortcut audit of a routing benchmark: every router of the shortcut library on the same
contracts; per metric the best of them, with its 95% Wilson interval, is the chance level; per
behaviour, the families a shortcut solves above the random router's interval are flagged."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from dibench.core.intervals import wilson
from dibench.routing.environment import CatalogIndexes
from dibench.routing.evaluate import EvalResult, evaluate
from dibench.routing.execution import RouteExecutor
from dibench.routing.models import Contract
from dibench.routing.scoring import ScoreConfig, Summary
from dibench.routing.shortcuts import ShortcutContext, shortcut_routers

AUDITED = ("ra_set", "ra_graph", "ea_micro", "route_exec_graph")
RANDOM = "random"


@dataclass(frozen=True)
class Level:
    metric: str
    router: str
    value: float
    low: float
    high: float
    n: float


@dataclass
class ShortcutAudit:
    chance: list[Level]  # per metric: the best shortcut
    random: list[Level]  # per metric: the random router, the floor a family is judged against
    routers: dict[str, dict[str, float]]  # router -> metric -> value
    flagged: dict[str, list[str]] = field(default_factory=dict)  # behaviour -> shortcuts above random's interval

    def level(self, metric: str) -> Level:
        return next(x for x in self.chance if x.metric == metric)

    def to_dict(self) -> dict[str, Any]:
        return {"chance": [asdict(x) for x in self.chance], "random": [asdict(x) for x in self.random],
                "routers": self.routers, "flagged": self.flagged}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ShortcutAudit":
        return cls([Level(**x) for x in data["chance"]], [Level(**x) for x in data["random"]], data["routers"],
                   data.get("flagged", {}))


def _level(metric: str, router: str, s: Summary) -> Level:
    n = s.ea_contributions if metric == "ea_micro" else s.tasks
    low, high = s.interval(metric)
    return Level(metric, router, getattr(s, metric), low, high, n)


def _flagged(results: list[EvalResult]) -> dict[str, list[str]]:
    rand = next(r for r in results if r.router == RANDOM).summary.by_behaviour
    out: dict[str, list[str]] = {}
    for r in results:
        if r.router == RANDOM:
            continue
        for b, s in r.summary.by_behaviour.items():
            floor = rand.get(b)
            ceiling = wilson(floor.ra_graph * floor.tasks, floor.tasks)[1] if floor else 0.0
            if s.tasks and s.ra_graph > ceiling:
                out.setdefault(b, []).append(r.router)
    return out


def audit(contracts: list[Contract], indexes: CatalogIndexes, route_executor: RouteExecutor, seed: int,
          cfg: ScoreConfig = ScoreConfig(), progress: Callable[[int], None] | None = None) -> ShortcutAudit:
    routers = shortcut_routers(ShortcutContext(seed, tuple(contracts)))
    results = [evaluate(contracts, indexes, route_executor, r, cfg=cfg, progress=progress) for r in routers]
    chance = []
    for m in AUDITED:
        best = max(results, key=lambda r: (getattr(r.summary, m), r.router == RANDOM))
        chance.append(_level(m, best.router, best.summary))
    rand = next(r for r in results if r.router == RANDOM)
    return ShortcutAudit(chance, [_level(m, RANDOM, rand.summary) for m in AUDITED],
                         {r.router: {m: getattr(r.summary, m) for m in AUDITED} for r in results}, _flagged(results))
