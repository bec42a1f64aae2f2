"""Who one is, organisations, members, invitations, shared scopes and tokens (`/v1/…`).

Every change to an organisation writes a line of its audit log (postgres/audit.py): a member's role
set or removed, an invitation made or accepted, a scope bound or unbound, the org renamed; deleting
the org takes its log with it, so that line goes to the owner's own log.

Every route names the power it needs — the token's kind (`may_read`, `may_write`, `may_manage`), its
scope allow-list (`may_administer`, `may_use_scope`, `may_grant`) and the caller's role in the org
(`require_role`) — before it touches anything.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field

from hivelore.memory.scope import parse as parse_scope
from hivelore.server import auth
from hivelore.server.logs import request_id
from hivelore.server.postgres import accounts, audit, erasure
from hivelore.server.routes.dependencies import AnyConn, Caller, Conn, caller

router = APIRouter(prefix="/v1", tags=["accounts"])


class OrgRole(BaseModel):
    org: str
    role: str


class Me(BaseModel):
    user: str
    token_kind: str
    token_scopes: list[str]
    orgs: list[OrgRole]


class AccountDeletedOut(BaseModel):
    user: str
    memories: int = Field(description="the memories of your personal space deleted, deleted copies included")
    team_rows: int = Field(description="the team rows you wrote, and the warnings your sessions were shown")
    tokens: int
    orgs: list[str] = Field(description="the organisations you were a member of, and are not now")


class OrgName(BaseModel):
    name: str = Field(description="1-64 lowercase letters, digits, '.', '_' or '-'")


class MemberOut(BaseModel):
    user: str
    role: str
    joined: datetime


class OrgOut(BaseModel):
    org: str
    role: str
    members: list[MemberOut]
    scopes: list[str]


class RoleIn(BaseModel):
    role: str = Field(description="viewer, member, admin or owner")


class InvitationIn(BaseModel):
    invitee: str = Field(description="an email address, or a GitHub handle like @octocat")
    role: str = Field(default="member", description="viewer, member or admin")


class InvitationOut(BaseModel):
    org: str
    invitee: str
    role: str
    expires: datetime
    token: str = Field(description="the invitation token, shown this once: pass it to the invitee")


class JoinIn(BaseModel):
    token: str = Field(description="the hl_inv_ token of an invitation")
    name: str | None = Field(default=None, description="without a token of your own: the user name to create")


class JoinOut(BaseModel):
    org: str
    role: str
    user: str
    token: str | None = Field(default=None, description="a new user's first hl_rw_ token, shown this once")


class TokenIn(BaseModel):
    kind: str = Field(default="rw", description="rw (read and write), ro (read only) or wo (write only)")
    name: str = ""
    scopes: list[str] = Field(default_factory=list, description="scope patterns such as repo::acme/*")
    expires_in_days: int | None = Field(default=None, ge=1, le=3650)


class TokenOut(BaseModel):
    id: int
    kind: str
    name: str
    scopes: list[str]
    created: datetime
    expires: datetime | None
    revoked: datetime | None


class NewTokenOut(TokenOut):
    token: str = Field(description="the token, shown this once")


def _org(conn: psycopg.Connection, who: auth.Caller, org: str, needed: str) -> int:
    org_id, role = accounts.role_in(conn, org, who.user_id)
    auth.require_role(role, needed, org)
    return org_id


def _audit(conn: psycopg.Connection, request: Request, who: auth.Caller, action: str, target: str, org_id: int) -> None:
    audit.record(conn, who.user_id, who.user, action, target, request_id(request), org_id)


@router.get("/me")
def me(who: Caller, conn: Conn) -> Me:
    orgs = [OrgRole(org=org, role=role) for org, role in accounts.orgs_of(conn, who.user_id)]
    return Me(user=who.user, token_kind=who.kind, token_scopes=list(who.scopes), orgs=orgs)


@router.delete("/me")
def delete_me(request: Request, who: Caller, conn: Conn) -> AccountDeletedOut:
    """Delete the caller's account and everything of theirs, at once and for good (postgres/erasure.py);
    409, and nothing deleted, while they are the last owner of an organisation."""
    who.may_administer("deleting your account")
    gone = erasure.delete_account(conn, who.user_id, request_id(request))
    return AccountDeletedOut(user=who.user, **vars(gone))


@router.post("/orgs", status_code=201)
def create_org(body: OrgName, who: Caller, conn: Conn) -> OrgRole:
    who.may_administer("making an organisation")
    accounts.create_org(conn, body.name, who.user_id)
    return OrgRole(org=body.name, role="owner")


@router.get("/orgs/{org}")
def show_org(org: str, who: Caller, conn: Conn) -> OrgOut:
    who.may_read()
    org_id, role = accounts.role_in(conn, org, who.user_id)
    auth.require_role(role, "viewer", org)
    assert role is not None
    members = [MemberOut(user=m.user, role=m.role, joined=m.joined) for m in accounts.members(conn, org_id)]
    return OrgOut(org=org, role=role, members=members, scopes=accounts.shared_scopes(conn, org_id))


@router.patch("/orgs/{org}")
def rename_org(org: str, body: OrgName, request: Request, who: Caller, conn: Conn) -> OrgRole:
    who.may_administer("renaming an organisation")
    org_id = _org(conn, who, org, "owner")
    accounts.rename_org(conn, org_id, body.name)
    _audit(conn, request, who, "rename", f"{org} -> {body.name}", org_id)
    return OrgRole(org=body.name, role="owner")


@router.delete("/orgs/{org}", status_code=204)
def delete_org(org: str, request: Request, who: Caller, conn: Conn) -> Response:
    who.may_administer("deleting an organisation")
    erasure.delete_org(conn, _org(conn, who, org, "owner"))
    audit.record(conn, who.user_id, who.user, "delete-org", org, request_id(request))
    return Response(status_code=204)


@router.put("/orgs/{org}/members/{user}", status_code=204)
def set_role(org: str, user: str, body: RoleIn, request: Request, who: Caller, conn: Conn) -> Response:
    """An admin sets roles up to admin; only an owner makes or unmakes an owner."""
    who.may_administer("setting a member's role")
    org_id, role = accounts.role_in(conn, org, who.user_id)
    current = {m.user: m.role for m in accounts.members(conn, org_id)}.get(user)
    auth.require_role(role, "owner" if "owner" in (body.role, current) else "admin", org)
    accounts.set_role(conn, org_id, user, body.role)
    _audit(conn, request, who, "set-role", f"{user} {current or '-'} -> {body.role}", org_id)
    return Response(status_code=204)


@router.delete("/orgs/{org}/members/{user}", status_code=204)
def remove_member(org: str, user: str, request: Request, who: Caller, conn: Conn) -> Response:
    """An admin removes a member (an owner only by an owner); anyone may leave."""
    who.may_administer("removing a member")
    org_id, role = accounts.role_in(conn, org, who.user_id)
    current = {m.user: m.role for m in accounts.members(conn, org_id)}.get(user)
    if user != who.user:
        auth.require_role(role, "owner" if current == "owner" else "admin", org)
    else:
        auth.require_role(role, "viewer", org)
    accounts.set_role(conn, org_id, user, None)
    _audit(conn, request, who, "remove-member", f"{user} ({current})", org_id)
    return Response(status_code=204)


@router.post("/orgs/{org}/invitations", status_code=201)
def invite(org: str, body: InvitationIn, request: Request, who: Caller, conn: Conn) -> InvitationOut:
    who.may_administer("inviting someone")
    org_id = _org(conn, who, org, "admin")
    made = accounts.invite(conn, org_id, org, body.invitee, body.role, who.user_id)
    _audit(conn, request, who, "invite", f"{made.invitee} as {made.role}", org_id)
    return InvitationOut(org=made.org, invitee=made.invitee, role=made.role, expires=made.expires, token=made.token)


@router.post("/invitations/accept")
def join(body: JoinIn, request: Request, conn: AnyConn) -> JoinOut:
    """With a token: the caller joins. Without one: a new user `name` is made from the invitation."""
    header = request.headers.get("authorization")
    if header is None:
        if not body.name:
            raise auth.Unauthenticated("send your token to join, or a `name` to create your user from the invitation")
        joined, first = accounts.join_as_new_user(conn, body.token, body.name)
        audit.record(
            conn,
            joined.user_id,
            body.name,
            "accept-invitation",
            f"{body.name} as {joined.role}",
            request_id(request),
            joined.org_id,
        )
        return JoinOut(org=joined.org, role=joined.role, user=body.name, token=first.token)
    who = caller(request, conn)
    who.may_administer("joining an organisation")
    joined = accounts.accept(conn, body.token, who.user_id)
    _audit(conn, request, who, "accept-invitation", f"{who.user} as {joined.role}", joined.org_id)
    return JoinOut(org=joined.org, role=joined.role, user=who.user)


@router.get("/orgs/{org}/scopes")
def list_scopes(org: str, who: Caller, conn: Conn) -> list[str]:
    who.may_read()
    return accounts.shared_scopes(conn, _org(conn, who, org, "viewer"))


@router.put("/orgs/{org}/scopes/{scope:path}", status_code=204)
def bind_scope(org: str, scope: str, request: Request, who: Caller, conn: Conn) -> Response:
    who.may_manage()
    name = str(parse_scope(scope))
    who.may_use_scope(name)
    org_id = _org(conn, who, org, "admin")
    accounts.bind_scope(conn, org_id, name, who.user_id)
    _audit(conn, request, who, "bind-scope", name, org_id)
    return Response(status_code=204)


@router.delete("/orgs/{org}/scopes/{scope:path}", status_code=204)
def unbind_scope(org: str, scope: str, request: Request, who: Caller, conn: Conn) -> Response:
    who.may_manage()
    name = str(parse_scope(scope))
    who.may_use_scope(name)
    org_id = _org(conn, who, org, "admin")
    accounts.unbind_scope(conn, org_id, name)
    _audit(conn, request, who, "unbind-scope", name, org_id)
    return Response(status_code=204)


@router.post("/tokens", status_code=201)
def create_token(body: TokenIn, who: Caller, conn: Conn) -> NewTokenOut:
    """A token makes none broader than itself: only hl_rw_ makes tokens (of any kind, none stronger);
    a limited one's own scopes and expiry are the default and the bound (`Caller.may_grant`)."""
    who.may_manage()
    asked = datetime.now(UTC) + timedelta(days=body.expires_in_days) if body.expires_in_days else None
    expires = who.may_grant_until(asked)
    scopes = who.may_grant(auth.check_scope_patterns(body.scopes))
    made = accounts.create_token(conn, who.user_id, body.kind, body.name, scopes, expires)
    return NewTokenOut(token=made.token, **vars(made.info))


@router.get("/tokens")
def list_tokens(who: Caller, conn: Conn) -> list[TokenOut]:
    """A token limited to some scopes lists itself and the tokens it could have made (`Caller.sees_token`)."""
    who.may_manage()
    return [
        TokenOut(**vars(info))
        for info in accounts.tokens_of(conn, who.user_id)
        if who.sees_token(info.id, info.scopes, info.expires)
    ]


@router.delete("/tokens/{token_id}", status_code=204)
def revoke_token(token_id: int, who: Caller, conn: Conn) -> Response:
    """Any token may revoke itself; revoking another of one's tokens needs an hl_rw_ token without a
    scope allow-list, so a leaked limited token cannot lock its owner out of their broader ones."""
    if token_id != who.token_id:
        who.may_administer("revoking another token")
    accounts.revoke_token(conn, who.user_id, token_id)
    return Response(status_code=204)
