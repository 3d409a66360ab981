"""Generate the Riverside Public Libraries into a PostgreSQL schema, deterministically.

`load(engine, schema, size, seed)`: twelve branches in four districts, members of four kinds
(a few of them staff accounts), `size` loans issued 2023-01-01 .. 2024-12-31 at the desk, at a
self-service kiosk or as an interlibrary transfer, and the fines of the late, damaged or lost
ones. One `random.Random(seed)` drives everything in a fixed order and no clock is read: the
same seed gives identical tables. Nothing is read from disk but schema.sql."""
from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy import Engine

from dibench.core.errors import DibenchError
from dibench.stores.pack_data import copy_rows, replacing_schema

HERE = Path(__file__).resolve().parent
START, DAYS = dt.datetime(2023, 1, 1, 9), 731
BRANCHES = [(1, "Central Library", "Old Town", "1961-05-02"), (2, "Harbour Reading Room", "Old Town", "1988-09-14"),
            (3, "Market Square", "Old Town", "2004-03-01"), (4, "Northgate", "North", "1975-01-20"),
            (5, "Mill Lane", "North", "1999-06-11"), (6, "Willow Park", "North", "2012-10-05"),
            (7, "Eastfield", "East", "1982-04-17"), (8, "Brick Kiln", "East", "2008-11-23"),
            (9, "Station Road", "East", "2019-02-28"), (10, "Southbank", "South", "1969-08-08"),
            (11, "Orchard Hill", "South", "1993-05-30"), (12, "Riverside Mobile Library", "South", "2016-07-01")]
MEMBER_TYPES = [("adult", 0.52), ("child", 0.22), ("senior", 0.14), ("student", 0.12)]
FORMATS = [("book", 0.58), ("ebook", 0.16), ("audiobook", 0.08), ("dvd", 0.1), ("magazine", 0.08)]
LOAN_DAYS = {"book": 21, "ebook": 14, "audiobook": 21, "dvd": 7, "magazine": 7}
COLUMNS: dict[str, tuple[str, ...]] = {
    "branches": ("branch_id", "branch_name", "district", "opened_on"),
    "members": ("member_id", "member_type", "home_branch_id", "joined_on", "is_staff"),
    "loans": ("loan_id", "member_id", "branch_id", "item_format", "channel", "loaned_at", "due_at", "returned_at",
              "renewals"),
    "fines": ("fine_id", "loan_id", "kind", "amount", "assessed_at"),
}


class LibrarySizeError(DibenchError):
    """The requested number of loans cannot make a library network."""

    hint = "pass --size 2000 or more (default 40000 loans)"


def _pick(rng: random.Random, weighted: Sequence[tuple[str, float]]) -> str:
    return rng.choices([w for w, _ in weighted], [p for _, p in weighted])[0]


def _copy(cur: psycopg.Cursor[Any], table: str, rows: Iterable[Sequence[object]]) -> int:
    return copy_rows(cur, table, COLUMNS[table], rows)


def members(rng: random.Random, n: int) -> list[tuple[Any, ...]]:
    out = []
    for i in range(1, n + 1):
        kind = _pick(rng, MEMBER_TYPES)
        joined = dt.date(2010, 1, 1) + dt.timedelta(days=rng.randrange(5400))
        out.append((i, kind, rng.choice(BRANCHES)[0] if rng.random() < 0.97 else 12, joined,
                    kind == "adult" and rng.random() < 0.03))
    return out


def loans(rng: random.Random, size: int, people: list[tuple[Any, ...]]) -> tuple[list[tuple[Any, ...]],
                                                                                list[tuple[Any, ...]]]:
    """The loans and their fines: late returns pay 0.25 a day (at most 10.00), from 2024-04-01
    no longer for children's cards; a few loans are damaged or lost."""
    out: list[tuple[Any, ...]] = []
    fines: list[tuple[Any, ...]] = []
    cum, total = [], 0.0
    for p in people:  # a staff account borrows three times as much
        total += 3.0 if p[4] else 1.0
        cum.append(total)
    for i in range(1, size + 1):
        member = rng.choices(people, cum_weights=cum)[0]
        branch = member[2] if rng.random() < 0.8 else rng.choice(BRANCHES)[0]
        fmt = _pick(rng, FORMATS)
        channel = "interlibrary" if rng.random() < 0.06 else ("self_service" if rng.random() < 0.45 else "desk")
        day = rng.randrange(DAYS)
        if (START + dt.timedelta(days=day)).month == 8 and rng.random() < 0.3:
            day = rng.randrange(DAYS)  # a slow August: a third of its loans drawn again
        loaned = START + dt.timedelta(days=day, minutes=rng.randrange(600))
        renewals = rng.choices([0, 1, 2], [0.72, 0.2, 0.08])[0]
        due = loaned + dt.timedelta(days=LOAN_DAYS[fmt] * (1 + renewals))
        late = rng.random()
        if fmt == "ebook":
            returned: dt.datetime | None = due  # an e-book returns itself on the due day
        elif late < 0.70:
            returned = loaned + (due - loaned) * rng.uniform(0.2, 1.0)
        elif late < 0.84:
            returned = due + dt.timedelta(hours=rng.uniform(1, 48))  # within two days
        elif late < 0.985:
            returned = due + dt.timedelta(days=rng.uniform(2.1, 30))
        else:
            returned = None  # lost
        out.append((i, member[0], branch, fmt, channel, loaned, due, returned, renewals))
        if returned is not None and returned > due and fmt != "ebook":
            days_late = (returned - due).days + 1
            waived = member[1] == "child" and due.date() >= dt.date(2024, 4, 1)
            if not waived:
                fines.append((len(fines) + 1, i, "overdue", min(Decimal("0.25") * days_late, Decimal("10.00")),
                              returned))
        if returned is None:
            fines.append((len(fines) + 1, i, "lost", Decimal(rng.choice(["12.00", "18.50", "25.00"])),
                          due + dt.timedelta(days=30)))
        elif rng.random() < 0.004:
            fines.append((len(fines) + 1, i, "damage", Decimal(rng.choice(["3.00", "5.00", "8.00"])), returned))
    return out, fines


def load(engine: Engine, schema: str, size: int = 40000, seed: int = 42, **_ignored: Any) -> dict[str, Any]:
    """Replace `schema` with the generated library network; returns {"tables": {table: rows}}."""
    if size < 2000:
        raise LibrarySizeError(f"--size {size}: at least 2000 loans make a two-year library network")
    rng = random.Random(seed)
    people = members(rng, max(300, size // 12))
    issued, fines = loans(rng, size, people)
    branches = [(b, name, district, dt.date.fromisoformat(d)) for b, name, district, d in BRANCHES]
    counts: dict[str, int] = {}
    with replacing_schema(engine, schema, HERE / "schema.sql") as cur:
        for table, rows in (("branches", branches), ("members", people), ("loans", issued), ("fines", fines)):
            counts[table] = _copy(cur, table, rows)
        cur.execute("ANALYZE")
    return {"tables": counts}
