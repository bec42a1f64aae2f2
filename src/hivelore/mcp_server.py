"""The stdio MCP server, on the official `mcp` SDK. Each tool is a thin call into the service layer.

Results are pydantic models, so clients get an `outputSchema` and `structuredContent`. Errors
raise, and the SDK turns them into a tool result with `isError` and our one-line message.
"""

from __future__ import annotations

from pathlib import Path

from mcp.server import MCPServer
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from hivelore.memory import Memory
from hivelore.service import Hivelore

INSTRUCTIONS = (
    "hivelore is this user's memory of what went wrong and how it was fixed. Search it before "
    "debugging something that looks familiar; write a lesson (memory_write) when something was "
    "non-obvious. Memories are considerations, not rules: the user's request and the repository's "
    "instructions come first."
)


class MemoryOut(BaseModel):
    scope: str
    key: str
    value: str
    kind: str
    state: str
    tags: list[str]
    created: str
    updated: str
    seen_count: int
    expires_at: str | None
    archived_at: str | None
    provenance: dict[str, str]

    @classmethod
    def of(cls, memory: Memory) -> MemoryOut:
        return cls.model_validate(memory.to_dict())


class WriteOut(BaseModel):
    memory: MemoryOut
    path: str
    tier: str
    created: bool = Field(description="False when an existing memory was updated (its seen_count bumped).")


class Hit(BaseModel):
    memory: MemoryOut
    score: float


class SearchOut(BaseModel):
    scopes: list[str]
    hits: list[Hit]


class ScopeGroup(BaseModel):
    scope: str
    memories: list[MemoryOut]


class ListOut(BaseModel):
    groups: list[ScopeGroup]


class ForgetOut(BaseModel):
    forgotten: str
    path: str


class ScopesOut(BaseModel):
    chain: list[str] = Field(description="This folder's scopes, narrowest first.")
    counts: dict[str, int] = Field(description="Visible memories per scope, for every scope that has any.")


class TreeKey(BaseModel):
    key: str
    winner: MemoryOut
    shadowed: list[MemoryOut]


class TreeOut(BaseModel):
    scopes: list[str]
    keys: list[TreeKey]


READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)
WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False)
DESTRUCTIVE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=False)


def build_server(cwd: Path | None = None) -> MCPServer:
    """The MCP server for the folder the agent runs in (its scope chain is read per call)."""
    server = MCPServer(name="hivelore", instructions=INSTRUCTIONS)

    def service() -> Hivelore:
        return Hivelore.open(cwd, agent="mcp")

    @server.tool(annotations=WRITE)
    def memory_write(
        scope: str,
        key: str,
        value: str,
        tags: list[str] | None = None,
        kind: str = "lesson",
        ttl_days: float | None = None,
    ) -> WriteOut:
        """Write a lesson (or fact, decision, note) so the next session does not rediscover it.

        scope: global, project::NAME, repo::OWNER/REPO or branch::OWNER/REPO::BRANCH (see memory_scopes).
        key: a short stable name, e.g. tests-need-local-postgres. Writing the same key again updates it.
        """
        result = service().write(scope, key, value, tags=tags or [], kind=kind, ttl_days=ttl_days)
        return WriteOut(
            memory=MemoryOut.of(result.memory), path=str(result.path), tier=result.tier, created=result.created
        )

    @server.tool(annotations=READ_ONLY)
    def memory_read(scope: str, key: str) -> MemoryOut:
        """Read one memory in full."""
        return MemoryOut.of(service().read(scope, key))

    @server.tool(annotations=READ_ONLY)
    def memory_search(query: str, scopes: list[str] | None = None, limit: int = 10) -> SearchOut:
        """Search memories, best first. Without scopes, searches this folder's whole scope chain."""
        svc = service()
        hits = svc.search(query, scopes, limit)
        return SearchOut(
            scopes=scopes or svc.scopes,
            hits=[Hit(memory=MemoryOut.of(h.row.memory), score=round(h.score, 4)) for h in hits],
        )

    @server.tool(annotations=READ_ONLY)
    def memory_list(scopes: list[str] | None = None, include_hidden: bool = False) -> ListOut:
        """List memories grouped by scope, narrowest first (default: this folder's chain)."""
        grouped = service().list(scopes, include_hidden=include_hidden)
        return ListOut(
            groups=[ScopeGroup(scope=s, memories=[MemoryOut.of(m) for m in ms]) for s, ms in grouped.items()]
        )

    @server.tool(annotations=DESTRUCTIVE)
    def memory_forget(scope: str, key: str) -> ForgetOut:
        """Delete a memory's file for good."""
        path = service().forget(scope, key)
        return ForgetOut(forgotten=f"{scope}::{key}", path=str(path))

    @server.tool(annotations=DESTRUCTIVE)
    def memory_archive(scope: str, key: str) -> MemoryOut:
        """Hide a memory from every read; the file stays on disk until purged."""
        return MemoryOut.of(service().archive(scope, key))

    @server.tool(annotations=WRITE)
    def memory_restore(scope: str, key: str) -> MemoryOut:
        """Make an archived or expired memory visible again."""
        return MemoryOut.of(service().restore(scope, key))

    @server.tool(annotations=READ_ONLY)
    def memory_scopes() -> ScopesOut:
        """This folder's scope chain (narrowest first) and the scopes that hold memories."""
        svc = service()
        return ScopesOut(chain=svc.scopes, counts=svc.scope_counts())

    @server.tool(annotations=READ_ONLY)
    def memory_tree(scopes: list[str] | None = None) -> TreeOut:
        """Per key, the copy that wins (narrowest scope) and the copies it shadows."""
        svc = service()
        entries = svc.tree(scopes)
        return TreeOut(
            scopes=scopes or svc.scopes,
            keys=[
                TreeKey(key=e.key, winner=MemoryOut.of(e.winner), shadowed=[MemoryOut.of(m) for m in e.shadowed])
                for e in entries
            ],
        )

    return server


def serve() -> None:
    build_server().run("stdio")
