"""Backward question generation: phrase the question a stakeholder would ask, given the metric,
the analysis type and the answer's facts. The default is a deterministic template phraser
(varied by a seeded choice); an LLM phraser through langchain-core is optional.

Questions never name tables, columns or documents: dimensions appear by their labels.
"""
from __future__ import annotations

import datetime as dt
import json
import random
import re
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from pydantic import BaseModel, ConfigDict, Field

from dibench.core.answers import TREND_FLAT_PCT, TREND_PCT_DIGITS
from dibench.core.config import get_settings
from dibench.core.contracts import P_VALUE_ABS_TOL, P_VALUE_REL_TOL, T_ABS_TOL
from dibench.core.models import KNOWN_UNITS
from dibench.core.typed_answers import known_unit
from dibench.stores.llm import ask_structured, estimate_tokens, shape_text

PROMPT_VERSION = "phrase/3"


NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve")


def period_words(start: str, end: str) -> str:
    """A half-open window of whole months as a business user says it: "in 2024", "in March 2024",
    "between March and August 2024", "from August 2023 to July 2024"."""
    s, e = dt.date.fromisoformat(start), dt.date.fromisoformat(end) - dt.timedelta(days=1)
    if s.month == 1 and e.month == 12 and s.year == e.year:
        return f"in {s.year}"
    if (s.year, s.month) == (e.year, e.month):
        return f"in {s:%B %Y}"
    if s.year == e.year:
        return f"between {s:%B} and {e:%B} {s.year}"
    return f"from {s:%B %Y} to {e:%B %Y}"


def count_words(n: int) -> str:
    return NUMBER_WORDS[n] if 0 <= n < len(NUMBER_WORDS) else str(n)


def plural(noun: str) -> str:
    """English plural of the last word of a label: "country" -> "countries", "support team" -> "support teams"."""
    if re.search(r"[^aeiou]y$", noun):
        return noun[:-1] + "ies"
    if re.search(r"(s|x|z|ch|sh)$", noun):
        return noun + "es"
    return noun + "s"


_CODE = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)+")


def value_words(value: Any) -> Any:
    """A data value as a person writes it: a lower-case code joined by underscores in words
    ("in_person" -> "in person"); any other value as the data has it. Scoring takes spaces,
    underscores and hyphens in a name alike, so an answer may write either."""
    return value.replace("_", " ") if isinstance(value, str) and _CODE.fullmatch(value) else value


def slice_words(dim_label: str, value: Any, dimension_type: str = "categorical") -> str:
    """A slice as a business user names it: "in Japan" (a place), "for the premium service plan"."""
    if dimension_type == "spatial":
        return f"in {value_words(value)}"
    return f"for the {value_words(value)} {dim_label}"


def amount_words(value: float, unit: str) -> str:
    """A threshold with its unit: "40%", "24 hours", "1,250", "0.85", "1,250 EUR" (a unit of the
    catalog's own, written after the number)."""
    text = f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}".rstrip("0").rstrip(".")
    if unit == "percent":
        return f"{text}%"
    if unit in ("hours", "days"):
        return f"{text} {unit[:-1] if text == '1' else unit}"
    if unit in KNOWN_UNITS:
        return text
    return f"{text} {unit}"


def plural_name(name: str) -> bool:
    """Whether a metric's name is a plural noun phrase ("active borrowers", "fines assessed"): one
    of its words ends in a plural s ("status", "loss" and "analysis" are not)."""
    return any(re.fullmatch(r"[a-z]+[^siu]s", w) for w in name.lower().split())


def metric_words(name: str) -> str:
    """A metric's name inside a sentence: lower case, but an acronym keeps its capitals
    ("First-response SLA attainment" -> "first-response SLA attainment")."""
    return " ".join(w if sum(ch.isupper() for ch in w) >= 2 else w.lower() for w in name.split())


def figure_name(name: str) -> str:
    """The metric as the subject of a question: a plural name as its figure ("the active borrowers
    figure"), so that "What was the ...", "the higher ..." and "the trend of the ..." agree."""
    return f"{name} figure" if plural_name(name) else name


def _pick(rng: random.Random, options: list[str]) -> str:
    return rng.choice(options)


def template_question(analysis: str, metric_name: str, dim_label: str, facts: dict[str, Any],
                      rng: random.Random, unit: str, dimension_type: str = "categorical",
                      labels: dict[str, str] | None = None) -> str:
    name = figure_name(metric_words(metric_name))
    when = period_words(facts["start"], facts["end"]) if "start" in facts else ""
    g = facts.get("group")
    on = f" {slice_words(dim_label, g, dimension_type)}" if g is not None else ""
    if analysis == "point_query":
        return _pick(rng, [f"What was our {name}{on} {when}?", f"Can you tell me the {name}{on} {when}?",
                           f"What did we record as the {name}{on} {when}?"])
    if analysis == "threshold_crossing":
        t = amount_words(facts["threshold"], unit)
        cmp = "at least" if facts.get("higher_is_better", True) else "at most"
        return _pick(rng, [f"Did the {name}{on} {when} meet the target of {cmp} {t}? Answer PASS or FAIL with the value.",
                           f"Against a target of {cmp} {t}, did the {name}{on} pass {when}?"])
    if analysis == "trend_analysis":
        # The gold compares the first month with the last: the question asks exactly that, so a
        # series that swings in between is not called "rising" by a reading of the whole curve.
        return _pick(rng, [f"{when[:1].upper()}{when[1:]}, comparing the first month with the last, did the {name} rise, fall or stay flat, by how much in percent, and which month peaked?",
                           f"By how much in percent did the {name} change {when}, comparing the last month with the first, in which direction, and which month was its peak?"])
    # Places go by their names ("Japan"), other values with their label ("the premium service plan").
    spatial = dimension_type == "spatial"
    if analysis == "comparison":
        a, b = value_words(facts["group_a"]), value_words(facts["group_b"])
        return _pick(rng, [f"Which {dim_label} had the higher {name} {when}: {a} or {b}? Give both values.",
                           f"Compare the {name} of {a if spatial else f'the {a} {dim_label}'} with that of "
                           f"{b if spatial else f'the {b} {dim_label}'} {when}."])
    if analysis == "ranking":
        k = facts["k"]
        best = "highest" if facts.get("higher_is_better", True) else "lowest"
        many = plural(dim_label)
        return _pick(rng, [f"Which {count_words(k)} {many} had the {best} {name} {when}, in order?",
                           f"Rank the {count_words(k)} {many} with the {best} {name} {when}, {best} first."])
    if analysis == "significance_testing":
        a, b = value_words(facts["group_a"]), value_words(facts["group_b"])
        return (f"Is the monthly {name} significantly different between "
                f"{f'{a} and {b}' if spatial else f'the {a} and {b} {plural(dim_label)}'} {when}? "
                f"Use a two-tailed Welch's t-test at the 5% level on the monthly values.")
    if analysis == "counterfactual":
        by = "month" if facts.get("by_month") else dim_label
        lifted = facts.get("lifted")
        what = f"the \"{lifted}\" policy" if lifted else "the policy adjustments that apply to it"
        return _pick(rng, [f"For each {by} {when}, what is the {name} under all our current policies, and what would it be if {what} were lifted (every other policy still applied)?",
                           f"Per {by} {when}: how much does {what} change the {name}? Give the value under all current policies and the value with only that policy lifted."])
    if analysis == "decomposition":
        return _pick(rng, [f"Break down the {name} by {dim_label} {when}.",
                           f"What was the {name} for each {dim_label} {when}?"])
    if analysis == "knowledge_retrieval":
        return knowledge_question(name, facts.get("topic") or {}, rng, labels)
    raise ValueError(f"unknown analysis type {analysis}")


# What a knowledge question asks for: the part of the rule, in words a person would use, by the
# kind of change the rule makes (knowledge.Asked.what, .op). `{name}` is the metric, `{column}`
# the column the rule singles out.
_LEFT_OUT = {"exclude": "left out of", "where": "counted in", "having": "counted in"}
_ASKS = {
    "threshold": "What {column} does our policy set for the {name}{where}?",
    "min_n": "What is the smallest group size for which our policy lets the {name} be shown?",
    "cutoff": "What limit does our policy use to decide which records are {verb} the {name}?",
    "cutoff-formula": "What limit does our policy write into the calculation of the {name}?",
    "values": "Which {column} does our policy single out to decide which records are {verb} the {name}?",
    "cutoff-date": "Which date does our policy use to decide which records are {verb} the {name}?",
    "values-formula": "Which {values}{of} does our policy's calculation of the {name} single out{where}?",
    "values-counted": "Which {values}{of} does our policy count in the {name}{where}?",
    "flags": "Which {kinds} of records does our policy say are {verb} the {name}?",
    "weight": "By what factor does our policy weight the records it singles out in the {name}?",
    "columns": "Which {fields}, beyond those of the catalog's definition, does our policy bring into the calculation "
               "of the {name}?",
    "slice": "For which {column} does our policy {change} the {name}?",
    "date": "From which date does our policy {change} the {name}{about}?",
}
# What a dated rule changes, by its operation: the date question names it.
_CHANGES = {"exclude": "leave some records out of", "where": "narrow the records counted in",
            "having": "narrow the groups counted in", "threshold": "change the {column} of",
            "suppress": "withhold small groups of", "override": "change how it calculates",
            "adjust": "adjust", "weight": "weight records differently in"}
# What kind of answer a knowledge question wants, by the kind asked (a group known by its number: "numbered").
GIVE = {"numbered": " Give its number.", "number": " Give the number and its unit, if it has one.",
        "date": " Give the date.", "name": " Give its name.", "list": " List every one of them."}


def parameter_words(words: str) -> str:
    """A rule parameter as an analyst names it: an abbreviation in capitals ("sla hours" -> "SLA
    limit in hours"), a parameter in a unit of time as a limit in that unit."""
    parts = words.split()
    if len(parts) > 1 and known_unit(parts[-1]):
        return f"{' '.join(_abbreviated(p) for p in parts[:-1])} limit in {parts[-1]}"
    return " ".join(_abbreviated(p) for p in parts)


def _abbreviated(word: str) -> str:
    """A short word with no vowel but y, or of three letters or fewer that is no English word, is
    an abbreviation ("lgd", "sla", "kpi")."""
    if word.isalpha() and word.islower() and len(word) <= 4 and (not re.search(r"[aeiou]", word)
                                                                  or word in _ABBREVIATIONS):
        return word.upper()
    return word


# Lower-case abbreviations with a vowel that rule parameters use.
_ABBREVIATIONS = frozenset({"sla", "kpi", "apr", "ltv", "roi", "eur", "usd", "aov", "arpu", "nps", "csat", "ecl"})


def labelled(column: str | None, labels: dict[str, str] | None) -> str | None:
    """A column's words as the pack labels them ("member type and kind" -> "card type and fine
    type", with {"member type": "card type", "kind": "fine type"}); unlabelled words stay."""
    if not column or not labels:
        return column
    return " and ".join(labels.get(part, part) for part in column.split(" and "))


def question_template(what: str, op: str) -> tuple[str, str]:
    """The template a knowledge question asks with for `what` an effect of `op` sets, and the verb
    it says the records are (left out of / counted in): two rules' questions read alike when both are."""
    formula = op in ("override", "adjust", "weight") and what in ("cutoff", "values")
    return (f"{what}-formula" if formula else what), _LEFT_OUT.get(op, "counted in")


def knowledge_question(name: str, topic: dict[str, Any], rng: random.Random,
                       labels: dict[str, str] | None = None) -> str:
    """A knowledge question for the one thing a rule of the metric sets (knowledge.Asked), told
    apart from the metric's other rules by what it asks for, never by its document; it ends by
    saying what kind of answer it wants. `labels`: the pack's dimension labels by column words."""
    asks = topic.get("asks") or {}
    what, op = str(asks.get("what")), str(asks.get("op"))
    refs = [str(r) for r in asks.get("column_refs") or []]
    # a column the rule names with its table is labelled as that table's dimension: two tables'
    # `k_symbol` are the transaction purpose and the standing order purpose
    column = (" and ".join(labels[r] for r in refs) if refs and labels and all(r in labels for r in refs)
              else labelled(asks.get("column"), labels))
    key, verb = question_template(what, op)
    formula = key.endswith("-formula")
    one = asks.get("kind") != "list"
    if what == "values" and not formula and column:
        column = f"values of the {column}" if asks.get("kind") == "list" else f"value of the {column}"
    columns = [str(c) for c in topic.get("columns") or []]
    change = _CHANGES.get(op, "change").format(column=" and ".join(columns) or "threshold")
    if what == "slice" and op == "threshold":
        change = "set its own threshold for"  # the slice's value is asked elsewhere; here only where it holds
    about = f", depending on their {' and '.join(columns)}" if columns and op in _LEFT_OUT else ""
    if what == "threshold":
        column = parameter_words(column or "value")
    where = ""
    if what != "slice" and asks.get("slice_value") is not None and asks.get("slice"):
        # a value the rule sets for one slice only: another slice has another (the catalog's)
        ref = str(asks.get("slice_ref") or "")
        label = labels[ref] if labels and ref in labels else labelled(str(asks["slice"]), labels)
        value = str(asks["slice_value"])
        # a group known by its number is named by it ("for rental store 2", not "where the rental store is 2")
        where = f" for {label} {value}" if value.isdigit() else f" where the {label} is {value}"
    of = f" of the {column}" if key in ("values-formula", "values-counted") and column else ""
    template = _ASKS.get(key, "What does our policy set for the {name}?")
    if where and "{where}" not in template:
        template = template[:-1] + "{where}?"
    text = template.format(
        name=name, verb=verb, column=column or "value", change=change, about=about, where=where, of=of,
        values="value" if one else "values", kinds="kind" if one else "kinds", fields="field" if one else "fields")
    # The wording is chosen by what is asked, not by the skeleton: every skeleton of one metric
    # and rule asks the same knowledge question, so its copies are found and kept once.
    del rng
    return text + GIVE.get("numbered" if asks.get("numbered") else str(asks.get("kind")), "")


# The no-rule variant's opt-out: its answer is the catalog's plain metric, and the question says so.
CATALOG_ONLY = "by the metric catalog's definition alone, before any policy adjustments"


def catalog_only(question: str) -> str:
    """The no-rule variant of a question: the same question, asking in words for the metric
    catalog's definition alone (an agent that applies the company's policies must not be wrong)."""
    return f"{question.rstrip()} Answer {CATALOG_ONLY}."


class PhrasedQuestion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=20)


PHRASE_SYSTEM = (
    "You write the question a business stakeholder would ask so that the given answer is its correct answer. "
    "Be natural. Never mention database tables, column names, identifiers or which document to read. State "
    "exactly the period of the facts (start month and year to the month before `end`), the group values, k for "
    "rankings and the threshold with its direction (at least / at most) for threshold questions. Never state "
    "the answer's numbers. When `catalog_only` is true, the answer ignores every policy document: the question "
    f"must ask for the figure {CATALOG_ONLY}, in those words; otherwise never ask to set policies aside. "
    "Reply with JSON {\"question\": \"...\"} only."
)


def llm_question(llm: BaseChatModel, analysis: str, metric_name: str, gold_answer: dict[str, Any],
                 facts: dict[str, Any], rule_texts: list[str], where: str,
                 rewrite: tuple[str, list[str]] | None = None, catalog: bool = False) -> str:
    """Phrase the question; `rewrite` = (previous question, the judge's objections) asks for a
    better phrasing of the same question after a phrasing-only judge failure; `catalog`: the
    no-rule variant, whose answer is the catalog's definition alone (the question must say so)."""
    payload: dict[str, Any] = {"metric": metric_name, "analysis_type": analysis, "answer": gold_answer,
                               "facts": facts, "catalog_only": catalog, "rule_documents": []}
    if rewrite is not None:
        payload["previous_question"], payload["reviewer_objections"] = rewrite[0], rewrite[1]
    payload["rule_documents"] = fitting_documents(payload, rule_texts, get_settings().llm_context)
    return ask_structured(llm, PHRASE_SYSTEM, json.dumps(payload, default=str), PhrasedQuestion, where=where,
                          stage="phrase").question


PHRASE_REPLY_TOKENS = 200  # kept free for the reply: one question in JSON


def fitting_documents(payload: dict[str, Any], texts: list[str], context: int) -> list[str]:
    """The rule documents that fit the phrasing prompt within `context` tokens, in order, the last
    one cut short: a task with several decisive rules would otherwise need more than a 4k model
    has (the demo's largest: ~4,200 tokens). The documents only help the wording; the facts stay."""
    fixed = estimate_tokens(f"{PHRASE_SYSTEM}\n\n{shape_text(PhrasedQuestion)}") + estimate_tokens(
        json.dumps(payload, default=str)) + 2 * 4  # two messages' overhead (stores.llm.messages_tokens)
    room = (context - PHRASE_REPLY_TOKENS - fixed) * 4  # characters
    out = []
    for text in texts:
        # json.dumps escapes newlines and quotes: measure the text as it will be sent.
        size = len(json.dumps(text)) + 2
        if size <= room:
            out.append(text)
            room -= size
            continue
        if room > 200:
            cut = text[:room - 100]
            while len(json.dumps(cut)) + 2 > room - 10:
                cut = cut[:int(len(cut) * 0.9)]
            out.append(cut + " [...]")
        break
    return out


NUMERIC = frozenset({"point_query", "comparison", "ranking", "threshold_crossing", "counterfactual", "decomposition"})
# Answers listing groups: a NULL group is never one of them (core.answers.grouped_rows).
GROUPED = frozenset({"ranking", "counterfactual", "decomposition"})


# A monthly series of a metric (or a policy) that reads the period's end: which end each month has.
OWN_PERIOD_EDGE = ("each month is a reporting period of its own: what the metric or a policy reads at a period's "
                   "end (or start) is read at that month's own end (or start), not at the end of the months asked")


# The calendar of a monthly series (a trend's, a significance test's), as core.answers.on_spine builds it.
EVERY_MONTH = ("every month of the window counts: one without rows is 0 for a count or a sum, "
               "and is left out for an average or a ratio")


def answer_format(analysis: str, rounding: int | None = None, as_of: str | None = None,
                  period_edge: bool = False) -> str:
    """The answer format an agent is shown; with `rounding`, how the metric's values are rounded
    (the gold rounds the exact value half away from zero, as PostgreSQL's ROUND); with `as_of`,
    what a value of a metric read on one day of the period is (a running total's day); with
    `period_edge`, that a monthly series reads each month's own end."""
    shape = _shape(analysis)
    if analysis in GROUPED:
        shape += "; records whose group is not recorded (null) belong to no group and are left out"
    if rounding is not None and analysis in NUMERIC:
        tie, up, even = rounding_example(rounding)
        shape += (f"; metric values rounded to {rounding} decimal{'s' if rounding != 1 else ''}, half away from "
                  f"zero ({tie} -> {up}; on such an exact tie half to even, {even}, passes too)")
    if as_of is not None and analysis != "knowledge_retrieval":
        shape += f"; {as_of}"
    if period_edge:
        shape += f"; {OWN_PERIOD_EDGE}"
    return shape


def rounding_example(digits: int) -> tuple[str, str, str]:
    """An exact tie at `digits` decimals with an even digit before the 5, then the tie rounded
    half away from zero and half to even: (2.345, 2.35, 2.34) for 2, (2.5, 3, 2) for 0."""
    tie = Decimal("2.5") if digits <= 0 else Decimal("2." + "3" * (digits - 1) + "45")
    step = Decimal(1).scaleb(-max(digits, 0))
    return str(tie), str(tie.quantize(step, ROUND_HALF_UP)), str(tie.quantize(step, ROUND_HALF_EVEN))


def _shape(analysis: str) -> str:
    return {
        "knowledge_retrieval": 'JSON {"value": <the one thing asked>, "unit": "<unit or null>"}: a number (with '
                               'its unit of time, percent or currency, e.g. {"value": 30, "unit": "days"}; a '
                               'percentage also as its fraction), a date "YYYY-MM-DD", a name ("<name>"), or a list '
                               'of names (["<name>", ...]), as the question asks; scored exactly: a second '
                               'candidate (a list where one value is asked, an extra name) fails',
        "point_query": 'JSON {"value": <number or null if suppressed>}',
        "trend_analysis": 'JSON {"direction": "increasing|decreasing|flat", "total_change_pct": <number>, "peak_period": "YYYY-MM"}'
                          f'; the method: total_change_pct = (last month - first month) / |first month| x 100 over the '
                          f'months asked, to {TREND_PCT_DIGITS} decimal; direction "flat" when |total_change_pct| < '
                          f'{TREND_FLAT_PCT:g}, else the sign of the change; peak_period the month of the highest value '
                          f'(the latest of equals); {EVERY_MONTH}',
        "comparison": 'JSON {"group_a": "<name>", "group_b": "<name>", "value_a": <number>, "value_b": <number>, "higher": "<name or equal>"}',
        "ranking": 'JSON {"k": <k>, "rows": [{"group": "<name>", "value": <number>}, ...]} best first',
        "significance_testing": 'JSON {"significant": true|false, "p_value": <number>, "t_statistic": <number>, '
                                '"test_name": "Welch\'s t-test (two-tailed)", "alpha": 0.05}; the test compares the '
                                'first group\'s monthly values with the second\'s over the months asked (t_statistic '
                                f'positive when the first is higher); {EVERY_MONTH}; p_value and t_statistic are '
                                'scored with the '
                                f'verdict, within {P_VALUE_ABS_TOL:g} and {T_ABS_TOL:g} or {100 * P_VALUE_REL_TOL:g}% '
                                'of the figure, whichever is larger',
        "threshold_crossing": 'JSON {"value": <number>, "threshold": <number>, "result": "PASS|FAIL"}',
        "counterfactual": 'JSON {"rows": [{"group": "<name>", "current": <number>, "hypothetical": <number>}, ...]}'
                          '; by month: every month asked ("YYYY-MM"), one without rows 0 for a count or a sum '
                          'and null for an average or a ratio; by group: every group, one a policy withholds or '
                          'empties listed with null values',
        "decomposition": 'JSON {"rows": [{"group": "<name>", "value": <number>}, ...]} every group; a group '
                         'withheld or emptied by a policy is listed with "value": null',
    }[analysis]
