"""The dashboard's sessions in PostgreSQL: a browser's random session id stands for the token it
logged in with, until the session expires, is closed (log out), or the token is revoked or expires.

Only the id's SHA-256 is stored (as for tokens): a database dump opens no browser's session. The
token is looked up on every request, so revoking it ends its sessions at once on every replica.
"""

from __future__ import annotations

import secrets
from datetime import timedelta

import psycopg

from hivelore.server import auth

SESSION_HOURS = 12.0  # a working day: then the token is asked for again
ENDED = "your dashboard session has ended: log in again with your token"


def open_session(conn: psycopg.Connection, token_id: int, hours: float = SESSION_HOURS) -> str:
    """A new session for the token; its id, which only the browser keeps. Every expired session is
    deleted here, and one found expired when looked up (`session_caller`), so the table holds only live
    ones and those of browsers not seen since theirs ended, until the next login."""
    session = secrets.token_urlsafe(auth.RANDOM_BYTES)
    conn.execute("DELETE FROM dashboard_sessions WHERE expires < now()")
    conn.execute(
        "INSERT INTO dashboard_sessions (hash, token_id, expires) VALUES (%s, %s, now() + %s)",
        (auth.digest(session), token_id, timedelta(hours=hours)),
    )
    return session


def session_caller(conn: psycopg.Connection, session: str) -> auth.Caller:
    """The caller behind a session id, or Unauthenticated when the session or its token has ended."""
    row = conn.execute(
        "SELECT t.id, t.kind, t.scopes, t.revoked, t.expires, u.id, u.name, now(), s.expires <= now()"
        " FROM dashboard_sessions s JOIN tokens t ON t.id = s.token_id JOIN users u ON u.id = t.user_id"
        " WHERE s.hash = %s",
        (auth.digest(session),),
    ).fetchone()
    if row is None:
        raise auth.Unauthenticated(ENDED)
    if row[8]:  # expired: its row goes now, not at some later login (one indexed delete)
        close_session(conn, session)
        raise auth.Unauthenticated(ENDED)
    token_id, kind, scopes, revoked, expires, user_id, user, now, _ = row
    auth.check_live(revoked, expires, now)
    return auth.Caller(user_id=user_id, user=user, token_id=token_id, kind=kind, scopes=tuple(scopes), expires=expires)


def close_session(conn: psycopg.Connection, session: str) -> None:
    conn.execute("DELETE FROM dashboard_sessions WHERE hash = %s", (auth.digest(session),))
