"""Layout: routing is a top-level package; every command module lives in cli/, above every stage."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("service", "ingest", "generation", "evaluation", "sqlops", "routing")


def _module(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def _is_command(module: str) -> bool:
    return module == "cli" or module.startswith("cli.")


def _python_files() -> list[Path]:
    """Every project module: top-level folders that are not hidden (state, virtual environment)."""
    tops = [d for d in sorted(ROOT.iterdir()) if d.is_dir() and not d.name.startswith(".")]
    return sorted(ROOT.glob("*.py")) + [p for d in tops for p in sorted(d.rglob("*.py"))]


def test_no_module_outside_cli_imports_a_command_module() -> None:
    offenders = [f"{_module(p)} -> {m}" for p in _python_files()
                 if p.relative_to(ROOT).parts[0] not in ("cli", "tests") for m in _imports(p) if _is_command(m)]
    assert offenders == []


def test_every_command_module_is_in_cli() -> None:
    stray = [_module(p) for stage in STAGES for p in sorted((ROOT / stage).rglob("cli.py"))]
    assert stray == []
    assert (ROOT / "cli" / "main.py").is_file()


def test_command_modules_import_only_cli_common_besides_stages() -> None:
    """Only cli.main registers the others; the rest share cli.common and never import each other."""
    for path in sorted((ROOT / "cli").glob("*.py")):
        if path.name in ("main.py", "common.py", "__init__.py"):
            continue
        assert {m for m in _imports(path) if _is_command(m)} == {"cli.common"}, path.name


def test_console_entry_point_is_the_cli_package() -> None:
    assert 'dibench = "cli.main:main"' in (ROOT / "pyproject.toml").read_text()


def test_routing_is_a_top_level_package() -> None:
    assert (ROOT / "routing" / "__init__.py").is_file()
    assert not (ROOT / "evaluation" / "routing").exists()
