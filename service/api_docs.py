"""The API's documentation pages, served without a CDN: Swagger UI at /docs and ReDoc at /redoc
from the files of the `fastapi-offline` package, and an OpenAPI document that declares bearer
authentication (the Authorize button). The pages and the document are open; the operations are not."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import FileResponse, HTMLResponse
from starlette.exceptions import HTTPException

STATIC = Path(fastapi_offline.__file__).resolve().parent / "static"
ASSETS = {"swagger-ui-bundle.js": "text/javascript", "swagger-ui.css": "text/css",
          "redoc.standalone.js": "text/javascript", "favicon.png": "image/png"}
PREFIX = "/docs-static/"
PAGES = frozenset({"/docs", "/redoc", "/openapi.json"})
# Routes any caller may read: the health check is added by the API itself.
OPEN_PATHS = PAGES | {PREFIX + name for name in ASSETS}
SCHEME = "bearer"


def bearer_openapi(app: FastAPI, open_routes: frozenset[str]) -> dict[str, Any]:
    """The OpenAPI document with an HTTP bearer scheme required by every operation but the open ones."""
    if app.openapi_schema is None:
        doc = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        doc.setdefault("components", {})["securitySchemes"] = {
            SCHEME: {"type": "http", "scheme": "bearer",
                     "description": "DIBENCH_API_TOKEN (writes, private exports) or DIBENCH_API_READ_TOKEN (reads)"}}
        doc["security"] = [{SCHEME: []}]
        for path, ops in doc.get("paths", {}).items():
            if path in open_routes:
                for op in ops.values():
                    op["security"] = []
        app.openapi_schema = doc
    return app.openapi_schema


def install_docs(app: FastAPI, open_routes: frozenset[str]) -> None:
    """Add /docs, /redoc and their assets to `app` (created with docs_url=None, redoc_url=None)."""
    app.openapi = lambda: bearer_openapi(app, open_routes)  # type: ignore[method-assign]

    @app.get("/docs", include_in_schema=False)
    def swagger() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title=f"{app.title} API",
                                   swagger_js_url=PREFIX + "swagger-ui-bundle.js",
                                   swagger_css_url=PREFIX + "swagger-ui.css", swagger_favicon_url=PREFIX + "favicon.png",
                                   swagger_ui_parameters={"persistAuthorization": True})

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(openapi_url="/openapi.json", title=f"{app.title} API",
                              redoc_js_url=PREFIX + "redoc.standalone.js", redoc_favicon_url=PREFIX + "favicon.png",
                              with_google_fonts=False)

    @app.get(PREFIX + "{name}", include_in_schema=False)
    def asset(name: str) -> FileResponse:
        if name not in ASSETS:  # a fixed set of files: no path reaches anything else
            raise HTTPException(404)
        return FileResponse(STATIC / name, media_type=ASSETS[name], headers={"Cache-Control": "max-age=86400"})
