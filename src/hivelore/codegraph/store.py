"""graph.db: the code graph of one or more repositories in SQLite (WAL), derived from the code.

Tables: `files` (each source file's stamp and hash), `symbols` (one row per definition ever seen,
never deleted: a definition that disappeared has `present = 0`, and gets 1 again when it comes
back, so ids recorded in history stay resolvable), `calls` (edges between present symbols, by
the symbols' integer `key`; the view `call_edges` shows them by id), `sites` (each call as
written, so calls can be resolved again without re-parsing) and `imports`.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Iterator

from hivelore import sqlitedb
from hivelore.codegraph.model import Binding, ParsedFile
from hivelore.errors import Busy, Unavailable
from hivelore.records import record
from hivelore.sqlitedb import Immediate, chunks, remove_database

SCHEMA_VERSION = "1"
BUSY_TIMEOUT = 30.0  # seconds a writer waits for another: indexing a large repository holds the lock long
# Bumped when parsing or resolution changes: the next full index re-parses every file.
PARSER_VERSION = "4"

_TABLES = (
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS files (
        repo TEXT NOT NULL, path TEXT NOT NULL, language TEXT NOT NULL,
        mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL, hash TEXT NOT NULL,
        PRIMARY KEY (repo, path)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS symbols (
        key INTEGER PRIMARY KEY,
        repo TEXT NOT NULL, id TEXT NOT NULL, file TEXT NOT NULL, qualname TEXT NOT NULL, name TEXT NOT NULL,
        kind TEXT NOT NULL, line INTEGER NOT NULL, end_line INTEGER NOT NULL, hash TEXT NOT NULL,
        bases TEXT NOT NULL, returns TEXT NOT NULL, arity INTEGER NOT NULL, present INTEGER NOT NULL,
        UNIQUE (repo, id)
    )""",
    "CREATE INDEX IF NOT EXISTS symbols_file ON symbols (repo, file, line)",
    "CREATE INDEX IF NOT EXISTS symbols_name ON symbols (repo, name)",
    "CREATE INDEX IF NOT EXISTS symbols_qualname ON symbols (repo, qualname)",
    """CREATE TABLE IF NOT EXISTS calls (
        caller INTEGER NOT NULL, callee INTEGER NOT NULL, confidence REAL NOT NULL, PRIMARY KEY (caller, callee)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS calls_callee ON calls (callee, caller, confidence)",
    """CREATE TABLE IF NOT EXISTS sites (
        caller INTEGER NOT NULL, repo TEXT NOT NULL, name TEXT NOT NULL, receiver TEXT NOT NULL,
        receiver_type TEXT NOT NULL, line INTEGER NOT NULL, args INTEGER NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS sites_caller ON sites (caller)",
    "CREATE INDEX IF NOT EXISTS sites_name ON sites (repo, name)",
    """CREATE TABLE IF NOT EXISTS imports (
        repo TEXT NOT NULL, file TEXT NOT NULL, line INTEGER NOT NULL, local TEXT NOT NULL, module TEXT NOT NULL,
        name TEXT NOT NULL, level INTEGER NOT NULL, kind TEXT NOT NULL, target TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS imports_file ON imports (repo, file)",
    """CREATE VIEW IF NOT EXISTS call_edges AS
        SELECT a.repo AS repo, a.id AS caller, b.id AS callee, c.confidence AS confidence
        FROM calls c JOIN symbols a ON a.key = c.caller JOIN symbols b ON b.key = c.callee""",
)

_ROW = "key, id, file, qualname, name, kind, line, bases, returns, arity"


class GraphUnavailable(Unavailable):
    """graph.db cannot be opened, or was written by another schema version."""

    repair = "run `hivelore graph index` to rebuild it (the graph is derived from the code)"


class GraphBusy(GraphUnavailable, Busy):
    """Another process held graph.db's write lock for the whole busy timeout: retrying later may work,
    and the file is not discarded."""

    repair = "try again in a moment (another hivelore process is writing it)"


@record
class SymRow:
    """A present symbol as resolution sees it."""

    key: int
    id: str
    file: str
    qualname: str
    name: str
    kind: str
    line: int
    bases: str  # "\n"-separated
    returns: str
    arity: int


@record
class FileChange:
    """What writing one file's definitions changed."""

    touched: list  # ids: new, changed hash, gone, or back
    names: set  # names whose set of definitions changed: calls elsewhere may now resolve differently
    callers: set  # keys of symbols whose calls must be resolved again


def assign_ids(path: str, qualnames: Iterable[str]) -> list[str]:
    """`path::qualname`, and `path::qualname#2`, `#3`, … for later definitions of the same name."""
    seen: dict[str, int] = {}
    ids = []
    for qualname in qualnames:
        count = seen[qualname] = seen.get(qualname, 0) + 1
        ids.append(f"{path}::{qualname}" if count == 1 else f"{path}::{qualname}#{count}")
    return ids


def discard(path: str) -> None:
    """Remove an unusable graph.db and its SQLite companions (the graphs are derived: indexing rebuilds them)."""
    try:
        remove_database(path)
    except OSError as exc:
        raise GraphUnavailable(exc.strerror or str(exc), "remove it by hand") from exc


_SCHEMA = sqlitedb.Schema("schema", SCHEMA_VERSION, _TABLES, "a hivelore code graph", GraphUnavailable, GraphBusy)


class Store(sqlitedb.Store):
    """graph.db, as seen for one repository (`repo`: its meta names are the repository's)."""

    def __init__(self, conn: sqlite3.Connection, path: str, repo: str) -> None:
        super().__init__(conn, path)
        self.repo = repo

    @classmethod
    def open(cls, path: str, repo: str) -> Store:
        return cls(sqlitedb.connect(path, _SCHEMA, BUSY_TIMEOUT), path, repo)

    @classmethod
    def in_memory(cls, repo: str) -> Store:
        """An empty graph in memory, of this schema: the team server fills one from a pushed graph.
        Any thread may use it (one at a time): it is its caller's own copy."""
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        for statement in _SCHEMA.statements:
            conn.execute(statement)
        conn.execute("INSERT INTO meta VALUES (?, ?)", (_SCHEMA.key, _SCHEMA.version))
        return cls(conn, ":memory:", repo)

    def transaction(self) -> Immediate:
        return Immediate(self.conn)

    def meta(self, name: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE name = ?", (f"{name}:{self.repo}",)).fetchone()
        return row[0] if row else None

    def set_meta(self, name: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (f"{name}:{self.repo}", value))

    # -- what resolution reads --------------------------------------------------------------------

    def files(self) -> list[str]:
        return [p for (p,) in self.conn.execute("SELECT path FROM files WHERE repo = ?", (self.repo,))]

    def named(self, name: str) -> list[SymRow]:
        query = f"SELECT {_ROW} FROM symbols WHERE repo = ? AND name = ? AND present = 1"
        return [SymRow(*row) for row in self.conn.execute(query, (self.repo, name))]

    def multiple_bases(self) -> list[SymRow]:
        """The classes with more than one base (their method resolution order interleaves them)."""
        query = f"SELECT {_ROW} FROM symbols WHERE repo = ? AND kind = 'class' AND present = 1 AND instr(bases, ?) > 0"
        return [SymRow(*row) for row in self.conn.execute(query, (self.repo, "\n"))]

    def decorated(self) -> list[SymRow]:
        """The functions and methods with decorators (Definition.bases holds them)."""
        query = (
            f"SELECT {_ROW} FROM symbols WHERE repo = ? AND kind IN ('function', 'method') AND present = 1"
            " AND bases != ''"
        )
        return [SymRow(*row) for row in self.conn.execute(query, (self.repo,))]

    def in_file(self, path: str) -> list[SymRow]:
        query = f"SELECT {_ROW} FROM symbols WHERE repo = ? AND file = ? AND present = 1"
        return [SymRow(*row) for row in self.conn.execute(query, (self.repo, path))]

    def bindings(self, path: str) -> list[Binding]:
        query = "SELECT local, module, name, level, line, kind FROM imports WHERE repo = ? AND file = ? ORDER BY line"
        return [Binding(*row) for row in self.conn.execute(query, (self.repo, path))]

    # -- writing one file ---------------------------------------------------------------------------

    def stamps(self) -> dict[str, tuple[int, int, str]]:
        query = "SELECT path, mtime_ns, size, hash FROM files WHERE repo = ?"
        return {path: (mtime, size, digest) for path, mtime, size, digest in self.conn.execute(query, (self.repo,))}

    def code_digest(self) -> str:
        """A digest of the code the graph was built from: every file's path and hash, and the parser's
        version. What is derived from the whole graph (its hot spots) is valid while this holds."""
        digest = hashlib.sha256(PARSER_VERSION.encode())
        for path, file_hash in self.conn.execute(
            "SELECT path, hash FROM files WHERE repo = ? ORDER BY path", (self.repo,)
        ):
            digest.update(f"\0{path}\0{file_hash}".encode())
        return digest.hexdigest()

    def stamp(self, path: str, language: str, mtime_ns: int, size: int, digest: str) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)",
            (self.repo, path, language, mtime_ns, size, digest),
        )

    def write_file(self, parsed: ParsedFile) -> FileChange:
        """Replace one file's definitions, call sites and imports (symbols are updated in place)."""
        conn, repo, path = self.conn, self.repo, parsed.path
        old = {
            row[0]: row[1:]
            for row in conn.execute(
                "SELECT id, key, hash, present, name, bases FROM symbols WHERE repo = ? AND file = ?", (repo, path)
            )
        }
        ids = assign_ids(path, (d.qualname for d in parsed.definitions))
        touched, names, keys = [], set(), []
        for definition, symbol_id in zip(parsed.definitions, ids, strict=True):
            name = definition.qualname.rpartition(".")[2]
            bases = "\n".join(definition.bases)
            values = (
                definition.qualname, name, definition.kind, definition.line, definition.end_line,
                definition.hash, bases, definition.returns, definition.arity,
            )  # fmt: skip
            known = old.get(symbol_id)
            if known is None:
                cursor = conn.execute(
                    "INSERT INTO symbols (repo, id, file, qualname, name, kind, line, end_line, hash, bases, returns,"
                    " arity, present) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)",
                    (repo, symbol_id, path, *values),
                )
                keys.append(cursor.lastrowid)
                touched.append(symbol_id)
                names.add(name)
                names.update(_last_name(base) for base in definition.bases)  # see below
                continue
            key, digest, present, _name, old_bases = known
            conn.execute(
                "UPDATE symbols SET qualname = ?, name = ?, kind = ?, line = ?, end_line = ?, hash = ?, bases = ?,"
                " returns = ?, arity = ?, present = 1 WHERE key = ?",
                (*values, key),
            )
            keys.append(key)
            if digest != definition.hash or not present:
                touched.append(symbol_id)
            if not present or old_bases != bases:
                names.add(name)
                # and the code its bases name: a decorator's wrapper calls the functions decorated
                names.update(_last_name(base) for base in f"{old_bases or ''}\n{bases}".split("\n") if base)
        current = set(ids)
        gone = [(symbol_id, row[0], row[3]) for symbol_id, row in old.items() if row[2] and symbol_id not in current]
        change = self._retire(gone, touched, names)
        old_keys = [row[0] for row in old.values()]
        for batch in chunks(old_keys):
            marks = ",".join("?" * len(batch))
            conn.execute(f"DELETE FROM sites WHERE caller IN ({marks})", batch)
            conn.execute(f"DELETE FROM calls WHERE caller IN ({marks})", batch)
        conn.executemany(
            "INSERT INTO sites VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(keys[s.caller], repo, s.name, s.receiver, s.receiver_type, s.line, s.args) for s in parsed.sites],
        )
        conn.execute("DELETE FROM imports WHERE repo = ? AND file = ?", (repo, path))
        conn.executemany(
            "INSERT INTO imports VALUES (?, ?, ?, ?, ?, ?, ?, ?, '')",
            [(repo, path, b.line, b.local, b.module, b.name, b.level, b.kind) for b in parsed.bindings],
        )
        change.callers.update(keys)
        return change

    def remove_file(self, path: str) -> FileChange:
        """A file that is gone: its symbols stay, with present = 0."""
        rows = self.conn.execute(
            "SELECT id, key, name FROM symbols WHERE repo = ? AND file = ? AND present = 1", (self.repo, path)
        ).fetchall()
        change = self._retire(rows, [], set())
        keys = [key for _id, key, _name in rows]
        for batch in chunks(keys):
            marks = ",".join("?" * len(batch))
            self.conn.execute(f"DELETE FROM sites WHERE caller IN ({marks})", batch)
            self.conn.execute(f"DELETE FROM calls WHERE caller IN ({marks})", batch)
        self.conn.execute("DELETE FROM imports WHERE repo = ? AND file = ?", (self.repo, path))
        self.conn.execute("DELETE FROM files WHERE repo = ? AND path = ?", (self.repo, path))
        return change

    def _retire(self, gone: list[tuple[str, int, str]], touched: list, names: set) -> FileChange:
        """Mark symbols (id, key, name) as no longer present; their callers must be resolved again."""
        callers: set[int] = set()
        keys = [key for _id, key, _name in gone]
        for batch in chunks(keys):
            marks = ",".join("?" * len(batch))
            callers.update(
                c for (c,) in self.conn.execute(f"SELECT caller FROM calls WHERE callee IN ({marks})", batch)
            )
            self.conn.execute(f"DELETE FROM calls WHERE callee IN ({marks})", batch)
            self.conn.execute(f"UPDATE symbols SET present = 0 WHERE key IN ({marks})", batch)
        touched.extend(symbol_id for symbol_id, _key, _name in gone)
        names.update(name for _id, _key, name in gone)
        return FileChange(touched, names, callers - set(keys))

    # -- calls ------------------------------------------------------------------------------------

    def callers_of(self, names: Iterable[str]) -> set[int]:
        """Symbols with a call site of one of these names."""
        found: set[int] = set()
        for batch in chunks(sorted(names)):
            marks = ",".join("?" * len(batch))
            query = f"SELECT DISTINCT caller FROM sites WHERE repo = ? AND name IN ({marks})"
            found.update(key for (key,) in self.conn.execute(query, (self.repo, *batch)))
        return found

    def sites(self, callers: Iterable[int] | None = None) -> Iterator[tuple[SymRow, tuple]]:
        """(caller, (name, receiver, receiver_type, line, args)) for the given callers, or all present ones."""
        columns = ", ".join(f"y.{c.strip()}" for c in _ROW.split(","))
        query = (
            f"SELECT {columns}, s.name, s.receiver, s.receiver_type, s.line, s.args"
            " FROM sites s JOIN symbols y ON y.key = s.caller"
        )
        if callers is None:
            rows = self.conn.execute(f"{query} WHERE y.repo = ? AND y.present = 1", (self.repo,)).fetchall()
        else:
            rows = []
            for batch in chunks(sorted(callers)):
                marks = ",".join("?" * len(batch))
                rows.extend(self.conn.execute(f"{query} WHERE s.caller IN ({marks}) AND y.present = 1", batch))
        for row in rows:
            yield SymRow(*row[:10]), row[10:]

    def replace_calls(self, callers: Iterable[int] | None, edges: list[tuple[int, int, float]]) -> None:
        """Drop the calls of these callers (of the whole repository when None) and insert `edges`."""
        if callers is None:
            self.conn.execute(
                "DELETE FROM calls WHERE caller IN (SELECT key FROM symbols WHERE repo = ?)", (self.repo,)
            )
        else:
            for batch in chunks(sorted(callers)):
                self.conn.execute(f"DELETE FROM calls WHERE caller IN ({','.join('?' * len(batch))})", batch)
        self.conn.executemany("INSERT OR REPLACE INTO calls VALUES (?, ?, ?)", edges)

    def set_import_targets(self, targets: list[tuple[str, str, int, str]]) -> None:
        """(target, file, line, local) for resolved imports."""
        self.conn.executemany(
            "UPDATE imports SET target = ? WHERE repo = ? AND file = ? AND line = ? AND local = ?",
            [(target, self.repo, path, line, local) for target, path, line, local in targets],
        )

    def counts(self) -> tuple[int, int, int]:
        """(files, present symbols, calls) of the repository."""
        repo = (self.repo,)
        files = self.conn.execute("SELECT count(*) FROM files WHERE repo = ?", repo).fetchone()[0]
        symbols = self.conn.execute("SELECT count(*) FROM symbols WHERE repo = ? AND present = 1", repo).fetchone()[0]
        calls = self.conn.execute(
            "SELECT count(*) FROM calls WHERE caller IN (SELECT key FROM symbols WHERE repo = ?)", repo
        ).fetchone()[0]
        return files, symbols, calls


def _last_name(dotted: str) -> str:
    """`mod.logged` → "logged", `rule()` → "rule": the name a call site of it has."""
    return dotted.removesuffix("()").rpartition(".")[2]
