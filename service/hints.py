"""Why a graph query may have selected nothing: the labels, relationship types and properties it
names that the graph does not hold, each with the nearest names the graph does hold."""
from __future__ import annotations

import difflib
import re

from dibench.stores.graph import Graph

# `(v:Label {k: …})` and `[v:TYPE {k: …}]`; `v.k` for a variable bound to a label. Names the
# graph holds are never reported, so a pattern this misreads costs at most a missing hint.
_PATTERN = re.compile(r"([(\[])\s*(\w*)\s*:\s*`?(\w+)`?\s*(\{[^}]*\})?")
_KEY = re.compile(r"(\w+)\s*:")
_ACCESS = re.compile(r"\b(\w+)\.(\w+)")
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")


def _vocabulary(graph: Graph) -> dict[str, dict[str, set[str]]]:
    """{"node" | "relationship": {label or type: its property keys}}."""
    out: dict[str, dict[str, set[str]]] = {"node": {}, "relationship": {}}
    for row in graph.read("graph_vocabulary"):
        name = str(row["name"]).strip(":`")
        out[row["kind"]].setdefault(name, set()).update(row["properties"])
    return out


def unknown_names(graph: Graph, cypher: str) -> list[str]:
    """One line per label, relationship type or property the query names that the graph does not
    hold (a property checked against the label or type it is used on), with the nearest ones."""
    vocab = _vocabulary(graph)
    text = _STRING.sub("''", cypher)  # names inside string literals are values, not names
    bound: dict[str, str] = {}  # variable -> its label or type
    lines: list[str] = []
    for bracket, var, name, props in _PATTERN.findall(text):
        kind = "node" if bracket == "(" else "relationship"
        known = vocab[kind]
        if name not in known:
            lines.append(_line("label" if kind == "node" else "relationship type", name, set(known)))
            continue
        if var:
            bound[var] = name
        for key in _KEY.findall(props or "")[:20]:
            if key not in known[name]:
                lines.append(_line("property", key, known[name], on=name))
    props_of = {**vocab["relationship"], **vocab["node"]}
    for var, key in _ACCESS.findall(text):
        if var in bound and key not in props_of[bound[var]]:
            lines.append(_line("property", key, props_of[bound[var]], on=bound[var]))
    return list(dict.fromkeys(lines))


def _line(kind: str, name: str, known: set[str], on: str = "") -> str:
    near = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.5)
    return (f"the graph has no {kind} {name!r}" + (f" on {on}" if on else "")
            + (f" (nearest: {', '.join(near)})" if near else ""))
