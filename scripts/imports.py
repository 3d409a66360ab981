"""The import graph of the dibench namespace, read from the source (no module is imported).

    .venv/bin/python scripts/imports.py             # each package and the packages it imports
    .venv/bin/python scripts/imports.py --modules   # each module's imports of other packages
    .venv/bin/python scripts/imports.py --cycles    # module import cycles (exit 1 if any)

Every import statement counts, at module level, inside functions and under TYPE_CHECKING.
`from package import name` is an import of the submodule `package.name` when one exists, else of
the package. tests/test_layers.py checks the floors on this graph.
"""
from __future__ import annotations

import ast
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = "dibench"


def folders() -> dict[str, Path]:
    """Package name -> folder, as pyproject's package-dir maps them (the namespace root included)."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    return {name: ROOT / folder for name, folder in mapping.items()}


def module_files() -> dict[str, Path]:
    """Module name -> file, for every Python module of the namespace."""
    out: dict[str, Path] = {}
    for package, folder in folders().items():
        files = sorted(folder.glob("*.py")) if package == NAMESPACE else sorted(folder.rglob("*.py"))
        for path in files:
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([package, *parts])] = path
    return out


def imported_names(path: Path) -> Iterator[tuple[str, str | None, int]]:
    """(module, imported name or None, line) of every import statement in the file."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                yield node.module, alias.name, node.lineno


def import_graph() -> dict[str, set[str]]:
    """Module -> the namespace's modules it imports."""
    mods = module_files()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for module, path in mods.items():
        for target, name, _ in imported_names(path):
            if not (target == NAMESPACE or target.startswith(NAMESPACE + ".")):
                continue
            if name is not None and f"{target}.{name}" in mods:
                target = f"{target}.{name}"
            while target not in mods:
                target = target.rpartition(".")[0]
            if target != module:
                graph[module].add(target)
    return graph


def package_of(module: str) -> str:
    """`dibench.core.config` -> `core`; the namespace root is `dibench`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else NAMESPACE


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {package_of(m): set() for m in graph}
    for module, targets in graph.items():
        out[package_of(module)] |= {package_of(t) for t in targets} - {package_of(module)}
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def main(args: list[str]) -> int:
    graph = import_graph()
    if "--cycles" in args:
        found = cycles(graph)
        for c in found:
            print(" <-> ".join(c))
        print(f"{len(found)} import cycle(s) among {len(graph)} modules")
        return 1 if found else 0
    if "--modules" in args:
        for module in sorted(graph):
            others = sorted(t for t in graph[module] if package_of(t) != package_of(module))
            if others:
                print(f"{module} -> {', '.join(others)}")
        return 0
    for package, targets in sorted(package_graph(graph).items()):
        print(f"{package:11} -> {', '.join(sorted(targets)) or '(nothing of dibench)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
