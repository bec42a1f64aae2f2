"""What the SQLite stores (events.db, team.db, graph.db) share: opening the file (created with its
tables when missing, in WAL mode, its schema version checked), one store class with its connection,
the connections a long-lived process keeps open between uses (`Pool`), sqlite's errors turned into
the store's own, short write transactions, statements that finish at once, and plain records.

Stdlib only and cheap to import: every hook process opens at least one of these stores.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence

from hivelore.home import private_file, private_folder, private_home

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from typing import Self


class Record:
    """A plain record: its `__slots__` are its fields, compared, hashed and shown in that order."""

    __slots__: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(getattr(self, f) == getattr(other, f) for f in self.__slots__)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, f) for f in self.__slots__))

    def __repr__(self) -> str:
        fields = ", ".join(f"{f}={getattr(self, f)!r}" for f in self.__slots__)
        return f"{type(self).__name__}({fields})"

    def to_dict(self) -> dict[str, object]:
        """The fields, as JSON takes them (tuples as lists): what the CLI prints and MCP answers
        build on, so that both say the same of a record."""
        return {f: list(v) if isinstance(v, tuple) else v for f in self.__slots__ for v in (getattr(self, f),)}


class Immediate:
    """BEGIN IMMEDIATE … COMMIT: the write lock is taken before reading, so no update is lost."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: object) -> None:
        # sqlite rolls back by itself on some errors (disk full); a second ROLLBACK would hide the cause
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK" if kind else "COMMIT")


def rows(conn: sqlite3.Connection, sql: str, params: tuple = ()) -> list:
    # fetchall() finishes the statement, so an autocommit write commits (and frees the lock) right here
    return conn.execute(sql, params).fetchall()


IN_LIST = 500  # values per `IN (…)` list: far below SQLite's limit on bound parameters


def chunks(items: list, size: int = IN_LIST) -> Iterator[list]:
    """`items` in slices that each fit one `IN (…)` list."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def remove_database(path: str) -> None:
    """Delete a database file with its WAL, shared-memory and journal files (already gone is fine);
    an OSError names the file that could not be removed."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.remove(path + suffix)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise OSError(exc.errno, f"{path}{suffix} cannot be removed ({exc.strerror})") from exc


def storable(text: str) -> str:
    # JSON payloads can carry lone surrogates (a "\ud800" escape), which sqlite3 refuses to encode
    return text if text.isascii() else text.encode("utf-8", "replace").decode("utf-8")


def tables(conn: sqlite3.Connection) -> set[str]:
    return {name for (name,) in rows(conn, "SELECT name FROM sqlite_master WHERE type = 'table'")}


def switch_to_wal(conn: sqlite3.Connection, deadline: float) -> None:
    """Set WAL mode (stored in the file, so once, before creating the tables), waiting out other openers.

    A journal mode change does not go through the busy handler: when several processes create the
    store at once, all but one are told "locked" at once, so this retries until the deadline.
    """
    while True:
        try:
            rows(conn, "PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.002)


def guarded(schema: Schema) -> Callable[[Callable], Callable]:
    """A decorator for a store's methods: every text argument made storable, and every sqlite error
    turned into the store's own exception (`schema.error_for(exc, self.path)`), which a hook can act on."""

    def wrap(method: Callable) -> Callable:
        def call(self, *args: object, **kwargs: object) -> object:  # noqa: ANN001 -- any store with a .path
            args = tuple(storable(arg) if type(arg) is str else arg for arg in args)
            kwargs = {name: storable(arg) if type(arg) is str else arg for name, arg in kwargs.items()}
            try:
                return method(self, *args, **kwargs)
            except sqlite3.Error as exc:
                raise schema.error_for(exc, self.path) from exc

        call.__name__, call.__qualname__, call.__doc__ = method.__name__, method.__qualname__, method.__doc__
        return call

    return wrap


def is_busy(exc: sqlite3.Error) -> bool:
    """Whether the error only says another process held the lock for the whole busy timeout."""
    message = str(exc)
    return "locked" in message or "busy" in message


class Schema(Record):
    """What a store's file holds: its tables, and the version it records under `key` in its meta
    table; `what` names the store in errors ("a hivelore event store"). `error` is the exception of
    a file that cannot be used, `busy` of one whose write lock other processes held for the whole
    busy timeout; `advice` ends the message of a file that cannot be used (how to get a new one).
    Every store lives in HIVELORE_HOME and is readable by its owner only."""

    __slots__ = ("key", "version", "statements", "what", "error", "busy", "advice")

    def __init__(
        self,
        key: str,
        version: str,
        statements: Sequence[str],
        what: str,
        error: type[Exception],
        busy: type[Exception],
        advice: str = "",
    ) -> None:
        self.key, self.version, self.statements, self.what = key, version, tuple(statements), what
        self.error, self.busy, self.advice = error, busy, advice

    def error_for(self, exc: sqlite3.Error, path: str) -> Exception:
        """The store's own exception for a sqlite error."""
        if is_busy(exc):
            return self.busy(f"{path} is busy ({exc})")
        return self.error(f"{path} cannot be used ({exc}){self.advice}")


class Store:
    """One connection (`conn`) to a store's file (`path`); `with` closes it (gives it back to the
    `pool` it came from, if any)."""

    def __init__(self, conn: sqlite3.Connection, path: str, pool: Pool | None = None) -> None:
        self.conn = conn
        self.path = path
        self.pool = pool

    def close(self) -> None:
        close(self.conn, self.pool)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Pool:
    """The connections a long-lived process (the hook server) keeps open between uses, at most one
    idle per file: opening a store costs more than most events' whole work in it (the file's
    schema read again, WAL mode set, the schema version checked). A connection is taken again only
    for the same file: a file replaced since (a reset, a rebuild) gets a new one. Used by one
    thread: the server answers its events one at a time."""

    __slots__ = ("_idle", "_files")

    def __init__(self) -> None:
        self._idle: dict[str, tuple[tuple[int, int], sqlite3.Connection]] = {}
        self._files: dict[sqlite3.Connection, tuple[str, tuple[int, int]]] = {}  # in use: its file

    def reuse(self, path: str, check: Callable[[sqlite3.Connection], bool]) -> sqlite3.Connection | None:
        """The idle connection to the file at `path`, when that file is still the one it opened and
        the connection passes `check` (its schema version, say); else None, and it is closed."""
        held = self._idle.pop(path, None)
        if held is None:
            return None
        identity, conn = held
        try:
            usable = _identity(path) == identity and check(conn)
        except sqlite3.Error:
            usable = False
        if not usable:
            conn.close()
            return None
        self._files[conn] = (path, identity)
        return conn

    def track(self, path: str, conn: sqlite3.Connection) -> None:
        """A connection just opened to the file at `path`, to be given back (`release`) after use."""
        identity = _identity(path)
        if identity is not None:
            self._files[conn] = (path, identity)

    def release(self, conn: sqlite3.Connection) -> None:
        """Done with a connection: kept idle for its file, unless it is in a transaction (a use that
        failed half-way), the file has one idle already, or it was never tracked; else closed."""
        path, identity = self._files.pop(conn, ("", (0, 0)))
        if not path or conn.in_transaction or path in self._idle:
            conn.close()
            return
        self._idle[path] = (identity, conn)

    def close(self) -> None:
        for _, conn in self._idle.values():
            conn.close()
        self._idle.clear()


def close(conn: sqlite3.Connection, pool: Pool | None) -> None:
    """Done with a connection: given back to the pool it came from, or closed."""
    if pool is not None:
        pool.release(conn)
    else:
        conn.close()


def _identity(path: str) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def connect(path: str, schema: Schema, timeout: float, pool: Pool | None = None) -> sqlite3.Connection:
    """Open a store's file (its folder and tables created when missing) in WAL mode, waiting up to
    `timeout` seconds for other writers; `schema.error` when it is not this store at this version,
    `schema.error_for` of any other sqlite error. From `pool`, an idle connection to the same file
    is taken instead when its schema version is still this one."""
    kept = pool.reuse(path, lambda conn: _version(conn, schema) == schema.version) if pool is not None else None
    if kept is not None:
        return kept
    try:
        folder = os.path.dirname(path)
        private_folder(folder)
        private_home(folder)
        private_file(path)
        conn = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    except (OSError, sqlite3.Error) as exc:
        raise schema.error(f"{path} cannot be opened ({exc})") from exc
    try:
        _check_schema(conn, path, schema, time.monotonic() + timeout)
        # per connection; in WAL mode NORMAL cannot corrupt, it only drops the last commits on power loss
        conn.execute("PRAGMA synchronous=NORMAL")
    except schema.error:
        conn.close()
        raise
    except sqlite3.Error as exc:
        conn.close()
        raise schema.error_for(exc, path) from exc
    if pool is not None:
        pool.track(path, conn)
    return conn


def _check_schema(conn: sqlite3.Connection, path: str, schema: Schema, deadline: float) -> None:
    """One query on the usual path; the tables are created only when the meta table is missing."""
    try:
        version = _version(conn, schema)
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        found = _create_schema(conn, path, schema, deadline)
        version = found[0][0] if found else None
    if version != schema.version:
        label = schema.key.replace("-", " ")
        raise schema.error(f"{path} has {label} {version}, this hivelore needs {schema.version}{schema.advice}")


def _version(conn: sqlite3.Connection, schema: Schema) -> str | None:
    found = rows(conn, "SELECT value FROM meta WHERE name = ?", (schema.key,))
    return found[0][0] if found else None


def _create_schema(conn: sqlite3.Connection, path: str, schema: Schema, deadline: float) -> list:
    present = tables(conn)
    if present and "meta" not in present:  # someone else's database: do not even change its journal mode
        raise schema.error(f"{path} is not {schema.what} (tables: {', '.join(sorted(present))})")
    switch_to_wal(conn, deadline)
    with Immediate(conn):
        if not tables(conn):  # another process may have created it while this one waited for the lock
            for statement in schema.statements:
                conn.execute(statement)
            conn.execute("INSERT INTO meta VALUES (?, ?)", (schema.key, schema.version))
        return rows(conn, "SELECT value FROM meta WHERE name = ?", (schema.key,))
