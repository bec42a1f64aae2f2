"""The dashboard on the team server: the one router (dashboard/routes.py) over the caller's memory in
PostgreSQL, behind a session, at `/dash`.

A browser logs in once with a token (`/dash/login`). The server keeps the session in PostgreSQL
(postgres/sessions.py), so every replica knows it, and the browser keeps only a random id in a cookie
(`HttpOnly`, `SameSite=Lax`, `Secure` when the request came over TLS). Each page then reads and
changes memory as that token, through the memory service the API uses (server/memories.py):

- its kind: `hl_ro_` reads only (its pages offer no change, and a change posted anyway is refused);
  an `hl_wo_` token cannot log in, as it cannot read;
- its scope allow-list: only the scopes it admits are listed, searched or shown;
- its user's roles: a viewer sees an organisation's memories, and is neither offered nor allowed to
  archive, restore, forget or commit them (the service's rule, CHANGE_ROLES).

The task board and the code map read the team of a repository an organisation of the caller's shares
(a chooser when there are several), and the code graph a checkout pushed (server/board.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from urllib.parse import urlencode

import psycopg
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from hivelore.dashboard import csrf
from hivelore.dashboard.routes import mounted_at, over_tls, read_form, render_page, router
from hivelore.memory.scope import Chain, parse
from hivelore.memory.service import MemoryService
from hivelore.memory.tier import Candidate, Tier
from hivelore.server import auth, limits
from hivelore.server.board import ServerTeam, shared_repos
from hivelore.server.memories import TeamMemories
from hivelore.server.postgres import accounts, sessions
from hivelore.server.postgres.vectors import Meaning

BASE = "/dash"
SESSION_COOKIE = "hivelore_session"
NOT_A_TOKEN = "that is not a hivelore token: paste one that starts with hl_rw_ or hl_ro_ (`hivelore token create`)"
OUT_OF_DATE = "this form is out of date or came from another site: reload the page and try again."
SIGN_IN_FIRST = "this needs a dashboard session: log in at /dash/login with your token, then ask again"


class SignInNeeded(Exception):
    """A page asked for without a live session: the browser is sent to the login page."""

    def __init__(self, ended: bool) -> None:
        super().__init__("log in first")
        self.ended = ended  # a session was presented, and has ended


class DashboardMemories(TeamMemories):
    """The caller's memory as the pages see it: the scopes the token admits, and changes only with a
    token that may write. Everything else is the API's service."""

    @classmethod
    def open(
        cls, conn: psycopg.Connection, caller: auth.Caller, quota: int, meaning: Meaning | None = None
    ) -> DashboardMemories:
        """Read from every scope the caller's spaces hold that the token admits, narrowest first (what
        the API reads when a client names no scopes)."""
        service = cls(conn, caller, [], quota, {"agent": "dashboard"}, meaning)
        readable = service.scopes_in_vault()
        service.chain = Chain(tuple(parse(s) for s in readable) or (parse("global"),), None)
        return service

    def scopes_for(self, scopes: Iterable[str] | None) -> list[str]:
        """As the service's, without the scopes the token does not admit; asking only for those is refused."""
        chosen = super().scopes_for(scopes)
        allowed = [s for s in chosen if self.caller.allows(s)]
        if scopes and not allowed:
            self.caller.may_use_scope(chosen[0])
        return allowed

    def scopes_in_vault(self) -> list[str]:
        readable = {s for s in self.tier.scopes() if self.caller.allows(s)}
        return self.scopes_for(readable) if readable else []

    def scopes_known(self) -> list[str]:
        return self.scopes_in_vault()

    def _copies(self, scope: str, key: str, tier: str | None) -> tuple[str, list[Candidate]]:
        self.caller.may_use_scope(str(parse(scope)))
        return super()._copies(scope, key, tier)

    def _check_change(self, action: str, tier: Tier, part: str) -> None:
        self.caller.may_write()
        super()._check_change(action, tier, part)


class ServerServices:
    """The services of the caller the session names (`signed_in` puts it on the request)."""

    @contextmanager
    def memory(self, request: Request) -> Iterator[MemoryService]:
        with request.app.state.pool.connection() as conn:
            state = request.app.state
            yield DashboardMemories.open(conn, request.state.caller, state.limits.active_memories, state.meaning)

    @contextmanager
    def coordination(self, request: Request) -> Iterator[ServerTeam]:
        with request.app.state.pool.connection() as conn:
            team = ServerTeam(conn, request.state.caller, request.query_params.get("repo", ""))
            try:
                yield team
            finally:
                team.close()

    def repos(self, request: Request) -> list[str]:
        with request.app.state.pool.connection() as conn:
            return shared_repos(conn, request.state.caller)


def signed_in(request: Request) -> None:
    """The guard of every page and action: the caller behind the session cookie, counted against the
    token's rate limit as an API request is; else to the login page."""
    session = request.cookies.get(SESSION_COOKIE)
    if not session:
        raise SignInNeeded(ended=False)
    with request.app.state.pool.connection() as conn:
        try:
            who = sessions.session_caller(conn, session)
        except auth.Unauthenticated:  # ended, logged out elsewhere, or its token revoked or expired
            raise SignInNeeded(ended=True) from None
        limits.count_request(conn, who.token_id, request.app.state.limits.requests_per_minute)
    request.state.caller = request.state.signed_in = who


def mount(app: FastAPI) -> None:
    """The dashboard's pages at /dash, behind the session; the login and logout beside them."""
    app.include_router(_login_router())
    app.include_router(router(ServerServices(), BASE, guard=[Depends(signed_in)]), include_in_schema=False)
    app.add_exception_handler(SignInNeeded, _to_login)


def _to_login(request: Request, exc: Exception) -> Response:
    if request.url.path.endswith(".json"):  # the code map's script: a redirect to a page is no answer
        return JSONResponse({"error": SIGN_IN_FIRST + "."}, status_code=401)
    wanted = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    asked = {"next": wanted if request.method == "GET" else f"{BASE}/memories"}
    if isinstance(exc, SignInNeeded) and exc.ended:
        asked["ended"] = "true"
    return RedirectResponse(f"{BASE}/login?{urlencode(asked)}", status_code=303)


def _login_router() -> APIRouter:
    routes = APIRouter(prefix=BASE, dependencies=[mounted_at(BASE)])
    routes.add_api_route("/login", _login_page, methods=["GET"], response_class=HTMLResponse, include_in_schema=False)
    routes.add_api_route("/login", _login, methods=["POST"], include_in_schema=False)
    routes.add_api_route("/logout", _logout, methods=["POST"], include_in_schema=False)
    return routes


def _next(wanted: str) -> str:
    """Where to go after logging in: a page of the dashboard, never another site (`//evil.example`)."""
    if wanted.startswith(f"{BASE}/") and not wanted.startswith("//") and "\\" not in wanted:
        return wanted
    return f"{BASE}/memories"


def _login_form(request: Request, code: int, message: str, wanted: str) -> HTMLResponse:
    hours = f"{sessions.SESSION_HOURS:g}"
    return render_page(request, "login.html", code=code, message=message, next=_next(wanted), hours=hours)


def _login_page(request: Request, next: str = "", ended: bool = False) -> HTMLResponse:
    return _login_form(request, 200, sessions.ENDED if ended else "", next)


async def _login(request: Request) -> Response:
    form = await read_form(request)
    wanted = form.get("next", "")
    if not csrf.valid(request.cookies.get(csrf.COOKIE), form.get(csrf.FIELD)):
        return _login_form(request, 403, OUT_OF_DATE, wanted)
    try:
        session = await run_in_threadpool(_open_session, request, form.get("token", "").strip())
    except auth.Unauthenticated as exc:
        return _login_form(request, 401, exc.sentence(), wanted)
    except auth.Forbidden as exc:
        return _login_form(request, 403, exc.sentence(), wanted)
    response = RedirectResponse(_next(wanted), status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        session,
        max_age=int(sessions.SESSION_HOURS * 3600),
        path=BASE,
        httponly=True,
        samesite="lax",
        secure=over_tls(request),
    )
    return response


def _open_session(request: Request, token: str) -> str:
    """A session for a live token that may read, replacing the browser's previous one."""
    try:
        auth.bearer(f"Bearer {token}")
    except auth.Unauthenticated:
        raise auth.Unauthenticated(NOT_A_TOKEN) from None
    with request.app.state.pool.connection() as conn:
        who = accounts.caller(conn, f"Bearer {token}")
        who.may_read()
        previous = request.cookies.get(SESSION_COOKIE)
        if previous:
            sessions.close_session(conn, previous)
        return sessions.open_session(conn, who.token_id)


async def _logout(request: Request) -> Response:
    form = await read_form(request)
    if not csrf.valid(request.cookies.get(csrf.COOKIE), form.get(csrf.FIELD)):
        return render_page(request, "problem.html", code=403, message=OUT_OF_DATE)
    session = request.cookies.get(SESSION_COOKIE)
    if session:
        await run_in_threadpool(_close_session, request, session)
    response = RedirectResponse(f"{BASE}/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path=BASE, httponly=True, samesite="lax", secure=over_tls(request))
    return response


def _close_session(request: Request, session: str) -> None:
    with request.app.state.pool.connection() as conn:
        sessions.close_session(conn, session)
