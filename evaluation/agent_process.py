"""One agent process, run with bounded I/O and a hard time limit.

`run_bounded` starts argv in its own session with only stdin, stdout and stderr open (no other
inherited descriptor), writes the task to stdin, and reads stdout and stderr as bytes: the first
OUTPUT_CAP bytes of each are kept and decoded with replacement, the rest is read and dropped, so
no output can fill the evaluator's memory or end the run. At the time limit its process group is
killed (in a sandbox that kills the whole PID namespace); a process that escaped the group and
keeps the pipes open is waited for at most READ_GRACE seconds.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

OUTPUT_CAP = 1 << 20  # bytes kept of each of stdout and stderr
READ_GRACE = 2.0      # seconds the pipes may stay open after the process ended


@dataclass(frozen=True)
class Finished:
    code: int
    out: str
    err: str
    timed_out: bool
    out_bytes: int  # as the process wrote them, kept or not
    err_bytes: int
    pipes_held: bool  # a process outside the group kept the pipes open past READ_GRACE


class _Reader(threading.Thread):
    def __init__(self, fd: int, cap: int) -> None:
        super().__init__(daemon=True)
        self.fd, self.cap = fd, cap
        self.kept = bytearray()
        self.seen = 0

    def run(self) -> None:
        try:
            while chunk := os.read(self.fd, 1 << 16):
                self.seen += len(chunk)
                if len(self.kept) < self.cap:
                    self.kept += chunk[: self.cap - len(self.kept)]
        except OSError:
            pass

    def text(self) -> str:
        return bytes(self.kept).decode("utf-8", errors="replace")


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
        proc.stdin.close()
    except OSError:  # the agent closed its stdin: not our concern
        pass


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_bounded(argv: Sequence[str], stdin: bytes, env: Mapping[str, str], timeout: float | None,
                cap: int = OUTPUT_CAP) -> Finished:
    """Run argv to its end or the time limit; raises OSError when it cannot start."""
    proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(env), start_new_session=True, close_fds=True)
    assert proc.stdout is not None and proc.stderr is not None
    readers = [_Reader(proc.stdout.fileno(), cap), _Reader(proc.stderr.fileno(), cap)]
    for r in readers:
        r.start()
    threading.Thread(target=_feed, args=(proc, stdin), daemon=True).start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    _kill_group(proc.pid)  # what the agent left in its group ends with it
    code = proc.wait()
    deadline = time.monotonic() + READ_GRACE
    for r in readers:
        r.join(max(0.0, deadline - time.monotonic()))
    held = any(r.is_alive() for r in readers)
    if not held:
        proc.stdout.close()
        proc.stderr.close()
    out, err = readers
    return Finished(code, out.text(), err.text(), timed_out, out.seen, err.seen, held)
