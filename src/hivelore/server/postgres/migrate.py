"""Versioned SQL migrations, applied on start under an advisory lock.

Each file `migrations/NNNN_name.sql` runs once, in its own transaction, in the order of NNNN; the
`schema_migrations` table records what ran. Two replicas starting together both take the same
advisory lock: the first applies what is missing, the second then finds nothing left to do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

import psycopg

# Any constant shared by every replica; it names "hivelore's migrations" among the database's locks.
ADVISORY_LOCK = 0x68697665_6C6F7265 & 0x7FFFFFFFFFFFFFFF
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def available() -> list[Migration]:
    """The migrations shipped with this version of hivelore, oldest first."""
    found = []
    for entry in resources.files(__package__).joinpath("migrations").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    return sorted(found, key=lambda m: m.version)


def latest() -> int:
    return available()[-1].version


def applied_version(conn: psycopg.Connection) -> int:
    """The newest migration the database has, 0 for a database hivelore never used."""
    exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return 0
    row = conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()
    return int(row[0]) if row else 0


def _applied(conn: psycopg.Connection) -> set[int]:
    return {int(version) for (version,) in conn.execute("SELECT version FROM schema_migrations")}


def missing(conn: psycopg.Connection) -> list[int]:
    """The versions this hivelore ships that the database has not applied, oldest first."""
    done = _applied(conn) if applied_version(conn) else set()
    return [m.version for m in available() if m.version not in done]


def migrate(conn: psycopg.Connection) -> list[Migration]:
    """Apply what the database lacks; return what was applied (nothing when another replica did it).
    `conn` must be in autocommit mode: each migration is its own transaction.

    Every migration not recorded is applied, in order, not only those newer than the newest recorded:
    branches merged out of order (0010 shipped before 0009) still give every database each one."""
    conn.execute("SELECT pg_advisory_lock(%s)", (ADVISORY_LOCK,))
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version integer PRIMARY KEY, name text NOT NULL, applied timestamptz NOT NULL DEFAULT now())"
        )
        done = _applied(conn)
        pending = [m for m in available() if m.version not in done]
        for migration in pending:
            with conn.transaction():
                conn.execute(migration.sql.encode())
                conn.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                    (migration.version, migration.name),
                )
        return pending
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (ADVISORY_LOCK,))
