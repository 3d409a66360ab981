"""`dibench mcp` answers at once: the server listens before its session is open.

Opening a session (the run's tasks, the knowledge base, the run folder: `evaluation.mcp_session`)
takes seconds on a large domain and imports most of the evaluation stage, while `initialize` and
the tool list need none of it. So the server is built on a stand-in for the session's environment,
the session opens in a thread once the server listens, and a tool call waits until it is open. A
session that cannot be opened stops an HTTP server (over stdio its tools answer with the error),
and the error is the command's.
"""
from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, cast

import uvicorn

from dibench.evaluation.mcp_server import ASGIApp, build_server, http_app
from dibench.evaluation.tool_contract import ToolRefused

if TYPE_CHECKING:
    from dibench.evaluation.environment import TaskEnvironment
    from dibench.evaluation.harness import EvalResult
    from dibench.evaluation.mcp_session import Session

Transport = Literal["stdio", "http"]
IDLE_BEFORE_LOADING = 2.0  # seconds a listening HTTP server waits for its first request before it opens the run


class PendingEnvironment:
    """The session's environment before the session is open: reading any of its attributes waits
    until the session is open (or failed to open: then the call is refused with the reason)."""

    def __init__(self) -> None:
        self._settled = threading.Event()
        self.session: Session | None = None
        self.error: BaseException | None = None

    def settle(self, session: Session | None, error: BaseException | None = None) -> None:
        self.session, self.error = session, error
        self._settled.set()

    def __getattr__(self, name: str) -> Any:
        self._settled.wait()
        if self.session is None:
            raise ToolRefused(f"the session could not be opened: {str(self.error).splitlines()[0]}")
        return getattr(self.session.env, name)


def serve_at_once(open_session: Callable[[], Session], transport: Transport, *, engine: str,
                  host: str = "127.0.0.1", port: int = 8766, token: str | None = None,
                  opened: Callable[[Session], None] = lambda _s: None) -> EvalResult:
    """Serve until the client closes stdio or the HTTP server is stopped; then score the run.
    `open_session` runs in a thread once the server listens; `opened` is told the open session;
    `engine` names the warehouse's engine in the tools (the session's warehouse is not open yet)."""
    pending = PendingEnvironment()
    mcp = build_server(cast("TaskEnvironment", pending), engine=engine, host=host, port=port)
    answered, finished = threading.Event(), threading.Event()
    server = uvicorn.Server(uvicorn.Config(after_each_reply(http_app(mcp, token), answered), host=host, port=port,
                                           log_level="warning")) if transport == "http" else None

    def load() -> None:
        # Over HTTP, from the first reply on (or once the server has listened idle for a while): the
        # loading holds the interpreter, and would otherwise slow that reply down.
        while server is not None and not (server.started or finished.wait(0.01)):
            pass
        if server is not None:
            answered.wait(IDLE_BEFORE_LOADING)
        try:
            session = open_session()
        except BaseException as exc:  # noqa: BLE001 - re-raised by the serving thread
            pending.settle(None, exc)
            if server is not None:
                server.should_exit = True
            return
        pending.settle(session)
        opened(session)

    loader = threading.Thread(target=load, name="mcp-session", daemon=True)
    loader.start()
    try:
        if server is None:
            mcp.run("stdio")
        else:
            server.run()
    finally:
        finished.set()
        answered.set()  # a server that stopped (Ctrl-C, port taken) waits no longer: the run opens and closes
        loader.join()
    if pending.session is None:
        raise pending.error or RuntimeError("the session was not opened")
    return pending.session.close()


def after_each_reply(app: ASGIApp, replied: threading.Event) -> ASGIApp:
    """`app`, setting `replied` once it has answered a request."""

    async def wrapped(scope: dict[str, Any], receive: Callable[[], Awaitable[Any]],
                      send: Callable[[Any], Awaitable[None]]) -> None:
        try:
            await app(scope, receive, send)
        finally:
            if scope["type"] == "http":
                replied.set()

    return wrapped
