"""The SQLite index: derived from the vault files, rebuildable, never the truth.

One row per memory file (with the parsed memory as JSON, so reads never parse YAML), an FTS5
table over key, value and tags for BM25, the folder stamps that let reads notice hand edits
without walking the vault, and the files that were skipped because they could not be read.

Freshness without walking the vault: a read refreshes only the folders of the scopes it reads
(re-scanned when the folder's mtime changed, or always when it is small), and re-checks the
stat of every memory it is about to return.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from hivelore import sqlitedb
from hivelore.confined import LinkRefused
from hivelore.errors import Busy, Unavailable
from hivelore.home import private_file, private_folder
from hivelore.memory.local.terms import term_for, terms_of
from hivelore.memory.local.vault import UNREADABLE, Listing, Stamp, Swept, Vault
from hivelore.memory.model import Memory, epoch_from_iso
from hivelore.memory.scope import Scope
from hivelore.memory.tier import Candidate, Wanted, value_chars
from hivelore.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = "8"
UPGRADABLE = "7"  # an index of this schema gains the term counts in place when opened (`_upgrade`)
BUSY_TIMEOUT = 30.0  # seconds to wait for another process's lock on the index
# Folders with at most this many memories are re-scanned on every read: an in-place edit (which
# leaves the folder's mtime alone) is then noticed even before it is returned.
SMALL_FOLDER = 256

_TERM_ROWS = "CREATE TABLE IF NOT EXISTS term_rows (term TEXT PRIMARY KEY, rows INTEGER NOT NULL) WITHOUT ROWID"
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memories (
    id INTEGER PRIMARY KEY,
    root TEXT NOT NULL,
    folder TEXT NOT NULL,
    relpath TEXT NOT NULL,
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    updated_ts REAL NOT NULL,
    seen_count INTEGER NOT NULL,
    value_chars INTEGER NOT NULL,
    expires_ts REAL,
    archived INTEGER NOT NULL,
    doc TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    checksum TEXT NOT NULL,
    UNIQUE (root, relpath)
);
CREATE INDEX IF NOT EXISTS memories_address ON memories (scope, key);
CREATE INDEX IF NOT EXISTS memories_visible ON memories (scope, root, archived, expires_ts);
CREATE INDEX IF NOT EXISTS memories_keys ON memories (key, scope, root, archived, expires_ts);
CREATE INDEX IF NOT EXISTS memories_folder ON memories (root, folder);
CREATE INDEX IF NOT EXISTS memories_recent ON memories (scope, updated_ts);
CREATE INDEX IF NOT EXISTS memories_seen ON memories (scope, seen_count);
CREATE INDEX IF NOT EXISTS memories_expiry ON memories (expires_ts) WHERE expires_ts IS NOT NULL;
-- Running totals kept by triggers, so a read of 60,000 memories need not count them one by one:
-- non-archived memories per scope (expired ones are subtracted at read time, they are few), and
-- copies per key (only keys with several copies can shadow one another).
CREATE TABLE IF NOT EXISTS scope_totals (
    root TEXT NOT NULL, scope TEXT NOT NULL, live INTEGER NOT NULL, PRIMARY KEY (root, scope)
);
CREATE TABLE IF NOT EXISTS key_totals (key TEXT PRIMARY KEY, copies INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS key_totals_shared ON key_totals (key) WHERE copies > 1;
-- Every change bumps the generation, which invalidates the cached shadow counts.
CREATE TABLE IF NOT EXISTS shadow_cache (
    chain TEXT PRIMARY KEY, generation INTEGER NOT NULL, valid_until REAL, shadowed INTEGER NOT NULL
);
CREATE TRIGGER IF NOT EXISTS memories_added AFTER INSERT ON memories BEGIN
    UPDATE meta SET value = value + 1 WHERE name = 'generation';
    INSERT INTO scope_totals VALUES (new.root, new.scope, 1 - new.archived)
        ON CONFLICT (root, scope) DO UPDATE SET live = live + 1 - new.archived;
    INSERT INTO key_totals VALUES (new.key, 1) ON CONFLICT (key) DO UPDATE SET copies = copies + 1;
END;
CREATE TRIGGER IF NOT EXISTS memories_removed AFTER DELETE ON memories BEGIN
    UPDATE meta SET value = value + 1 WHERE name = 'generation';
    UPDATE scope_totals SET live = live - (1 - old.archived) WHERE root = old.root AND scope = old.scope;
    UPDATE key_totals SET copies = copies - 1 WHERE key = old.key;
END;
-- Prefix indexes for 3 and 4 characters: a search for "test" also matches "tests" and "testing" (a
-- prefix query), and without them every such word is expanded over the whole vocabulary.
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    key, value, tags, tokenize = "unicode61 remove_diacritics 2", prefix = '3 4'
);
-- Per term (memory/local/terms.py), how many rows hold it: BM25's document frequencies, kept by
-- the writes (`Index._count_terms`), so that choosing a long query's rarest words reads a row a word
-- instead of a doclist a word ("the" is in most memories).
{_TERM_ROWS};
CREATE TABLE IF NOT EXISTS folders (
    root TEXT NOT NULL, folder TEXT NOT NULL, mtime_ns INTEGER NOT NULL, files INTEGER NOT NULL,
    PRIMARY KEY (root, folder)
);
CREATE TABLE IF NOT EXISTS skipped (
    root TEXT NOT NULL, relpath TEXT NOT NULL, mtime_ns INTEGER NOT NULL, reason TEXT NOT NULL,
    PRIMARY KEY (root, relpath)
);
"""


class IndexUnavailable(Unavailable):
    """The index file is missing, corrupt or from another version."""

    repair = "run `hivelore index rebuild` (the files are untouched)"


class IndexBusy(IndexUnavailable, Busy):
    """Another process kept the index locked for the whole wait. Reads fall back to the files as for
    any unusable index; a rebuild must not take it for a damaged one and delete it."""

    repair = "try again in a moment"


class Row(Candidate):
    """A memory as the index knows it, and where its file is (`origin` is the vault's folder, `place`
    the file's path under it).

    Ranking needs only the indexed columns (scope, key, kind, state, updated, seen_count); the
    memory itself is decoded from its stored JSON the first time it is asked for, so a session
    start that ranks hundreds of rows decodes only the ten it shows."""

    __slots__ = ("mtime_ns", "size", "checksum", "_doc")
    mtime_ns: int
    size: int
    checksum: str
    _doc: str | None

    def __init__(self, *columns: Any) -> None:
        """The columns in `_COLUMNS` order: root, relpath, mtime_ns, size, checksum, scope, key, kind,
        state, updated_ts, seen_count, value_chars and the memory's JSON."""
        (
            self.origin,
            self.place,
            self.mtime_ns,
            self.size,
            self.checksum,
            self.scope,
            self.key,
            self.kind,
            self.state,
            self.updated_ts,
            self.seen_count,
            self.value_chars,
            self._doc,
        ) = columns
        self._memory = None

    @property
    def memory(self) -> Memory:
        if self._memory is None:
            self._memory = Memory.from_dict(json.loads(self._doc or "{}"))
        return self._memory

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Row) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def _identity(self) -> tuple[str, str, int]:
        return (self.origin, self.place, self.mtime_ns)


@record
class Skip:
    path: Path
    reason: str


@record
class RebuildStats:
    files: int
    indexed: int
    skipped: list[Skip]
    seconds: float
    swept: Swept  # temp files of killed writers removed on the way


# Key, value and tags: a word in the key weighs most, then a tag, then the value.
_BM25 = "bm25(memories_fts, 3.0, 1.0, 2.0)"
# A search first ranks this many matches per wanted hit, then keeps those in the scopes read.
SHORTLIST_FACTOR = 8
MAX_SHORTLIST = 4000  # bound parameters of one query stay far below SQLite's limit

_COLUMNS = "root, relpath, mtime_ns, size, checksum, scope, key, kind, state, updated_ts, seen_count, value_chars, doc"


def _row(record: tuple) -> Row:
    return Row(*record[:13])


def _columns(row_id: int, root: str, relpath: str, memory: Memory, stamp: Stamp) -> tuple[object, ...]:
    """The `memories` columns of one file, in insert order."""
    return (
        row_id,
        root,
        os.path.dirname(relpath),
        relpath,
        str(memory.scope),
        memory.key,
        memory.kind,
        memory.state,
        epoch_from_iso(memory.updated),
        memory.seen_count,
        value_chars(memory.value),
        epoch_from_iso(memory.expires_at) if memory.expires_at else None,
        1 if memory.archived_at else 0,
        json.dumps(memory.to_dict(), ensure_ascii=False),
        stamp.mtime_ns,
        stamp.size,
        stamp.checksum,
    )


def indexed_text(memory: Memory) -> str:
    """What the value column of the full-text index holds: the value, then the symptoms ("when")."""
    return f"{memory.value}\n{memory.when}" if memory.when else memory.value


_OLD_TEXTS = "SELECT key, value, tags FROM memories_fts"  # a row's indexed texts, as its terms are counted


def _texts(memory: Memory) -> tuple[str, str, str]:
    """What the full-text index's columns (key, value, tags) hold of a memory."""
    return memory.key.replace("-", " ").replace("_", " "), indexed_text(memory), " ".join(memory.tags)


def _add_terms(conn: sqlite3.Connection, rows: Iterable[Sequence[str]], sign: int) -> None:
    """Count the terms of these rows' full-text columns into `term_rows`: added (`sign` 1) or
    removed (-1). Terms no row holds any more are dropped."""
    counted: Counter[str] = Counter()
    for columns in rows:
        counted.update(terms_of(columns))
    conn.executemany(
        "INSERT INTO term_rows VALUES (?, ?) ON CONFLICT (term) DO UPDATE SET rows = rows + excluded.rows",
        sorted((term, sign * n) for term, n in counted.items()),
    )
    if sign < 0 and counted:
        conn.execute("DELETE FROM term_rows WHERE rows <= 0")


def fts_query(words: Sequence[str], every_word: bool) -> str:
    """An FTS5 query for `words`: all of them, or any of them (prefix match for words of 4+ letters)."""
    terms = [f'"{word}"*' if len(word) >= 4 else f'"{word}"' for word in words]
    return (" " if every_word else " OR ").join(terms)


class Index:
    def __init__(self, conn: sqlite3.Connection, path: Path, pool: sqlitedb.Pool | None = None) -> None:
        self.conn = conn
        self.path = path
        self.pool = pool
        self.warnings: list[str] = []

    @classmethod
    def open(
        cls, path: Path, *, create: bool, timeout: float = BUSY_TIMEOUT, pool: sqlitedb.Pool | None = None
    ) -> Index:
        """Open the index; create it only when asked (a missing index on a full vault is a fallback case).
        From `pool`, an idle connection to the same file is taken instead, its schema checked again."""
        if pool is not None:
            kept = pool.reuse(str(path), cls._usable)
            if kept is not None:
                return cls(kept, path, pool)
        if not create and not path.exists():
            raise IndexUnavailable(f"the index {path} does not exist")
        try:
            private_folder(str(path.parent))
            private_file(str(path))
            conn = sqlite3.connect(path, timeout=timeout, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            version = cls._version(conn)
            if version is None:
                conn.executescript(_SCHEMA)
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('generation', 0)")
            elif version == UPGRADABLE:
                cls._upgrade(conn)
            elif version != SCHEMA_VERSION:
                conn.close()
                raise IndexUnavailable(f"the index {path} has schema {version}, this hivelore needs {SCHEMA_VERSION}")
            cls._read_text_table(conn)
        except sqlite3.OperationalError as exc:
            if sqlitedb.is_busy(exc):
                raise IndexBusy(f"the index {path} is busy: another hivelore process holds it") from exc
            raise IndexUnavailable(f"the index {path} cannot be read ({exc})") from exc
        except (OSError, sqlite3.DatabaseError) as exc:
            raise IndexUnavailable(f"the index {path} cannot be read ({exc})") from exc
        if pool is not None:
            pool.track(str(path), conn)
        return cls(conn, path, pool)

    @staticmethod
    def _upgrade(conn: sqlite3.Connection) -> None:
        """An index of the previous schema, which lacked the term counts: they are counted from the
        full-text table's own copy of every row, once (at 60,000 memories, a few seconds)."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(_TERM_ROWS)
            _add_terms(conn, conn.execute("SELECT key, value, tags FROM memories_fts"), 1)
            conn.execute("UPDATE meta SET value = ? WHERE name = 'schema'", (SCHEMA_VERSION,))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @classmethod
    def _usable(cls, conn: sqlite3.Connection) -> bool:
        """Whether a kept connection's index is still at this schema version and its full-text table
        reads (a damaged one raises), as a new connection's is checked."""
        cls._read_text_table(conn)
        return cls._version(conn) == SCHEMA_VERSION

    @staticmethod
    def _read_text_table(conn: sqlite3.Connection) -> None:
        conn.execute("SELECT count(*) FROM memories_fts WHERE rowid = 0").fetchone()

    @staticmethod
    def _version(conn: sqlite3.Connection) -> str | None:
        has_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
        if not has_meta:
            return None
        row = conn.execute("SELECT value FROM meta WHERE name='schema'").fetchone()
        return row[0] if row else None

    def close(self) -> None:
        sqlitedb.close(self.conn, self.pool)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction; nested uses join the outer one (rebuild wraps thousands)."""
        if self.conn.in_transaction:
            yield
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    # -- writing rows -------------------------------------------------------------------------

    def upsert(self, vault: Vault, path: Path, memory: Memory, stamp: Stamp) -> None:
        self.upsert_many(vault, [(path, memory, stamp)])

    def upsert_many(self, vault: Vault, items: Sequence[tuple[Path, Memory, Stamp]], replace: bool = True) -> None:
        """Put the rows of many files in one transaction, a statement each for all of them. Without
        `replace` the files are known to have no row yet (a rebuild cleared them)."""
        if not items:
            return
        root = str(vault.root)
        relpaths = [str(path.relative_to(vault.root)) for path, _, _ in items]
        with self.transaction():
            if replace:
                keys = [(root, relpath) for relpath in relpaths]
                old = f"{_OLD_TEXTS} WHERE rowid IN (SELECT id FROM memories WHERE root=? AND relpath=?)"
                _add_terms(self.conn, (texts for key in keys for texts in self.conn.execute(old, key).fetchall()), -1)
                self.conn.executemany(
                    "DELETE FROM memories_fts WHERE rowid IN (SELECT id FROM memories WHERE root=? AND relpath=?)", keys
                )
                self.conn.executemany("DELETE FROM memories WHERE root=? AND relpath=?", keys)
                self.conn.executemany("DELETE FROM skipped WHERE root = ? AND relpath = ?", keys)
            # Ids chosen here (the write lock is held) so that the FTS rows can be inserted in bulk too.
            first = self.conn.execute("SELECT coalesce(max(id), 0) + 1 FROM memories").fetchone()[0]
            self.conn.executemany(
                "INSERT INTO memories (id, root, folder, relpath, scope, key, kind, state, updated_ts, seen_count,"
                " value_chars, expires_ts, archived, doc, mtime_ns, size, checksum)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    _columns(first + n, root, relpath, memory, stamp)
                    for n, (relpath, (_, memory, stamp)) in enumerate(zip(relpaths, items, strict=True))
                ),
            )
            texts = [_texts(memory) for _, memory, _ in items]
            self.conn.executemany(
                "INSERT INTO memories_fts (rowid, key, value, tags) VALUES (?, ?, ?, ?)",
                ((first + n, *columns) for n, columns in enumerate(texts)),
            )
            _add_terms(self.conn, texts, 1)

    def _delete_rows(self, root: str, relpath: str) -> None:
        ids = [r[0] for r in self.conn.execute("SELECT id FROM memories WHERE root=? AND relpath=?", (root, relpath))]
        for row_id in ids:
            old = self.conn.execute(f"{_OLD_TEXTS} WHERE rowid = ?", (row_id,)).fetchall()
            _add_terms(self.conn, old, -1)
            self.conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (row_id,))
        self.conn.execute("DELETE FROM memories WHERE root=? AND relpath=?", (root, relpath))

    def remove(self, vault: Vault, path: Path) -> None:
        with self.transaction():
            self._delete_rows(str(vault.root), str(path.relative_to(vault.root)))

    def _skip(self, vault: Vault, path: Path, mtime_ns: int, reason: str) -> None:
        relpath = str(path.relative_to(vault.root))
        with self.transaction():
            self._delete_rows(str(vault.root), relpath)
            self.conn.execute(
                "INSERT OR REPLACE INTO skipped VALUES (?, ?, ?, ?)", (str(vault.root), relpath, mtime_ns, reason)
            )

    def reload(self, vault: Vault, path: Path) -> Memory | None:
        """Re-read one file into the index; None (and a recorded skip) if it cannot be read."""
        try:
            memory, stamp = vault.load(path)
        except FileNotFoundError:
            self.remove(vault, path)
            return None
        except UNREADABLE as exc:
            self._record_unreadable(vault, path, exc)
            return None
        self.upsert(vault, path, memory, stamp)
        return memory

    def load_folder(self, vault: Vault, folder: Path, listing: Listing) -> int:
        """Read a cleared folder's files into the index in bulk (a rebuild): how many were indexed;
        the unreadable ones are recorded as skipped."""
        loaded = []
        for path, memory, stamp in vault.load_folder(folder, [e.name for e in listing.files]):
            if isinstance(memory, Memory) and stamp is not None:
                loaded.append((path, memory, stamp))
            elif isinstance(memory, Exception) and not isinstance(memory, FileNotFoundError):  # deleted since: no row
                self._record_unreadable(vault, path, memory)
        self.upsert_many(vault, loaded, replace=False)
        return len(loaded)

    def _record_unreadable(self, vault: Vault, path: Path, exc: BaseException) -> None:
        reason = f"skipped {path}: {exc}"
        try:
            mtime = path.lstat().st_mtime_ns
        except OSError:
            mtime = 0
        self._skip(vault, path, mtime, reason)
        self.warnings.append(reason)

    # -- freshness ----------------------------------------------------------------------------

    def refresh(self, vaults: Sequence[Vault], scopes: Iterable[Scope]) -> None:
        """Bring the rows of these scopes' folders up to date with the files."""
        for scope in scopes:
            for vault in vaults:
                self._refresh_folder(vault, scope)
        self._warn_skipped(vaults, scopes)

    def _refresh_folder(self, vault: Vault, scope: Scope) -> None:
        root, folder = str(vault.root), str(scope.folder)
        mtime_ns = folder_mtime(vault.folder(scope))
        known = self.conn.execute(
            "SELECT mtime_ns, files FROM folders WHERE root=? AND folder=?", (root, folder)
        ).fetchone()
        if known and known[0] == mtime_ns and known[1] > SMALL_FOLDER:
            return
        rows = {
            relpath: (m, s)
            for relpath, m, s in self.conn.execute(
                "SELECT relpath, mtime_ns, size FROM memories WHERE root=? AND folder=?", (root, folder)
            )
        }
        skipped = dict(
            self.conn.execute(
                "SELECT relpath, mtime_ns FROM skipped WHERE root=? AND relpath LIKE ?", (root, folder + "/%")
            )
        )
        try:
            listing = vault.folder_files(scope)
        except LinkRefused as exc:
            listing = Listing([], Swept(), 0)
            if f"skipped {exc}" not in self.warnings:
                self.warnings.append(f"skipped {exc}")
        on_disk = set()
        for entry in listing.files:
            relpath = os.path.join(folder, entry.name)
            on_disk.add(relpath)
            if rows.get(relpath) == (entry.mtime_ns, entry.size) or skipped.get(relpath) == entry.mtime_ns:
                continue
            self.reload(vault, entry.path)
        if listing.pending:  # a writer's temp file, to be swept once stale: list this folder again next time
            mtime_ns = 0
        gone = set(rows) - on_disk
        gone_skips = {r for r in set(skipped) - on_disk if os.path.dirname(r) == folder}
        if not gone and not gone_skips and known and tuple(known) == (mtime_ns, len(on_disk)):
            return  # nothing to write: a read must not take the write lock for nothing
        with self.transaction():
            for relpath in gone:
                self._delete_rows(root, relpath)
            for relpath in gone_skips:
                self.conn.execute("DELETE FROM skipped WHERE root=? AND relpath=?", (root, relpath))
            self.conn.execute(
                "INSERT OR REPLACE INTO folders VALUES (?, ?, ?, ?)", (root, folder, mtime_ns, len(on_disk))
            )

    def note_own_change(self, vault: Vault, folder: Path, before_ns: int, files_delta: int) -> None:
        """Our own write or delete changed `folder`: move its stamp along, so the next read need not
        re-scan it. Only when the stamp was current before the change; otherwise someone else changed
        the folder too, and the next read must look."""
        self.conn.execute(
            "UPDATE folders SET mtime_ns = ?, files = files + ? WHERE root = ? AND folder = ? AND mtime_ns = ?",
            (folder_mtime(folder), files_delta, str(vault.root), str(folder.relative_to(vault.root)), before_ns),
        )

    def _warn_skipped(self, vaults: Sequence[Vault], scopes: Iterable[Scope]) -> None:
        for vault in vaults:
            for scope in scopes:
                for (reason,) in self.conn.execute(
                    "SELECT reason FROM skipped WHERE root=? AND relpath LIKE ?",
                    (str(vault.root), str(scope.folder) + "/%"),
                ):
                    if reason not in self.warnings:
                        self.warnings.append(reason)

    def verified(self, vaults: Sequence[Vault], rows: Iterable[Row]) -> list[Row]:
        """Re-check each row's file before it is shown: edited files are re-read, deleted ones dropped."""
        fresh = (self.verify(vaults, row) for row in rows)
        return [row for row in fresh if row is not None]

    def verify(self, vaults: Sequence[Vault], row: Row) -> Row | None:
        """The row as its file is now: itself if unchanged, re-read if edited, None if gone or unreadable."""
        try:
            st = os.lstat(os.path.join(row.origin, row.place))  # a file replaced by a link is re-read (and refused)
        except FileNotFoundError:
            st = None
        if st is not None and (st.st_mtime_ns, st.st_size) == (row.mtime_ns, row.size):
            return row
        vault = next(v for v in vaults if str(v.root) == row.origin)
        if st is None:
            self.remove(vault, row.path)
            return None
        return self.row_at(row.origin, row.place) if self.reload(vault, row.path) is not None else None

    def row_at(self, root: str, relpath: str) -> Row | None:
        found = self.conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE root=? AND relpath=?", (root, relpath)
        ).fetchone()
        return _row(found) if found else None

    # -- queries ------------------------------------------------------------------------------

    def _where(
        self, vaults: Sequence[Vault], scopes: Sequence[str], visible: bool, alias: str = "m", indexed: bool = True
    ) -> tuple[str, dict[str, object]]:
        """A WHERE clause over table alias `alias`, with its named parameters (prefixed by alias).
        Not `indexed`: the scope and root tests only filter rows found another way (SQLite's unary
        `+` keeps the planner from searching by them instead)."""
        params: dict[str, object] = {"now": time.time()}
        params.update({f"{alias}r{i}": str(v.root) for i, v in enumerate(vaults)})
        params.update({f"{alias}s{i}": s for i, s in enumerate(scopes)})
        roots = ", ".join(f":{alias}r{i}" for i in range(len(vaults)))
        names = ", ".join(f":{alias}s{i}" for i in range(len(scopes)))
        plus = "" if indexed else "+"
        where = f"{plus}{alias}.root IN ({roots}) AND {plus}{alias}.scope IN ({names})"
        if visible:
            where += f" AND {alias}.archived = 0 AND ({alias}.expires_ts IS NULL OR {alias}.expires_ts > :now)"
        return where, params

    def by_keys(self, vaults: Sequence[Vault], scopes: Sequence[str], keys: Iterable[str]) -> list[Row]:
        """Every row (hidden ones too) in `scopes` whose key is one of `keys`."""
        found: list[Row] = []
        for chunk in sqlitedb.chunks(list(keys)):
            found += self._with_keys(vaults, scopes, chunk, visible=False)
        return found

    def copies(
        self, vaults: Sequence[Vault], scopes: Sequence[str], keys: Iterable[str], only_shared: bool = True
    ) -> list[Row]:
        """Every visible row in `scopes` whose key is one of `keys`; with `only_shared`, of the keys
        that have several copies in the index (a key's only copy has no rival there)."""
        found: list[Row] = []
        for chunk in sqlitedb.chunks(list(keys)):
            marks = ", ".join("?" * len(chunk))
            # A key with one copy in the whole index has no rival: looked up by primary key, this
            # leaves out most keys before the memories are searched.
            sql = f"SELECT key FROM key_totals WHERE key IN ({marks}) AND copies > 1"
            shared = [key for (key,) in self.conn.execute(sql, chunk)] if only_shared else chunk
            if shared:
                found += self._with_keys(vaults, scopes, shared, visible=True)
        return found

    def _with_keys(self, vaults: Sequence[Vault], scopes: Sequence[str], keys: list[str], visible: bool) -> list[Row]:
        where, params = self._where(vaults, scopes, visible=visible)
        params.update({f"k{i}": key for i, key in enumerate(keys)})
        names = ", ".join(f":k{i}" for i in range(len(keys)))
        sql = f"SELECT {_COLUMNS} FROM memories m WHERE {where} AND m.key IN ({names})"
        return [_row(r) for r in self.conn.execute(sql, params)]

    def document_counts(self, words: Sequence[str]) -> dict[str, int]:
        """How many rows hold each word as `fts_query` matches it (a prefix from 4 letters on, else
        the exact token), each row once, as FTS5's bm25 counts them: read from the counts the writes
        keep (`term_rows`), or, for a word that has no term there (memory/local/terms.py), by matching."""
        counts = {}
        for word in words:
            term = term_for(word)
            if term == "":
                counts[word] = 0
            elif term is None:
                sql = "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?"
                counts[word] = int(self.conn.execute(sql, (fts_query([word], every_word=True),)).fetchone()[0])
            else:
                held = self.conn.execute("SELECT rows FROM term_rows WHERE term = ?", (term,)).fetchone()
                counts[word] = int(held[0]) if held else 0
        return counts

    def match(self, vaults: Sequence[Vault], scopes: Sequence[str], query: str, limit: int) -> list[tuple[Row, float]]:
        """Visible rows in `scopes` matching an FTS5 query, best BM25 first, with their relevance (> 0).

        FTS5 ranks every match either way, but joining each one to its row to check its scope costs
        as much again; so the best few hundred matches are taken first, and only if too few of them
        are in `scopes` is every match joined."""
        size = limit * SHORTLIST_FACTOR
        if size > MAX_SHORTLIST:
            return self._match_all(vaults, scopes, query, limit)
        shortlist = self.conn.execute(
            f"SELECT rowid, -{_BM25} AS relevance FROM memories_fts WHERE memories_fts MATCH ?"
            " ORDER BY relevance DESC LIMIT ?",
            (query, size + 1),
        ).fetchall()
        kept = self._in_scopes(vaults, scopes, shortlist[:size], limit)
        if len(kept) >= limit or len(shortlist) <= size:  # enough, or every match was on the shortlist
            return kept
        return self._match_all(vaults, scopes, query, limit)

    def _in_scopes(
        self, vaults: Sequence[Vault], scopes: Sequence[str], scored: list[tuple[int, float]], limit: int
    ) -> list[tuple[Row, float]]:
        """The first `limit` visible rows in `scopes` among these (row id, relevance) pairs, in their
        order. Their ids are filtered first and only those kept are read whole: reading every
        shortlisted row's document cost four times as much (at 60,000 memories, 1.6 ms a search).
        The ids go in as one JSON array, not a parameter each: binding 400 named parameters cost
        more than the lookups."""
        if not scored:
            return []
        where, params = self._where(vaults, scopes, visible=True, indexed=False)
        params["ids"] = json.dumps([row_id for row_id, _ in scored])
        sql = f"SELECT m.id FROM memories m WHERE m.id IN (SELECT value FROM json_each(:ids)) AND {where}"
        inside = {row_id for (row_id,) in self.conn.execute(sql, params)}
        chosen = [(row_id, relevance) for row_id, relevance in scored if row_id in inside][:limit]
        sql = f"SELECT m.id, {_COLUMNS} FROM memories m WHERE m.id IN (SELECT value FROM json_each(?))"
        rows = {
            record[0]: _row(record[1:])
            for record in self.conn.execute(sql, (json.dumps([row_id for row_id, _ in chosen]),))
        }
        # A row gone between the two statements (its file removed by another process) is left out.
        return [(rows[row_id], relevance) for row_id, relevance in chosen if row_id in rows]

    def _match_all(
        self, vaults: Sequence[Vault], scopes: Sequence[str], query: str, limit: int
    ) -> list[tuple[Row, float]]:
        where, params = self._where(vaults, scopes, visible=True)
        params.update({"q": query, "limit": limit})
        sql = (
            f"SELECT {', '.join('m.' + c.strip() for c in _COLUMNS.split(','))}, {_BM25} AS rank"
            f" FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid"
            f" WHERE memories_fts MATCH :q AND {where} ORDER BY rank LIMIT :limit"
        )
        return [(_row(r), -float(r[13])) for r in self.conn.execute(sql, params)]

    def candidates(self, vaults: Sequence[Vault], scopes: Sequence[str], per_scope: int) -> list[Row]:
        """For query-less recall: per scope, the most recent and the most seen visible rows."""
        found: dict[tuple[str, str], Row] = {}
        for scope in scopes:
            where, params = self._where(vaults, [scope], visible=True)
            params["n"] = per_scope
            for order in ("m.updated_ts DESC", "m.seen_count DESC"):
                sql = f"SELECT {_COLUMNS} FROM memories m WHERE {where} ORDER BY {order} LIMIT :n"
                for columns in self.conn.execute(sql, params):
                    row = _row(columns)
                    found[(row.origin, row.place)] = row
        return list(found.values())

    def rows(self, vaults: Sequence[Vault], scopes: Sequence[str], visible: bool = True) -> list[Row]:
        where, params = self._where(vaults, scopes, visible)
        sql = f"SELECT {_COLUMNS} FROM memories m WHERE {where} ORDER BY m.scope, m.key"
        return [_row(r) for r in self.conn.execute(sql, params)]

    def page(
        self, vaults: Sequence[Vault], scopes: Sequence[str], wanted: Wanted, offset: int, limit: int
    ) -> tuple[list[Row], int]:
        """The rows in `scopes` that `wanted` keeps (all but its `words`, which this leaves to the
        caller), in `listing_order`: `limit` of them from `offset`, and how many match in all."""
        if wanted.origins is not None:
            vaults = [v for v in vaults if str(v.root) in wanted.origins]
        if not vaults or not scopes:
            return [], 0
        where, params = self._where(vaults, scopes, visible=not wanted.hidden)
        if wanted.hidden:
            where += " AND NOT (m.archived = 0 AND (m.expires_ts IS NULL OR m.expires_ts > :now))"
        for column in ("kind", "state"):
            if getattr(wanted, column):
                where += f" AND m.{column} = :{column}"
                params[column] = getattr(wanted, column)
        if wanted.tag:
            where += " AND EXISTS (SELECT 1 FROM json_each(m.doc, '$.tags') WHERE value = :tag)"
            params["tag"] = wanted.tag
        if wanted.expiring_before is not None:
            where += " AND m.expires_ts IS NOT NULL AND m.expires_ts <= :before"
            params["before"] = wanted.expiring_before
        counted = f"SELECT m.scope, count(*) FROM memories m WHERE {where} GROUP BY m.scope"
        per_scope = dict(self.conn.execute(counted, params).fetchall())
        # Scope by scope, in the order asked: each one's rows come in key order from the (scope, key)
        # index, so no sort of every matching row (with its JSON) is needed to cut one page.
        rows: list[Row] = []
        for scope in scopes:
            held = per_scope.get(scope, 0)
            if offset >= held:
                offset -= held
                continue
            one = {**params, "one": scope, "offset": offset, "limit": limit - len(rows)}
            sql = (
                f"SELECT {_COLUMNS} FROM memories m WHERE {where} AND m.scope = :one"
                " ORDER BY m.key, m.root, m.relpath LIMIT :limit OFFSET :offset"
            )
            rows += [_row(r) for r in self.conn.execute(sql, one)]
            offset = 0
            if len(rows) >= limit:
                break
        return rows, sum(per_scope.values())

    def scopes(self) -> set[str]:
        """Every scope with a row, read from the (scope, key) index."""
        return {scope for (scope,) in self.conn.execute("SELECT DISTINCT scope FROM memories")}

    def counts(self, vaults: Sequence[Vault], scopes: Sequence[str]) -> dict[str, int]:
        """Visible memories per scope: the running non-archived totals, less the expired."""
        where, params = self._where(vaults, scopes, visible=False, alias="t")
        counts: dict[str, int] = {}
        for scope, live in self.conn.execute(
            f"SELECT t.scope, sum(t.live) FROM scope_totals t WHERE {where} GROUP BY t.scope", params
        ):
            counts[scope] = live
        where, params = self._where(vaults, scopes, visible=False)
        expired = (
            f"SELECT m.scope, count(*) FROM memories m WHERE {where} AND m.archived = 0"
            " AND m.expires_ts IS NOT NULL AND m.expires_ts <= :now GROUP BY m.scope"
        )
        for scope, gone in self.conn.execute(expired, params):
            counts[scope] -= gone
        return {scope: n for scope, n in counts.items() if n > 0}

    def generation(self) -> int:
        """A number that changes whenever a row is added or removed."""
        return int(self.conn.execute("SELECT value FROM meta WHERE name = 'generation'").fetchone()[0])

    def shadowed(self, vaults: Sequence[Vault], scopes: Sequence[str]) -> int:
        """Visible copies in `scopes` that lose to another copy of their key (narrower scope, or same
        scope in an earlier vault): all but one per key, among the keys that have several copies.

        Counting them costs time in proportion to the shared keys, so the answer is cached until
        the index changes or the next memory expires."""
        chain = "\n".join([*scopes, "", *(str(v.root) for v in vaults)])
        now = time.time()
        generation = self.generation()
        cached = self.conn.execute(
            "SELECT shadowed FROM shadow_cache WHERE chain = ? AND generation = ? AND coalesce(valid_until > ?, 1)",
            (chain, generation, now),
        ).fetchone()
        if cached:
            return int(cached[0])
        where, params = self._where(vaults, scopes, visible=True)
        params["now"] = now
        sql = (
            f"SELECT count(*) - count(DISTINCT m.key) FROM memories m WHERE {where}"
            " AND m.key IN (SELECT key FROM key_totals WHERE copies > 1)"
        )
        shadowed = int(self.conn.execute(sql, params).fetchone()[0])
        next_expiry = self.conn.execute(
            "SELECT min(expires_ts) FROM memories WHERE expires_ts IS NOT NULL AND expires_ts > ?", (now,)
        ).fetchone()[0]
        with contextlib.suppress(sqlite3.OperationalError):  # a busy index only costs the next read a recount
            self.conn.execute(
                "INSERT OR REPLACE INTO shadow_cache VALUES (?, ?, ?, ?)", (chain, generation, next_expiry, shadowed)
            )
        return shadowed

    def stats(self) -> dict[str, int]:
        memories = self.conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        skipped = self.conn.execute("SELECT count(*) FROM skipped").fetchone()[0]
        return {"memories": memories, "skipped": skipped}

    def skipped_files(self) -> list[Skip]:
        return [
            Skip(Path(root, rel), reason)
            for root, rel, reason in self.conn.execute(
                "SELECT root, relpath, reason FROM skipped ORDER BY root, relpath"
            )
        ]

    def integrity(self) -> str:
        """'ok', or what is wrong: SQLite's quick check, then FTS5's own check of its index."""
        try:
            result = str(self.conn.execute("PRAGMA quick_check").fetchone()[0])
            if result == "ok":
                self.conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')")
            return result
        except sqlite3.DatabaseError as exc:
            return str(exc)

    # -- rebuild ------------------------------------------------------------------------------

    def clear(self, vault: Vault) -> None:
        root = str(vault.root)
        with self.transaction():
            others = self.conn.execute("SELECT 1 FROM memories WHERE root <> ? LIMIT 1", (root,)).fetchone()
            if others:
                old = f"{_OLD_TEXTS} WHERE rowid IN (SELECT id FROM memories WHERE root = ?)"
                _add_terms(self.conn, self.conn.execute(old, (root,)).fetchall(), -1)
            else:  # the vault holds every row (most indexes): no need to count what its rows held
                self.conn.execute("DELETE FROM term_rows")
            self.conn.execute(
                "DELETE FROM memories_fts WHERE rowid IN (SELECT id FROM memories WHERE root = ?)", (root,)
            )
            for table in ("memories", "folders", "skipped", "scope_totals"):
                self.conn.execute(f"DELETE FROM {table} WHERE root = ?", (root,))


def folder_mtime(folder: Path) -> int:
    """A folder's mtime in ns, 0 when it does not exist."""
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:
        return 0


def open_or_recreate(path: Path, discard: bool = False, timeout: float = BUSY_TIMEOUT) -> Index:
    """Open the index for a rebuild; a corrupt or outdated one (or any, with `discard`) is deleted
    first: it is derived from the files. A busy one is not damaged, and is left alone (IndexBusy)."""
    if not discard:
        try:
            return Index.open(path, create=True, timeout=timeout)
        except IndexBusy:
            raise
        except IndexUnavailable:
            pass
    for stale in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        stale.unlink(missing_ok=True)
    return Index.open(path, create=True)


def rebuild(path: Path, vaults: Sequence[Vault]) -> RebuildStats:
    """Re-read every file of the vaults in one transaction: readers see the old index until it commits."""
    started = time.perf_counter()
    index = open_or_recreate(path)
    if index.integrity() != "ok":
        index.close()
        index = open_or_recreate(path, discard=True)
    files = indexed = 0
    swept = Swept()
    try:
        with index.transaction():
            for vault in vaults:
                index.clear(vault)
                for folder, mtime_ns, listing in vault.listings():
                    swept += listing.swept
                    files += len(listing.files)
                    indexed += index.load_folder(vault, folder, listing)
                    index.conn.execute(
                        "INSERT OR REPLACE INTO folders VALUES (?, ?, ?, ?)",
                        # a writer's fresh temp file: stamp 0, so that a read looks again and sweeps it once stale
                        (
                            str(vault.root),
                            str(folder.relative_to(vault.root)),
                            0 if listing.pending else mtime_ns,
                            len(listing.files),
                        ),
                    )
        # One merged b-tree instead of the segments thousands of inserts left: every search reads less.
        index.conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")
        # The whole index went through the write-ahead log. Closing would fold it back into the file,
        # but not while another process holds the index open (a hook server does): then every later
        # read would look pages up in a log as large as the index. Fold it back and empty it now.
        with contextlib.suppress(sqlite3.OperationalError):  # busy: the next checkpoint does it
            index.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        skipped = [s for s in index.skipped_files() if any(s.path.is_relative_to(v.root) for v in vaults)]
    finally:
        index.close()
    return RebuildStats(files, indexed, skipped, time.perf_counter() - started, swept)
