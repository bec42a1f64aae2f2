"""`TeamStore`: what every team store offers — `SqliteTeam` (team.db, store.py), `PostgresTeam` on the
team server (server/postgres/team.py) and `RemoteTeam`, its client (remote/team.py). The rules every
store keeps are in store.py's docstring; tests/test_team_store_contract.py runs one suite over each.

Its own module, apart from SqliteTeam, so that the server's store and the client's implement it
without importing team.db's code. Stdlib only: the hook path imports it.
"""

from __future__ import annotations

from collections.abc import Iterable

from hivelore.team.model import (
    HOPS,
    IDLE_DAYS,
    Attempt,
    Card,
    Claim,
    Conflict,
    Decision,
    Expert,
    History,
    Intent,
    Note,
    Resume,
    Why,
)
from hivelore.team.testruns import TestRun

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from hivelore.codegraph.graph import Graph  # for checkers: the duck type's model


class TeamStore:
    """What a team store offers: the team model of model.py, kept somewhere (team.db here; a remote
    and a PostgreSQL store implement the same methods). The rules in this module's docstring hold for
    every store; tests/test_team_store_contract.py runs one suite over each.

    Every method may raise `TeamUnavailable` (`TeamBusy` when retrying later may work); one naming an
    unknown intent raises `NoSuchIntent`; bad input (an empty title, text or unknown status) raises
    ValueError. `graph` arguments are the duck-typed code graph of model.py."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> TeamStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- intents and sessions

    def intent_for_session(
        self, agent: str, session_id: str, developer: str, repo: str, first_prompt: str = ""
    ) -> Intent:
        """The session's intent in the repo; the first call creates it, titled by the first prompt."""
        raise NotImplementedError

    def session_intent(self, agent: str, session_id: str, repo: str) -> Intent | None:
        """The session's intent in the repo, if it has one yet (nothing is created)."""
        raise NotImplementedError

    def create_intent(self, developer: str, repo: str, title: str) -> Intent:
        """A new active intent, titled by the first line of `title`."""
        raise NotImplementedError

    def intent(self, intent_id: int) -> Intent:
        raise NotImplementedError

    def intents(self, repo: str, status: str | None = None) -> list[Intent]:
        """The repo's intents (with a status: only those), most recently active first."""
        raise NotImplementedError

    def done(self, intent_id: int) -> Intent:
        """Mark the intent done: its claims stop warning others, its history stays."""
        raise NotImplementedError

    # -- claims and changes

    def claim(self, intent_id: int, symbol_ids: Iterable[str]) -> int:
        """Claim symbols (or file claims) for the intent; how many were not claimed yet."""
        raise NotImplementedError

    def claims(self, intent_id: int) -> list[Claim]:
        """The intent's claims, oldest first."""
        raise NotImplementedError

    def upgrade_file_claims(self, graph: Graph, repo: str, intent_id: int | None = None) -> int:
        """The repo's file claims (or one intent's) turned into the symbols they stand for; how many."""
        raise NotImplementedError

    def active_claims(
        self, repo: str, idle_days: float = IDLE_DAYS, other_than: str = ""
    ) -> list[tuple[str, Intent, str]]:
        """(symbol, intent, developer) for each claim of the repo's active intents that are not idle
        (with `other_than`: only of intents someone else owns)."""
        raise NotImplementedError

    def record_change(self, intent_id: int, symbol_ids: Iterable[str]) -> None:
        """Symbols an edit touched; the intent's next test run is linked to them."""
        raise NotImplementedError

    # -- attempts, decisions, notes

    def record_attempt(self, intent_id: int, command: str, run: TestRun) -> Attempt:
        """A test run of the intent: deduplicated, linked to its changes, resolving what it fixed."""
        raise NotImplementedError

    def attempts(self, intent_id: int) -> list[Attempt]:
        """The intent's attempts, oldest first."""
        raise NotImplementedError

    def decide(
        self, text: str, symbol_ids: Iterable[str], *, intent_id: int | None = None, developer: str = "", repo: str = ""
    ) -> Decision:
        """A decision about symbols, in an intent (or by a developer in a repo); it supersedes the
        decisions current on those symbols."""
        raise NotImplementedError

    def decisions(self, repo: str, symbol_id: str, include_superseded: bool = False) -> list[Decision]:
        """Decisions on a symbol, newest first: the current ones (and the superseded ones, if asked)."""
        raise NotImplementedError

    def note(self, intent_id: int, text: str, kind: str = "progress", developer: str = "") -> Note:
        """A note on the intent, "progress" or "handoff"."""
        raise NotImplementedError

    def notes(self, intent_id: int) -> list[Note]:
        """The intent's notes, oldest first."""
        raise NotImplementedError

    def handoff(self, intent_id: int, text: str, developer: str = "") -> Note:
        """Leave a handoff note and mark the intent handed off."""
        raise NotImplementedError

    def resume(self, intent_id: int, developer: str, agent: str = "", session_id: str = "") -> Resume:
        """Take the intent over (owner, active, and the session's, if given) and get what it holds."""
        raise NotImplementedError

    # -- warnings and queries

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
        """Other developers' active claims an edit of the symbols (in files `paths`) conflicts with:
        `model.find_conflicts` over `active_claims(repo, idle_days, other_than=developer)`."""
        raise NotImplementedError

    def mark_warned(self, agent: str, session_id: str, key: str) -> bool:
        """Remember a warning shown to the session; True the first time (show it), False after that."""
        raise NotImplementedError

    def warned(self, agent: str, session_id: str, key: str) -> bool:
        raise NotImplementedError

    def who_knows(self, graph: Graph, repo: str, symbol_id: str, hops: int = 1) -> list[Expert]:
        """Developers ranked (`model.rank_experts`) by their claims, attempts and decisions on the
        symbol and its neighbours within `hops`."""
        raise NotImplementedError

    def why(self, repo: str, symbol_id: str) -> Why:
        """The symbol's current decisions, the superseded ones, its attempts and its people."""
        raise NotImplementedError

    def history(self, repo: str, symbol_ids: Iterable[str], limit: int = 10) -> History:
        """The latest failed attempts on the symbols (`limit` -1: all) and their active decisions."""
        raise NotImplementedError

    def task_board(self, repo: str, status: str | None = None) -> list[Card]:
        """The repo's intents (active, handed off, done; latest first) with what they hold."""
        raise NotImplementedError
