"""What every `/v1` route starts from: a connection borrowed from the pool for the request, and
the caller behind its token, counted against the token's rate limit.

A sync dependency costs a hop to a worker thread and back (a generator one two: in and out), and a
hop is a good part of a small request's CPU. So a connection is borrowed, and its caller found, in
one hop (`Served`), and given back on the event loop, where a connection with no open transaction
goes back without a word to PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, TypeVar

import psycopg
from fastapi import Depends, Request
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool
from starlette.concurrency import run_in_threadpool

from hivelore.server import auth, limits

T = TypeVar("T")


@dataclass(frozen=True)
class Served:
    """A request's connection and the caller behind its token."""

    conn: psycopg.Connection
    who: auth.Caller


def caller(request: Request, conn: psycopg.Connection) -> auth.Caller:
    """The caller behind the request's token, its request counted (one statement, limits.py)."""
    return limits.identify(conn, request.headers.get("authorization"), request.app.state.limits.requests_per_minute)


@asynccontextmanager
async def _borrowed(request: Request, then: Callable[[psycopg.Connection], T]) -> AsyncIterator[T]:
    """`then(conn)` on a connection borrowed for the request: borrowed and used in one worker-thread hop."""
    pool: ConnectionPool = request.app.state.pool

    def borrow() -> tuple[psycopg.Connection, T]:
        conn = pool.getconn()
        try:
            return conn, then(conn)
        except BaseException:
            pool.putconn(conn)
            raise

    conn, made = await run_in_threadpool(borrow)
    try:
        yield made
    finally:
        if conn.pgconn.transaction_status == TransactionStatus.IDLE:
            pool.putconn(conn)  # no I/O: the connection goes back to the pool's queue
        else:  # a transaction left open (or a broken connection): the pool rolls back, which waits
            await run_in_threadpool(pool.putconn, conn)


async def connection(request: Request) -> AsyncIterator[psycopg.Connection]:
    async with _borrowed(request, lambda conn: conn) as conn:
        yield conn


async def served(request: Request) -> AsyncIterator[Served]:
    async with _borrowed(request, lambda conn: Served(conn, caller(request, conn))) as made:
        yield made


async def _who(made: Annotated[Served, Depends(served)]) -> auth.Caller:
    return made.who


async def _conn(made: Annotated[Served, Depends(served)]) -> psycopg.Connection:
    return made.conn


Caller = Annotated[auth.Caller, Depends(_who)]
Conn = Annotated[psycopg.Connection, Depends(_conn)]  # the connection the caller was found on
AnyConn = Annotated[psycopg.Connection, Depends(connection)]  # for a route that may have no caller (joining)
