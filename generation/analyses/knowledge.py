"""Knowledge retrieval: one specific thing the rule document states, asked for and answered with
its type (core/typed_answers.py): what the rule sets (a threshold, cap or weight with its unit,
the minimum group size), the category, flags or columns it singles out (a name, or a short list
of them), the slice of a conditional rule, or the date from which a temporal rule applies; as
far as the document states it. The reference text is the document's whole sentences stating it.
No SQL. {"value", "unit" (numbers), "text"}"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlglot import exp

from dibench.core.errors import RewriteError
from dibench.core.facts import Value, fact_found, parse_fact, stated
from dibench.core.typed_answers import FactKind, known_unit, unit_in, unit_key, unit_named
from dibench.generation.analyses.base import Outcome
from dibench.generation.document_text import marked_sentences, plain
from dibench.generation.grounding import Context
from dibench.generation.knowledge_admission import lazy_problem
from dibench.generation.questions import figure_name, knowledge_question, metric_words, question_template
from dibench.generation.shortcuts.dumps import in_words
from dibench.generation.skeletons import Skeleton
from dibench.sqlops.dialect import parse_expression

NAME = "knowledge_retrieval"
# Literals that set nothing a reader looks for: an identity weight, a zero, a percent scale.
NEUTRAL = frozenset({Decimal(0), Decimal(1), Decimal(100)})
# Numbers a formula divides by to change a unit of time (seconds to minutes or hours): no policy
# figure a question could ask for.
UNIT_FACTORS = frozenset({Decimal(60), Decimal(3600), Decimal(86400)})


def compatible(sk: Skeleton) -> bool:
    return bool(sk.rules)


def _number_text(v: Any) -> str:
    return format(Decimal(str(v)).normalize(), "f")


def _parsed(expression: str) -> exp.Expression | None:
    try:
        return parse_expression(expression, where="knowledge facts")
    except RewriteError:
        return None


def literal_values(expression: str, predicate: bool = False) -> list[str]:
    """The values a document's SQL expression writes: strings, and numbers (in a weight or a
    formula not 0, 1 or 100, which set nothing a reader looks for; in a predicate every number,
    `amount = 0` sets 0); a median for a 0.5 percentile."""
    tree = _parsed(expression)
    if tree is None:
        return []
    out = []
    for lit in tree.find_all(exp.Literal):
        if isinstance(lit.parent, exp.Interval) and str(lit.this).strip() == "1":
            continue  # INTERVAL '1 day' is a unit (days), not a value
        if isinstance(lit.parent, (exp.PercentileCont, exp.PercentileDisc)) and Decimal(str(lit.this)) == Decimal("0.5"):
            out.append("median")
        elif lit.is_string:
            if str(lit.this).strip():
                out.append(str(lit.this))
        elif predicate or Decimal(str(lit.this)) not in NEUTRAL:
            out.append(_number_text(lit.this))
    return out


def flag_names(predicate: str) -> list[str]:
    """The yes/no columns a predicate tests as they stand ("t.is_spam OR c.is_internal" tests
    spam and internal), or tests for a missing value (`r.return_date IS NULL`): what such a rule
    sets is which flags exclude or keep a row."""
    tree = _parsed(predicate)
    if tree is None:
        return []
    out = []
    for col in tree.find_all(exp.Column):
        parent = col.parent
        while isinstance(parent, exp.Paren):
            parent = parent.parent
        if parent is None or isinstance(parent, (exp.And, exp.Or, exp.Not, exp.Is)):
            name = col.name
            for prefix in ("is_", "has_"):
                name = name[len(prefix):] if name.startswith(prefix) else name
            out.append(name.replace("_", " "))
    return out


def new_columns(expression: str, metric_sql: str | None) -> list[str]:
    """The columns a formula (override, adjustment, weight) reads that the metric's own SQL does
    not: what it brings in ("LEAST(p.amount, f.rental_rate)" brings in the rental rate)."""
    tree, own = _parsed(expression), _parsed(f"({metric_sql})") if metric_sql else None
    if tree is None:
        return []
    known = {c.name for c in own.find_all(exp.Column)} if own is not None else set()
    return [c.name.replace("_", " ") for c in tree.find_all(exp.Column) if c.name not in known]


def fact_spans(marked: list[tuple[str, bool]], fact: str) -> list[tuple[int, int]]:
    """Where a document, as its `marked_sentences`, states `fact`: runs of one to three of its
    sentences (a fact a full stop cuts in two, "SANKC. UROK", is stated by the sentences around
    it), never one holding a heading, which titles a rule and states none."""
    return [(i, n) for n in (1, 2, 3) for i in range(len(marked) - n + 1)
            if not any(h for _s, h in marked[i:i + n]) and fact_found(fact, " ".join(s for s, _h in marked[i:i + n]))]


# Words a metric's name shares with any prose: they say nothing of which figure a sentence is about.
_NAME_FILLER = frozenset({"the", "of", "and", "per", "a", "an", "in", "on", "by", "for", "to", "with"})


def names_metric(metric: str | None, text: str) -> bool:
    """Whether `text` names the metric: each word of its name, or its stem ("bills issued" in
    "counted neither in the bills issued"; "estimates" does not name "estimated reads")."""
    words = [w for w in re.findall(r"[a-z0-9]+", (metric or "").lower()) if w not in _NAME_FILLER]
    tokens = re.findall(r"[a-z0-9]+", text.lower())
    return bool(words) and all(any(t.startswith(w[:max(4, len(w) - 2)]) for t in tokens) for w in words)


def brought_in(effects: list[dict[str, Any]], metric_sql: str | None) -> set[str]:
    """The fields a rule's effects read that the metric's own SQL does not, in a predicate (an
    exclusion on another column) as in a formula: each is an answer to "which field does our
    policy bring into the calculation"."""
    return {c for e in effects for k in ("predicate", "weight", "expression") if isinstance(e.get(k), str)
            for c in new_columns(e[k], metric_sql)}


def answer_text(doc: Any, facts: list[str], metric: str | None = None) -> str:
    """The reference answer: for each must-include fact, the document's whole sentence stating it,
    each sentence once, in the document's order: the rule's own statement (under "Core rule", or
    holding bold) before the background, a sentence naming the metric before one that does not
    (an account "estimated 3 quarters in a row" is not the rule leaving estimated reads out of the
    average consumption), one sentence before two, the first before a later one. It states what
    is asked and little else, so an answer is compared with an answer, not with a summary."""
    marked = marked_sentences(doc.body)
    body = [s for s, _heading in marked]
    core = rule_sentences(body)
    picked: set[int] = set()
    for fact in facts:
        spans = fact_spans(marked, fact)
        if spans:
            at, span = min(spans, key=lambda sp: (not set(range(sp[0], sp[0] + sp[1])) <= core,
                                                  not names_metric(metric, " ".join(body[sp[0]:sp[0] + sp[1]])),
                                                  sp[1], sp[0]))
            picked.update(range(at, at + span))
    # a sentence of the rule that goes on about what the picked one names ("They ... are excluded")
    # says what the rule does with it: the reference holds it too
    picked |= {i + 1 for i in picked if i + 1 < len(body) and i + 1 in core and i in core
               and not marked[i + 1][1] and _GOES_ON.match(body[i + 1])}
    # a sentence without a closing mark (a list item) ends as one when another follows it
    said = [body[i] if body[i].endswith((".", "!", "?", ":")) or i == max(picked) else body[i] + "."
            for i in sorted(picked)]
    return plain(" ".join(said))


# The opening of a sentence that refers back to the one before it.
_GOES_ON = re.compile(r"\W*(?:they|these|those|this|it|such)\b", re.IGNORECASE)


def rule_sentences(body: list[str]) -> set[int]:
    """The sentences that state the rule itself: those of its "Core rule" section (the headings
    `sentences` keeps are the section bounds) and those holding bold; not the background."""
    out: set[int] = set()
    section = ""
    for i, s in enumerate(body):
        if s.lower().strip(" #:") in _SECTIONS:
            section = s.lower().strip(" #:")
            continue
        if section == "core rule" or "**" in s:
            out.add(i)
    return out


# The section headings of a rule document (the headings `sentences` returns as sentences).
_SECTIONS = frozenset({"core rule", "scope", "exceptions", "rationale", "expected impact", "purpose", "background",
                       "definitions", "definition", "examples", "example", "history", "context", "worked example"})


def natural(column: str) -> str:
    """A column as words: "countries.country_name" -> "country", "o.is_test" -> "is test"."""
    name = column.rsplit(".", 1)[-1]
    for suffix in ("_name", "_id", "_code"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return name.replace("_", " ")


def expression_columns(text: str) -> list[str]:
    try:
        tree = parse_expression(text, where="knowledge question")
    except RewriteError:
        return []
    return list(dict.fromkeys(natural(c.name) for c in tree.find_all(exp.Column)))


def topic(effects: list[dict[str, Any]], temporal: bool) -> dict[str, Any]:
    """What a knowledge question asks about, without naming the document: the kind of change the
    first effect makes, the columns it reads, and whether it concerns one slice or a date."""
    e = effects[0]
    op = str(e.get("op"))
    cols: list[str] = []
    for k in ("predicate", "weight", "expression"):
        if isinstance(e.get(k), str):
            cols += expression_columns(e[k])
    if op == "adjust":
        cols = [natural(str(e["column"]))]
    if op == "threshold":
        cols = [str(e["param"]).replace("_", " ")]
    when = e.get("applies_when")
    return {"op": op, "columns": list(dict.fromkeys(cols))[:2],
            "slice": natural(str(when["dimension"])) if when else None,
            "dated": bool(temporal and any(x.get("from_date") for x in effects))}


@dataclass(frozen=True)
class Asked:
    """The one thing a knowledge task asks for: of which kind, what it is (`what`: the part of
    the effect it comes from), the column it concerns, and the facts as the effect writes them."""

    kind: FactKind
    what: str  # threshold, min_n, cutoff, values, flags, weight, columns, slice, date
    op: str
    column: str | None
    facts: tuple[str, ...]
    unit: str | None = None  # the unit the effect itself gives (an interval's, a parameter's)
    # the slice the effect applies to (dimension words, value, dimension), when it applies to one only
    slice: tuple[str, str, str] | None = None
    refs: tuple[str, ...] = ()  # the table-qualified columns `column` names, where known


def _interval_unit(expression: str, value: str) -> str | None:
    """The unit of time of the expression's interval of `value` (INTERVAL '60 days' -> "day"); none
    for a number that multiplies an interval (3 * INTERVAL '1 day' is three times, not 3 days)."""
    tree = _parsed(expression)
    for found in tree.find_all(exp.Interval) if tree is not None else ():
        literal = found.this
        if isinstance(literal, exp.Literal) and _number_text(str(literal.this).split()[0]) == value:
            unit = found.args.get("unit")
            text = str(literal.this)
            return unit_named(unit.name if unit is not None else "") or unit_named(text) if " " in text or unit else None
    return None


def table_aliases(sql: str | None) -> dict[str, str]:
    """{alias or name: table} of the tables a metric's SQL reads ("FROM berka.trans t" -> t: trans)."""
    tree = _parsed(f"({sql})") if sql else None
    return {t.alias_or_name: t.name for t in tree.find_all(exp.Table)} if tree is not None else {}


def _compared_column(predicate: str, value: str, aliases: dict[str, str] | None = None) -> tuple[str, str | None] | None:
    """The column a predicate compares with the string `value` ("t.category = 'general'"), as
    words, with its table-qualified name where the metric's SQL names its table ("trans.k_symbol":
    two tables' `k_symbol` are two dimensions with two labels)."""
    tree = _parsed(predicate)
    if tree is None:
        return None
    for lit in tree.find_all(exp.Literal):
        if lit.is_string and str(lit.this) == value:
            node = lit.parent
            while node is not None and not isinstance(node, exp.Predicate):
                node = node.parent
            col = next(node.find_all(exp.Column), None) if node is not None else None
            if col is None:
                return None
            table = (aliases or {}).get(col.table) if col.table else None
            return natural(col.name), f"{table}.{col.name}" if table else None
    return None


def _counted(expression: str, value: str) -> bool:
    """Whether the string `value` is compared inside an aggregate's FILTER: the rows it selects
    are the ones the formula counts."""
    tree = _parsed(expression)
    for lit in tree.find_all(exp.Literal) if tree is not None else ():
        if lit.is_string and str(lit.this) == value:
            return lit.find_ancestor(exp.Filter) is not None
    return False


def _split(values: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(numbers, dates, names) among literal values."""
    parsed = {v: parse_fact(v) for v in values}
    nums = [v for v, p in parsed.items() if p is not None and p.date is None]
    dates = [v for v, p in parsed.items() if p is not None and p.date is not None]
    return nums, dates, [v for v in values if v not in nums and v not in dates]


def candidates(effects: list[dict[str, Any]], temporal: bool, metric_sql: str | None = None,
               metric_unit: str | None = None) -> list[Asked]:
    """What a knowledge task may ask for, in order of preference: for a temporal rule its date
    first; then per effect what it sets. A part holding several numbers (a formula's weights)
    has no one number to ask for; several names are asked for as a list."""
    out: list[Asked] = []
    aliases = table_aliases(metric_sql)
    if temporal:
        dates = [str(e["from_date"]) for e in effects if e.get("from_date")]
        if dates and len(set(dates)) == 1:
            out.append(Asked("date", "date", str(effects[0].get("op")), None, (dates[0],)))
    for e in effects:
        op = str(e.get("op"))
        at = len(out)
        if op == "threshold" and isinstance(e.get("value"), (int, float)) and not isinstance(e.get("value"), bool):
            out.append(Asked("number", "threshold", op, str(e["param"]).replace("_", " "), (_number_text(e["value"]),),
                             unit_named(str(e["param"])) or unit_named(metric_unit or "")))
        if op == "suppress" and e.get("min_n") is not None:
            out.append(Asked("number", "min_n", op, None, (str(e["min_n"]),)))
        if isinstance(e.get("predicate"), str):
            nums, dates, names = _split(literal_values(e["predicate"], predicate=True))
            if len(nums) == 1:
                out.append(Asked("number", "cutoff", op, None, (nums[0],), _interval_unit(e["predicate"], nums[0])))
            if len(dates) == 1:
                out.append(Asked("date", "cutoff-date", op, None, (str(parse_fact(dates[0]).date),)))  # type: ignore[union-attr]
            if names:
                # the columns the values are of, each named: "member type and kind" for 'child', 'overdue'
                by = [c for c in dict.fromkeys(_compared_column(e["predicate"], n, aliases) for n in names) if c]
                out.append(Asked("list" if len(names) > 1 else "name", "values", op,
                                 " and ".join(c[0] for c in by) or None, tuple(names),
                                 refs=tuple(c[1] for c in by if c[1]) if all(c[1] for c in by) else ()))
            flags = flag_names(e["predicate"])
            if flags:
                out.append(Asked("list" if len(flags) > 1 else "name", "flags", op, None, tuple(flags)))
        for k in ("weight", "expression"):
            if isinstance(e.get(k), str):
                nums, _dates, names = _split(literal_values(e[k]))
                nums = [n for n in nums if Decimal(n) not in UNIT_FACTORS]
                if len(nums) == 1:
                    out.append(Asked("number", "weight" if k == "weight" else "cutoff", op, None, (nums[0],),
                                     _interval_unit(e[k], nums[0])))
                # values a formula counts (FILTER (WHERE f.rating IN ('G', 'PG'))), asked with the
                # column they are of; values in any other place (a CASE branch) play a part no
                # question names in a few words, so they are not asked; nor is a median: "which
                # statistic" has so few answers that a guess of the median wins
                counted = names and all(_counted(e[k], n) for n in names)
                if counted:
                    of = [c for c in dict.fromkeys(_compared_column(e[k], n, aliases) for n in names) if c]
                    out.append(Asked("list" if len(names) > 1 else "name", "values-counted" if counted else "values",
                                     op, " and ".join(c[0] for c in of) or None, tuple(names),
                                     refs=tuple(c[1] for c in of if c[1]) if all(c[1] for c in of) else ()))
                cols = list(dict.fromkeys(new_columns(e[k], metric_sql)))
                if cols:
                    out.append(Asked("list" if len(cols) > 1 else "name", "columns", op, None, tuple(cols)))
        when = e.get("applies_when")
        if when:
            where = (natural(str(when["dimension"])), str(when["value"]), str(when["dimension"]))
            out[at:] = [dataclasses.replace(a, slice=where) for a in out[at:]]
            out.append(Asked("name", "slice", op, where[0], (where[1],), refs=(where[2],)))
    return out


def stated_in(doc: Any, asked: Asked, named: list[str]) -> bool:
    """Whether the document states every fact asked for and the question names none of them."""
    marked = marked_sentences(doc.body)
    return all(fact_spans(marked, f) and not any(fact_found(f, w) for w in named) for f in asked.facts)


def _doc_value(fact: str, sentence: str) -> Value | None:
    want = parse_fact(fact)
    return next((v for v in stated(sentence) if want is not None and v.date is None and v.same(want)), None)


def unit_in_words(text: str, value: Decimal) -> str | None:
    """The unit of measurement written after `value` in words ("two days" -> "day")."""
    if value != value.to_integral_value() or value < 0:
        return None
    m = re.search(rf"(?<![\w-]){re.escape(in_words(int(value)))}\s+([a-z]+)", text, re.IGNORECASE)
    return unit_key(m.group(1)) if m is not None and known_unit(m.group(1)) else None


def typed_gold(doc: Any, asked: Asked, metric: str | None = None) -> dict[str, Any]:
    """The typed gold answer: the value as the document writes it (35% stays 35 percent), with the
    unit its sentence gives a number, and the whole sentences stating it as the reference text."""
    text = answer_text(doc, list(asked.facts), metric)
    if asked.kind == "number":
        v = _doc_value(asked.facts[0], text)
        number = v.number if v is not None and v.number is not None else Decimal(asked.facts[0])
        unit = "percent" if v is not None and v.pct else unit_in(text, number) or unit_in_words(text, number) or asked.unit
        value: Any = int(number) if number == number.to_integral_value() else float(number)
        return {"value": value, "unit": unit, "text": text}
    if asked.kind == "date":
        return {"value": asked.facts[0], "text": text}
    if asked.kind == "name":
        return {"value": asked.facts[0], "text": text}
    return {"value": list(asked.facts), "text": text}


def asks_of(asked: Asked) -> dict[str, Any]:
    """What the question is phrased from: the kind, part and operation asked, the column it
    concerns."""
    out: dict[str, Any] = {"kind": asked.kind, "what": asked.what, "op": asked.op, "column": asked.column}
    if asked.slice is not None:
        out["slice"], out["slice_value"], out["slice_ref"] = asked.slice
    if asked.refs:
        out["column_refs"] = list(asked.refs)
    if asked.kind == "name" and asked.facts[0].isdigit():
        out["numbered"] = True  # a group known by its number (store 2) is asked for its number
    return out


def other_dated_rule(docs: dict[str, Any], rule_id: str, metric_id: str) -> bool:
    """Whether another rule document dates a change to the metric: a temporal rule with an effect
    on it, or an effect on it with a from_date."""
    def dated(d: Any) -> bool:
        mine = [e for e in d.front.effects or [] if e.metric == metric_id]
        return bool(mine) and (str(getattr(d.front.rule_type, "value", d.front.rule_type)) == "temporal"
                               or any(e.from_date for e in mine))
    return any(rid != rule_id and dated(d) for rid, d in docs.items())


SINGLED_OUT = frozenset({"values", "values-counted"})  # "which values of <columns> does our policy single out"


def _columns_of(a: Asked) -> tuple[set[str], set[str]]:
    """The table-qualified columns and the column words of what `a` asks about."""
    return set(a.refs), set((a.column or "").split(" and ")) - {""}


def singled_out_elsewhere(asked: Asked, others: list[Asked]) -> bool:
    """Whether another rule in force singles out other values of a column `asked` names, in a
    question that reads alike (the same template, records left out of or counted in): "which
    card type and fine type does our policy single out to decide which records are left out"
    is answered by the children's overdue fines (child, overdue) and by the lost-item fines
    (lost) alike."""
    if asked.what not in SINGLED_OUT:
        return False
    refs, words = _columns_of(asked)
    for other in others:
        theirs, their_words = _columns_of(other)
        if question_template(other.what, other.op) == question_template(asked.what, asked.op) \
                and set(other.facts) != set(asked.facts) and (refs & theirs or words & their_words):
            return True
    return False


@dataclass(frozen=True)
class Option:
    """One thing a knowledge task of the metric may ask: of which rule, what, the question and gold."""

    rule: Any  # the RuleEdge
    doc: Any
    effects: list[dict[str, Any]]
    about: dict[str, Any]
    asked: Asked
    question: str
    gold: dict[str, Any]


def _on_metric(rule: Any, metric_id: str) -> list[dict[str, Any]]:
    """The rule's effects on the metric (all of them where none names it: a composite's rule)."""
    return [e for e in rule.effects_json() if e.get("metric") == metric_id] or rule.effects_json()


def options(ctx: Context, rule: Any) -> list[Option]:
    """What the rule's document states of what it sets for the metric, each with its question."""
    doc = ctx.rule_docs.get(rule.rule_id)
    if doc is None:
        return []
    effects = _on_metric(rule, ctx.metric.id)
    temporal = rule.rule_type == "temporal"
    about = topic(effects, temporal)
    name = figure_name(metric_words(ctx.metric.name))
    out = []
    # a fact the question names (the column it asks about, the slice) is no evidence of
    # retrieval; a date is asked only of a metric no other rule dates, or "from which date" has two answers
    for a in candidates(effects, temporal, ctx.metric.sql, ctx.metric.unit):
        if stated_in(doc, a, [w for w in (a.column, a.slice[1] if a.slice else None) if w]) \
                and not (a.what == "date" and other_dated_rule(ctx.rule_docs, rule.rule_id, ctx.metric.id)):
            asks = {**about, "asks": asks_of(a)}
            out.append(Option(rule, doc, effects, asks, a, knowledge_question(name, asks, ctx.rng),
                              typed_gold(doc, a, ctx.metric.name)))
    return out


def pick(key: str, choices: list[Option]) -> Option:
    """One of `choices`, the same for the same skeleton, spread over the skeletons of a metric."""
    return choices[int(hashlib.sha256(key.encode()).hexdigest(), 16) % len(choices)]


def build(ctx: Context) -> Outcome | None:
    featured = ctx.skeleton.rules[0]
    mine = options(ctx, featured)
    if not mine:
        return None
    # Every rule in force on the metric states facts a knowledge task may ask about: the
    # skeletons of one metric ask different ones. A question two rules would answer differently
    # (two exclusions of the metric, each with its limit) has no one answer: not asked.
    every = mine + [o for r in ctx.skeleton.policy if r.rule_id != featured.rule_id for o in options(ctx, r)]
    golds: dict[str, set[str]] = {}
    for o in every:
        golds.setdefault(o.question, set()).add(json.dumps(o.gold.get("value"), sort_keys=True, default=str))
    # "Which field does our policy bring into the calculation" has one answer per field the whole
    # policy brings in: another rule's exclusion on a new column answers it too
    for o in every:
        if o.asked.what == "columns":
            golds[o.question] |= {json.dumps(c) for r in ctx.skeleton.policy if r.rule_id != o.rule.rule_id
                                  for c in brought_in(_on_metric(r, ctx.metric.id), ctx.metric.sql)}
    # "Which values of <columns> does our policy single out" has one answer per rule in force that
    # singles out values of one of those columns
    asks = {r.rule_id: candidates(_on_metric(r, ctx.metric.id), r.rule_type == "temporal", ctx.metric.sql,
                                  ctx.metric.unit) for r in ctx.skeleton.policy}
    for o in every:
        if singled_out_elsewhere(o.asked, [a for rid, xs in asks.items() if rid != o.rule.rule_id for a in xs]):
            golds[o.question].add("another rule's values")
    texts = [f"{d.front.title}\n{d.body}" for d in ctx.rule_docs.values()]
    # those a lazy reader cannot pick out by their place (knowledge_admission), the featured
    # rule's first; none: the featured rule's first with one answer, which stage 1 then refuses
    # with its reason
    unique = [o for o in every if len(golds[o.question]) == 1]
    safe = [o for o in unique if lazy_problem(o.question, o.gold, f"{o.doc.front.title}\n{o.doc.body}", texts) is None]
    own = [o for o in safe if o.rule.rule_id == featured.rule_id]
    fallback = [o for o in mine if o in unique]
    if not safe and not fallback:
        return None  # every question the featured rule answers has another answer under the policy
    chosen = pick(ctx.skeleton.key, own or safe) if safe else fallback[0]
    doc, answer, asked = chosen.doc, chosen.gold, chosen.asked
    return Outcome(answer, {**answer, "value": None} if asked.kind != "list" else {**answer, "value": []},
                   None, None, {}, {},
                   {"rule": chosen.rule.rule_id, "title": doc.front.title,
                    "effective_date": doc.front.effective_date.isoformat(),
                    "effects": json.dumps(chosen.effects), "topic": chosen.about})
