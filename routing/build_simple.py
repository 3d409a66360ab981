"""Single-target and parallel contracts: distinctive units from one, or 2-8 different, databases.

The number of asks is drawn apart from the number of databases (build_common.ASKS): a source may
be asked another, different question (another unit of the same database, with another result), so
a request with three asks may need one source, two or three. Counting a request's asks then no
longer gives the number of its sources.
"""
from __future__ import annotations

from collections.abc import Iterator

from dibench.routing.build_common import (
    SINGLE_ASKS, BuildContext, distinct_units, extra_asks, one_branch_contract, open_sizes,
)
from dibench.routing.models import AnswerCondition, Contract, ContractUnit
from dibench.routing.pool import prefer_questions

# How many units a parallel contract takes: small fan-outs are more common, up to 8.
PARALLEL_SIZES = (2, 3, 4, 5, 6, 7, 8)
PARALLEL_WEIGHTS = (30, 25, 15, 10, 8, 6, 6)


def distinct_asks(ctx: BuildContext, db: str, n: int) -> list[ContractUnit]:
    """Up to n distinctive units of db asking different questions with different results (at least one)."""
    return distinct_units(ctx, prefer_questions(ctx.pool.distinctive_by_database[db]), n)


def single_candidates(ctx: BuildContext) -> Iterator[Contract]:
    """Endless stream: a random database, then random distinctive units of it (as many as
    a request holds asks, `extra_asks`).

    A single request is the units' own texts, so databases with released human questions come
    first (when the catalog has any): the request is then a question a person asked.
    """
    by_db = ctx.pool.distinctive_by_database
    dbs = ctx.pool.prefer_asked(by_db, at_least=1)
    while dbs:
        db = ctx.rng.choice(dbs)
        units = distinct_asks(ctx, db, 1 + extra_asks(ctx, 1, SINGLE_ASKS))
        yield one_branch_contract(ctx, "single", units, AnswerCondition(
            kind="each-unit", description="the result of each unit of the one source",
            final_units=[u.unit_id for u in units]))


def parallel_candidates(ctx: BuildContext) -> Iterator[Contract]:
    dbs = ctx.pool.prefer_asked(ctx.pool.distinctive_by_database)
    sizes = open_sizes(PARALLEL_SIZES, PARALLEL_WEIGHTS, len(dbs))
    while sizes:  # a small catalog draws only the fan-outs that leave a choice of sets
        k = ctx.rng.choices([k for k, _ in sizes], weights=[w for _, w in sizes])[0]
        chosen = ctx.rng.sample(dbs, k)
        twice = set(ctx.rng.sample(chosen, extra_asks(ctx, k)))  # the sources asked a second question
        units = [u for db in chosen for u in distinct_asks(ctx, db, 2 if db in twice else 1)]
        yield one_branch_contract(ctx, "parallel", units, AnswerCondition(
            kind="each-unit", description="each unit's result, computed independently of the others",
            final_units=[u.unit_id for u in units]))
