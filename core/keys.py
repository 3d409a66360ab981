"""Stable natural keys of graph nodes, scoped by domain."""
from __future__ import annotations

import hashlib
import json
from typing import Any


def table_key(domain: str, table: str) -> str:
    return f"table:{domain}/{table}"


def dimension_key(domain: str, column: str) -> str:
    return f"dim:{domain}/{column}"


def metric_key(domain: str, metric_id: str) -> str:
    return f"metric:{domain}/{metric_id}"


def rule_key(domain: str, rule_id: str) -> str:
    return f"rule:{domain}/{rule_id}"


def rule_version_key(domain: str, rule_id: str, content_hash: str) -> str:
    return f"rulever:{domain}/{rule_id}@{content_hash[:12]}"


def props_hash(props: Any) -> str:
    return hashlib.sha256(json.dumps(props, sort_keys=True, default=str).encode()).hexdigest()[:16]


def row(key: str, props: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"key": key, "props": props, "hash": props_hash(props), **extra}
