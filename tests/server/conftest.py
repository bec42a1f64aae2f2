"""The team server for real: `hivelore serve` processes on loopback ports, over the run's own database
(tests/conftest.py `database_url`). Users and tokens are
made with the server's own account functions on a direct connection, the way `serve --add-user` does."""

from __future__ import annotations

import itertools
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest

from hivelore.server.postgres import accounts

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


@pytest.fixture(scope="session")
def server(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(database_url, tmp_path_factory.mktemp("server") / "server.log")
    yield running
    running.stop()


@pytest.fixture(scope="session")
def unlimited(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A replica with a rate limit no test reaches: for generated requests and load."""
    running = start_server(
        database_url, tmp_path_factory.mktemp("unlimited") / "server.log", "--requests-per-minute", "1000000"
    )
    yield running
    running.stop()


@pytest.fixture
def db(database_url: str, server: Server) -> Iterator[psycopg.Connection]:
    """A direct connection to the server's database (migrated by the server's start); one per test,
    as a restart of PostgreSQL (tests/server/test_faults.py) ends every connection."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        yield conn


@dataclass
class Account:
    name: str
    id: int
    token: str

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


_MADE = itertools.count()  # names made in this process: a number of its own each, whatever the random part


def unique(prefix: str) -> str:
    """A name no other call makes: the tests of a worker share one database, where a random part alone
    once gave an organisation's name twice (435 cells of the authorisation matrix failed at set-up)."""
    return f"{prefix}-{secrets.token_hex(4)}-{next(_MADE)}"


@pytest.fixture
def make_user(db: psycopg.Connection) -> Callable[..., Account]:
    def make(prefix: str = "user", kind: str = "rw", email: str | None = None, github: str | None = None) -> Account:
        name = unique(prefix)
        user = accounts.add_user(db, name, email=email, github=github)
        return Account(name, user.id, accounts.create_token(db, user.id, kind).token)

    return make


def org_sharing(db: psycopg.Connection, scope: str, owner: Account, *members: Account) -> tuple[int, str]:
    """A new organisation of `owner`'s, with `members` as members, that shares `scope`: its id and name."""
    org = unique("acme")
    accounts.create_org(db, org, owner.id)
    org_id, _ = accounts.role_in(db, org, owner.id)
    for member in members:
        db.execute("INSERT INTO members (org_id, user_id, role) VALUES (%s, %s, 'member')", (org_id, member.id))
    accounts.bind_scope(db, org_id, scope, owner.id)
    return org_id, org


@pytest.fixture
def api(server: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=10) as client:
        yield client
