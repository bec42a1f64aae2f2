"""Turns at the shared PostgreSQL when pytest-xdist runs the suite in several workers: a test that restarts
PostgreSQL (marked `restarts_postgres`, tests/server/test_faults.py) runs alone, while tests that use it
(`database_url`, directly or through a fixture) run side by side.

Each worker holds a shared lock on one file for the whole of a PostgreSQL test (set-up of the run's database and
servers included); a restart holds it exclusively. A second lock, taken briefly by everyone, makes a waiting
restart the next to go: without it, two workers taking turns with shared locks could keep it waiting to the end.
The folder holding both files is made by the controller and handed to every worker (xdist's `workerinput`)."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path

import pytest

TURNS_KEY = "hivelore_postgres_turns"
ON_POSTGRES = pytest.StashKey[bool]()


def mark_postgres_modules(items: list[pytest.Item]) -> None:
    """A module with one PostgreSQL test may tear its fixtures down at the end of any of its tests: every
    test in such a module takes its turn, and so does each worker's last test (the session's teardown drops
    the run's database)."""
    modules = {item.path for item in items if "database_url" in item.fixturenames}
    for item in items:
        item.stash[ON_POSTGRES] = item.path in modules


@contextlib.contextmanager
def turn(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    folder = getattr(item.config, "workerinput", {}).get(TURNS_KEY)
    if folder is None or not (item.stash.get(ON_POSTGRES, False) or nextitem is None):
        yield  # one process alone, or a test that does not touch PostgreSQL
        return
    mode = fcntl.LOCK_EX if item.get_closest_marker("restarts_postgres") else fcntl.LOCK_SH
    with Path(folder, "queue").open("a") as queue, Path(folder, "postgres").open("a") as postgres:
        fcntl.flock(queue, fcntl.LOCK_EX)
        fcntl.flock(postgres, mode)
        fcntl.flock(queue, fcntl.LOCK_UN)
        yield
