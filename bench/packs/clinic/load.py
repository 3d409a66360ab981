"""Generate Northshore Outpatient Clinics, deterministically (a hold-out pack for the lead's checks)."""
from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from dibench.stores.pack_data import copy_rows, replacing_schema

HERE = Path(__file__).resolve().parent
START, DAYS = dt.datetime(2023, 1, 2, 8), 730
CLINICS = [(1, "Harbourside", "Coast", "2009-03-01"), (2, "Lighthouse Road", "Coast", "2015-06-15"),
           (3, "Pier Street", "Coast", "2021-01-11"), (4, "Cedar Hill", "Valley", "2001-09-03"),
           (5, "Millbrook", "Valley", "2012-04-23"), (6, "Riverbend", "Valley", "2018-10-01"),
           (7, "Granite Peak", "Uplands", "1998-02-16"), (8, "Fernwood", "Uplands", "2011-11-07"),
           (9, "Stonebridge", "Uplands", "2020-05-18")]
SPECIALTIES = [("general", 0.4, "60.00"), ("cardiology", 0.14, "145.00"), ("dermatology", 0.16, "95.00"),
               ("pediatrics", 0.18, "70.00"), ("orthopedics", 0.12, "120.00")]
MODES = [("in_person", 0.68), ("video", 0.22), ("phone", 0.10)]
BANDS = [("0-17", 0.2), ("18-39", 0.3), ("40-64", 0.32), ("65+", 0.18)]
INSURANCE = [("public", 0.55), ("private", 0.35), ("self_pay", 0.10)]
COLS = {"clinics": ("clinic_id", "clinic_name", "region", "opened_on"),
        "patients": ("patient_id", "age_band", "insurance", "home_clinic_id", "is_test"),
        "appointments": ("appt_id", "patient_id", "clinic_id", "specialty", "mode", "booked_at", "scheduled_at",
                         "status", "cancelled_at", "wait_minutes", "fee")}


def pick(rng: random.Random, table: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    return rng.choices(table, [t[1] for t in table])[0]


def load(engine: Engine, schema: str, size: int = 30000, seed: int = 7, **_: Any) -> dict[str, Any]:
    rng = random.Random(seed)
    patients = []
    for i in range(1, max(400, size // 6) + 1):
        band = pick(rng, BANDS)[0]
        patients.append((i, band, pick(rng, INSURANCE)[0], rng.choice(CLINICS)[0], rng.random() < 0.01))
    appts = []
    for i in range(1, size + 1):
        p = rng.choice(patients)
        clinic = p[3] if rng.random() < 0.85 else rng.choice(CLINICS)[0]
        spec, _, fee = pick(rng, SPECIALTIES)
        if p[1] == "0-17" and rng.random() < 0.6:
            spec, fee = "pediatrics", "70.00"
        mode = pick(rng, MODES)[0]
        when = START + dt.timedelta(days=rng.randrange(DAYS), minutes=15 * rng.randrange(36))
        booked = when - dt.timedelta(hours=rng.uniform(2, 24 * 40))
        r = rng.random()
        cancelled = None
        wait = None
        if r < 0.78:
            status = "attended"
            wait = int(rng.expovariate(1 / 18)) if mode == "in_person" else int(rng.expovariate(1 / 6))
            if rng.random() < 0.004:
                wait = rng.choice([480, 600, 999])  # a clock left running
        elif r < 0.86:
            status = "no_show"
        elif r < 0.96:
            status = "cancelled_patient"
            cancelled = when - dt.timedelta(hours=rng.uniform(0.5, 24 * 6))
            if cancelled < booked:
                cancelled = booked + (when - booked) / 2
        else:
            status = "cancelled_clinic"
            cancelled = when - dt.timedelta(hours=rng.uniform(1, 24 * 10))
            if cancelled < booked:
                cancelled = booked + (when - booked) / 2
        price = Decimal(fee) * (Decimal("0.8") if mode == "phone" else Decimal(1))
        appts.append((i, p[0], clinic, spec, mode, booked, when, status, cancelled, wait, price))
    clinics = [(c, n, r, dt.date.fromisoformat(d)) for c, n, r, d in CLINICS]
    counts = {}
    with replacing_schema(engine, schema, HERE / "schema.sql") as cur:
        for table, rows in (("clinics", clinics), ("patients", patients), ("appointments", appts)):
            counts[table] = copy_rows(cur, table, COLS[table], rows)
        cur.execute("ANALYZE")
    return {"tables": counts}
