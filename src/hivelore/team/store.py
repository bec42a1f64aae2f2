"""Where the team model (model.py) is kept on one machine: `SqliteTeam`, the store in `team.db`. It
implements `TeamStore` (contract.py), as the team server's `PostgresTeam` and its client `RemoteTeam` do.

Several agents on one machine (parallel sessions, git worktrees of one repository) share team.db:
SQLite in WAL mode, each public method one short transaction (`BEGIN IMMEDIATE` wherever it reads
before it writes). Every sqlite error surfaces as `TeamUnavailable` (a damaged file, another schema
version, or not hivelore's: move it away to start afresh — unlike events.db it holds decisions, so
nothing resets it silently) or its subclass `TeamBusy` (the write lock stayed taken for the whole busy
timeout). An unknown intent id raises `NoSuchIntent`.

Entities. A *developer* is an id string: `HIVELORE_DEVELOPER`, else git's `user.email`, else
`user.name`, else the OS user (`developer_for`). An *intent* is a task (title, repo, owner, status
active | handed_off | done); a *session* (agent + session id, per repo) points at one intent, created
from the session's first prompt. A *claim* is a symbol an intent is editing (made before an edit) —
or, before the repository's code graph exists, a *file claim*: the edited file, stored in the same
table as `file:<line>:<path>` (the first line of a replaced text) or `file::<path>` (lines unknown),
until `upgrade_file_claims` turns it into the symbols at those lines (all the file's for unknown);
a *change* is a symbol an edit touched, pending until the intent's next test run, which becomes an
*attempt* linked to those symbols. A *decision* is text about symbols; *notes* (progress, handoff)
belong to an intent. `repo` is a name every worktree of a repository shares (e.g. `acme/shop`), and
symbol ids (`shop/orders.py::checkout`) are relative to it.

API (every TeamStore):

    team = SqliteTeam.open(home)                    # home/team.db, created when missing
    developer_for(repo_root, env=None, use_git=False) -> str
    team.intent_for_session(agent, session_id, developer, repo, first_prompt) -> Intent
    team.create_intent(developer, repo, title) -> Intent ; team.intent(id) ; team.intents(repo, status=None)
    team.claim(intent_id, symbol_ids) -> int        # how many were new (file_claim_ids(path, lines) for files)
    team.upgrade_file_claims(graph, repo, intent_id=None) -> int  # file claims → symbols, once the graph exists
    team.claims(intent_id) -> list[Claim]
    team.active_claims(repo, other_than="") -> list[(symbol_id, Intent, developer)]
    team.record_change(intent_id, symbol_ids)       # touched by an edit since the intent's last run
    team.record_attempt(intent_id, command, run) -> Attempt ; team.attempts(intent_id) -> list[Attempt]
    team.decide(text, symbol_ids, intent_id=None, developer="", repo="") -> Decision
    team.decisions(repo, symbol_id, include_superseded=False) -> list[Decision]
    team.note(intent_id, text, kind="progress", developer="") -> Note ; team.notes(intent_id) -> list[Note]
    team.handoff(intent_id, text, developer="") -> Note ; team.done(intent_id) -> Intent
    team.resume(intent_id, developer, agent="", session_id="") -> Resume
    team.conflicts(graph, repo, symbol_ids, developer, hops=3, paths=()) -> list[Conflict]
    team.mark_warned(agent, session_id, key) -> bool   # True the first time: show the warning
    team.warned(agent, session_id, key) -> bool
    team.who_knows(graph, repo, symbol_id, hops=1) -> list[Expert]
    team.why(repo, symbol_id) -> Why ; team.history(repo, symbol_ids) -> History
    team.task_board(repo, status=None) -> list[Card]

Rules (every TeamStore; the pure ones are model.py's functions):

- Deduplication: an attempt with the same outcome, failed tests and errors as an earlier *unresolved*
  attempt of the same intent adds 1 to its `count` (and its `last_ts`, latest command, and the
  symbols changed since the last run) instead of adding a row. A failure that comes back after it
  was resolved is a new row: it regressed. Passing runs of an intent share one row.
- Resolves: a passing attempt resolves every earlier unresolved failed or error attempt of the repo
  that (a) belongs to the same intent and ran the same command (as `normalise_command` sees it), or
  (b) is linked to a symbol the passing run changed. Each is resolved once: `resolved_by` is never
  overwritten, and `Attempt.resolves` lists what an attempt resolved.
- Supersede, per symbol: a new decision on a symbol supersedes the decisions current on that symbol
  (in that repo). A decision stays active while it is current on at least one of its symbols (one
  about A and B, followed by one about A, still holds for B); one without symbols is never superseded.
- Conflicts: for each edited symbol, `graph.within(symbol, hops, "callees")` and
  `graph.within(symbol, hops, "callers")` are checked separately — a symbol both reach only through
  a shared caller is never found — against the claims of *other* developers' *active* intents that
  saw activity in the last `idle_days` (7: a session that died without a handoff does not warn others
  forever). Each (claimed symbol, intent) is reported once, with the shortest path in call order
  (caller first). Cost: one indexed query; when it finds no claims the graph is not touched,
  otherwise two bounded breadth-first searches per edited symbol, intersected with the claimed
  symbols (paths are built for the hits only). A file claim is checked as its file: an edit of that
  file (`paths`) conflicts with it, and so does an edited symbol within `hops` of any of the file's
  symbols; without a graph (`graph` None) an edited file conflicts with the claims in it.
- who_knows scores each developer 1 per claim, 2 per attempt and 3 per decision on the symbol, and
  that divided by 1 + distance for its neighbours within `hops` call hops (both directions).

The code graph is the duck type model.py describes.

The hook path imports this module: stdlib only (and eventstore's sqlite helpers); opening costs one
query; git config is read from the files unless `use_git=True` asks the `git` binary.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping

from hivelore import gitrepo, sqlitedb
from hivelore.sqlitedb import Immediate
from hivelore.team.contract import TeamStore
from hivelore.team.model import (
    COMMAND_CAP,
    FILE_CLAIM,
    HOPS,
    IDLE_DAYS,
    NOTE_KINDS,
    TEXT_CAP,
    Attempt,
    Card,
    Claim,
    Conflict,
    Decision,
    Expert,
    History,
    Intent,
    NoSuchIntent,
    Note,
    Resume,
    TeamBusy,
    TeamUnavailable,
    Why,
    command_key,
    distances,
    file_claim_upgrades,
    find_conflicts,
    rank_experts,
    title_from,
    valid_status,
)
from hivelore.team.testruns import TestRun

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from hivelore.codegraph.graph import Graph  # for checkers: the duck type's model

SCHEMA_VERSION = "1"
FILENAME = "team.db"
BUSY_TIMEOUT = 5.0

_TABLES = (
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS intents (
        id INTEGER PRIMARY KEY, repo TEXT NOT NULL, title TEXT NOT NULL, owner TEXT NOT NULL,
        status TEXT NOT NULL, created_ts REAL NOT NULL, updated_ts REAL NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS intents_repo ON intents (repo, status)",
    """CREATE TABLE IF NOT EXISTS sessions (
        agent TEXT NOT NULL, session_id TEXT NOT NULL, repo TEXT NOT NULL, developer TEXT NOT NULL,
        intent_id INTEGER NOT NULL, started_ts REAL NOT NULL,
        PRIMARY KEY (agent, session_id, repo)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS sessions_intent ON sessions (intent_id)",
    """CREATE TABLE IF NOT EXISTS claims (
        intent_id INTEGER NOT NULL, symbol TEXT NOT NULL, developer TEXT NOT NULL, ts REAL NOT NULL,
        PRIMARY KEY (intent_id, symbol)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS claims_symbol ON claims (symbol)",
    # symbols an edit touched since the intent's last test run; that run takes them
    """CREATE TABLE IF NOT EXISTS changes (
        intent_id INTEGER NOT NULL, symbol TEXT NOT NULL, ts REAL NOT NULL, PRIMARY KEY (intent_id, symbol)
    ) WITHOUT ROWID""",
    # failed and errors: sorted names, one a line (the deduplication key with intent and outcome)
    """CREATE TABLE IF NOT EXISTS attempts (
        id INTEGER PRIMARY KEY, intent_id INTEGER NOT NULL, repo TEXT NOT NULL, developer TEXT NOT NULL,
        command TEXT NOT NULL, command_key TEXT NOT NULL, outcome TEXT NOT NULL, failed TEXT NOT NULL,
        errors TEXT NOT NULL, count INTEGER NOT NULL, first_ts REAL NOT NULL, last_ts REAL NOT NULL,
        resolved_by INTEGER, resolved_ts REAL
    )""",
    "CREATE INDEX IF NOT EXISTS attempts_intent ON attempts (intent_id, outcome, failed)",
    "CREATE INDEX IF NOT EXISTS attempts_open ON attempts (repo) WHERE resolved_by IS NULL AND outcome != 'passed'",
    "CREATE INDEX IF NOT EXISTS attempts_resolved_by ON attempts (resolved_by) WHERE resolved_by IS NOT NULL",
    """CREATE TABLE IF NOT EXISTS attempt_symbols (
        attempt_id INTEGER NOT NULL, symbol TEXT NOT NULL, PRIMARY KEY (attempt_id, symbol)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS attempt_symbols_symbol ON attempt_symbols (symbol)",
    """CREATE TABLE IF NOT EXISTS decisions (
        id INTEGER PRIMARY KEY, repo TEXT NOT NULL, intent_id INTEGER, developer TEXT NOT NULL,
        text TEXT NOT NULL, ts REAL NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS decisions_intent ON decisions (intent_id)",
    # superseded_by: the later decision that replaced this one on this symbol
    """CREATE TABLE IF NOT EXISTS decision_symbols (
        decision_id INTEGER NOT NULL, symbol TEXT NOT NULL, superseded_by INTEGER,
        PRIMARY KEY (decision_id, symbol)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS decision_symbols_symbol ON decision_symbols (symbol)",
    """CREATE TABLE IF NOT EXISTS notes (
        id INTEGER PRIMARY KEY, intent_id INTEGER NOT NULL, developer TEXT NOT NULL, kind TEXT NOT NULL,
        text TEXT NOT NULL, ts REAL NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS notes_intent ON notes (intent_id)",
    """CREATE TABLE IF NOT EXISTS warnings (
        agent TEXT NOT NULL, session_id TEXT NOT NULL, key TEXT NOT NULL, ts REAL NOT NULL,
        PRIMARY KEY (agent, session_id, key)
    ) WITHOUT ROWID""",
)


def _lines(text: str | None) -> tuple[str, ...]:
    return tuple(text.split("\n")) if text else ()


def _ids(text: str | None) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",")) if text else ()


def _joined(names: Iterable[str]) -> str:
    return "\n".join(sorted({sqlitedb.storable(name) for name in names}))


def _symbols(symbol_ids: Iterable[str]) -> list[str]:
    return sorted({sqlitedb.storable(symbol) for symbol in symbol_ids if symbol})


def _chunks(items: list[str]) -> Iterable[tuple[list[str], str]]:
    """Items in slices that fit an IN (…) list, each with its placeholders."""
    for chunk in sqlitedb.chunks(items):
        yield chunk, ", ".join("?" * len(chunk))


_INTENT_COLUMNS = "id, repo, title, owner, status, created_ts, updated_ts"
_I_INTENT_COLUMNS = ", ".join(f"i.{column}" for column in _INTENT_COLUMNS.split(", "))  # of `intents i`
_ATTEMPT_COLUMNS = """a.id, a.intent_id, a.developer, a.command, a.outcome, a.failed, a.errors,
    (SELECT group_concat(symbol, char(10)) FROM (SELECT symbol FROM attempt_symbols WHERE attempt_id = a.id
     ORDER BY symbol)),
    a.count, a.first_ts, a.last_ts, a.resolved_by,
    (SELECT group_concat(id) FROM (SELECT id FROM attempts r WHERE r.resolved_by = a.id ORDER BY id))"""
_DECISION_COLUMNS = """d.id, d.repo, d.intent_id, d.developer, d.text, d.ts,
    (SELECT group_concat(symbol, char(10)) FROM (SELECT symbol FROM decision_symbols WHERE decision_id = d.id
     ORDER BY symbol)),
    (SELECT group_concat(symbol, char(10)) FROM (SELECT symbol FROM decision_symbols WHERE decision_id = d.id
     AND superseded_by IS NULL ORDER BY symbol))"""
_OPEN_FAILURE = "resolved_by IS NULL AND outcome != 'passed' AND repo = ?"


def _attempt(row: tuple) -> Attempt:
    id, intent_id, developer, command, outcome, failed, errors, symbols, count, first, last, by, resolves = row
    return Attempt(
        id, intent_id, developer, command, outcome, _lines(failed), _lines(errors), _lines(symbols), count,
        first, last, by, _ids(resolves),
    )  # fmt: skip


def _decision(row: tuple) -> Decision:
    id, repo, intent_id, developer, text, ts, symbols, current = row
    return Decision(id, repo, intent_id, developer, text, ts, _lines(symbols), _lines(current))


# -- the store ----------------------------------------------------------------------------------


_SCHEMA = sqlitedb.Schema(
    "team-schema", SCHEMA_VERSION, _TABLES, "a hivelore team database", TeamUnavailable, TeamBusy,
    "; move it away to start a new one",
)  # fmt: skip
_guarded = sqlitedb.guarded(_SCHEMA)


class SqliteTeam(sqlitedb.Store, TeamStore):
    """The team store in team.db: one connection (closed by `sqlitedb.Store`); every public method is
    one short transaction (or one statement)."""

    def __init__(self, conn: sqlite3.Connection, path: str, clock: Callable[[], float]) -> None:
        super().__init__(conn, path)
        self.clock = clock

    @classmethod
    def open(cls, home: str, *, timeout: float = BUSY_TIMEOUT, clock: Callable[[], float] = time.time) -> SqliteTeam:
        """Open home/team.db, creating the folder and the database when missing."""
        path = os.path.join(home, FILENAME)
        conn = sqlitedb.connect(path, _SCHEMA, timeout)
        return cls(conn, path, clock)

    # -- intents and sessions ---------------------------------------------------------------------

    @_guarded
    def intent_for_session(
        self, agent: str, session_id: str, developer: str, repo: str, first_prompt: str = ""
    ) -> Intent:
        """The session's intent in this repo; the first call creates it, titled by the first prompt.

        Call it when a session first needs an intent (its first edit or test run), so that a session
        that only reads leaves nothing on the task board.
        """
        found = self._session_intent(self.conn, agent, session_id, repo)
        if found is not None:
            return found
        with Immediate(self.conn) as conn:
            found = self._session_intent(conn, agent, session_id, repo)  # another hook may have been first
            if found is not None:
                return found
            title = title_from(first_prompt) or f"untitled ({agent} session {session_id[:8]})"
            intent = self._insert_intent(conn, developer, repo, title)
            self._attach(conn, agent, session_id, developer, intent)
            return intent

    @_guarded
    def session_intent(self, agent: str, session_id: str, repo: str) -> Intent | None:
        """The session's intent in this repo, if it has one yet (nothing is created)."""
        return self._session_intent(self.conn, agent, session_id, repo)

    @_guarded
    def create_intent(self, developer: str, repo: str, title: str) -> Intent:
        if not title_from(title):
            raise ValueError("an intent needs a title")
        with Immediate(self.conn) as conn:
            return self._insert_intent(conn, developer, repo, title_from(title))

    @_guarded
    def intent(self, intent_id: int) -> Intent:
        return self._intent(self.conn, intent_id)

    @_guarded
    def intents(self, repo: str, status: str | None = None) -> list[Intent]:
        """The repo's intents (with a status: only those), most recently active first."""
        rows = sqlitedb.rows(
            self.conn,
            f"SELECT {_INTENT_COLUMNS} FROM intents WHERE repo = ? AND status = coalesce(?, status)"
            " ORDER BY updated_ts DESC, id DESC",
            (repo, valid_status(status)),
        )
        return [Intent(*row) for row in rows]

    @_guarded
    def done(self, intent_id: int) -> Intent:
        """Mark the intent done: its claims stop warning others, its history stays."""
        with Immediate(self.conn) as conn:
            self._intent(conn, intent_id)
            conn.execute("UPDATE intents SET status = 'done', updated_ts = ? WHERE id = ?", (self.clock(), intent_id))
            return self._intent(conn, intent_id)

    @staticmethod
    def _intent(conn: sqlite3.Connection, intent_id: int) -> Intent:
        rows = sqlitedb.rows(conn, f"SELECT {_INTENT_COLUMNS} FROM intents WHERE id = ?", (intent_id,))
        if not rows:
            raise NoSuchIntent(f"no task {intent_id}")
        return Intent(*rows[0])

    @staticmethod
    def _session_intent(conn: sqlite3.Connection, agent: str, session_id: str, repo: str) -> Intent | None:
        rows = sqlitedb.rows(
            conn,
            f"SELECT {_INTENT_COLUMNS} FROM intents WHERE id ="
            " (SELECT intent_id FROM sessions WHERE agent = ? AND session_id = ? AND repo = ?)",
            (agent, session_id, repo),
        )
        return Intent(*rows[0]) if rows else None

    def _insert_intent(self, conn: sqlite3.Connection, developer: str, repo: str, title: str) -> Intent:
        now = self.clock()
        cursor = conn.execute(
            "INSERT INTO intents (repo, title, owner, status, created_ts, updated_ts) VALUES (?, ?, ?, 'active', ?, ?)",
            (repo, title, developer, now, now),
        )
        assert cursor.lastrowid is not None  # an INSERT sets it
        return self._intent(conn, cursor.lastrowid)

    def _attach(self, conn: sqlite3.Connection, agent: str, session_id: str, developer: str, intent: Intent) -> None:
        """Point the session at the intent; an intent it leaves that holds nothing is dropped."""
        rows = sqlitedb.rows(
            conn,
            "SELECT intent_id FROM sessions WHERE agent = ? AND session_id = ? AND repo = ?",
            (agent, session_id, intent.repo),
        )
        conn.execute(
            "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (agent, session_id, repo) DO UPDATE SET"
            " developer = excluded.developer, intent_id = excluded.intent_id",
            (agent, session_id, intent.repo, developer, intent.id, self.clock()),
        )
        if rows and rows[0][0] != intent.id:
            self._drop_if_empty(conn, rows[0][0])

    @_guarded
    def forget_captured(
        self, session_id: str | None = None, before: float | None = None, dry_run: bool = False
    ) -> dict[str, int]:
        """Remove what hooks recorded for one session (of any agent) or before a time (epoch seconds):
        its links to tasks, its warnings, and — once no other session holds the task — the task's
        claims, changed symbols and test attempts, and the task itself unless someone decided or
        noted something on it (that was written on purpose). Counts per kind; `dry_run` keeps it all."""
        with sqlitedb.Immediate(self.conn) as conn:
            if session_id is not None:
                counts = self._forget_session(conn, session_id)
            else:
                counts = self._forget_before(conn, before if before is not None else 0.0)
            if dry_run:
                conn.execute("ROLLBACK")
        return counts

    def _forget_session(self, conn: sqlite3.Connection, session_id: str) -> dict[str, int]:
        held = [
            row[0] for row in sqlitedb.rows(conn, "SELECT intent_id FROM sessions WHERE session_id = ?", (session_id,))
        ]
        counts = {
            "task links": conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,)).rowcount,
            "coordination warnings": conn.execute("DELETE FROM warnings WHERE session_id = ?", (session_id,)).rowcount,
        }
        alone = [i for i in set(held) if not sqlitedb.rows(conn, "SELECT 1 FROM sessions WHERE intent_id = ?", (i,))]
        marks = ",".join("?" * len(alone))
        counts.update(self._forget_rows(conn, f"intent_id IN ({marks})", f"intent_id IN ({marks})", tuple(alone)))
        counts["tasks"] = self._drop_all_empty(conn, alone)
        return counts

    def _forget_before(self, conn: sqlite3.Connection, cutoff: float) -> dict[str, int]:
        counts = {
            "task links": conn.execute("DELETE FROM sessions WHERE started_ts < ?", (cutoff,)).rowcount,
            "coordination warnings": conn.execute("DELETE FROM warnings WHERE ts < ?", (cutoff,)).rowcount,
        }
        counts.update(self._forget_rows(conn, "ts < ?", "last_ts < ?", (cutoff,)))
        old = [row[0] for row in sqlitedb.rows(conn, "SELECT id FROM intents WHERE updated_ts < ?", (cutoff,))]
        counts["tasks"] = self._drop_all_empty(conn, old)
        return counts

    @staticmethod
    def _forget_rows(conn: sqlite3.Connection, where: str, attempts_where: str, params: tuple) -> dict[str, int]:
        """Claims and changes matching `where`, test attempts (with their symbols) matching `attempts_where`."""
        attempts = f"SELECT id FROM attempts WHERE {attempts_where}"
        conn.execute(f"DELETE FROM attempt_symbols WHERE attempt_id IN ({attempts})", params)
        return {
            "claims": conn.execute(f"DELETE FROM claims WHERE {where}", params).rowcount,
            "changed symbols": conn.execute(f"DELETE FROM changes WHERE {where}", params).rowcount,
            "test attempts": conn.execute(f"DELETE FROM attempts WHERE {attempts_where}", params).rowcount,
        }

    def _drop_all_empty(self, conn: sqlite3.Connection, intent_ids: Iterable[int]) -> int:
        before = conn.total_changes
        for intent_id in intent_ids:
            self._drop_if_empty(conn, intent_id)
        return conn.total_changes - before

    @staticmethod
    def _drop_if_empty(conn: sqlite3.Connection, intent_id: int) -> None:
        # e.g. the intent a session's first prompt ("resume task 12") created before it resumed task 12
        holders = ("sessions", "claims", "changes", "attempts", "decisions", "notes")
        if not any(
            sqlitedb.rows(conn, f"SELECT 1 FROM {table} WHERE intent_id = ? LIMIT 1", (intent_id,)) for table in holders
        ):
            conn.execute("DELETE FROM intents WHERE id = ?", (intent_id,))

    def _touch(self, conn: sqlite3.Connection, intent_id: int) -> None:
        conn.execute("UPDATE intents SET updated_ts = ? WHERE id = ?", (self.clock(), intent_id))

    # -- claims and changes -----------------------------------------------------------------------

    @_guarded
    def claim(self, intent_id: int, symbol_ids: Iterable[str]) -> int:
        """Claim symbols for the intent (made before an edit); returns how many were not claimed yet."""
        now, symbols = self.clock(), _symbols(symbol_ids)
        with Immediate(self.conn) as conn:
            intent = self._intent(conn, intent_id)
            before = conn.total_changes
            conn.executemany(
                "INSERT OR IGNORE INTO claims VALUES (?, ?, ?, ?)",
                [(intent_id, symbol, intent.owner, now) for symbol in symbols],
            )
            new = conn.total_changes - before
            self._touch(conn, intent_id)
            return new

    @_guarded
    def claims(self, intent_id: int) -> list[Claim]:
        rows = sqlitedb.rows(
            self.conn,
            "SELECT intent_id, symbol, developer, ts FROM claims WHERE intent_id = ? ORDER BY ts, symbol",
            (intent_id,),
        )
        return [Claim(*row) for row in rows]

    @_guarded
    def upgrade_file_claims(self, graph: Graph, repo: str, intent_id: int | None = None) -> int:
        """Turn the file claims of the repo's intents (or of one intent) into symbol claims, now that the
        code graph exists: the innermost symbol at each claimed line, or every symbol of the file when
        no line is known or none is found; a file the graph has no symbols for is no longer claimed.
        Returns how many file claims were converted."""
        rows = sqlitedb.rows(
            self.conn,
            "SELECT c.intent_id, c.symbol, c.developer, c.ts FROM claims c JOIN intents i ON i.id = c.intent_id"
            " WHERE i.repo = ? AND c.symbol >= ? AND c.symbol < ? AND (? IS NULL OR c.intent_id = ?)",
            (repo, FILE_CLAIM, FILE_CLAIM[:-1] + chr(ord(FILE_CLAIM[-1]) + 1), intent_id, intent_id),
        )
        if not rows:  # the usual case: the graph existed before the first edit
            return 0
        with Immediate(self.conn) as conn:
            conn.executemany("INSERT OR IGNORE INTO claims VALUES (?, ?, ?, ?)", file_claim_upgrades(graph, rows))
            conn.executemany(
                "DELETE FROM claims WHERE intent_id = ? AND symbol = ?", [(row[0], row[1]) for row in rows]
            )
        return len(rows)

    @_guarded
    def active_claims(
        self, repo: str, idle_days: float = IDLE_DAYS, other_than: str = ""
    ) -> list[tuple[str, Intent, str]]:
        """(symbol, intent, developer) for every claim of the repo's active intents that are not idle
        (with `other_than`: of intents someone else owns, as the conflict check sees them)."""
        return self._active_claims(repo, other_than, idle_days)

    def _active_claims(self, repo: str, other_than: str, idle_days: float) -> list[tuple[str, Intent, str]]:
        rows = sqlitedb.rows(
            self.conn,
            f"SELECT c.symbol, {_I_INTENT_COLUMNS} FROM intents i JOIN claims c ON c.intent_id = i.id"
            " WHERE i.repo = ? AND i.status = 'active' AND i.owner != ? AND i.updated_ts >= ? ORDER BY c.symbol, i.id",
            (repo, other_than, self.clock() - idle_days * 86_400),
        )
        return [(symbol, Intent(*fields), fields[3]) for symbol, *fields in rows]

    @_guarded
    def record_change(self, intent_id: int, symbol_ids: Iterable[str]) -> None:
        """Symbols an edit touched; the intent's next test run is linked to them."""
        now, symbols = self.clock(), _symbols(symbol_ids)
        with Immediate(self.conn) as conn:
            self._intent(conn, intent_id)
            conn.executemany(
                "INSERT INTO changes VALUES (?, ?, ?) ON CONFLICT (intent_id, symbol) DO UPDATE SET ts = excluded.ts",
                [(intent_id, symbol, now) for symbol in symbols],
            )
            self._touch(conn, intent_id)

    # -- attempts ---------------------------------------------------------------------------------

    @_guarded
    def record_attempt(self, intent_id: int, command: str, run: TestRun) -> Attempt:
        """Record a test run of the intent: deduplicated, linked to the symbols changed since its last run."""
        now, command = self.clock(), command[:COMMAND_CAP]
        failed, errors, key = _joined(run.failed), _joined(run.errors), command_key(command)
        with Immediate(self.conn) as conn:
            intent = self._intent(conn, intent_id)
            taken = sqlitedb.rows(conn, "DELETE FROM changes WHERE intent_id = ? RETURNING symbol", (intent_id,))
            symbols = sorted(symbol for (symbol,) in taken)
            same = sqlitedb.rows(
                conn,
                "SELECT id FROM attempts WHERE intent_id = ? AND outcome = ? AND failed = ? AND errors = ?"
                " AND resolved_by IS NULL ORDER BY id DESC LIMIT 1",
                (intent_id, run.outcome, failed, errors),
            )
            if same:
                attempt_id = same[0][0]
                conn.execute(
                    "UPDATE attempts SET count = count + 1, last_ts = ?, command = ?, command_key = ? WHERE id = ?",
                    (now, command, key, attempt_id),
                )
            else:
                attempt_id = conn.execute(
                    "INSERT INTO attempts (intent_id, repo, developer, command, command_key, outcome, failed, errors,"
                    " count, first_ts, last_ts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)",
                    (intent_id, intent.repo, intent.owner, command, key, run.outcome, failed, errors, now, now),
                ).lastrowid
            conn.executemany("INSERT OR IGNORE INTO attempt_symbols VALUES (?, ?)", [(attempt_id, s) for s in symbols])
            if run.outcome == "passed":
                self._resolve(conn, attempt_id, intent, key, symbols, now)
            self._touch(conn, intent_id)
            return self._attempt(conn, attempt_id)

    @staticmethod
    def _resolve(
        conn: sqlite3.Connection, attempt_id: int, intent: Intent, key: str, symbols: list[str], now: float
    ) -> None:
        """A pass resolves the open failures of its intent with its command, and those on the symbols it changed."""
        conn.execute(
            f"UPDATE attempts SET resolved_by = ?, resolved_ts = ? WHERE {_OPEN_FAILURE} AND intent_id = ?"
            " AND command_key = ?",
            (attempt_id, now, intent.repo, intent.id, key),
        )
        for chunk, marks in _chunks(symbols):
            conn.execute(
                f"UPDATE attempts SET resolved_by = ?, resolved_ts = ? WHERE {_OPEN_FAILURE}"
                f" AND id IN (SELECT attempt_id FROM attempt_symbols WHERE symbol IN ({marks}))",
                (attempt_id, now, intent.repo, *chunk),
            )

    @staticmethod
    def _attempt(conn: sqlite3.Connection, attempt_id: int) -> Attempt:
        (row,) = sqlitedb.rows(conn, f"SELECT {_ATTEMPT_COLUMNS} FROM attempts a WHERE a.id = ?", (attempt_id,))
        return _attempt(row)

    @_guarded
    def attempts(self, intent_id: int) -> list[Attempt]:
        """The intent's attempts, oldest first."""
        rows = sqlitedb.rows(
            self.conn, f"SELECT {_ATTEMPT_COLUMNS} FROM attempts a WHERE a.intent_id = ? ORDER BY a.id", (intent_id,)
        )
        return [_attempt(row) for row in rows]

    # -- decisions and notes ----------------------------------------------------------------------

    @_guarded
    def decide(
        self, text: str, symbol_ids: Iterable[str], *, intent_id: int | None = None, developer: str = "", repo: str = ""
    ) -> Decision:
        """Record a decision about symbols, made in an intent (or by a developer in a repo); it supersedes
        the decisions current on those symbols."""
        text, symbols = text.strip()[:TEXT_CAP], _symbols(symbol_ids)
        if not text:
            raise ValueError("a decision needs a text")
        with Immediate(self.conn) as conn:
            if intent_id is not None:
                intent = self._intent(conn, intent_id)
                developer, repo = developer or intent.owner, repo or intent.repo
                self._touch(conn, intent_id)
            if not (developer and repo):
                raise ValueError("a decision needs an intent, or a developer and a repo")
            decision_id = conn.execute(
                "INSERT INTO decisions (repo, intent_id, developer, text, ts) VALUES (?, ?, ?, ?, ?)",
                (repo, intent_id, developer, text, self.clock()),
            ).lastrowid
            for chunk, marks in _chunks(symbols):
                conn.execute(
                    f"UPDATE decision_symbols SET superseded_by = ? WHERE superseded_by IS NULL AND symbol IN ({marks})"
                    " AND decision_id IN (SELECT id FROM decisions WHERE repo = ?)",
                    (decision_id, *chunk, repo),
                )
            conn.executemany("INSERT INTO decision_symbols VALUES (?, ?, NULL)", [(decision_id, s) for s in symbols])
            return _decision(
                sqlitedb.rows(conn, f"SELECT {_DECISION_COLUMNS} FROM decisions d WHERE d.id = ?", (decision_id,))[0]
            )

    @_guarded
    def decisions(self, repo: str, symbol_id: str, include_superseded: bool = False) -> list[Decision]:
        """Decisions on a symbol, newest first: the current ones, and with include_superseded the older ones."""
        return self._decisions(repo, symbol_id, include_superseded)

    def _decisions(self, repo: str, symbol_id: str, include_superseded: bool) -> list[Decision]:
        rows = sqlitedb.rows(
            self.conn,
            f"SELECT {_DECISION_COLUMNS} FROM decisions d JOIN decision_symbols s ON s.decision_id = d.id"
            " WHERE d.repo = ? AND s.symbol = ? AND (? OR s.superseded_by IS NULL) ORDER BY d.ts DESC, d.id DESC",
            (repo, symbol_id, include_superseded),
        )
        return [_decision(row) for row in rows]

    @_guarded
    def note(self, intent_id: int, text: str, kind: str = "progress", developer: str = "") -> Note:
        """A note on the intent: "progress" (e.g. the last summary at session end) or "handoff"."""
        if kind not in NOTE_KINDS:
            raise ValueError(f"a note is {' or '.join(NOTE_KINDS)}, not {kind!r}")
        with Immediate(self.conn) as conn:
            return self._note(conn, intent_id, text, kind, developer)

    @_guarded
    def handoff(self, intent_id: int, text: str, developer: str = "") -> Note:
        """Leave a handoff note and mark the intent handed off (its claims stop warning others)."""
        with Immediate(self.conn) as conn:
            note = self._note(conn, intent_id, text, "handoff", developer)
            conn.execute("UPDATE intents SET status = 'handed_off' WHERE id = ?", (intent_id,))
            return note

    def _note(self, conn: sqlite3.Connection, intent_id: int, text: str, kind: str, developer: str) -> Note:
        text = text.strip()[:TEXT_CAP]
        if not text:
            raise ValueError("a note needs a text")
        intent, now = self._intent(conn, intent_id), self.clock()
        cursor = conn.execute(
            "INSERT INTO notes (intent_id, developer, kind, text, ts) VALUES (?, ?, ?, ?, ?)",
            (intent_id, developer or intent.owner, kind, text, now),
        )
        self._touch(conn, intent_id)
        assert cursor.lastrowid is not None  # an INSERT sets it
        return Note(cursor.lastrowid, intent_id, developer or intent.owner, kind, text, now)

    @_guarded
    def notes(self, intent_id: int) -> list[Note]:
        return self._notes(self.conn, intent_id)

    @staticmethod
    def _notes(conn: sqlite3.Connection, intent_id: int) -> list[Note]:
        rows = sqlitedb.rows(
            conn,
            "SELECT id, intent_id, developer, kind, text, ts FROM notes WHERE intent_id = ? ORDER BY ts, id",
            (intent_id,),
        )
        return [Note(*row) for row in rows]

    # -- handoff and resume -----------------------------------------------------------------------

    @_guarded
    def resume(self, intent_id: int, developer: str, agent: str = "", session_id: str = "") -> Resume:
        """Take the intent over (owner, active, this session) and get its claims, unresolved failed
        attempts, active decisions and notes."""
        with Immediate(self.conn) as conn:
            intent = self._intent(conn, intent_id)
            conn.execute(
                "UPDATE intents SET owner = ?, status = 'active', updated_ts = ? WHERE id = ?",
                (developer, self.clock(), intent_id),
            )
            if agent and session_id:
                self._attach(conn, agent, session_id, developer, intent)
            claims = sqlitedb.rows(
                conn,
                "SELECT intent_id, symbol, developer, ts FROM claims WHERE intent_id = ? ORDER BY ts, symbol",
                (intent_id,),
            )
            failed = sqlitedb.rows(
                conn,
                f"SELECT {_ATTEMPT_COLUMNS} FROM attempts a WHERE a.intent_id = ? AND a.outcome != 'passed'"
                " AND a.resolved_by IS NULL ORDER BY a.id",
                (intent_id,),
            )
            return Resume(
                self._intent(conn, intent_id),
                [Claim(*row) for row in claims],
                [_attempt(row) for row in failed],
                self._intent_decisions(conn, intent),
                self._notes(conn, intent_id),
            )

    @staticmethod
    def _intent_decisions(conn: sqlite3.Connection, intent: Intent) -> list[Decision]:
        """Active decisions made in the intent, or current on a symbol it claimed or ran tests on."""
        current = "SELECT 1 FROM decision_symbols x WHERE x.decision_id = d.id AND x.superseded_by IS NULL"
        rows = sqlitedb.rows(
            conn,
            f"SELECT {_DECISION_COLUMNS} FROM decisions d WHERE d.repo = ? AND ("
            f" (d.intent_id = ? AND (EXISTS ({current})"
            "   OR NOT EXISTS (SELECT 1 FROM decision_symbols x WHERE x.decision_id = d.id)))"
            f" OR EXISTS ({current} AND (x.symbol IN (SELECT symbol FROM claims WHERE intent_id = ?)"
            "   OR x.symbol IN (SELECT s.symbol FROM attempt_symbols s JOIN attempts a ON a.id = s.attempt_id"
            "   WHERE a.intent_id = ?))))"
            " ORDER BY d.ts, d.id",
            (intent.repo, intent.id, intent.id, intent.id),
        )
        return [_decision(row) for row in rows]

    # -- conflicts --------------------------------------------------------------------------------

    @_guarded
    def conflicts(
        self,
        graph: Graph | None,
        repo: str,
        symbol_ids: Iterable[str],
        developer: str,
        hops: int = HOPS,
        idle_days: float = IDLE_DAYS,
        paths: Iterable[str] = (),
    ) -> list[Conflict]:
        """Symbols within `hops` call hops of the edited ones that other developers' active intents claimed,
        and file claims (see the module docstring); `paths`: the edited files, relative to the repository.
        `graph` None: the repository has no graph yet, so only the edited files are compared."""
        return find_conflicts(self._active_claims(repo, developer, idle_days), graph, _symbols(symbol_ids), hops, paths)

    @_guarded
    def mark_warned(self, agent: str, session_id: str, key: str) -> bool:
        """Remember a warning shown to the session; True the first time (show it), False after that."""
        cursor = self.conn.execute(
            "INSERT OR IGNORE INTO warnings VALUES (?, ?, ?, ?)", (agent, session_id, key, self.clock())
        )
        return cursor.rowcount == 1

    @_guarded
    def warned(self, agent: str, session_id: str, key: str) -> bool:
        rows = sqlitedb.rows(
            self.conn, "SELECT 1 FROM warnings WHERE agent = ? AND session_id = ? AND key = ?", (agent, session_id, key)
        )
        return bool(rows)

    # -- queries ----------------------------------------------------------------------------------

    @_guarded
    def who_knows(self, graph: Graph, repo: str, symbol_id: str, hops: int = 1) -> list[Expert]:
        """Developers ranked by their claims, attempts and decisions on the symbol and its neighbours."""
        distance = distances(graph, symbol_id, hops)
        return rank_experts(distance, self._involvement(repo, sorted(distance)))

    def _involvement(self, repo: str, symbols: list[str]) -> list[tuple[str, str, str]]:
        """(kind, developer, symbol) for every claim, attempt and decision on the symbols."""
        found = []
        for chunk, marks in _chunks(symbols):
            found += sqlitedb.rows(
                self.conn,
                f"SELECT 'claim', c.developer, c.symbol FROM claims c JOIN intents i ON i.id = c.intent_id"
                f" WHERE i.repo = ? AND c.symbol IN ({marks})"
                f" UNION ALL SELECT 'attempt', a.developer, s.symbol FROM attempt_symbols s"
                f" JOIN attempts a ON a.id = s.attempt_id WHERE a.repo = ? AND s.symbol IN ({marks})"
                f" UNION ALL SELECT 'decision', d.developer, s.symbol FROM decision_symbols s"
                f" JOIN decisions d ON d.id = s.decision_id WHERE d.repo = ? AND s.symbol IN ({marks})",
                (repo, *chunk, repo, *chunk, repo, *chunk),
            )
        return found

    @_guarded
    def why(self, repo: str, symbol_id: str) -> Why:
        """Why the symbol is the way it is: its current decision(s), superseded ones, attempts, people."""
        decisions = self._decisions(repo, symbol_id, include_superseded=True)
        current = [d for d in decisions if symbol_id in d.current]
        superseded = [d for d in decisions if symbol_id not in d.current]
        attempts = self._symbol_attempts(repo, [symbol_id], failed_only=False, limit=-1)
        claims = sqlitedb.rows(
            self.conn,
            "SELECT c.developer FROM claims c JOIN intents i ON i.id = c.intent_id WHERE i.repo = ? AND c.symbol = ?",
            (repo, symbol_id),
        )
        people: dict[str, int] = {}
        for developer in [d.developer for d in decisions] + [a.developer for a in attempts] + [c for (c,) in claims]:
            people[developer] = people.get(developer, 0) + 1
        return Why(symbol_id, current, superseded, attempts, sorted(people, key=lambda p: (-people[p], p)))

    @_guarded
    def history(self, repo: str, symbol_ids: Iterable[str], limit: int = 10) -> History:
        """What failed here before: the latest failed attempts on the symbols, and their active decisions."""
        symbols = _symbols(symbol_ids)
        failed = self._symbol_attempts(repo, symbols, failed_only=True, limit=limit)
        decisions: dict[int, Decision] = {}
        for symbol in symbols:
            for decision in self._decisions(repo, symbol, include_superseded=False):
                decisions[decision.id] = decision
        return History(failed, sorted(decisions.values(), key=lambda d: (-d.ts, -d.id)))

    def _symbol_attempts(self, repo: str, symbols: list[str], failed_only: bool, limit: int) -> list[Attempt]:
        found: dict[int, Attempt] = {}
        for chunk, marks in _chunks(symbols):
            rows = sqlitedb.rows(
                self.conn,
                f"SELECT {_ATTEMPT_COLUMNS} FROM attempts a WHERE a.repo = ? AND (NOT ? OR a.outcome != 'passed')"
                f" AND a.id IN (SELECT attempt_id FROM attempt_symbols WHERE symbol IN ({marks}))",
                (repo, failed_only, *chunk),
            )
            found.update((row[0], _attempt(row)) for row in rows)
        latest = sorted(found.values(), key=lambda a: (-a.last_ts, -a.id))
        return latest if limit < 0 else latest[:limit]

    @_guarded
    def task_board(self, repo: str, status: str | None = None) -> list[Card]:
        """The repo's intents (active, then handed off, then done; latest first) with what they hold."""
        rows = sqlitedb.rows(
            self.conn,
            f"SELECT {_I_INTENT_COLUMNS},"
            " (SELECT count(*) FROM claims c WHERE c.intent_id = i.id),"
            " (SELECT count(*) FROM attempts a WHERE a.intent_id = i.id AND a.outcome != 'passed'"
            "  AND a.resolved_by IS NULL),"
            " n.id, n.intent_id, n.developer, n.kind, n.text, n.ts"
            " FROM intents i LEFT JOIN notes n ON n.id ="
            "  (SELECT id FROM notes WHERE intent_id = i.id ORDER BY ts DESC, id DESC LIMIT 1)"
            " WHERE i.repo = ? AND i.status = coalesce(?, i.status)"
            " ORDER BY CASE i.status WHEN 'active' THEN 0 WHEN 'handed_off' THEN 1 ELSE 2 END,"
            " i.updated_ts DESC, i.id DESC",
            (repo, valid_status(status)),
        )
        return [Card(Intent(*row[:7]), row[7], row[8], Note(*row[9:]) if row[9] is not None else None) for row in rows]


# -- developers ---------------------------------------------------------------------------------


_IDENTITY = frozenset({"user.name", "user.email"})


def developer_for(repo_root: str, env: Mapping[str, str] | None = None, *, use_git: bool = False) -> str:
    """Who is working: `HIVELORE_DEVELOPER`, else git's user.email, else user.name, else the OS user.

    Git config is read from the files (system, global, the repository's, its worktree's; `[include]`
    followed, `[includeIf]` not) — the hook path cannot afford a subprocess. `use_git=True` asks
    `git config` instead (includeIf and all), falling back to the files when git is missing.
    """
    env = os.environ if env is None else env
    override = env.get("HIVELORE_DEVELOPER", "").strip()
    if override:
        return override
    values = _git_config_by_git(repo_root, env) if use_git else None
    if values is None:
        values = gitrepo.config_values(repo_root, _IDENTITY, env)
    return values.get("user.email") or values.get("user.name") or env.get("USER") or env.get("USERNAME") or "unknown"


def _git_config_by_git(repo_root: str, env: Mapping[str, str]) -> dict[str, str] | None:
    import subprocess  # outside the hook path only

    values = {}
    for key in ("user.name", "user.email"):
        try:
            done = subprocess.run(
                ["git", "-C", repo_root, "config", "--get", key],
                capture_output=True, text=True, timeout=10, env=dict(env),
            )  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            return None
        values[key] = done.stdout.strip()
    return values
