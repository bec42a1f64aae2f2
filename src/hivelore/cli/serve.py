"""`hivelore serve`: the team server (the `hivelore[server]` extra), and the first user's token."""

from __future__ import annotations

import logging
import os
import signal
import threading
from typing import TYPE_CHECKING, Annotated

import typer

from hivelore.cli.output import EXIT_BAD_INPUT, EXIT_FAILED, fail, reported_errors
from hivelore.server.limits import ACTIVE_MEMORIES, MAX_BODY_BYTES, REQUESTS_PER_MINUTE, Limits

if TYPE_CHECKING:
    import psycopg

DEFAULT_PORT = 8765
# Waits between connection attempts while PostgreSQL does not answer at start: a database started with
# the server (one compose file, one boot) is usually up within seconds; one that is not, is checked twice
# a minute without filling the log.
RETRY_WAITS_S = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0)
DbOption = Annotated[
    str | None,
    typer.Option("--db", help="postgresql://user@host:5432/dbname (default: $HIVELORE_DATABASE_URL)."),
]


def _server_modules() -> None:
    try:
        import fastapi  # noqa: F401
        import psycopg  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        fail(f"the team server needs the server extra ({exc.name} is missing): pip install 'hivelore[server]'", 1)


def serve(
    db: DbOption = None,
    host: Annotated[str, typer.Option(help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="The port to listen on.")] = DEFAULT_PORT,
    requests_per_minute: Annotated[
        int, typer.Option(min=1, help="Requests a minute per token; more get 429 with Retry-After.")
    ] = REQUESTS_PER_MINUTE,
    active_memories: Annotated[
        int, typer.Option(min=1, help="Active memories an account may hold (archived ones do not count).")
    ] = ACTIVE_MEMORIES,
    max_body_kib: Annotated[
        int, typer.Option(min=1, help="The largest request body, in KiB; a larger one gets 413.")
    ] = MAX_BODY_BYTES // 1024,
    recovery_days: Annotated[
        float, typer.Option(min=0, help="Days deleted data (DELETE /v1/me/data) may be restored before it is purged.")
    ] = 7.0,
    meaning: Annotated[
        bool,
        typer.Option(
            "--meaning/--no-meaning",
            help="Rank searches by meaning too, when the semantic extra is installed (the model: ~1 s, ~200 MB).",
        ),
    ] = True,
    add_user: Annotated[
        str | None, typer.Option("--add-user", help="Create this user, print their first hl_rw_ token, and exit.")
    ] = None,
    email: Annotated[str | None, typer.Option(help="With --add-user: the user's email address.")] = None,
    github: Annotated[str | None, typer.Option(help="With --add-user: the user's GitHub handle.")] = None,
) -> None:
    """Run the team server on PostgreSQL: migrate the database, then serve the HTTP API (docs/server.md)."""
    _server_modules()
    url = db or os.environ.get("HIVELORE_DATABASE_URL")
    if not url:
        fail("give the database with --db postgresql://… (or set HIVELORE_DATABASE_URL)", EXIT_BAD_INPUT)
    import psycopg

    from hivelore.server import logs
    from hivelore.server.postgres import accounts, migrate
    from hivelore.server.postgres.pool import check_url

    with reported_errors():
        check_url(url)
    logs.configure()
    try:
        with reported_errors(), _connected(url, wait=not add_user) as conn:
            migrate.migrate(conn)
            if add_user:
                user = accounts.add_user(conn, add_user, email, github)
                print(accounts.create_token(conn, user.id, "rw", name="first token").token)
                return
    except psycopg.OperationalError as exc:  # it went away while migrating
        fail(f"the database stopped answering ({_first_line(exc)}): start serve again once it is up", EXIT_FAILED)
    limits = Limits(
        requests_per_minute=requests_per_minute, active_memories=active_memories, max_body_bytes=max_body_kib * 1024
    )
    _run(url, host, port, limits, recovery_days, meaning)


def _connected(url: str, wait: bool) -> psycopg.Connection:
    """A connection to the database, once PostgreSQL answers. The server waits for it (a log line per
    attempt, the waits growing to RETRY_WAITS_S's last) rather than exit, as a database started with it
    may still be coming up; SIGTERM or SIGINT meanwhile ends it with exit 0. `--add-user` (a command a
    person runs, who can see the error) does not wait."""
    import psycopg

    log = logging.getLogger("hivelore.server")
    stop = threading.Event()
    handlers = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        attempt = 0
        while True:
            try:
                return psycopg.connect(url, autocommit=True, connect_timeout=5)
            except psycopg.OperationalError as exc:
                reason = _first_line(exc)
            if not wait:
                fail(f"cannot reach the database ({reason}): is PostgreSQL running, and is the URL right?", EXIT_FAILED)
            pause, attempt = RETRY_WAITS_S[min(attempt, len(RETRY_WAITS_S) - 1)], attempt + 1
            log.warning(_waiting_line(url, reason, pause))
            if stop.wait(pause):
                log.info("stopped before PostgreSQL answered")
                raise typer.Exit(0)
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def _waiting_line(url: str, reason: str, pause: float) -> str:
    """One sentence for the log: where PostgreSQL was looked for, what it said, and what to do."""
    from psycopg.conninfo import conninfo_to_dict

    params = conninfo_to_dict(url)
    where = f"{params.get('host') or 'localhost'}:{params.get('port') or 5432}"
    # "FATAL:" is PostgreSQL's own refusal (a wrong database, role or password); anything else means
    # nothing answered at that address
    state = "refuses the connection" if "FATAL:" in reason else "is not answering"
    return f"PostgreSQL at {where} {state} ({reason}); retrying in {pause:g} s — start it or fix --db"


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _run(url: str, host: str, port: int, limits: Limits, recovery_days: float, meaning: bool) -> None:
    import uvicorn

    from hivelore.server.app import Settings, create_app

    app = create_app(Settings(database_url=url, limits=limits, recovery_days=recovery_days, meaning=meaning))
    uvicorn.run(app, host=host, port=port, access_log=False, log_config=None)
