"""The routing environment: the public catalog evidence a router may use, and route submission.

It is built from a CatalogView (public Neo4j reads only) and never holds a contract, a unit,
gold SQL, a location or a required set. One environment serves one task; the search indexes
behind it are built once per catalog and shared.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import Field, ValidationError

from dibench.routing.errors import RouteInvalid
from dibench.routing.models import Behaviour, Route, RouteBranch, Strict
from dibench.routing.naming import natural
from dibench.routing.retrieval import Bm25Index
from dibench.routing.view import CatalogView

SearchKind = Literal["capabilities", "tables", "columns", "entities"]


@dataclass
class CatalogIndexes:
    """BM25 indexes over the public catalog, one per kind of search."""

    view: CatalogView

    @cached_property
    def capabilities(self) -> Bm25Index[str]:
        ids = self.view.ids()
        return Bm25Index(ids, [self.view.databases[i].summary for i in ids])

    @cached_property
    def tables(self) -> Bm25Index[tuple[str, str]]:
        keys, docs = [], []
        for pid in self.view.ids():
            for key, t in sorted(self.view.databases[pid].tables.items()):
                keys.append((pid, key))
                docs.append(" ".join([t.entity, natural(t.name), *(natural(c["column"]) for c in t.columns)]))
        return Bm25Index(keys, docs)

    @cached_property
    def columns(self) -> Bm25Index[tuple[str, str, int]]:
        keys, docs = [], []
        for pid in self.view.ids():
            for key, t in sorted(self.view.databases[pid].tables.items()):
                for i, c in enumerate(t.columns):
                    keys.append((pid, key, i))
                    docs.append(" ".join([natural(c["column"]), t.entity, *(c["samples"] or [])]))
        return Bm25Index(keys, docs)

    @cached_property
    def entity_holders(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for pid in self.view.ids():
            for e in self.view.databases[pid].entities:
                out.setdefault(e, []).append(pid)
        return out

    @cached_property
    def entities(self) -> Bm25Index[str]:
        labels = sorted(self.entity_holders)
        return Bm25Index(labels, labels)


class SearchArgs(Strict):
    query: str = Field(description="words describing the data you need")
    kind: SearchKind = Field("capabilities", description="capabilities | tables | columns | entities")
    k: int = Field(10, ge=1, le=50, description="how many results")


class DatabaseArgs(Strict):
    database: str = Field(description="a database id returned by search, e.g. db_0123456789")


class ClarifyArgs(Strict):
    question: str = Field(description="one question to the user about what the request means")


class SubmitArgs(Strict):
    behaviour: Behaviour
    branches: list[RouteBranch] = Field(description="one branch, or one per interpretation for an ambiguous request")


class RoutingEnvironment:
    def __init__(self, indexes: CatalogIndexes, clarifier: Callable[[str], str] | None = None) -> None:
        self.indexes = indexes
        self.view = indexes.view
        self._clarifier = clarifier
        self.asked = False
        self.submitted: Route | None = None

    # -- search and inspection -------------------------------------------------------------
    def search(self, query: str, kind: SearchKind = "capabilities", k: int = 10) -> list[dict[str, Any]]:
        if kind == "capabilities":
            return [{"database": pid, "score": round(s, 4), "entities": self.view.databases[pid].entities,
                     "measures": self.view.databases[pid].measures[:8],
                     "time_ranges": self.view.databases[pid].time_ranges[:4]}
                    for pid, s in self.indexes.capabilities.rank(query, k)]
        if kind == "tables":
            out = []
            for (pid, key), s in self.indexes.tables.rank(query, k):
                t = self.view.databases[pid].tables[key]
                out.append({"database": pid, "table": t.name, "entity": t.entity, "score": round(s, 4),
                            "columns": [c["column"] for c in t.columns]})
            return out
        if kind == "columns":
            out = []
            for (pid, key, i), s in self.indexes.columns.rank(query, k):
                t = self.view.databases[pid].tables[key]
                c = t.columns[i]
                out.append({"database": pid, "table": t.name, "column": c["column"], "type": c["type"],
                            "samples": c["samples"] or [], "score": round(s, 4)})
            return out
        if kind == "entities":
            return [{"entity": e, "score": round(s, 4), "databases": self.indexes.entity_holders[e]}
                    for e, s in self.indexes.entities.rank(query, k)]
        raise RouteInvalid(f"unknown search kind {kind!r}")

    def _db(self, database: str) -> Any:
        if database not in self.view.databases:
            raise RouteInvalid(f"unknown database {database!r}")
        return self.view.databases[database]

    def inspect_database(self, database: str) -> dict[str, Any]:
        db = self._db(database)
        tables = []
        for _key, t in sorted(db.tables.items()):
            cols = [{"column": c["column"], "type": c["type"], "category": c["category"], "pk": c["pk"],
                     "samples": c["samples"] or [], "min": c["min"], "max": c["max"],
                     "references": f"{c['ref_table']}.{c['ref_column']}" if c["ref_table"] else None}
                    for c in t.columns]
            tables.append({"table": t.name, "entity": t.entity, "n_rows": t.n_rows, "columns": cols})
        return {"database": database, "n_rows": db.n_rows, "entities": db.entities, "measures": db.measures,
                "time_ranges": db.time_ranges, "tables": tables}

    def inspect_relationships(self, database: str) -> list[dict[str, Any]]:
        self._db(database)
        out = []
        for r in self.view.related_to(database):
            out.append({"database": r["b"] if r["a"] == database else r["a"], "kinds": r["kinds"],
                        "shared_entities": r["shared_entities"], "shared_columns": r["shared_columns"],
                        "value_overlaps": r["value_overlaps"][:10], "score": r["score"]})
        return sorted(out, key=lambda r: (-r["score"], r["database"]))

    # -- clarification and submission --------------------------------------------------------
    @property
    def can_clarify(self) -> bool:
        return self._clarifier is not None and not self.asked

    def ask_clarification(self, question: str) -> str:
        """One question per task; the simulated user answers it (or declines when none is set)."""
        if self._clarifier is None:
            return "No clarification is available: route the request as stated."
        if self.asked:
            return "You have already asked your one question."
        self.asked = True
        return self._clarifier(question)

    def submit_route(self, route: Route | dict[str, Any]) -> Route:
        try:
            parsed = route if isinstance(route, Route) else Route.model_validate(route)
        except ValidationError as exc:
            raise RouteInvalid(f"route does not match the schema: {str(exc).splitlines()[0]}") from exc
        for b in parsed.branches:
            for pid in b.databases:
                self._db(pid)
            for e in b.edges:
                if e.source not in b.databases or e.target not in b.databases:
                    raise RouteInvalid(f"edge {e.source}->{e.target} joins databases the branch does not select")
        parsed = parsed.model_copy(update={"asked_clarification": self.asked})
        self.submitted = parsed
        return parsed

    # -- as langchain tools -----------------------------------------------------------------
    def tools(self) -> list[BaseTool]:
        def submit(behaviour: Behaviour, branches: list[RouteBranch]) -> dict[str, Any]:
            r = self.submit_route(Route(behaviour=behaviour, branches=branches))
            return {"accepted": True, "databases": sorted({d for b in r.branches for d in b.databases})}

        tools: list[BaseTool] = [
            StructuredTool.from_function(self.search, name="search_catalog", args_schema=SearchArgs,
                                         description="Search the catalog's databases by capabilities, tables, "
                                                     "columns or entities."),
            StructuredTool.from_function(self.inspect_database, name="inspect_database", args_schema=DatabaseArgs,
                                         description="Show one database's tables, columns, keys, samples and "
                                                     "capabilities."),
            StructuredTool.from_function(self.inspect_relationships, name="inspect_relationships",
                                         args_schema=DatabaseArgs,
                                         description="Show which databases could be used together with this one, "
                                                     "and the evidence."),
            StructuredTool.from_function(submit, name="submit_route", args_schema=SubmitArgs,
                                         description="Submit the final route: behaviour, and per branch the "
                                                     "selected databases, dependency edges and local requests."),
        ]
        if self._clarifier is not None:
            tools.append(StructuredTool.from_function(self.ask_clarification, name="ask_clarification",
                                                      args_schema=ClarifyArgs,
                                                      description="Ask the user one question about the request."))
        return tools
