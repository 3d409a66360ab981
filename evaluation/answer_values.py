"""An agent's answer as a value the evaluator can store and compare, whatever the agent sent.

`loads` reads JSON text without Python's limits turning into exceptions: an integer literal of
more than MAX_INT_DIGITS digits becomes a marker string, nesting past Python's recursion limit is a
ValueError like any bad JSON. `storable` makes any value JSON-safe (the marker again for what JSON
cannot write). `uncomparable` says why a parsed answer cannot be compared with a gold answer (a
number outside the floating-point range, nesting deeper than MAX_DEPTH): the scorer calls such
an answer malformed, and the run goes on.
"""
from __future__ import annotations

import json
import math
from typing import Any

MAX_INT_DIGITS = 4000  # below Python's own int-from-text limit (4300)
MAX_DEPTH = 32
FLOAT_MAX_INT = 1 << 1024  # an int at least this large has no float


def _int(text: str) -> int | str:
    digits = len(text.lstrip("-"))
    return int(text) if digits <= MAX_INT_DIGITS else f"<an integer of {digits} digits>"


def loads(text: str) -> Any:
    """json.loads, with overlong integers as marker strings; ValueError for anything unreadable."""
    try:
        return json.loads(text, parse_int=_int)
    except RecursionError:
        raise ValueError("nested too deeply to read") from None


def storable(value: Any) -> Any:
    """`value` as plain JSON values (dates and decimals as text); what JSON cannot write becomes
    a marker string that names why."""
    try:
        return loads(json.dumps(value, default=str))
    except (ValueError, RecursionError) as exc:
        return f"<unrepresentable answer: {str(exc)[:120]}>"


def uncomparable(value: Any, depth: int = 0) -> str | None:
    """Why `value` cannot be compared with a gold answer, or None."""
    if depth > MAX_DEPTH:
        return f"nested deeper than {MAX_DEPTH} levels"
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and abs(value) >= FLOAT_MAX_INT:
        return "a number too large to compare"
    if isinstance(value, float) and not math.isfinite(value):
        return "a number that is not finite"
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for child in children:
        problem = uncomparable(child, depth + 1)
        if problem:
            return problem
    return None
