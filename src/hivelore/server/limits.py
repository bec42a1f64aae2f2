"""Rate limits and quotas, counted in PostgreSQL so that every replica enforces the same ones."""

from __future__ import annotations

from dataclasses import dataclass

from hivelore.errors import Busy, HiveloreError

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


class RateLimited(Busy):
    """Too many requests in this minute (HTTP 429, with Retry-After)."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def count_request(conn: psycopg.Connection, token_id: int, limit: int) -> None:
    """Count one request of `token_id` in the current minute; refuse it past `limit`. One statement,
    so two replicas counting at once both see the other's request."""
    row = conn.execute(
        """
        WITH gone AS (
            DELETE FROM rate_windows WHERE token_id = %(token)s AND started < date_trunc('minute', now())
        )
        INSERT INTO rate_windows AS w (token_id, started, count)
        VALUES (%(token)s, date_trunc('minute', now()), 1)
        ON CONFLICT (token_id, started) DO UPDATE SET count = w.count + 1
        RETURNING count, ceil(extract(epoch FROM date_trunc('minute', now()) + interval '1 minute' - now()))
        """,
        {"token": token_id},
    ).fetchone()
    assert row is not None  # an INSERT … RETURNING always returns its row
    count, retry_after = int(row[0]), max(1, int(row[1]))
    if count > limit:
        raise RateLimited(
            f"this token made more than {limit} requests this minute: try again in {retry_after} s",
            retry_after,
        )
