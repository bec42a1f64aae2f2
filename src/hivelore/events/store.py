"""The event store: what the hooks remember between calls, in `events.db` (SQLite, WAL mode).

Event data has no file in the vault, so it lives here, shared by every agent on the machine:
sessions (and whether the session-start block was given since the last compaction), the memory
addresses already shown to a session, notices held for a session's next tool result, the user's
prompts (kept for promotion), every shell command that finished (failed or not), failure signatures
with how often they were seen and the fix that resolved them, and how often one call was repeated
in a session. Losing this data is acceptable;
crashing a hook is not: every sqlite error surfaces as `EventStoreUnavailable` (a damaged or
outdated file: `reset` discards and recreates it) or its subclass `EventStoreBusy` (the write lock
stayed taken for the whole busy timeout: skip this event).

API (agent + session_id identify a session everywhere; nothing requires `touch_session` first):

    store = EventStore.open(folder)                 # folder/events.db, created when missing
    store.touch_session(agent, session_id, cwd, subagent=False, parent="")
    store.session(agent, session_id) -> Session | None
    store.take_context(agent, session_id) -> bool   # due (not given yet, or compacted since), now given
    store.mark_compacted(agent, session_id)         # context due again, and `shown` forgotten
    store.shown(agent, session_id) -> set[str]      # SCOPE::KEY addresses shown this session
    store.mark_shown(agent, session_id, addresses)
    store.hold_notice(agent, session_id, text)       # for the session's next tool result
    store.take_notices(agent, session_id) -> list[str]  # held ones, oldest first, no longer held
    store.record_prompt(agent, session_id, text, root_session)
    store.prompts(agent=None, session_id=None, root_only=False, since=0.0) -> list[Prompt]
    store.record_evidence(agent, session_id, [(key, line)]) ; store.evidence(key) ; store.forget_evidence(key)
    store.record_failure(agent, session_id, cwd, tool, command, exit_code, error) -> Failure
    store.record_success(agent, session_id, cwd, tool, command) -> list[Failure]  # the ones it resolved
    store.record_call(agent, session_id, tool, command_or_input) -> int           # count so far
    store.friction(agent, session_id) -> Friction
    store.prune(older_than_days, every_s=0) -> int | None   # None: pruned less than every_s ago
    reset(folder) -> EventStore                     # discard events.db, open a new one
    normalise_command(command, cwd) -> str; fingerprint(error, cwd="") -> str; error_lines(error, cwd="") -> list[str]

Failure signature = (tool, normalise_command(command, cwd), exit_code, fingerprint(error, cwd)).
`seen` counts the signature's occurrences in every session. A fix is learnt by `record_success`:
a command that succeeds with the same normalised command and cwd as failures still open in this
session resolves them, and the successful commands run in this session in between (other than the
failing command itself, deduplicated, at most the last 10) become the signature's fix, replacing an
older one. When nothing succeeded in between, the fix is the command itself (`Failure.rerun`): it
passed when simply run again. Failed commands in between are not part of a fix.

Sizes: prompt texts keep their first 8,000 characters, error texts their first 2,000 and last
6,000 (the end of an output usually carries the summary); a fingerprint reads at most the first
and last 16,000 characters; a normalised command longer than 2,000 characters is cut there and
ends with a hash of the whole. Exit codes are integers: pass -1 for a tool that has none.

The hook path imports this module on every agent event, so it imports only cheap stdlib modules,
opens with one query (the schema is created only when the meta table is missing), and compiles
each regular expression on first use (through `re`'s own cache).
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterable

from hivelore import sqlitedb
from hivelore.errors import Busy, Unavailable
from hivelore.sqlitedb import Immediate, Record

SCHEMA_VERSION = "2"
FILENAME = "events.db"
PROMPT_CAP = 8_000
ERROR_HEAD = 2_000
ERROR_TAIL = 6_000
FINGERPRINT_WINDOW = 16_000
FINGERPRINT_LINES = 20
LINE_CAP = 1_000
FIX_COMMANDS = 10
COMMAND_CAP = 2_000
BUSY_TIMEOUT = 5.0

# Added after schema 2 shipped: an events.db created before has no such table until a notice is held.
_NOTICES = """CREATE TABLE IF NOT EXISTS notices (
    id INTEGER PRIMARY KEY, agent TEXT NOT NULL, session_id TEXT NOT NULL, ts REAL NOT NULL, text TEXT NOT NULL
)"""
_TABLES = (
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS sessions (
        agent TEXT NOT NULL, session_id TEXT NOT NULL, cwd TEXT NOT NULL, subagent INTEGER NOT NULL,
        parent TEXT NOT NULL, started_ts REAL NOT NULL, last_ts REAL NOT NULL, context_given INTEGER NOT NULL,
        PRIMARY KEY (agent, session_id)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS shown (
        agent TEXT NOT NULL, session_id TEXT NOT NULL, address TEXT NOT NULL, ts REAL NOT NULL,
        PRIMARY KEY (agent, session_id, address)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS prompts (
        id INTEGER PRIMARY KEY, agent TEXT NOT NULL, session_id TEXT NOT NULL, ts REAL NOT NULL,
        root INTEGER NOT NULL, text TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS prompts_session ON prompts (agent, session_id)",
    "CREATE INDEX IF NOT EXISTS prompts_ts ON prompts (ts)",
    """CREATE TABLE IF NOT EXISTS signatures (
        id INTEGER PRIMARY KEY, tool TEXT NOT NULL, command TEXT NOT NULL, exit_code INTEGER NOT NULL,
        fingerprint TEXT NOT NULL, summary TEXT NOT NULL, seen INTEGER NOT NULL, first_ts REAL NOT NULL,
        last_ts REAL NOT NULL, fix TEXT, fix_ts REAL,
        UNIQUE (tool, command, exit_code, fingerprint)
    )""",
    # Every command that finished: a failure points at its signature until a success resolves it.
    """CREATE TABLE IF NOT EXISTS runs (
        id INTEGER PRIMARY KEY, agent TEXT NOT NULL, session_id TEXT NOT NULL, ts REAL NOT NULL,
        cwd TEXT NOT NULL, tool TEXT NOT NULL, command TEXT NOT NULL, exit_code INTEGER NOT NULL,
        signature INTEGER REFERENCES signatures (id), error TEXT, resolved_by INTEGER
    )""",
    "CREATE INDEX IF NOT EXISTS runs_session ON runs (agent, session_id, id)",
    """CREATE INDEX IF NOT EXISTS runs_open ON runs (agent, session_id, command, cwd)
        WHERE signature IS NOT NULL AND resolved_by IS NULL""",
    "CREATE INDEX IF NOT EXISTS runs_ts ON runs (ts)",
    # A profile candidate (a stated preference or project fact) seen in a root session's own prompt.
    """CREATE TABLE IF NOT EXISTS evidence (
        key TEXT NOT NULL, agent TEXT NOT NULL, session_id TEXT NOT NULL, line TEXT NOT NULL, ts REAL NOT NULL,
        PRIMARY KEY (key, agent, session_id)
    ) WITHOUT ROWID""",
    _NOTICES,
    """CREATE TABLE IF NOT EXISTS calls (
        agent TEXT NOT NULL, session_id TEXT NOT NULL, digest TEXT NOT NULL, tool TEXT NOT NULL,
        count INTEGER NOT NULL, ts REAL NOT NULL,
        PRIMARY KEY (agent, session_id, digest)
    ) WITHOUT ROWID""",
)


# What `forget_captured` removes per session, by the name it reports: (kind, table).
_CAPTURED = (
    ("prompts", "prompts"),
    ("commands run", "runs"),
    ("repeated calls", "calls"),
    ("profile evidence", "evidence"),
    ("shown lessons", "shown"),
    ("held notices", "notices"),
    ("sessions", "sessions"),
)


class EventStoreUnavailable(Unavailable):
    """events.db cannot be used: damaged, from another schema version, or not hivelore's. `reset` helps."""


class EventStoreBusy(EventStoreUnavailable, Busy):
    """Other processes held the write lock for the whole busy timeout; retrying later may work, a reset won't."""


# -- records ------------------------------------------------------------------------------------


class Session(Record):
    __slots__ = ("agent", "session_id", "cwd", "subagent", "parent", "started_ts", "last_ts")

    def __init__(
        self, agent: str, session_id: str, cwd: str, subagent: bool, parent: str, started_ts: float, last_ts: float
    ) -> None:
        self.agent, self.session_id, self.cwd, self.subagent = agent, session_id, cwd, bool(subagent)
        self.parent, self.started_ts, self.last_ts = parent, started_ts, last_ts


class Prompt(Record):
    __slots__ = ("agent", "session_id", "ts", "text", "root")

    def __init__(self, agent: str, session_id: str, ts: float, text: str, root: bool) -> None:
        self.agent, self.session_id, self.ts, self.text, self.root = agent, session_id, ts, text, bool(root)


class Failure(Record):
    """A failure signature: how often it was seen (in any session, this occurrence included) and its fix."""

    __slots__ = ("tool", "command", "exit_code", "fingerprint", "summary", "seen", "fix")

    def __init__(
        self, tool: str, command: str, exit_code: int, fingerprint: str, summary: str, seen: int, fix: tuple[str, ...]
    ) -> None:
        self.tool, self.command, self.exit_code, self.fingerprint = tool, command, exit_code, fingerprint
        self.summary, self.seen, self.fix = summary, seen, fix

    @property
    def seen_before(self) -> int:
        return self.seen - 1

    @property
    def rerun(self) -> bool:
        """The remembered fix is running the same command again (it passed with nothing done in between)."""
        return self.fix == (self.command,)


class Friction(Record):
    """What made this session hard: failed commands (and how many stayed unresolved), the most repeated call."""

    __slots__ = ("failures", "unresolved", "max_repeats")

    def __init__(self, failures: int, unresolved: int, max_repeats: int) -> None:
        self.failures, self.unresolved, self.max_repeats = failures, unresolved, max_repeats


_FAILURE_COLUMNS = "tool, command, exit_code, fingerprint, summary, seen, fix"


def _failure(row: tuple) -> Failure:
    # a fix is stored as its commands, one a line (normalised commands never contain a newline)
    tool, command, exit_code, fingerprint, summary, seen, fix = row
    return Failure(tool, command, exit_code, fingerprint, summary, seen, tuple(fix.split("\n")) if fix else ())


# -- the store ----------------------------------------------------------------------------------


# it keeps the user's prompts and raw error output as they came
_SCHEMA = sqlitedb.Schema(
    "schema", SCHEMA_VERSION, _TABLES, "a hivelore event store", EventStoreUnavailable, EventStoreBusy,
    "; reset discards and recreates it",
)  # fmt: skip
_guarded = sqlitedb.guarded(_SCHEMA)


class EventStore(sqlitedb.Store):
    """One connection to events.db; every public method is one short transaction (or one statement)."""

    def __init__(
        self, conn: sqlite3.Connection, path: str, clock: Callable[[], float], pool: sqlitedb.Pool | None = None
    ) -> None:
        super().__init__(conn, path, pool)
        self.clock = clock

    @classmethod
    def open(
        cls,
        folder: str,
        *,
        timeout: float = BUSY_TIMEOUT,
        clock: Callable[[], float] = time.time,
        pool: sqlitedb.Pool | None = None,
    ) -> EventStore:
        """Open folder/events.db, creating the folder and the database when missing (or take the
        connection `pool` keeps to it)."""
        path = os.path.join(folder, FILENAME)
        conn = sqlitedb.connect(path, _SCHEMA, timeout, pool)
        return cls(conn, path, clock, pool)

    # -- sessions ---------------------------------------------------------------------------------

    @_guarded
    def touch_session(self, agent: str, session_id: str, cwd: str, subagent: bool = False, parent: str = "") -> None:
        """Create or refresh a session (its last activity is what `prune` goes by)."""
        now = self.clock()
        sqlitedb.rows(
            self.conn,
            "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?, 0) ON CONFLICT (agent, session_id) DO UPDATE SET"
            " cwd = excluded.cwd, subagent = excluded.subagent, parent = excluded.parent, last_ts = excluded.last_ts",
            (agent, session_id, cwd, int(subagent), parent, now, now),
        )

    @_guarded
    def session(self, agent: str, session_id: str) -> Session | None:
        rows = sqlitedb.rows(
            self.conn,
            "SELECT agent, session_id, cwd, subagent, parent, started_ts, last_ts FROM sessions"
            " WHERE agent = ? AND session_id = ?",
            (agent, session_id),
        )
        return Session(*rows[0]) if rows else None

    @_guarded
    def take_context(self, agent: str, session_id: str) -> bool:
        """Whether the session-start block is due (never given, or compacted since), marked given in
        the same transaction: of two hooks starting one session at once, exactly one gives it."""
        with Immediate(self.conn) as conn:
            sql = "SELECT context_given FROM sessions WHERE agent = ? AND session_id = ?"
            rows = sqlitedb.rows(conn, sql, (agent, session_id))
            if rows and rows[0][0]:
                return False
            self._set_context(conn, agent, session_id, given=True)
            return True

    @_guarded
    def mark_compacted(self, agent: str, session_id: str) -> None:
        """The agent's context was compacted: what it was shown is gone, so the context is due again."""
        with Immediate(self.conn) as conn:
            self._set_context(conn, agent, session_id, given=False)
            conn.execute("DELETE FROM shown WHERE agent = ? AND session_id = ?", (agent, session_id))

    def _set_context(self, conn: sqlite3.Connection, agent: str, session_id: str, given: bool) -> None:
        now = self.clock()
        sqlitedb.rows(
            conn,
            "INSERT INTO sessions VALUES (?, ?, '', 0, '', ?, ?, ?) ON CONFLICT (agent, session_id) DO UPDATE SET"
            " context_given = excluded.context_given, last_ts = excluded.last_ts",
            (agent, session_id, now, now, int(given)),
        )

    @_guarded
    def shown(self, agent: str, session_id: str) -> set[str]:
        sql = "SELECT address FROM shown WHERE agent = ? AND session_id = ?"
        rows = sqlitedb.rows(self.conn, sql, (agent, session_id))
        return {address for (address,) in rows}

    @_guarded
    def mark_shown(self, agent: str, session_id: str, addresses: Iterable[str]) -> None:
        now = self.clock()
        rows = [(agent, session_id, sqlitedb.storable(address), now) for address in addresses]
        if rows:
            with Immediate(self.conn) as conn:
                conn.executemany("INSERT INTO shown VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING", rows)

    # -- notices held for the next tool result ------------------------------------------------------

    @_guarded
    def hold_notice(self, agent: str, session_id: str, text: str) -> None:
        """Keep `text` for this session's next tool result: said before a tool ran, to an agent whose
        model reads nothing a hook answers then (Gemini CLI's BeforeTool)."""
        with Immediate(self.conn) as conn:
            conn.execute(_NOTICES)
            conn.execute(
                "INSERT INTO notices (agent, session_id, ts, text) VALUES (?, ?, ?, ?)",
                (agent, session_id, self.clock(), text),
            )

    @_guarded
    def take_notices(self, agent: str, session_id: str) -> list[str]:
        """The session's held notices, oldest first, no longer held: of two hooks taking them at once,
        exactly one gets each."""
        where = " FROM notices WHERE agent = ? AND session_id = ?"
        try:
            # nearly always none: a plain read first, so that the common tool result takes no write lock
            if not sqlitedb.rows(self.conn, f"SELECT 1{where} LIMIT 1", (agent, session_id)):
                return []
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):  # an events.db from before notices, which has held none
                return []
            raise
        with Immediate(self.conn) as conn:
            rows = sqlitedb.rows(conn, f"DELETE{where} RETURNING id, text", (agent, session_id))
        return [text for _, text in sorted(rows)]

    # -- evidence for profile promotion -------------------------------------------------------------

    @_guarded
    def record_evidence(self, agent: str, session_id: str, candidates: Iterable[tuple[str, str]]) -> None:
        """Note that this root session's own prompt stated these (key, line) candidates."""
        now = self.clock()
        rows = [(key, agent, session_id, line, now) for key, line in candidates]
        if rows:
            with Immediate(self.conn) as conn:
                conn.executemany("INSERT INTO evidence VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", rows)

    @_guarded
    def evidence(self, key: str) -> list[tuple[str, str]]:
        """The (agent, session id) of every root session that stated this candidate, first first."""
        rows = sqlitedb.rows(self.conn, "SELECT agent, session_id FROM evidence WHERE key = ? ORDER BY ts", (key,))
        return [(agent, session_id) for agent, session_id in rows]

    @_guarded
    def forget_evidence(self, key: str) -> None:
        """After "forget that …", what was said before no longer counts toward promoting it again."""
        sqlitedb.rows(self.conn, "DELETE FROM evidence WHERE key = ?", (key,))

    # -- prompts ----------------------------------------------------------------------------------

    @_guarded
    def record_prompt(self, agent: str, session_id: str, text: str, root_session: bool) -> None:
        """Keep a prompt the caller judged to be the user's own direct input (first 8,000 characters)."""
        sqlitedb.rows(
            self.conn,
            "INSERT INTO prompts (agent, session_id, ts, root, text) VALUES (?, ?, ?, ?, ?)",
            (agent, session_id, self.clock(), int(root_session), text[:PROMPT_CAP]),
        )

    @_guarded
    def first_prompt(self, agent: str, session_id: str) -> str:
        """The session's first kept prompt ("" if none): what its task is named after."""
        found = sqlitedb.rows(
            self.conn,
            "SELECT text FROM prompts WHERE agent = ? AND session_id = ? ORDER BY ts, id LIMIT 1",
            (agent, session_id),
        )
        return found[0][0] if found else ""

    @_guarded
    def prompts(
        self, agent: str | None = None, session_id: str | None = None, root_only: bool = False, since: float = 0.0
    ) -> list[Prompt]:
        """Kept prompts, oldest first; each filter left at its default matches everything."""
        rows = sqlitedb.rows(
            self.conn,
            "SELECT agent, session_id, ts, text, root FROM prompts WHERE ts >= ? AND (? IS NULL OR agent = ?)"
            " AND (? IS NULL OR session_id = ?) AND (root OR NOT ?) ORDER BY ts, id",
            (since, agent, agent, session_id, session_id, int(root_only)),
        )
        return [Prompt(*row) for row in rows]

    # -- tool failures and repeated calls ----------------------------------------------------------

    @_guarded
    def record_failure(
        self, agent: str, session_id: str, cwd: str, tool: str, command: str, exit_code: int, error: str
    ) -> Failure:
        """Stage a failure; the answer says how often its signature was seen before and the fix known for it."""
        cwd = _clean_cwd(cwd)
        command = normalise_command(command, cwd)
        lines = error_lines(error, cwd)
        signature = (tool, command, exit_code, _digest("\n".join(lines)))
        now = self.clock()
        with Immediate(self.conn) as conn:
            (row,) = sqlitedb.rows(
                conn,
                "INSERT INTO signatures (tool, command, exit_code, fingerprint, summary, seen, first_ts, last_ts)"
                " VALUES (?, ?, ?, ?, ?, 1, ?, ?) ON CONFLICT (tool, command, exit_code, fingerprint)"
                f" DO UPDATE SET seen = seen + 1, last_ts = excluded.last_ts RETURNING id, {_FAILURE_COLUMNS}",
                (*signature, _summary(lines), now, now),
            )
            conn.execute(
                "INSERT INTO runs (agent, session_id, ts, cwd, tool, command, exit_code, signature, error)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (agent, session_id, now, cwd, tool, command, exit_code, row[0], _cap_error(error)),
            )
        return _failure(row[1:])

    @_guarded
    def record_success(self, agent: str, session_id: str, cwd: str, tool: str, command: str) -> list[Failure]:
        """Log a command that succeeded; it resolves this session's open failures of the same command and cwd."""
        cwd = _clean_cwd(cwd)
        command = normalise_command(command, cwd)
        now = self.clock()
        with Immediate(self.conn) as conn:
            success = conn.execute(
                "INSERT INTO runs (agent, session_id, ts, cwd, tool, command, exit_code) VALUES (?, ?, ?, ?, ?, ?, 0)",
                (agent, session_id, now, cwd, tool, command),
            ).lastrowid
            assert success is not None  # an INSERT sets it
            opened = sqlitedb.rows(
                conn,
                "SELECT signature, min(id) FROM runs WHERE agent = ? AND session_id = ? AND command = ? AND cwd = ?"
                " AND signature IS NOT NULL AND resolved_by IS NULL GROUP BY signature ORDER BY min(id)",
                (agent, session_id, command, cwd),
            )
            if not opened:
                return []
            conn.execute(
                "UPDATE runs SET resolved_by = ? WHERE agent = ? AND session_id = ? AND command = ? AND cwd = ?"
                " AND signature IS NOT NULL AND resolved_by IS NULL",
                (success, agent, session_id, command, cwd),
            )
            return [
                self._remember_fix(conn, signature, self._fix(conn, agent, session_id, command, first, success), now)
                for signature, first in opened
            ]

    @staticmethod
    def _fix(conn: sqlite3.Connection, agent: str, session_id: str, command: str, first: int, last: int) -> str:
        """The successful commands between the first open failure and the success, or the command itself."""
        rows = sqlitedb.rows(
            conn,
            "SELECT command FROM runs WHERE agent = ? AND session_id = ? AND id > ? AND id < ?"
            " AND signature IS NULL AND command != ? ORDER BY id",
            (agent, session_id, first, last, command),
        )
        commands = list(dict.fromkeys(command for (command,) in rows))
        return "\n".join(commands[-FIX_COMMANDS:] or [command])

    @staticmethod
    def _remember_fix(conn: sqlite3.Connection, signature: int, fix: str, now: float) -> Failure:
        (row,) = sqlitedb.rows(
            conn,
            f"UPDATE signatures SET fix = ?, fix_ts = ? WHERE id = ? RETURNING {_FAILURE_COLUMNS}",
            (fix, now, signature),
        )
        return _failure(row)

    @_guarded
    def record_call(self, agent: str, session_id: str, tool: str, command_or_input: str) -> int:
        """Count one tool call; identical calls (same tool, same input up to whitespace) add up per session.

        Tool inputs that are not text should be passed serialised stably (e.g. JSON with sorted keys).
        """
        digest = _digest(f"{tool}\0{' '.join(command_or_input.split())}")
        ((count,),) = sqlitedb.rows(
            self.conn,
            "INSERT INTO calls VALUES (?, ?, ?, ?, 1, ?) ON CONFLICT (agent, session_id, digest)"
            " DO UPDATE SET count = count + 1, ts = excluded.ts RETURNING count",
            (agent, session_id, digest, tool, self.clock()),
        )
        return count

    @_guarded
    def friction(self, agent: str, session_id: str) -> Friction:
        ((failures, unresolved),) = sqlitedb.rows(
            self.conn,
            "SELECT count(*), coalesce(sum(resolved_by IS NULL), 0) FROM runs"
            " WHERE agent = ? AND session_id = ? AND signature IS NOT NULL",
            (agent, session_id),
        )
        ((repeats,),) = sqlitedb.rows(
            self.conn,
            "SELECT coalesce(max(count), 0) FROM calls WHERE agent = ? AND session_id = ?",
            (agent, session_id),
        )
        return Friction(failures, unresolved, repeats)

    # -- housekeeping -----------------------------------------------------------------------------

    @_guarded
    def prune(self, older_than_days: float, every_s: float = 0.0) -> int | None:
        """Delete event rows older than the cutoff; signatures stay while they are recent or have a fix.
        With `every_s`, only when the last prune is at least that long ago (None when it is not)."""
        now = self.clock()
        cutoff = now - older_than_days * 86_400
        with Immediate(self.conn) as conn:
            last = conn.execute("SELECT value FROM meta WHERE name = 'pruned_at'").fetchone()
            if every_s and last and now - float(last[0]) < every_s:
                return None
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('pruned_at', ?)", (repr(now),))
            conn.execute(_NOTICES)
            return self._prune(conn, cutoff)

    @_guarded
    def forget_captured(
        self, session_id: str | None = None, before: float | None = None, dry_run: bool = False
    ) -> dict[str, int]:
        """Remove what hooks recorded for one session (of any agent) or before a time (epoch seconds):
        its prompts, commands and failures, what it was shown, profile evidence from its prompts,
        notices held for it; and failure signatures no remaining run refers to (a session's) or last
        seen before the time (even with a fix). Counts per kind; `dry_run` keeps it all."""
        with Immediate(self.conn) as conn:
            conn.execute(_NOTICES)
            if session_id is not None:
                counts = self._forget_session(conn, session_id)
            else:
                counts = self._forget_before(conn, before if before is not None else 0.0)
            if dry_run:
                conn.execute("ROLLBACK")
        return counts

    @staticmethod
    def _forget_session(conn: sqlite3.Connection, session_id: str) -> dict[str, int]:
        signatures = "SELECT signature FROM runs WHERE session_id = ? AND signature IS NOT NULL"
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS forgetting (id INTEGER PRIMARY KEY)")
        conn.execute("DELETE FROM forgetting")
        conn.execute(f"INSERT OR IGNORE INTO forgetting {signatures}", (session_id,))
        counts = {
            name: conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,)).rowcount
            for name, table in _CAPTURED
        }
        counts["failure signatures"] = conn.execute(
            "DELETE FROM signatures WHERE id IN (SELECT id FROM forgetting)"
            " AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.signature = signatures.id)"
        ).rowcount
        return counts

    @staticmethod
    def _forget_before(conn: sqlite3.Connection, cutoff: float) -> dict[str, int]:
        counts = {
            name: conn.execute(
                f"DELETE FROM {table} WHERE {'last_ts' if table == 'sessions' else 'ts'} < ?", (cutoff,)
            ).rowcount
            for name, table in _CAPTURED
        }
        counts["failure signatures"] = conn.execute(
            "DELETE FROM signatures WHERE last_ts < ?"
            " AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.signature = signatures.id)",
            (cutoff,),
        ).rowcount
        return counts

    @staticmethod
    def _prune(conn: sqlite3.Connection, cutoff: float) -> int:
        statements = (
            "DELETE FROM sessions WHERE last_ts < ?",
            "DELETE FROM shown WHERE ts < ?",
            "DELETE FROM prompts WHERE ts < ?",
            "DELETE FROM runs WHERE ts < ?",
            "DELETE FROM calls WHERE ts < ?",
            "DELETE FROM evidence WHERE ts < ?",
            "DELETE FROM notices WHERE ts < ?",
            "DELETE FROM signatures WHERE last_ts < ? AND fix IS NULL",
        )
        return sum(conn.execute(sql, (cutoff,)).rowcount for sql in statements)


def reset(folder: str, *, timeout: float = BUSY_TIMEOUT, clock: Callable[[], float] = time.time) -> EventStore:
    """Discard folder/events.db (and its WAL files) and open a new, empty one."""
    path = os.path.join(folder, FILENAME)
    try:
        sqlitedb.remove_database(path)
    except OSError as exc:
        raise EventStoreUnavailable(exc.strerror or str(exc)) from exc
    return EventStore.open(folder, timeout=timeout, clock=clock)


# -- normalising commands and errors ------------------------------------------------------------


def _clean_cwd(cwd: str) -> str:
    return cwd.rstrip("/\\") or cwd


def _relative(text: str, cwd: str) -> str:
    """Absolute paths under cwd become relative (cwd itself becomes ".")."""
    root = _clean_cwd(cwd)
    if len(root) < 2:  # "", "/" or "\": every path would match
        return text
    pattern = r"(?<![\w./\\-])" + re.escape(root) + r"(?:([/\\]+)(?=[^\s'\"`;|&<>)])|[/\\]*(?![\w.-]))"
    return re.sub(pattern, lambda m: "" if m.group(1) else ".", text)


# one character per step in the value: a `+` inside the `*` would backtrack exponentially
_ENV_ASSIGNMENTS = r"""^(?:env\s+)?(?:[A-Za-z_]\w*=(?:'[^']*'|"[^"]*"|[^\s'"])*\s+)+"""
_CD_HERE = r"^(?:cd\s+\.\s*(?:&&|;)\s*)+"
_OUTPUT_TRIMMING = r"\s+2>&1\b"
# one trailing `| tail …` at a time: a pattern for the whole chain would retry it from every position
_TRAILING_PAGER = r"\s*\|\s*(?:tail|head)(?:\s+(?:-{1,2}[\w=]*|\+?\d+))*\s*$"


def normalise_command(command: str, cwd: str) -> str:
    """The command as a signature sees it.

    Whitespace runs collapse to one space; absolute paths under cwd become relative; a leading
    `cd <cwd> &&` and leading environment assignments (`FOO=1 BAR='a b' `, `env FOO=1 `) are dropped;
    so are `2>&1` and trailing `| tail …` / `| head …`, which only trim what the agent reads.
    A command longer than 2,000 characters (a heredoc, a script) keeps its first 2,000 and a hash of the whole.
    """
    text = _relative(" ".join(command.split()), cwd)
    if len(text) > COMMAND_CAP:
        return f"{text[:COMMAND_CAP]} …{_digest(text)}"
    text = re.sub(_CD_HERE, "", text)
    text = re.sub(_ENV_ASSIGNMENTS, "", text)
    text = re.sub(_OUTPUT_TRIMMING, "", text)
    while (trimmed := re.sub(_TRAILING_PAGER, "", text)) != text:
        text = trimmed
    return " ".join(text.split())


_SOURCE_EXTENSIONS = (
    "py|pyx|js|mjs|cjs|jsx|ts|tsx|mts|cts|vue|svelte|go|rs|java|kt|kts|scala|groovy|rb|php|c|h|cc|cpp|cxx|hpp|hh"
    "|cs|fs|swift|m|mm|dart|ex|exs|erl|hs|ml|lua|pl|r|jl|zig|nim|sh|bash|zsh|ps1|sql|yml|yaml|toml|json|ini|cfg"
    "|tf|gradle|xml|html|css|scss|proto"
)
_COUNT_WORDS = (
    "passed|failed|failing|failures?|errors?|errored|skipped|pending|todo|total|tests?|suites?|snapshots?"
    "|subtests?|ignored|measured|filtered out|deselected|xfailed|xpassed|warnings?|items?|assertions?|examples?|specs?"
)
_ANSI = r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # terminal colours and titles
# Applied in order to the chosen lines; each takes out something that changes between two runs of the same failure.
_VOLATILE = (
    (r"\b[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b", "<uuid>"),
    (
        r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
        r"|\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b",
        "<time>",
    ),
    # source positions move whenever code above them is edited
    (rf"\.({_SOURCE_EXTENSIONS})(?:(?::\d+){{1,2}}\b|\(\d+(?:,\d+)?\))", r".\1:<pos>"),
    (r":\d+:\d+\b", ":<pos>"),
    (r"\b([Ll]ine) \d+\b", r"\1 <n>"),
    (r"(?<![\w.-])(?:/home|/Users)/[^/\s'\"]+|\b[A-Za-z]:\\Users\\[^\\\s'\"]+|(?<![\w.-])/root(?=/)", "~"),
    (
        r"(?<![\w.-])(?:/private)?(?:/tmp|/var/tmp|/var/folders|/dev/shm)(?:/[^\s'\"`:,;()\[\]]*|(?![\w.-]))"
        r"|~[/\\]AppData[/\\]Local[/\\]Temp[^\s'\"`:,;()]*|\btmp(?=[a-z_]*\d)[a-z0-9_]{6,}\b",
        "<tmp>",
    ),
    (r"\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b", "<hex>"),
    (
        r"\b(?:\d+h\s?)?(?:\d+m\s?)?\d+(?:\.\d+)?\s?(?:ms|s|sec|secs|seconds?|min|mins|minutes?|h|hrs?|hours?|µs|us|ns)"
        r"(?![\w-])",
        "<dur>",
    ),
    (r"\b\d+(?:\.\d+)?%", "<pct>"),
    # counts of tests change as tests are added; the failing ones are named elsewhere
    (rf"\b\d+(?=[ \t]+(?:{_COUNT_WORDS})\b)", "<n>"),
    (rf"\b((?:{_COUNT_WORDS})=)\d+", r"\1<n>"),
    (r"(?<=[a-z]) \(\d+\)", " (<n>)"),  # vitest's totals: "12 passed (13)"
    (r"\b((?:[Rr]an|[Rr]unning|collected)\s+)\d+", r"\1<n>"),
)
# Ports (host:5432, [::1]:5432, "port 5432") name the problem; other long numbers (pids, thread ids, sizes) vary.
_NUMBERS = r"((?:[\w\]:]:|\bport\W{1,3})\d{2,5}\b)|\b\d{4,}\b"
# Matched against the lowered line (a case-insensitive pattern is several times slower on long outputs).
_INFORMATIVE = (
    r"error|exception|fail|fatal|panic|refused|denied|not found|no such|cannot|can't|could not|couldn't"
    r"|unable to|undefined|traceback|timed out|timeout|err!|abort|segmentation fault|killed|assert"
)
_MARKERS = ("E ", "●", "✕", "×")  # pytest's error lines, jest's and vitest's failed tests
_NOISE = r"^(?:at\s|File \"|>?\s*(?:\d+|<n>)\s*\||[\s^~|]*$)"  # stack frames, code frames, caret lines
_DECORATION = " =_*#!⎯─━═-"  # stripped from both ends: rules and banners whose width follows the terminal
_SHORT_SUMMARY = r"^(\S*(?:FAIL|ERROR)\S* \S+) - .*$"  # pytest cuts the reason to the terminal width
# What makes a good one-line summary, best first: "SomeError: message", then any line naming an error.
_HEADLINES = (
    r"(?:Error|Exception|ERR!|error(?:\[\w+\])?)\s*:\s*\S",
    r"\w(?:Error|Exception)\b|panicked|refused|(?i:fail)",
)


def _stable(text: str, cwd: str) -> str:
    if cwd:
        text = _relative(text, cwd)
    for pattern, replacement in _VOLATILE:
        text = re.sub(pattern, replacement, text)
    return re.sub(_NUMBERS, lambda m: m.group(1) or "<n>", text)


def _window(text: str) -> str:
    if len(text) <= 2 * FINGERPRINT_WINDOW:
        return text
    return text[:FINGERPRINT_WINDOW] + "\n" + text[-FINGERPRINT_WINDOW:]


def _informative(line: str) -> bool:
    return line.startswith(_MARKERS) or re.search(_INFORMATIVE, line.lower()) is not None


def _worth_keeping(line: str) -> bool:
    return bool(line) and not re.match(_NOISE, line) and bool(line.strip(_DECORATION))


def error_lines(error: str, cwd: str = "") -> list[str]:
    """The lines a fingerprint is made of: informative, normalised, deduplicated, at most 20.

    Lines (their first 1,000 characters) that name a problem are chosen first (without any, the
    last 5 lines stand in; of very many, the first and last 50), then their volatile parts are
    replaced (see `_VOLATILE`); over 20 distinct lines, the first 10 and last 10 stay.
    """
    lines = [" ".join(line[:LINE_CAP].split()) for line in re.sub(_ANSI, "", _window(error)).splitlines()]
    chosen = list(dict.fromkeys(line for line in lines if line and _informative(line)))
    if not chosen:
        chosen = [line for line in lines if _worth_keeping(line)][-5:]
    if len(chosen) > 5 * FINGERPRINT_LINES:  # bounds the normalising work on huge outputs
        chosen = chosen[: 5 * FINGERPRINT_LINES // 2] + chosen[-5 * FINGERPRINT_LINES // 2 :]
    kept = []
    for line in _stable("\n".join(chosen), cwd).split("\n"):
        line = line.strip(_DECORATION)
        if line and not re.match(_NOISE, line):
            kept.append(re.sub(_SHORT_SUMMARY, r"\1", line))
    kept = list(dict.fromkeys(kept))
    if len(kept) > FINGERPRINT_LINES:
        half = FINGERPRINT_LINES // 2
        kept = kept[:half] + kept[-half:]
    return kept


def fingerprint(error: str, cwd: str = "") -> str:
    """A short stable hash (16 hex digits) of an error output's normalised informative lines."""
    return _digest("\n".join(error_lines(error, cwd)))


def _summary(lines: list[str]) -> str:
    """One line to show for a failure: the first that names an error, else the first informative one."""
    for headline in _HEADLINES:
        for line in lines:
            if re.search(headline, line):
                return line[:300]
    return lines[0][:300] if lines else ""


def _digest(text: str) -> str:
    # crc32 and adler32 side by side (64 bits): importing hashlib alone costs more than this whole module
    data = text.encode("utf-8", "surrogatepass")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def _cap_error(error: str) -> str:
    if len(error) <= ERROR_HEAD + ERROR_TAIL:
        return error
    left_out = len(error) - ERROR_HEAD - ERROR_TAIL
    return f"{error[:ERROR_HEAD]}\n[… {left_out} characters left out …]\n{error[-ERROR_TAIL:]}"
