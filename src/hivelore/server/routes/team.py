"""The team model on the team server (`/v1/team…`): tasks, sessions, claims, changes, test attempts,
decisions, notes, handoff and resume, warnings, and the queries a client answers `who_knows`, `why`,
`history` and the task board from — `TeamStore`'s methods over HTTP, for `RemoteTeam` (remote/team.py).

Every route finds the organisation's team the request reaches and checks the caller's token and role
there (server/team.py), then calls `PostgresTeam`: the rules are the ones a machine runs. What needs
the code graph (conflicts, who_knows's distances, turning file claims into symbols) is computed by the
client, which holds the graph, over what these routes answer. `at` is the client's time of the call
(seconds since the epoch). Writes sent with an `Idempotency-Key` are applied once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.responses import JSONResponse
from psycopg_pool import ConnectionPool
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from hivelore.errors import BadInput
from hivelore.server import auth
from hivelore.server import team as access
from hivelore.server.postgres import idempotency
from hivelore.server.postgres import team as postgres
from hivelore.server.postgres.teamwatch import TeamWatch
from hivelore.server.routes.dependencies import Caller, Conn, caller
from hivelore.team import wire
from hivelore.team.model import IDLE_DAYS, Claim, NoSuchIntent
from hivelore.team.testruns import TestRun

router = APIRouter(prefix="/v1/team", tags=["team"])

MAX_SYMBOLS = 10_000  # per request
Time = Annotated[float | None, Field(default=None, allow_inf_nan=False, description="the client's time of the call")]
AtQuery = Annotated[float | None, Query(allow_inf_nan=False, description="the client's time of the call")]
Symbols = Annotated[list[str], Field(default_factory=list, max_length=MAX_SYMBOLS)]
MAX_QUERY_SYMBOLS = 100  # a URL is short: more symbols go in a body
SymbolsQuery = Annotated[list[str], Query(alias="symbol", max_length=MAX_QUERY_SYMBOLS)]
MAX_QUERY_REPOS = 100
ReposQuery = Annotated[list[str], Query(alias="repo", min_length=1, max_length=MAX_QUERY_REPOS)]
IdempotencyKey = Annotated[str | None, Header(description="a write retried with the same key is applied once")]
REPLICA_DAYS = 30.0  # how far back the failures a hook server keeps go
REPLICA_FAILURES = 200  # per repository: the latest, so that the replica stays small
MAX_WAIT_S = 10.0  # of a replica request that waits for a change
RECHECK_S = 0.25  # how often a waiting replica request looks again while this replica hears no changes
Wait = Annotated[float, Query(ge=0, le=MAX_WAIT_S, allow_inf_nan=False, description="seconds to wait for a change")]


class SessionIn(BaseModel):
    agent: str
    session_id: str
    developer: str
    repo: str
    first_prompt: str = ""
    at: Time


class IntentIn(BaseModel):
    developer: str
    repo: str
    title: str
    at: Time


class AtIn(BaseModel):
    at: Time


class SymbolsIn(BaseModel):
    symbols: Symbols
    at: Time


class RunIn(BaseModel):
    runner: str
    outcome: str
    failed: list[str] = Field(default_factory=list, max_length=MAX_SYMBOLS)
    errors: list[str] = Field(default_factory=list, max_length=MAX_SYMBOLS)
    passed: int | None = None
    skipped: int | None = None


class AttemptIn(BaseModel):
    command: str
    run: RunIn
    at: Time


class NoteIn(BaseModel):
    text: str
    kind: str = "progress"
    developer: str = ""
    at: Time


class HandoffIn(BaseModel):
    text: str
    developer: str = ""
    at: Time


class ResumeIn(BaseModel):
    developer: str
    agent: str = ""
    session_id: str = ""
    at: Time


class DecisionIn(BaseModel):
    text: str
    symbols: Symbols
    intent_id: int | None = None
    developer: str = ""
    repo: str = ""
    at: Time


class FileClaim(BaseModel):
    intent_id: int
    symbol: str


class ClaimIn(FileClaim):
    developer: str
    ts: float = Field(allow_inf_nan=False)


class FileClaimsIn(BaseModel):
    repo: str
    replaced: list[FileClaim] = Field(max_length=MAX_SYMBOLS)
    claims: list[ClaimIn] = Field(max_length=MAX_SYMBOLS)


class InvolvementIn(BaseModel):
    repo: str
    symbols: Symbols


class WarningIn(BaseModel):
    agent: str
    session_id: str
    key: str
    at: Time


def _once(
    request: Request, who: auth.Caller, conn: Conn, body: BaseModel, key: str | None, run: Callable[[], object]
) -> JSONResponse:
    """The answer of a change, made once per Idempotency-Key (see routes/memories.py)."""
    print_ = idempotency.fingerprint("POST", request.url.path, body.model_dump(mode="json"))
    answer = idempotency.once(conn, who.user_id, key, print_, lambda: {"answer": wire.encode(run())})
    return JSONResponse(answer["answer"])


# -- tasks and sessions ---------------------------------------------------------------------------


@router.post("/sessions")
def intent_for_session(
    body: SessionIn, request: Request, who: Caller, conn: Conn, idempotency_key: IdempotencyKey = None
) -> JSONResponse:
    """The session's task in the repository; the first call creates it, titled by the first prompt."""
    found = access.for_repo(conn, who, body.repo, access.WRITE, body.at)
    return _once(
        request, who, conn, body, idempotency_key,
        lambda: found.intent_for_session(body.agent, body.session_id, body.developer, body.repo, body.first_prompt),
    )  # fmt: skip


@router.get("/sessions")
def session_intent(agent: str, session_id: str, repo: str, who: Caller, conn: Conn) -> JSONResponse:
    """The session's task in the repository (null when it has none yet)."""
    found = access.for_repo(conn, who, repo, access.READ, None).session_intent(agent, session_id, repo)
    return JSONResponse({"intent": wire.encode(found)})


@router.post("/intents")
def create_intent(
    body: IntentIn, request: Request, who: Caller, conn: Conn, idempotency_key: IdempotencyKey = None
) -> JSONResponse:
    found = access.for_repo(conn, who, body.repo, access.WRITE, body.at)
    return _once(
        request, who, conn, body, idempotency_key, lambda: found.create_intent(body.developer, body.repo, body.title)
    )


@router.get("/intents")
def intents(repo: str, who: Caller, conn: Conn, status: str | None = None) -> JSONResponse:
    """The repository's tasks (with a status: only those), most recently active first."""
    found = access.for_repo(conn, who, repo, access.READ, None).intents(repo, status)
    return JSONResponse({"intents": wire.encode(found)})


@router.get("/intents/{intent_id}")
def intent(intent_id: int, who: Caller, conn: Conn) -> JSONResponse:
    return JSONResponse(wire.encode(access.for_intent(conn, who, intent_id, access.READ, None).intent(intent_id)))


@router.post("/intents/{intent_id}/done")
def done(
    intent_id: int, body: AtIn, request: Request, who: Caller, conn: Conn, idempotency_key: IdempotencyKey = None
) -> JSONResponse:
    found = access.for_intent(conn, who, intent_id, access.WRITE, body.at)
    return _once(request, who, conn, body, idempotency_key, lambda: found.done(intent_id))


# -- claims and changes ---------------------------------------------------------------------------


@router.post("/intents/{intent_id}/claims")
def claim(
    intent_id: int, body: SymbolsIn, request: Request, who: Caller, conn: Conn, idempotency_key: IdempotencyKey = None
) -> JSONResponse:
    """Claim symbols (or file claims) for the task; `new`: how many were not claimed yet."""
    found = access.for_intent(conn, who, intent_id, access.WRITE, body.at)
    return _once(request, who, conn, body, idempotency_key, lambda: {"new": found.claim(intent_id, body.symbols)})


@router.get("/intents/{intent_id}/claims")
def claims(intent_id: int, who: Caller, conn: Conn) -> JSONResponse:
    found = access.for_intent(conn, who, intent_id, access.READ, None).claims(intent_id)
    return JSONResponse({"claims": wire.encode(found)})


@router.get("/claims")
def active_claims(
    repos: ReposQuery, who: Caller, conn: Conn, idle_days: float = IDLE_DAYS, other_than: str = "", at: AtQuery = None
) -> JSONResponse:
    """The claims of the repositories' active tasks that are not idle (with `other_than`: of tasks
    someone else owns), as the pre-edit check sees them; several repositories in one request (a hook
    server's replica asks for every shared one at once), each claim's task naming its repository."""
    found = [
        claim
        for repo in dict.fromkeys(repos)
        for claim in access.for_repo(conn, who, repo, access.READ, at).active_claims(repo, idle_days, other_than)
    ]
    return JSONResponse({"claims": [{"symbol": s, "intent": wire.encode(i), "developer": d} for s, i, d in found]})


@router.get("/replica")
async def replica(
    request: Request,
    repos: ReposQuery,
    wait: Wait = 0.0,
    at: AtQuery = None,
    if_none_match: Annotated[str | None, Header(description="the ETag of the answer the caller holds")] = None,
) -> Response:
    """What a hook server keeps of the repositories' team so that its hooks never wait on the
    network: every claim of their active tasks that are not idle (each task naming its repository),
    and per repository its failed attempts of the last 30 days (the latest 200, with what resolved
    them); `refused`: a repository the caller
    may not read, with why (one alone is refused with its status).

    Its ETag is its content's. Sent with `If-None-Match` of the answer the caller holds, it is 304
    when nothing changed; with `wait` too, the request is held until something does or `wait`
    seconds pass — it looks again when PostgreSQL tells of a change to the team's rows (every 0.25 s
    while this replica cannot hear them), so a claim made elsewhere arrives at once, and a caller
    that asks again as soon as it is answered makes one request every `wait` seconds. What no
    notification tells (a task going idle, a role taken away) is seen by the next request, at most
    `wait` (10 s) later. No connection is held while it waits, and the request counts once against
    the token's rate limit."""
    pool: ConnectionPool = request.app.state.pool
    watch: TeamWatch = request.app.state.teamwatch
    asked, started = list(dict.fromkeys(repos)), time.monotonic()
    who: auth.Caller | None = None
    while True:
        changed = watch.changed()
        moment = None if at is None else at + time.monotonic() - started
        who, body = await run_in_threadpool(_replica_answer, request, pool, who, asked, moment)
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        left = wait - (time.monotonic() - started)
        if etag != if_none_match or left <= 0:
            break
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), left if watch.listening else min(left, RECHECK_S))
        if await request.is_disconnected():
            break
    if etag == if_none_match:
        return Response(status_code=304, headers={"ETag": etag})
    return Response(body, media_type="application/json", headers={"ETag": etag})


def _replica_answer(
    request: Request, pool: ConnectionPool, who: auth.Caller | None, repos: list[str], at: float | None
) -> tuple[auth.Caller, bytes]:
    """The caller (found, and counted, on the first look only) and the replica's answer as JSON."""
    with pool.connection() as conn:
        who = who or caller(request, conn)
        who.may_read()  # about the token: refused whole, not per repository
        claims: list[dict[str, object]] = []
        failures: dict[str, object] = {}
        refused: dict[str, str] = {}
        for repo in repos:
            try:
                team = access.for_repo(conn, who, repo, access.READ, at)
            except (auth.Forbidden, BadInput) as exc:
                if len(repos) == 1:
                    raise
                refused[repo] = exc.sentence()
                continue
            claims += [{"symbol": s, "intent": wire.encode(i), "developer": d} for s, i, d in team.active_claims(repo)]
            failures[repo] = wire.encode(team.recent_failures(repo, REPLICA_DAYS, REPLICA_FAILURES))
    answer = {"claims": claims, "failures": failures, "refused": refused}
    return who, json.dumps(answer, sort_keys=True, separators=(",", ":")).encode()


@router.get("/file-claims")
def file_claims(repo: str, who: Caller, conn: Conn, intent_id: int | None = None) -> JSONResponse:
    """The repository's file claims (or one task's), for a client whose code graph now exists."""
    found = access.for_repo(conn, who, repo, access.READ, None).file_claims(repo, intent_id)
    return JSONResponse({"claims": wire.encode([Claim(*row) for row in found])})


@router.post("/file-claims")
def replace_file_claims(
    body: FileClaimsIn, request: Request, who: Caller, conn: Conn, idempotency_key: IdempotencyKey = None
) -> JSONResponse:
    """File claims replaced by the symbols they stand for; `replaced`: how many were still there."""
    found = access.for_repo(conn, who, body.repo, access.WRITE, None)
    replaced = [(c.intent_id, c.symbol) for c in body.replaced]
    added = [(c.intent_id, c.symbol, c.developer, c.ts) for c in body.claims]
    return _once(
        request, who, conn, body, idempotency_key,
        lambda: {"replaced": found.replace_file_claims(body.repo, replaced, added)},
    )  # fmt: skip


@router.post("/intents/{intent_id}/changes")
def record_change(
    intent_id: int, body: SymbolsIn, request: Request, who: Caller, conn: Conn, idempotency_key: IdempotencyKey = None
) -> JSONResponse:
    """Symbols an edit touched; the task's next test run is linked to them."""
    found = access.for_intent(conn, who, intent_id, access.WRITE, body.at)

    def run() -> dict[str, object]:
        found.record_change(intent_id, body.symbols)
        return {}

    return _once(request, who, conn, body, idempotency_key, run)


# -- attempts, decisions, notes -------------------------------------------------------------------


@router.post("/intents/{intent_id}/attempts")
def record_attempt(
    intent_id: int, body: AttemptIn, request: Request, who: Caller, conn: Conn, idempotency_key: IdempotencyKey = None
) -> JSONResponse:
    """A test run of the task: deduplicated, linked to its changes, resolving what it fixed."""
    found = access.for_intent(conn, who, intent_id, access.WRITE, body.at)
    run = TestRun(
        body.run.runner, body.run.outcome, tuple(body.run.failed), tuple(body.run.errors), body.run.passed,
        body.run.skipped,
    )  # fmt: skip
    return _once(request, who, conn, body, idempotency_key, lambda: found.record_attempt(intent_id, body.command, run))


@router.get("/intents/{intent_id}/attempts")
def attempts(intent_id: int, who: Caller, conn: Conn) -> JSONResponse:
    found = access.for_intent(conn, who, intent_id, access.READ, None).attempts(intent_id)
    return JSONResponse({"attempts": wire.encode(found)})


@router.post("/decisions")
def decide(
    body: DecisionIn, request: Request, who: Caller, conn: Conn, idempotency_key: IdempotencyKey = None
) -> JSONResponse:
    """A decision about symbols, in a task (`intent_id`) or by a developer in a repository; it
    supersedes the decisions current on those symbols."""
    if body.intent_id is None:
        found = access.for_repo(conn, who, body.repo, access.WRITE, body.at)
    else:
        found = access.for_intent(conn, who, body.intent_id, access.WRITE, body.at)
        if body.repo and access.for_repo(conn, who, body.repo, access.WRITE, body.at).org_id != found.org_id:
            raise NoSuchIntent(f"no task {body.intent_id} in {body.repo}")
    return _once(
        request, who, conn, body, idempotency_key,
        lambda: found.decide(
            body.text, body.symbols, intent_id=body.intent_id, developer=body.developer, repo=body.repo
        ),
    )  # fmt: skip


@router.get("/decisions")
def decisions(repo: str, symbol: str, who: Caller, conn: Conn, include_superseded: bool = False) -> JSONResponse:
    """Decisions on a symbol, newest first: the current ones (and the superseded ones, if asked)."""
    found = access.for_repo(conn, who, repo, access.READ, None).decisions(repo, symbol, include_superseded)
    return JSONResponse({"decisions": wire.encode(found)})


@router.post("/intents/{intent_id}/notes")
def note(
    intent_id: int, body: NoteIn, request: Request, who: Caller, conn: Conn, idempotency_key: IdempotencyKey = None
) -> JSONResponse:
    found = access.for_intent(conn, who, intent_id, access.WRITE, body.at)
    return _once(
        request, who, conn, body, idempotency_key, lambda: found.note(intent_id, body.text, body.kind, body.developer)
    )


@router.get("/intents/{intent_id}/notes")
def notes(intent_id: int, who: Caller, conn: Conn) -> JSONResponse:
    found = access.for_intent(conn, who, intent_id, access.READ, None).notes(intent_id)
    return JSONResponse({"notes": wire.encode(found)})


@router.post("/intents/{intent_id}/handoff")
def handoff(
    intent_id: int, body: HandoffIn, request: Request, who: Caller, conn: Conn, idempotency_key: IdempotencyKey = None
) -> JSONResponse:
    """Leave a handoff note and mark the task handed off (its claims stop warning others)."""
    found = access.for_intent(conn, who, intent_id, access.WRITE, body.at)
    return _once(request, who, conn, body, idempotency_key, lambda: found.handoff(intent_id, body.text, body.developer))


@router.post("/intents/{intent_id}/resume")
def resume(
    intent_id: int, body: ResumeIn, request: Request, who: Caller, conn: Conn, idempotency_key: IdempotencyKey = None
) -> JSONResponse:
    """Take the task over (owner, active, the session's) and get what it holds."""
    found = access.for_intent(conn, who, intent_id, access.WRITE, body.at)
    return _once(
        request, who, conn, body, idempotency_key,
        lambda: found.resume(intent_id, body.developer, body.agent, body.session_id),
    )  # fmt: skip


# -- warnings and queries -------------------------------------------------------------------------


@router.post("/warnings")
def mark_warned(
    body: WarningIn, request: Request, who: Caller, conn: Conn, idempotency_key: IdempotencyKey = None
) -> JSONResponse:
    """Remember a warning shown to one of the caller's sessions; `first`: show it."""
    who.may_write()
    at = access.clock_at(body.at)()
    return _once(
        request, who, conn, body, idempotency_key,
        lambda: {"first": postgres.mark_warned(conn, who.user_id, body.agent, body.session_id, body.key, at)},
    )  # fmt: skip


@router.get("/warnings")
def warned(agent: str, session_id: str, key: str, who: Caller, conn: Conn) -> JSONResponse:
    who.may_read()
    return JSONResponse({"warned": postgres.warned(conn, who.user_id, agent, session_id, key)})


@router.post("/involvement")
def involvement(body: InvolvementIn, who: Caller, conn: Conn) -> JSONResponse:
    """Every claim, attempt and decision on the symbols, by whom: what who_knows ranks (a read, in a
    body: a symbol's neighbourhood can be longer than a URL)."""
    found = access.for_repo(conn, who, body.repo, access.READ, None).involvement(body.repo, sorted(set(body.symbols)))
    return JSONResponse({"involvement": [{"kind": k, "developer": d, "symbol": s} for k, d, s in found]})


@router.get("/why")
def why(repo: str, symbol: str, who: Caller, conn: Conn) -> JSONResponse:
    """A symbol's current decisions, the superseded ones, its attempts and its people."""
    return JSONResponse(wire.encode(access.for_repo(conn, who, repo, access.READ, None).why(repo, symbol)))


@router.get("/history")
def history(repo: str, who: Caller, conn: Conn, symbols: SymbolsQuery, limit: int = 10) -> JSONResponse:
    """The latest failed attempts on the symbols (`limit` -1: all) and their active decisions."""
    found = access.for_repo(conn, who, repo, access.READ, None).history(repo, symbols, limit)
    return JSONResponse(wire.encode(found))


@router.get("/board")
def task_board(repo: str, who: Caller, conn: Conn, status: str | None = None) -> JSONResponse:
    """The repository's tasks (active, handed off, done; latest first) with what they hold."""
    found = access.for_repo(conn, who, repo, access.READ, None).task_board(repo, status)
    return JSONResponse({"cards": wire.encode(found)})
