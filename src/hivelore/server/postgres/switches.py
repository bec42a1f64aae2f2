"""The repositories organisations switched memory off for (migration 0009, orgswitch.py).

Switching one back on sends its memories to mirrors again: while it was off the change feed left
them out for the organisation's members, so each such row gets a new change number, in the
organisation's space and in its members' personal spaces, and the next sync brings it.
"""

from __future__ import annotations

import psycopg

from hivelore.errors import BadInput, NotFound
from hivelore.memory.scope import Level, parse
from hivelore.orgswitch import OrgSwitch

_SELECT = (
    "SELECT o.name, s.scope, s.actor, to_char(s.switched AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS')"
    " FROM repo_switches s JOIN orgs o ON o.id = s.org_id"
)


def check_repo(scope: str) -> str:
    """The canonical `repo::OWNER/NAME`, or BadInput: a switch is for a whole repository."""
    parsed = parse(scope)
    if parsed.level is not Level.REPO:
        raise BadInput(f"{parsed} is not a repository's scope: memory is switched off for a repo::OWNER/NAME")
    return str(parsed)


def switch_off(conn: psycopg.Connection, org_id: int, scope: str, user_id: int, actor: str) -> bool:
    """Whether it was on until now (switching off what is off changes nothing, not even who did it)."""
    row = conn.execute(
        "INSERT INTO repo_switches (org_id, scope, switched_by, actor) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT DO NOTHING RETURNING 1",
        (org_id, scope, user_id, actor),
    ).fetchone()
    return row is not None


def switch_on(conn: psycopg.Connection, org_id: int, scope: str) -> int:
    """Switch memory back on; how many memories mirrors are sent again."""
    with conn.transaction():
        row = conn.execute(
            "DELETE FROM repo_switches WHERE org_id = %s AND scope = %s RETURNING 1", (org_id, scope)
        ).fetchone()
        if row is None:
            raise NotFound(f"memory is not switched off for {scope} in this organisation")
        sent = conn.execute(
            """
            UPDATE memories SET seq = nextval('memory_changes'), changed = clock_timestamp()
            WHERE (space = 'org:' || %(org)s
                   OR space IN (SELECT 'user:' || user_id FROM members WHERE org_id = %(org)s))
                AND (scope = %(scope)s OR starts_with(scope, %(branches)s))
            """,
            {"org": org_id, "scope": scope, "branches": f"branch::{scope.removeprefix('repo::')}::"},
        )
    return sent.rowcount


def of_org(conn: psycopg.Connection, org_id: int) -> list[OrgSwitch]:
    rows = conn.execute(f"{_SELECT} WHERE s.org_id = %s ORDER BY s.scope", (org_id,)).fetchall()
    return [OrgSwitch(*row) for row in rows]


def of_member(conn: psycopg.Connection, user_id: int) -> list[OrgSwitch]:
    """The switches of every organisation the user belongs to: what governs their memory."""
    rows = conn.execute(
        f"{_SELECT} JOIN members m ON m.org_id = s.org_id WHERE m.user_id = %s ORDER BY o.name, s.scope", (user_id,)
    ).fetchall()
    return [OrgSwitch(*row) for row in rows]
