"""`PostgresTeam`: the team model (team/model.py) of one organisation on the team server, kept in
PostgreSQL (migration 0012_team.sql) — the `TeamStore` a machine's `SqliteTeam` is, with the same
rules (team/store.py's docstring) and the same contract suite (tests/test_team_store_contract.py).

Scoped by organisation: every intent and decision belongs to `org_id`, and an intent of another
organisation is, here, no intent at all (`NoSuchIntent`). Repositories are named by each call, as
on a machine. The warnings a session was shown belong to the user (`user_id`), whatever the org:
a session is one person's.

Each public method is one transaction. Where a method reads before it writes, it first locks what the
write depends on: the intent's row (an attempt's deduplication, a claim), or a transaction-scoped
advisory lock on the session or on the repository's decisions — so five processes recording the same
failure leave one attempt with its count, as with team.db's BEGIN IMMEDIATE.

Times come from `clock`: on the server, the client's time of the call (see the migration).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

import psycopg

from hivelore.server.postgres.accounts import ACCOUNT_LOCK
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
    SharedFailure,
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

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hivelore.codegraph.graph import Graph

_INTENT = "i.id, i.repo, i.title, i.owner, i.status, i.created_ts, i.updated_ts"
_ATTEMPT = """a.id, a.intent_id, a.developer, a.command, a.outcome, a.failed, a.errors,
    ARRAY(SELECT symbol FROM team_attempt_symbols WHERE attempt_id = a.id ORDER BY symbol),
    a.count, a.first_ts, a.last_ts, a.resolved_by,
    ARRAY(SELECT id FROM team_attempts r WHERE r.resolved_by = a.id ORDER BY id)"""
_DECISION = """d.id, d.repo, d.intent_id, d.developer, d.text, d.ts,
    ARRAY(SELECT symbol FROM team_decision_symbols WHERE decision_id = d.id ORDER BY symbol),
    ARRAY(SELECT symbol FROM team_decision_symbols WHERE decision_id = d.id AND superseded_by IS NULL
          ORDER BY symbol)"""
_NOTE = "n.id, n.intent_id, n.developer, n.kind, n.text, n.ts"
_OPEN_FAILURE = "resolved_by IS NULL AND outcome != 'passed' AND repo = %s"


def _attempt(row: tuple) -> Attempt:
    id, intent_id, developer, command, outcome, failed, errors, symbols, count, first, last, by, resolves = row
    return Attempt(
        id, intent_id, developer, command, outcome, tuple(failed), tuple(errors), tuple(symbols), count,
        first, last, by, tuple(resolves),
    )  # fmt: skip


def _decision(row: tuple) -> Decision:
    id, repo, intent_id, developer, text, ts, symbols, current = row
    return Decision(id, repo, intent_id, developer, text, ts, tuple(symbols), tuple(current))


def _symbols(symbol_ids: Iterable[str]) -> list[str]:
    return sorted({symbol for symbol in symbol_ids if symbol})


def mark_warned(conn: psycopg.Connection, user_id: int, agent: str, session_id: str, key: str, now: float) -> bool:
    """Remember a warning shown to the user's session; True the first time (show it)."""
    cursor = conn.execute(
        "INSERT INTO team_warnings VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (user_id, agent, session_id, key, now),
    )
    return cursor.rowcount == 1


def warned(conn: psycopg.Connection, user_id: int, agent: str, session_id: str, key: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM team_warnings WHERE user_id = %s AND agent = %s AND session_id = %s AND key = %s",
        (user_id, agent, session_id, key),
    ).fetchone()
    return row is not None


class PostgresTeam(TeamStore):
    """The team model of organisation `org_id`, on a connection in autocommit mode (one of the
    server's pool, which stays the pool's; or one `open` made, which `close` closes)."""

    def __init__(
        self, conn: psycopg.Connection, org_id: int, user_id: int, clock: Callable[[], float] = time.time
    ) -> None:
        self.conn, self.org_id, self.user_id, self.clock = conn, org_id, user_id, clock
        self._owned = False

    @classmethod
    def open(cls, url: str, org_id: int, user_id: int, clock: Callable[[], float] = time.time) -> PostgresTeam:
        """A store on a connection of its own (closed by `close`)."""
        store = cls(psycopg.connect(url, autocommit=True), org_id, user_id, clock)
        store._owned = True
        return store

    def close(self) -> None:
        if self._owned:
            self.conn.close()

    @contextmanager
    def _write(self) -> Iterator[None]:
        """A transaction whose rows name their author: the columns' default (migration 0013) reads
        the setting, and fails without it. It holds the author's account lock, shared, until it ends."""
        with self.conn.transaction():
            self.conn.execute(
                f"SELECT set_config('hivelore.user_id', %s, true), pg_advisory_xact_lock_shared({ACCOUNT_LOCK})",
                (str(self.user_id), self.user_id),
            )
            yield

    def _lock(self, *names: object) -> None:
        """Inside a transaction: hold `names` (a session, a repository's decisions) until it ends."""
        self.conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, %s))", (repr(names), 0))

    # -- intents and sessions ---------------------------------------------------------------------

    def intent_for_session(
        self, agent: str, session_id: str, developer: str, repo: str, first_prompt: str = ""
    ) -> Intent:
        found = self.session_intent(agent, session_id, repo)
        if found is not None:
            return found
        with self._write():
            self._lock("session", self.org_id, agent, session_id, repo)
            found = self.session_intent(agent, session_id, repo)  # another hook may have been first
            if found is not None:
                return found
            title = title_from(first_prompt) or f"untitled ({agent} session {session_id[:8]})"
            intent = self._insert_intent(developer, repo, title)
            self._attach(agent, session_id, developer, intent)
            return intent

    def session_intent(self, agent: str, session_id: str, repo: str) -> Intent | None:
        row = self.conn.execute(
            f"SELECT {_INTENT} FROM team_sessions s JOIN team_intents i ON i.id = s.intent_id"
            " WHERE s.org_id = %s AND s.agent = %s AND s.session_id = %s AND s.repo = %s",
            (self.org_id, agent, session_id, repo),
        ).fetchone()
        return Intent(*row) if row else None

    def create_intent(self, developer: str, repo: str, title: str) -> Intent:
        if not title_from(title):
            raise ValueError("an intent needs a title")
        with self._write():
            return self._insert_intent(developer, repo, title_from(title))

    def intent(self, intent_id: int) -> Intent:
        row = self.conn.execute(
            f"SELECT {_INTENT} FROM team_intents i WHERE i.id = %s AND i.org_id = %s", (intent_id, self.org_id)
        ).fetchone()
        if row is None:
            raise NoSuchIntent(f"no task {intent_id}")
        return Intent(*row)

    def _locked_intent(self, intent_id: int) -> Intent:
        """Inside a transaction: the intent, its row held until the transaction ends."""
        row = self.conn.execute(
            f"SELECT {_INTENT} FROM team_intents i WHERE i.id = %s AND i.org_id = %s FOR UPDATE",
            (intent_id, self.org_id),
        ).fetchone()
        if row is None:
            raise NoSuchIntent(f"no task {intent_id}")
        return Intent(*row)

    def intents(self, repo: str, status: str | None = None) -> list[Intent]:
        rows = self.conn.execute(
            f"SELECT {_INTENT} FROM team_intents i WHERE i.org_id = %s AND i.repo = %s"
            " AND i.status = coalesce(%s, i.status) ORDER BY i.updated_ts DESC, i.id DESC",
            (self.org_id, repo, valid_status(status)),
        ).fetchall()
        return [Intent(*row) for row in rows]

    def done(self, intent_id: int) -> Intent:
        with self._write():
            self._locked_intent(intent_id)
            self.conn.execute(
                "UPDATE team_intents SET status = 'done', updated_ts = %s WHERE id = %s", (self.clock(), intent_id)
            )
            return self.intent(intent_id)

    def _insert_intent(self, developer: str, repo: str, title: str) -> Intent:
        now = self.clock()
        row = self.conn.execute(
            "INSERT INTO team_intents (org_id, repo, title, owner, status, created_ts, updated_ts)"
            " VALUES (%s, %s, %s, %s, 'active', %s, %s) RETURNING id",
            (self.org_id, repo, title, developer, now, now),
        ).fetchone()
        assert row is not None  # RETURNING gives the row
        return self.intent(row[0])

    def _attach(self, agent: str, session_id: str, developer: str, intent: Intent) -> None:
        """Point the session at the intent; an intent it leaves that holds nothing is dropped."""
        before = self.conn.execute(
            "SELECT intent_id FROM team_sessions WHERE org_id = %s AND agent = %s AND session_id = %s AND repo = %s",
            (self.org_id, agent, session_id, intent.repo),
        ).fetchone()
        self.conn.execute(
            "INSERT INTO team_sessions VALUES (%s, %s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (org_id, agent, session_id, repo) DO UPDATE SET"
            " developer = excluded.developer, intent_id = excluded.intent_id, author = excluded.author",
            (self.org_id, agent, session_id, intent.repo, developer, intent.id, self.clock()),
        )
        if before and before[0] != intent.id:
            self._drop_if_empty(before[0])

    def _drop_if_empty(self, intent_id: int) -> None:
        # e.g. the intent a session's first prompt ("resume task 12") created before it resumed task 12
        holders = ("team_sessions", "team_claims", "team_changes", "team_attempts", "team_decisions", "team_notes")
        held = " OR ".join(f"EXISTS (SELECT 1 FROM {table} WHERE intent_id = %(id)s)" for table in holders)
        self.conn.execute(f"DELETE FROM team_intents WHERE id = %(id)s AND NOT ({held})", {"id": intent_id})

    def _touch(self, intent_id: int) -> None:
        self.conn.execute("UPDATE team_intents SET updated_ts = %s WHERE id = %s", (self.clock(), intent_id))

    # -- claims and changes -----------------------------------------------------------------------

    def claim(self, intent_id: int, symbol_ids: Iterable[str]) -> int:
        now, symbols = self.clock(), _symbols(symbol_ids)
        with self._write():
            intent = self._locked_intent(intent_id)
            new = self.conn.execute(
                "INSERT INTO team_claims SELECT %s, s, %s, %s FROM unnest(%s::text[]) s ON CONFLICT DO NOTHING",
                (intent_id, intent.owner, now, symbols),
            ).rowcount
            self._touch(intent_id)
            return new

    def claims(self, intent_id: int) -> list[Claim]:
        rows = self.conn.execute(
            "SELECT c.intent_id, c.symbol, c.developer, c.ts FROM team_claims c JOIN team_intents i"
            " ON i.id = c.intent_id WHERE c.intent_id = %s AND i.org_id = %s ORDER BY c.ts, c.symbol",
            (intent_id, self.org_id),
        ).fetchall()
        return [Claim(*row) for row in rows]

    def file_claims(self, repo: str, intent_id: int | None = None) -> list[tuple[int, str, str, float]]:
        """(intent, file claim, developer, ts) of the repo's intents (or of one): what
        `upgrade_file_claims` turns into symbols, here or on a client that holds the graph."""
        rows = self.conn.execute(
            "SELECT c.intent_id, c.symbol, c.developer, c.ts FROM team_claims c JOIN team_intents i"
            " ON i.id = c.intent_id WHERE i.org_id = %s AND i.repo = %s AND c.symbol LIKE %s"
            " AND (%s::bigint IS NULL OR c.intent_id = %s) ORDER BY c.intent_id, c.symbol",
            (self.org_id, repo, FILE_CLAIM + "%", intent_id, intent_id),
        ).fetchall()
        return [(i, symbol, developer, ts) for i, symbol, developer, ts in rows]

    def replace_file_claims(
        self, repo: str, file_claims: Iterable[tuple[int, str]], claims: Iterable[tuple[int, str, str, float]]
    ) -> int:
        """Put `claims` (intent, symbol, developer, ts) in place of `file_claims` (intent, file claim) of
        the repo's intents; how many file claims were replaced (those already gone are not counted)."""
        replaced, added = list(file_claims), list(claims)
        mine = "SELECT id FROM team_intents WHERE org_id = %(org)s AND repo = %(repo)s"
        with self._write():
            self.conn.execute(
                "INSERT INTO team_claims SELECT c.i, c.s, c.d, c.t FROM unnest(%(ids)s::bigint[], %(symbols)s::text[],"
                f" %(developers)s::text[], %(times)s::double precision[]) AS c(i, s, d, t) WHERE c.i IN ({mine})"
                " ON CONFLICT DO NOTHING",
                {
                    "org": self.org_id, "repo": repo, "ids": [c[0] for c in added], "symbols": [c[1] for c in added],
                    "developers": [c[2] for c in added], "times": [c[3] for c in added],
                },
            )  # fmt: skip
            return self.conn.execute(
                f"DELETE FROM team_claims WHERE intent_id IN ({mine}) AND symbol LIKE %(file)s AND (intent_id, symbol)"
                " IN (SELECT * FROM unnest(%(ids)s::bigint[], %(symbols)s::text[]))",
                {
                    "org": self.org_id, "repo": repo, "file": FILE_CLAIM + "%",
                    "ids": [c[0] for c in replaced], "symbols": [c[1] for c in replaced],
                },
            ).rowcount  # fmt: skip

    def upgrade_file_claims(self, graph: Graph, repo: str, intent_id: int | None = None) -> int:
        rows = self.file_claims(repo, intent_id)
        if not rows:  # the usual case: the graph existed before the first edit
            return 0
        return self.replace_file_claims(repo, [(r[0], r[1]) for r in rows], file_claim_upgrades(graph, rows))

    def active_claims(
        self, repo: str, idle_days: float = IDLE_DAYS, other_than: str = ""
    ) -> list[tuple[str, Intent, str]]:
        rows = self.conn.execute(
            f"SELECT c.symbol, {_INTENT} FROM team_intents i JOIN team_claims c ON c.intent_id = i.id"
            " WHERE i.org_id = %s AND i.repo = %s AND i.status = 'active' AND i.owner != %s AND i.updated_ts >= %s"
            " ORDER BY c.symbol, i.id",
            (self.org_id, repo, other_than, self.clock() - idle_days * 86_400),
        ).fetchall()
        return [(symbol, Intent(*fields), fields[3]) for symbol, *fields in rows]

    def record_change(self, intent_id: int, symbol_ids: Iterable[str]) -> None:
        now, symbols = self.clock(), _symbols(symbol_ids)
        with self._write():
            self._locked_intent(intent_id)
            self.conn.execute(
                "INSERT INTO team_changes SELECT %s, s, %s FROM unnest(%s::text[]) s"
                " ON CONFLICT (intent_id, symbol) DO UPDATE SET ts = excluded.ts",
                (intent_id, now, symbols),
            )
            self._touch(intent_id)

    # -- attempts ---------------------------------------------------------------------------------

    def record_attempt(self, intent_id: int, command: str, run: TestRun) -> Attempt:
        now, command = self.clock(), command[:COMMAND_CAP]
        failed, errors, key = sorted(set(run.failed)), sorted(set(run.errors)), command_key(command)
        with self._write():
            intent = self._locked_intent(intent_id)
            taken = self.conn.execute(
                "DELETE FROM team_changes WHERE intent_id = %s RETURNING symbol", (intent_id,)
            ).fetchall()
            symbols = sorted(symbol for (symbol,) in taken)
            same = self.conn.execute(
                "SELECT id FROM team_attempts WHERE intent_id = %s AND outcome = %s AND failed = %s::text[]"
                " AND errors = %s::text[] AND resolved_by IS NULL ORDER BY id DESC LIMIT 1",
                (intent_id, run.outcome, failed, errors),
            ).fetchone()
            if same:
                attempt_id = same[0]
                self.conn.execute(
                    "UPDATE team_attempts SET count = count + 1, last_ts = %s, command = %s, command_key = %s"
                    " WHERE id = %s",
                    (now, command, key, attempt_id),
                )
            else:
                row = self.conn.execute(
                    "INSERT INTO team_attempts (intent_id, repo, developer, command, command_key, outcome, failed,"
                    " errors, count, first_ts, last_ts) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, 1, %s, %s)"
                    " RETURNING id",
                    (intent_id, intent.repo, intent.owner, command, key, run.outcome, failed, errors, now, now),
                ).fetchone()
                assert row is not None  # RETURNING gives the row
                attempt_id = row[0]
            self.conn.execute(
                "INSERT INTO team_attempt_symbols SELECT %s, s FROM unnest(%s::text[]) s ON CONFLICT DO NOTHING",
                (attempt_id, symbols),
            )
            if run.outcome == "passed":
                self._resolve(attempt_id, intent, key, symbols, now)
            self._touch(intent_id)
            return self._attempt(attempt_id)

    def _resolve(self, attempt_id: int, intent: Intent, key: str, symbols: list[str], now: float) -> None:
        """A pass resolves the open failures of its intent with its command, and those on the symbols it
        changed (in the organisation's repository: attempts are reached through their intents)."""
        self.conn.execute(
            f"UPDATE team_attempts SET resolved_by = %s, resolved_ts = %s WHERE {_OPEN_FAILURE}"
            " AND intent_id IN (SELECT id FROM team_intents WHERE org_id = %s)"
            " AND ((intent_id = %s AND command_key = %s)"
            "  OR id IN (SELECT attempt_id FROM team_attempt_symbols WHERE symbol = ANY(%s::text[])))",
            (attempt_id, now, intent.repo, self.org_id, intent.id, key, symbols),
        )

    def _attempt(self, attempt_id: int) -> Attempt:
        row = self.conn.execute(f"SELECT {_ATTEMPT} FROM team_attempts a WHERE a.id = %s", (attempt_id,)).fetchone()
        assert row is not None  # the caller just wrote it
        return _attempt(row)

    def attempts(self, intent_id: int) -> list[Attempt]:
        rows = self.conn.execute(
            f"SELECT {_ATTEMPT} FROM team_attempts a JOIN team_intents i ON i.id = a.intent_id"
            " WHERE a.intent_id = %s AND i.org_id = %s ORDER BY a.id",
            (intent_id, self.org_id),
        ).fetchall()
        return [_attempt(row) for row in rows]

    # -- decisions and notes ----------------------------------------------------------------------

    def decide(
        self, text: str, symbol_ids: Iterable[str], *, intent_id: int | None = None, developer: str = "", repo: str = ""
    ) -> Decision:
        text, symbols = text.strip()[:TEXT_CAP], _symbols(symbol_ids)
        if not text:
            raise ValueError("a decision needs a text")
        with self._write():
            if intent_id is not None:
                intent = self._locked_intent(intent_id)
                developer, repo = developer or intent.owner, repo or intent.repo
                self._touch(intent_id)
            if not (developer and repo):
                raise ValueError("a decision needs an intent, or a developer and a repo")
            self._lock("decisions", self.org_id, repo)  # two decisions on one symbol: one supersedes the other
            row = self.conn.execute(
                "INSERT INTO team_decisions (org_id, repo, intent_id, developer, text, ts)"
                " VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
                (self.org_id, repo, intent_id, developer, text, self.clock()),
            ).fetchone()
            assert row is not None  # RETURNING gives the row
            self.conn.execute(
                "UPDATE team_decision_symbols SET superseded_by = %s WHERE superseded_by IS NULL"
                " AND symbol = ANY(%s::text[])"
                " AND decision_id IN (SELECT id FROM team_decisions WHERE org_id = %s AND repo = %s)",
                (row[0], symbols, self.org_id, repo),
            )
            self.conn.execute(
                "INSERT INTO team_decision_symbols SELECT %s, s, NULL FROM unnest(%s::text[]) s", (row[0], symbols)
            )
            found = self.conn.execute(f"SELECT {_DECISION} FROM team_decisions d WHERE d.id = %s", (row[0],)).fetchone()
            assert found is not None  # written above
            return _decision(found)

    def decisions(self, repo: str, symbol_id: str, include_superseded: bool = False) -> list[Decision]:
        rows = self.conn.execute(
            f"SELECT {_DECISION} FROM team_decisions d JOIN team_decision_symbols s ON s.decision_id = d.id"
            " WHERE d.org_id = %s AND d.repo = %s AND s.symbol = %s AND (%s OR s.superseded_by IS NULL)"
            " ORDER BY d.ts DESC, d.id DESC",
            (self.org_id, repo, symbol_id, include_superseded),
        ).fetchall()
        return [_decision(row) for row in rows]

    def note(self, intent_id: int, text: str, kind: str = "progress", developer: str = "") -> Note:
        if kind not in NOTE_KINDS:
            raise ValueError(f"a note is {' or '.join(NOTE_KINDS)}, not {kind!r}")
        with self._write():
            return self._note(intent_id, text, kind, developer)

    def handoff(self, intent_id: int, text: str, developer: str = "") -> Note:
        with self._write():
            note = self._note(intent_id, text, "handoff", developer)
            self.conn.execute("UPDATE team_intents SET status = 'handed_off' WHERE id = %s", (intent_id,))
            return note

    def _note(self, intent_id: int, text: str, kind: str, developer: str) -> Note:
        text = text.strip()[:TEXT_CAP]
        if not text:
            raise ValueError("a note needs a text")
        intent, now = self._locked_intent(intent_id), self.clock()
        row = self.conn.execute(
            "INSERT INTO team_notes (intent_id, developer, kind, text, ts) VALUES (%s, %s, %s, %s, %s) RETURNING id",
            (intent_id, developer or intent.owner, kind, text, now),
        ).fetchone()
        assert row is not None  # RETURNING gives the row
        self._touch(intent_id)
        return Note(row[0], intent_id, developer or intent.owner, kind, text, now)

    def notes(self, intent_id: int) -> list[Note]:
        rows = self.conn.execute(
            f"SELECT {_NOTE} FROM team_notes n JOIN team_intents i ON i.id = n.intent_id"
            " WHERE n.intent_id = %s AND i.org_id = %s ORDER BY n.ts, n.id",
            (intent_id, self.org_id),
        ).fetchall()
        return [Note(*row) for row in rows]

    # -- handoff and resume -----------------------------------------------------------------------

    def resume(self, intent_id: int, developer: str, agent: str = "", session_id: str = "") -> Resume:
        with self._write():
            intent = self._locked_intent(intent_id)
            self.conn.execute(
                "UPDATE team_intents SET owner = %s, status = 'active', updated_ts = %s WHERE id = %s",
                (developer, self.clock(), intent_id),
            )
            if agent and session_id:
                self._attach(agent, session_id, developer, intent)
            failed = self.conn.execute(
                f"SELECT {_ATTEMPT} FROM team_attempts a WHERE a.intent_id = %s AND a.outcome != 'passed'"
                " AND a.resolved_by IS NULL ORDER BY a.id",
                (intent_id,),
            ).fetchall()
            return Resume(
                self.intent(intent_id),
                self.claims(intent_id),
                [_attempt(row) for row in failed],
                self._intent_decisions(intent),
                self.notes(intent_id),
            )

    def _intent_decisions(self, intent: Intent) -> list[Decision]:
        """Active decisions made in the intent, or current on a symbol it claimed or ran tests on."""
        current = "SELECT 1 FROM team_decision_symbols x WHERE x.decision_id = d.id AND x.superseded_by IS NULL"
        rows = self.conn.execute(
            f"SELECT {_DECISION} FROM team_decisions d WHERE d.org_id = %(org)s AND d.repo = %(repo)s AND ("
            f" (d.intent_id = %(id)s AND (EXISTS ({current})"
            "   OR NOT EXISTS (SELECT 1 FROM team_decision_symbols x WHERE x.decision_id = d.id)))"
            f" OR EXISTS ({current} AND (x.symbol IN (SELECT symbol FROM team_claims WHERE intent_id = %(id)s)"
            "   OR x.symbol IN (SELECT s.symbol FROM team_attempt_symbols s JOIN team_attempts a"
            "   ON a.id = s.attempt_id WHERE a.intent_id = %(id)s))))"
            " ORDER BY d.ts, d.id",
            {"org": self.org_id, "repo": intent.repo, "id": intent.id},
        ).fetchall()
        return [_decision(row) for row in rows]

    # -- conflicts --------------------------------------------------------------------------------

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
        claims = self.active_claims(repo, idle_days, other_than=developer)
        return find_conflicts(claims, graph, _symbols(symbol_ids), hops, paths)

    def mark_warned(self, agent: str, session_id: str, key: str) -> bool:
        return mark_warned(self.conn, self.user_id, agent, session_id, key, self.clock())

    def warned(self, agent: str, session_id: str, key: str) -> bool:
        return warned(self.conn, self.user_id, agent, session_id, key)

    # -- queries ----------------------------------------------------------------------------------

    def who_knows(self, graph: Graph, repo: str, symbol_id: str, hops: int = 1) -> list[Expert]:
        distance = distances(graph, symbol_id, hops)
        return rank_experts(distance, self.involvement(repo, sorted(distance)))

    def involvement(self, repo: str, symbols: list[str]) -> list[tuple[str, str, str]]:
        """(kind, developer, symbol) for every claim, attempt and decision on the symbols: what
        `who_knows` ranks, here or on a client that holds the graph."""
        rows = self.conn.execute(
            "SELECT 'claim', c.developer, c.symbol FROM team_claims c JOIN team_intents i ON i.id = c.intent_id"
            " WHERE i.org_id = %(org)s AND i.repo = %(repo)s AND c.symbol = ANY(%(symbols)s::text[])"
            " UNION ALL SELECT 'attempt', a.developer, s.symbol FROM team_attempt_symbols s"
            " JOIN team_attempts a ON a.id = s.attempt_id JOIN team_intents i ON i.id = a.intent_id"
            " WHERE i.org_id = %(org)s AND a.repo = %(repo)s AND s.symbol = ANY(%(symbols)s::text[])"
            " UNION ALL SELECT 'decision', d.developer, s.symbol FROM team_decision_symbols s"
            " JOIN team_decisions d ON d.id = s.decision_id"
            " WHERE d.org_id = %(org)s AND d.repo = %(repo)s AND s.symbol = ANY(%(symbols)s::text[])",
            {"org": self.org_id, "repo": repo, "symbols": symbols},
        ).fetchall()
        return [(kind, developer, symbol) for kind, developer, symbol in rows]

    def why(self, repo: str, symbol_id: str) -> Why:
        decisions = self.decisions(repo, symbol_id, include_superseded=True)
        current = [d for d in decisions if symbol_id in d.current]
        superseded = [d for d in decisions if symbol_id not in d.current]
        attempts = self._symbol_attempts(repo, [symbol_id], failed_only=False, limit=-1)
        claims = self.conn.execute(
            "SELECT c.developer FROM team_claims c JOIN team_intents i ON i.id = c.intent_id"
            " WHERE i.org_id = %s AND i.repo = %s AND c.symbol = %s",
            (self.org_id, repo, symbol_id),
        ).fetchall()
        people: dict[str, int] = {}
        for developer in [d.developer for d in decisions] + [a.developer for a in attempts] + [c for (c,) in claims]:
            people[developer] = people.get(developer, 0) + 1
        return Why(symbol_id, current, superseded, attempts, sorted(people, key=lambda p: (-people[p], p)))

    def history(self, repo: str, symbol_ids: Iterable[str], limit: int = 10) -> History:
        symbols = _symbols(symbol_ids)
        failed = self._symbol_attempts(repo, symbols, failed_only=True, limit=limit)
        decisions: dict[int, Decision] = {}
        for symbol in symbols:
            for decision in self.decisions(repo, symbol, include_superseded=False):
                decisions[decision.id] = decision
        return History(failed, sorted(decisions.values(), key=lambda d: (-d.ts, -d.id)))

    def _symbol_attempts(self, repo: str, symbols: list[str], failed_only: bool, limit: int) -> list[Attempt]:
        rows = self.conn.execute(
            f"SELECT {_ATTEMPT} FROM team_attempts a JOIN team_intents i ON i.id = a.intent_id"
            " WHERE i.org_id = %s AND a.repo = %s AND (NOT %s OR a.outcome != 'passed')"
            " AND a.id IN (SELECT attempt_id FROM team_attempt_symbols WHERE symbol = ANY(%s::text[]))"
            " ORDER BY a.last_ts DESC, a.id DESC LIMIT %s",
            (self.org_id, repo, failed_only, symbols, None if limit < 0 else limit),
        ).fetchall()
        return [_attempt(row) for row in rows]

    def recent_failures(self, repo: str, days: float, limit: int) -> list[SharedFailure]:
        """The repository's failed attempts of the last `days` (the latest `limit`, latest first),
        each with its task's title and the passing attempt that resolved it: what a hook server keeps
        so that a pre-edit check and a failing test run hear of a teammate's failure."""
        rows = self.conn.execute(
            f"SELECT {_ATTEMPT}, i.title FROM team_attempts a JOIN team_intents i ON i.id = a.intent_id"
            " WHERE i.org_id = %s AND a.repo = %s AND a.outcome != 'passed' AND a.last_ts >= %s"
            " ORDER BY a.last_ts DESC, a.id DESC LIMIT %s",
            (self.org_id, repo, self.clock() - days * 86_400, limit),
        ).fetchall()
        fixes = {row[11] for row in rows if row[11] is not None}
        found = (
            self.conn.execute(
                f"SELECT {_ATTEMPT}, i.title FROM team_attempts a JOIN team_intents i ON i.id = a.intent_id"
                " WHERE i.org_id = %s AND a.id = ANY(%s::bigint[])",
                (self.org_id, sorted(fixes)),
            ).fetchall()
            if fixes
            else []
        )
        fixed = {row[0]: (_attempt(row[:13]), row[13]) for row in found}
        return [SharedFailure(_attempt(row[:13]), row[13], *fixed.get(row[11], (None, ""))) for row in rows]

    def task_board(self, repo: str, status: str | None = None) -> list[Card]:
        rows = self.conn.execute(
            f"SELECT {_INTENT},"
            " (SELECT count(*) FROM team_claims c WHERE c.intent_id = i.id),"
            " (SELECT count(*) FROM team_attempts a WHERE a.intent_id = i.id AND a.outcome != 'passed'"
            "  AND a.resolved_by IS NULL),"
            f" {_NOTE}"
            " FROM team_intents i LEFT JOIN team_notes n ON n.id ="
            "  (SELECT id FROM team_notes WHERE intent_id = i.id ORDER BY ts DESC, id DESC LIMIT 1)"
            " WHERE i.org_id = %s AND i.repo = %s AND i.status = coalesce(%s, i.status)"
            " ORDER BY CASE i.status WHEN 'active' THEN 0 WHEN 'handed_off' THEN 1 ELSE 2 END,"
            " i.updated_ts DESC, i.id DESC",
            (self.org_id, repo, valid_status(status)),
        ).fetchall()
        return [Card(Intent(*row[:7]), row[7], row[8], Note(*row[9:]) if row[9] is not None else None) for row in rows]
