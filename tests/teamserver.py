"""The team server run for real: `hivelore serve` processes on loopback ports. The session's `server`
(tests/conftest.py) is one of them; tests/server/ starts more of its own (a rate limit, a restart)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

START_TIMEOUT_S = 30


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_server(database_url: str, log: Path, *extra: str, port: int | None = None) -> Server:
    port = port or free_port()
    argv = [sys.executable, "-m", "hivelore", "serve", "--db", database_url, "--port", str(port), *extra]
    return started(argv, port, log)


def started(argv: list[str], port: int, log: Path) -> Server:
    """A team server run by `argv` on `port` (its output in `log`), once its /readyz answers 200."""
    with log.open("ab") as sink:
        process = subprocess.Popen(argv, stdout=sink, stderr=sink)
    server = Server(f"http://127.0.0.1:{port}", process, log)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"hivelore serve exited with {process.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(f"{server.url}/readyz", timeout=1).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    server.stop()
    raise AssertionError(f"hivelore serve was not ready in {START_TIMEOUT_S} s:\n{log.read_text()}")
