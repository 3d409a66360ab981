"""What every contract builder shares: the build context, ids and unit conversion."""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from math import comb

from dibench.routing.models import (
    AnswerCondition, Behaviour, Branch, Contract, ContractUnit, DependencyEdge, SourceUnit,
)
from dibench.routing.pool import UnitInfo, UnitPool
from dibench.routing.sqlite_exec import SqliteExecutor
from dibench.routing.view import Locations


@dataclass
class BuildContext:
    catalog: str
    pool: UnitPool
    locations: Locations
    executor: SqliteExecutor
    rng: random.Random
    seed: int


# A fan-out of k databases out of n is drawn only if it leaves at least this many sets to choose
# from; on a catalog too small for any, only the size leaving the most (the smallest of them). On
# five databases "four sources" leaves 5 sets and "five" one (the select-all route), so a router
# counting the asks beat chance on those sizes alone; with one size per behaviour, the random
# router (drawing sizes with the benchmark's own weights) knows the number of sources as well as
# any count of the request's surface does.
MIN_SETS_PER_SIZE = 30


def open_sizes(sizes: tuple[int, ...], weights: tuple[int, ...], n: int) -> list[tuple[int, int]]:
    """(size, weight) pairs of the sizes whose choice of sets out of n databases is wide enough."""
    fitting = [(k, w) for k, w in zip(sizes, weights) if k <= n]
    wide = [(k, w) for k, w in fitting if comb(n, k) >= MIN_SETS_PER_SIZE]
    if wide or not fitting:
        return wide
    return [max(fitting, key=lambda kw: (comb(n, kw[0]), -kw[0]))]


# How many asks a request holds, drawn alike for single, parallel and exploratory requests (the
# exploratory request's question for its sources counts as one ask): where its sources take fewer,
# some are asked another question. On a small catalog every fan-out and cover is a pair, so a count
# of asks that followed the sources (one for a single request, four for an exploratory one) gave
# the behaviour away; drawn alike, each count is as likely under each behaviour. A fan-out that
# already takes as many asks asks one source a second question half the time (EXTRA_ASKS), so
# one more ask still says nothing about one more source.
ASKS = (2, 3, 4)
# A single request may also ask once: each of its asks must slip past the strict word-match, and on
# a small catalog few requests of four asks to one database do.
SINGLE_ASKS = (1, 2, 3)
EXTRA_ASKS = (0, 1)
# The most asks beyond one per source a contract may hold (a single request of max(ASKS) asks).
MAX_EXTRA_ASKS = max(ASKS) - 1


def extra_asks(ctx: BuildContext, base: int, asks: tuple[int, ...] = ASKS) -> int:
    """How many more asks than `base` (the asks the sources take, once each) the request holds;
    for a base of two or more, never more than base (max(ASKS) - 2 or one of EXTRA_ASKS)."""
    total = ctx.rng.choice(asks)
    return total - base if total > base else ctx.rng.choice(EXTRA_ASKS)


def distinct_units(ctx: BuildContext, infos: list[UnitInfo], n: int) -> list[ContractUnit]:
    """Up to n of infos, drawn at random, that ask different questions with different results (two
    asks of one source must each need their own answer); at least one when infos has any."""
    chosen: list[UnitInfo] = []
    for info in ctx.rng.sample(infos, len(infos)):
        if all(info.unit.fingerprint != c.unit.fingerprint and info.unit.intent != c.unit.intent for c in chosen):
            chosen.append(info)
        if len(chosen) == n:
            break
    return [contract_unit(i.unit) for i in chosen]


def task_id(behaviour: str, parts: list[str]) -> str:
    return "rt_" + hashlib.sha256(f"{behaviour}|{'|'.join(parts)}".encode()).hexdigest()[:12]


def contract_unit(u: SourceUnit, *, intent: str | None = None) -> ContractUnit:
    return ContractUnit(unit_id=u.unit_id, database=u.database, intent=intent or u.intent, sql=u.sql,
                        ordered=u.ordered, fingerprint=u.fingerprint)


def one_branch_contract(ctx: BuildContext, behaviour: Behaviour, units: list[ContractUnit], answer: AnswerCondition,
                        *, edges: list[DependencyEdge] | None = None, capabilities: list[str] | None = None) -> Contract:
    branch = Branch(branch_id="main", weight=1.0, databases=sorted({u.database for u in units}), units=units,
                    edges=edges or [])
    tid = task_id(behaviour, [u.unit_id for u in units] + (capabilities or []))
    return Contract(task_id=tid, catalog=ctx.catalog, behaviour=behaviour, branches=[branch], answer=answer,
                    seed=ctx.seed, capabilities=capabilities or [])
