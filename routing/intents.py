"""Render a local intent from a query's syntax tree (for gold SQL without a released question).

Deterministic and plain: schema identifiers become words (`born_state` -> "born state"), so
the intent names the entities and attributes a router must find, in the catalog's own terms.
A bound placeholder renders as "the value found in the previous step".
"""
from __future__ import annotations

from sqlglot import exp

from dibench.routing.naming import entity_label, natural

_AGG = {exp.Count: "number of", exp.Avg: "average", exp.Sum: "total", exp.Min: "minimum", exp.Max: "maximum"}
_CMP = {exp.EQ: "is", exp.NEQ: "is not", exp.GT: "is greater than", exp.GTE: "is at least",
        exp.LT: "is less than", exp.LTE: "is at most", exp.Like: "matches"}
BOUND_PHRASE = "the value found in the previous step"
NESTED_PHRASE = "the result of a nested lookup"
# Phrases standing for a value or condition the query needs but the text does not state: a request
# worded with one cannot be answered from its text, so such a unit never becomes a segment.
HIDING_PHRASES = (NESTED_PHRASE, "a further condition holds", "a computed value", "a value computed from",
                  "the requested records", "a related record exists")


def hides_needed_value(text: str) -> bool:
    return any(p in text for p in HIDING_PHRASES)


def _value(node: exp.Expression) -> str:
    if isinstance(node, exp.Placeholder):
        return BOUND_PHRASE
    if isinstance(node, exp.Literal):
        return f"'{node.this}'" if node.is_string else node.this
    if isinstance(node, (exp.Subquery, exp.Select)):
        return NESTED_PHRASE
    return _expr(node)


def _expr(node: exp.Expression) -> str:
    if isinstance(node, exp.Alias):
        return _expr(node.this)
    if isinstance(node, exp.Star):
        return "all details"
    if isinstance(node, exp.Column):
        return "all details" if node.name == "*" else natural(node.name)
    if isinstance(node, exp.Count):
        inner = node.this
        if inner is None or isinstance(inner, exp.Star):
            return "number of records"
        if isinstance(inner, exp.Distinct):
            return "number of distinct " + ", ".join(_expr(e) for e in inner.expressions)
        return "number of " + _expr(inner)
    for kind, word in _AGG.items():
        if isinstance(node, kind):
            return f"{word} {_expr(node.this)}"
    if isinstance(node, exp.Distinct):
        return "distinct " + ", ".join(_expr(e) for e in node.expressions)
    if isinstance(node, exp.Paren):
        return _expr(node.this)
    if isinstance(node, exp.Binary) and not isinstance(node, exp.Condition):
        return f"{_expr(node.this)} combined with {_expr(node.expression)}"
    if isinstance(node, (exp.Literal, exp.Placeholder)):
        return _value(node)
    cols = [natural(c.name) for c in node.find_all(exp.Column)]
    return "a value computed from " + " and ".join(dict.fromkeys(cols)) if cols else "a computed value"


def _condition(node: exp.Expression) -> str:
    if isinstance(node, exp.And):
        return f"{_condition(node.this)} and {_condition(node.expression)}"
    if isinstance(node, exp.Or):
        return f"{_condition(node.this)} or {_condition(node.expression)}"
    if isinstance(node, exp.Paren):
        return _condition(node.this)
    if isinstance(node, exp.Not):
        return f"not ({_condition(node.this)})"
    for kind, word in _CMP.items():
        if isinstance(node, kind):
            return f"{_expr(node.this)} {word} {_value(node.expression)}"
    if isinstance(node, exp.In):
        return f"{_expr(node.this)} is among {_value(node.args['query']) if node.args.get('query') else ', '.join(_value(e) for e in node.expressions)}"
    if isinstance(node, exp.Between):
        return f"{_expr(node.this)} is between {_value(node.args['low'])} and {_value(node.args['high'])}"
    if isinstance(node, exp.Is):
        return f"{_expr(node.this)} is empty"
    if isinstance(node, exp.Exists):
        return "a related record exists"
    return "a further condition holds"


def _entities(select: exp.Select) -> str:
    names: list[str] = []
    for t in select.find_all(exp.Table):
        if t.find_ancestor(exp.Select) is select and t.name:
            names.append(entity_label(t.name))
    names = list(dict.fromkeys(names))
    if not names:
        return "records"
    return names[0] + (" together with " + ", ".join(names[1:]) if len(names) > 1 else "") + " records"


def _select(select: exp.Select) -> str:
    what = ", ".join(_expr(e) for e in select.expressions) or "all details"
    if select.args.get("distinct"):
        what = "distinct " + what
    entities = _entities(select)
    where, group, having = select.args.get("where"), select.args.get("group"), select.args.get("having")
    order, limit = select.args.get("order"), select.args.get("limit")
    n = limit.expression.name if limit is not None and limit.expression is not None else None
    top = None  # "with the lowest date of birth": a single ordering key cut to the first n rows
    if n is not None and order is not None and len(order.expressions) == 1:
        key = order.expressions[0]
        top = f"with the {'highest' if key.args.get('desc') else 'lowest'} {_expr(key.this)}"
    if top is not None and group is None:
        # "the name of the employee record with the lowest date of birth", not "the name of
        # employee records, ordered by date of birth, only the first row"
        one = entities.removesuffix("records") + "record"
        subject = f"the {one}" if n == "1" else f"the {n} {entities}"
        text = f"the {what} of {subject}"
        if where is not None:
            text += f" where {_condition(where.this)}"
        return f"{text} {top}"
    if top is not None and n == "1":  # grouped: "the language with the lowest number of records"
        text = f"the {what} {top}, among {entities}"
        if where is not None:
            text += f" where {_condition(where.this)}"
        if having is not None:
            text += f", keeping groups where {_condition(having.this)}"
        return text
    if what == "number of records":  # COUNT(*): "the number of company records"
        text = f"the number of {entities}"
    else:
        text = f"the {what}" if entities == "records" else f"the {what} of {entities}"
    if where is not None:
        text += f" where {_condition(where.this)}"
    if group is not None:
        text += " for each " + ", ".join(_expr(e) for e in group.expressions)
    if having is not None:
        text += f", keeping groups where {_condition(having.this)}"
    if order is not None:
        keys = [f"{_expr(o.this)}{' descending' if o.args.get('desc') else ''}" for o in order.expressions]
        text += ", ordered by " + ", ".join(keys)
    if n is not None:
        text += ", only the first row" if n == "1" else f", only the first {n} rows"
    return text


def render_intent(tree: exp.Expression) -> str:
    """One sentence asking for what the query computes."""
    if isinstance(tree, exp.Union):
        body = f"{render_intent_body(tree.left)}, together with {render_intent_body(tree.right)}"
    elif isinstance(tree, exp.Intersect):
        body = f"{render_intent_body(tree.left)} that also appear as {render_intent_body(tree.right)}"
    elif isinstance(tree, exp.Except):
        body = f"{render_intent_body(tree.left)}, excluding {render_intent_body(tree.right)}"
    else:
        body = render_intent_body(tree)
    return "Find " + body + "."


def render_intent_body(tree: exp.Expression) -> str:
    if isinstance(tree, exp.Select):
        return _select(tree)
    if isinstance(tree, exp.Subquery):
        return render_intent_body(tree.this)
    if isinstance(tree, exp.SetOperation):
        return f"{render_intent_body(tree.left)} and {render_intent_body(tree.right)}"
    return "the requested records"
