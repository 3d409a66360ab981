"""Single-target and parallel contracts: distinctive units from one, or 2-8 different, databases."""
from __future__ import annotations

from collections.abc import Iterator

from dibench.routing.build_common import BuildContext, contract_unit, one_branch_contract, open_sizes
from dibench.routing.models import AnswerCondition, Contract
from dibench.routing.pool import prefer_questions

# How many units a parallel contract takes: small fan-outs are more common, up to 8.
PARALLEL_SIZES = (2, 3, 4, 5, 6, 7, 8)
PARALLEL_WEIGHTS = (30, 25, 15, 10, 8, 6, 6)


def single_candidates(ctx: BuildContext) -> Iterator[Contract]:
    """Endless stream: a random database, then a random distinctive unit of it.

    A single request is the unit's own text, so databases with released human questions come
    first (when the catalog has any): the request is then a question a person asked.
    """
    by_db = ctx.pool.distinctive_by_database
    dbs = ctx.pool.prefer_asked(by_db, at_least=1)
    while dbs:
        db = ctx.rng.choice(dbs)
        info = ctx.rng.choice(prefer_questions(ctx.pool.distinctive_by_database[db]))
        yield one_branch_contract(ctx, "single", [contract_unit(info.unit)], AnswerCondition(
            kind="each-unit", description="the result of the one source unit", final_units=[info.unit.unit_id]))


def parallel_candidates(ctx: BuildContext) -> Iterator[Contract]:
    dbs = ctx.pool.prefer_asked(ctx.pool.distinctive_by_database)
    sizes = open_sizes(PARALLEL_SIZES, PARALLEL_WEIGHTS, len(dbs))
    while sizes:  # a small catalog draws only the fan-outs that leave a choice of sets
        k = ctx.rng.choices([k for k, _ in sizes], weights=[w for _, w in sizes])[0]
        chosen = ctx.rng.sample(dbs, k)
        units = [contract_unit(ctx.rng.choice(prefer_questions(ctx.pool.distinctive_by_database[db])).unit)
                 for db in chosen]
        yield one_branch_contract(ctx, "parallel", units, AnswerCondition(
            kind="each-unit", description="each source's result, computed independently of the others",
            final_units=[u.unit_id for u in units]))
