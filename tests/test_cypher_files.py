"""Every Cypher file passes EXPLAIN on the real Neo4j, and every call site passes exactly its parameters."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from dibench.core.config import REPO_ROOT
from dibench.stores.graph import Graph, all_statement_names, apply_schema, load

CALL_METHODS = {"read", "write", "write_returning", "write_rows", "run", "run_rows"}
CODE_DIRS = ["service", "ingest", "generation", "evaluation", "sqlops", "bench"]


def _call_sites() -> dict[str, list[tuple[str, frozenset[str]]]]:
    names = set(all_statement_names())
    sites: dict[str, list[tuple[str, frozenset[str]]]] = {}
    for d in CODE_DIRS:
        for f in (REPO_ROOT / d).rglob("*.py"):
            tree = ast.parse(f.read_text())
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in CALL_METHODS and node.args
                        and isinstance(node.args[0], ast.Constant) and node.args[0].value in names):
                    continue
                if any(k.arg is None for k in node.keywords):
                    continue  # **kwargs: checked at run time by Graph
                kws = {k.arg for k in node.keywords if k.arg}
                if node.func.attr in {"write_rows", "run_rows"}:
                    kws = (kws - {"batch_size", "extra"}) | {"rows"}
                sites.setdefault(node.args[0].value, []).append((f"{f.relative_to(REPO_ROOT)}:{node.lineno}", frozenset(kws)))
    return sites


@pytest.mark.parametrize("name", [n for n in all_statement_names() if not n.startswith("schema/")])
def test_explain(graph: Graph, name: str) -> None:
    stmt = load(name)
    with graph.driver.session(database=graph.database) as s:
        s.run("EXPLAIN " + stmt.text, {p: None for p in stmt.params}).consume()


def test_call_sites_pass_exactly_the_file_parameters() -> None:
    problems = []
    for name, sites in _call_sites().items():
        expected = load(name).params
        for where, given in sites:
            if given != expected and not (given < expected and "extra" in given):
                problems.append(f"{where}: {name} expects {sorted(expected)}, call passes {sorted(given)}")
    assert not problems, "\n".join(problems)


def test_schema_is_idempotent(graph: Graph) -> None:
    apply_schema(graph)
    assert apply_schema(graph) == {}


def test_unknown_statement_and_bad_params_are_errors(graph: Graph) -> None:
    from dibench.core.errors import GraphError

    with pytest.raises(GraphError, match="no Cypher statement"):
        graph.read("does_not_exist")
    names = [n for n in all_statement_names() if not n.startswith("schema/") and load(n).params]
    if names:
        with pytest.raises(GraphError, match="parameters do not match"):
            graph.read(names[0], unexpected_param=1)


def test_cypher_dir_has_only_cypher_files() -> None:
    assert all(p.suffix == ".cypher" for p in Path(REPO_ROOT / "cypher").rglob("*") if p.is_file())
