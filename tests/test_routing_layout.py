"""Layout: routing is a top-level package; command modules sit above every stage, never below."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("service", "ingest", "generation", "evaluation", "sqlops", "routing")
COMMAND_MODULES = {"service.cli", "evaluation.cli"}  # to move into cli/ later; cli.* are commands too


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
    return module in COMMAND_MODULES or module == "cli" or module.startswith("cli.")


def test_no_stage_imports_a_command_module() -> None:
    offenders = []
    for stage in STAGES:
        for path in sorted((ROOT / stage).rglob("*.py")):
            if _is_command(_module(path)):
                continue
            offenders += [f"{_module(path)} -> {m}" for m in _imports(path) if _is_command(m)]
    assert offenders == []


def test_routing_commands_import_no_other_command_module() -> None:
    imported = _imports(ROOT / "cli" / "routing.py")
    assert not imported & COMMAND_MODULES
    assert {m for m in imported if m.startswith("cli.")} == {"cli.common"}


def test_routing_is_a_top_level_package() -> None:
    assert (ROOT / "routing" / "__init__.py").is_file()
    assert not (ROOT / "evaluation" / "routing").exists()
