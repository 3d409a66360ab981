"""PID 1 of an agent's sandbox (evaluation/sandbox.py runs it with the system python3, stdlib only).

`python3 init.py PORT SOCKET LIMITS_JSON -- COMMAND...`: listens on 127.0.0.1:PORT inside the
sandbox's own network namespace and forwards every connection to the attempt's MCP server on the
Unix socket bound at SOCKET; forks COMMAND with the rlimits of LIMITS_JSON applied in the child;
waits for it and exits with its status. Being PID 1, its exit makes the kernel kill every other
process of the namespace: nothing the agent started outlives the attempt. It answers no signal
sent from inside the sandbox (the kernel shields a namespace's init), so the agent cannot stop it.
"""
from __future__ import annotations

import json
import os
import resource
import socket
import sys
import threading

LIMITS = {"memory_bytes": resource.RLIMIT_AS, "processes": resource.RLIMIT_NPROC,
          "file_bytes": resource.RLIMIT_FSIZE, "cpu_seconds": resource.RLIMIT_CPU}


def pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while chunk := src.recv(65536):
            dst.sendall(chunk)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def forward(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            client.close()
            upstream.close()
            continue
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()


def main(argv: list[str]) -> int:
    port, path, limits = int(argv[0]), argv[1], json.loads(argv[2])
    command = argv[argv.index("--") + 1:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    threading.Thread(target=forward, args=(listener, path), daemon=True).start()
    child = os.fork()
    if child == 0:
        listener.close()
        for name, value in limits.items():
            resource.setrlimit(LIMITS[name], (value, value))
        try:
            os.execvp(command[0], command)
        except OSError as exc:
            os.write(2, f"cannot start {command[0]!r}: {exc.strerror}\n".encode())
            os._exit(127)
    while True:
        pid, status = os.waitpid(-1, 0)  # reaps orphans too; only the agent's end matters
        if pid == child:
            return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))  # at once: the forwarding threads need no goodbye
