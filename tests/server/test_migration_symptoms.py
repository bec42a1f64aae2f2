"""Migration 0018 on a database that has memories and vectors: it adds the `symptoms` column and drops
the vector of each row whose memory has symptoms (the backfill computes its vectors again), and keeps
every other vector as it was."""

from __future__ import annotations

import json
from collections.abc import Iterator

import psycopg
import pytest

from hivelore.server.postgres import migrate

BEFORE = 17  # the schema a replica of older code left


@pytest.fixture
def fresh(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[psycopg.Connection]:
    """A database of its own, migrated up to BEFORE only, by `migrate.migrate` itself (given only the
    migrations a replica of older code shipped)."""
    url = database_url + "_m18"
    admin_url = database_url.rsplit("/", 1)[0] + "/test"
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            shipped = [m for m in migrate.available() if m.version <= BEFORE]
            with monkeypatch.context() as older:
                older.setattr(migrate, "available", lambda: shipped)
                migrate.migrate(conn)
            yield conn
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_0018_drops_the_vectors_of_the_rows_with_symptoms_and_keeps_the_others(fresh: psycopg.Connection) -> None:
    assert migrate.applied_version(fresh) == BEFORE
    records = {
        "pg-down": {"when": "the suite cannot reach the database; tests hang waiting for postgres"},
        "lockfile": {},
        "blank-when": {"when": ""},  # written by a client that sends an empty one
    }
    ids = {}
    for key, extra in records.items():
        record = {"scope": "project::shop", "key": key, "value": f"the lesson of {key}", **extra}
        row = fresh.execute(
            "INSERT INTO memories (space, scope, key, record, archived, updated_ts, seen_count, terms)"
            " VALUES ('user:1', 'project::shop', %s, %s, false, 0, 1, '') RETURNING id",
            (key, json.dumps(record)),
        ).fetchone()
        assert row is not None
        ids[key] = row[0]
        fresh.execute(
            "INSERT INTO memory_vectors (id, hash, vector) VALUES (%s, %s, %s)",
            (ids[key], f"hash of {key}", bytes(768)),
        )
    assert [m.version for m in migrate.migrate(fresh)] == [m.version for m in migrate.available() if m.version > BEFORE]
    kept = fresh.execute(
        "SELECT m.key, v.hash, v.symptoms FROM memory_vectors v JOIN memories m USING (id) ORDER BY m.key"
    ).fetchall()
    assert kept == [("blank-when", "hash of blank-when", None), ("lockfile", "hash of lockfile", None)]
    assert fresh.execute("SELECT count(*) FROM memories").fetchone() == (3,)  # the memories themselves stay
