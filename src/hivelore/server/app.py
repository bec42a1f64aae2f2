"""The team server's composition root: `create_app(settings)` puts the pool, the migrations, the
error table, the request log and the routes together. Nothing about a request outlives it in the
process, so several replicas on one PostgreSQL serve one team."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from psycopg_pool import PoolTimeout
from starlette.exceptions import HTTPException

from hivelore import __version__, errors
from hivelore.server import auth, dashboard
from hivelore.server.limits import Limits, RateLimited
from hivelore.server.logs import ASGIApp, Receive, RequestLog, Scope, Send, request_id
from hivelore.server.postgres import erasure, migrate
from hivelore.server.postgres.pool import CONNECT_TIMEOUT_S, open_pool
from hivelore.server.postgres.teamwatch import TeamWatch
from hivelore.server.postgres.vectors import Meaning
from hivelore.server.routes import accounts, data, graph, health, memories, team

log = logging.getLogger("hivelore.server")

# The codes of the answers no HiveloreError stands for.
INVALID, DATABASE_UNAVAILABLE, SERVER_BUSY = "bad_input", "database_unavailable", "busy"
HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}
DATABASE_DOWN = "the database cannot be reached: try again in a moment"
BUSY = "the server is busy: try again in a moment"
COLLIDED = "this request met another changing the same memories and was undone: send it again"
ORPHANED = (
    "what this request writes for (an account, an organisation or a task) was deleted while it ran,"
    " and nothing of it was kept"
)
PURGE_EVERY_S = 3600.0  # how often a replica purges deleted data past its recovery window


@dataclass(frozen=True)
class Settings:
    database_url: str
    limits: Limits = field(default_factory=Limits)
    pool_size: int = 10
    recovery_days: float = 7.0  # how long deleted data may be restored (DELETE /v1/me/data)
    meaning: bool = True  # recall by meaning when the semantic extra is installed (postgres/vectors.py)


def create_app(settings: Settings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        with psycopg.connect(settings.database_url, autocommit=True) as conn:
            applied = migrate.migrate(conn)
            erasure.purge(conn)  # deleted data past its recovery window, left while no replica ran
        if applied:
            log.info("migrated", extra={"fields": {"versions": [m.version for m in applied]}})
        app.state.pool = open_pool(settings.database_url, settings.pool_size)
        app.state.meaning = Meaning(settings.meaning)
        app.state.meaning.start(app.state.pool.connection)  # in a thread: the server serves meanwhile, by BM25
        app.state.slots = asyncio.Semaphore(settings.pool_size)  # made here: it belongs to the serving loop
        app.state.teamwatch = TeamWatch(settings.database_url)
        app.state.teamwatch.start(asyncio.get_running_loop())
        purging = asyncio.create_task(_purge_every(app, PURGE_EVERY_S))
        try:
            yield
        finally:
            purging.cancel()
            app.state.teamwatch.stop()
            app.state.pool.close()

    app = FastAPI(
        title="hivelore team server",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,  # the interactive pages load their scripts from a CDN; /openapi.json is enough
        redoc_url=None,
        description="Memory for AI coding agents, shared by a team. Every error is JSON with one sentence.",
    )
    app.state.limits = settings.limits
    app.state.recovery_days = settings.recovery_days
    app.add_middleware(Admission)  # inside the request log, whose time then includes the wait
    app.add_middleware(RequestLog, max_body_bytes=settings.limits.max_body_bytes)
    app.include_router(health.router)
    app.include_router(accounts.router)
    app.include_router(memories.router)
    app.include_router(data.router)
    app.include_router(team.router)
    app.include_router(graph.router)
    dashboard.mount(app)  # the web pages at /dash, behind a session (server/dashboard.py)
    _add_error_handlers(app)
    return app


async def _purge_every(app: FastAPI, period_s: float) -> None:
    """Purge deleted data past its window while the replica serves (every replica does: a purge that
    finds nothing due costs one indexed query)."""
    while True:
        await asyncio.sleep(period_s)
        try:
            await asyncio.to_thread(_purge, app)
        except (psycopg.Error, PoolTimeout) as exc:  # the database is down: the next round tries again
            log.warning("purge failed", extra={"fields": {"error": str(exc).splitlines()[0] if str(exc) else ""}})


def _purge(app: FastAPI) -> None:
    with app.state.pool.connection() as conn:
        erasure.purge(conn)
    app.state.meaning.catch_up(app.state.pool.connection)  # rows a replica without the model wrote


class Admission:
    """ASGI middleware: as many requests at once as the pool has connections; the others wait here,
    holding no thread, at most as long as the pool would make them wait, then get a 503.

    The routes are sync: FastAPI runs each, and the dependency that borrows its connection, in a
    worker thread (40 at most). Let in freely, 40 requests could all hold a thread while waiting for
    a connection, and the requests holding the connections then wait for a thread to go on with: no
    request advances until the pool's wait times out, and every waiting one gets a 503."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        slots = getattr(scope["app"].state, "slots", None) if scope["type"] == "http" else None
        if slots is None or scope["path"] == "/healthz":  # the liveness probe needs no connection
            await self.app(scope, receive, send)
            return
        try:
            await asyncio.wait_for(slots.acquire(), CONNECT_TIMEOUT_S)
        except TimeoutError:
            rid = scope.get("state", {}).get("request_id", "-")
            body = {"error": f"{BUSY}.", "code": SERVER_BUSY, "request_id": rid}
            busy = JSONResponse(body, status_code=503, headers={"Retry-After": "5"})
            await busy(scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            slots.release()


def _error(
    request: Request, status: int, code: str, sentence: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    body = {"error": sentence, "code": code, "request_id": request_id(request)}
    return JSONResponse(body, status_code=status, headers=headers)


def _reported(request: Request, error: errors.HiveloreError, headers: dict[str, str] | None = None) -> JSONResponse:
    status, code = errors.answer_of(error)
    return _error(request, status, code, error.sentence(), headers)


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(errors.HiveloreError)
    async def refused(request: Request, exc: errors.HiveloreError) -> JSONResponse:
        headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, RateLimited) else None
        if isinstance(exc, auth.Unauthenticated):
            headers = {"WWW-Authenticate": "Bearer"}
        return _reported(request, exc, headers)

    @app.exception_handler(ValueError)
    @app.exception_handler(LookupError)
    async def meant(request: Request, exc: Exception) -> JSONResponse:
        """A plain ValueError or LookupError of the service's rules is what the user gave, or asked for:
        answered here, as the catch-all below runs after the response is started."""
        reported = errors.reported(exc)
        if reported is None:
            return await failed(request, exc)
        return _reported(request, reported)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(request, 400, INVALID, _validation_sentence(exc))

    @app.exception_handler(HTTPException)
    async def http(request: Request, exc: HTTPException) -> JSONResponse:
        sentence = exc.detail if isinstance(exc.detail, str) else "the request was refused"
        code = HTTP_CODES.get(exc.status_code, INVALID if exc.status_code < 500 else errors.HiveloreError.code)
        return _error(request, exc.status_code, code, sentence.rstrip(".") + ".", dict(exc.headers or {}))

    @app.exception_handler(psycopg.OperationalError)
    @app.exception_handler(PoolTimeout)
    async def database_down(request: Request, exc: Exception) -> JSONResponse:
        first = str(exc).splitlines()[0] if str(exc) else ""
        log.warning("database unavailable", extra={"fields": {"request_id": request_id(request), "error": first}})
        return _error(request, 503, DATABASE_UNAVAILABLE, f"{DATABASE_DOWN}.", {"Retry-After": "5"})

    @app.exception_handler(psycopg.errors.DeadlockDetected)
    @app.exception_handler(psycopg.errors.SerializationFailure)
    async def collided(request: Request, exc: Exception) -> JSONResponse:
        """A deadlock or a serialization failure: PostgreSQL ended this request's transaction for
        another's sake, and nothing of it was kept, so it may simply be sent again."""
        log.warning("transaction rolled back", extra={"fields": {"request_id": request_id(request), "error": str(exc)}})
        return _error(request, 503, SERVER_BUSY, f"{COLLIDED}.", {"Retry-After": "1"})

    @app.exception_handler(psycopg.errors.ForeignKeyViolation)
    async def orphaned(request: Request, exc: psycopg.errors.ForeignKeyViolation) -> JSONResponse:
        """A write let in before what it refers to was deleted (an account: postgres/erasure.py), and
        refused by PostgreSQL after: the request's rows would refer to nothing, so none is kept."""
        return _reported(request, errors.Conflict(ORPHANED))

    @app.exception_handler(psycopg.DataError)
    async def unstorable(request: Request, exc: psycopg.DataError) -> JSONResponse:
        reason = str(exc).strip().splitlines()[0].rstrip(".") if str(exc).strip() else "it is out of range"
        return _error(request, 400, INVALID, f"the request holds a value the database cannot store: {reason}.")

    @app.exception_handler(Exception)
    async def failed(request: Request, exc: Exception) -> JSONResponse:
        reported = errors.reported(exc)
        if reported is not None:
            return _reported(request, reported)
        log.error("unhandled error", exc_info=exc, extra={"fields": {"request_id": request_id(request)}})
        sentence = f"the server failed on this request; its log has the details (request {request_id(request)})."
        return _error(request, 500, errors.HiveloreError.code, sentence)


def _validation_sentence(exc: RequestValidationError) -> str:
    first = exc.errors()[0] if exc.errors() else {}
    where = ".".join(str(part) for part in first.get("loc", ()) if part != "body") or "the request"
    message = str(first.get("msg", "is not valid")).rstrip(".")
    return f"{where}: {message[0].lower() + message[1:] if message else 'is not valid'}."
