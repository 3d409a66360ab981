"""The HTTP API (FastAPI) over the same library functions as the CLI. OpenAPI docs at /docs.

Authentication: write endpoints need `Authorization: Bearer <Settings.api_token>`; with no
token configured they are disabled (403 with a message). Reads are open unless
`Settings.api_read_token` is set, then they need that token (the write token is accepted too).
DibenchError subclasses become HTTP status codes here, and only here.
"""
from __future__ import annotations

import hmac
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from service.config import Settings, get_settings
from service.cypher_guard import CypherWriteRefused
from service.errors import (
    ConfigError, DibenchError, ExtractionError, GraphError, NotFound, PackError, PackErrors, ReadOnlyViolation,
    ServiceError, WarehouseError,
)
from service.graph import Graph, get_graph

STATUS: tuple[tuple[type[DibenchError], int], ...] = (
    (NotFound, 404), (CypherWriteRefused, 400), (ReadOnlyViolation, 400), (PackErrors, 422), (PackError, 422),
    (ExtractionError, 422), (ServiceError, 503), (ConfigError, 500), (GraphError, 502), (WarehouseError, 502),
)


class Forbidden(DibenchError):
    """A request without the bearer token an endpoint needs (or to a disabled endpoint)."""


def status_of(exc: DibenchError) -> int:
    from ingest.update import UpdateConflict
    from service.export import ExportError

    if isinstance(exc, Forbidden):
        return 403 if "disabled" in str(exc) else 401
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
    pack: str = Field(description="pack of the rule: a built-in domain name or a pack folder on the server")
    document: str = Field(min_length=10, description="the whole rule document: YAML front matter and Markdown body")
    file_name: str = Field("rule.md", pattern=r"^[A-Za-z0-9_.\-]+\.md$", description="the document's file name")
    regenerate: bool = False
    dry_run: bool = False


class ExportRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cypher: str | None = Field(None, description="read-only Cypher returning task keys (RETURN t.key AS key)")
    preset: str | None = Field(None, description="domain | analysis_type | tier | rule | metric | status")
    params: dict[str, Any] = Field(default_factory=dict)
    view: str = Field("public", pattern="^(public|private)$")
    dialects: list[str] = Field(default_factory=list,
                                description="private view: gold SQL also in these dialects (duckdb, snowflake, ...)")


def _bearer(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    return auth[7:].strip() if auth.lower().startswith("bearer ") else None


def _matches(given: str | None, *expected: str | None) -> bool:
    return given is not None and any(e and hmac.compare_digest(given, e) for e in expected)


def create_app(settings: Settings | None = None, graph_factory: Callable[[], Graph] | None = None) -> FastAPI:
    cfg = settings or get_settings()
    graph_of = graph_factory or get_graph
    app = FastAPI(title="dibench", version="0.1.0",
                  description="Verifiable benchmarks for enterprise data agents: the knowledge service.")

    @app.exception_handler(DibenchError)
    async def _dibench_error(_: Request, exc: DibenchError) -> JSONResponse:
        body = {"error": type(exc).__name__, "detail": str(exc)}
        if exc.hint:
            body["hint"] = exc.hint
        return JSONResponse(status_code=status_of(exc), content=body)

    def read_access(request: Request) -> None:
        if cfg.api_read_token and not _matches(_bearer(request), cfg.api_read_token, cfg.api_token):
            raise Forbidden("this server requires a bearer token for reads", hint="send Authorization: Bearer <token>")

    def write_access(request: Request) -> None:
        if not cfg.api_token:
            raise Forbidden("write endpoints are disabled: no API token is configured",
                            hint="set DIBENCH_API_TOKEN on the server to enable them")
        if not _matches(_bearer(request), cfg.api_token):
            raise Forbidden("a valid bearer token is required for write endpoints",
                            hint="send Authorization: Bearer <token>")

    @app.get("/health", summary="Liveness, and whether Neo4j answers")
    def health() -> dict[str, Any]:
        try:
            graph_of().read("export_clock")
            return {"status": "ok", "graph": "up"}
        except DibenchError as exc:
            return {"status": "degraded", "graph": str(exc)}

    @app.get("/graph/stats", dependencies=[Depends(read_access)], summary="Node and edge counts by type")
    def stats(domain: str | None = None) -> dict[str, Any]:
        from service.queries import graph_stats

        return graph_stats(graph_of(), domain)

    @app.get("/metrics/{metric_id}/rules", dependencies=[Depends(read_access)], summary="Rules affecting a metric")
    def metric_rules(metric_id: str, domain: str | None = None, tasks: bool = False) -> list[dict[str, Any]]:
        from service.queries import rules_for, tasks_for_rules

        rows = rules_for(graph_of(), metric_id, domain)
        if tasks:
            found = tasks_for_rules(graph_of(), metric_id, domain, [r["rule_id"] for r in rows])
            for r in rows:
                r["tasks"] = found.get(r["rule_id"], [])
        return rows

    @app.get("/rules/{rule_id}/impact", dependencies=[Depends(read_access)], summary="What a rule affects")
    def rule_impact(rule_id: str, domain: str | None = None) -> dict[str, Any]:
        from service.impact import impact

        return impact(graph_of(), rule_id, domain)

    @app.get("/tasks", dependencies=[Depends(read_access)], summary="Tasks with filters, paginated")
    def tasks(domain: str | None = None, analysis_type: str | None = None, tier: str | None = None,
              status: str | None = None, rule: str | None = None, metric: str | None = None,
              offset: int = Query(0, ge=0), limit: int = Query(50, ge=1, le=500)) -> dict[str, Any]:
        from service.export import public_record

        g = graph_of()
        args = dict(domain=domain, analysis_type=analysis_type, tier=tier, status=status, rule=rule, metric=metric)
        total = g.read("export_tasks_count", **args)[0]["total"]
        rows = g.read("export_tasks_page", **args, offset=offset, limit=limit)
        return {"total": total, "offset": offset, "limit": limit, "tasks": [public_record(r["task"]) for r in rows]}

    @app.post("/rules/update", dependencies=[Depends(write_access)], summary="Update one rule document")
    def rules_update(req: RuleUpdateRequest) -> dict[str, Any]:
        from ingest.update import load_document, plan_update
        from ingest.update_write import run_update
        from service.llm import configured_model
        from service.warehouse import get_warehouse

        g = graph_of()
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / req.file_name
            path.write_text(req.document)
            pk, doc = load_document(path, req.pack)
        plan_fn = lambda: plan_update(pk, doc, g, get_warehouse(), configured_model(),  # noqa: E731
                                      regenerate=req.regenerate)
        plan = plan_fn() if req.dry_run else run_update(plan_fn, g)[0]
        log = plan.changelog()
        log["written"] = log["written"] and not req.dry_run
        return log

    @app.post("/export", dependencies=[Depends(read_access)], summary="Stream the tasks a read-only query selects",
              response_class=StreamingResponse)
    def export_stream(req: ExportRequest, request: Request) -> StreamingResponse:
        from service.export import ExportError, ExportQuery, preset_query, stream_records

        if req.view == "private":
            write_access(request)  # gold answers and SQL: only for holders of the write token
        if (req.cypher is None) == (req.preset is None):
            raise ExportError("pass exactly one of cypher and preset")
        q = preset_query(req.preset, req.params) if req.preset else ExportQuery(str(req.cypher), req.params)
        from sqlops.transpile import parse_dialects

        dialects = parse_dialects(",".join(req.dialects)) if req.dialects else []
        lines: Iterator[str] = iter(list(stream_records(graph_of(), q, req.view, dialects)))  # errors before the first byte
        return StreamingResponse(lines, media_type="application/x-ndjson")

    @app.get("/domains/{domain}/drift", dependencies=[Depends(read_access)],
             summary="The latest drift check of a domain (outcome counts and per-task outcomes, no answers)")
    def drift_latest(domain: str) -> dict[str, Any]:
        from ingest.drift import latest_check

        check = latest_check(graph_of(), domain)
        check["tasks"] = [{k: v for k, v in t.items() if k not in ("old", "new")} for t in check["tasks"]]
        return check

    @app.post("/domains/{domain}/drift", dependencies=[Depends(write_access)],
              summary="Run a drift check now (apply=true versions drifted tasks); returns the changelog")
    def drift_run(domain: str, apply: bool = False) -> dict[str, Any]:
        from ingest.drift import run_drift
        from service.warehouse import get_warehouse

        return run_drift(graph_of(), get_warehouse(), domain, apply=apply).changelog()

    return app
