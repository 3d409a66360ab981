"""`dibench domain validate`: every problem of a pack, one line each, with file and field.

The same checks guard every path that writes: ingest leaves out a rule document with a problem
(`document_problems`) and refuses a pack whose catalog has one (`catalog_problems`), and
update-rule, remove-rule and the HTTP API refuse before planning, with the same lines.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sqlglot import exp

from dibench.core.errors import DibenchError, PackError, PackErrors
from dibench.core.models import MetricSpec
from dibench.core.pack import Pack, RuleDoc, _rel, load_pack
from dibench.ingest.conflicts import conflict_lines, pack_conflicts
from dibench.sqlops.dialect import STATEMENT_LIMITS, check_size, parse, parse_expression, placeholders
from dibench.sqlops.ops import AnyEffect, Bound, apply_effect
from dibench.sqlops.scope import foreign_schemas
from dibench.sqlops.tree import columns_read, outer_select, table_alias, tables_read, value_projection
from dibench.stores.pack_data import schema_columns
from dibench.stores.warehouse import Warehouse, check_readonly

# The pipeline appends these clauses itself (GROUP BY a dimension, HAVING for suppression),
# so a template that already has one would be rewritten into something else.
_FORBIDDEN_CLAUSES = (("group", "GROUP BY"), ("having", "HAVING"), ("order", "ORDER BY"), ("limit", "LIMIT"),
                      ("offset", "OFFSET"))


def _metric_problems(pack: Pack, columns: dict[str, dict[str, str]]) -> list[PackError]:
    file = _rel(pack.root / pack.spec.metrics)
    dims = {d.column for d in pack.spec.dimensions}
    out: list[PackError] = []
    ids = set(pack.metric_by_id)
    for i, m in enumerate(pack.metrics):
        at = f"metrics.{i}({m.id})"
        if m.derived is not None:
            out += [PackError(file, f"{at}.{f}", msg) for f, msg in _derived_problems(pack, m)]
            continue
        try:
            check_size(m.template, STATEMENT_LIMITS, where="sql")
        except DibenchError as exc:
            out.append(PackError(file, f"{at}.sql", str(exc).split(": ", 1)[-1]))
            continue
        try:
            tree = check_readonly(m.template)
        except DibenchError as exc:
            out.append(PackError(file, f"{at}.sql", f"not a single SELECT: {exc}"))
            continue
        try:
            value_projection(parse(m.template))
        except DibenchError as exc:
            out.append(PackError(file, f"{at}.sql", str(exc)))
        out += [PackError(file, f"{at}.{f}", msg)
                for f, msg in _template_shape(m.template, m.time_ref, m.dimensions, columns)]
        out += [PackError(file, f"{at}.sql", p) for p in foreign_schemas(tree, {pack.schema})]
        holes = placeholders(tree)
        for need in ("start_date", "end_date"):
            if need not in holes:
                out.append(PackError(file, f"{at}.sql", f"missing placeholder :{need}"))
        for h in sorted(holes - {"start_date", "end_date"} - set(m.params)):
            out.append(PackError(file, f"{at}.sql", f"placeholder :{h} has no default in params"))
        for c in m.components:
            if c not in ids:
                out.append(PackError(file, f"{at}.components", f"unknown metric {c!r}"))
        for d in m.dimensions:
            if d not in dims:
                out.append(PackError(file, f"{at}.dimensions", f"{d!r} is not declared in pack.yaml dimensions"))
        if columns:
            for t in sorted(tables_read(tree)):
                if t not in columns:
                    out.append(PackError(file, f"{at}.sql", f"table {t!r} does not exist in schema {pack.schema!r}"))
            for t, c in sorted(columns_read(tree)):
                if t in columns and c not in columns[t]:
                    out.append(PackError(file, f"{at}.sql", f"column {t}.{c} does not exist"))
    for i, cycle in _component_cycles(pack):
        out.append(PackError(file, f"metrics.{i}({pack.metrics[i].id}).components",
                             f"composite metrics form a cycle: {' -> '.join(cycle)}"))
    return out


def _derived_problems(pack: Pack, m: MetricSpec) -> list[tuple[str, str]]:
    """(field, problem) of a derived metric: its expression, inputs and dimensions."""
    assert m.derived is not None
    out: list[tuple[str, str]] = []
    try:
        expr = parse_expression(m.derived.expression, where="derived.expression")
    except DibenchError as exc:
        return [("derived.expression", str(exc))]
    names = set(m.derived.inputs)
    for col in expr.find_all(exp.Column):
        if col.table or col.name not in names:
            out.append(("derived.expression", f"{col.sql()} is not one of the inputs ({', '.join(sorted(names))})"))
    if any(isinstance(n, (exp.AggFunc, exp.Subquery, exp.Select)) for n in expr.walk()):
        out.append(("derived.expression", "an expression over the inputs' values takes no aggregate or subquery"))
    for name, mid in m.derived.inputs.items():
        comp = pack.metric_by_id.get(mid)
        if comp is None:
            out.append((f"derived.inputs.{name}", f"unknown metric {mid!r}"))
        elif comp.derived is not None:
            out.append((f"derived.inputs.{name}", f"{mid} is derived itself: inputs must have SQL of their own"))
        else:
            for d in m.dimensions:
                try:
                    table_alias(parse(comp.template), d.split(".", 1)[0])
                except DibenchError:
                    out.append(("dimensions", f"{d}: input {mid} does not read table {d.split('.', 1)[0]!r}"))
    return out


def _outer_aliases(select: exp.Select) -> dict[str, str]:
    """{alias: table} of the physical tables in the outer FROM/JOINs."""
    from_ = select.args.get("from") or select.args.get("from_")
    sources = ([from_.this] if from_ is not None else []) + [j.this for j in select.args.get("joins") or []]
    return {s.alias_or_name: s.name for s in sources if isinstance(s, exp.Table)}


def _template_shape(sql: str, time_column: str, dimensions: list[str],
                    columns: dict[str, dict[str, str]]) -> list[tuple[str, str]]:
    """(field, problem) for the template conventions the pipeline relies on."""
    try:
        select = outer_select(parse(sql))
    except DibenchError:
        return []  # reported by the SELECT / `value` checks
    out: list[tuple[str, str]] = []
    if len(select.expressions) != 1:
        out.append(("sql", f"the outer SELECT must have exactly one projection (`... AS value`), "
                           f"found {len(select.expressions)}"))
    for arg, clause in _FORBIDDEN_CLAUSES:
        if select.args.get(arg) is not None:
            out.append(("sql", f"{clause} is not allowed in a template (the pipeline adds its own)"))
    aliases = _outer_aliases(select)
    alias = time_column.split(".", 1)[0] if "." in time_column else None
    if alias is None or alias not in aliases:
        out.append(("time_column", f"{time_column!r} must be alias.column with an alias of the outer FROM/JOIN "
                                   f"({', '.join(sorted(aliases))})"))
    elif columns and aliases[alias] in columns and time_column.split(".", 1)[1] not in columns[aliases[alias]]:
        out.append(("time_column", f"column {aliases[alias]}.{time_column.split('.', 1)[1]} does not exist"))
    for d in dimensions:
        try:
            table_alias(select, d.split(".", 1)[0])
        except DibenchError as exc:
            out.append(("dimensions", f"{d}: {exc}"))
    return out


def _component_cycles(pack: Pack) -> list[tuple[int, list[str]]]:
    """Cycles of metric -> component edges, each reported once, at its first metric."""
    index = {m.id: i for i, m in enumerate(pack.metrics)}
    found: dict[frozenset[str], tuple[int, list[str]]] = {}

    def walk(mid: str, path: list[str]) -> None:
        for c in pack.metric_by_id[mid].components if mid in pack.metric_by_id else []:
            if c in path:
                cycle = path[path.index(c):] + [c]
                found.setdefault(frozenset(cycle), (index[cycle[0]], cycle))
            elif c in pack.metric_by_id:
                walk(c, path + [c])

    for m in pack.metrics:
        walk(m.id, [m.id])
    return sorted(found.values())


def _expression_refs(expr: exp.Expression, tree: exp.Expression, columns: dict[str, dict[str, str]]) -> list[str]:
    """Problems of the alias.column references of an effect expression against the metric's SQL tree."""
    # An expression may bring its own subquery (and aliases) along with the metric's.
    alias_to_table = {t.alias_or_name: t.name for src in (tree, expr) for t in src.find_all(exp.Table)}
    out = []
    for col in expr.find_all(exp.Column):
        if not col.table:
            continue
        table = alias_to_table.get(col.table)
        if table is None:
            out.append(f"{col.sql()}: {col.table!r} is not a table alias of the metric's SQL "
                       f"({', '.join(sorted(alias_to_table))})")
        elif columns and table in columns and col.name not in columns[table]:
            out.append(f"{col.sql()}: column {table}.{col.name} does not exist")
    return out


def reference_problems(pack: Pack, eff: AnyEffect) -> list[tuple[str, str]]:
    """(field, problem) of what one effect names that the graph must hold: a metric of the pack that
    is not derived (rules change those through their inputs), and a declared dimension (an
    APPLIES_WHEN edge to an undeclared one would silently find no Dimension node)."""
    out: list[tuple[str, str]] = []
    metric = pack.metric_by_id.get(eff.metric)
    if metric is None:
        out.append(("metric", f"unknown metric {eff.metric!r}"))
    elif metric.derived is not None:
        out.append(("metric", f"{metric.id} is derived: a rule changes it through its inputs "
                              f"({', '.join(metric.derived.inputs.values())})"))
    if eff.applies_when and eff.applies_when.dimension not in {d.column for d in pack.spec.dimensions}:
        out.append(("applies_when.dimension", f"{eff.applies_when.dimension!r} is not a declared dimension"))
    return out


def effect_problems(pack: Pack, eff: AnyEffect, columns: dict[str, dict[str, str]], rule_id: str,
                    at: str = "") -> list[tuple[str, str]]:
    """(field, problem) of one effect: its references (`reference_problems`), expressions (parsed,
    naming no other schema, and their alias.column references checked against the metric's SQL and
    the loaded schema), parameter, and the rewrite itself. Front-matter effects (`domain validate`) and LLM-extracted effects (ingest) go through
    the same checks."""
    out = reference_problems(pack, eff)
    metric = pack.metric_by_id.get(eff.metric)
    if metric is None or metric.derived is not None:
        return out
    try:
        tree: exp.Expression | None = outer_select(parse(metric.template))
    except DibenchError:
        tree = None  # the metric's own problem, reported against metrics.yaml
    parsed = True
    for fname in ("predicate", "weight", "expression", "count"):
        text = getattr(eff, fname, None)
        if not text:
            continue
        try:
            expr = parse_expression(text, where=f"{at}{fname}")
        except DibenchError as exc:
            parsed = False
            out.append((fname, str(exc).split(": ", 1)[-1]))
            continue
        foreign = foreign_schemas(expr, {pack.schema})
        if foreign:
            parsed = False  # never rewritten: apply_effect would refuse it the same way
            out += [(fname, p) for p in foreign]
            continue
        if tree is not None:
            out += [(fname, p) for p in _expression_refs(expr, tree, columns)]
    if eff.op == "threshold" and eff.param not in metric.params:
        out.append(("param", f"metric {metric.id} has no parameter {eff.param!r}"))
    elif parsed and tree is not None:
        # The same rewrite ingest and grounding will do: guards a given op does not take,
        # a parameter absent from the SQL, an applies_when table outside the outer FROM ...
        try:
            apply_effect(Bound(tree), eff, metric, rule_id)
        except DibenchError as exc:
            out.append(("", f"cannot apply to {metric.id}: {exc}"))
    return out


def after_problem(pack: Pack, rule_id: str, eff: AnyEffect) -> str | None:
    """What is wrong with an effect's `after: RULE`: its own rule, a rule the pack does not hold,
    or one with no effect on the same metric (nothing to come after)."""
    if eff.after is None:
        return None
    if eff.after == rule_id:
        return "names the effect's own rule"
    other = next((d for d in pack.rules if d.id == eff.after), None)
    if other is None:
        return f"unknown rule {eff.after!r}"
    if not any(e.metric == eff.metric for e in other.front.effects or []):
        return f"rule {eff.after} has no effect on metric {eff.metric}: there is nothing to apply after"
    return None


def document_problems(pack: Pack, doc: RuleDoc, columns: dict[str, dict[str, str]],
                      effects: Sequence[AnyEffect] | None = None) -> list[PackError]:
    """Every problem of one rule document's effects (its front matter's, or `effects` an LLM
    extracted), as `domain validate` reports them: one PackError per problem, naming the file
    and the field (`effects.<j>.<field>`)."""
    file = _rel(doc.path)
    out: list[PackError] = []
    for j, eff in enumerate(doc.front.effects or [] if effects is None else effects):
        out += [PackError(file, f"effects.{j}.{f}" if f else f"effects.{j}", p)
                for f, p in effect_problems(pack, eff, columns, doc.id, f"effects.{j}.")]
        problem = after_problem(pack, doc.id, eff)
        if problem:
            out.append(PackError(file, f"effects.{j}.after", problem))
    return out


def _rule_problems(pack: Pack, columns: dict[str, dict[str, str]] | None = None) -> list[PackError]:
    return [p for doc in pack.rules for p in document_problems(pack, doc, columns or {})]


def _conflict_problems(pack: Pack) -> list[PackError]:
    files = {doc.id: doc for doc in pack.rules}
    found = pack_conflicts(pack)
    return [PackError(_rel(files[c.rule_b].path), "supersedes / effects.after", line)
            for c, line in zip(found, conflict_lines(pack, found))]


def catalog_problems(pack: Pack, columns: dict[str, dict[str, str]]) -> list[PackError]:
    """Problems of metrics.yaml and of pack.yaml's dimensions (`columns`: the loaded schema; empty:
    table and column references are not checked)."""
    problems = _metric_problems(pack, columns)
    for d in pack.spec.dimensions:
        t, c = d.column.split(".")
        if columns and (t not in columns or c not in columns[t]):
            problems.append(PackError(_rel(pack.root / "pack.yaml"), "dimensions", f"{d.column} does not exist"))
    return problems


def refuse_problems(problems: list[PackError]) -> None:
    """Raise the problems (PackErrors, one line each) before anything is written."""
    if problems:
        raise PackErrors(problems)


def validate_pack(path: str | Path, wh: Warehouse | None = None) -> tuple[Pack | None, list[PackError]]:
    """Return the pack (if readable) and every problem found."""
    try:
        pack = load_pack(path)
    except PackErrors as exc:
        return None, exc.errors
    columns = schema_columns(wh, pack.schema) if wh is not None else {}
    problems = catalog_problems(pack, columns) + _rule_problems(pack, columns) + _conflict_problems(pack)
    if wh is not None and not columns:
        problems.append(PackError(_rel(pack.root / "pack.yaml"), "schema",
                                  f"schema {pack.schema!r} is not loaded, so table and column references were not checked "
                                  f"(run `dibench domain load {pack.name}`)"))
    return pack, problems
