"""One validation for every path that writes: a rule document `domain validate` refuses is refused
by update-rule (CLI, HTTP, HTTP dry run), remove-rule and ingest with the same line, before
anything is written; the graph and the warehouse are fingerprinted before and after.

The documents are the three of the hostile corpus that update-rule used to accept: a predicate
reading another domain's schema, a predicate that does not parse, and a threshold on a parameter
the metric lacks.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from sqlalchemy import text

from dibench.cli.main import main
from dibench.core.config import Settings
from dibench.core.errors import PackErrors
from dibench.core.pack import Pack, load_pack
from dibench.ingest.pipeline import ingest_pack
from dibench.ingest.validate import validate_pack
from dibench.service.api import create_app
from dibench.service.queries import graph_stats
from dibench.service.update import plan_remove
from dibench.service.update_write import run_update
from dibench.stores import fingerprint as fpr
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import delete_domain, edit_front, snapshot
from tests.test_update import generated_domain

DOMAIN = "mini_val31"
WRITE = "val-write"
Edit = Callable[[dict[str, Any]], None]
BAD: dict[str, tuple[str, Edit, str]] = {
    "another-schema": ("outliers.md", lambda f: f["effects"][0].update(
        predicate="o.customer_id IN (SELECT c2.customer_id FROM pagila.customer AS c2)"), "effects.0.predicate"),
    "unparseable": ("outliers.md", lambda f: f["effects"][0].update(predicate="o.amount >>> (2000"),
                    "effects.0.predicate"),
    "unknown-parameter": ("strict.md", lambda f: f["effects"][0].update(param="no_such_param"), "effects.0.param"),
}


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory, graph: Graph, warehouse: Warehouse) -> Iterator[Pack]:
    pk = generated_domain(tmp_path_factory.mktemp("val") / "pack", DOMAIN, graph, warehouse, target=6)
    yield pk
    delete_domain(graph, DOMAIN)


def state(graph: Graph, wh: Warehouse, pack: Pack) -> str:
    """A digest of everything a write could change: the domain's nodes and edges with their
    properties, the whole graph's counts, the schema's data, its roles and their privileges."""
    nodes, edges = snapshot(graph, DOMAIN)
    with wh.admin().connect() as conn:
        roles = conn.execute(text("SELECT rolname, rolsuper, rolcreaterole, rolcanlogin FROM pg_roles "
                                  "ORDER BY rolname")).all()
        grants = conn.execute(text("SELECT grantee, table_schema, table_name, privilege_type FROM "
                                   "information_schema.role_table_grants WHERE table_schema = :s ORDER BY 1, 2, 3, 4"),
                              {"s": pack.schema}).all()
    blob = json.dumps([sorted(nodes.items()), sorted((list(k), v) for k, v in edges.items()), graph_stats(graph, None),
                       fpr.pack_fingerprint(wh, pack), [list(r) for r in roles], [list(g) for g in grants]],
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def bad_copy(pack: Pack, tmp_path: Path, case: str, wh: Warehouse) -> tuple[Path, Path, list[str]]:
    """A copy of the pack with one bad document; its path; `domain validate`'s lines for it."""
    root = tmp_path / "bad"
    shutil.copytree(pack.root, root)
    file, edit, _field = BAD[case]
    edit_front(root / "rules" / file, edit)
    validated, problems = validate_pack(root, wh)
    assert validated is not None
    lines = [str(p) for p in problems if p.file.endswith(f"rules/{file}")]
    assert lines, case
    return root, root / "rules" / file, lines


@pytest.mark.parametrize("case", sorted(BAD))
def test_update_rule_refuses_what_validate_refuses_and_writes_nothing(
        case: str, pack: Pack, graph: Graph, warehouse: Warehouse, tmp_path: Path) -> None:
    root, doc, lines = bad_copy(pack, tmp_path, case, warehouse)
    assert all(BAD[case][2] in line for line in lines), lines
    before = state(graph, warehouse, pack)
    for argv in (["update-rule", str(doc)], ["update-rule", "--dry-run", str(doc)]):
        r = CliRunner().invoke(main, argv)
        assert r.exit_code == 1, r.output
        shown = [line.removeprefix("error ") for line in r.output.splitlines() if line.startswith("error ")]
        assert shown == lines, (shown, lines)
    api = TestClient(create_app(Settings(api_token=WRITE, api_pack_roots=[tmp_path])), base_url="http://127.0.0.1")
    for dry_run in (True, False):
        r = api.post("/rules/update", json={"pack": str(root), "document": doc.read_text(), "file_name": doc.name,
                                            "dry_run": dry_run}, headers={"Authorization": f"Bearer {WRITE}"})
        assert r.status_code == 422 and r.json()["error"] == "PackErrors", r.text
        assert r.json()["detail"].splitlines() == [line.split(str(tmp_path / "bad") + "/", 1)[-1] for line in lines]
        assert str(tmp_path) not in r.text
    assert state(graph, warehouse, pack) == before


def test_remove_rule_refuses_a_pack_validate_refuses(pack: Pack, graph: Graph, warehouse: Warehouse,
                                                     tmp_path: Path) -> None:
    _root, _doc, lines = bad_copy(pack, tmp_path, "another-schema", warehouse)
    before = state(graph, warehouse, pack)
    bad = load_pack(tmp_path / "bad")
    with pytest.raises(PackErrors) as caught:
        run_update(lambda: plan_remove(graph, "MINI-R-PHONE", DOMAIN, bad, warehouse), graph, DOMAIN)
    assert [str(e) for e in caught.value.errors] == lines
    r = CliRunner().invoke(main, ["remove-rule", "MINI-R-PHONE", "--domain", DOMAIN, "--pack", str(tmp_path / "bad")])
    assert r.exit_code == 1 and [x.removeprefix("error ") for x in r.output.splitlines()] == lines, r.output
    assert state(graph, warehouse, pack) == before


@pytest.mark.parametrize("case", sorted(BAD))
def test_ingest_leaves_the_document_out_with_the_same_line(case: str, pack: Pack, graph: Graph,
                                                           warehouse: Warehouse, tmp_path: Path) -> None:
    root, _doc, lines = bad_copy(pack, tmp_path, case, warehouse)
    before = state(graph, warehouse, pack)
    report = ingest_pack(load_pack(root), graph, warehouse)
    assert report.failures == lines
    assert state(graph, warehouse, pack) == before


def test_ingest_refuses_a_catalog_validate_refuses(pack: Pack, graph: Graph, warehouse: Warehouse,
                                                   tmp_path: Path) -> None:
    root = tmp_path / "bad"
    shutil.copytree(pack.root, root)
    (root / "metrics.yaml").write_text((root / "metrics.yaml").read_text().replace("mini.orders", "pagila.orders", 1))
    _, problems = validate_pack(root, warehouse)
    before = state(graph, warehouse, pack)
    with pytest.raises(PackErrors) as caught:
        ingest_pack(load_pack(root), graph, warehouse)
    assert [str(e) for e in caught.value.errors] == [str(p) for p in problems if p.file.endswith("metrics.yaml")]
    assert state(graph, warehouse, pack) == before
