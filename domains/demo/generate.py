"""Generate the demo customer-support company into a Postgres schema.

`load(engine, schema, size, seed)` builds a seeded synthetic company: `size` tickets created
2023-01-01 .. 2024-12-31, with their customers, agents, status history, surveys and refunds.
One `random.Random(seed)` drives everything in a fixed order and no clock is read, so the same
seed gives byte-identical tables. Tickets are produced and COPied in batches of whole days,
which keeps memory bounded at a million tickets and more.

One transaction: drop and recreate the schema, create bare tables (schema.sql), COPY, then add
keys and indexes (constraints.sql). A failure rolls everything back and leaves the previous
schema in place.
"""
from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy import Engine

from dibench.core.errors import DibenchError
from dibench.domains.demo.lifecycle import Batch, Simulator
from dibench.domains.demo.world import COUNTRIES, PLANS, TEAMS, day_counts, make_agents, make_customers
from dibench.stores.pack_data import copy_rows, replacing_schema
from dibench.stores.warehouse import admin_cursor

HERE = Path(__file__).resolve().parent

COLUMNS: dict[str, tuple[str, ...]] = {
    "plans": ("plan", "display_name", "monthly_fee", "support_hours"),
    "countries": ("country_code", "country_name", "region"),
    "customers": ("customer_id", "customer_name", "plan", "has_24h_support", "country_code", "signup_date",
                  "is_internal"),
    "teams": ("team_id", "team_name", "focus"),
    "agents": ("agent_id", "agent_name", "team_id", "hire_date"),
    "tickets": ("ticket_id", "customer_id", "agent_id", "channel", "priority", "category", "created_at",
                "first_response_at", "resolved_at", "reopened_at", "closed_at", "status", "escalation_type",
                "agent_replies", "handle_minutes", "is_spam"),
    "ticket_status_history": ("history_id", "ticket_id", "status", "started_at", "ended_at"),
    "surveys": ("survey_id", "ticket_id", "score", "submitted_at"),
    "refunds": ("refund_id", "ticket_id", "kind", "amount", "issued_at"),
}


class DemoSizeError(DibenchError):
    """The requested size cannot make a meaningful company."""

    hint = "pass --size 100 or more (default 20000 tickets)"


def _copy(cur: psycopg.Cursor[Any], table: str, rows: Iterable[Sequence[object]]) -> int:
    return copy_rows(cur, table, COLUMNS[table], rows)


def _batch_rows(batch: Batch) -> dict[str, list[tuple[object, ...]]]:
    return {"tickets": batch.tickets, "ticket_status_history": batch.history, "surveys": batch.surveys,
            "refunds": batch.refunds}


def load(engine: Engine, schema: str, size: int = 20_000, seed: int = 42, path: str | None = None,
         **_ignored: Any) -> dict[str, Any]:
    """Replace `schema` with a generated company of `size` tickets; returns {"tables": {table: rows}}.

    `path` (an option of real-data packs) is accepted and ignored.
    """
    if size < 100:
        raise DemoSizeError(f"demo size must be at least 100 tickets, got {size}")
    rng = random.Random(seed)
    customers = make_customers(rng, max(200, size // 8))
    agents = make_agents(rng, max(60, size // 200))
    sim = Simulator(rng, customers, agents)
    counts = dict.fromkeys(COLUMNS, 0)
    with replacing_schema(engine, schema, HERE / "schema.sql") as cur:
        counts["plans"] = _copy(cur, "plans", PLANS)
        counts["countries"] = _copy(cur, "countries", (c[:3] for c in COUNTRIES))
        counts["customers"] = _copy(cur, "customers", (
            (c.customer_id, c.name, c.plan, c.has_24h_support, c.country_code, c.signup_date, c.is_internal)
            for c in customers))
        counts["teams"] = _copy(cur, "teams", (t[:3] for t in TEAMS))
        counts["agents"] = _copy(cur, "agents", ((a.agent_id, a.name, a.team_id, a.hire_date) for a in agents))
        for batch in sim.batches(day_counts(size)):
            for table, rows in _batch_rows(batch).items():
                counts[table] += _copy(cur, table, rows)
        cur.execute((HERE / "constraints.sql").read_text())
    # Fresh planner statistics, so the first metric queries get good plans.
    with admin_cursor(engine) as cur:
        for table in COLUMNS:
            cur.execute(sql.SQL("ANALYZE {}.{}").format(sql.Identifier(schema), sql.Identifier(table)))
    return {"tables": counts}
