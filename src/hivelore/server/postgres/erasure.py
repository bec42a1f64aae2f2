"""Deleting a user's data with a recovery window (migration 0008).

Deleting moves every row of the user's personal space to `erased:<id>`, a space no caller reads:
reads and search lose them at once, and a tombstone per row tells mirrors, through the change feed,
to drop them. A restore within the window moves them back with new change numbers (a row written
since at the same address wins, and the erased copy goes). A purge, once the window has passed,
deletes the rows, their search documents and their tombstones (the addresses are data too).

Deleting an organisation (`delete_org`) deletes its space's rows the same way, with the organisation.

Deleting the account (`delete_account`) deletes all of it at once, in one transaction, with no window:
the personal space's rows and their deleted copies, with their search documents, tombstones, counters
and term counts; every team row the user wrote and the warnings their sessions were shown; their
own lines of the audit log; and the user, whose tokens (with their sessions and rate windows),
memberships, quota count and idempotency keys go with it by the schema's cascades. What they wrote
in an organisation's space stays with it (its `owner` becomes NULL), as do the organisations' audit
lines naming them: those are the organisations' records. An organisation they are the last owner of
would be left with none: the delete is refused, and nothing is deleted.

Each of these takes its space's lock (migration 0021) before it touches a row, and an account's
deletion its account's lock too (which team writes hold shared, postgres/team.py): the writes under
way commit first, and the writes that come meanwhile wait and then find the space as the deletion
left it (after an account's deletion, their account is gone, and PostgreSQL refuses their rows).

The team rows the user wrote (teamdata.py) are not hidden: they are the organisation's coordination
as it happens (a colleague's pre-edit check reads a claim of theirs), and hiding them would change what
others' sessions are told. They stay until the purge, which deletes them with the rest (every team
row of theirs by then, those written during the window too); a restore within the window keeps them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg

from hivelore.errors import Conflict, NotFound
from hivelore.server.postgres import accounts, teamdata
from hivelore.server.postgres.tier import SPACE_SHARDS


@dataclass(frozen=True)
class Erased:
    rows: int
    team_rows: int  # the team rows of theirs the purge will delete, as of now
    purge_after: datetime


@dataclass(frozen=True)
class AccountDeleted:
    memories: int  # of the personal space, deleted copies included
    team_rows: int  # the team rows they wrote, and the warnings their sessions were shown
    tokens: int
    orgs: list[str]  # the organisations they were a member of


def _spaces(user_id: int) -> dict[str, object]:
    return {"personal": f"user:{user_id}", "erased": f"erased:{user_id}", "shards": SPACE_SHARDS}


_SPACE_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('space' || E'\\n' || %s, 0))"  # migration 0021


def _hold(conn: psycopg.Connection, user_id: int, params: dict[str, object]) -> None:
    """Inside a transaction: the user's erasure lock, then their personal space's."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('erasure' || E'\\n' || %s::text, 0))", (user_id,))
    conn.execute(_SPACE_LOCK, (params["personal"],))


def _drop_superseded(conn: psycopg.Connection, params: dict[str, object]) -> None:
    """Erased rows whose address the personal space holds again: the newer row wins."""
    conn.execute(
        """
        WITH old AS (
            DELETE FROM memories e USING memories p
            WHERE e.space = %(erased)s AND p.space = %(personal)s AND p.scope = e.scope AND p.key = e.key
            RETURNING e.id
        ) DELETE FROM memory_docs WHERE id IN (SELECT id FROM old)
        """,
        params,
    )


def _count(conn: psycopg.Connection, params: dict[str, object], rows: int, tokens: int) -> None:
    """Move the personal space's counters (BM25's corpus, the readers' generation) by a whole move."""
    conn.execute(
        """
        INSERT INTO memory_spaces (space, shard, generation, rows, tokens)
        VALUES (%(personal)s, pg_backend_pid() %% %(shards)s, 1, %(rows)s, %(tokens)s)
        ON CONFLICT (space, shard) DO UPDATE SET generation = memory_spaces.generation + 1,
            rows = memory_spaces.rows + %(rows)s, tokens = memory_spaces.tokens + %(tokens)s
        """,
        {**params, "rows": rows, "tokens": tokens},
    )


def erase(conn: psycopg.Connection, user_id: int, window_days: float) -> Erased:
    """Hide the user's personal rows now; they are purged after `window_days`. A second delete
    within the window hides what was written since and starts the window again."""
    params = _spaces(user_id)
    with conn.transaction():
        _hold(conn, user_id, params)
        _drop_superseded(conn, params)
        moved = conn.execute(
            """
            WITH moved AS (
                UPDATE memories SET space = %(erased)s WHERE space = %(personal)s RETURNING id, scope, key, tokens
            ), docs AS (
                UPDATE memory_docs SET space = %(erased)s WHERE id IN (SELECT id FROM moved)
            ), buried AS (
                INSERT INTO memory_tombstones (space, scope, key) SELECT %(personal)s, scope, key FROM moved
                ON CONFLICT (space, scope, key) DO UPDATE SET seq = nextval('memory_changes'),
                    changed = clock_timestamp()
            ) SELECT count(*), coalesce(sum(tokens), 0) FROM moved
            """,
            params,
        ).fetchone()
        assert moved is not None
        rows, tokens = int(moved[0]), int(moved[1])
        _count(conn, params, -rows, -tokens)
        row = conn.execute(
            """
            INSERT INTO erasures (user_id, purge_after) VALUES (%(user)s, now() + %(days)s * interval '1 day')
            ON CONFLICT (user_id) DO UPDATE SET deleted = now(), purge_after = excluded.purge_after
            RETURNING purge_after
            """,
            {"user": user_id, "days": window_days},
        ).fetchone()
        assert row is not None
        team_rows = teamdata.count_authored(conn, user_id)
    return Erased(rows, team_rows, row[0])


def restore(conn: psycopg.Connection, user_id: int) -> int:
    """Move the user's deleted rows back within the window; how many came back."""
    purge(conn)
    params = _spaces(user_id)
    with conn.transaction():
        _hold(conn, user_id, params)
        if conn.execute("DELETE FROM erasures WHERE user_id = %s RETURNING 1", (user_id,)).fetchone() is None:
            raise NotFound(
                "there is no deleted data of yours to restore: nothing was deleted, or its recovery window has passed"
            )
        _drop_superseded(conn, params)
        back = conn.execute(
            """
            WITH back AS (
                UPDATE memories SET space = %(personal)s, seq = nextval('memory_changes'), changed = clock_timestamp()
                WHERE space = %(erased)s RETURNING id, tokens
            ), docs AS (
                UPDATE memory_docs SET space = %(personal)s WHERE id IN (SELECT id FROM back)
            ) SELECT count(*), coalesce(sum(tokens), 0) FROM back
            """,
            params,
        ).fetchone()
        assert back is not None
        _count(conn, params, int(back[0]), int(back[1]))
    return int(back[0])


def purge(conn: psycopg.Connection) -> list[int]:
    """Delete for good the data whose recovery window has passed; the users it was of."""
    with conn.transaction():
        due = [u for (u,) in conn.execute("DELETE FROM erasures WHERE purge_after <= now() RETURNING user_id")]
        for user_id in due:
            params = _spaces(user_id)
            conn.execute(
                """
                WITH unburied AS (
                    DELETE FROM memory_tombstones t USING memories e
                    WHERE e.space = %(erased)s AND t.space = %(personal)s AND t.scope = e.scope AND t.key = e.key
                ), gone AS (
                    DELETE FROM memories WHERE space = %(erased)s RETURNING id
                ) DELETE FROM memory_docs WHERE id IN (SELECT id FROM gone)
                """,
                params,
            )
            teamdata.delete_authored(conn, user_id)
    return due


def _delete_spaces(conn: psycopg.Connection, spaces: list[str]) -> int:
    """Delete every row of the spaces, and all that counts or indexes them; how many rows."""
    gone = conn.execute(
        """
        WITH gone AS (
            DELETE FROM memories WHERE space = ANY(%(spaces)s) RETURNING id
        ), unindexed AS (
            DELETE FROM memory_docs WHERE id IN (SELECT id FROM gone)
        ) SELECT count(*) FROM gone
        """,
        {"spaces": spaces},
    ).fetchone()
    assert gone is not None
    for table in ("memory_tombstones", "memory_spaces", "memory_terms"):  # the term counts once the docs are gone
        conn.execute(f"DELETE FROM {table} WHERE space = ANY(%s)", (spaces,))
    return int(gone[0])


def delete_org(conn: psycopg.Connection, org_id: int) -> None:
    """Delete the organisation, with its space's memories (no foreign key ties them to it), under the
    space's lock; its members, shared scopes, switches, team rows, code graph and audit log go by the
    schema's cascades."""
    space = f"org:{org_id}"
    with conn.transaction():
        conn.execute(_SPACE_LOCK, (space,))
        _delete_spaces(conn, [space])
        conn.execute("DELETE FROM orgs WHERE id = %s", (org_id,))


def delete_account(conn: psycopg.Connection, user_id: int, request_id: str) -> AccountDeleted:
    """Delete the user and everything of theirs (the module's docstring), or nothing: Conflict when
    they are the last owner of an organisation. Each organisation they leave gets a line in its
    audit log."""
    params = _spaces(user_id)
    with conn.transaction():
        _hold(conn, user_id, params)
        conn.execute(f"SELECT pg_advisory_xact_lock({accounts.ACCOUNT_LOCK})", (user_id,))
        name, orgs = accounts.lock_leaving(conn, user_id)
        if stranded := [org for org, role, owners in orgs if role == "owner" and owners == 1]:
            raise Conflict(_last_owner(stranded))
        memories = _delete_spaces(conn, [str(params["personal"]), str(params["erased"])])
        team_rows = teamdata.delete_authored(conn, user_id)
        conn.execute("DELETE FROM audit_log WHERE user_id = %s AND org_id IS NULL", (user_id,))
        for org, role, _ in orgs:
            conn.execute(
                "INSERT INTO audit_log (user_id, actor, org_id, action, target, request_id)"
                " SELECT NULL, %s, id, 'delete-account', %s, %s FROM orgs WHERE name = %s",
                (name, f"{name} ({role})", request_id, org),
            )
        tokens = conn.execute("DELETE FROM tokens WHERE user_id = %s", (user_id,)).rowcount
        conn.execute("DELETE FROM users WHERE id = %s", (user_id,))
    return AccountDeleted(memories, team_rows, tokens, [org for org, _, _ in orgs])


def _last_owner(orgs: list[str]) -> str:
    named = ", ".join(orgs)
    return (
        f"you are the last owner of {named}: make another member owner (`hivelore org role {orgs[0]} USER owner`)"
        f" or delete the organisation (`hivelore org delete {orgs[0]} --yes`) first; nothing was deleted"
    )
