"""Run mypy on the dibench namespace.

The design card's top-level folders are mapped into `dibench` by pyproject's `package-dir`;
mypy cannot follow that mapping, so this builds a tree of links laid out as the installed package
(`<state dir>/typecheck/dibench/core -> core`, ...) and checks it, printing paths as they are in
the repository. Arguments are passed to mypy.

    .venv/bin/python scripts/typecheck.py
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def link_tree(state: Path) -> Path:
    """A fresh folder holding `dibench/` as the installed layout, made of links into ROOT."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    tree = state / "typecheck"
    shutil.rmtree(tree, ignore_errors=True)
    package = tree / "dibench"
    package.mkdir(parents=True)
    for entry in (ROOT / mapping["dibench"]).iterdir():
        if entry.suffix == ".py":
            (package / entry.name).symlink_to(entry)
    for name, folder in mapping.items():
        if name != "dibench":
            (package / name.split(".", 1)[1]).symlink_to(ROOT / folder, target_is_directory=True)
    return tree


def main(args: list[str]) -> int:
    state = Path(os.environ.get("DIBENCH_STATE_DIR") or ROOT / ".dibench")
    tree = link_tree(state)
    mypy = Path(sys.executable).with_name("mypy")
    run = subprocess.run([str(mypy), "--config-file", str(ROOT / "pyproject.toml"), *args], cwd=tree,
                         capture_output=True, text=True)
    prefix = "dibench/"
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    folders = sorted(((k.split(".", 1)[1] + "/", v + "/") for k, v in mapping.items() if k != "dibench"),
                     key=lambda kv: -len(kv[0]))
    for line in (run.stdout + run.stderr).splitlines():
        if line.startswith(prefix):
            rest = line[len(prefix):]
            line = next((real + rest[len(linked):] for linked, real in folders if rest.startswith(linked)),
                        "dibench/" + rest)
        print(line)
    return run.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
