"""Result canonicalisation, comparators and fingerprints.

A result is compared as an ordered list when the gold SQL has a top-level ORDER BY, as a
multiset otherwise. Numbers are rounded half-up to `decimals` places when configured, so
that 3.0 (SQLite AVG) and 3 (an integer column) compare equal.
"""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

DEFAULT_DECIMALS = 2


@dataclass(frozen=True)
class CompareConfig:
    ordered: bool
    decimals: int | None = DEFAULT_DECIMALS


def round_half_up(value: float | int | Decimal, decimals: int) -> Decimal:
    quantum = Decimal(1).scaleb(-decimals)
    return Decimal(str(value)).quantize(quantum, rounding=ROUND_HALF_UP)


def canonical_value(value: Any, decimals: int | None = DEFAULT_DECIMALS) -> str:
    """One string per value; numbers of equal (rounded) value map to the same string."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, (int, float, Decimal)):
        try:
            number = round_half_up(value, decimals) if decimals is not None else Decimal(str(value))
        except InvalidOperation:  # nan / inf have no rounded form; their repr is canonical enough
            return f"n:{value}"
        normal = number.normalize()
        # normalize() gives exponents like 1E+1 for 10; format as plain fixed-point text
        return "n:" + format(normal, "f")
    if isinstance(value, bytes):
        return "b:" + value.hex()
    return "s:" + str(value)


def canonical_rows(rows: Sequence[Sequence[Any]], cfg: CompareConfig) -> list[list[str]]:
    canon = [[canonical_value(v, cfg.decimals) for v in row] for row in rows]
    return canon if cfg.ordered else sorted(canon)


def fingerprint(rows: Sequence[Sequence[Any]], cfg: CompareConfig) -> str:
    """sha256 of the canonical rows: the execution evidence stored with a unit."""
    payload = json.dumps(canonical_rows(rows, cfg), separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


def results_match(gold: Sequence[Sequence[Any]], got: Sequence[Sequence[Any]], cfg: CompareConfig) -> bool:
    """Ordered comparison when cfg.ordered, multiset comparison otherwise."""
    g = [tuple(canonical_value(v, cfg.decimals) for v in row) for row in gold]
    o = [tuple(canonical_value(v, cfg.decimals) for v in row) for row in got]
    if cfg.ordered:
        return g == o
    return Counter(g) == Counter(o)
