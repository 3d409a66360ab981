"""What a reviewer needs to judge one task, read from the graph and the warehouse in one place.

`task_evidence` gathers the task (private view), its gold SQL formatted and the rows it returns
now (at most `ROWS_SHOWN`, read through a capped cursor as the domain's read-only role), the
policy of its metric with each rule's effect and the document sentence that states it, the
answer without the featured rule, the validator's verdicts, and the lineage (run, rule
versions). The pages render it (service/review_pages.py) and add nothing of their own.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from dibench.core.errors import DibenchError, NotFound, RewriteError
from dibench.evaluation.tasks import TaskRecord, task_record
from dibench.generation.validation import JUDGE_DIMENSIONS
from dibench.service.queries import rules_for
from dibench.sqlops.dialect import DIALECT, parse
from dibench.stores.graph import Graph
from dibench.stores.warehouse import ResultCap, Warehouse

ROWS_SHOWN = 50
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(*\"'])")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_WORD = re.compile(r"[A-Za-z][A-Za-z_]{3,}|\d+(?:\.\d+)?")
_STOP = frozenset({"from", "with", "where", "that", "this", "then", "case", "when", "else", "interval", "null",
                   "metric", "predicate", "value", "exclude", "true", "false"})


@dataclass(frozen=True)
class PolicyRule:
    rule_id: str
    title: str
    rule_type: str | None
    version: str | None
    status: str  # its place in the metric's policy (service.queries.rules_for)
    effect: dict[str, Any] | None
    sentence: str | None  # the document sentence the effect comes from (best match)
    featured: bool
    decisive: bool


@dataclass(frozen=True)
class GoldRows:
    columns: list[str]
    rows: list[list[Any]]
    more: bool  # the query returns more rows than are shown
    error: str | None = None


@dataclass(frozen=True)
class Evidence:
    task: TaskRecord
    version: int
    metric_name: str | None
    gold_sql_pretty: str | None
    gold_rows: GoldRows
    policy: list[PolicyRule]
    judge: dict[str, Any]  # {"stage2": ..., "reason": ...} or the eight verdicts
    run: dict[str, Any]
    rule_versions: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)

    @property
    def judged(self) -> bool:
        return self.judge.get("stage2") == "judged"

    def verdicts(self) -> list[tuple[str, bool | None, str]]:
        """The validator's eight verdicts (dimension, passed, reason); passed None when it did not judge."""
        if not self.judged:
            return [(d, None, "") for d in JUDGE_DIMENSIONS]
        out: list[tuple[str, bool | None, str]] = []
        for d in JUDGE_DIMENSIONS:
            v = self.judge.get(d) or {}
            out.append((d, bool(v.get("passed")), str(v.get("reason") or "")))
        return out


def pretty_sql(sql: str | None) -> str | None:
    """The SQL as sqlglot prints it, one clause a line, `:name` placeholders kept; the stored text
    when it does not parse."""
    if not sql:
        return None
    from sqlglot.errors import SqlglotError

    try:
        return str(parse(sql, where="gold SQL").sql(dialect=DIALECT, pretty=True))
    except (RewriteError, SqlglotError):
        return sql


def _sentences(body: str) -> list[str]:
    """A document's headings (each a sentence of its own) and the sentences of its paragraphs."""
    out: list[str] = []
    paragraph: list[str] = []
    for line in [*body.splitlines(), ""]:
        text = line.strip()
        if text.startswith("#") or not text:
            out += [x.strip() for x in _SENTENCE.split(" ".join(paragraph)) if x.strip()]
            paragraph = []
            if text:
                out.append(text.lstrip("#").strip())
        else:
            paragraph.append(text.lstrip("-* ").strip())
    return out


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(_THOUSANDS.sub("", text))}


def source_sentence(body: str | None, effect: dict[str, Any] | None, metric_id: str) -> str | None:
    """The sentence (or heading) of a rule document that best states `effect` on `metric_id`:
    most words and numbers shared with the effect (2,000 and 2000 alike), the metric's id
    counting double, the earlier one on a tie (documents state the rule first). A best match,
    not a stored citation; None for an empty body."""
    if not body:
        return None
    wanted = _words(json.dumps(effect or {})) - _STOP
    best: tuple[int, str] | None = None
    for sentence in _sentences(body):
        if len(sentence) < 12:
            continue
        score = len(_words(sentence) & wanted) + (2 if metric_id.lower() in sentence.lower() else 0)
        if best is None or score > best[0]:
            best = (score, sentence)
    return best[1].replace("**", "") if best else None


def domain_schema_name(graph: Graph, domain: str) -> str:
    rows = graph.read("eval_domain", domain=domain)
    if not rows or not rows[0]["schema"]:
        raise NotFound(f"domain {domain!r} is not in the graph", hint=f"run `dibench ingest {domain}` first")
    return str(rows[0]["schema"])


def gold_rows(wh: Warehouse, schema: str, sql: str | None, params: dict[str, Any]) -> GoldRows:
    """The rows the gold SQL returns now, at most ROWS_SHOWN (one more is read to know there are more)."""
    if not sql:
        return GoldRows([], [], False, "this task has no SQL (a knowledge task)")
    try:
        result = wh.execute_readonly(sql, params, schema=schema, cap=ResultCap(rows=ROWS_SHOWN + 1))
    except DibenchError as exc:
        return GoldRows([], [], False, str(exc).splitlines()[0][:300])
    rows = [list(r) for r in result.rows]
    return GoldRows(result.columns, rows[:ROWS_SHOWN], len(rows) > ROWS_SHOWN or result.cut is not None)


def policy_rules(graph: Graph, task: TaskRecord, bodies: dict[str, str]) -> list[PolicyRule]:
    """The rules of the task's metric (every rule considered, in or out of force), each with its
    effect and the sentence of its document that states it."""
    if not task.metric_ids:
        return []
    metric = task.metric_ids[0]
    out = []
    for r in rules_for(graph, metric, task.domain):
        effect = r.get("operation") if isinstance(r.get("operation"), dict) else None
        out.append(PolicyRule(
            rule_id=r["rule_id"], title=str(r.get("title") or ""), rule_type=r.get("rule_type"),
            version=r.get("version"), status=str(r.get("policy")), effect=effect,
            sentence=source_sentence(bodies.get(r["rule_id"]), effect, metric),
            featured=r["rule_id"] == task.featured_rule, decisive=r["rule_id"] in task.decisive_rules))
    return out


def _judge(raw: Any) -> dict[str, Any]:
    try:
        judge = json.loads(raw) if raw else {}
    except (TypeError, json.JSONDecodeError):
        judge = {}
    return judge if isinstance(judge, dict) else {}


def task_evidence(graph: Graph, wh: Warehouse, key: str, *, schema: str, bodies: dict[str, str]) -> Evidence:
    """Everything the task page shows of task `key` (NotFound when the graph has no such task)."""
    rows = graph.read("review_task", key=key)
    if not rows:
        raise NotFound(f"no task {key[:120]!r}")
    row = rows[0]
    props = row["task"]
    task = task_record(props, row["rounding"])
    return Evidence(
        task=task, version=int(props.get("version") or 1), metric_name=row["metric_name"],
        gold_sql_pretty=pretty_sql(task.gold_sql), gold_rows=gold_rows(wh, schema, task.gold_sql, task.params),
        policy=policy_rules(graph, task, bodies), judge=_judge(props.get("judge")), run=dict(row["run"] or {}),
        rule_versions=sorted(row["rule_versions"], key=lambda v: str(v.get("rule_id"))))


def public_evidence(graph: Graph, key: str) -> Evidence:
    """The task of a page for a token that may not see private values: the page renders its public
    fields only, and nothing private is read beyond the task record itself (no SQL is run)."""
    rows = graph.read("review_task", key=key)
    if not rows:
        raise NotFound(f"no task {key[:120]!r}")
    props = rows[0]["task"]
    return Evidence(task=task_record(props, rows[0]["rounding"]), version=int(props.get("version") or 1),
                    metric_name=rows[0]["metric_name"], gold_sql_pretty=None, gold_rows=GoldRows([], [], False),
                    policy=[], judge={}, run={}, rule_versions=[])


def rule_bodies(graph: Graph, domain: str) -> dict[str, str]:
    return {r["id"]: str(r["body"] or "") for r in graph.read("review_rules", domain=domain)}
