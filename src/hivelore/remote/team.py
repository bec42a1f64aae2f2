"""`RemoteTeam`: the team server's team model as a `TeamStore` (team/contract.py) on a client — each
method one request to `/v1/team…` (server/routes/team.py), answered by the server's `PostgresTeam`
under the same rules as a machine's team.db (tests/test_team_store_contract.py runs the same suite).

What needs the code graph is done here, where the graph is: `conflicts` runs `model.find_conflicts`
over the server's active claims, `who_knows` ranks the server's involvement by the local graph's
distances, and `upgrade_file_claims` sends the symbols the local graph finds for the server's file
claims. Times are this machine's (`clock`), sent as `at`.

Errors are the TeamStore's: an unknown task is `NoSuchIntent`, a server that cannot be reached
`TeamUnavailable` (`TeamBusy` when it asks to wait), a refusal or bad input a ValueError with the
server's sentence. Standard library only: the hook server may use it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from urllib.parse import urlencode

from hivelore import errors
from hivelore.remote.client import Client
from hivelore.team import wire
from hivelore.team.contract import TeamStore
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
    NoSuchIntent,
    Note,
    Resume,
    TeamBusy,
    TeamUnavailable,
    Why,
    distances,
    file_claim_upgrades,
    find_conflicts,
    rank_experts,
)
from hivelore.team.testruns import TestRun

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hivelore.codegraph.graph import Graph

PREFIX = "/v1/team"


def _query(**params: object) -> str:
    """A query string of the params that are set (lists repeated, booleans as true/false)."""
    pairs: list[tuple[str, object]] = []
    for name, value in params.items():
        if isinstance(value, list):
            pairs += [(name, item) for item in value]
        elif isinstance(value, bool):
            pairs.append((name, "true" if value else "false"))
        elif value is not None:
            pairs.append((name, value))
    return "?" + urlencode(pairs) if pairs else ""


class RemoteTeam(TeamStore):
    """The team of the repositories the server's organisations share, over `client` (whose
    connection the caller keeps: `close` leaves it open)."""

    def __init__(
        self, client: Client, clock: Callable[[], float] = time.time, idempotency_key: str | None = None
    ) -> None:
        """`idempotency_key`: each change is sent with a key made of it and the change's route, so
        that the changes of a queued one (remote/teamshare.py) replayed after a lost answer are
        applied once."""
        self.client, self.clock, self.idempotency_key = client, clock, idempotency_key

    def close(self) -> None:
        """Nothing to release: the client, and its kept connection, are the caller's."""

    def _ask(self, method: str, path: str, body: dict | None = None) -> dict:
        """The server's answer to one request, its failures as the TeamStore's errors."""
        try:
            if body is not None:
                body = {**body, "at": self.clock()}
            key = f"{self.idempotency_key}:{path}" if self.idempotency_key and method == "POST" else None
            answer = self.client.request(method, PREFIX + path, body, idempotency_key=key)
        except errors.NotFound as exc:
            raise NoSuchIntent(str(exc)) from None
        except errors.Busy as exc:
            raise TeamBusy(str(exc)) from None
        except errors.Unavailable as exc:
            raise TeamUnavailable(str(exc), exc.repair) from None
        return answer if isinstance(answer, dict) else {}

    def _get(self, path: str, **params: object) -> dict:
        return self._ask("GET", path + _query(**params))

    def _post(self, path: str, **body: object) -> dict:
        return self._ask("POST", path, body)

    # -- intents and sessions ---------------------------------------------------------------------

    def intent_for_session(
        self, agent: str, session_id: str, developer: str, repo: str, first_prompt: str = ""
    ) -> Intent:
        answer = self._post(
            "/sessions", agent=agent, session_id=session_id, developer=developer, repo=repo, first_prompt=first_prompt
        )
        return wire.intent(answer)

    def session_intent(self, agent: str, session_id: str, repo: str) -> Intent | None:
        found = self._get("/sessions", agent=agent, session_id=session_id, repo=repo)["intent"]
        return wire.intent(found) if found is not None else None

    def create_intent(self, developer: str, repo: str, title: str) -> Intent:
        return wire.intent(self._post("/intents", developer=developer, repo=repo, title=title))

    def intent(self, intent_id: int) -> Intent:
        return wire.intent(self._get(f"/intents/{int(intent_id)}"))

    def intents(self, repo: str, status: str | None = None) -> list[Intent]:
        return [wire.intent(i) for i in self._get("/intents", repo=repo, status=status)["intents"]]

    def done(self, intent_id: int) -> Intent:
        return wire.intent(self._post(f"/intents/{int(intent_id)}/done"))

    # -- claims and changes -----------------------------------------------------------------------

    def claim(self, intent_id: int, symbol_ids: Iterable[str]) -> int:
        return int(self._post(f"/intents/{int(intent_id)}/claims", symbols=list(symbol_ids))["new"])

    def claims(self, intent_id: int) -> list[Claim]:
        return [wire.claim(c) for c in self._get(f"/intents/{int(intent_id)}/claims")["claims"]]

    def upgrade_file_claims(self, graph: Graph, repo: str, intent_id: int | None = None) -> int:
        found = [wire.claim(c) for c in self._get("/file-claims", repo=repo, intent_id=intent_id)["claims"]]
        if not found:  # the usual case: the graph existed before the first edit
            return 0
        rows = [(c.intent_id, c.symbol, c.developer, c.ts) for c in found]
        upgrades = file_claim_upgrades(graph, rows)
        answer = self._post(
            "/file-claims",
            repo=repo,
            replaced=[{"intent_id": c.intent_id, "symbol": c.symbol} for c in found],
            claims=[{"intent_id": i, "symbol": s, "developer": d, "ts": ts} for i, s, d, ts in upgrades],
        )
        return int(answer["replaced"])

    def active_claims(
        self, repo: str, idle_days: float = IDLE_DAYS, other_than: str = ""
    ) -> list[tuple[str, Intent, str]]:
        return self.active_claims_of([repo], idle_days, other_than)

    def active_claims_of(
        self, repos: Iterable[str], idle_days: float = IDLE_DAYS, other_than: str = ""
    ) -> list[tuple[str, Intent, str]]:
        """`active_claims` of several repositories in one request (each claim's intent names its own)."""
        answer = self._get("/claims", repo=list(repos), idle_days=idle_days, other_than=other_than, at=self.clock())
        return [(c["symbol"], wire.intent(c["intent"]), c["developer"]) for c in answer["claims"]]

    def record_change(self, intent_id: int, symbol_ids: Iterable[str]) -> None:
        self._post(f"/intents/{int(intent_id)}/changes", symbols=list(symbol_ids))

    # -- attempts, decisions, notes ---------------------------------------------------------------

    def record_attempt(self, intent_id: int, command: str, run: TestRun) -> Attempt:
        return wire.attempt(self._post(f"/intents/{int(intent_id)}/attempts", command=command, run=wire.encode(run)))

    def attempts(self, intent_id: int) -> list[Attempt]:
        return [wire.attempt(a) for a in self._get(f"/intents/{int(intent_id)}/attempts")["attempts"]]

    def decide(
        self, text: str, symbol_ids: Iterable[str], *, intent_id: int | None = None, developer: str = "", repo: str = ""
    ) -> Decision:
        answer = self._post(
            "/decisions", text=text, symbols=list(symbol_ids), intent_id=intent_id, developer=developer, repo=repo
        )
        return wire.decision(answer)

    def decisions(self, repo: str, symbol_id: str, include_superseded: bool = False) -> list[Decision]:
        answer = self._get("/decisions", repo=repo, symbol=symbol_id, include_superseded=include_superseded)
        return [wire.decision(d) for d in answer["decisions"]]

    def note(self, intent_id: int, text: str, kind: str = "progress", developer: str = "") -> Note:
        return wire.note(self._post(f"/intents/{int(intent_id)}/notes", text=text, kind=kind, developer=developer))

    def notes(self, intent_id: int) -> list[Note]:
        return [wire.note(n) for n in self._get(f"/intents/{int(intent_id)}/notes")["notes"]]

    def handoff(self, intent_id: int, text: str, developer: str = "") -> Note:
        return wire.note(self._post(f"/intents/{int(intent_id)}/handoff", text=text, developer=developer))

    def resume(self, intent_id: int, developer: str, agent: str = "", session_id: str = "") -> Resume:
        answer = self._post(
            f"/intents/{int(intent_id)}/resume", developer=developer, agent=agent, session_id=session_id
        )
        return wire.resume(answer)

    # -- warnings and queries ---------------------------------------------------------------------

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
        return find_conflicts(claims, graph, sorted({s for s in symbol_ids if s}), hops, paths)

    def mark_warned(self, agent: str, session_id: str, key: str) -> bool:
        return bool(self._post("/warnings", agent=agent, session_id=session_id, key=key)["first"])

    def warned(self, agent: str, session_id: str, key: str) -> bool:
        return bool(self._get("/warnings", agent=agent, session_id=session_id, key=key)["warned"])

    def who_knows(self, graph: Graph, repo: str, symbol_id: str, hops: int = 1) -> list[Expert]:
        distance = distances(graph, symbol_id, hops)
        found = self._ask("POST", "/involvement", {"repo": repo, "symbols": sorted(distance)})["involvement"]
        return rank_experts(distance, [(i["kind"], i["developer"], i["symbol"]) for i in found])

    def why(self, repo: str, symbol_id: str) -> Why:
        return wire.why(self._get("/why", repo=repo, symbol=symbol_id))

    def history(self, repo: str, symbol_ids: Iterable[str], limit: int = 10) -> History:
        return wire.history(self._get("/history", repo=repo, symbol=sorted(set(symbol_ids)), limit=limit))

    def task_board(self, repo: str, status: str | None = None) -> list[Card]:
        return [wire.card(c) for c in self._get("/board", repo=repo, status=status)["cards"]]
