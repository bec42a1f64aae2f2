"""Control over data on the team server. The caller's own (`/v1/me/…`): export everything they own, as
the records `hivelore export` writes and `hivelore import` reads; delete their personal space's data
(restorable within the recovery window, then purged). An organisation's (`/v1/orgs/{org}/…`): its
admins switch memory off for a repository (orgswitch.py), list what the organisation holds and
delete it: its memories, and per repository its team data and the code graph pushed for it. And
the audit log of such actions, the caller's own and (for an admin) their organisation's. Each
data-control action writes a line."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import psycopg
from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel, Field

from hivelore.errors import BadInput
from hivelore.memory.scope import parse
from hivelore.orgswitch import OrgSwitch
from hivelore.server import auth
from hivelore.server.logs import request_id
from hivelore.server.memories import memberships
from hivelore.server.postgres import accounts, audit, erasure, holdings, switches, teamdata
from hivelore.server.postgres import graph as pushed
from hivelore.server.postgres.owned import owned
from hivelore.server.routes.dependencies import Caller, Conn
from hivelore.server.team import repo_scope

router = APIRouter(prefix="/v1", tags=["data"])


class ExportOut(BaseModel):
    records: list[dict[str, object]] = Field(description="one `hivelore export` JSONL line each, by scope then key")
    team: dict[str, list[dict[str, object]]] = Field(
        description="the team rows the caller wrote, in any organisation, by table (intents, sessions, claims,"
        " changes, attempts, decisions, notes), and the warnings their sessions were shown (warnings)"
    )


class AuditLine(BaseModel):
    at: datetime
    actor: str
    org: str | None = Field(description="the organisation acted on; null: the actor's own data")
    action: str
    target: str
    request_id: str


class AuditOut(BaseModel):
    lines: list[AuditLine] = Field(description=f"newest first, at most {audit.MAX_LINES}")


class DeletedOut(BaseModel):
    hidden: int = Field(description="the memories hidden now")
    team_rows: int = Field(description="the team rows you wrote: not hidden, deleted at the purge")
    purge_after: datetime = Field(description="restore them before this; then they are gone")


class RestoredOut(BaseModel):
    restored: int


class SwitchOut(BaseModel):
    org: str
    scope: str = Field(description="repo::OWNER/NAME: memory is off for it and its branches")
    by: str = Field(description="who switched it off")
    at: str = Field(description="when, UTC")

    @classmethod
    def of(cls, switch: OrgSwitch) -> SwitchOut:
        return cls(org=switch.org, scope=switch.scope, by=switch.by, at=switch.at)


class HeldOut(BaseModel):
    scope: str
    key: str
    owner: str | None = Field(description="who first wrote it; null: their account is gone")
    kind: str
    updated: str
    archived: bool


class Address(BaseModel):
    scope: str
    key: str


class HeldPage(BaseModel):
    memories: list[HeldOut] = Field(description="by scope then key, archived and expired ones too")
    next: Address | None = Field(description="pass it as after_scope and after_key for the next page; null: no more")


class ForgottenOut(BaseModel):
    deleted: list[str] = Field(description="the addresses deleted from the organisation's space")


class PushedGraphOut(BaseModel):
    files: int
    symbols: int
    calls: int
    pushed_at: datetime = Field(description="when a push last changed it")
    pushed_by: str | None = Field(description="who made the last push; null: the audit log names none")


class RepoTeamOut(BaseModel):
    repo: str = Field(description="OWNER/NAME")
    intents: int = Field(description="tasks, each with its sessions, claims and changes")
    decisions: int
    attempts: int = Field(description="test runs recorded in its tasks")
    notes: int = Field(description="progress and handoff notes in its tasks")
    graph: PushedGraphOut | None = Field(description="the code graph pushed for it (`hivelore graph push`); null: none")

    @classmethod
    def of(cls, team: teamdata.RepoTeam, graph: pushed.Summary | None) -> RepoTeamOut:
        code = None
        if graph is not None:
            code = PushedGraphOut(
                files=graph.files, symbols=graph.symbols, calls=graph.calls,
                pushed_at=graph.pushed_at, pushed_by=graph.pushed_by,
            )  # fmt: skip
        return cls(**vars(team), graph=code)


def _audit_out(lines: list[audit.Line]) -> AuditOut:
    return AuditOut(lines=[AuditLine(**vars(line)) for line in lines])


def _exported(who: auth.Caller, row: dict[str, object]) -> bool:
    """A row of a repository the token admits; a warning (of no repository) to a token without an
    allow-list only."""
    return who.allows(repo_scope(str(row["repo"]))) if "repo" in row else not who.scopes


@router.get("/me/export")
def export(request: Request, who: Caller, conn: Conn, include_hidden: bool = False) -> ExportOut:
    """Every memory the caller owns: their personal space, and what they first wrote in the spaces
    of their organisations, but none under a repository one of those organisations switched memory
    off for (the server serves nothing of it). A token limited to some scopes exports those scopes
    only."""
    who.may_read()
    joined = memberships(conn, who.user_id)
    off = [switch for membership in joined for switch in membership.off]
    records = [
        m.to_dict()
        for m in owned(conn, who.user_id, [j.org_id for j in joined], include_hidden)
        if who.allows(str(m.scope)) and not any(switch.covers(str(m.scope)) for switch in off)
    ]
    team = {
        table: [row for row in rows if _exported(who, row)]
        for table, rows in teamdata.authored(conn, who.user_id).items()
    }
    rows = sum(len(found) for found in team.values())
    target = f"{len(records)} memories, {rows} team rows"
    audit.record(conn, who.user_id, who.user, "export", target, request_id(request))
    return ExportOut(records=records, team=team)


@router.get("/me/audit")
def my_audit(who: Caller, conn: Conn) -> AuditOut:
    """The data-control actions the caller took, newest first."""
    who.may_read()
    return _audit_out(audit.of_user(conn, who.user_id))


@router.get("/orgs/{org}/audit")
def org_audit(org: str, who: Caller, conn: Conn) -> AuditOut:
    """The data-control actions on the organisation's data, newest first: its admins read them."""
    who.may_read()
    if who.scopes:  # the lines name targets in every scope: a limited token reads none of them
        raise auth.Forbidden(
            f"this token is limited to the scopes {', '.join(who.scopes)}: the organisation's audit log"
            " needs a token without a scope allow-list"
        )
    org_id, role = accounts.role_in(conn, org, who.user_id)
    auth.require_role(role, "admin", org)
    return _audit_out(audit.of_org(conn, org_id))


@router.delete("/me/data")
def delete_my_data(request: Request, who: Caller, conn: Conn) -> DeletedOut:
    """Hide every memory of the caller's personal space at once; purged after the recovery window."""
    who.may_administer("deleting your data")
    erasure.purge(conn)
    erased = erasure.erase(conn, who.user_id, request.app.state.recovery_days)
    target = f"{erased.rows} memories, {erased.team_rows} team rows"
    audit.record(conn, who.user_id, who.user, "delete-data", target, request_id(request))
    return DeletedOut(hidden=erased.rows, team_rows=erased.team_rows, purge_after=erased.purge_after)


@router.post("/me/data/restore")
def restore_my_data(request: Request, who: Caller, conn: Conn) -> RestoredOut:
    """Bring back what `DELETE /v1/me/data` hid, within the recovery window."""
    who.may_administer("restoring your data")
    restored = erasure.restore(conn, who.user_id)
    audit.record(conn, who.user_id, who.user, "restore-data", f"{restored} memories", request_id(request))
    return RestoredOut(restored=restored)


# -- an organisation's data --------------------------------------------------------------------


def _org(conn: psycopg.Connection, who: auth.Caller, org: str, needed: str) -> int:
    org_id, role = accounts.role_in(conn, org, who.user_id)
    auth.require_role(role, needed, org)
    return org_id


@router.get("/orgs/{org}/switches")
def list_switches(org: str, who: Caller, conn: Conn) -> list[SwitchOut]:
    """The repositories the organisation switched memory off for: every member may know."""
    who.may_read()
    return [SwitchOut.of(s) for s in switches.of_org(conn, _org(conn, who, org, "viewer"))]


@router.put("/orgs/{org}/switches/{scope:path}", status_code=204)
def switch_off(org: str, scope: str, request: Request, who: Caller, conn: Conn) -> Response:
    """Switch memory off for a repository: the server keeps and serves nothing under it (or its
    branches) for the organisation's members, and their checkouts of it are off after their next sync."""
    who.may_manage()
    name = switches.check_repo(scope)
    who.may_use_scope(name)
    org_id = _org(conn, who, org, "admin")
    if switches.switch_off(conn, org_id, name, who.user_id, who.user):
        audit.record(conn, who.user_id, who.user, "switch-off", name, request_id(request), org_id)
    return Response(status_code=204)


@router.delete("/orgs/{org}/switches/{scope:path}", status_code=204)
def switch_on(org: str, scope: str, request: Request, who: Caller, conn: Conn) -> Response:
    """Switch memory back on for a repository; mirrors get its memories again at their next sync."""
    who.may_manage()
    name = switches.check_repo(scope)
    who.may_use_scope(name)
    org_id = _org(conn, who, org, "admin")
    switches.switch_on(conn, org_id, name)
    audit.record(conn, who.user_id, who.user, "switch-on", name, request_id(request), org_id)
    return Response(status_code=204)


@router.get("/orgs/{org}/memories")
def org_memories(
    org: str,
    who: Caller,
    conn: Conn,
    scope: str | None = None,
    after_scope: str = "",
    after_key: str = "",
    limit: Annotated[int, Query(ge=1, le=holdings.MAX_PAGE)] = 100,
) -> HeldPage:
    """What the organisation's space holds, a page at a time, for its admins. A token limited to some
    scopes sees those scopes' memories only."""
    who.may_read()
    org_id = _org(conn, who, org, "admin")
    wanted = str(parse(scope)) if scope else None
    if wanted:
        who.may_use_scope(wanted)
    found = holdings.page(conn, org_id, wanted, (after_scope, after_key) if after_scope else None, limit)
    more = len(found) == limit
    return HeldPage(
        memories=[HeldOut(**vars(h)) for h in found if who.allows(h.scope)],
        next=Address(scope=found[-1].scope, key=found[-1].key) if more else None,
    )


@router.delete("/orgs/{org}/memories")
def org_forget(org: str, scope: str, request: Request, who: Caller, conn: Conn, key: str | None = None) -> ForgottenOut:
    """Delete one memory (`key`) or every memory under `scope` (a repository's: its branches' too) from
    the organisation's space, and from its search index; mirrors drop them at their next sync."""
    who.may_manage()
    name = str(parse(scope))
    who.may_use_scope(name)
    org_id = _org(conn, who, org, "admin")
    deleted = holdings.forget(conn, org_id, name, key)
    target = f"{name}::{key}" if key is not None else f"{name} ({len(deleted)} memories)"
    audit.record(conn, who.user_id, who.user, "org-forget", target, request_id(request), org_id)
    return ForgottenOut(deleted=deleted)


@router.get("/orgs/{org}/team")
def org_team(org: str, who: Caller, conn: Conn) -> list[RepoTeamOut]:
    """The organisation's team data, counted per repository, for its admins. A token limited to some
    scopes sees the repositories it admits."""
    who.may_read()
    org_id = _org(conn, who, org, "admin")
    teams = {r.repo: r for r in teamdata.per_repo(conn, org_id)}
    graphs = {g.repo: g for g in pushed.summaries(conn, org_id)}
    return [
        RepoTeamOut.of(teams.get(repo) or teamdata.RepoTeam(repo, 0, 0, 0, 0), graphs.get(repo))
        for repo in sorted(teams.keys() | graphs.keys())
        if who.allows(repo_scope(repo))
    ]


@router.delete("/orgs/{org}/team")
def org_team_forget(org: str, repo: str, request: Request, who: Caller, conn: Conn) -> RepoTeamOut:
    """Delete the organisation's whole team data of one repository (tasks and what hangs on them,
    decisions) and the code graph pushed for it; answers what there was."""
    who.may_manage()
    if not repo.strip() or repo.startswith("repo::"):
        raise BadInput("name the repository as OWNER/NAME, like acme/shop")
    who.may_use_scope(repo_scope(repo))
    org_id = _org(conn, who, org, "admin")
    with conn.transaction():
        graph = next(iter(pushed.summaries(conn, org_id, repo)), None)
        held = teamdata.forget_repo(conn, org_id, repo)
        files = pushed.forget(conn, org_id, repo).files
        target = f"{repo_scope(repo)} team ({held.intents} tasks, {held.decisions} decisions, {files} graph files)"
        audit.record(conn, who.user_id, who.user, "org-team-forget", target, request_id(request), org_id)
    return RepoTeamOut.of(held, graph)
