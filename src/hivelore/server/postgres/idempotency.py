"""Requests sent with an `Idempotency-Key`: the first one's answer is kept (a day), and the same key
with the same request gets that answer again instead of a second write. A client's outbox replays
a write it never heard back about with the key it was first sent with, so the write lands once."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import psycopg
from psycopg.types.json import Jsonb

from hivelore.errors import BadInput, Conflict

MAX_KEY_CHARS = 200
KEPT = "1 day"


def fingerprint(method: str, path: str, body: object) -> str:
    text = json.dumps([method, path, body], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def once(
    conn: psycopg.Connection, user_id: int, key: str | None, print_: str, run: Callable[[], dict[str, object]]
) -> dict[str, object]:
    """`run()`'s answer, run at most once per (user, key): in one transaction with what it writes."""
    if key is None:
        return run()
    if not 1 <= len(key) <= MAX_KEY_CHARS or not key.isprintable():
        raise BadInput(f"an Idempotency-Key is 1 to {MAX_KEY_CHARS} printable characters")
    # In a pipeline, statements whose answer is not read wait to go with the next that is: the BEGIN
    # goes with the claim, and the row's write, this answer's update and the COMMIT go together.
    with conn.pipeline(), conn.transaction():
        # The key's row, claimed before the write: a second request with the same key waits here until
        # the first one commits (then reads its answer) or rolls back (then claims the key itself).
        claimed = conn.execute(
            "INSERT INTO idempotent_requests (user_id, key, fingerprint, body) VALUES (%s, %s, %s, 'null')"
            " ON CONFLICT (user_id, key) DO NOTHING RETURNING true",
            (user_id, key, print_),
        ).fetchone()
        if claimed is None:
            row = conn.execute(
                "SELECT fingerprint, body FROM idempotent_requests WHERE user_id = %s AND key = %s", (user_id, key)
            ).fetchone()
            assert row is not None  # the conflicting row is committed, and only an old one is ever deleted
            if row[0] != print_:
                raise Conflict("this Idempotency-Key came with another request before: use a new key for a new request")
            return dict(row[1])
        answer = run()
        conn.execute(
            f"""
            WITH expired AS (
                DELETE FROM idempotent_requests WHERE user_id = %(user)s AND created < now() - interval '{KEPT}'
            )
            UPDATE idempotent_requests SET body = %(body)s WHERE user_id = %(user)s AND key = %(key)s
            """,
            {"user": user_id, "key": key, "body": Jsonb(answer)},
        )
        return answer
