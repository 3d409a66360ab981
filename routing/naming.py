"""Public identifiers and natural-language names derived from schema identifiers."""
from __future__ import annotations

import hashlib
import re

# Fixed salt: the same catalog and database always get the same opaque id, and the id cannot
# be turned back into the original database name without the private mapping.
_ID_SALT = "dibench-routing-v1"
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[a-z0-9]+")


def public_id(catalog: str, db_name: str) -> str:
    digest = hashlib.sha256(f"{_ID_SALT}:{catalog}:{db_name}".encode()).hexdigest()
    return "db_" + digest[:10]


def words(identifier: str) -> list[str]:
    """`born_state` -> [born, state]; `StudentID` -> [student, id]."""
    return _WORD.findall(_CAMEL.sub(" ", identifier).lower())


def natural(identifier: str) -> str:
    return " ".join(words(identifier))


def singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def entity_label(table: str) -> str:
    """The entity a table holds, as a singular phrase: `Ref_Document_Types` -> `ref document type`."""
    ws = words(table)
    if not ws:
        return table.lower()
    return " ".join(ws[:-1] + [singular(ws[-1])])


def tokens(text: str) -> list[str]:
    """Lower-case word tokens with a light singularisation, for overlap checks."""
    return [singular(w) for w in _WORD.findall(_CAMEL.sub(" ", text).lower())]
