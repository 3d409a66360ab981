"""The review app: the routes under /review of the HTTP service (`dibench review serve`, and
`dibench serve` when reviewers are configured). docs/review.md describes it.

People are `Settings.reviewers`, known by their token: a browser signs in once (a random session
id in an HttpOnly, SameSite=Strict cookie), a program sends `Authorization: Bearer <token>`. The
service's Gate lets /review through to these routes, which authenticate on their own; its Host
check and body bound still apply. Every form post carries the page's CSRF token, checked before
anything else is read. A `reader` reads queues, statistics and public task fields and writes
nothing; a `baseline` person sees only the blind mode; a `reviewer` sees the evidence and saves
reviews: a Review node per (task version, reviewer). Errors are one-line pages without server
paths. The blind mode writes an evaluation run per person (service/people.py).
"""
from __future__ import annotations

import datetime as dt
import functools
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from anyio.to_thread import run_sync
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from dibench.core.config import Reviewer, Settings
from dibench.core.errors import ConfigError, DibenchError, NotFound
from dibench.evaluation.agents.tools import Toolbox, excerpt, schema_description
from dibench.evaluation.kb import KnowledgeBase, load_knowledge_base
from dibench.evaluation.tasks import TaskRecord, load_tasks, public_view
from dibench.generation.validation import JUDGE_DIMENSIONS
from dibench.service.api import Forbidden, Unauthorized, status_of, without_paths
from dibench.service.people import PeopleRun
from dibench.service.review_evidence import domain_schema_name, public_evidence, rule_bodies, task_evidence
from dibench.service.review_pages import (Viewer, q, blind_page, home_page, login_page, message_page, queue_page,
                                          stats_page, task_page)
from dibench.service.review_queue import (QueueTask, blind_stratum, build_queue, next_key, question_key,
                                          review_stratum, reviewed_versions)
from dibench.service.review_stats import review_stats
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse

COOKIE = "dibench_review"
LOGIN_COOKIE = "dibench_review_login"
MAX_NOTE = 2000
MAX_SQL = 20_000
MAX_ANSWER = 100_000
MAX_SESSIONS = 10_000
MAX_SECONDS = 6 * 3600.0  # a page left open overnight is not six hours of review


class CsrfRefused(Forbidden):
    """A form post without the page's CSRF token: 403."""


class ReviewConflict(DibenchError):
    """The task changed since its page was shown: 409."""


@dataclass(frozen=True)
class ReviewOptions:
    """`sample`: the review queue is a stratified sample of that many tasks (tier x analysis
    type), else every admitted task (and, with `judge_rejected`, every task only the validator's
    judge rejected); `blind_sample`: the blind queue's size (strata: tier; admitted standard
    tasks), else every admitted standard task; `seed` draws both."""

    sample: int | None = None
    blind_sample: int | None = None
    seed: int = 42
    judge_rejected: bool = False  # the review queue also holds the tasks only the judge rejected


@dataclass
class Session:
    sid: str
    person: Reviewer
    csrf: str
    shown: dict[str, float] = field(default_factory=dict)  # task key -> when its page was first shown

    def viewer(self) -> Viewer:
        return Viewer(self.person.name, self.person.role, self.csrf)


class People:
    """Who may sign in, and the sessions of this process."""

    def __init__(self, reviewers: list[Reviewer], max_sessions: int = MAX_SESSIONS) -> None:
        names = [r.name for r in reviewers]
        if len(set(names)) != len(names) or len({r.token for r in reviewers}) != len(reviewers):
            raise ConfigError("reviewers: every reviewer needs a name and a token of their own")
        self.reviewers = reviewers
        self.key = secrets.token_bytes(32)
        self.sessions: dict[str, Session] = {}
        self.max_sessions = max_sessions
        self.lock = threading.Lock()

    def by_token(self, token: str | None) -> Reviewer | None:
        if not token:
            return None
        found = None
        for r in self.reviewers:  # every token compared, in constant time each
            if hmac.compare_digest(token.encode(), r.token.encode()):
                found = r
        return found

    def sign(self, text: str) -> str:
        return hmac.new(self.key, text.encode(), hashlib.sha256).hexdigest()

    def open(self, person: Reviewer) -> Session:
        sid = secrets.token_urlsafe(32)
        session = Session(sid, person, self.sign(f"csrf|{sid}"))
        with self.lock:
            if len(self.sessions) >= self.max_sessions:  # the oldest sign-in goes first
                self.sessions.pop(next(k for k in self.sessions if not k.startswith("bearer:")), None)
            self.sessions[sid] = session
        return session

    def bearer(self, person: Reviewer) -> Session:
        """A program's session: one per person, its CSRF token derived from the name."""
        sid = f"bearer:{person.name}"
        with self.lock:
            if sid not in self.sessions:
                self.sessions[sid] = Session(sid, person, self.sign(f"csrf|{sid}"))
            return self.sessions[sid]

    def of(self, request: Request) -> Session | None:
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            person = self.by_token(auth[7:].strip())
            return self.bearer(person) if person else None
        sid = request.cookies.get(COOKIE)
        return self.sessions.get(sid) if sid and not sid.startswith("bearer:") else None

    def close(self, session: Session) -> None:
        with self.lock:
            self.sessions.pop(session.sid, None)


class DomainCache:
    """What the app reads once per domain: its schema, knowledge base and task records."""

    def __init__(self, graph_of: Callable[[], Graph]) -> None:
        self.graph_of = graph_of
        self.schemas: dict[str, str] = {}
        self.kbs: dict[str, KnowledgeBase] = {}
        self.schema_texts: dict[str, str] = {}
        self.lock = threading.Lock()

    def schema(self, domain: str) -> str:
        if domain not in self.schemas:
            self.schemas[domain] = domain_schema_name(self.graph_of(), domain)
        return self.schemas[domain]

    def schema_text(self, domain: str, wh: Warehouse) -> str:
        """The schema as an agent's system prompt describes it."""
        if domain not in self.schema_texts:
            self.schema_texts[domain] = schema_description(wh, self.schema(domain))
        return self.schema_texts[domain]

    def kb(self, domain: str) -> KnowledgeBase:
        with self.lock:
            if domain not in self.kbs:
                self.kbs[domain] = load_knowledge_base(self.graph_of(), domain)
            return self.kbs[domain]


def _form(body: bytes) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for k, v in parse_qsl(body.decode("utf-8", errors="replace"), keep_blank_values=True, max_num_fields=100):
        out.setdefault(k, []).append(v)
    return out


def _one(form: dict[str, list[str]], name: str, limit: int) -> str:
    value = (form.get(name) or [""])[0]
    if len(value) > limit:
        raise DibenchError(f"form field {name}: at most {limit} characters")
    return value


def _headers(nonce: str) -> dict[str, str]:
    return {
        "Content-Security-Policy": (f"default-src 'none'; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; "
                                    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
        "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store",
        "X-Frame-Options": "DENY",
    }


def html(render: Callable[[str], str], status: int = 200) -> HTMLResponse:
    nonce = secrets.token_urlsafe(16)
    return HTMLResponse(render(nonce), status_code=status, headers=_headers(nonce))


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def install_review(app: FastAPI, cfg: Settings, graph_of: Callable[[], Graph], warehouse_of: Callable[[], Warehouse],
                   options: ReviewOptions | None = None) -> None:
    """Add the review app's routes to `app` (made by service.api.create_app)."""
    opts = options or ReviewOptions(seed=cfg.seed)
    people = People(list(cfg.reviewers))
    cache = DomainCache(graph_of)
    runs: dict[tuple[str, str], PeopleRun] = {}
    tools: dict[tuple[str, str], Toolbox] = {}
    runs_lock = threading.Lock()

    def refuse(exc: DibenchError, who: Session | None) -> HTMLResponse:
        text = without_paths(str(exc), cfg.api_pack_roots)[:500]
        return html(lambda n: message_page(n, who.viewer() if who else None, type(exc).__name__, text),
                    status_of(exc) if not isinstance(exc, ReviewConflict) else 409)

    def guarded(handler: Callable[..., Awaitable[Response]]) -> Callable[..., Awaitable[Response]]:
        @functools.wraps(handler)
        async def run(request: Request, **kw: Any) -> Response:
            who = people.of(request)
            try:
                return await handler(request, **kw)
            except DibenchError as exc:
                return refuse(exc, who)
        return run

    def signed_in(request: Request, *roles: str) -> Session:
        if not cfg.reviewers:
            raise Forbidden("the review app is disabled: no reviewers are configured",
                            hint="set DIBENCH_REVIEWERS on the server")
        who = people.of(request)
        if who is None:
            raise Unauthorized("sign in with your review token first (/review/login)")
        if roles and who.person.role not in roles:
            raise Forbidden(f"a {who.person.role} may not use this page")
        return who

    async def posted(request: Request, who: Session) -> dict[str, list[str]]:
        form = _form(await request.body())
        if not hmac.compare_digest(_one(form, "csrf", 200).encode(), who.csrf.encode()):
            raise CsrfRefused("this form post lacks the page's CSRF token: reload the page and send it again")
        return form

    def queue(domain: str, blind: bool = False) -> list[QueueTask]:
        rows = graph_of().read("review_queue_tasks", domain=domain, variants=["standard"] if blind else None,
                               judge_rejected=opts.judge_rejected and not blind)
        if not rows:
            raise NotFound(f"domain {domain[:80]!r} has no admitted task")
        tasks = [QueueTask(r["key"], str(r["tier"]), str(r["analysis_type"]), int(r["version"])) for r in rows]
        if not blind:
            return build_queue(tasks, opts.sample, opts.seed, review_stratum)
        if opts.sample is not None:
            # A sampled review shows its tasks' gold: the blind queue leaves out every task (any variant
            # of its question) the review sample holds, so a person may do both without knowing answers.
            seen = {question_key(t.key) for t in queue(domain)}
            tasks = [t for t in tasks if question_key(t.key) not in seen] or tasks
        return build_queue(tasks, opts.blind_sample, opts.seed, blind_stratum)

    def reviews(domain: str) -> list[dict[str, Any]]:
        return [{**r["review"], "current_version": r["current_version"]}
                for r in graph_of().read("review_domain_reviews", domain=domain)]

    def people_run(domain: str, who: Session) -> PeopleRun:
        key = (domain, who.person.name)
        with runs_lock:
            if key not in runs:
                order = [t.key for t in queue(domain, blind=True)]
                records = {t.task_id: t for t in load_tasks(graph_of(), domain, variants=["standard"])}
                runs[key] = PeopleRun(cfg.state_dir, domain, who.person.name, [records[k] for k in order if k in records])
            return runs[key]

    def toolbox(domain: str, who: Session, key: str) -> Toolbox:
        with runs_lock:
            tk = (who.person.name, key)
            if tk not in tools:
                schema = cache.schema(domain)
                tools[tk] = Toolbox(warehouse_of().for_schema(schema), cache.kb(domain), schema=schema)
            return tools[tk]

    def elapsed(who: Session, key: str) -> float:
        shown = who.shown.pop(key, None)
        return 0.0 if shown is None else round(min(time.monotonic() - shown, MAX_SECONDS), 1)

    # ------------------------------------------------------------------ sign in and out
    @app.get("/review/login", include_in_schema=False)
    async def login_form(request: Request) -> Response:
        nonce_seed = secrets.token_urlsafe(24)
        response = html(lambda n: login_page(n, people.sign(f"login|{nonce_seed}")))
        response.set_cookie(LOGIN_COOKIE, nonce_seed, httponly=True, samesite="strict", path="/review")
        return response

    @app.post("/review/login", include_in_schema=False)
    async def login(request: Request) -> Response:
        form = _form(await request.body())
        seed = request.cookies.get(LOGIN_COOKIE) or ""
        if not seed or not hmac.compare_digest(_one(form, "csrf", 200).encode(), people.sign(f"login|{seed}").encode()):
            return refuse(CsrfRefused("this sign-in lacks the page's CSRF token: open /review/login again"), None)
        person = people.by_token(_one(form, "token", 200))
        if person is None:
            return html(lambda n: login_page(n, people.sign(f"login|{seed}"), "unknown token"), 401)
        session = people.open(person)
        response = RedirectResponse("/review", status_code=303)
        response.set_cookie(COOKIE, session.sid, httponly=True, samesite="strict", path="/review")
        response.delete_cookie(LOGIN_COOKIE, path="/review")
        return response

    @app.post("/review/logout", include_in_schema=False)
    @guarded
    async def logout(request: Request) -> Response:
        who = signed_in(request)
        await posted(request, who)
        people.close(who)
        response = RedirectResponse("/review/login", status_code=303)
        response.delete_cookie(COOKIE, path="/review")
        return response

    # ------------------------------------------------------------------ queues
    @app.get("/review", include_in_schema=False)
    async def home(request: Request) -> Response:
        if people.of(request) is None:
            return RedirectResponse("/review/login", status_code=303)
        return await _home(request)

    @guarded
    async def _home(request: Request) -> Response:
        who = signed_in(request)
        blind = who.person.role == "baseline"

        def sizes() -> list[dict[str, Any]]:  # the length of the queue this person works on
            return [{**d, "tasks": len(queue(str(d["domain"]), blind=blind))}
                    for d in graph_of().read("review_domains")]

        domains = await run_sync(sizes)
        return html(lambda n: home_page(n, who.viewer(), domains))

    @app.get("/review/{domain}", include_in_schema=False)
    @guarded
    async def queue_view(request: Request, domain: str) -> Response:
        who = signed_in(request, "reviewer", "reader")

        def work() -> tuple[list[dict[str, Any]], str | None]:
            items = queue(domain)
            mine = [r for r in reviews(domain) if r["reviewer"] == who.person.name]
            done = reviewed_versions(mine, who.person.name)
            rows = []
            for i, t in enumerate(items, start=1):
                state = ("reviewed" if done.get(t.key) == t.version else
                         "older version reviewed" if t.key in done else "")
                rows.append({"n": i, "key": t.key, "tier": t.tier, "analysis_type": t.analysis_type,
                             "version": t.version, "state": state})
            return rows, next_key(items, done)

        rows, nxt = await run_sync(work)
        return html(lambda n: queue_page(n, who.viewer(), domain, rows, nxt, opts.sample, opts.judge_rejected))

    @app.get("/review/{domain}/next", include_in_schema=False)
    @guarded
    async def next_task(request: Request, domain: str) -> Response:
        who = signed_in(request, "reviewer")
        items = await run_sync(queue, domain)
        done = reviewed_versions(await run_sync(reviews, domain), who.person.name)
        key = next_key(items, done, request.query_params.get("after"))
        if key is None:
            return RedirectResponse(f"/review/{q(domain)}", status_code=303)
        return RedirectResponse(f"/review/{q(domain)}/task?key={q(key)}", status_code=303)

    @app.get("/review/{domain}/task", include_in_schema=False)
    @guarded
    async def task_view(request: Request, domain: str) -> Response:
        who = signed_in(request, "reviewer", "reader")
        key = request.query_params.get("key", "")[:300]
        private = who.person.role == "reviewer"

        def work() -> Response:
            items = queue(domain)
            keys = [t.key for t in items]
            if key not in keys:
                raise NotFound(f"task {key[:120]!r} is not in the review queue of {domain[:80]!r}")
            g = graph_of()
            evidence = (task_evidence(g, warehouse_of(), key, schema=cache.schema(domain), bodies=rule_bodies(g, domain))
                        if private else public_evidence(g, key))
            mine = [r for r in reviews(domain) if r["reviewer"] == who.person.name and r["task_key"] == key]
            current = next((r for r in mine if int(r["task_version"]) == evidence.version), None)
            older = [r for r in mine if int(r["task_version"]) != evidence.version]
            who.shown.setdefault(key, time.monotonic())
            position = f"{keys.index(key) + 1} of {len(keys)}"
            return html(lambda n: task_page(n, who.viewer(), evidence, private=private, position=position,
                                            previous=current, older=older))

        return await run_sync(work)

    @app.post("/review/{domain}/task", include_in_schema=False)
    @guarded
    async def save_review(request: Request, domain: str) -> Response:
        who = signed_in(request, "reviewer", "reader")
        form = await posted(request, who)
        if who.person.role != "reviewer":
            raise Forbidden("a reader's token saves nothing")
        key = _one(form, "key", 300)
        try:
            version = int(_one(form, "version", 12))
        except ValueError:
            raise DibenchError("form field version: not a number") from None
        passed = set(form.get("pass") or [])
        unknown = passed - set(JUDGE_DIMENSIONS)
        if unknown:
            raise DibenchError(f"form field pass: unknown dimension {sorted(unknown)[0][:40]!r}")
        failed = [d for d in JUDGE_DIMENSIONS if d not in passed]
        props = {"key": f"review:{key}@v{version}/{who.person.name}", "domain": domain, "task_key": key,
                 "task_version": version, "reviewer": who.person.name, "failed": failed, "passed": not failed,
                 "note": _one(form, "note", MAX_NOTE), "seconds": elapsed(who, key), "at": now_iso(),
                 "mode": "review"}

        def work() -> list[dict[str, Any]]:
            if key not in {t.key for t in queue(domain)}:
                raise NotFound(f"task {key[:120]!r} is not in the review queue of {domain[:80]!r}")
            return graph_of().write_returning("review_save", key=props["key"], task_key=key, task_version=version,
                                              props=props)

        if not await run_sync(work):
            raise ReviewConflict("this task has a newer version than the page you judged: open it again")
        return RedirectResponse(f"/review/{q(domain)}/next?after={q(key)}", status_code=303)

    @app.get("/review/{domain}/stats", include_in_schema=False)
    @guarded
    async def stats_view(request: Request, domain: str) -> Response:
        who = signed_in(request, "reviewer", "reader")
        stats = await run_sync(review_stats, graph_of(), domain)
        return html(lambda n: stats_page(n, who.viewer(), stats))

    # ------------------------------------------------------------------ blind mode
    def blind_task(domain: str, who: Session, key: str) -> TaskRecord:
        run = people_run(domain, who)
        task = next((t for t in run.tasks if t.task_id == key), None)
        if task is None:
            raise NotFound(f"task {key[:120]!r} is not in the blind queue of {domain[:80]!r}")
        return task

    def render_blind(domain: str, who: Session, task: TaskRecord, **kw: Any) -> HTMLResponse:
        run = people_run(domain, who)
        keys = [t.task_id for t in run.tasks]
        position = f"{keys.index(task.task_id) + 1} of {len(keys)}; {len(run.answered())} answered"
        who.shown.setdefault(f"blind|{task.task_id}", time.monotonic())
        schema = cache.schema_text(domain, warehouse_of())
        return html(lambda n: blind_page(n, who.viewer(), domain, public_view(task), position=position,
                                         schema=schema, **kw))

    @app.get("/review/{domain}/blind", include_in_schema=False)
    @guarded
    async def blind_next(request: Request, domain: str) -> Response:
        who = signed_in(request, "baseline")
        run = await run_sync(people_run, domain, who)
        left = [t for t in run.tasks if t.task_id not in run.answered()]
        if not left:
            return html(lambda n: message_page(n, who.viewer(), "All answered",
                                               f"You answered all {len(run.tasks)} tasks of this queue. Thank you."))
        return RedirectResponse(f"/review/{q(domain)}/blind/task?key={q(left[0].task_id)}", status_code=303)

    @app.get("/review/{domain}/blind/task", include_in_schema=False)
    @guarded
    async def blind_view(request: Request, domain: str) -> Response:
        who = signed_in(request, "baseline")
        key = request.query_params.get("key", "")[:300]
        search = request.query_params.get("q", "")[:500]
        doc_id = request.query_params.get("doc", "")[:300]

        def work() -> Response:
            task = blind_task(domain, who, key)
            box = toolbox(domain, who, key)
            hits = [excerpt(x) for x in box.search(search, 5)] if search.strip() else []
            doc = box.read(doc_id) if doc_id else None
            shown = {"doc_id": doc.doc_id, "title": doc.title, "text": doc.text} if doc else None
            return render_blind(domain, who, task, search=search, hits=hits, document=shown)

        return await run_sync(work)

    @app.post("/review/{domain}/blind/sql", include_in_schema=False)
    @guarded
    async def blind_sql(request: Request, domain: str) -> Response:
        who = signed_in(request, "baseline")
        form = await posted(request, who)
        key, sql = _one(form, "key", 300), _one(form, "sql", MAX_SQL)

        def work() -> Response:
            task = blind_task(domain, who, key)
            reply = toolbox(domain, who, key).sql_tool({"sql": sql})
            return render_blind(domain, who, task, sql=sql, sql_reply=_readable(reply))

        return await run_sync(work)

    @app.post("/review/{domain}/blind/answer", include_in_schema=False)
    @guarded
    async def blind_answer(request: Request, domain: str) -> Response:
        who = signed_in(request, "baseline")
        form = await posted(request, who)
        key, text = _one(form, "key", 300), _one(form, "answer", MAX_ANSWER)

        def work() -> Response:
            task = blind_task(domain, who, key)
            try:
                answer = json.loads(text)
            except json.JSONDecodeError as exc:
                return render_blind(domain, who, task, answer=text,
                                    problem=f"the answer is not JSON ({exc.msg} at character {exc.pos}): fix it")
            people_run(domain, who).record(task, answer, toolbox(domain, who, key),
                                           elapsed(who, f"blind|{key}"))
            return RedirectResponse(f"/review/{q(domain)}/blind", status_code=303)

        return await run_sync(work)


def _readable(reply: str) -> str:
    """The SQL tool's JSON reply, indented for a person (an error line stays as it is)."""
    try:
        return json.dumps(json.loads(reply), indent=1, default=str)
    except json.JSONDecodeError:
        return reply
