"""What command modules share: the consoles, tables, JSON output, progress bars and error translation.

Kept free of any stage import so every command module can use it without import loops.
"""
from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from dibench.core.errors import DibenchError, PackErrors

if TYPE_CHECKING:
    from dibench.core.config import Settings

F = TypeVar("F", bound=Callable[..., Any])


def get_settings() -> Settings:
    """The settings, read on first use: pydantic-settings is not loaded for `--help` or `-V`."""
    from dibench.core.config import get_settings as settings

    return settings()


def reset_settings() -> None:
    """Read the settings again on next use (a command changed the environment its workers read)."""
    from dibench.core.config import get_settings as settings

    settings.cache_clear()

console = Console()
err_console = Console(stderr=True)


def handle_errors(func: F) -> F:
    """A DibenchError is printed as one line (a PackErrors as one line per error) and exits 1."""
    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        debug = bool(ctx.find_root().params.get("debug"))
        try:
            return func(*args, **kwargs)
        except PackErrors as exc:
            if debug:
                raise
            for e in exc.errors:
                err_console.print(f"[red]error[/red] {e}", highlight=False, soft_wrap=True)
            sys.exit(1)
        except DibenchError as exc:
            if debug:
                raise
            hint = f" (hint: {exc.hint})" if exc.hint else ""
            err_console.print(f"[red]error[/red] {exc}{hint}", highlight=False, soft_wrap=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))


def print_table(title: str, columns: list[str], rows: list[list[Any]]) -> None:
    """A table for people: on a terminal, columns fold long values onto more lines (an identifier
    is never cut); piped, plain tab-separated lines under a `# title` line, whole values each."""
    if not console.is_terminal:
        lines = [f"# {title}", "\t".join(columns), *("\t".join(str(x) for x in r) for r in rows)]
        click.echo("\n".join(lines))
        return
    table = Table(title=title, title_justify="left")
    for c in columns:
        table.add_column(c, overflow="fold")
    for r in rows:
        table.add_row(*[str(x) for x in r])
    console.print(table)


# Piped (not a terminal), a long step says where it is with a plain line this often, in seconds.
HEARTBEAT_S = 5.0


@contextmanager
def heartbeat(describe: Callable[[], str], every: float | None = None) -> Iterator[None]:
    """While the block runs, a plain line on stderr every `every` seconds (HEARTBEAT_S): what
    `describe()` says now and the time so far. For output that is not a terminal, where a
    spinner or a bar shows nothing; a step shorter than `every` prints nothing."""
    every = HEARTBEAT_S if every is None else every
    started, stop = time.monotonic(), threading.Event()

    def beat() -> None:
        while not stop.wait(every):
            click.echo(f"... {describe()} ({time.monotonic() - started:.0f} s)", err=True)

    thread = threading.Thread(target=beat, name="dibench-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@contextmanager
def working(text: str, *, quiet: bool = False) -> Iterator[Callable[[str], None]]:
    """A step that can take a while: a spinner on a terminal, else a plain line every few seconds
    on stderr (none with `quiet`, e.g. under --json). Yields a function that updates the text."""
    if err_console.is_terminal:
        with err_console.status(text) as status:
            yield lambda now: status.update(now)
        return
    current = [text]
    if quiet:
        yield lambda now: None
        return
    with heartbeat(lambda: current[0]):
        yield lambda now: current.__setitem__(0, now)


@contextmanager
def bars(*tasks: tuple[str, int | None]) -> Iterator[list[Callable[[int], None]]]:
    """One rich progress display with a bar per (label, total); yields an advance function per
    bar. Piped, a plain line every few seconds gives each bar's count instead."""
    if not err_console.is_terminal:
        done = [0] * len(tasks)

        def counter(i: int) -> Callable[[int], None]:
            def advance(n: int = 1) -> None:
                done[i] += n
            return advance

        def describe() -> str:
            return "; ".join(f"{label}: {n}" + (f"/{total}" if total else "")
                             for (label, total), n in zip(tasks, done))

        with heartbeat(describe):
            yield [counter(i) for i in range(len(tasks))]
        return
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        ids = [bar.add_task(label, total=total) for label, total in tasks]

        def advancer(task_id: TaskID) -> Callable[[int], None]:
            def advance(n: int = 1) -> None:
                bar.advance(task_id, n)
            return advance

        yield [advancer(t) for t in ids]


@contextmanager
def progress(label: str, total: int | None) -> Iterator[Callable[[int], None]]:
    with bars((label, total)) as (advance,):
        yield advance


def print_shortcut_audit(audit: Any, rejected: dict[str, int] | None = None) -> None:
    """The best no-understanding strategy per analysis type x tier x variant, beside the oracle:
    what a score must beat (generation/shortcuts); then the hold-out strategies' table (never used
    to admit anything). `audit`: a ShortcutAudit or its JSON form."""
    if not audit:
        return
    from dibench.generation.shortcuts.audit import (AUDIT_COLUMNS, HOLDOUT_COLUMNS, HOLDOUT_TITLE, ShortcutAudit,
                                                    audit_rows, holdout_rows)

    table = audit if isinstance(audit, ShortcutAudit) else ShortcutAudit.model_validate(audit)
    print_table(f"best shortcut per analysis type x tier x variant ({table.strategies} strategies that read no "
                "data), beside the oracle", AUDIT_COLUMNS, audit_rows(table))
    if rejected:
        click.echo(f"not admitted, a shortcut passing more than {table.limit_pct:g}% of the family: "
                   + ", ".join(f"{family} {n}" for family, n in rejected.items()))
    held = holdout_rows(table)
    if isinstance(held, str):
        click.echo(f"{HOLDOUT_TITLE}: {held}")
    else:
        print_table(f"{HOLDOUT_TITLE}: best of {table.holdout.strategies if table.holdout else 0} on the knowledge "
                    "tasks", HOLDOUT_COLUMNS, held)
