"""Sequential contracts: an upstream unit's single result value feeds a downstream filter.

A binding is found from a value overlap: the upstream unit returns one row, one of whose
values equals a literal in an equality filter of a downstream unit on another database. The
downstream SQL is rewritten on its syntax tree so that literal becomes the bound parameter
`:bound_value`, and the downstream intent no longer states the value.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from dibench.routing.build_common import BuildContext, contract_unit, one_branch_contract
from dibench.routing.compare import CompareConfig, fingerprint
from dibench.routing.errors import UnitSQLError
from dibench.routing.intents import BOUND_PHRASE, render_intent
from dibench.routing.models import AnswerCondition, Binding, Contract, ContractUnit, DependencyEdge
from dibench.routing.naming import natural, tokens
from dibench.routing.pool import UnitInfo
from dibench.routing.sqltree import FilterLiteral, filter_literals, parameterise, render

PARAMETER = "bound_value"
MAX_PER_VALUE = 3  # keep a few very common values ("USA") from dominating


@dataclass(frozen=True)
class SeqCandidate:
    upstream: UnitInfo
    column: str
    value: Any
    downstream: UnitInfo
    literal: FilterLiteral
    affinity: int  # shared words of the two column names


def _bindable(value: Any, lit: FilterLiteral) -> bool:
    if isinstance(value, str):
        return value == lit.value and len(value) >= 3 and any(ch.isalpha() for ch in value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value == lit.value and 1800 <= value <= 2100 and "year" in lit.column
    return False


def value_type(value: Any) -> str:
    return "text" if isinstance(value, str) else "integer" if isinstance(value, int) else "real"


def candidates(ctx: BuildContext) -> list[SeqCandidate]:
    index: dict[Any, list[tuple[UnitInfo, FilterLiteral]]] = defaultdict(list)
    for info in ctx.pool.infos.values():
        if info.distinctive:
            for lit in filter_literals(info.tree):
                index[lit.value].append((info, lit))
    out: list[SeqCandidate] = []
    for up in sorted(ctx.pool.infos.values(), key=lambda i: i.unit.unit_id):
        if up.unit.n_rows != 1 or not up.distinctive:
            continue
        try:
            res = ctx.executor.run(ctx.locations.path(up.unit.database), up.unit.sql)
        except UnitSQLError:
            continue
        for col, value in zip(res.columns, res.rows[0]):
            for down, lit in index.get(value, []):
                if down.unit.database != up.unit.database and _bindable(value, lit):
                    affinity = len(set(tokens(col)) & set(tokens(lit.column)))
                    out.append(SeqCandidate(up, col, value, down, lit, affinity))
    return out


ONE_FOUND = "the one found above"


def _downstream_intent(down: UnitInfo, lit: FilterLiteral, tree_sql_intent: str) -> str:
    """The downstream question without the bound value: "... using language English" becomes
    "... using that language" (the question's own word, never repeated), a value with no such word
    before it "the one found above" (the binding column is not named where the question did not
    name it)."""
    text = str(lit.value)
    if down.unit.intent_source == "question":
        col = natural(lit.column)
        quote = "[\"'\u2018\u2019\u201c\u201d`]?"  # straight, curly or back quotes around the value
        pattern = re.compile(rf"(?:\b({re.escape(col)})\s+)?{quote}{re.escape(text)}{quote}", re.IGNORECASE)
        if len(pattern.findall(down.unit.intent)) == 1:
            return pattern.sub(lambda m: f"that {m.group(1)}" if m.group(1) else ONE_FOUND, down.unit.intent)
    return tree_sql_intent


def tree_intent(tree: exp.Expression) -> str:
    """The downstream query's own wording, the bound value "the one found above" ("where country is
    the one found above", never "where country is that country")."""
    return render_intent(tree).replace(BOUND_PHRASE, ONE_FOUND)


def make_contract(ctx: BuildContext, c: SeqCandidate) -> Contract | None:
    tree = parameterise(c.downstream.tree, c.literal.index, PARAMETER)
    sql = render(tree)
    try:
        res = ctx.executor.run(ctx.locations.path(c.downstream.unit.database), sql, {PARAMETER: c.value})
    except UnitSQLError:
        return None
    if not res.rows:
        return None
    down_unit = ContractUnit(
        unit_id=f"{c.downstream.unit.unit_id}~{PARAMETER}", database=c.downstream.unit.database,
        intent=_downstream_intent(c.downstream, c.literal, tree_intent(tree)),
        sql=sql,
        ordered=c.downstream.unit.ordered, fingerprint=fingerprint(res.rows, CompareConfig(c.downstream.unit.ordered)))
    up_unit = contract_unit(c.upstream.unit)
    edge = DependencyEdge(source=up_unit.database, target=down_unit.database, source_unit=up_unit.unit_id,
                          target_unit=down_unit.unit_id,
                          binding=Binding(parameter=PARAMETER, upstream_column=c.column, value_type=value_type(c.value)))
    return one_branch_contract(ctx, "sequential", [up_unit, down_unit], AnswerCondition(
        kind="final-unit", description="the downstream result, computed with the value the upstream unit returns",
        final_units=[down_unit.unit_id]), edges=[edge])


def _questions(c: SeqCandidate) -> int:
    return sum(i.unit.intent_source == "question" for i in (c.upstream, c.downstream))


def sequential_candidates(ctx: BuildContext) -> Iterator[Contract]:
    """Candidates with related column names first, then the rest; within each, those whose units are
    released human questions first (both, then one); shuffled within each group."""
    cands = candidates(ctx)
    ctx.rng.shuffle(cands)
    cands.sort(key=lambda c: (-min(c.affinity, 1), -_questions(c)))
    per_value: Counter[Any] = Counter()
    used_down: set[str] = set()
    for c in cands:
        if per_value[c.value] >= MAX_PER_VALUE or c.downstream.unit.unit_id in used_down:
            continue
        contract = make_contract(ctx, c)
        if contract is not None:
            per_value[c.value] += 1
            used_down.add(c.downstream.unit.unit_id)
            yield contract
