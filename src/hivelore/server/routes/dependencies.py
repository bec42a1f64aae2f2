"""What every `/v1` route starts from: a connection borrowed from the pool for the request, and
the caller behind its token, counted against the token's rate limit."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

import psycopg
from fastapi import Depends, Request

from hivelore.server import auth, limits
from hivelore.server.postgres import accounts


def connection(request: Request) -> Iterator[psycopg.Connection]:
    with request.app.state.pool.connection() as conn:
        yield conn


Conn = Annotated[psycopg.Connection, Depends(connection)]


def caller(request: Request, conn: Conn) -> auth.Caller:
    who = accounts.caller(conn, request.headers.get("authorization"))
    limits.count_request(conn, who.token_id, request.app.state.limits.requests_per_minute)
    return who


Caller = Annotated[auth.Caller, Depends(caller)]
