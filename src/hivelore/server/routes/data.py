"""The caller's own data on the team server (`/v1/me/…`): export everything they own, as the
records `hivelore export` writes and `hivelore import` reads."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from hivelore.server.memories import memberships
from hivelore.server.postgres.owned import owned
from hivelore.server.routes.dependencies import Caller, Conn

router = APIRouter(prefix="/v1/me", tags=["data"])


class ExportOut(BaseModel):
    records: list[dict[str, object]] = Field(description="one `hivelore export` JSONL line each, by scope then key")


@router.get("/export")
def export(who: Caller, conn: Conn, include_hidden: bool = False) -> ExportOut:
    """Every memory the caller owns: their personal space, and what they first wrote in the spaces
    of their organisations. A token limited to some scopes exports those scopes only."""
    who.may_read()
    orgs = [m.org_id for m in memberships(conn, who.user_id)]
    records = [m.to_dict() for m in owned(conn, who.user_id, orgs, include_hidden) if who.allows(str(m.scope))]
    return ExportOut(records=records)
