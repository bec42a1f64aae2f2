"""The connection pool of one server process. Every request borrows a connection for its duration;
nothing else about a request is kept in the process, so any replica can serve the next one."""

from __future__ import annotations

import select

import psycopg
from psycopg_pool import ConnectionPool

from hivelore.errors import BadInput

CONNECT_TIMEOUT_S = 5
# No parallel workers for a request's statements: a search's count over a large organisation was
# planned with two, which took ~1.7 times the CPU of one process for a shorter wait on an idle
# machine. A server answering many requests at once has no idle core to lend, so it spends less.
SESSION_OPTIONS = "-c max_parallel_workers_per_gather=0"


def check_url(url: str) -> str:
    """The database URL, or a sentence saying why it cannot be one."""
    if not url.startswith(("postgresql://", "postgres://")):
        raise BadInput(f"{url!r} is not a PostgreSQL URL: give one like postgresql://user@host:5432/dbname")
    try:
        psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise BadInput(f"the database URL cannot be read: {exc}") from None
    return url


def check_idle(conn: psycopg.Connection) -> None:
    """Raise if a connection taken from the pool is broken, as `ConnectionPool.check_connection`
    does, without its round trip on every request: an idle connection's socket has nothing to read
    unless the server wrote to it — closed it (a restart, an administrator's kill), or sent a notice.
    Only then is the server asked."""
    if conn.closed or select.select([conn.fileno()], [], [], 0)[0]:
        ConnectionPool.check_connection(conn)


def open_pool(url: str, size: int = 10) -> ConnectionPool:
    """A pool that opens in the background: the server starts (and /readyz says not ready) while
    PostgreSQL is still coming up, and it reconnects by itself after PostgreSQL restarts."""
    pool = ConnectionPool(
        check_url(url),
        min_size=1,
        max_size=size,
        kwargs={"connect_timeout": CONNECT_TIMEOUT_S, "autocommit": True, "options": SESSION_OPTIONS},
        check=check_idle,
        timeout=CONNECT_TIMEOUT_S,
        open=False,
        name="hivelore",
    )
    pool.open(wait=False)
    return pool
