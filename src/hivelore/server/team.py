"""Which organisation's team a request reaches on the team server, and whether the caller may act
there: the same roles and tokens as memories (server/memories.py).

A repository's team belongs to the organisation that shares its `repo::OWNER/NAME` scope (`hivelore
org share ORG repo::acme/shop`), one organisation per repository among the caller's. Viewers
read it, members (and above) write it. A token reads only with `hl_rw_`/`hl_ro_`, writes only with
`hl_rw_`/`hl_wo_`, and reaches a repository its scope allow-list admits. A task (intent) is reached
by its id in the organisation that holds it: to anyone else — not a member, or a token that does not
admit its repository — there is no such task.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import psycopg

from hivelore.errors import BadInput
from hivelore.server import auth
from hivelore.server.postgres.team import PostgresTeam
from hivelore.team.model import NoSuchIntent

READ, WRITE = "viewer", "member"


def repo_scope(repo: str) -> str:
    """The scope that names a repository's team: `repo::acme/shop`."""
    return f"repo::{repo}"


def clock_at(at: float | None) -> Callable[[], float]:
    """The time a call happened: the client's (`at`) when it says, else the server's."""
    return (lambda: at) if at is not None else time.time


def for_repo(conn: psycopg.Connection, who: auth.Caller, repo: str, role: str, at: float | None) -> PostgresTeam:
    """The team of `repo` for the caller, who needs `role` (READ or WRITE) in its organisation."""
    _may(who, role)
    scope = repo_scope(repo)
    if not repo.strip():
        raise BadInput("the request names no repository: give one like acme/shop")
    who.may_use_scope(scope)
    rows = conn.execute(
        "SELECT o.id, o.name, m.role FROM shared_scopes s JOIN orgs o ON o.id = s.org_id"
        " JOIN members m ON m.org_id = o.id AND m.user_id = %s WHERE s.scope = %s ORDER BY o.name",
        (who.user_id, scope),
    ).fetchall()
    if not rows:
        raise auth.Forbidden(
            f"none of your organisations shares {scope}: an admin of the team's organisation shares it"
            f" with `hivelore org share ORG {scope}`"
        )
    if len(rows) > 1:
        names = ", ".join(name for _, name, _ in rows)
        raise BadInput(
            f"{scope} is shared by several of your organisations ({names}): a repository's team lives in one,"
            " so unbind it from the others"
        )
    org_id, org, held = rows[0]
    auth.require_role(held, role, org)
    return PostgresTeam(conn, org_id, who.user_id, clock_at(at))


def for_intent(conn: psycopg.Connection, who: auth.Caller, intent_id: int, role: str, at: float | None) -> PostgresTeam:
    """The team holding task `intent_id`, for a caller who needs `role` in its organisation."""
    _may(who, role)
    row = conn.execute(
        "SELECT i.org_id, o.name, i.repo, m.role FROM team_intents i JOIN orgs o ON o.id = i.org_id"
        " JOIN members m ON m.org_id = i.org_id AND m.user_id = %s WHERE i.id = %s",
        (who.user_id, intent_id),
    ).fetchone()
    if row is None or not who.allows(repo_scope(row[2])):
        raise NoSuchIntent(f"no task {intent_id}")
    org_id, org, _repo, held = row
    auth.require_role(held, role, org)
    return PostgresTeam(conn, org_id, who.user_id, clock_at(at))


def _may(who: auth.Caller, role: str) -> None:
    if role == READ:
        who.may_read()
    else:
        who.may_write()
