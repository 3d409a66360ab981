"""The layout: one namespace, three floors imported only downward, no import cycle, command
modules on top, and docstrings that state contracts (docs/architecture.md, "Three floors")."""
from __future__ import annotations

import ast
import importlib.util
import re
import tomllib
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
GROUND = {"core", "sqlops", "stores"}
STAGES = {"ingest", "generation", "evaluation", "routing"}
# package -> the other packages its modules may import
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "sqlops": {"core"},
    "stores": {"core", "sqlops"},
    **{stage: GROUND for stage in STAGES},
    "domains": {"core", "stores"},
    "service": GROUND | STAGES,
    "cli": GROUND | STAGES | {"service", "dibench"},
    "dibench": {"service"},
}
OLD_TOP_LEVEL = {"cli", "service", "ingest", "generation", "evaluation", "routing", "sqlops", "domains", "core",
                 "stores"}
DOCSTRING_LINES = 12


def _imports_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dibench_imports_script", ROOT / "scripts" / "imports.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


IMPORTS = _imports_script()
GRAPH: dict[str, set[str]] = IMPORTS.import_graph()


def _project_python_files() -> list[Path]:
    skip = {".venv", ".git", ".dibench", "node_modules", "build"}
    return sorted(p for p in ROOT.rglob("*.py") if not skip & set(p.relative_to(ROOT).parts))


def test_every_package_has_a_row_in_the_table() -> None:
    assert set(IMPORTS.package_graph(GRAPH)) <= set(ALLOWED)


def test_packages_import_only_downward() -> None:
    upward = [f"{module} -> {target}" for module, targets in sorted(GRAPH.items()) for target in sorted(targets)
              if IMPORTS.package_of(target) != IMPORTS.package_of(module)
              and IMPORTS.package_of(target) not in ALLOWED[IMPORTS.package_of(module)]]
    assert upward == []


def test_no_import_cycle_between_modules() -> None:
    assert IMPORTS.cycles(GRAPH) == []


def test_the_cycle_check_sees_a_cycle() -> None:
    assert IMPORTS.cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_nothing_imports_the_old_top_level_names() -> None:
    """Every module, test, benchmark and script imports the namespace, never `service.x` or `cli`."""
    old = [f"{p.relative_to(ROOT)}:{line} {module}" for p in _project_python_files()
           for module, _, line in IMPORTS.imported_names(p) if module.split(".")[0] in OLD_TOP_LEVEL]
    assert old == []


def test_nothing_below_the_commands_imports_a_command_module() -> None:
    offenders = [f"{m} -> {t}" for m, targets in GRAPH.items() for t in targets
                 if IMPORTS.package_of(t) == "cli" and IMPORTS.package_of(m) != "cli"]
    assert offenders == []


def test_command_modules_import_only_cli_common_besides_the_floors_below() -> None:
    """Only cli.main registers the others; the rest share cli.common and never import each other."""
    for module in sorted(m for m in GRAPH if IMPORTS.package_of(m) == "cli"):
        if module in ("dibench.cli", "dibench.cli.main", "dibench.cli.common"):
            continue
        assert {t for t in GRAPH[module] if IMPORTS.package_of(t) == "cli"} == {"dibench.cli.common"}, module


def test_every_package_folder_is_installed_under_the_namespace() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    found = {m for m, path in IMPORTS.module_files().items() if path.name == "__init__.py"}
    assert found <= listed
    assert all(p == "dibench" or p.startswith("dibench.") for p in listed)
    assert {Path(folder).parts[0] for folder in setuptools["package-dir"].values()} <= OLD_TOP_LEVEL | {"dibench",
                                                                                                        "cypher"}


def test_console_entry_point_is_the_cli_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"dibench": "dibench.cli.main:main"}


def test_routing_is_a_top_level_package() -> None:
    assert (ROOT / "routing" / "__init__.py").is_file()
    assert not (ROOT / "evaluation" / "routing").exists()


def test_the_namespace_offers_the_python_api_and_its_version() -> None:
    import dibench

    import dibench.ingest  # the stage's package: the API's names must not be shadowed by a subpackage

    assert re.fullmatch(r"\d+\.\d+\.\d+", dibench.__version__)
    api = {name: getattr(dibench, name) for name in ("load_pack", "ingest_pack", "generate", "export", "score")}
    assert {name: type(f).__name__ for name, f in api.items()} == dict.fromkeys(api, "function")


def test_code_never_cites_an_issue_number() -> None:
    code = [p for p in _project_python_files()] + sorted((ROOT / "cypher").rglob("*.cypher")) \
        + sorted((ROOT / "scripts").rglob("*.sh"))
    cites = [f"{p.relative_to(ROOT)}:{n}" for p in code for n, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(r"\bissues? \d+", line, re.IGNORECASE)]
    assert cites == []


def test_module_docstrings_stay_short() -> None:
    """Design narratives live in docs/architecture.md; a module's docstring states its contract."""
    long = []
    for module, path in IMPORTS.module_files().items():
        doc = ast.get_docstring(ast.parse(path.read_text()), clean=False)
        if doc and doc.count("\n") + 1 > DOCSTRING_LINES:
            long.append(f"{module}: {doc.count(chr(10)) + 1} lines")
    assert long == []
