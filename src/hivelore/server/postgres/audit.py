"""The audit log (migration 0007): a line per data-control action, read back newest first."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg

MAX_LINES = 1000  # lines a read answers


@dataclass(frozen=True)
class Line:
    at: datetime
    actor: str
    org: str | None
    action: str
    target: str
    request_id: str


def record(
    conn: psycopg.Connection,
    user_id: int,
    actor: str,
    action: str,
    target: str,
    request_id: str,
    org_id: int | None = None,
) -> None:
    conn.execute(
        "INSERT INTO audit_log (user_id, actor, org_id, action, target, request_id) VALUES (%s, %s, %s, %s, %s, %s)",
        (user_id, actor, org_id, action, target, request_id),
    )


def _lines(conn: psycopg.Connection, where: str, value: int, limit: int) -> list[Line]:
    rows = conn.execute(
        f"SELECT a.at, a.actor, o.name, a.action, a.target, a.request_id FROM audit_log a"
        f" LEFT JOIN orgs o ON o.id = a.org_id WHERE a.{where} = %s ORDER BY a.id DESC LIMIT %s",
        (value, min(limit, MAX_LINES)),
    ).fetchall()
    return [Line(*row) for row in rows]


def of_user(conn: psycopg.Connection, user_id: int, limit: int = MAX_LINES) -> list[Line]:
    """What the user did, newest first."""
    return _lines(conn, "user_id", user_id, limit)


def of_org(conn: psycopg.Connection, org_id: int, limit: int = MAX_LINES) -> list[Line]:
    """What was done to the organisation's data, newest first."""
    return _lines(conn, "org_id", org_id, limit)
