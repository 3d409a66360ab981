"""Defaults a newcomer meets: the two servers a person may run side by side do not collide."""
from __future__ import annotations

import click

from dibench.cli.main import main


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
