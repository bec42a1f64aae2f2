"""`hivelore serve`: the team server (the `hivelore[server]` extra), and the first user's token."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from hivelore.cli.output import EXIT_BAD_INPUT, EXIT_FAILED, fail, reported_errors
from hivelore.server.limits import ACTIVE_MEMORIES, MAX_BODY_BYTES, REQUESTS_PER_MINUTE, Limits

DEFAULT_PORT = 8765
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

    from hivelore.server.postgres import accounts, migrate
    from hivelore.server.postgres.pool import check_url

    try:
        with reported_errors(), psycopg.connect(check_url(url), autocommit=True, connect_timeout=5) as conn:
            migrate.migrate(conn)
            if add_user:
                user = accounts.add_user(conn, add_user, email, github)
                print(accounts.create_token(conn, user.id, "rw", name="first token").token)
                return
    except psycopg.OperationalError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        fail(f"cannot reach the database ({first}): is PostgreSQL running, and is the URL right?", EXIT_FAILED)
    limits = Limits(
        requests_per_minute=requests_per_minute, active_memories=active_memories, max_body_bytes=max_body_kib * 1024
    )
    _run(url, host, port, limits, recovery_days, meaning)


def _run(url: str, host: str, port: int, limits: Limits, recovery_days: float, meaning: bool) -> None:
    import uvicorn

    from hivelore.server import logs
    from hivelore.server.app import Settings, create_app

    logs.configure()
    app = create_app(Settings(database_url=url, limits=limits, recovery_days=recovery_days, meaning=meaning))
    uvicorn.run(app, host=host, port=port, access_log=False, log_config=None)
