"""Users, organisations, members, invitations, tokens and shared scopes in PostgreSQL.

Each function takes a connection (in autocommit mode, borrowed from the pool for one request) and
returns plain records; the rules of who may do what are in server/auth.py and the routes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

import psycopg
from psycopg.rows import class_row

from hivelore.errors import BadInput, Conflict, NotFound
from hivelore.server import auth, limits

NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
INVITATION_DAYS = 14
# The key of an account's lock: its team writes hold it shared, its deletion exclusively
# (postgres/erasure.py), so a deletion never waits for a team row a write holds while that write waits
# for the deletion (a deadlock PostgreSQL would end by failing one of them).
ACCOUNT_LOCK = "hashtextextended('account' || E'\\n' || %s::text, 0)"


@dataclass(frozen=True)
class User:
    id: int
    name: str
    email: str | None
    github: str | None


@dataclass(frozen=True)
class Member:
    user: str
    role: str
    joined: datetime


@dataclass(frozen=True)
class TokenInfo:
    id: int
    kind: str
    name: str
    scopes: list[str]
    created: datetime
    expires: datetime | None
    revoked: datetime | None


@dataclass(frozen=True)
class NewToken:
    """A token just made: `token` is its secret, shown this once."""

    token: str
    info: TokenInfo


@dataclass(frozen=True)
class Invitation:
    id: int
    org: str
    invitee: str
    role: str
    expires: datetime
    token: str  # shown this once


@dataclass(frozen=True)
class Joined:
    """An accepted invitation: who joined which organisation, with which role."""

    org_id: int
    org: str
    role: str
    user_id: int


def check_name(name: str, what: str) -> str:
    if not NAME.match(name):
        raise BadInput(
            f"{name!r} cannot be the name of {what}: use 1-64 lowercase letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def _unique(what: str, name: str) -> Conflict:
    return Conflict(f"{what} {name} exists already: choose another name")


def add_user(conn: psycopg.Connection, name: str, email: str | None = None, github: str | None = None) -> User:
    check_name(name, "a user")
    try:
        row = conn.execute(
            "INSERT INTO users (name, email, github) VALUES (%s, %s, %s) RETURNING id",
            (name, email.lower() if email else None, github.lstrip("@").lower() if github else None),
        ).fetchone()
    except psycopg.errors.UniqueViolation:
        raise Conflict(f"a user named {name}, or with that email or GitHub handle, exists already") from None
    assert row is not None
    return User(row[0], name, email, github)


def create_token(
    conn: psycopg.Connection,
    user_id: int,
    kind: str,
    name: str = "",
    scopes: list[str] | None = None,
    expires: datetime | None = None,
) -> NewToken:
    token = auth.mint(kind)
    auth.check_token_name(name)
    allowed = auth.check_scope_patterns(scopes or [])
    with conn.cursor(row_factory=class_row(TokenInfo)) as cur:
        info = cur.execute(
            "INSERT INTO tokens (user_id, kind, hash, name, scopes, expires) VALUES (%s, %s, %s, %s, %s, %s)"
            " RETURNING id, kind, name, scopes, created, expires, revoked",
            (user_id, kind, auth.digest(token), name, allowed, expires),
        ).fetchone()
    assert info is not None
    return NewToken(token, info)


def caller(conn: psycopg.Connection, header: str | None) -> auth.Caller:
    """The caller behind an Authorization header, or Unauthenticated; no request is counted (the
    lookup is `limits.identify`'s, the one statement every request makes)."""
    return limits.identify(conn, header, limit=0, count=False)


def tokens_of(conn: psycopg.Connection, user_id: int) -> list[TokenInfo]:
    with conn.cursor(row_factory=class_row(TokenInfo)) as cur:
        return cur.execute(
            "SELECT id, kind, name, scopes, created, expires, revoked FROM tokens WHERE user_id = %s ORDER BY id",
            (user_id,),
        ).fetchall()


def revoke_token(conn: psycopg.Connection, user_id: int, token_id: int) -> None:
    row = conn.execute(
        "UPDATE tokens SET revoked = coalesce(revoked, now()) WHERE id = %s AND user_id = %s RETURNING id",
        (token_id, user_id),
    ).fetchone()
    if row is None:
        raise NotFound(f"you have no token {token_id}: `hivelore token list` shows yours")


def role_in(conn: psycopg.Connection, org: str, user_id: int) -> tuple[int, str | None]:
    """The org's id and the user's role in it (None: not a member). NotFound when there is no such
    org — said the same way to members and strangers, so names of orgs do not leak by status."""
    row = conn.execute(
        "SELECT o.id, m.role FROM orgs o LEFT JOIN members m ON m.org_id = o.id AND m.user_id = %s WHERE o.name = %s",
        (user_id, org),
    ).fetchone()
    if row is None:
        raise NotFound(f"there is no organisation {org} you can see")
    return row[0], row[1]


def create_org(conn: psycopg.Connection, name: str, owner_id: int) -> None:
    check_name(name, "an organisation")
    with conn.transaction():
        try:
            row = conn.execute("INSERT INTO orgs (name) VALUES (%s) RETURNING id", (name,)).fetchone()
        except psycopg.errors.UniqueViolation:
            raise _unique("the organisation", name) from None
        assert row is not None
        conn.execute("INSERT INTO members (org_id, user_id, role) VALUES (%s, %s, 'owner')", (row[0], owner_id))


def rename_org(conn: psycopg.Connection, org_id: int, name: str) -> None:
    check_name(name, "an organisation")
    try:
        conn.execute("UPDATE orgs SET name = %s WHERE id = %s", (name, org_id))
    except psycopg.errors.UniqueViolation:
        raise _unique("the organisation", name) from None


def orgs_of(conn: psycopg.Connection, user_id: int) -> list[tuple[str, str]]:
    """(org, role) of every org the user belongs to."""
    rows = conn.execute(
        "SELECT o.name, m.role FROM members m JOIN orgs o ON o.id = m.org_id WHERE m.user_id = %s ORDER BY o.name",
        (user_id,),
    ).fetchall()
    return [(name, role) for name, role in rows]


def members(conn: psycopg.Connection, org_id: int) -> list[Member]:
    with conn.cursor(row_factory=class_row(Member)) as cur:
        return cur.execute(
            "SELECT u.name AS user, m.role, m.joined FROM members m JOIN users u ON u.id = m.user_id"
            " WHERE m.org_id = %s ORDER BY u.name",
            (org_id,),
        ).fetchall()


def set_role(conn: psycopg.Connection, org_id: int, user: str, role: str | None) -> None:
    """Give `user` another role in the org, or remove them (role None). The last owner stays."""
    if role is not None and role not in auth.ROLES:
        raise BadInput(f"a role is one of {', '.join(auth.ROLES)}, not {role!r}")
    with conn.transaction():
        _lock_orgs(conn, [org_id])
        row = conn.execute(
            "SELECT m.user_id, m.role FROM members m JOIN users u ON u.id = m.user_id"
            " WHERE m.org_id = %s AND u.name = %s FOR UPDATE",
            (org_id, user),
        ).fetchone()
        if row is None:
            raise NotFound(f"{user} is not a member of this organisation")
        if row[1] == "owner" and role != "owner":
            owners = conn.execute(
                "SELECT count(*) FROM members WHERE org_id = %s AND role = 'owner'", (org_id,)
            ).fetchone()
            if owners is not None and owners[0] <= 1:
                raise Conflict(f"{user} is the organisation's last owner: make someone else owner first")
        if role is None:
            conn.execute("DELETE FROM members WHERE org_id = %s AND user_id = %s", (org_id, row[0]))
        else:
            conn.execute("UPDATE members SET role = %s WHERE org_id = %s AND user_id = %s", (role, org_id, row[0]))


def _lock_orgs(conn: psycopg.Connection, org_ids: list[int]) -> None:
    """Inside a transaction: hold the organisations' rows, in one order, while their owners change
    (a role set, a member removed, an account deleted), so that two such changes at once cannot both
    count the other owner and leave none. FOR NO KEY UPDATE: the writes that only refer to an
    organisation (its team rows) go on."""
    conn.execute("SELECT 1 FROM orgs WHERE id = ANY(%s) ORDER BY id FOR NO KEY UPDATE", (org_ids,))


def lock_leaving(conn: psycopg.Connection, user_id: int) -> tuple[str, list[tuple[str, str, int]]]:
    """Inside a transaction, before the user's account is deleted: their name, and (org, their role,
    its owners) for each organisation they belong to, all held until the transaction ends. NotFound
    when the account is gone already."""
    orgs = [org_id for (org_id,) in conn.execute("SELECT org_id FROM members WHERE user_id = %s", (user_id,))]
    _lock_orgs(conn, orgs)
    row = conn.execute("SELECT name FROM users WHERE id = %s FOR UPDATE", (user_id,)).fetchone()
    if row is None:
        raise NotFound("this account is deleted already")
    rows = conn.execute(
        "SELECT o.name, m.role, (SELECT count(*) FROM members w WHERE w.org_id = o.id AND w.role = 'owner')"
        " FROM members m JOIN orgs o ON o.id = m.org_id WHERE m.user_id = %s ORDER BY o.name",
        (user_id,),
    ).fetchall()
    return row[0], [(org, role, int(owners)) for org, role, owners in rows]


def invite(conn: psycopg.Connection, org_id: int, org: str, invitee: str, role: str, by: int) -> Invitation:
    """An invitation for an email address or a @GitHub handle; its token is shown once and is what
    the invitee presents (there is no mail server: the inviter passes it on)."""
    if role not in auth.ROLES or role == "owner":
        raise BadInput(f"an invitation's role is viewer, member or admin, not {role!r}")
    if not (re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", invitee) or re.fullmatch(r"@[A-Za-z0-9-]{1,39}", invitee)):
        raise BadInput(f"{invitee!r} is neither an email address nor a GitHub handle like @octocat")
    token = auth.mint_invitation()
    expires_at = conn.execute("SELECT now() + %s", (timedelta(days=INVITATION_DAYS),)).fetchone()
    assert expires_at is not None
    row = conn.execute(
        "INSERT INTO invitations (org_id, invitee, role, hash, invited_by, expires) VALUES (%s, %s, %s, %s, %s, %s)"
        " RETURNING id",
        (org_id, invitee.lower(), role, auth.digest(token), by, expires_at[0]),
    ).fetchone()
    assert row is not None
    return Invitation(row[0], org, invitee.lower(), role, expires_at[0], token)


def accept(conn: psycopg.Connection, token: str, user_id: int) -> Joined:
    """Join the org an invitation names, with its role. Only the user the
    invitation names (by their email or GitHub handle) can accept it: a token passed on to the wrong
    person is of no use to them."""
    with conn.transaction():
        row = conn.execute(
            "SELECT i.id, i.org_id, o.name, i.role, i.expires < now(), i.accepted IS NOT NULL,"
            " i.invitee IN (lower(u.email), '@' || u.github)"
            " FROM invitations i JOIN orgs o ON o.id = i.org_id JOIN users u ON u.id = %s"
            " WHERE i.hash = %s FOR UPDATE OF i",
            (user_id, auth.digest(token)),
        ).fetchone()
        if row is None:
            raise NotFound("this invitation is not known here: ask for a new one")
        invitation_id, org_id, org, role, expired, used, addressed_to_caller = row
        if not addressed_to_caller:
            raise auth.Forbidden("this invitation is for another email address or GitHub handle than yours")
        _check_usable(expired, used)
        conn.execute(
            "INSERT INTO members (org_id, user_id, role) VALUES (%s, %s, %s) ON CONFLICT (org_id, user_id) DO NOTHING",
            (org_id, user_id, role),
        )
        conn.execute(
            "UPDATE invitations SET accepted = now(), accepted_by = %s WHERE id = %s", (user_id, invitation_id)
        )
    return Joined(org_id, org, role, user_id)


def bind_scope(conn: psycopg.Connection, org_id: int, scope: str, by: int) -> None:
    conn.execute(
        "INSERT INTO shared_scopes (org_id, scope, bound_by) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
        (org_id, scope, by),
    )


def unbind_scope(conn: psycopg.Connection, org_id: int, scope: str) -> None:
    row = conn.execute(
        "DELETE FROM shared_scopes WHERE org_id = %s AND scope = %s RETURNING scope", (org_id, scope)
    ).fetchone()
    if row is None:
        raise NotFound(f"{scope} is not shared by this organisation")


def shared_scopes(conn: psycopg.Connection, org_id: int) -> list[str]:
    rows = conn.execute("SELECT scope FROM shared_scopes WHERE org_id = %s ORDER BY scope", (org_id,)).fetchall()
    return [row[0] for row in rows]


def _check_usable(expired: bool, used: bool) -> None:
    if used:
        raise Conflict("this invitation was used already: ask for a new one")
    if expired:
        raise Conflict("this invitation has expired: ask for a new one")


def join_as_new_user(conn: psycopg.Connection, token: str, name: str) -> tuple[Joined, NewToken]:
    """Accept an invitation as someone without an account yet: the user `name` is made with the
    invitation's email or GitHub handle, joins, and gets a first read-write token. Nothing is made
    when any step fails."""
    row = conn.execute(
        "SELECT invitee, expires < now(), accepted IS NOT NULL FROM invitations WHERE hash = %s",
        (auth.digest(token),),
    ).fetchone()
    if row is None:
        raise NotFound("this invitation is not known here: ask for a new one")
    invitee, expired, used = row
    _check_usable(expired, used)
    with conn.transaction():
        user = (
            add_user(conn, name, github=invitee[1:]) if invitee.startswith("@") else add_user(conn, name, email=invitee)
        )
        return accept(conn, token, user.id), create_token(conn, user.id, "rw", name="first token")
