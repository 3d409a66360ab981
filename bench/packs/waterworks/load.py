"""Generate Eastmere Water, deterministically (a hold-out pack: no test reads it)."""
from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from dibench.stores.pack_data import copy_rows, replacing_schema

HERE = Path(__file__).resolve().parent
FIRST = dt.date(2023, 1, 1)
MONTHS = 24
AREAS = [(1, "Old Harbour", "North"), (2, "Kelling", "North"), (3, "Saltmarsh", "North"),
         (4, "Brackenford", "North"), (5, "Town Centre", "Central"), (6, "Ashby Vale", "Central"),
         (7, "Mill Lane", "Central"), (8, "Northgate", "Central"), (9, "Wyke", "South"),
         (10, "Low Fen", "South"), (11, "Orchard Rise", "South")]
SEGMENTS = [("residential", 0.78, 14.0), ("business", 0.16, 60.0), ("public_sector", 0.06, 140.0)]
TARIFF = {"residential": Decimal("2.15"), "business": Decimal("1.95"), "public_sector": Decimal("1.80")}
STANDING = Decimal("9.50")
COLS = {"areas": ("area_id", "area_name", "region"),
        "customers": ("customer_id", "area_id", "segment", "meter_type", "account_kind", "on_hardship", "joined_on"),
        "meter_reads": ("read_id", "customer_id", "read_on", "read_type", "consumption_m3"),
        "bills": ("bill_id", "customer_id", "bill_kind", "issued_on", "due_on", "amount", "drought_levy", "paid_on")}


def month(i: int) -> dt.date:
    return dt.date(FIRST.year + (FIRST.month - 1 + i) // 12, (FIRST.month - 1 + i) % 12 + 1, 1)


def load(engine: Engine, schema: str, customers: int = 1100, seed: int = 11, **_: Any) -> dict[str, Any]:
    rng = random.Random(seed)
    custs, reads, bills = [], [], []
    for cid in range(1, customers + 1):
        seg, _, mean = rng.choices(SEGMENTS, [s[1] for s in SEGMENTS])[0]
        area = rng.choices(AREAS, [3, 2, 1, 2, 5, 3, 2, 2, 2, 1, 2])[0][0]
        meter = "smart" if rng.random() < (0.35 if area <= 4 else 0.6) else "mechanical"
        kind = "internal" if rng.random() < 0.02 else "standard"
        hardship = seg == "residential" and rng.random() < 0.07
        joined = month(rng.randrange(-60, 18)) + dt.timedelta(days=rng.randrange(27))
        custs.append((cid, area, seg, meter, kind, hardship, joined))
        monthly = mean * rng.uniform(0.5, 1.6)
        late_prob = 0.32 if hardship else (0.06 if seg == "public_sector" else 0.11)
        for m in range(MONTHS):
            start = month(m)
            if start < joined.replace(day=1):
                continue
            season = 1.25 if start.month in (6, 7, 8) else (0.9 if start.month in (12, 1, 2) else 1.0)
            use = Decimal(str(round(max(0.0, rng.gauss(monthly * season, monthly * 0.2)), 3)))
            if m % 3 == 2:
                rtype = "estimated" if rng.random() < (0.04 if meter == "smart" else 0.16) else (
                    "customer" if rng.random() < 0.1 else "actual")
                quarter = use * 3
                if meter == "mechanical" and rng.random() < 0.006:
                    quarter = Decimal(rng.choice(["9999.000", "4871.250", "12050.500"]))  # a dial misread
                reads.append((len(reads) + 1, cid, month(m + 1) - dt.timedelta(days=rng.randrange(1, 9)),
                              rtype, quarter))
            issued = month(m + 1) + dt.timedelta(days=rng.randrange(2, 7))
            due = issued + dt.timedelta(days=21)
            levy = (use * Decimal("0.40")).quantize(Decimal("0.01")) if month(m) >= dt.date(2023, 6, 1) else Decimal(0)
            amount = (STANDING + use * TARIFF[seg] + levy).quantize(Decimal("0.01"))
            r = rng.random()
            if r < late_prob * 0.25:
                paid = None if issued > dt.date(2024, 9, 1) or rng.random() < 0.5 else due + dt.timedelta(
                    days=rng.randrange(60, 200))
            elif r < late_prob:
                paid = due + dt.timedelta(days=rng.randrange(1, 30))
            else:
                paid = issued + dt.timedelta(days=rng.randrange(0, 21))
            if paid is not None and paid > dt.date(2025, 1, 31):
                paid = None
            bills.append((len(bills) + 1, cid, "regular", issued, due, amount, levy, paid))
            if rng.random() < 0.025:
                fix = (amount * Decimal(str(rng.uniform(-0.3, 0.2)))).quantize(Decimal("0.01"))
                bills.append((len(bills) + 1, cid, "correction", issued + dt.timedelta(days=rng.randrange(8, 40)),
                              due + dt.timedelta(days=30), fix, Decimal(0), due + dt.timedelta(days=30)))
    with replacing_schema(engine, schema, HERE / "schema.sql") as cur:
        counts = {}
        for table, rows in (("areas", AREAS), ("customers", custs), ("meter_reads", reads), ("bills", bills)):
            counts[table] = copy_rows(cur, table, COLS[table], rows)
        cur.execute("ANALYZE")
    return {"tables": counts}
