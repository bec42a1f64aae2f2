"""Rate limits and quotas, counted in PostgreSQL so that every replica enforces the same ones.

The token lookup is here, once: the routes find their caller with it (counted), and the dashboard's
sign-in too (`count=False`, through `accounts.caller`)."""

from __future__ import annotations

from dataclasses import dataclass

from hivelore.errors import Busy, HiveloreError
from hivelore.server.auth import Caller, Unauthenticated, bearer, check_live, digest

TYPE_CHECKING = False  # the CLI reads the defaults without the server's libraries
if TYPE_CHECKING:
    import psycopg

REQUESTS_PER_MINUTE = 120
MAX_BODY_BYTES = 1_048_576
ACTIVE_MEMORIES = 5000  # per account; archived and expired ones do not count


@dataclass(frozen=True)
class Limits:
    requests_per_minute: int = REQUESTS_PER_MINUTE
    max_body_bytes: int = MAX_BODY_BYTES
    active_memories: int = ACTIVE_MEMORIES


class QuotaExceeded(HiveloreError):
    """The account holds as many active memories as it may (HTTP 403: retrying will not help)."""

    status, code = 403, "quota_exceeded"


class RateLimited(Busy):
    """Too many requests in this minute (HTTP 429, with Retry-After)."""

    code = "rate_limited"

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


# Count one request of the token `live` holds (no row: count nothing) in the current minute, dropping
# its earlier minutes: the common tail of `identify` and `count_request`.
_COUNTED = """
    gone AS (
        DELETE FROM rate_windows WHERE token_id = (SELECT id FROM live) AND started < date_trunc('minute', now())
    ), counted AS (
        INSERT INTO rate_windows AS w (token_id, started, count)
        SELECT id, date_trunc('minute', now()), 1 FROM live
        ON CONFLICT (token_id, started) DO UPDATE SET count = w.count + 1
        RETURNING count
    )
"""
_RETRY_AFTER = "ceil(extract(epoch FROM date_trunc('minute', now()) + interval '1 minute' - now()))"


def identify(conn: psycopg.Connection, header: str | None, limit: int, count: bool = True) -> Caller:
    """The caller behind an Authorization header, with this request counted in its token's minute
    (unless `count` is false); Unauthenticated, or RateLimited past `limit`.

    One statement, as every request makes it: the token's row, and (when the token is live) the
    count, so two replicas counting at once both see the other's request. A revoked or expired
    token counts nothing."""
    token = bearer(header)
    row = conn.execute(
        f"""
        WITH t AS (
            SELECT t.id, t.kind, t.scopes, t.revoked, t.expires, u.id AS user_id, u.name
            FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.hash = %(hash)s
        ), live AS (
            SELECT id FROM t WHERE %(count)s AND revoked IS NULL AND (expires IS NULL OR expires > now())
        ), {_COUNTED}
        SELECT t.id, t.kind, t.scopes, t.revoked, t.expires, t.user_id, t.name, now(), (SELECT count FROM counted),
               {_RETRY_AFTER}
        FROM t
        """,
        {"hash": digest(token), "count": count},
    ).fetchone()
    if row is None:
        raise Unauthenticated("this token is not known here: check HIVELORE_TOKEN, or create a token")
    token_id, kind, scopes, revoked, expires, user_id, user, now, counted, retry_after = row
    check_live(revoked, expires, now)
    if count:
        _refuse_past(limit, int(counted), int(retry_after))
    return Caller(user_id=user_id, user=user, token_id=token_id, kind=kind, scopes=tuple(scopes), expires=expires)


def count_request(conn: psycopg.Connection, token_id: int, limit: int) -> None:
    """Count one request of a token already known (a dashboard session's) in the current minute;
    refuse it past `limit`. One statement, as in `identify`."""
    row = conn.execute(
        f"WITH live AS (SELECT %(token)s::bigint AS id), {_COUNTED} SELECT (SELECT count FROM counted), {_RETRY_AFTER}",
        {"token": token_id},
    ).fetchone()
    assert row is not None  # a SELECT without FROM always returns its row
    _refuse_past(limit, int(row[0]), int(row[1]))


def _refuse_past(limit: int, count: int, retry_after: int) -> None:
    if count > limit:
        retry = max(1, retry_after)
        raise RateLimited(f"this token made more than {limit} requests this minute: try again in {retry} s", retry)
