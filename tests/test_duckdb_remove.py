"""`dibench domain remove --data` on a DuckDB warehouse: the file dibench created goes (with its
WAL); in a file it did not create, only the schema dibench loaded goes, and the file is kept with
what the user had in it; the summary says which. The Jaffle Shop pack on DuckDB, ingested without
edge verification. About 25 s."""
from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from dibench.core.config import get_settings
from dibench.core.errors import DibenchError
from dibench.core.pack import load_pack
from dibench.ingest.database import load_database
from dibench.ingest.pipeline import ingest_pack
from dibench.service.remove import plan_removal, remove_domain
from dibench.stores.duckdb_warehouse import DuckDBWarehouse, close_readers
from dibench.stores.graph import Graph, delete_domain
from dibench.stores.warehouse import open_warehouse

PACK = load_pack("jaffle")


def _duck(path: Path) -> DuckDBWarehouse:
    wh = open_warehouse(get_settings().model_copy(update={"database_url": f"duckdb://{path}"}))
    assert isinstance(wh, DuckDBWarehouse)
    return wh


def _ingested(graph: Graph, wh: DuckDBWarehouse) -> None:
    delete_domain(graph, PACK.name)
    load_database(PACK, wh)
    assert ingest_pack(PACK, graph, wh, verify=False).failures == []


def test_remove_data_deletes_the_file_dibench_created(tmp_path: Path, graph: Graph) -> None:
    path = tmp_path / "shop.duckdb"
    wh = _duck(path)
    try:
        _ingested(graph, wh)
        plan = plan_removal(graph, wh, PACK.name, True)
        assert plan.file == path and plan.schema == "jaffle"
        assert f"file {path} (created by dibench domain load)" in plan.summary()
        remove_domain(graph, wh, plan)
        assert not path.exists() and not path.with_name("shop.duckdb.wal").exists()
    finally:
        delete_domain(graph, PACK.name)


def test_remove_data_keeps_a_file_dibench_did_not_create(tmp_path: Path, graph: Graph) -> None:
    path = tmp_path / "team.duckdb"
    with duckdb.connect(str(path)) as conn:  # the team's own warehouse file, with its own table
        conn.execute("CREATE TABLE main.budget AS SELECT 1 AS year")
    wh = _duck(path)
    try:
        _ingested(graph, wh)
        # a schema dibench did not create (its mark gone) is never dropped: refused, naming the file kept
        close_readers(path)
        with duckdb.connect(str(path)) as conn:
            conn.execute("DELETE FROM _dibench.created WHERE schema_name = 'jaffle'")
        with pytest.raises(DibenchError, match=f"never drops data it did not create .kept file {path}"):
            plan_removal(graph, wh, PACK.name, True)
        wh.mark_created("jaffle")
        plan = plan_removal(graph, wh, PACK.name, True)
        assert plan.file is None and plan.schema == "jaffle"
        assert f"kept file {path}: dibench did not create it" in plan.summary()
        remove_domain(graph, wh, plan)
        assert path.exists() and wh.inspect_schema("jaffle") is None
        assert wh.execute_readonly("SELECT year FROM main.budget").rows == [(1,)]
    finally:
        delete_domain(graph, PACK.name)
