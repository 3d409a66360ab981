"""Where `dibench eval` wrote its runs, so `dibench report` finds them without `--results`.

Each finished run's folder is one line of `<state_dir>/eval-runs.txt` (absolute paths, owner-only
like the rest of the state folder). The report reads the default results folder `out/eval` (of
the working directory) and every listed folder that still holds a run.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_RESULTS = Path("out") / "eval"
INDEX = "eval-runs.txt"


def record(state_dir: Path, out_dir: Path) -> None:
    """Remember that a run was written to `out_dir` (and forget folders that are gone)."""
    index = state_dir / INDEX
    where = str(out_dir.resolve())
    known = index.read_text(encoding="utf-8").splitlines() if index.is_file() else []
    kept = [line for line in known if line != where and Path(line).is_dir()]
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    draft = index.with_name(f".{INDEX}.{os.getpid()}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("".join(f"{line}\n" for line in [*kept, where]))
    os.replace(draft, index)


def _has_run(folder: Path) -> bool:
    return folder.is_dir() and next(folder.rglob("summary.json"), None) is not None


@dataclass(frozen=True)
class Found:
    folders: list[Path]
    listed: int  # folders of the index that still hold a run

    def line(self, state_dir: Path) -> str:
        """Where the report looked, in one line."""
        return (f"evaluation runs: looked in {DEFAULT_RESULTS}/ (the default of `dibench eval`) and the "
                f"{self.listed} other folder(s) `dibench eval -o` wrote ({state_dir / INDEX}); "
                "--results DIR names others")


def result_folders(state_dir: Path) -> Found:
    """The default results folder (when it holds a run) and every recorded run folder outside it."""
    folders = [DEFAULT_RESULTS] if _has_run(DEFAULT_RESULTS) else []
    roots = [f.resolve() for f in folders]
    listed = 0
    index = state_dir / INDEX
    for line in index.read_text(encoding="utf-8").splitlines() if index.is_file() else []:
        folder = Path(line)
        if not (folder / "summary.json").is_file() or any(folder == r or r in folder.parents for r in roots):
            continue
        folders.append(folder)
        roots.append(folder)
        listed += 1
    return Found(folders, listed)
