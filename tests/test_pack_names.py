"""A pack loaded or ingested from a folder of its own is named by its name in later commands
(`dibench ingest waterworks` after `dibench domain load bench/packs/waterworks`), until its data
is removed."""
from __future__ import annotations

from pathlib import Path

import pytest

from dibench.core.errors import PackErrors
from dibench.core.pack import load_pack
from dibench.ingest.database import load_database
from dibench.service.library import ingest_pack
from dibench.service.remove import plan_removal, remove_domain
from dibench.stores.graph import Graph, delete_domain
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import copy_pack, on_schema

NAME = "named_by_name"


def test_a_pack_loaded_from_its_folder_is_found_by_its_name_until_its_data_is_removed(
        tmp_path: Path, graph: Graph, warehouse: Warehouse) -> None:
    root = on_schema(copy_pack(tmp_path / "pack", NAME), NAME)
    delete_domain(graph, NAME)
    try:
        with pytest.raises(PackErrors, match="give the pack's folder"):
            load_pack(NAME)
        load_database(load_pack(root), warehouse)
        assert load_pack(NAME).root.resolve() == root.resolve()
        assert ingest_pack(NAME, verify=False, graph=graph, warehouse=warehouse).failures == []
        remove_domain(graph, warehouse, plan_removal(graph, warehouse, NAME, False))  # the graph only
        assert load_pack(NAME).root.resolve() == root.resolve()  # its data is still loaded
        ingest_pack(root, verify=False, graph=graph, warehouse=warehouse)
        remove_domain(graph, warehouse, plan_removal(graph, warehouse, NAME, True))
        with pytest.raises(PackErrors, match="no pack loaded or ingested under that name"):
            load_pack(NAME)
    finally:
        delete_domain(graph, NAME)


def test_a_built_in_name_is_never_shadowed_by_a_copy_elsewhere(tmp_path: Path) -> None:
    from dibench.core.pack import DOMAINS_DIR, remember_pack

    remember_pack(load_pack(copy_pack(tmp_path / "demo", "demo")))
    assert load_pack("demo").root.resolve() == (DOMAINS_DIR / "demo").resolve()
