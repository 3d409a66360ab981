"""The HTTP API (FastAPI) over the same library functions as the CLI. OpenAPI docs at /docs.

Authentication happens in `Gate`, an ASGI layer that answers before any route or body parser
runs: write endpoints need `Authorization: Bearer <Settings.api_token>` (disabled, 403, with no
token configured); reads are open when only the write token is configured, need the read (or
write) token when `Settings.api_read_token` is set, and with NO token configured every route but
/health is refused unless the app was created with `insecure_local` (`dibench serve
--insecure-local`, loopback only: core.loopback). The same layer bounds request bodies (413, on Content-Length
and while streaming). 422 bodies name the field and the problem, never the input.
DibenchError subclasses become HTTP status codes here, and only here.
"""
from __future__ import annotations

import asyncio
import hmac
import json
import re
import socket
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anyio import CapacityLimiter, from_thread
from anyio.to_thread import run_sync
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import AliasChoices, BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware

from dibench.core.config import REPO_ROOT, Settings, get_settings
from dibench.core.errors import (
    ConfigError, DibenchError, ExtractionError, GraphError, NotFound, PackError, PackErrors, ReadOnlyViolation,
    ServiceError, WarehouseError,
)
from dibench.core.loopback import local_host_names
from dibench.core.pack import DOMAINS_DIR
from dibench.core.visibility import public_edge_view, public_view
from dibench.service import library
from dibench.service.api_docs import OPEN_PATHS, install_docs
from dibench.service.drift import latest_check, run_drift
from dibench.service.export import ExportError, public_filter, public_record
from dibench.service.impact import impact
from dibench.service.queries import graph_stats, rules_for, tasks_for_rules
from dibench.service.update import UpdateConflict, load_document, plan_update
from dibench.service.update_write import run_update
from dibench.sqlops.transpile import parse_dialects
from dibench.stores.cypher_guard import CypherRefused
from dibench.stores.graph import Graph, get_graph
from dibench.stores.llm import configured_model
from dibench.stores.warehouse import get_warehouse

STATUS: tuple[tuple[type[DibenchError], int], ...] = (
    (NotFound, 404), (CypherRefused, 400), (ReadOnlyViolation, 400), (PackErrors, 422), (PackError, 422),
    (ExtractionError, 422), (ServiceError, 503), (ConfigError, 500), (GraphError, 502), (WarehouseError, 502),
)


MAX_BODY_BYTES = 1 << 20
MAX_CYPHER_CHARS = 20_000
MAX_OFFSET = 1_000_000_000
MAX_422_ERRORS = 10
# Blocking rules-for calls at a time: more threads than the machine has cores only queue on the
# GIL and on Neo4j's own workers, and stretch the tail (bench/api_load_bench.py).
RULES_POOL = 8
# A rules-for answer is served from the cache when confirmed current this recently (RulesCache):
# under load, waiting on Neo4j for every call queues the calls behind it (bench/api_load_bench.py).
RULES_CACHE_S = 1.0
RULES_CHECK_S = 0.1
RULES_CACHE_SIZE = 10_000
WRITE_ROUTES = frozenset({("POST", "/rules/update")})
OPEN_ROUTES = frozenset({"/health"}) | OPEN_PATHS
# The review app's routes (service/review.py) authenticate their people themselves (reviewer
# tokens and sessions, not the API's tokens): the Gate still bounds their bodies.
SELF_AUTHENTICATED = "/review"
LOCAL_HOSTS = ("localhost", "127.0.0.1")
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})
TASK_QUERY = frozenset({"domain", "analysis_type", "tier", "status", "rule", "metric", "review", "offset", "limit"})
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class Unauthorized(DibenchError):
    """A request without the valid bearer token an endpoint needs: 401."""


class Forbidden(DibenchError):
    """A request to an endpoint the server's configuration disables: 403."""


class InsufficientScope(Forbidden):
    """A valid token that does not grant the endpoint (a read token on a write route): 403."""


def status_of(exc: DibenchError) -> int:

    if isinstance(exc, Unauthorized):
        return 401
    if isinstance(exc, Forbidden):
        return 403
    if isinstance(exc, UpdateConflict):
        return 409
    if isinstance(exc, ExportError):
        return 400
    for cls, code in STATUS:
        if isinstance(exc, cls):
            return code
    return 400


class RuleUpdateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pack: str = Field(max_length=500, description="pack of the rule: a built-in domain name or a pack folder "
                                                   "under one of the server's pack roots (Settings.api_pack_roots)")
    document: str = Field(min_length=10, max_length=MAX_BODY_BYTES,
                          description="the whole rule document: YAML front matter and Markdown body")
    file_name: str = Field("rule.md", pattern=r"^[A-Za-z0-9_.\-]+\.md$", description="the document's file name")
    regenerate: bool = False
    dry_run: bool = False


class ExportRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cypher: str | None = Field(None, max_length=MAX_CYPHER_CHARS,
                               description="view private only: read-only Cypher selecting tasks (RETURN t.key AS key)")
    preset: str | None = Field(None, max_length=40, description="domain | analysis_type | tier | rule | metric | status")
    params: dict[str, Any] = Field(default_factory=dict)
    filter: dict[str, Any] | None = Field(None, description="select by public fields: {field: value or [values]}; "
                                                             "fields domain, analysis_type, tier, variant, status, "
                                                             "answer_format, version, key, metric, rule, review (unreviewed, "
                                                             "passed, failed)")
    domain: str | None = Field(None, max_length=200,
                               description="the one domain exported (required when the graph holds several)")
    # The CLI's word (--audience); `view`, the older name, is still read.
    audience: str = Field("public", pattern="^(public|private)$", validation_alias=AliasChoices("audience", "view"),
                          description="public, or private (gold, SQL), which needs the write token; "
                                      "`view` is the older name")
    dialects: list[str] = Field(default_factory=list, max_length=8,
                                description="private view: gold SQL also in these dialects (duckdb, snowflake, ...)")


def _bearer(headers: list[tuple[bytes, bytes]]) -> str | None:
    for name, value in headers:
        if name.lower() == b"authorization":
            auth = value.decode("latin-1")
            return auth[7:].strip() if auth.lower().startswith("bearer ") else None
    return None


def _matches(given: str | None, *expected: str | None) -> bool:
    return given is not None and any(e and hmac.compare_digest(given, e) for e in expected)


def access_level(cfg: Settings, token: str | None) -> str:
    """What a bearer token grants: `write`, `read` or `anonymous`."""
    if _matches(token, cfg.api_token):
        return "write"
    return "read" if _matches(token, cfg.api_read_token) else "anonymous"


def refusal(cfg: Settings, insecure_local: bool, level: str, need: str) -> Unauthorized | Forbidden | None:
    """Why a request with `level` may not reach a route that needs `need`, or None."""
    if need == "open":
        return None
    if not (cfg.api_token or cfg.api_read_token or insecure_local):
        return Forbidden("this API is disabled: no API token is configured",
                         hint="set DIBENCH_API_TOKEN / DIBENCH_API_READ_TOKEN, or run `dibench serve --insecure-local`")
    if need == "write":
        if not cfg.api_token:
            return Forbidden("write endpoints are disabled: no API token is configured",
                             hint="set DIBENCH_API_TOKEN on the server to enable them")
        if level == "read":
            return InsufficientScope("the read token does not grant write endpoints",
                                     hint="send the write token (DIBENCH_API_TOKEN)")
        if level != "write":
            return Unauthorized("a valid bearer token is required for write endpoints",
                             hint="send Authorization: Bearer <token>")
        return None
    if cfg.api_read_token and level == "anonymous":
        return Unauthorized("this server requires a bearer token for reads", hint="send Authorization: Bearer <token>")
    return None


def need_write(request: Request, what: str) -> None:
    """Refuse a request without the write token: 403 for the read token (valid, not enough), else 401."""
    level = getattr(request.state, "access", "anonymous")
    if level == "write":
        return
    cls: type[DibenchError] = InsufficientScope if level == "read" else Unauthorized
    raise cls(f"{what} needs the write token", hint="send Authorization: Bearer <write token>")


# An absolute path of two components or more, where a path starts: after a space, a quote, `(`,
# `=` or at the start of the text.
_ABSOLUTE_PATH = re.compile(r"(?:(?<=^)|(?<=[\s'\"(=]))/(?:[^\s:'\"(),;/]+/)+([^\s:'\"(),;/]*)")


def without_paths(text: str, roots: Sequence[Path] = ()) -> str:
    """`text` with no server path in it: a path under one of `roots` (pack roots, the repository)
    becomes relative to that root's parent (`demo/rules/x.md`), any other absolute path its
    last part (`rule.md`), so an error still names the file at fault."""
    for root in sorted({str(r.resolve()) for r in roots} | {str(REPO_ROOT)}, key=len, reverse=True):
        text = text.replace(root.rstrip("/") + "/", Path(root).name + "/" if root != str(REPO_ROOT) else "")
    return _ABSOLUTE_PATH.sub(lambda m: m.group(1) or "/", text)


def _error_body(exc: DibenchError, roots: Sequence[Path] = ()) -> dict[str, Any]:
    body = {"error": type(exc).__name__, "detail": without_paths(str(exc), roots)[:500]}
    if exc.hint:
        body["hint"] = without_paths(exc.hint, roots)
    return body


class Gate:
    """ASGI layer in front of every route: access first, then a bounded body. It runs before
    FastAPI reads or parses anything, so an unauthenticated 400 MB or malformed body costs one
    header check, and an authenticated one at most `max_body` bytes."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], cfg: Settings, insecure_local: bool,
                 max_body: int = MAX_BODY_BYTES) -> None:
        self.app, self.cfg, self.insecure_local, self.max_body = app, cfg, insecure_local, max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        level = access_level(self.cfg, _bearer(scope.get("headers") or []))
        path, method = scope.get("path", ""), scope.get("method", "GET")
        own = path == SELF_AUTHENTICATED or path.startswith(SELF_AUTHENTICATED + "/")
        need = "open" if path in OPEN_ROUTES or own else "write" if (method, path) in WRITE_ROUTES else "read"
        refused = refusal(self.cfg, self.insecure_local, level, need)
        if refused is not None:
            await _send_json(send, status_of(refused), _error_body(refused))
            return
        length = _content_length(scope.get("headers") or [])
        if length is not None and length > self.max_body:
            await _send_json(send, 413, {"error": "PayloadTooLarge",
                                         "detail": f"request body over {self.max_body} bytes"})
            return
        scope.setdefault("state", {})["access"] = level
        await self.app(scope, self._bounded(receive), send)

    def _bounded(self, receive: Receive) -> Receive:
        seen = 0

        async def bounded() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_body:
                # FastAPI re-raises HTTPException from body reading: the client gets a 413.
                raise HTTPException(413, f"request body over {self.max_body} bytes")
            return message

        return bounded


def _content_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    for name, value in headers:
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    if status == 401:  # RFC 9110: a 401 names the scheme that would authenticate
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def bounded_422(exc: RequestValidationError) -> dict[str, Any]:
    """Field path and message of the first errors, never the input (which can be megabytes) nor
    a server path."""
    errors = list(exc.errors())
    shown = [{"loc": ".".join(str(p) for p in e.get("loc", ()))[:200],
              "msg": without_paths(str(e.get("msg", "")))[:200]} for e in errors[:MAX_422_ERRORS]]
    return {"error": "RequestValidationError", "detail": shown, "errors": len(errors)}


@contextmanager
def as_in_pack(path: Path) -> Iterator[Path]:
    """A rule document sent in a request is written to `path` (a temp folder) to be read like any
    other; its problems name it as `domain validate` would in the pack, `rules/<file name>`."""
    try:
        yield path
    except PackErrors as exc:
        shown = f"rules/{path.name}"
        raise PackErrors([PackError(shown, e.field, e.problem) if Path(e.file).resolve() == path.resolve() else e
                          for e in exc.errors]) from None


class PackOutsideRoots(DibenchError):
    """A `pack` the HTTP API refuses to read: outside the configured pack roots."""


def pack_under_roots(pack: str, roots: list[Path]) -> str:
    """`pack` when it is a built-in domain name or a folder under one of `roots` (symlinks
    resolved); otherwise a one-line PackError (400)."""

    if "/" not in pack and "\\" not in pack and pack not in ("", ".", "..") and (DOMAINS_DIR / pack).is_dir():
        return pack
    real = Path(pack).resolve()
    if any(real == r.resolve() or r.resolve() in real.parents for r in roots):
        return str(real)
    raise PackOutsideRoots("pack: not a built-in domain and not under the server's pack roots",
                           hint="use a pack under Settings.api_pack_roots (DIBENCH_API_PACK_ROOTS)")


class RulesCache:
    """rules-for answers per (metric, domain, tasks) as JSON bytes, kept while the graph has not
    changed, and never computed on a request's time when a usable answer exists.

    Each answer remembers the graph's clock (`Graph.clock`, Neo4j's transaction-log position)
    read just before it was computed, and when it was last *confirmed*: known to match the graph.
    At most every `check_s`, a request starts a clock read in the background; answers whose clock
    equals it are confirmed, the others are recomputed in the background. A request is answered
    from an answer confirmed within `max_age_s`, without waiting on Neo4j; only a key never seen,
    or one unconfirmed for longer (Neo4j slow or down), waits for its computation, which
    concurrent requests for the same key share. So an answer reflects every write committed
    `max_age_s` earlier, and any answer this app's own write route changed (`clear`). Bytes, so a
    hit costs no validation or encoding. `max_age_s` 0: no cache. Bounded (cleared when full).

    Runs on the app's event loop only: no locks; blocking Neo4j calls go to `limiter`'s threads."""

    def __init__(self, compute: Callable[[tuple[Any, ...]], list[dict[str, Any]]], clock: Callable[[], str],
                 limiter: CapacityLimiter, max_age_s: float, check_s: float = RULES_CHECK_S,
                 size: int = RULES_CACHE_SIZE) -> None:
        self.compute, self.clock, self.limiter = compute, clock, limiter
        self.max_age_s, self.check_s, self.size = max_age_s, check_s, size
        self.entries: dict[tuple[Any, ...], _Answer] = {}
        self.pending: dict[tuple[Any, ...], asyncio.Task[bytes]] = {}
        self.checking: asyncio.Task[None] | None = None
        self.last_check = float("-inf")
        self.generation = 0

    async def get(self, key: tuple[Any, ...]) -> bytes:
        if self.max_age_s <= 0:
            return _encode(await run_sync(self.compute, key, limiter=self.limiter))
        now = time.monotonic()
        if self.checking is None and now - self.last_check >= self.check_s:
            self.last_check = now
            self.checking = asyncio.create_task(self._check())
        answer = self.entries.get(key)
        if answer is not None and now - answer.confirmed <= self.max_age_s:
            answer.used = now
            return answer.data
        return await asyncio.shield(self._refresh(key))

    def clear(self) -> None:
        """Forget every answer, including those being computed now (after this app's own write)."""
        self.generation += 1
        self.entries.clear()

    async def _check(self) -> None:
        started = time.monotonic()
        try:
            clock = await run_sync(self.clock, limiter=self.limiter)
        except DibenchError:
            # Nothing is confirmed: answers age past max_age_s, and the requests that then
            # compute their own answer report the error.
            return
        finally:
            self.checking = None
        for key, answer in list(self.entries.items()):
            if answer.clock == clock:
                answer.confirmed = started
            elif started - answer.used <= self.max_age_s:
                self._refresh(key).add_done_callback(_retrieve)
            else:  # not asked for lately: not worth a computation now
                del self.entries[key]

    def _refresh(self, key: tuple[Any, ...]) -> asyncio.Task[bytes]:
        task = self.pending.get(key)
        if task is None:
            task = self.pending[key] = asyncio.create_task(self._recompute(key))
        return task

    async def _recompute(self, key: tuple[Any, ...]) -> bytes:
        try:
            started, generation = time.monotonic(), self.generation
            clock, rows = await run_sync(lambda: (self.clock(), self.compute(key)), limiter=self.limiter)
            data = _encode(rows)
            if generation == self.generation:
                if len(self.entries) >= self.size:
                    self.entries.clear()
                self.entries[key] = _Answer(data, clock, started, started)
            return data
        finally:
            self.pending.pop(key, None)


@dataclass
class _Answer:
    data: bytes
    clock: str
    confirmed: float
    used: float


def _encode(rows: list[dict[str, Any]]) -> bytes:
    return json.dumps(rows, default=str).encode()


def _retrieve(task: asyncio.Task[bytes]) -> None:
    """A background refresh's failure is not lost: the next request for its key, once the old
    answer is too old, computes again and reports the error. Retrieved here so asyncio does not
    log it as never retrieved."""
    if not task.cancelled():
        task.exception()


def trusted_hosts(cfg: Settings, host: str) -> list[str]:
    """The Host header names the app answers: the address it is bound to (for a wildcard address,
    this machine's names), localhost names and Settings.api_allowed_hosts. Anything else is
    refused, so a page that points a name of its own at this server (DNS rebinding) reads nothing."""
    bound = [socket.gethostname(), socket.getfqdn()] if host in WILDCARD_HOSTS else local_host_names(host)
    return sorted({*bound, *LOCAL_HOSTS, *cfg.api_allowed_hosts} - {""})


def create_app(settings: Settings | None = None, graph_factory: Callable[[], Graph] | None = None,
               insecure_local: bool = False, rules_route: str = "async",
               rules_cache_s: float = RULES_CACHE_S, host: str = "127.0.0.1") -> FastAPI:
    """`host`: the address the server is bound to (its Host header check, `trusted_hosts`);
    `rules_route`: `async` (default) or `sync`, the old path, kept for bench/api_load_bench.py;
    `rules_cache_s`: how long an async rules-for answer is reused (0: never)."""
    cfg = settings or get_settings()
    limiter = CapacityLimiter(RULES_POOL)
    graph_of = graph_factory or get_graph
    app = FastAPI(title="dibench", version="0.1.0", docs_url=None, redoc_url=None,
                  description="Verifiable benchmarks for enterprise data agents: the knowledge service.")
    install_docs(app, OPEN_ROUTES)
    app.add_middleware(Gate, cfg=cfg, insecure_local=insecure_local)
    # Added last, so it runs first: a foreign Host is refused before anything else looks at it.
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=trusted_hosts(cfg, host))

    @app.exception_handler(DibenchError)
    async def _dibench_error(_: Request, exc: DibenchError) -> JSONResponse:
        status = status_of(exc)
        return JSONResponse(status_code=status, content=_error_body(exc, cfg.api_pack_roots),
                            headers={"WWW-Authenticate": "Bearer"} if status == 401 else None)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(status_code=422, content=bounded_422(exc))

    @app.get("/health", summary="Liveness, and whether Neo4j answers")
    def health() -> dict[str, Any]:
        try:
            graph_of().read("export_clock")
            return {"status": "ok", "graph": "up"}
        except DibenchError:
            return {"status": "degraded", "graph": "down"}

    @app.get("/graph/stats", summary="Node and edge counts by type")
    def stats(domain: str | None = None) -> dict[str, Any]:

        return graph_stats(graph_of(), domain)

    def metric_rules(metric_id: str, domain: str | None, tasks: bool) -> list[dict[str, Any]]:

        rows = rules_for(graph_of(), metric_id, domain)
        if tasks:
            found = tasks_for_rules(graph_of(), metric_id, domain, [r["rule_id"] for r in rows])
            for r in rows:
                r["tasks"] = found.get(r["rule_id"], [])
        return rows

    cache = RulesCache(lambda key: metric_rules(*key), lambda: graph_of().clock(), limiter, rules_cache_s)
    rules_path, rules_summary = "/metrics/{metric_id}/rules", "Rules affecting a metric"
    if rules_route == "sync":
        @app.get(rules_path, summary=rules_summary)
        def metric_rules_sync(metric_id: str, domain: str | None = None, tasks: bool = False) -> list[dict[str, Any]]:
            return metric_rules(metric_id, domain, tasks)
    else:
        @app.get(rules_path, summary=rules_summary, response_class=Response,
                 responses={200: {"content": {"application/json": {}}, "description": "the rules, as JSON"}})
        async def metric_rules_async(metric_id: str, domain: str | None = None, tasks: bool = False) -> Response:
            return Response(await cache.get((metric_id, domain, tasks)), media_type="application/json")

    @app.get("/rules/{rule_id}/impact", summary="What a rule affects")
    def rule_impact(rule_id: str, domain: str | None = None) -> dict[str, Any]:

        return impact(graph_of(), rule_id, domain)

    @app.get("/tasks", summary="Admitted tasks (or of the status asked) with filters over public fields, paginated")
    def tasks(request: Request, domain: str | None = None, analysis_type: str | None = None, tier: str | None = None,
              status: str | None = None, rule: str | None = None, metric: str | None = None,
              review: str | None = None, offset: int = Query(0, ge=0, le=MAX_OFFSET),
              limit: int = Query(50, ge=1, le=500)) -> dict[str, Any]:

        unknown = sorted(set(request.query_params) - TASK_QUERY)
        if unknown:  # never ignored: a filter on a private field must not look like it worked
            raise ExportError(f"unknown query parameter {unknown[0][:60]!r}; /tasks filters on "
                              f"{', '.join(sorted(TASK_QUERY - {'offset', 'limit'}))}")
        g = graph_of()
        given = dict(domain=domain, analysis_type=analysis_type, tier=tier, status=status, rule=rule, metric=metric,
                     review=review)
        # Admitted tasks unless a status is asked for (status=rejected lists the rejected candidates).
        selection = public_filter({k: v for k, v in given.items() if v is not None})
        keys = [r["key"] for r in g.read("export_filter", **selection.params())]
        page = sorted(keys)[offset:offset + limit]
        rows = g.read("export_tasks_public", keys=page, domain=None) if page else []
        return {"total": len(keys), "offset": offset, "limit": limit, "tasks": [public_record(r["task"]) for r in rows]}

    @app.post("/rules/update", summary="Update one rule document (write token)")
    def rules_update(req: RuleUpdateRequest) -> dict[str, Any]:

        pack = pack_under_roots(req.pack, list(cfg.api_pack_roots))
        g = graph_of()
        with tempfile.TemporaryDirectory() as tmp, as_in_pack(Path(tmp) / "rules" / req.file_name) as path:
            path.parent.mkdir()
            path.write_text(req.document)
            pk, doc = load_document(path, pack)
            plan_fn = lambda: plan_update(pk, doc, g, get_warehouse(), configured_model(),  # noqa: E731
                                          regenerate=req.regenerate)
            plan = plan_fn() if req.dry_run else run_update(plan_fn, g, pk.name)[0]
        if not req.dry_run:
            from_thread.run_sync(cache.clear)  # on the event loop, which owns the cache
        log = plan.changelog()
        log["written"] = log["written"] and not req.dry_run
        return log

    @app.post("/export", summary="Stream the tasks a read-only query selects from one domain",
              response_class=StreamingResponse)
    def export_stream(req: ExportRequest, request: Request) -> StreamingResponse:

        if req.audience == "private":
            need_write(request, "the private view (gold answers, SQL)")
        dialects = parse_dialects(",".join(req.dialects)) if req.dialects else []
        lines: Iterator[str] = iter(list(library.export_lines(  # materialised, so errors come first
            cypher=req.cypher, preset=req.preset, params=req.params, filters=req.filter, domain=req.domain,
            audience=req.audience, dialects=dialects, graph=graph_of())))
        return StreamingResponse(lines, media_type="application/x-ndjson")

    @app.get("/domains/{domain}/drift",
             summary="The latest drift check of a domain (outcome counts and per-task outcomes, no answers)")
    def drift_latest(domain: str) -> dict[str, Any]:

        check = latest_check(graph_of(), domain)
        tasks = [{"key": t["key"], **public_edge_view("CHECKED", t)} for t in check.pop("tasks")]
        return {**public_view("DriftCheck", check), "tasks": tasks}

    @app.post("/domains/{domain}/drift",
              summary="Run a drift check now (apply=true versions drifted tasks; write token); returns the changelog")
    def drift_run(domain: str, request: Request, apply: bool = False) -> dict[str, Any]:
        need_write(request, "running a drift check")

        return run_drift(graph_of(), get_warehouse(), domain, apply=apply).changelog()

    return app
