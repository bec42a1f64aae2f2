"""The caller's own data on the team server (`/v1/me/…`): export everything they own, as the
records `hivelore export` writes and `hivelore import` reads; delete their personal space's data
(restorable within the recovery window, then purged); and the audit log of such actions, the
caller's own and (for an admin) their organisation's. Each data-control action writes a line."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from hivelore.server import auth
from hivelore.server.logs import request_id
from hivelore.server.memories import memberships
from hivelore.server.postgres import accounts, audit, erasure
from hivelore.server.postgres.owned import owned
from hivelore.server.routes.dependencies import Caller, Conn

router = APIRouter(prefix="/v1", tags=["data"])


class ExportOut(BaseModel):
    records: list[dict[str, object]] = Field(description="one `hivelore export` JSONL line each, by scope then key")


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
    purge_after: datetime = Field(description="restore them before this; then they are gone")


class RestoredOut(BaseModel):
    restored: int


def _audit_out(lines: list[audit.Line]) -> AuditOut:
    return AuditOut(lines=[AuditLine(**vars(line)) for line in lines])


@router.get("/me/export")
def export(request: Request, who: Caller, conn: Conn, include_hidden: bool = False) -> ExportOut:
    """Every memory the caller owns: their personal space, and what they first wrote in the spaces
    of their organisations. A token limited to some scopes exports those scopes only."""
    who.may_read()
    orgs = [m.org_id for m in memberships(conn, who.user_id)]
    records = [m.to_dict() for m in owned(conn, who.user_id, orgs, include_hidden) if who.allows(str(m.scope))]
    audit.record(conn, who.user_id, who.user, "export", f"{len(records)} memories", request_id(request))
    return ExportOut(records=records)


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
    audit.record(conn, who.user_id, who.user, "delete-data", f"{erased.rows} memories", request_id(request))
    return DeletedOut(hidden=erased.rows, purge_after=erased.purge_after)


@router.post("/me/data/restore")
def restore_my_data(request: Request, who: Caller, conn: Conn) -> RestoredOut:
    """Bring back what `DELETE /v1/me/data` hid, within the recovery window."""
    who.may_administer("restoring your data")
    restored = erasure.restore(conn, who.user_id)
    audit.record(conn, who.user_id, who.user, "restore-data", f"{restored} memories", request_id(request))
    return RestoredOut(restored=restored)
