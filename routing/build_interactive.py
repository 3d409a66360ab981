"""Interactive contracts: one request, two readings, each with its own source; the user means one.

A gold query whose tables and columns exist in exactly two databases (or three, when two do
not give enough) asks a question both can answer. Executed on each, it gives two different
non-empty results: the request is ambiguous by construction. The user means one reading, drawn
at random and kept private (`intended`); only the clarification answer, which describes that
reading by the entities only its database holds, tells a router which one. Without the turn no
router can beat a coin flip.
"""
from __future__ import annotations

from collections.abc import Iterator

from dibench.routing.build_common import BuildContext, contract_unit, task_id
from dibench.routing.compare import CompareConfig, fingerprint
from dibench.routing.errors import UnitSQLError
from dibench.routing.models import AnswerCondition, Branch, Contract, ContractUnit
from dibench.routing.pool import UnitInfo

ANSWERABLE_SIZES = (2, 3)  # databases able to answer: exact two-way ambiguity first


def _context(ctx: BuildContext, db: str, other: str, info: UnitInfo) -> list[str]:
    own = set(ctx.pool.view.databases[db].entities)
    theirs = set(ctx.pool.view.databases[other].entities)
    used = {ctx.pool.view.databases[db].tables[t].entity for t in info.tables if t in ctx.pool.view.databases[db].tables}
    return sorted(own - theirs - used)[:3]


def interpretation(intent: str, context: list[str]) -> str:
    return f"{intent.rstrip('.?! ')} (in the data that also records {', '.join(context)})"


def _derived(ctx: BuildContext, info: UnitInfo, db: str) -> ContractUnit | None:
    """The same gold SQL, owned by another database that has every table and column it names."""
    try:
        res = ctx.executor.run(ctx.locations.path(db), info.unit.sql)
    except UnitSQLError:
        return None
    cfg = CompareConfig(info.unit.ordered)
    if not res.rows or fingerprint(res.rows, cfg) == info.unit.fingerprint:
        return None  # empty, or the same answer: no real ambiguity
    return ContractUnit(unit_id=f"{info.unit.unit_id}@{db}", database=db, intent=info.unit.intent,
                        sql=info.unit.sql, ordered=info.unit.ordered, fingerprint=fingerprint(res.rows, cfg))


def _contract(ctx: BuildContext, info: UnitInfo, other: str) -> Contract | None:
    derived = _derived(ctx, info, other)
    own = info.unit.database
    ctx_a, ctx_b = _context(ctx, own, other, info), _context(ctx, other, own, info)
    if derived is None or not ctx_a or not ctx_b:
        return None
    readings = sorted([(contract_unit(info.unit), ctx_a), (derived, ctx_b)], key=lambda r: r[0].database)
    branches = [Branch(branch_id=bid, weight=0.5, interpretation=interpretation(unit.intent, context),
                       databases=[unit.database], units=[unit])
                for bid, (unit, context) in zip(("a", "b"), readings)]
    intended = ctx.rng.choice(branches)
    return Contract(task_id=task_id("interactive", [info.unit.unit_id, other]), catalog=ctx.catalog,
                    behaviour="interactive", branches=branches, seed=ctx.seed, intended=intended.branch_id,
                    answer=AnswerCondition(kind="per-branch", description="the result of the reading the user means",
                                           final_units=[intended.units[0].unit_id]))


def interactive_candidates(ctx: BuildContext) -> Iterator[Contract]:
    for n in ANSWERABLE_SIZES:
        infos = sorted((i for i in ctx.pool.infos.values() if len(i.answerable_by) == n),
                       key=lambda i: i.unit.unit_id)
        ctx.rng.shuffle(infos)
        infos.sort(key=lambda i: i.unit.intent_source != "question")  # human questions first, else shuffled
        for info in infos:
            for other in sorted(info.answerable_by - {info.unit.database}):
                contract = _contract(ctx, info, other)
                if contract is not None:
                    yield contract
