"""The task environment as a Model Context Protocol server (the official `mcp` SDK's FastMCP).

Tools (each a thin call of `evaluation.environment.TaskEnvironment`, itself the harness's
`Toolbox`): list_tasks, get_task, describe_schema, sql_query, search_knowledge, read_document,
submit_answer. Refusals and SQL errors come back as the tool's text (`error: ...`), as the
built-in agent sees them. Transports: stdio, and streamable HTTP (`/mcp`) on loopback by default;
on any other address a bearer token is required (checked before the request reaches the SDK),
and on loopback it is checked when one is set. Tool calls run in worker threads, so several
agents can use one server at once.
"""
from __future__ import annotations

import hmac
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import uvicorn

from dibench.core.errors import ConfigError
from dibench.core.loopback import host_header, is_loopback, local_host_names

try:
    from mcp.server.fastmcp import Context, FastMCP
    from mcp.server.transport_security import TransportSecuritySettings
except ImportError as exc:  # the `mcp` extra
    raise ConfigError("the MCP server needs the official MCP SDK", hint="pip install 'dibench[mcp]'") from exc
from dibench.evaluation.tool_contract import TaskStatus, ToolRefused, sql_tool_text

if TYPE_CHECKING:  # the environment and what it imports load with the session, not the server
    from dibench.evaluation.environment import TaskEnvironment

INSTRUCTIONS = ("A benchmark of business questions about one company's data. list_tasks or get_task gives a "
                "task's question and answer format; describe_schema the database; sql_query runs read-only SQL; "
                "search_knowledge and read_document find the metric definitions and the company policies that "
                "change how figures are computed; submit_answer records your answer (once; it ends the task). "
                "Each call but describe_schema counts as one turn of its task. progress says how far the run is, "
                "and gives the score once every task is answered.")
TOOL_NAMES = ("list_tasks", "progress", "get_task", "describe_schema", "sql_query", "search_knowledge",
              "read_document", "submit_answer")


def caller(ctx: Context) -> str | None:  # type: ignore[type-arg]
    """The bearer token of the HTTP request behind a tool call (None over stdio)."""
    request = ctx.request_context.request
    if request is None:
        return None
    header = str(request.headers.get("authorization", ""))
    return header[7:] if header.startswith("Bearer ") else None


async def _threaded(fn: Callable[[], Any]) -> Any:
    try:
        return await anyio.to_thread.run_sync(fn)
    except ToolRefused as exc:
        return f"error: {exc}"


PAGE, MAX_PAGE = 50, 100  # tasks per list_tasks reply: a run of hundreds of tasks is never one reply


def build_server(env: TaskEnvironment, *, engine: str | None = None, host: str = "127.0.0.1",
                 port: int = 0) -> FastMCP:
    """The MCP server of `env`; `engine` names the warehouse's engine in the SQL tools' descriptions
    (default: `env`'s, which a stand-in for an unopened session cannot say)."""
    security = loopback_security(host) if is_loopback(host) else \
        TransportSecuritySettings(enable_dns_rebinding_protection=False)
    mcp = FastMCP("dibench", instructions=INSTRUCTIONS, host=host, port=port, transport_security=security,
                  log_level="WARNING")
    mcp._mcp_server.version = version("dibench")  # the server reports dibench's version, not the MCP library's

    @mcp.tool()
    async def list_tasks(ctx: Context, offset: int = 0, limit: int = PAGE,  # type: ignore[type-arg]
                         status: TaskStatus | None = None, analysis_type: str | None = None,
                         variant: str | None = None) -> dict[str, Any]:
        """The tasks of this run open to you (task_id, question, answer_format), one page at a time:
        `offset`/`limit` (at most 100), filtered by status (open or answered), analysis_type
        (e.g. trend, ranking) or variant (standard, oracle, no_rule). `next_offset` is null on the
        last page."""
        who = caller(ctx)
        filters: dict[str, Any] = {"status": status, "analysis_type": analysis_type, "variant": variant}
        size = max(1, min(limit, MAX_PAGE))
        page = await _threaded(lambda: env.list_tasks(who, offset=max(offset, 0), limit=size, **filters))
        total = await _threaded(lambda: env.count_tasks(who, **filters))
        after = max(offset, 0) + len(page)
        return {"tasks": list(page), "total": total, "next_offset": after if after < total else None}

    @mcp.tool()
    async def progress(ctx: Context) -> dict[str, Any]:  # type: ignore[type-arg]
        """How far this run is: tasks, answered, open; and the score once every task is answered."""
        who = caller(ctx)
        return await _threaded(lambda: env.progress(who))  # type: ignore[no-any-return]

    @mcp.tool()
    async def get_task(task_id: str, ctx: Context) -> dict[str, str] | str:  # type: ignore[type-arg]
        """One task: its question and the JSON shape its answer must have."""
        who = caller(ctx)
        return await _threaded(lambda: env.get_task(task_id, who))  # type: ignore[no-any-return]

    engine = engine or env.wh.display_name  # the warehouse's engine, from the engine seam

    @mcp.tool(description=f"The database: tables, typed columns, primary and foreign keys ({engine}).")
    async def describe_schema() -> str:
        return str(await _threaded(lambda: env.describe_schema()))

    @mcp.tool(description=sql_tool_text(engine))
    async def sql_query(task_id: str, sql: str, ctx: Context, params: dict[str, Any] | None = None) -> str:  # type: ignore[type-arg]
        who = caller(ctx)
        return str(await _threaded(lambda: env.sql_query(task_id, sql, params, who)))

    @mcp.tool()
    async def search_knowledge(task_id: str, query: str, ctx: Context, k: int = 5,  # type: ignore[type-arg]
                               kind: str | None = None) -> str:
        """Search the metric catalog and the policy documents (kind: metric or rule). Returns the best
        documents' ids, titles and opening lines; read_document gives a whole one."""
        who = caller(ctx)
        return str(await _threaded(lambda: env.search_knowledge(task_id, query, k, kind, who)))

    @mcp.tool()
    async def read_document(task_id: str, doc_id: str, ctx: Context) -> str:  # type: ignore[type-arg]
        """Read one knowledge-base document whole, by the doc_id search_knowledge returned."""
        who = caller(ctx)
        return str(await _threaded(lambda: env.read_document(task_id, doc_id, who)))

    @mcp.tool()
    async def submit_answer(task_id: str, answer: dict[str, Any], ctx: Context) -> str:  # type: ignore[type-arg]
        """Submit the answer object in the task's answer format. Once per task; it ends the task."""
        who = caller(ctx)
        return str(await _threaded(lambda: env.submit_answer(task_id, answer, who)))

    return mcp


def loopback_security(host: str) -> TransportSecuritySettings:
    """The Host (and Origin) check of core.loopback, for any loopback address the server is on."""
    names = [host_header(n) for n in local_host_names(host)]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                     allowed_hosts=[f"{n}:*" for n in names] + names,
                                     allowed_origins=[f"http://{n}:*" for n in names])


ASGIApp = Callable[[dict[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


TokenCheck = Callable[[str], bool]


def fixed_token(token: str) -> TokenCheck:
    expected = token.encode()
    return lambda got: hmac.compare_digest(got.encode(), expected)


def require_token(app: ASGIApp, accepts: str | TokenCheck) -> ASGIApp:
    """An ASGI wrapper answering 401 to any HTTP request without `Authorization: Bearer <token>`
    for a token `accepts` (one fixed token, or a check such as "a live attempt's")."""
    check = fixed_token(accepts) if isinstance(accepts, str) else accepts

    async def guarded(scope: dict[str, Any], receive: Callable[[], Awaitable[Any]],
                      send: Callable[[Any], Awaitable[None]]) -> None:
        if scope["type"] == "http":
            got = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
            if not (got.startswith("Bearer ") and check(got[7:])):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b'{"error": "missing or wrong bearer token"}'})
                return
        await app(scope, receive, send)

    return guarded


class _ClientGone(logging.Filter):
    """Drops the SDK's traceback for a client that closed its stream (every command agent does so
    when it exits): a normal end of a session, not an error of the server."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError))


def http_app(mcp: FastMCP, token: str | TokenCheck | None) -> ASGIApp:
    if not is_loopback(mcp.settings.host) and not token:
        raise ConfigError(f"an MCP server on {mcp.settings.host} needs a bearer token",
                          hint="set DIBENCH_MCP_TOKEN (or --token), or serve on 127.0.0.1")
    gone = logging.getLogger("mcp.server.streamable_http")
    if not any(isinstance(f, _ClientGone) for f in gone.filters):
        gone.addFilter(_ClientGone())
    app: ASGIApp = mcp.streamable_http_app()  # type: ignore[assignment]
    return require_token(app, token) if token else app


class HttpServer:
    """The MCP server over streamable HTTP in a background thread (the command runner's): on
    loopback TCP, or on the Unix socket `uds` only (the one a sandbox binds in)."""

    def __init__(self, mcp: FastMCP, token: str | TokenCheck | None = None, uds: Path | None = None) -> None:
        config = uvicorn.Config(http_app(mcp, token), host=mcp.settings.host, port=mcp.settings.port,  # type: ignore[arg-type]
                                uds=str(uds) if uds else None, log_level="warning", lifespan="on")
        self.uds = uds
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="mcp-http", daemon=True)

    def start(self) -> HttpServer:
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ConfigError("the MCP HTTP server did not start (port in use?)")
            time.sleep(0.02)
        return self

    @property
    def url(self) -> str:
        if self.uds is not None:
            return f"http+unix://{self.uds}/mcp"
        sock = self._server.servers[0].sockets[0]
        host, port = sock.getsockname()[:2]
        return f"http://{host}:{port}/mcp"

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
