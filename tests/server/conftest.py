"""The team server for real: `hivelore serve` processes on loopback ports (tests/teamserver.py; the
session's `server` is tests/conftest.py's), over the run's own database (tests/conftest.py
`database_url`). Users and tokens are made with the server's own account functions on a direct
connection, the way `serve --add-user` does."""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import httpx
import psycopg
import pytest
from teamserver import Server, free_port, start_server, started

from hivelore.server.postgres import accounts

__all__ = ["Server", "free_port", "start_server", "started"]  # the tests here import them from this conftest


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
