"""What every contract builder shares: the build context, ids and unit conversion."""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from dibench.routing.models import (
    AnswerCondition, Behaviour, Branch, Contract, ContractUnit, DependencyEdge, SourceUnit,
)
from dibench.routing.pool import UnitPool
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
