"""Every `dibench` command in a shell block of the README and docs/, and the example at the end
of every command's --help, names a command that exists, with options it has and values it
accepts, checked against the CLI itself (click's own parser)."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest

from dibench.cli.main import main
from dibench.core.config import REPO_ROOT
from dibench.evaluation.tasks import TaskRecord, write_tasks_jsonl
from tests.fixtures.evaldomain import EvalDomain, eval_domain, tasks  # noqa: F401 - fixtures

DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
_PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_]*(\.[a-z]+)?")
_FENCE = re.compile(r"^```(\w*)\s*$")
SHELL = ("", "bash", "sh", "shell", "console")


def shell_blocks(text: str) -> list[tuple[int, list[str]]]:
    """(first line number, lines) of each fenced block in a shell language (fences paired in order)."""
    blocks, lang, start, body = [], None, 0, []
    for n, line in enumerate(text.splitlines(), start=1):
        m = _FENCE.match(line)
        if m and lang is None:
            lang, start, body = m.group(1), n + 1, []
        elif line.startswith("```") and lang is not None:
            if lang in SHELL:
                blocks.append((start, body))
            lang = None
        elif lang is not None:
            body.append(line)
    return blocks


def commands(path: Path) -> list[tuple[int, str]]:
    """(line number, command) of each `dibench ...` line of the file's shell blocks, with its
    indented continuation lines: a trailing comment, a `$ ` prompt and a redirection or pipe
    dropped; optional syntax `[--opt V]` given, and of alternatives `a|b` the first."""
    out: list[tuple[int, str]] = []
    for first, lines in shell_blocks(path.read_text()):
        for i, raw in enumerate(lines):
            line = re.sub(r"\s#\s.*$", "", raw).strip().removeprefix("$ ")
            if raw[:1].isspace() and out and out[-1][0] == first + i - 1 and line[:1] in "[-":
                out[-1] = (first + i, out[-1][1] + " " + _plain(line))  # a synopsis continued
                continue
            if line.startswith("dibench "):
                out.append((first + i, _plain(line)))
    return out


def _plain(line: str) -> str:
    line = re.split(r"\s[|>]\s|\s2>", line)[0]
    return re.sub(r"(\S+?)(?:\|[^\s|\]]+)+", r"\1", line.replace("[", "").replace("]", ""))


ALL = [(f"{p.relative_to(REPO_ROOT)}:{n}", c) for p in DOCS for n, c in commands(p)]


def parse(command: str) -> None:
    """Resolve the command path and parse its arguments as the CLI would, without running it.
    Tolerated: a missing input file, and a value that is a placeholder (N, RUN, TASKS.jsonl)."""
    args = [a for a in shlex.split(command)[1:] if a != "..."]
    cmd: click.Command = main
    ctx = main.make_context("dibench", ["--help"] if not args else [], resilient_parsing=True)
    while isinstance(cmd, click.Group) and args and not args[0].startswith("-"):
        sub = cmd.get_command(ctx, args[0])
        assert sub is not None, f"no command {args[0]!r} under {cmd.name!r}"
        cmd, args = sub, args[1:]
    if isinstance(cmd, click.Group) and not args:
        return
    try:
        cmd.make_context(cmd.name or "", list(args), parent=ctx)
    except click.BadParameter as exc:
        message = exc.format_message()
        placeholders = [a for a in args if _PLACEHOLDER.fullmatch(a)]
        if "does not exist" not in message and not any(f"'{p}'" in message for p in placeholders):
            raise


def test_the_docs_have_commands() -> None:
    assert len(ALL) >= 30, ALL


@pytest.mark.parametrize("where,command", ALL, ids=[w for w, _ in ALL])
def test_documented_command_parses(where: str, command: str) -> None:
    try:
        parse(command)
    except click.ClickException as exc:
        pytest.fail(f"{where}: `{command}`: {exc.format_message()}")


def _leaves(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, click.Command]]:
    out = []
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            out += _leaves(command, (*path, name))
        else:
            out.append((" ".join((*path, name)), command))
    return out


@pytest.mark.parametrize("name,command", _leaves(main), ids=[n for n, _ in _leaves(main)])
def test_every_command_help_ends_with_an_example_that_parses(name: str, command: click.Command) -> None:
    examples = re.findall(r"Example: (dibench [^\n]+)", command.help or "")
    assert examples, f"`dibench {name} --help` gives no example"
    for example in examples:
        assert example.startswith(f"dibench {name}"), example
        try:
            parse(example)
        except click.ClickException as exc:
            pytest.fail(f"`dibench {name} --help`: `{example}`: {exc.format_message()}")


def _readme_line(prefix: str) -> str:
    """The README's shell line that starts with `prefix`, its trailing comment dropped."""
    found = [re.sub(r"\s#\s.*$", "", line).strip() for _, lines in shell_blocks(DOCS[0].read_text())
             for line in lines if line.startswith(prefix)]
    assert found, f"README has no `{prefix}` line"
    return found[0]


def test_readme_inspect_route_runs_as_written(eval_domain: EvalDomain, tasks: list[TaskRecord],  # noqa: F811
                                              tmp_path: Path) -> None:
    """`inspect eval evaluation/inspect_task.py@dibench -T export=out/x ...` from a working
    directory holding `evaluation/` and the export `out/x`: Inspect runs the task file from its
    own folder, and the export path still resolves against the working directory."""
    pytest.importorskip("inspect_ai")
    command = _readme_line("inspect eval ")
    export = re.search(r"export=(\S+)", command)
    assert export is not None and not Path(export.group(1)).is_absolute()
    work = tmp_path / "work"
    work.mkdir()
    (work / "evaluation").symlink_to(REPO_ROOT / "evaluation", target_is_directory=True)
    chosen = [t for t in tasks if t.variant == "standard" and t.gold_sql][:2]
    (work / export.group(1) / "data").mkdir(parents=True)
    write_tasks_jsonl(chosen, work / export.group(1) / "data" / "private.jsonl")
    venv_bin = str(Path(sys.executable).parent)
    script = f"{command} --log-dir {shlex.quote(str(tmp_path / 'logs'))} --display plain"
    res = subprocess.run(["bash", "-c", script], cwd=work, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PATH": f"{venv_bin}:{os.environ['PATH']}", "PWD": str(work)})
    assert res.returncode == 0, (res.stdout + res.stderr)[-2000:]
    assert "accuracy" in res.stdout + res.stderr
