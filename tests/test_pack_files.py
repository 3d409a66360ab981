"""Every pack file through one door (core.pack.read_pack_file): malformed bytes, non-regular
files, symlinks out of the pack and oversized files are one line naming the file (and the byte
offset), through `load_pack`, `domain validate` and `ingest`, and nothing reaches the graph;
and the HTTP API never runs a pack's loader."""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from dibench.cli.main import main
from dibench.core.config import REPO_ROOT, Settings
from dibench.core.errors import DibenchError, PackErrors
from dibench.core.pack import MAX_PACK_FILE_BYTES, load_pack, read_pack_file
from dibench.ingest.database import load_database
from dibench.ingest.pipeline import ingest_pack
from dibench.service.api import create_app
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import copy_pack, delete_domain, ensure_mini_loaded, snapshot

SECRET = "SECRET-MARKER-31"
Mutation = Callable[[Path, Path], None]


def _write(rel: str, data: bytes) -> Mutation:
    def mutate(root: Path, _outside: Path) -> None:
        (root / rel).write_bytes(data)
    return mutate


def _prefix(rel: str, data: bytes) -> Mutation:
    def mutate(root: Path, _outside: Path) -> None:
        (root / rel).write_bytes(data + (root / rel).read_bytes())
    return mutate


def _link(rel: str, target: Callable[[Path, Path], str]) -> Mutation:
    def mutate(root: Path, outside: Path) -> None:
        (root / rel).unlink(missing_ok=True)
        os.symlink(target(root, outside), root / rel)
    return mutate


def _secret_outside(root: Path, outside: Path) -> str:
    doc = (root / "rules" / "strict.md").read_text().replace("MINI-R-STRICT", "MINI-R-LEAK")
    (outside / "leak.md").write_text(doc + f"\n{SECRET}\n")
    return str(outside / "leak.md")


def _fifo(rel: str) -> Mutation:
    def mutate(root: Path, _outside: Path) -> None:
        os.mkfifo(root / rel)
    return mutate


def _huge(rel: str) -> Mutation:
    def mutate(root: Path, _outside: Path) -> None:
        with (root / rel).open("wb") as fh:
            fh.truncate(MAX_PACK_FILE_BYTES + 1)  # sparse: costs no disk
    return mutate


def _metrics_path(path: str) -> Mutation:
    def mutate(root: Path, outside: Path) -> None:
        (outside / "metrics.yaml").write_text((root / "metrics.yaml").read_text())
        text = (root / "pack.yaml").read_text()
        (root / "pack.yaml").write_text(text + f"metrics: {path}\n")
    return mutate


# (id, mutation, file named, field named, problem fragment)
CASES: list[tuple[str, Mutation, str, str, str]] = [
    ("rule-invalid-utf8", _write("rules/strict.md", b"---\nid: X\xff\n---\nbody\n"), "rules/strict.md", "byte 9",
     "not valid UTF-8"),
    ("rule-latin1", _prefix("rules/phone.md", "caf\u00e9 ".encode("latin-1")), "rules/phone.md", "byte 3",
     "not valid UTF-8"),
    ("pack-binary", _prefix("pack.yaml", b"\x00\x01\x02"), "pack.yaml", "byte 0", "binary content"),
    ("metrics-utf16-bom", _write("metrics.yaml", "metrics: []\n".encode("utf-16")), "metrics.yaml", "byte 0",
     "UTF-16"),
    ("rule-utf16", _write("rules/privacy.md", "---\nid: X\n---\nbody\n".encode("utf-16-le")), "rules/privacy.md",
     "byte 1", "binary content"),
    ("rule-is-a-folder", lambda root, _o: (root / "rules" / "dir.md").mkdir(), "rules/dir.md", "file",
     "not a regular file"),
    ("rule-fifo", _fifo("rules/fifo.md"), "rules/fifo.md", "file", "not a regular file"),
    ("rule-symlink-dev-zero", _link("rules/zero.md", lambda _r, _o: "/dev/zero"), "rules/zero.md", "file",
     "leads out of the pack folder"),
    ("rule-symlink-outside", _link("rules/leak.md", _secret_outside), "rules/leak.md", "file",
     "leads out of the pack folder"),
    ("metrics-symlink-outside", _link("metrics.yaml", lambda _r, o: str(o / "metrics.yaml")), "metrics.yaml", "file",
     "leads out of the pack folder"),
    ("metrics-path-dotdot", _metrics_path("../outside/metrics.yaml"), "metrics.yaml", "file",
     "leads out of the pack folder"),
    ("rules-folder-symlink-outside", lambda root, o: (os.rename(root / "rules", o / "rules"),
                                                      os.symlink(o / "rules", root / "rules")), "rules", "file",
     "leads out of the pack folder"),
    ("rule-too-large", _huge("rules/huge.md"), "rules/huge.md", "file", "larger than"),
    ("metrics-too-large", _huge("metrics.yaml"), "metrics.yaml", "file", "larger than"),
]
PACK_FILE_ATTACKS = len(CASES)


def _pack(tmp_path: Path, name: str, mutate: Mutation) -> Path:
    root = copy_pack(tmp_path / "pack", name)
    outside = tmp_path / "outside"
    outside.mkdir()
    mutate(root, outside)
    return root


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_bad_pack_file_is_one_line_naming_file_and_place(case: tuple[str, Mutation, str, str, str],
                                                           tmp_path: Path, graph: Graph) -> None:
    name, mutate, file, field, problem = case
    domain = f"mini_pf_{name.replace('-', '_')[:20]}"
    root = _pack(tmp_path, domain, mutate)
    with pytest.raises(PackErrors) as caught:
        load_pack(root)
    [hit] = [e for e in caught.value.errors if e.file.endswith(file)]
    assert (hit.field, problem in hit.problem) == (field, True), str(hit)
    assert "Traceback" not in str(hit) and "\n" not in str(hit)
    for argv in (["domain", "validate", "--offline", str(root)], ["ingest", str(root)]):
        if name == "rule-fifo":  # in a process of its own with a time limit: a FIFO must not make it wait
            run = subprocess.run([sys.executable, "-m", "dibench.cli.main", *argv], cwd=REPO_ROOT,
                                 capture_output=True, text=True, timeout=120)
            code, output = run.returncode, run.stdout + run.stderr
        else:
            result = CliRunner().invoke(main, argv)
            code, output = result.exit_code, result.output
        assert f"{file}: {field}: " in output and "Traceback" not in output, output
        assert SECRET not in output
        if argv[0] == "ingest" and file.startswith("rules/"):
            # A refused rule document is left out in one line; the rest of the pack is ingested.
            assert code == 0, output
            assert [line for line in output.splitlines() if f"{file}: {field}: " in line][0].startswith("left out")
        else:
            assert code == 1, output
    nodes, _ = snapshot(graph, domain)
    if not file.startswith("rules/"):
        assert nodes == {}
    delete_domain(graph, domain)
    assert not [r for r in graph.run_raw_read("MATCH (r:Rule) WHERE r.body CONTAINS $s RETURN r.key AS k",
                                              {"s": SECRET})]


def test_a_symlink_inside_the_pack_is_read(tmp_path: Path) -> None:
    def inside(root: Path, _outside: Path) -> None:
        (root / "docs").mkdir()
        os.rename(root / "rules" / "strict.md", root / "docs" / "strict.md")
        os.symlink(root / "docs" / "strict.md", root / "rules" / "strict.md")

    pack = load_pack(_pack(tmp_path, "mini_pf_inside", inside))
    assert "MINI-R-STRICT" in {r.id for r in pack.rules}


def test_a_utf8_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    root = _pack(tmp_path, "mini_pf_bom", _prefix("rules/strict.md", b"\xef\xbb\xbf"))
    assert load_pack(root).rule("MINI-R-STRICT").front.id == "MINI-R-STRICT"
    assert read_pack_file(root / "rules" / "strict.md", root).startswith("---")


def test_the_loader_is_documented_as_code_that_runs() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    assert "A pack's loader is code, and `dibench domain load` runs it." in readme
    help_text = CliRunner().invoke(main, ["domain", "load", "--help"]).output
    assert "RUNS CODE from the pack" in " ".join(help_text.split())


@pytest.mark.parametrize("entry", ["os:system", "os:sep", "pathlib:Path"])
def test_a_loader_entry_that_is_not_a_loader_function_is_one_line(tmp_path: Path, warehouse: Warehouse,
                                                                   entry: str) -> None:
    root = copy_pack(tmp_path / "pack", "mini_pf_entry")
    text = (root / "pack.yaml").read_text()
    (root / "pack.yaml").write_text(text.replace("entry: tests.fixtures.minipack.load:load", f"entry: {entry}"))
    with pytest.raises(DibenchError) as caught:
        load_database(load_pack(root), warehouse)
    assert str(caught.value) == (f"{root}/pack.yaml: loader.entry: {entry} is not a loader function "
                                 f"(a Python def taking engine, schema, **options)")


def test_the_http_api_never_runs_a_loader(tmp_path: Path, graph: Graph, warehouse: Warehouse) -> None:
    """A pack whose loader would leave a marker file: reading it, validating a rule update and
    applying one over HTTP import and call nothing of it."""
    marker = tmp_path / "loader-ran"
    root = copy_pack(tmp_path / "pack", "mini_pf_loader")
    (root / "evil_loader.py").write_text(f"from pathlib import Path\nPath({str(marker)!r}).write_text('imported')\n"
                                        f"def load(*a, **k):\n    Path({str(marker)!r}).write_text('called')\n")
    text = (root / "pack.yaml").read_text()
    (root / "pack.yaml").write_text(text.replace("entry: tests.fixtures.minipack.load:load",
                                                 "entry: evil_loader:load"))
    ensure_mini_loaded(warehouse)  # with the fixture's own loader, before the pack above is in play
    delete_domain(graph, "mini_pf_loader")
    assert ingest_pack(load_pack(root), graph, warehouse).failures == []
    c = TestClient(create_app(Settings(api_token="w", api_pack_roots=[tmp_path])), base_url="http://127.0.0.1")
    document = (root / "rules" / "strict.md").read_text().replace("value: 5", "value: 3")
    try:
        for dry_run in (True, False):
            r = c.post("/rules/update", json={"pack": str(root), "document": document, "file_name": "strict.md",
                                              "dry_run": dry_run}, headers={"Authorization": "Bearer w"})
            assert r.status_code == 200, r.text
        assert not marker.exists()
    finally:
        delete_domain(graph, "mini_pf_loader")


def test_a_loader_entry_may_name_the_packs_own_file(tmp_path: Path) -> None:
    # "load.py:load" was read as a module "load.py" and failed with "No module named 'load'"
    from dibench.ingest.database import _loader

    root = copy_pack(tmp_path / "pack", "mini_pf_file_entry")
    (root / "own_loader.py").write_text("def load(engine, schema, **options):\n    return {'tables': {}}\n")
    text = (root / "pack.yaml").read_text()
    (root / "pack.yaml").write_text(text.replace("entry: tests.fixtures.minipack.load:load",
                                                 "entry: own_loader.py:load"))
    assert _loader(load_pack(root)).__module__ == "dibench_pack_mini_pf_file_entry"
    (root / "pack.yaml").write_text(text.replace("entry: tests.fixtures.minipack.load:load", "entry: gone.py:load"))
    with pytest.raises(DibenchError, match=r"loader.entry: cannot import gone.py"):
        _loader(load_pack(root))
