"""Public identifiers and natural-language names derived from schema identifiers."""
from __future__ import annotations

import re
import secrets

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[a-z0-9]+")


def mint_public_id() -> str:
    """A fresh opaque id from the OS's secure random source.

    Nothing public (the release, the catalog name, the database name) determines it, so the
    public Spider release cannot be hashed back onto the ids; only the private CatalogLocation
    nodes hold the mapping.
    """
    return "db_" + secrets.token_hex(5)


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
