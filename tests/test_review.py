"""The review app without a browser (TestClient over the real stores), its queues and its
statistics: who may see and write what, the HTTP hygiene it shares with `dibench serve`, the
evidence of a task page, reviews made old by a rule update, the export filter on review state,
Table 11 computed by hand, and the human baseline in `dibench report`.
Cost: about 30 s in all (2 busy cores, load 6-8), most of it generating the domain and the rule update.
"""
from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from dibench.cli.main import main
from dibench.core.config import REPO_ROOT
from dibench.core.pack import Pack
from dibench.generation.validation import JUDGE_DIMENSIONS
from dibench.service.export import public_filter
from dibench.service.review import ReviewOptions
from dibench.service.review_queue import (QueueTask, allocate, blind_stratum, build_queue, next_key, question_key,
                                          stratified_sample)
from dibench.service.review_stats import Reviewed, dimension_row, kappa
from dibench.service.update import load_document, plan_update
from dibench.service.update_write import run_update
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import edit_front
from tests.fixtures.review_app import ANA, BO, EVA, RUI, Reviewer, review_app, review_fixtures, review_settings

DOMAIN = "mini_rev2"


# ------------------------------------------------------------------------------ pure parts
def _tasks() -> list[QueueTask]:
    spec = {("K", "knowledge_retrieval"): 3, ("K+A", "trend_analysis"): 1, ("K+A+R", "point_query"): 10,
            ("K+A+R", "ranking"): 6}
    return [QueueTask(f"task:x/{tier}-{kind}-{i:02d}", tier, kind, 1) for (tier, kind), n in spec.items()
            for i in range(n)]


def test_allocation_is_as_equal_as_the_strata_allow() -> None:
    sizes = {("a",): 1, ("b",): 10, ("c",): 6}
    assert allocate(sizes, 9) == {("a",): 1, ("b",): 4, ("c",): 4}
    assert allocate(sizes, 100) == sizes
    assert sum(allocate(sizes, 10).values()) == 10


def test_the_stratified_sample_is_seeded_spread_and_interleaved() -> None:
    tasks = _tasks()
    sample = stratified_sample(tasks, 8, seed=42)
    assert sample == stratified_sample(list(reversed(tasks)), 8, seed=42)  # order of input does not matter
    assert sample != stratified_sample(tasks, 8, seed=7)
    strata = [(t.tier, t.analysis_type) for t in sample]
    assert sorted(set(strata)) == sorted({(t.tier, t.analysis_type) for t in tasks})  # every stratum
    assert len(set(strata[:4])) == 4  # round robin: the first four cover the four strata
    blind = build_queue(tasks, 3, 42, blind_stratum)
    assert sorted(t.tier for t in blind) == ["K", "K+A", "K+A+R"]
    assert build_queue(tasks, None, 42) == sorted(tasks, key=lambda t: t.key)


def test_next_resumes_and_a_new_version_comes_back() -> None:
    queue = build_queue(_tasks(), 4, 42)
    done = {queue[0].key: 1, queue[1].key: 1}
    assert next_key(queue, done) == queue[2].key
    assert next_key(queue, done, after=queue[3].key) == queue[2].key  # wraps round
    assert next_key(queue, {t.key: 1 for t in queue}) is None
    bumped = [QueueTask(t.key, t.tier, t.analysis_type, 2) if i == 0 else t for i, t in enumerate(queue)]
    assert next_key(bumped, {t.key: 1 for t in queue}) == queue[0].key


def test_kappa_by_hand() -> None:
    # Two raters, 10 items: agree on 6 passes and 2 fails, disagree twice. po = 0.8,
    # pa = 0.7, pb = 0.7, pe = 0.49 + 0.09 = 0.58, kappa = 0.22 / 0.42.
    pairs = [(True, True)] * 6 + [(False, False)] * 2 + [(True, False), (False, True)]
    assert kappa(pairs) == round(0.22 / 0.42, 3)
    assert kappa([(True, True)] * 3) == 1.0
    assert kappa([]) is None


def test_table_11_rows_by_hand() -> None:
    f = frozenset
    tasks = [
        Reviewed("t1", {"ana": f(), "eva": f()}, f(), (10.0, 20.0)),                       # all pass
        Reviewed("t2", {"ana": f({"naturalness"})}, f(), (30.0,)),                         # people fail, validator passes
        Reviewed("t3", {"ana": f(), "eva": f({"naturalness"})}, f({"naturalness"}), (5.0, 5.0)),
        Reviewed("t4", {"ana": f()}, None, (1.0,)),                                        # not judged
    ]
    row = dimension_row(tasks, "naturalness")
    assert (row.tasks, row.human_pass_pct) == (4, 50.0)                 # t1, t4 pass for people
    assert (row.judged, row.validator_pass_pct) == (3, round(200 / 3, 1))  # t1, t2 of t1-t3
    assert (row.admitted, row.human_pass_of_admitted_pct) == (2, 50.0)  # admitted t1, t2; people pass t1
    assert (row.validator_passed, row.precision_pct) == (2, 50.0)
    assert (row.human_passed_judged, row.recall_pct) == (1, 100.0)
    assert row.pairs == 2 and row.kappa == 0.0  # agree on t1 (pass), disagree on t3: po 0.5, pe 0.5
    objectivity = dimension_row(tasks, "objectivity")
    assert objectivity.human_pass_pct == 100.0 and objectivity.precision_pct == 100.0


# ------------------------------------------------------------------------------ with the real stores
pack, state_dir = review_fixtures(DOMAIN, target=8)


@pytest.fixture(scope="module")
def client(pack: Pack, state_dir: Path) -> TestClient:
    cfg = review_settings(state_dir, api_token="api-write-token-0001", api_read_token="api-read-token-0001")
    return TestClient(review_app(cfg, ReviewOptions(blind_sample=3)), base_url="http://127.0.0.1")


def bearer(person: Reviewer) -> dict[str, str]:
    return {"Authorization": f"Bearer {person.token}"}


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, "the page has no CSRF field"
    return found.group(1)


def queue_keys(client: TestClient, person: Reviewer = ANA) -> list[str]:
    page = client.get(f"/review/{DOMAIN}", headers=bearer(person)).text
    return [unquote(k) for k in re.findall(r'/task\?key=([^"]+)">task:', page)]


def open_task(client: TestClient, key: str, person: Reviewer = ANA) -> str:
    r = client.get(f"/review/{DOMAIN}/task", params={"key": key}, headers=bearer(person))
    assert r.status_code == 200, r.text
    return r.text


def save(client: TestClient, key: str, failed: list[str], *, version: int = 1, person: Reviewer = ANA,
         csrf: str | None = None) -> Any:
    page = open_task(client, key, person) if csrf is None else ""
    data = {"csrf": csrf if csrf is not None else csrf_of(page), "key": key, "version": str(version),
            "pass": [d for d in JUDGE_DIMENSIONS if d not in failed], "note": "checked by hand"}
    return client.post(f"/review/{DOMAIN}/task", data=data, headers=bearer(person), follow_redirects=False)


def review_rows(graph: Graph) -> list[dict[str, Any]]:
    return graph.read("review_domain_reviews", domain=DOMAIN)


def numbers_in(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [n for v in value.values() for n in numbers_in(v)]
    if isinstance(value, list):
        return [n for v in value for n in numbers_in(v)]
    return [str(value)] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


def test_who_may_see_what(client: TestClient, graph: Graph) -> None:
    key = next(k for k in queue_keys(client) if graph.read("review_task", key=k)[0]["task"].get("gold_sql")
               and graph.read("review_task", key=k)[0]["task"]["analysis_type"] != "trend_analysis")
    assert client.get(f"/review/{DOMAIN}").status_code == 401  # nobody signed in
    assert client.get(f"/review/{DOMAIN}", headers={"Authorization": "Bearer api-read-token-0001"}).status_code == 401
    assert client.get(f"/review/{DOMAIN}", headers={"Authorization": "Bearer api-write-token-0001"}).status_code == 401
    assert client.get("/review", follow_redirects=False).headers["location"] == "/review/login"
    assert client.get(f"/review/{DOMAIN}", headers=bearer(BO)).status_code == 403  # baseline: blind mode only
    assert client.get(f"/review/{DOMAIN}/blind", headers=bearer(ANA)).status_code == 403
    task = graph.read("review_task", key=key)[0]["task"]
    reader = open_task(client, key, RUI)
    assert task["question"].split()[0] in reader
    for private in (task["gold_answer"], task["gold_sql"][:40], task["gold_params"]):
        assert private not in reader and escape(private) not in reader
    numbers = [n for n in numbers_in(json.loads(task["gold_answer"])) if n not in task["question"]]
    assert numbers, "the test needs a gold answer with a number the question does not state"
    reviewer = open_task(client, key)
    for n in numbers:  # what a reviewer sees, the reader does not
        assert n in reviewer and n not in reader
    assert client.get("/review/login").headers["content-security-policy"].startswith("default-src 'none'")


def test_a_reader_and_a_post_without_csrf_write_nothing(client: TestClient, graph: Graph) -> None:
    key = queue_keys(client)[0]
    before = review_rows(graph)
    reader_csrf = csrf_of(open_task(client, key, RUI))
    assert save(client, key, [], person=RUI, csrf=reader_csrf).status_code == 403
    assert save(client, key, [], csrf="").status_code == 403
    assert save(client, key, [], csrf=reader_csrf).status_code == 403  # another person's token
    assert review_rows(graph) == before


def test_http_hygiene_of_the_service(client: TestClient) -> None:
    assert client.get("/review/login", headers={"Host": "evil.example"}).status_code == 400
    r = client.post(f"/review/{DOMAIN}/task", content=b"x" * (2 << 20), headers={
        **bearer(ANA), "Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 413
    missing = client.get(f"/review/{DOMAIN}/task", params={"key": "task:nope"}, headers=bearer(ANA))
    assert missing.status_code == 404 and "is not in the review queue" in missing.text
    assert str(REPO_ROOT) not in missing.text and "Traceback" not in missing.text
    wrong = client.post("/review/login", data={"csrf": "x", "token": ANA.token}, follow_redirects=False)
    assert wrong.status_code == 403  # a sign-in without the login page's token


def test_a_browser_session_signs_in_and_out(pack: Pack, state_dir: Path) -> None:
    c = TestClient(review_app(review_settings(state_dir)), base_url="http://127.0.0.1")
    form = c.get("/review/login").text
    r = c.post("/review/login", data={"csrf": csrf_of(form), "token": "not-a-token-at-all"})
    assert r.status_code == 401 and "unknown token" in r.text
    r = c.post("/review/login", data={"csrf": csrf_of(c.get("/review/login").text), "token": EVA.token})
    assert r.status_code == 200 and "signed in as eva" in r.text
    assert c.post("/review/logout", data={"csrf": csrf_of(r.text)}, follow_redirects=False).status_code == 303
    assert c.get(f"/review/{DOMAIN}").status_code == 401


def test_no_reviewers_no_review_app(pack: Pack, state_dir: Path) -> None:
    c = TestClient(review_app(review_settings(state_dir, reviewers=[])), base_url="http://127.0.0.1")
    assert c.get(f"/review/{DOMAIN}", headers=bearer(ANA)).status_code == 403


def test_the_task_page_holds_the_evidence(client: TestClient, graph: Graph) -> None:
    keys = queue_keys(client)
    rows = {r["task"]["key"]: r["task"] for r in graph.read("eval_tasks", domain=DOMAIN, run=None,
                                                               statuses=["admitted"])}
    featured = [k for k in keys if rows[k].get("featured_rule") and rows[k]["variant"] == "standard"
                and rows[k].get("gold_sql")]
    assert featured, "the sample must hold a rule task"
    key = featured[0]
    page = open_task(client, key)
    t = rows[key]
    assert "SELECT" in page and "\n" in page.split('id="gold-sql">')[1].split("</pre>")[0]  # formatted
    assert "Rows the gold SQL returns" in page and "<table>" in page.split("Rows the gold SQL returns")[1]
    assert t["featured_rule"] in page and "featured" in page
    assert "the document says" in page
    assert "did not judge this task: no LLM configured" in page
    assert t["run_key"] in page
    assert f"Without the featured rule ({t['featured_rule']})" in page


def test_an_update_makes_reviews_old_and_the_queue_shows_the_task_again(
        client: TestClient, pack: Pack, graph: Graph, warehouse: Warehouse, tmp_path: Path) -> None:
    tasks = {r["task"]["key"]: r["task"] for r in graph.read("eval_tasks", domain=DOMAIN, run=None,
                                                                statuses=["admitted"])}
    strict = sorted(k for k, t in tasks.items() if "MINI-R-STRICT" in (t["decisive_rules"] or [])
                    and t["analysis_type"] in ("point_query", "decomposition"))
    assert strict, "the fixture must hold tasks the strict rule decides"
    others = sorted(k for k, t in tasks.items() if t["metric_id"] != "MINI-SAT-001")
    for key in strict + others[:1]:
        assert save(client, key, []).status_code == 303
    assert save(client, others[1], ["naturalness"]).status_code == 303
    selected = {state: {r["key"] for r in graph.read("export_filter", **public_filter(
        {"domain": DOMAIN, "review": state}).params())} for state in ("passed", "failed", "unreviewed")}
    assert selected["passed"] == set(strict + others[:1]) and selected["failed"] == {others[1]}
    assert len(selected["unreviewed"]) == len(tasks) - len(strict) - 2
    assert client.get("/tasks", params={"domain": DOMAIN, "review": "failed"},
                      headers={"Authorization": "Bearer api-read-token-0001"}).json()["total"] == 1
    out = tmp_path / "failed"
    res = CliRunner().invoke(main, ["export", "--filter", f"domain={DOMAIN}", "--filter", "review=failed", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert [json.loads(line)["task_id"] for line in (out / "public.jsonl").read_text().splitlines()] == [others[1]]
    res = CliRunner().invoke(main, ["export", "--filter", "review=fine", "-o", str(tmp_path / "x")])
    assert res.exit_code == 1 and "review" in res.output

    path = pack.root / "rules" / "strict.md"
    edit_front(path, lambda f: f["effects"][0].__setitem__("value", 3))
    pk, doc = load_document(path)
    plan, _ = run_update(lambda: plan_update(pk, doc, graph, warehouse), graph, pk.name)
    updated = {c["key"] for c in plan.changelog()["tasks"] if c["action"] == "updated"} & set(strict)
    assert updated, "the update must re-derive a reviewed task"
    key = sorted(updated)[0]
    after = {r["key"] for r in graph.read("export_filter", **public_filter(
        {"domain": DOMAIN, "review": "unreviewed"}).params())}
    assert updated <= after  # their reviews are of version 1 now
    stale = [r for r in review_rows(graph) if r["review"]["task_key"] in updated]
    assert all(r["review"]["task_version"] == 1 and r["current_version"] == 2 for r in stale)
    page = open_task(client, key)
    assert "Reviewed before at version(s) 1" in page
    assert save(client, key, [], version=1).status_code == 409  # the old version cannot be saved over
    assert save(client, key, [], version=2).status_code == 303
    stats = json.loads(CliRunner().invoke(main, ["review", "stats", DOMAIN, "--json"]).output)
    now = {r["task"]["key"]: int(r["task"].get("version") or 1) for r in graph.read(
        "eval_tasks", domain=DOMAIN, run=None, statuses=["admitted", "retired"])}
    reviewed = strict + others[:2]
    changed = [k for k in reviewed if now.get(k, 1) != 1]
    assert stats["stale_reviews"] == len(changed) >= len(updated)


def test_review_stats_prints_table_11_from_the_graph(client: TestClient, graph: Graph) -> None:
    keys = queue_keys(client)
    # Two people on the first two tasks; the validator judged the first and failed its naturalness.
    verdict = {d: {"passed": d != "naturalness", "reason": "by the test"} for d in JUDGE_DIMENSIONS}
    graph.write("test_set_task_judge", key=keys[0], judge=json.dumps({"stage2": "judged", "failed": ["naturalness"],
                                                                      **verdict}))
    for person in (ANA, EVA):
        assert save(client, keys[0], [] if person is ANA else ["naturalness"], person=person).status_code == 303
        assert save(client, keys[1], [], person=person).status_code == 303
    res = CliRunner().invoke(main, ["review", "stats", DOMAIN])
    assert res.exit_code == 0, res.output
    assert "median seconds per task" in res.output and "gold_scope_match" in res.output
    stats = json.loads(CliRunner().invoke(main, ["review", "stats", DOMAIN, "--json"]).output)
    natural = next(r for r in stats["rows"] if r["dimension"] == "naturalness")
    assert natural["judged"] == 1 and natural["validator_pass_pct"] == 0.0  # the one judged task fails it
    assert natural["pairs"] == 2  # two tasks with two reviewers
    page = client.get(f"/review/{DOMAIN}/stats", headers=bearer(RUI))
    assert page.status_code == 200 and "Validator against people" in page.text


def test_people_are_a_row_of_the_report(client: TestClient, graph: Graph, state_dir: Path, tmp_path: Path) -> None:
    from dibench.service.report import write_report

    nxt = client.get(f"/review/{DOMAIN}/blind", headers=bearer(BO), follow_redirects=False)
    key = unquote(nxt.headers["location"].split("key=", 1)[1])
    page = client.get(f"/review/{DOMAIN}/blind/task", params={"key": key}, headers=bearer(BO)).text
    gold = graph.read("review_task", key=key)[0]["task"]["gold_answer"]
    r = client.post(f"/review/{DOMAIN}/blind/answer", data={"csrf": csrf_of(page), "key": key, "answer": "{not json"},
                    headers=bearer(BO))
    assert "the answer is not JSON" in r.text
    r = client.post(f"/review/{DOMAIN}/blind/answer", data={"csrf": csrf_of(page), "key": key, "answer": gold},
                    headers=bearer(BO), follow_redirects=False)
    assert r.status_code == 303
    (folder,) = (state_dir / "people" / DOMAIN).iterdir()
    assert str(folder.resolve()) in (state_dir / "eval-runs.txt").read_text()
    data = write_report(graph, tmp_path / "r.html", domains=[DOMAIN], results=[folder])
    html = (tmp_path / "r.html").read_text()
    assert [r.summary.agent for r in data.runs] == ["people"]
    row = html.split("People beside agents, by knowledge tier")[1].split("</table>")[0]
    assert f"people @ {DOMAIN}" in row and "(1/1)" in row


def test_the_source_sentence_is_the_one_that_states_the_effect() -> None:
    from dibench.service.review_evidence import source_sentence

    body = ("# Outlier orders above 2,000 are excluded\n\nThis policy explains why the figures are counted.\n\n"
            "## Core rule\n\nOrders of more than **2,000** are left out of revenue (MINI-REV-001). Others stay.\n")
    effect = {"op": "exclude", "predicate": "o.amount > 2000"}
    assert source_sentence(body, effect, "MINI-REV-001") == "Orders of more than 2,000 are left out of revenue (MINI-REV-001)."
    assert source_sentence(body, effect, "OTHER-001") == "Outlier orders above 2,000 are excluded"
    assert source_sentence("", effect, "MINI-REV-001") is None


def test_the_blind_console_has_the_agents_guards(client: TestClient, graph: Graph) -> None:
    nxt = client.get(f"/review/{DOMAIN}/blind", headers=bearer(BO), follow_redirects=False)
    key = unquote(nxt.headers["location"].split("key=", 1)[1])
    page = client.get(f"/review/{DOMAIN}/blind/task", params={"key": key}, headers=bearer(BO)).text
    for sql in ("DELETE FROM orders", "SELECT * FROM pg_stat_activity", "SELECT * FROM public.secrets"):
        r = client.post(f"/review/{DOMAIN}/blind/sql", data={"csrf": csrf_of(page), "key": key, "sql": sql},
                        headers=bearer(BO))
        reply = r.text.split('id="sql-reply">', 1)[1].split("</pre>", 1)[0]
        assert r.status_code == 200 and reply.startswith("error:"), (sql, reply)
    ok = client.post(f"/review/{DOMAIN}/blind/sql", data={"csrf": csrf_of(page), "key": key,
                                                         "sql": "SELECT count(*) AS n FROM orders"}, headers=bearer(BO))
    assert "row_count" in ok.text


def test_review_serve_needs_reviewers() -> None:
    res = CliRunner().invoke(main, ["review", "serve"], env={"DIBENCH_REVIEWERS": "[]"})
    assert res.exit_code == 1 and "no reviewers are configured" in res.output


def test_tasks_only_the_judge_rejected_can_be_queued_for_table_11(pack: Pack, state_dir: Path, graph: Graph) -> None:
    """With --judge-rejected, people also see what the validator turned away: its recall against
    people needs tasks it failed and people passed."""
    plain = TestClient(review_app(review_settings(state_dir)), base_url="http://127.0.0.1")
    both = TestClient(review_app(review_settings(state_dir), ReviewOptions(judge_rejected=True)),
                      base_url="http://127.0.0.1")
    key = sorted(queue_keys(plain))[-1]
    verdict = {d: {"passed": d != "objectivity", "reason": "by the test"} for d in JUDGE_DIMENSIONS}
    graph.write("test_reject_by_judge", key=key, reason="judge: failed ['objectivity'] (by the test)",
                judge=json.dumps({"stage2": "judged", "failed": ["objectivity"], **verdict}))
    assert key not in queue_keys(plain) and key in queue_keys(both)
    assert "every one of the admitted tasks and tasks only the validator&#x27;s judge rejected" in \
        both.get(f"/review/{DOMAIN}", headers=bearer(EVA)).text
    assert save(both, key, [], person=EVA).status_code == 303  # people pass what the validator failed
    stats = json.loads(CliRunner().invoke(main, ["review", "stats", DOMAIN, "--json"]).output)
    objectivity = next(r for r in stats["rows"] if r["dimension"] == "objectivity")
    assert objectivity["human_passed_judged"] == 2 and objectivity["recall_pct"] == 50.0


def test_sessions_are_bounded_and_tokens_unique() -> None:
    from dibench.core.errors import ConfigError
    from dibench.service.review import People

    people = People([ANA, EVA], max_sessions=2)
    first, second, third = people.open(ANA), people.open(EVA), people.open(ANA)
    assert first.sid not in people.sessions and {second.sid, third.sid} <= set(people.sessions)
    assert first.csrf != second.csrf != third.csrf
    with pytest.raises(ConfigError):
        People([ANA, Reviewer(name="ana2", token=ANA.token)])


def test_a_sampled_review_and_the_blind_queue_share_no_question(pack: Pack, state_dir: Path) -> None:
    """`review serve --sample N --blind-sample M`: no task of the blind queue is (a variant of) a
    task of the review sample, so one person can do both without knowing a gold answer; the
    first page counts the queue each person works on."""
    app = TestClient(review_app(review_settings(state_dir), ReviewOptions(sample=6, blind_sample=3)),
                     base_url="http://127.0.0.1")
    reviewed = {question_key(k) for k in queue_keys(app)}
    assert len(queue_keys(app)) == 6
    for key in reviewed:
        r = app.get(f"/review/{DOMAIN}/blind/task", params={"key": key}, headers=bearer(BO))
        assert r.status_code == 404, key
    nxt = app.get(f"/review/{DOMAIN}/blind", headers=bearer(BO), follow_redirects=False)
    assert question_key(unquote(nxt.headers["location"].split("key=", 1)[1])) not in reviewed
    home = app.get("/review", headers=bearer(ANA)).text
    assert re.search(rf"<td>{DOMAIN}</td><td>6</td>", home), home[-600:]
    assert re.search(rf"<td>{DOMAIN}</td><td>3</td>", app.get("/review", headers=bearer(BO)).text)
