"""The three SQLite stores open their files one way (sqlitedb.connect): created with their tables
when missing, in WAL mode, owner-only; someone else's database or another version refused with the
store's own error and left as it was; sqlite's busy and damaged errors turned into the store's own. A
long-lived process (the hook server) keeps their connections open between uses in a `Pool`, never
for a file replaced since or of another version."""

from __future__ import annotations

import sqlite3
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from hivelore.codegraph import store as codegraph_store
from hivelore.codegraph.store import GraphBusy, GraphUnavailable
from hivelore.codegraph.store import Store as GraphStore
from hivelore.errors import Busy, Unavailable
from hivelore.events.store import EventStore, EventStoreBusy, EventStoreUnavailable
from hivelore.memory.local.index import Index, open_or_recreate
from hivelore.sqlitedb import Pool, Store, remove_database
from hivelore.team.model import TeamBusy, TeamUnavailable
from hivelore.team.store import SqliteTeam


@dataclass(frozen=True)
class Kind:
    """One store: how to open it in a folder, its file, its meta key and its two errors."""

    open: Callable[[Path], Store]
    file: str
    key: str
    error: type[Unavailable]
    busy: type[Busy]


WAIT = 0.05  # seconds each store waits for a lock another holds, here

STORES = {
    "events.db": Kind(
        lambda home: EventStore.open(str(home), timeout=WAIT),
        "events.db",
        "schema",
        EventStoreUnavailable,
        EventStoreBusy,
    ),
    "team.db": Kind(
        lambda home: SqliteTeam.open(str(home), timeout=WAIT), "team.db", "team-schema", TeamUnavailable, TeamBusy
    ),
    "graph.db": Kind(
        lambda home: GraphStore.open(str(home / "graph.db"), "/src/shop"),
        "graph.db",
        "schema",
        GraphUnavailable,
        GraphBusy,
    ),
}


@pytest.fixture(params=list(STORES))
def kind(request: pytest.FixtureRequest) -> Kind:
    return STORES[request.param]


def test_a_new_store_is_made_in_wal_mode_and_owner_only(kind: Kind, tmp_path: Path) -> None:
    with kind.open(tmp_path / "home") as store:
        assert store.conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert store.path == str(tmp_path / "home" / kind.file)
    assert stat.S_IMODE((tmp_path / "home" / kind.file).stat().st_mode) == 0o600
    with kind.open(tmp_path / "home") as again:  # opened again: the same file, not made anew
        assert again.conn.execute("SELECT count(*) FROM meta WHERE name = ?", (kind.key,)).fetchone() == (1,)


def test_someone_elses_database_is_refused_and_left_as_it_was(kind: Kind, tmp_path: Path) -> None:
    path = tmp_path / kind.file
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.close()
    with pytest.raises(kind.error, match=r"is not a hivelore .* \(tables: invoices\)"):
        kind.open(tmp_path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        assert [name for (name,) in conn.execute("SELECT name FROM sqlite_master")] == ["invoices"]
    conn.close()


def test_another_version_is_refused(kind: Kind, tmp_path: Path) -> None:
    kind.open(tmp_path).close()
    with sqlite3.connect(tmp_path / kind.file) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE name = ?", (kind.key,))
    conn.close()
    with pytest.raises(kind.error, match=r"has .*schema 99, this hivelore needs \d+"):
        kind.open(tmp_path)


def test_a_damaged_file_is_the_stores_unavailable_error(kind: Kind, tmp_path: Path) -> None:
    (tmp_path / kind.file).write_bytes(b"this is not what hivelore wrote here\n" * 200)
    with pytest.raises(kind.error, match=r"cannot be used \(file is not a database\)") as damaged:
        kind.open(tmp_path)
    assert not isinstance(damaged.value, Busy), "a damaged file is not busy: it may be discarded"


def test_a_lock_held_for_the_whole_busy_timeout_is_the_stores_busy_error(
    kind: Kind, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(codegraph_store, "BUSY_TIMEOUT", WAIT)
    holder = sqlite3.connect(tmp_path / kind.file, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process, writing the file as it is made
    try:
        with pytest.raises(kind.busy, match=r"is busy \(database is locked\)"):
            kind.open(tmp_path)
    finally:
        holder.close()


# --- the connections a long-lived process keeps (the hook server's pool) ----------------------------------------


def test_a_pool_gives_the_next_open_of_a_store_the_connection_the_last_one_closed(tmp_path: Path) -> None:
    pool = Pool()
    first = EventStore.open(str(tmp_path), pool=pool)
    first.record_prompt("claude", "s1", "why does the build fail?", root_session=True)
    first.close()
    again = EventStore.open(str(tmp_path), pool=pool)
    assert again.conn is first.conn
    assert again.first_prompt("claude", "s1") == "why does the build fail?"
    beside = EventStore.open(str(tmp_path), pool=pool)  # while one is in use, another is opened
    assert beside.conn is not again.conn
    beside.close()
    again.close()  # the file has one idle already: this one is closed
    with pytest.raises(sqlite3.ProgrammingError):
        again.conn.execute("SELECT 1")
    pool.close()
    with pytest.raises(sqlite3.ProgrammingError):
        beside.conn.execute("SELECT 1")


def test_a_file_replaced_since_gets_a_new_connection_and_the_old_one_is_closed(tmp_path: Path) -> None:
    pool = Pool()
    old = EventStore.open(str(tmp_path), pool=pool)
    old.record_prompt("claude", "s1", "before the reset", root_session=True)
    old.close()
    remove_database(str(tmp_path / "events.db"))  # `reset`, or a user with rm
    new = EventStore.open(str(tmp_path), pool=pool)
    assert new.conn is not old.conn
    assert new.first_prompt("claude", "s1") == ""
    with pytest.raises(sqlite3.ProgrammingError):
        old.conn.execute("SELECT 1")
    new.close()
    pool.close()


def test_a_connection_left_in_a_transaction_is_closed_not_kept(tmp_path: Path) -> None:
    pool = Pool()
    store = EventStore.open(str(tmp_path), pool=pool)
    store.conn.execute("BEGIN IMMEDIATE")  # a use that failed half-way
    store.close()
    again = EventStore.open(str(tmp_path), pool=pool)
    assert again.conn is not store.conn
    assert not again.conn.in_transaction
    again.record_prompt("claude", "s1", "the write lock was let go", root_session=True)
    again.close()
    pool.close()


def test_a_kept_connection_to_a_file_of_another_version_is_not_given_and_the_open_says_why(tmp_path: Path) -> None:
    pool = Pool()
    EventStore.open(str(tmp_path), pool=pool).close()
    with sqlite3.connect(tmp_path / "events.db") as conn:  # another hivelore migrated it in place
        conn.execute("UPDATE meta SET value = '99' WHERE name = 'schema'")
    conn.close()
    with pytest.raises(EventStoreUnavailable, match=r"has schema 99, this hivelore needs \d+"):
        EventStore.open(str(tmp_path), pool=pool)
    pool.close()


def test_the_index_is_kept_by_a_pool_until_a_rebuild_replaces_its_file(tmp_path: Path) -> None:
    pool = Pool()
    path = tmp_path / "index.db"
    first = Index.open(path, create=True, pool=pool)
    first.close()
    again = Index.open(path, create=False, pool=pool)
    assert again.conn is first.conn
    again.close()
    open_or_recreate(path, discard=True).close()  # `index rebuild --discard`: a new file
    rebuilt = Index.open(path, create=False, pool=pool)
    assert rebuilt.conn is not first.conn
    rebuilt.close()
    pool.close()
