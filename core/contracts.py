"""Answer contracts: how an agent's answer is compared with a stored expected answer.

A contract is made from the gold answer when a task is made (`make_contract`) and stored with
the task as JSON. Per analysis type it names the label fields that must match exactly, the
numeric fields and their tolerance, how rows are keyed and whether their order counts, and the
gold fields that are not scored because the question fixes them. `check_answer` applies a
contract to (expected, answer). It never guesses: an answer of the wrong shape is malformed,
never coerced. The same check runs against the base (no-rule) answer to classify failures.
See docs/contracts.md.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from dibench.core.answers import TREND_PCT_DIGITS
from dibench.core.errors import DibenchError
from dibench.core.facts import fact_found, strays
from dibench.core.typed_answers import date_mismatch, kind_of, list_mismatches, name_matches, number_mismatch, \
    value_problem

__all__ = ["ANALYSIS_TYPES", "AnalysisType", "AnswerContract", "ContractError", "check_answer", "fact_found",
           "make_contract", "shape_problems", "task_contract", "validate_expected"]

AnalysisType = Literal[
    "knowledge_retrieval", "point_query", "trend_analysis", "comparison", "ranking",
    "significance_testing", "threshold_crossing", "counterfactual", "decomposition",
]
ANALYSIS_TYPES: tuple[str, ...] = get_args(AnalysisType)

# Absorbs binary representation error at a rounding boundary (80.085 - 80.08 > 0.005 in floats).
FLOAT_SLACK = 1e-9
P_VALUE_REL_TOL = 1e-3
P_VALUE_ABS_TOL = 5e-4
T_ABS_TOL = 5e-3  # the statistic has three decimals
# A reason lists this many mismatches, then counts the rest: a 27-row decomposition stays readable.
MAX_REASONS = 3
# Numbers or dates a knowledge answer may state beyond what its sources state (a version, a
# year, an example of its own); a dump of every number in the knowledge base states dozens.
MAX_STRAYS = 3
# A knowledge answer states at most this many words (or twice the gold text's), and at most this
# many numbers or dates that are neither its facts nor in the gold text.
MAX_WORDS = 60
MAX_COMPETITORS = 1


class ContractError(DibenchError):
    """A contract cannot be made, or a stored expected answer does not fit its contract."""

    hint = "the gold answer must have the shape documented in docs/contracts.md"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Tolerance(_Strict):
    """|answer - expected| <= max(abs_tol, rel_tol * |expected|). Non-decisive fields are only noted."""

    abs_tol: float = Field(ge=0)
    rel_tol: float = Field(default=0.0, ge=0)
    decisive: bool = True

    def allowed(self, expected: float) -> float:
        return max(self.abs_tol, self.rel_tol * abs(expected))


class LabelRule(_Strict):
    """A label compared exactly (text: after trimming and case-folding). `choices` closes the vocabulary."""

    kind: Literal["text", "bool"]
    choices: list[str] | None = None


class RowsRule(_Strict):
    """A list of rows keyed by `key`: every expected row must be present and no other row."""

    field: str = "rows"
    key: str = "group"
    ordered: bool
    numbers: dict[str, Tolerance]


class KnowledgeRule(_Strict):
    """Every fact in expected[facts_field] must appear in answer[text_field]; and when the
    expected answer lists what its sources state (`sources_field`), the answer may state at most
    `max_strays` other numbers or dates (a list of every number of every document is no answer)."""

    text_field: str = "text"
    facts_field: str = "must_include"
    sources_field: str = "sources_state"
    max_strays: int = Field(MAX_STRAYS, ge=0)
    # Numbers written in words count as stated numbers: a dump with every digit spelt out is
    # the same list of guesses.
    strays_in_words: bool = True
    # An answer, not a document: at most MAX_WORDS words (the answer format says so), or twice
    # the gold text's. A pasted policy document holds every competing candidate.
    max_words: int | None = Field(MAX_WORDS, gt=0)
    # Numbers or dates beyond the facts and the gold text's own: candidates competing with the
    # facts (an answer listing three thresholds has not found the one asked for).
    max_competitors: int | None = Field(MAX_COMPETITORS, ge=0)


class FactRule(_Strict):
    """A typed knowledge answer: answer[value_field] is the one thing asked, of the kind the
    expected value has (a number, with answer[unit_field] when the expected unit is one of
    measurement; an ISO date; a name; a short list of names), compared exactly
    (core/typed_answers.py). expected[text_field], the document's sentences stating it, is the
    reference a reader checks the gold with; it is not scored."""

    value_field: str = "value"
    unit_field: str = "unit"
    text_field: str = "text"


class Tie(_Strict):
    """A gold value rounded from a tie, and the other rounding that is right too: half to even
    at an exact tie (2.345 -> 2.35 or 2.34), the other side where float arithmetic left the
    value a hair off the tie (2.3449999999997 -> 2.34 or 2.35, core.answers.tie_rounding)."""

    value: float
    also: float


class AnswerContract(_Strict):
    version: Literal[1] = 1
    analysis_type: AnalysisType
    rounding: int = Field(ge=0, le=10)
    labels: dict[str, LabelRule] = Field(default_factory=dict)
    numbers: dict[str, Tolerance] = Field(default_factory=dict)
    rows: RowsRule | None = None
    knowledge: KnowledgeRule | None = None
    fact: FactRule | None = None
    ties: list[Tie] = Field(default_factory=list, description="gold values rounded from a tie, and their twins")
    ignored: list[str] = Field(default_factory=list, description="gold fields the question fixes; not scored")

    def fields(self) -> set[str]:
        """Every top-level field the contract knows (scored or ignored)."""
        known = set(self.labels) | set(self.numbers) | set(self.ignored)
        if self.rows:
            known.add(self.rows.field)
        if self.knowledge:
            known |= {self.knowledge.text_field, self.knowledge.facts_field, self.knowledge.sources_field}
        if self.fact:
            known |= {self.fact.value_field, self.fact.unit_field, self.fact.text_field}
        return known


def half_unit(rounding: int) -> float:
    """Absolute tolerance of a value rounded to `rounding` decimals: half its last digit, plus slack."""
    return 0.5 * 10.0 ** -rounding + FLOAT_SLACK


def build_contract(analysis_type: str, rounding: int, *, pct_rounding: int | None = None,
                   legacy_knowledge: bool = False, ties: list[tuple[float, float]] | None = None) -> AnswerContract:
    """The contract of an analysis type, without checking any gold answer against it.
    `legacy_knowledge`: a knowledge task of the free-text format (text with must-include facts)
    that runs made before typed answers store."""
    if analysis_type not in ANALYSIS_TYPES:
        raise ContractError(f"unknown analysis type {analysis_type!r}; expected one of {', '.join(ANALYSIS_TYPES)}")
    if not 0 <= rounding <= 10:
        raise ContractError(f"{analysis_type}: rounding {rounding} is outside 0..10")
    tol = Tolerance(abs_tol=half_unit(rounding))
    pct = Tolerance(abs_tol=half_unit(rounding if pct_rounding is None else pct_rounding))
    text = LabelRule(kind="text")
    specs: dict[str, dict[str, Any]] = {
        "knowledge_retrieval": {"knowledge": KnowledgeRule()} if legacy_knowledge else {"fact": FactRule()},
        "point_query": {"numbers": {"value": tol}},
        "trend_analysis": {
            "labels": {"direction": LabelRule(kind="text", choices=["increasing", "decreasing", "flat"]),
                       "peak_period": text},
            "numbers": {"total_change_pct": pct},
        },
        "comparison": {"labels": {"group_a": text, "group_b": text, "higher": text},
                       "numbers": {"value_a": tol, "value_b": tol}},
        # The question states k; the row count already enforces it.
        "ranking": {"rows": RowsRule(ordered=True, numbers={"value": tol}), "ignored": ["k"]},
        # The figure is scored with the verdict: a verdict alone is a coin flip that a constant
        # wins. The tolerance (stated in the answer format) covers another valid numerical
        # routine and the gold's four decimals.
        "significance_testing": {
            "labels": {"significant": LabelRule(kind="bool")},
            "numbers": {"p_value": Tolerance(abs_tol=P_VALUE_ABS_TOL, rel_tol=P_VALUE_REL_TOL),
                        "t_statistic": Tolerance(abs_tol=T_ABS_TOL, rel_tol=P_VALUE_REL_TOL)},
            "ignored": ["test_name", "alpha"],
        },
        # The threshold is scored: a rule may change it, so echoing it is part of the answer.
        "threshold_crossing": {"labels": {"result": LabelRule(kind="text", choices=["PASS", "FAIL"])},
                               "numbers": {"value": tol, "threshold": tol}},
        "counterfactual": {"rows": RowsRule(ordered=False, numbers={"current": tol, "hypothetical": tol})},
        "decomposition": {"rows": RowsRule(ordered=False, numbers={"value": tol})},
    }
    return AnswerContract.model_validate({"analysis_type": analysis_type, "rounding": rounding,
                                          **specs[analysis_type],
                                          "ties": [{"value": v, "also": a} for v, a in ties or []]})


def task_contract(analysis_type: str, rounding: int, gold: Any = None,
                  ties: list[tuple[float, float]] | None = None) -> AnswerContract:
    """The answer contract of a task (trend percentages carry their own rounding); a knowledge
    gold with must-include facts is of the free-text format; `ties`: (gold rounding, the other
    right one) of the values the gold rounds from a tie (core.answers.tie_rounding)."""
    pct = TREND_PCT_DIGITS if analysis_type == "trend_analysis" else None
    return build_contract(analysis_type, rounding, pct_rounding=pct, legacy_knowledge=is_legacy_knowledge(gold),
                          ties=ties)


def is_legacy_knowledge(gold: Any) -> bool:
    return isinstance(gold, dict) and "must_include" in gold


def make_contract(analysis_type: str, gold_answer: dict[str, Any], rounding: int,
                  *, pct_rounding: int | None = None) -> dict[str, Any]:
    """The JSON contract stored with a task. Raises ContractError if the gold answer does not fit it."""
    contract = build_contract(analysis_type, rounding, pct_rounding=pct_rounding,
                              legacy_knowledge=is_legacy_knowledge(gold_answer))
    validate_expected(contract, gold_answer, what="gold answer")
    return contract.model_dump(mode="json")


def validate_expected(contract: AnswerContract, expected: Any, *, what: str) -> None:
    """A stored expected answer (gold or base) must fit its contract exactly: no unknown field, no bad shape."""
    problems = shape_problems(contract, expected)
    if not problems:
        unknown = sorted(set(expected) - contract.fields())
        if unknown:
            problems = [f"field(s) {', '.join(unknown)} are neither scored nor ignored by the contract"]
    if not problems and contract.knowledge:
        facts = expected[contract.knowledge.facts_field]
        sources = expected.get(contract.knowledge.sources_field, [])
        if not (isinstance(facts, list) and facts and all(isinstance(f, str) and f.strip() for f in facts)):
            problems = [f"{contract.knowledge.facts_field} must be a non-empty list of non-empty strings"]
        elif not (isinstance(sources, list) and all(isinstance(v, str) for v in sources)):
            problems = [f"{contract.knowledge.sources_field} must be a list of strings"]
    if not problems and contract.fact:
        problems = _expected_fact_problems(contract.fact, expected)
    if problems:
        raise ContractError(f"{contract.analysis_type} {what}: {'; '.join(problems)}")


# ------------------------------------------------------------------------------ checking
@dataclass(frozen=True)
class Check:
    """The outcome of one answer against one expected answer."""

    passed: bool
    malformed: bool
    mismatches: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        if self.malformed:
            return "malformed: " + _join(self.mismatches)
        if self.passed:
            return "match" + (f" (noted, not decisive: {_join(self.notes)})" if self.notes else "")
        return _join(self.mismatches)


def check_answer(contract: AnswerContract, expected: dict[str, Any], answer: Any) -> Check:
    """Compare `answer` with `expected` under `contract` (expected is assumed to fit the contract)."""
    problems = shape_problems(contract, answer)
    if problems:
        return Check(passed=False, malformed=True, mismatches=tuple(problems))
    mismatches: list[str] = []
    notes: list[str] = []
    for name, label in contract.labels.items():
        if not _label_equal(label, expected[name], answer[name]):
            mismatches.append(f"{name}: expected {_show(expected[name])}, got {_show(answer[name])}")
    also = _tie_alternatives(contract)
    for name, tol in contract.numbers.items():
        problem = _number_mismatch(name, tol, expected[name], answer[name], also)
        if problem:
            (mismatches if tol.decisive else notes).append(problem)
    if contract.rows:
        mismatches += _rows_mismatches(contract.rows, expected[contract.rows.field], answer[contract.rows.field], also)
    if contract.knowledge:
        mismatches += _knowledge_mismatches(contract.knowledge, expected, answer[contract.knowledge.text_field])
    if contract.fact:
        found, malformed = _fact_mismatches(contract.fact, expected, answer)
        if malformed:
            return Check(passed=False, malformed=True, mismatches=tuple(found))
        mismatches += found
    return Check(passed=not mismatches, malformed=False, mismatches=tuple(mismatches), notes=tuple(notes))


def _expected_fact_problems(rule: FactRule, expected: dict[str, Any]) -> list[str]:
    if kind_of(expected[rule.value_field]) is None:
        return [f"{rule.value_field} must be a number, an ISO date, a name or a non-empty list of names"]
    unit = expected.get(rule.unit_field)
    if unit is not None and not isinstance(unit, str):
        return [f"{rule.unit_field} must be a string or null"]
    if not isinstance(expected.get(rule.text_field, ""), str):
        return [f"{rule.text_field} must be a string"]
    return []


def _fact_mismatches(rule: FactRule, expected: dict[str, Any], answer: dict[str, Any]) -> tuple[list[str], bool]:
    """(mismatches, malformed) of a typed answer against the expected value."""
    want, got = expected[rule.value_field], answer[rule.value_field]
    kind = kind_of(want)
    assert kind is not None, "validate_expected checks the expected value's kind"
    problem = value_problem(kind, got)
    if problem:
        return [f"{rule.value_field} {problem}"], True
    if kind == "number":
        found = number_mismatch(want, expected.get(rule.unit_field), got, answer.get(rule.unit_field))
        return ([found] if found else []), False
    if kind == "date":
        found = date_mismatch(want, got)
        return ([found] if found else []), False
    if kind == "name":
        return ([] if name_matches(want, got) else [f"{rule.value_field}: expected {want!r}, got {got!r}"]), False
    return list_mismatches(want, got), False


def _knowledge_mismatches(rule: KnowledgeRule, expected: dict[str, Any], text: str) -> list[str]:
    reference = str(expected.get(rule.text_field, ""))
    if rule.max_words is not None:
        cap = max(rule.max_words, 2 * len(reference.split()))
        words = len(text.split())
        if words > cap:  # the one reason: reading a pasted document for facts would say nothing more
            return [f"states {words} words, more than {cap}: a document pasted whole is not an answer"]
    out = []
    missing = [f for f in expected[rule.facts_field] if not fact_found(f, text)]
    if missing:
        out.append("missing fact(s) " + ", ".join(repr(f) for f in missing))
    if rule.max_competitors is not None:
        rivals = strays(text, [reference, *expected[rule.facts_field]], words=True)
        if len(rivals) > rule.max_competitors:
            shown = ", ".join(repr(v) for v in rivals[:MAX_REASONS])
            out.append(f"states {len(rivals)} numbers or dates besides the facts asked for ({shown}): "
                       f"competing candidates, at most {rule.max_competitors}")
    if rule.sources_field in expected:
        extra = strays(text, list(expected[rule.sources_field]), words=rule.strays_in_words)
        if len(extra) > rule.max_strays:
            shown = ", ".join(repr(v) for v in extra[:MAX_REASONS])
            out.append(f"states {len(extra)} numbers or dates its sources do not ({shown}, ...; at most "
                       f"{rule.max_strays}): a list of guesses is not an answer")
    return out


def shape_problems(contract: AnswerContract, answer: Any) -> list[str]:
    """What makes `answer` unscorable: not an object, a missing field, a value of the wrong type."""
    if not isinstance(answer, dict):
        return [f"answer is {_json_type(answer)}, expected a JSON object"]
    problems: list[str] = []
    for name, label in contract.labels.items():
        problems += _field_problems(answer, name, partial(_label_problem, label))
    for name in contract.numbers:
        problems += _field_problems(answer, name, _number_problem)
    rows = contract.rows
    if rows:
        problems += _field_problems(answer, rows.field, lambda v: _rows_problem(rows, v))
    if contract.knowledge:
        problems += _field_problems(
            answer, contract.knowledge.text_field,
            lambda v: None if isinstance(v, str) else f"is {_json_type(v)}, expected a string")
    if contract.fact:
        # the value's kind is the expected one's: checked against it (check_answer)
        problems += _field_problems(answer, contract.fact.value_field, lambda v: None)
        unit = answer.get(contract.fact.unit_field)
        if unit is not None and not isinstance(unit, str):
            problems.append(f"{contract.fact.unit_field} is {_json_type(unit)}, expected a string or null")
    return problems


def _field_problems(obj: dict[str, Any], name: str, problem_of: Callable[[Any], str | None]) -> list[str]:
    if name not in obj:
        return [f"missing field {name!r}"]
    problem = problem_of(obj[name])
    return [f"{name} {problem}"] if problem else []


def _label_problem(label: LabelRule, value: Any) -> str | None:
    if value is None:
        return None
    if label.kind == "bool":
        return None if isinstance(value, bool) else f"is {_json_type(value)}, expected true or false"
    if not isinstance(value, str):
        return f"is {_json_type(value)}, expected a string"
    if label.choices and name_key(value) not in {name_key(c) for c in label.choices}:
        return f"is {value!r}, expected one of {', '.join(label.choices)}"
    return None


def _number_problem(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"is {_json_type(value)}, expected a number or null"
    if value != value or value in (float("inf"), float("-inf")):
        return "is not a finite number"
    return None


def _rows_problem(rule: RowsRule, rows: Any) -> str | None:
    if not isinstance(rows, list):
        return f"is {_json_type(rows)}, expected a list of rows"
    seen: set[str] = set()
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            return f"[{i}] is {_json_type(row)}, expected an object"
        for column in (rule.key, *rule.numbers):
            if column not in row:
                return f"[{i}] lacks {column!r}"
        key = row[rule.key]
        if not isinstance(key, str):
            return f"[{i}].{rule.key} is {_json_type(key)}, expected a string"
        for column in rule.numbers:
            problem = _number_problem(row[column])
            if problem:
                return f"[{i}].{column} {problem}"
        if name_key(key) in seen:
            return f"[{i}] repeats {rule.key} {key!r}"
        seen.add(name_key(key))
    return None


def _label_equal(label: LabelRule, expected: Any, got: Any) -> bool:
    if label.kind == "text" and isinstance(expected, str) and isinstance(got, str):
        return name_key(expected) == name_key(got)
    return bool(expected == got) and type(expected) is type(got)


def _tie_alternatives(contract: AnswerContract) -> dict[float, float]:
    """{gold value: the other right rounding} of the values the gold rounds from a tie."""
    return {t.value: t.also for t in contract.ties}


def _number_mismatch(name: str, tol: Tolerance, expected: float | None, got: float | None,
                     also: dict[float, float] | None = None) -> str | None:
    if expected is None or got is None:
        if expected is None and got is None:
            return None
        return f"{name}: expected {_show(expected)}, got {_show(got)}"
    allowed = tol.allowed(expected)
    if abs(got - expected) <= allowed:
        return None
    other = (also or {}).get(expected)
    if other is not None and abs(got - other) <= FLOAT_SLACK:  # the other right rounding of the same tie
        return None
    return f"{name}: expected {_show(expected)}, got {_show(got)} (tolerance {allowed:.3g})"


def _rows_mismatches(rule: RowsRule, expected: list[dict[str, Any]], got: list[dict[str, Any]],
                     also: dict[float, float] | None = None) -> list[str]:
    exp_by_key = {name_key(r[rule.key]): r for r in expected}
    got_by_key = {name_key(r[rule.key]): r for r in got}
    out: list[str] = []
    missing = [r[rule.key] for k, r in exp_by_key.items() if k not in got_by_key]
    extra = [r[rule.key] for k, r in got_by_key.items() if k not in exp_by_key]
    if missing:
        out.append(f"missing row(s) {', '.join(map(repr, missing))}")
    if extra:
        out.append(f"extra row(s) {', '.join(map(repr, extra))}")
    if rule.ordered and not (missing or extra) and not _order_ok(rule, expected, got):
        out.append(f"order: expected {[r[rule.key] for r in expected]}, got {[r[rule.key] for r in got]}")
    for key, exp_row in exp_by_key.items():
        if key in got_by_key:
            for column, tol in rule.numbers.items():
                problem = _number_mismatch(f"{exp_row[rule.key]!r}.{column}", tol, exp_row[column],
                                           got_by_key[key][column], also)
                if problem:
                    out.append(problem)
    return out


def _order_ok(rule: RowsRule, expected: list[dict[str, Any]], got: list[dict[str, Any]]) -> bool:
    """Rows in expected order, where runs of tied expected rows (equal values) may come in any order."""
    i = 0
    while i < len(expected):
        j = i + 1
        while j < len(expected) and all(expected[j][c] == expected[i][c] for c in rule.numbers):
            j += 1
        if {name_key(r[rule.key]) for r in expected[i:j]} != {name_key(r[rule.key]) for r in got[i:j]}:
            return False
        i = j
    return True


# ------------------------------------------------------------------------------ small helpers
_SEPARATORS = re.compile(r"[\s_-]+")


def name_key(s: Any) -> Any:
    """A name as scored: trimmed, case-folded, and with spaces, underscores and hyphens alike
    ("in_person" = "In-person" = "in person")."""
    return _SEPARATORS.sub(" ", s.strip().casefold()) if isinstance(s, str) else s


def _show(v: Any) -> str:
    return "null" if v is None else repr(v)


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


def _join(items: tuple[str, ...]) -> str:
    shown = "; ".join(items[:MAX_REASONS])
    rest = len(items) - MAX_REASONS
    return shown + (f"; and {rest} more" if rest > 0 else "")
