"""What one user owns on the team server, for `GET /v1/me/export`: every row of their personal space,
and the rows they first wrote (`owner`, migration 0003) in the spaces of the organisations they still
belong to. A former member's rows stay with the organisation, which may have changed them since."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

import psycopg

from hivelore.memory.model import Memory
from hivelore.server.postgres.tier import _VISIBLE


def owned(conn: psycopg.Connection, user_id: int, org_ids: Sequence[int], include_hidden: bool) -> Iterator[Memory]:
    """The memories `user_id` owns, by scope then key; archived and expired ones too if asked."""
    visible = "TRUE" if include_hidden else _VISIBLE
    rows = conn.execute(
        f"""
        SELECT record FROM memories
        WHERE (space = %(personal)s OR (space = ANY(%(orgs)s) AND owner = %(user)s)) AND {visible}
        ORDER BY scope, key, space
        """,
        {
            "personal": f"user:{user_id}",
            "orgs": [f"org:{org_id}" for org_id in org_ids],
            "user": user_id,
            "now": time.time(),
        },
    )
    return (Memory.from_dict(record) for (record,) in rows)
