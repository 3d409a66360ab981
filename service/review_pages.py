"""The review app's pages: server-rendered HTML, pure functions from data to text.

Every value from the graph, the warehouse or a request passes through `h` (html.escape, quotes
included) before it enters a page, so a rule title or a question holding `<script>` is shown as
text. The one script (the keyboard of the task page) and the one style sheet are inline and carry
the response's nonce, which the Content-Security-Policy header names (service/review.py): no other
script runs, none is loaded from elsewhere, and a page asks nothing of any other site.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any
from urllib.parse import quote

from dibench.generation.validation import JUDGE_DIMENSIONS
from dibench.service.review_evidence import Evidence, GoldRows, PolicyRule
from dibench.service.review_stats import STATS_COLUMNS, ReviewStats, stats_table

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d232b;background:#f6f7f9}
header{background:#24324a;color:#fff;padding:8px 16px;display:flex;gap:16px;align-items:center}
header a{color:#cfe0ff}main{padding:12px 16px;max-width:1200px}
section{background:#fff;border:1px solid #dde2ea;border-radius:6px;padding:8px 12px;margin:0 0 10px}
h1{font-size:18px;margin:4px 0 8px}h2{font-size:15px;margin:2px 0 6px}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #dde2ea;padding:2px 6px;text-align:left;
vertical-align:top}th{background:#eef1f6}pre{background:#f3f5f8;padding:6px;overflow:auto;margin:4px 0;font-size:12px;
white-space:pre-wrap;word-break:break-word;max-height:24em}.q{font-size:16px;white-space:pre-wrap;max-height:16em;overflow:auto}.note{color:#5b6675;font-size:12px}.pass{color:#17692e}.fail{color:#a11b1b}
.dims{display:grid;grid-template-columns:repeat(4,1fr);gap:4px}
.dim{border:1px solid #cdd5e0;border-radius:4px;padding:4px}.dim.off{background:#fde8e8;border-color:#e5a3a3}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:10px}.cols>section{min-width:0}button{font-size:14px;padding:4px 12px}
input[type=text],textarea{width:100%;box-sizing:border-box;font:13px monospace}
"""

# 1-8 toggle the eight dimensions (outside text fields); Enter saves (the form's own submit).
KEYS_JS = """
document.addEventListener('keydown', function (e) {
  var t = e.target; if (t && (t.tagName === 'TEXTAREA' || t.tagName === 'INPUT' && t.type === 'text')) return;
  var n = parseInt(e.key, 10);
  if (n >= 1 && n <= 8) { var box = document.getElementById('dim' + n); box.checked = !box.checked;
    box.closest('.dim').classList.toggle('off', !box.checked); e.preventDefault(); }
  if (e.key === 'Enter') { document.getElementById('review-form').requestSubmit(); e.preventDefault(); }
});
"""


def h(value: Any) -> str:
    """Any value as HTML text (JSON for containers)."""
    if isinstance(value, (dict, list)):
        value = json.dumps(value, sort_keys=True, default=str)
    return escape("" if value is None else str(value), quote=True)


def q(value: str) -> str:
    return quote(value, safe="")


@dataclass(frozen=True)
class Viewer:
    """Who a page is for: their name, role and the CSRF token every form of theirs carries."""

    name: str
    role: str
    csrf: str


def page(title: str, body: str, *, nonce: str, who: Viewer | None = None, script: str | None = None) -> str:
    nav = (f'<a href="/review">queues</a><span class="note">signed in as {h(who.name)}</span>'
           f'<form method="post" action="/review/logout" style="margin-left:auto">{csrf_field(who.csrf)}'
           '<button>sign out</button></form>' if who else "")
    js = f'<script nonce="{h(nonce)}">{script}</script>' if script else ""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{h(title)} · dibench review</title>'
            f'<style nonce="{h(nonce)}">{STYLE}</style></head><body><header><b>dibench review</b>{nav}</header>'
            f"<main>{body}</main>{js}</body></html>")


def table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    th = "".join(f"<th>{h(c)}</th>" for c in head)
    trs = "".join("<tr>" + "".join(f"<td>{h(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


def csrf_field(csrf: str) -> str:
    return f'<input type="hidden" name="csrf" value="{h(csrf)}">'


def login_page(nonce: str, csrf: str, problem: str | None = None) -> str:
    msg = f'<p class="fail" id="problem">{h(problem)}</p>' if problem else ""
    return page("sign in", f"""<section><h1>Sign in</h1>{msg}
<form method="post" action="/review/login">{csrf_field(csrf)}<p>Your review token (from whoever runs this server):</p>
<input type="password" name="token" id="token" autocomplete="off" style="width:30em">
<button id="sign-in">sign in</button></form></section>""", nonce=nonce)


def home_page(nonce: str, who: Viewer, domains: Sequence[dict[str, Any]]) -> str:
    rows = []
    for d in domains:
        name = str(d["domain"])
        links = []
        if who.role in ("reviewer", "reader"):
            links += [f'<a href="/review/{q(name)}">review queue</a>', f'<a href="/review/{q(name)}/stats">stats</a>']
        if who.role == "baseline":
            links.append(f'<a href="/review/{q(name)}/blind">answer tasks (blind)</a>')
        rows.append(f"<tr><td>{h(name)}</td><td>{h(d['tasks'])}</td><td>{' · '.join(links)}</td></tr>")
    return page("queues", f"""<section><h1>Domains</h1><p class="note">You are a {h(who.role)}.</p>
<table><thead><tr><th>domain</th><th>queue</th><th></th></tr></thead><tbody>{''.join(rows)}</tbody></table>
</section>""", nonce=nonce, who=who)


def queue_page(nonce: str, who: Viewer, domain: str, items: Sequence[dict[str, Any]], next_key: str | None,
               sample: int | None, judge_rejected: bool = False) -> str:
    done = sum(1 for i in items if i["state"] == "reviewed")
    start = (f'<a id="next" href="/review/{q(domain)}/task?key={q(next_key)}">review the next task</a>'
             if next_key else "<b>every task of this queue is reviewed</b>")
    rows = "".join(f"<tr><td>{i['n']}</td><td>{h(i['tier'])}</td><td>{h(i['analysis_type'])}</td><td>{i['version']}</td>"
                   f"<td>{h(i['state'])}</td><td><a href=\"/review/{q(domain)}/task?key={q(i['key'])}\">{h(i['key'])}</a>"
                   "</td></tr>" for i in items)
    pool = "admitted tasks and tasks only the validator's judge rejected" if judge_rejected else "admitted tasks"
    what = f"a stratified sample of {sample} {pool} (tier x analysis type)" if sample else f"every one of the {pool}"
    head = "".join(f"<th>{c}</th>" for c in ("#", "tier", "analysis type", "version", "your review", "task"))
    return page(f"{domain} queue", f"""<section><h1>Review queue: {h(domain)}</h1>
<p>{h(what)}; {done} of {len(items)} reviewed by you (current versions). {start}</p>
<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></section>""", nonce=nonce, who=who)


def _rows_html(g: GoldRows) -> str:
    if g.error:
        return f'<p class="note">{h(g.error)}</p>'
    more = f'<p class="note">first {len(g.rows)} rows shown; the query returns more</p>' if g.more else ""
    return table(g.columns, g.rows) + more


def _policy_html(rules: Sequence[PolicyRule]) -> str:
    if not rules:
        return '<p class="note">No rule modifies this metric.</p>'
    items = []
    for r in rules:
        tags = " ".join(t for t, on in (("featured", r.featured), ("decisive", r.decisive)) if on)
        items.append(f"""<tr><td><b>{h(r.rule_id)}</b> v{h(r.version)}<br>{h(r.title)}<br>
<span class="note">{h(r.rule_type)} · {h(r.status)}</span> <b>{h(tags)}</b></td>
<td><pre>{h(json.dumps(r.effect, indent=1, sort_keys=True) if r.effect else "-")}</pre></td>
<td>{h(r.sentence or "-")}</td></tr>""")
    return ("<table><thead><tr><th>rule</th><th>effect</th><th>the document says</th></tr></thead>"
            f"<tbody>{''.join(items)}</tbody></table>")


def _verdicts_html(e: Evidence) -> str:
    if not e.judged:
        why = e.judge.get("reason") or e.judge.get("stage2") or "no record"
        return (f'<p class="note">The validator (stage-2 judge) did not judge this task: {h(why)}. '
                "Its verdicts are stored on the task whenever it runs.</p>")
    rows = [[d, "pass" if ok else "FAIL", reason] for d, ok, reason in e.verdicts()]
    return table(["dimension", "validator", "its reason"], rows)


def _dimension_boxes(failed: Sequence[str]) -> str:
    boxes = []
    for i, d in enumerate(JUDGE_DIMENSIONS, start=1):
        on = d not in failed
        boxes.append(f'<label class="dim{"" if on else " off"}"><input type="checkbox" id="dim{i}" name="pass" '
                     f'value="{h(d)}"{" checked" if on else ""}> <b>{i}</b> {h(d.replace("_", " "))}</label>')
    return "".join(boxes)


def task_page(nonce: str, who: Viewer, e: Evidence, *, private: bool, position: str,
              previous: dict[str, Any] | None, older: Sequence[dict[str, Any]]) -> str:
    """The one screen a reviewer judges a task on. `private` False (a reader): public fields only."""
    t = e.task
    head = f"""<section><h1>{h(t.domain)} · {h(t.tier)} · {h(t.analysis_type)} · {h(t.variant)}
<span class="note">{h(position)} · version {e.version}</span></h1>
<p class="q" id="question">{h(t.question)}</p><p><b>Answer format:</b> <span id="answer-format">{h(t.answer_format)}</span>
</p><p class="note">task {h(t.task_id)} · {h(t.status)} · metric {h(", ".join(t.metric_ids))} {h(e.metric_name or "")}
</p></section>"""
    if not private:
        return page(f"task {t.task_id}", head + '<section><p class="note">Your token is read-only: the gold answer, '
                    "its SQL and the reviews are not shown.</p></section>", nonce=nonce, who=who)
    failed = list(previous.get("failed") or []) if previous else []
    note = str(previous.get("note") or "") if previous else ""
    again = ""
    if older:
        again = (f'<p class="fail">Reviewed before at version(s) {h(", ".join(str(o["task_version"]) for o in older))}'
                 ": an update changed this task since; judge it again.</p>")
    form = f"""<section><h2>Your verdict</h2>{again}
<form method="post" action="/review/{q(t.domain)}/task" id="review-form">{csrf_field(who.csrf)}
<input type="hidden" name="key" value="{h(t.task_id)}"><input type="hidden" name="version" value="{e.version}">
<div class="dims">{_dimension_boxes(failed)}</div>
<p><input type="text" name="note" id="note" maxlength="2000" placeholder="note (optional)" value="{h(note)}"></p>
<button id="save">save and next (Enter)</button> <span class="note">keys 1-8 toggle pass/fail; ticked = pass</span>
</form></section>"""
    lifted = json.dumps(t.lifted_answer, sort_keys=True, default=str) if t.lifted_answer is not None else None
    body = head + form + f"""<div class="cols"><section><h2>Gold answer</h2><pre id="gold">{h(json.dumps(
        t.gold_answer, sort_keys=True, default=str))}</pre>
<h2>Without the featured rule ({h(t.featured_rule or "none")})</h2><pre>{h(lifted or "-")}</pre>
<h2>With no rule at all</h2><pre>{h(json.dumps(t.base_answer, sort_keys=True, default=str)
                                     if t.base_answer is not None else "-")}</pre>
<h2>What the question fixes</h2><pre>{h(json.dumps(t.facts, sort_keys=True, default=str))}</pre></section>
<section><h2>Gold SQL</h2><pre id="gold-sql">{h(e.gold_sql_pretty or "-")}</pre><h2>Parameters</h2>
<pre>{h(json.dumps(t.params, indent=1, sort_keys=True, default=str))}</pre></section></div>
<section><h2>Rows the gold SQL returns</h2>{_rows_html(e.gold_rows)}</section>
<section><h2>Policy in force on the metric</h2><p class="note">task computed with: {h(", ".join(t.policy) or "no rule")}
</p>{_policy_html(e.policy)}</section>
<section><h2>Validator</h2>{_verdicts_html(e)}</section>
<section><h2>Lineage</h2>{table(["run", "seed", "code", "gold meaning", "started", "phraser", "judge"],
                               [[e.run.get(k) for k in ("key", "seed", "code_version", "gold_version", "started_at",
                                                        "phraser", "judge")]])}
{table(["rule", "version", "hash", "effective"], [[v.get("rule_id"), v.get("version"), str(v.get("hash") or "")[:12],
                                                   v.get("effective_date")] for v in e.rule_versions])}</section>"""
    return page(f"task {t.task_id}", body, nonce=nonce, who=who, script=KEYS_JS)


def stats_page(nonce: str, who: Viewer, stats: ReviewStats) -> str:
    median = "-" if stats.median_seconds is None else f"{stats.median_seconds:.1f} s"
    judged = stats.rows[-1].judged if stats.rows else 0
    return page(f"{stats.domain} stats", f"""<section><h1>Validator against people: {h(stats.domain)}</h1>
<p>{stats.tasks} task(s) reviewed, {stats.reviews} review(s) by {stats.reviewers} reviewer(s) of the tasks' current
versions ({stats.stale_reviews} of older versions not counted); median time per task: {h(median)}.
The validator's judge scored {judged} of these tasks{" (generation ran without a model: its judge was skipped)"
                                                    if not judged and stats.tasks else ""}.</p>
{table(STATS_COLUMNS, stats_table(stats))}
<p class="note">A task passes a dimension for people when no current review fails it; "all": the eight together.
Validator rates count the tasks its judge scored. Precision: of the tasks the validator passes, the share people
pass; recall: of the tasks people pass, the share the validator passes. Kappa: the first two reviewers of a task.
</p></section>""", nonce=nonce, who=who)


def blind_page(nonce: str, who: Viewer, domain: str, task: dict[str, str], *, position: str, schema: str = "",
               sql: str = "", sql_reply: str | None = None, search: str = "",
               hits: Sequence[dict[str, Any]] = (), document: dict[str, Any] | None = None,
               answer: str = "", problem: str | None = None) -> str:
    """A task as an agent gets it: question, answer format, the SQL console, the knowledge search."""
    key = task["task_id"]
    base = f"/review/{q(domain)}/blind"
    reply = f'<pre id="sql-reply">{h(sql_reply)}</pre>' if sql_reply is not None else ""
    found = "".join(f'<li><a href="{base}/task?key={q(key)}&amp;doc={q(str(x["doc_id"]))}">{h(x["doc_id"])}</a> '
                    f'{h(x.get("title") or "")}<br><span class="note">{h(x.get("excerpt") or "")}</span></li>'
                    for x in hits)
    doc = (f'<section><h2>{h(document["doc_id"])}: {h(document.get("title") or "")}</h2>'
           f'<pre id="document">{h(document.get("text") or "")}</pre></section>' if document else "")
    bad = f'<p class="fail" id="problem">{h(problem)}</p>' if problem else ""
    return page(f"blind {key}", f"""<section><h1>{h(domain)} · answer as an agent would
<span class="note">{h(position)}</span></h1><p class="q" id="question">{h(task["question"])}</p>
<p><b>Answer format:</b> <span id="answer-format">{h(task["answer_format"])}</span></p></section>
<section><details><summary>The database schema (what an agent is told)</summary><pre>{h(schema)}</pre></details>
</section><div class="cols"><section><h2>SQL (read-only, the domain's own role)</h2>
<form method="post" action="{base}/sql">{csrf_field(who.csrf)}<input type="hidden" name="key" value="{h(key)}">
<textarea name="sql" id="sql" rows="6">{h(sql)}</textarea><button id="run-sql">run</button></form>{reply}</section>
<section><h2>Policies and metric definitions</h2><form method="get" action="{base}/task">
<input type="hidden" name="key" value="{h(key)}"><input type="text" name="q" id="search" value="{h(search)}">
<button id="run-search">search</button></form><ul>{found}</ul></section></div>{doc}
<section><h2>Your answer</h2>{bad}<form method="post" action="{base}/answer" id="answer-form">{csrf_field(who.csrf)}
<input type="hidden" name="key" value="{h(key)}"><textarea name="answer" id="answer" rows="4"
placeholder="a JSON value in the answer format">{h(answer)}</textarea>
<button id="submit-answer">submit and next</button></form></section>""", nonce=nonce, who=who)


def message_page(nonce: str, who: Viewer | None, title: str, text: str) -> str:
    return page(title, f'<section><h1>{h(title)}</h1><p id="message">{h(text)}</p>'
                       '<p><a href="/review">back to the queues</a></p></section>', nonce=nonce, who=who)
