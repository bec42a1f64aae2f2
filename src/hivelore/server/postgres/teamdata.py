"""The team store's rows (migration 0012) as data of the people who wrote them and of the
organisation that holds them: a user's rows (`author`, migration 0013) for their export and their
data deletion, and an organisation's rows per repository for its admins to count and delete.

The warnings a user's sessions were shown (`team_warnings`) are theirs too, in any organisation: they
go with the rest into the export (as `warnings`, without a repository: the key names symbols and
tasks, not the repository) and the purge.

Deleting a task (intent) deletes what hangs on it — its sessions, claims, changes, attempts and
notes, whoever wrote them — as the schema's cascades do; a decision made in it stays, without it.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

# The tables a caller writes, each with the columns an export shows, its repository first (a token
# limited to some scopes exports the rows of the repositories it admits).
_OF_INTENT = "JOIN team_intents i ON i.id = t.intent_id"
TABLES = {
    "intents": ("t.repo, t.id, t.title, t.owner, t.status, t.created_ts, t.updated_ts", ""),
    "sessions": ("t.repo, t.agent, t.session_id, t.developer, t.intent_id, t.started_ts", ""),
    "claims": ("i.repo, t.intent_id, t.symbol, t.developer, t.ts", _OF_INTENT),
    "changes": ("i.repo, t.intent_id, t.symbol, t.ts", _OF_INTENT),
    "attempts": (
        "t.repo, t.id, t.intent_id, t.developer, t.command, t.outcome, t.failed, t.errors, t.count, t.first_ts,"
        " t.last_ts",
        "",
    ),
    "decisions": ("t.repo, t.id, t.intent_id, t.developer, t.text, t.ts", ""),
    "notes": ("i.repo, t.id, t.intent_id, t.developer, t.kind, t.text, t.ts", _OF_INTENT),
}
_WARNING = "agent, session_id, key, ts"


@dataclass(frozen=True)
class RepoTeam:
    repo: str
    intents: int
    decisions: int
    attempts: int
    notes: int


def authored(conn: psycopg.Connection, user_id: int) -> dict[str, list[dict[str, object]]]:
    """Every team row `user_id` wrote, in any organisation, by table; and the warnings their sessions
    were shown (`warnings`)."""
    found: dict[str, list[dict[str, object]]] = {}
    for table, (columns, join) in TABLES.items():
        cursor = conn.execute(
            f"SELECT {columns} FROM team_{table} t {join} WHERE t.author = %s ORDER BY 1, 2, 3", (user_id,)
        )
        names = [column.name for column in cursor.description or []]
        found[table] = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    cursor = conn.execute(
        f"SELECT {_WARNING} FROM team_warnings WHERE user_id = %s ORDER BY ts, agent, key", (user_id,)
    )
    found["warnings"] = [dict(zip(_WARNING.split(", "), row, strict=True)) for row in cursor.fetchall()]
    return found


def count_authored(conn: psycopg.Connection, user_id: int) -> int:
    """How many team rows `user_id` wrote, and warnings their sessions were shown."""
    parts = " + ".join(f"(SELECT count(*) FROM team_{table} WHERE author = %(user)s)" for table in TABLES)
    parts += " + (SELECT count(*) FROM team_warnings WHERE user_id = %(user)s)"
    row = conn.execute(f"SELECT {parts}", {"user": user_id}).fetchone()
    assert row is not None
    return int(row[0])


def _unsupersede(conn: psycopg.Connection, user_id: int) -> None:
    """Before their decisions go: a decision they superseded on a symbol is superseded by what
    superseded theirs there, or current again. A pointer only moves to a later decision, so it ends."""
    while conn.execute(
        """
        UPDATE team_decision_symbols a SET superseded_by = b.superseded_by
        FROM team_decision_symbols b JOIN team_decisions d ON d.id = b.decision_id
        WHERE d.author = %s AND a.superseded_by = b.decision_id AND a.symbol = b.symbol
        """,
        (user_id,),
    ).rowcount:
        continue


def delete_authored(conn: psycopg.Connection, user_id: int) -> int:
    """Delete every team row `user_id` wrote (a task with what hangs on it) and the warnings their
    sessions were shown; how many of theirs."""
    gone = count_authored(conn, user_id)
    _unsupersede(conn, user_id)
    for table in reversed(TABLES):  # the intents last: what hangs on them is counted above as theirs or not
        conn.execute(f"DELETE FROM team_{table} WHERE author = %s", (user_id,))
    conn.execute("DELETE FROM team_warnings WHERE user_id = %s", (user_id,))
    return gone


def per_repo(conn: psycopg.Connection, org_id: int) -> list[RepoTeam]:
    """The organisation's team rows, counted per repository, by repository."""
    rows = conn.execute(
        """
        WITH repos AS (
            SELECT repo FROM team_intents WHERE org_id = %(org)s
            UNION SELECT repo FROM team_decisions WHERE org_id = %(org)s
        ) SELECT r.repo,
            (SELECT count(*) FROM team_intents i WHERE i.org_id = %(org)s AND i.repo = r.repo),
            (SELECT count(*) FROM team_decisions d WHERE d.org_id = %(org)s AND d.repo = r.repo),
            (SELECT count(*) FROM team_attempts a JOIN team_intents i ON i.id = a.intent_id
             WHERE i.org_id = %(org)s AND i.repo = r.repo),
            (SELECT count(*) FROM team_notes n JOIN team_intents i ON i.id = n.intent_id
             WHERE i.org_id = %(org)s AND i.repo = r.repo)
        FROM repos r ORDER BY r.repo
        """,
        {"org": org_id},
    ).fetchall()
    return [RepoTeam(*row) for row in rows]


def forget_repo(conn: psycopg.Connection, org_id: int, repo: str) -> RepoTeam:
    """Delete the organisation's whole team data of `repo`; what there was."""
    with conn.transaction():
        held = next((r for r in per_repo(conn, org_id) if r.repo == repo), RepoTeam(repo, 0, 0, 0, 0))
        conn.execute("DELETE FROM team_decisions WHERE org_id = %s AND repo = %s", (org_id, repo))
        conn.execute("DELETE FROM team_intents WHERE org_id = %s AND repo = %s", (org_id, repo))
    return held
