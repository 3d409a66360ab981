"""What a newcomer meets: servers that do not collide by default, and progress also when piped."""
from __future__ import annotations

import re
import time
import tomllib

import click
import pytest

from dibench.cli import common
from dibench.cli.main import main
from dibench.core.config import REPO_ROOT


def _port_default(path: list[str]) -> int:
    ctx = click.Context(main)
    cmd: click.Command | None = main
    for name in path:
        assert isinstance(cmd, click.Group)
        cmd = cmd.get_command(ctx, name)
    assert cmd is not None
    [port] = [p for p in cmd.params if p.name == "port"]
    assert isinstance(port.default, int)
    return port.default


def test_mcp_and_serve_default_to_different_ports() -> None:
    assert _port_default(["serve"]) == 8765
    assert _port_default(["mcp"]) == 8766


def test_piped_steps_say_where_they_are_every_few_seconds(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Not on a terminal (a pipe, CI), a long step prints a plain line every HEARTBEAT_S seconds
    with what it is doing now and the time so far; a bar prints its counts."""
    monkeypatch.setattr(common, "HEARTBEAT_S", 0.05)
    with common.working("ingesting demo") as update:
        time.sleep(0.2)
        update("ingesting demo: rules")
        time.sleep(0.2)
    with common.bars(("executing gold SQL", 10), ("building contracts", None)) as (sql, built):
        sql(3)
        built(2)
        time.sleep(0.2)
    err = capsys.readouterr().err.splitlines()
    assert any(re.fullmatch(r"\.\.\. ingesting demo \(\d+ s\)", line) for line in err), err
    assert any(line.startswith("... ingesting demo: rules (") for line in err), err
    assert any(line.startswith("... executing gold SQL: 3/10; building contracts: 2 (") for line in err), err
    with common.working("quiet under --json", quiet=True):
        time.sleep(0.2)
    assert capsys.readouterr().err == ""


def test_every_packed_data_folder_is_a_declared_package() -> None:
    """A quiet install: setuptools warns ("Package would be ignored") about any folder of package
    data that Python could import but `packages` does not name, as a pack's rules/ folder."""
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    packages = set(config["packages"])
    for pack in sorted((REPO_ROOT / "domains").glob("*/pack.yaml")):
        rules = f"dibench.domains.{pack.parent.name}.rules"
        assert rules in packages, f"pyproject.toml: add {rules} to [tool.setuptools] packages"
        assert config["package-data"][rules] == ["*.md"]
    assert "PYTHONWARNINGS=\"ignore:Editable installation\"" in (REPO_ROOT / "scripts" / "install.sh").read_text()
