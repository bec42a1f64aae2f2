"""What an organisation holds on the team server — every row of its shared space — listed a page at a
time for its admins, and deleted by address or by scope (a repository's with its branches) through
the tier's own delete (`PostgresTier.delete`): the row, its search document and a tombstone that
tells mirrors to drop it, as every other delete on the server."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from hivelore.errors import NotFound
from hivelore.memory.model import validate_key
from hivelore.memory.scope import Level, parse
from hivelore.server.postgres.tier import PostgresTier

MAX_PAGE = 500  # rows a page holds at most


@dataclass(frozen=True)
class Held:
    scope: str
    key: str
    owner: str | None  # who first wrote it (None: their account is gone)
    kind: str
    updated: str
    archived: bool


def page(
    conn: psycopg.Connection, org_id: int, scope: str | None, after: tuple[str, str] | None, limit: int
) -> list[Held]:
    """The org's memories (archived and expired ones too) by scope then key, from after `after`."""
    after_scope, after_key = after or ("", "")
    rows = conn.execute(
        """
        SELECT m.scope, m.key, u.name, coalesce(m.record->>'kind', ''), coalesce(m.record->>'updated', ''), m.archived
        FROM memories m LEFT JOIN users u ON u.id = m.owner
        WHERE m.space = %(space)s AND (%(scope)s::text IS NULL OR m.scope = %(scope)s)
            AND (m.scope, m.key) > (%(after_scope)s, %(after_key)s)
        ORDER BY m.scope, m.key LIMIT %(limit)s
        """,
        {
            "space": f"org:{org_id}",
            "scope": scope,
            "after_scope": after_scope,
            "after_key": after_key,
            "limit": min(max(limit, 1), MAX_PAGE),
        },
    ).fetchall()
    return [Held(*row) for row in rows]


def _with_branches(tier: PostgresTier, scope: str) -> list[str]:
    """`scope`, and when it is a repository's, the scopes of its branches the space holds: a branch
    of a repository is shared with it, and a delete of the repository leaves none of it behind."""
    if parse(scope).level is not Level.REPO:
        return [scope]
    branches = f"branch::{scope.removeprefix('repo::')}::"
    return [scope, *sorted(s for s in tier.scopes() if s.startswith(branches))]


def forget(conn: psycopg.Connection, org_id: int, scope: str, key: str | None) -> list[str]:
    """Delete scope::key from the org's space, or (key None) every memory under `scope` and, for a
    repository, its branches; the addresses deleted. A named key that is not there is NotFound; an
    empty scope deletes nothing."""
    tier = PostgresTier(conn, {"org": f"org:{org_id}"}, [])
    if key is None:
        copies = tier.listed(_with_branches(tier, scope), include_hidden=True)
    else:
        copies = tier.copies([scope], {validate_key(key)})
        if not copies:
            raise NotFound(f"the organisation holds no memory {scope}::{key}: `hivelore org memories` lists them")
    return [c.memory.address for c in copies if tier.delete(c, lambda memory: True)]
