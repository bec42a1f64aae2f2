"""`hivelore serve` started before PostgreSQL answers: it waits and retries, saying so in one log line per
attempt, rather than exit; it serves once PostgreSQL is reachable; SIGTERM while it waits ends it with exit 0.

The real command as a subprocess, on a loopback port where nothing listens; "PostgreSQL comes up" is a
relay opened on that port later, to the run's real PostgreSQL (a server process cannot be started on a
port of the test's choosing here)."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import free_port

WAIT_S = 10


def serve(database_url: str, log: Path) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "hivelore", "serve", "--db", database_url, "--port", str(free_port()), "--no-meaning"]
    with log.open("ab") as sink:
        return subprocess.Popen(argv, stdout=sink, stderr=sink)


def log_lines(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]


def wait_for(what: str, log: Path, process: subprocess.Popen[bytes], count: int = 1) -> list[dict]:
    """The log lines whose message holds `what`, once there are `count` of them."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        found = [line for line in log_lines(log) if what in line["msg"]]
        if len(found) >= count:
            return found
        assert process.poll() is None, f"serve exited with {process.returncode}:\n{log.read_text()}"
        time.sleep(0.05)
    raise AssertionError(f"no {count} log lines with {what!r} in {WAIT_S} s:\n{log.read_text()}")


def on_port(url: str, port: int) -> str:
    return url.replace("127.0.0.1:5432", f"127.0.0.1:{port}")


@pytest.fixture
def closed_port() -> int:
    return free_port()


def test_serve_waits_for_postgresql_then_serves(database_url: str, closed_port: int, tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    process = serve(on_port(database_url, closed_port), log)
    try:
        first, second = wait_for("retrying in", log, process, count=2)[:2]
        assert first["level"] == "warning"
        assert first["msg"].startswith(f"PostgreSQL at 127.0.0.1:{closed_port} is not answering (")
        assert "Connection refused" in first["msg"]
        assert first["msg"].endswith("retrying in 1 s — start it or fix --db")
        assert second["msg"].endswith("retrying in 2 s — start it or fix --db")  # the waits grow
        with relay(closed_port, 5432):
            port = int(process.args[process.args.index("--port") + 1])  # type: ignore[union-attr]
            ready = _ready(f"http://127.0.0.1:{port}/readyz", process, log)
            assert ready, f"serve did not serve once PostgreSQL answered:\n{log.read_text()}"
            process.send_signal(signal.SIGTERM)
            process.wait(WAIT_S)  # uvicorn shuts down, then ends itself by the signal it caught (exit -15)
            assert "Application shutdown complete." in [line["msg"] for line in log_lines(log)]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_sigterm_while_waiting_ends_serve_with_exit_0(database_url: str, closed_port: int, tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    process = serve(on_port(database_url, closed_port), log)
    try:
        wait_for("is not answering", log, process)
        process.send_signal(signal.SIGTERM)
        assert process.wait(WAIT_S) == 0, log.read_text()
        assert log_lines(log)[-1]["msg"] == "stopped before PostgreSQL answered"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_add_user_does_not_wait(database_url: str, closed_port: int, tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "hivelore", "serve", "--db", on_port(database_url, closed_port), "--add-user", "x"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=WAIT_S)
    assert done.returncode == 1
    assert done.stderr.strip().endswith("is PostgreSQL running, and is the URL right?")
    assert "cannot reach the database (connection failed:" in done.stderr


def _ready(url: str, process: subprocess.Popen[bytes], log: Path) -> bool:
    deadline = time.monotonic() + WAIT_S * 2
    while time.monotonic() < deadline:
        assert process.poll() is None, f"serve exited with {process.returncode}:\n{log.read_text()}"
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return True
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    return False


class relay:
    """Bytes between `port` and `target` on 127.0.0.1, each connection in two threads, while in use."""

    def __init__(self, port: int, target: int) -> None:
        self.listener = socket.create_server(("127.0.0.1", port))
        self.target = target

    def __enter__(self) -> relay:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *_: object) -> None:
        self.listener.close()

    def _accept(self) -> None:
        for client in self._clients():
            upstream = socket.create_connection(("127.0.0.1", self.target))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(a, b), daemon=True).start()

    def _clients(self) -> Iterator[socket.socket]:
        while True:
            try:
                yield self.listener.accept()[0]
            except OSError:  # closed
                return


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):  # either end closed: the relay of this connection is over
        while data := source.recv(65536):
            sink.sendall(data)
    for end in (source, sink):
        with contextlib.suppress(OSError):
            end.shutdown(socket.SHUT_RDWR)
