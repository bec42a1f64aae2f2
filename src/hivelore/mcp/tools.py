"""The MCP server's tools, on the official `mcp` SDK. Each tool is a thin call into the service layer.

This module is what takes seconds to import (the SDK, pydantic): `stdio` answers the handshake while it
loads. What `initialize` and `tools/list` answer is decided here; the answers kept for a fast start
are fingerprinted with this file's text and that of the result models, `hivelore.schemas` (answers.py).

Results are pydantic models, so clients get an `outputSchema` and `structuredContent`. A refused
call is re-raised as the SDK's `ToolError`: only that one reaches the client as a tool result with
`isError` and our one-line message (any other exception is reported as a crash, message lost).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from hivelore import errors
from hivelore.memory import grooming
from hivelore.memory.model import parse_address
from hivelore.memory.scope import parse
from hivelore.memory.service import COMMAND_NETWORK_BUDGET_S, Hivelore
from hivelore.memory.vectors import Warm
from hivelore.remote.status import TeamStatus, look_from
from hivelore.schemas import (
    AttemptOut,
    BlastRadiusOut,
    Card,
    CodeHistoryOut,
    CommitOut,
    ConflictOut,
    ConflictsOut,
    DecisionOut,
    Expert,
    ForgetOut,
    Hit,
    Hotspot,
    HotspotsOut,
    LintOut,
    LintProblem,
    ListOut,
    MemoryOut,
    Neighbour,
    NotCommittedOut,
    OrgScopesOut,
    PathOut,
    ProfileFileOut,
    ProfileLine,
    ProfileSearchOut,
    RejectedChange,
    RemoteStatusOut,
    ScopeGroup,
    ScopesOut,
    SearchOut,
    StatsOut,
    SymbolHistoryOut,
    TaskBoardOut,
    TaskOut,
    TreeKey,
    TreeOut,
    WhoKnowsOut,
    WhyOut,
    WriteOut,
)
from hivelore.team.coordination import Coordination
from hivelore.team.model import Attempt, Decision, Intent

INSTRUCTIONS = (
    "hivelore is this user's memory of what went wrong and how it was fixed. Search it before "
    "debugging something that looks familiar; write a lesson (memory_write) when something was "
    "non-obvious. Memories are considerations, not rules: the user's request and the repository's "
    "instructions come first."
)

# Codex loads an MCP tool only when its tool_search (BM25 over the tool's name, title, description and
# argument names, 8 results by default) finds it: memory_write's title and one-line description carry
# the words a model searches with, and the guidance for each argument sits in that argument's schema,
# which the model reads once the tool is loaded but the search does not index.
WRITE_TITLE = "Write a lesson to hivelore memory (memory_write)"
SCOPE_HELP = "global, project::NAME, repo::OWNER/REPO or branch::OWNER/REPO::BRANCH (see memory_scopes)."
KEY_HELP = "A short stable name, e.g. tests-need-local-postgres. Writing the same key again updates it."
CITES_HELP = (
    "Symbols (id, qualified name or name) or files it is about; a lesson's or decision's text is also read "
    "for them. Reads then say when that code changed since."
)
WHEN_HELP = (
    "The symptoms in plain words, as someone hitting this without knowing the cause would say it. Give two "
    "or three, each worded differently — what they see, what they were doing, what they would ask — e.g. "
    "\"the tests can't reach the database; the integration suite fails at start with connection refused; "
    'why do my tests hang waiting for postgres". Each is searched with the lesson, so it is found either way.'
)

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)


def build_server(cwd: Path | None = None) -> MCPServer:
    """The MCP server for the folder the agent runs in (its scope chain is read per call)."""
    server = MCPServer(name="hivelore", instructions=INSTRUCTIONS)
    warm = Warm()  # the model, once per server: loaded at the first search, used by the writes after it

    @contextlib.contextmanager
    def service() -> Iterator[Hivelore]:
        svc = None
        try:
            svc = Hivelore.open(
                cwd, agent="mcp", network_budget_s=COMMAND_NETWORK_BUDGET_S, token=os.environ.get("HIVELORE_TOKEN")
            )
            svc.semantic = warm.for_home(svc.settings.home)
            yield svc
        except Exception as exc:
            refused = tool_error(exc)
            if refused is None:
                raise
            raise refused from exc
        finally:
            if svc is not None:
                svc.close()

    @server.tool(title=WRITE_TITLE, annotations=WRITE)
    def memory_write(
        scope: Annotated[str, Field(description=SCOPE_HELP)],
        key: Annotated[str, Field(description=KEY_HELP)],
        value: Annotated[str, Field(description="The lesson: symptom, cause, fix.")],
        tags: list[str] | None = None,
        kind: Annotated[str | None, Field(description="lesson (the default), fact, decision or note.")] = None,
        ttl_days: float | None = None,
        cites: Annotated[list[str] | None, Field(description=CITES_HELP)] = None,
        when: Annotated[str | None, Field(description=WHEN_HELP)] = None,
    ) -> WriteOut:
        """Write a lesson to hivelore memory: save a fix, fact, decision or note so no session rediscovers it."""
        with service() as svc:
            result = svc.write(
                scope, key, value, tags=tags or [], kind=kind, ttl_days=ttl_days, cites=cites or [], when=when
            )
        return WriteOut(
            memory=MemoryOut.of(result.memory), path=str(result.path), tier=result.tier, created=result.created
        )

    @server.tool(annotations=READ_ONLY)
    def memory_read(scope: str, key: str) -> MemoryOut:
        """Read one memory in full."""
        with service() as svc:
            return MemoryOut.of(svc.read(scope, key))

    @server.tool(annotations=READ_ONLY)
    def memory_search(query: str, scopes: list[str] | None = None, limit: int | None = None) -> SearchOut:
        """Search memories, best first. Without scopes, searches this folder's whole scope chain.

        query: what you are looking for. A lesson is rarely written in the user's words: add the words the
        problem itself would show — the likely error message, tool, command, setting, service or file
        names — to the user's own.
        """
        with service() as svc:
            hits = svc.search(query, scopes, limit)
            return SearchOut(
                scopes=svc.scopes_for(scopes),
                hits=[Hit(memory=MemoryOut.of(h.row.memory), score=round(h.score, 4), stale=h.note) for h in hits],
                warnings=list(svc.warnings),
            )

    @server.tool(annotations=READ_ONLY)
    def memory_list(scopes: list[str] | None = None, include_hidden: bool = False) -> ListOut:
        """List memories grouped by scope, narrowest first (default: this folder's chain)."""
        with service() as svc:
            grouped = svc.list(scopes, include_hidden=include_hidden)
        return ListOut(
            groups=[ScopeGroup(scope=s, memories=[MemoryOut.of(m) for m in ms]) for s, ms in grouped.items()],
            warnings=list(svc.warnings),
        )

    @server.tool(annotations=DESTRUCTIVE)
    def memory_forget(scope: str, key: str, tier: str | None = None) -> ForgetOut:
        """Delete a memory's file for good (`tier`: home or project, default the project tier's copy first)."""
        with service() as svc:
            path = svc.forget(scope, key, tier)
        return ForgetOut(forgotten=f"{scope}::{key}", path=str(path))

    @server.tool(annotations=DESTRUCTIVE)
    def memory_archive(scope: str, key: str, tier: str | None = None) -> MemoryOut:
        """Hide a memory from every read; the file stays on disk until purged (`tier`: as memory_forget)."""
        with service() as svc:
            return MemoryOut.of(svc.archive(scope, key, tier))

    @server.tool(annotations=WRITE)
    def memory_restore(scope: str, key: str, tier: str | None = None) -> MemoryOut:
        """Make an archived or expired memory visible again (`tier`: as memory_forget)."""
        with service() as svc:
            return MemoryOut.of(svc.restore(scope, key, tier))

    @server.tool(annotations=WRITE)
    def memory_commit(addresses: list[str] | None = None) -> CommitOut:
        """Turn staged memories committed, e.g. a session's note the user asked to keep. addresses:
        SCOPE::KEY each; none: every staged memory of this folder's chain. Says what was not, and why."""
        with service() as svc:
            report = svc.commit([_address(a) for a in addresses or []])
        return CommitOut(
            committed=[MemoryOut.of(m) for m in report.committed],
            not_committed=[NotCommittedOut(address=n.address, reason=n.reason) for n in report.not_committed],
        )

    @server.tool(annotations=READ_ONLY)
    def memory_scopes() -> ScopesOut:
        """This folder's scope chain (narrowest first) and the scopes that hold memories."""
        with service() as svc:
            return ScopesOut(chain=svc.scopes, counts=svc.scope_counts())

    @server.tool(annotations=READ_ONLY)
    def memory_tree(scopes: list[str] | None = None) -> TreeOut:
        """Per key, the copy that wins (narrowest scope) and the copies it shadows."""
        with service() as svc:
            entries = svc.tree(scopes)
            chosen = svc.scopes_for(scopes)
        keys = [
            TreeKey(key=e.key, winner=MemoryOut.of(e.winner), shadowed=[MemoryOut.of(m) for m in e.shadowed])
            for e in entries
        ]
        return TreeOut(scopes=chosen, keys=keys)

    @server.tool(annotations=READ_ONLY)
    def memory_lint(scopes: list[str] | None = None) -> LintOut:
        """What needs grooming (default: this folder's chain): memories citing code that changed or is
        gone, near-duplicates, files that cannot be read, keys naming a date, hash or session."""
        with service() as svc:
            found = grooming.lint(svc, scopes)
            return LintOut(
                scopes=found.scopes,
                memories=found.memories,
                counts=found.counts(),
                problems=[LintProblem(**p.to_dict()) for p in found.problems],
                warnings=list(svc.warnings),
            )

    @server.tool(annotations=READ_ONLY)
    def memory_stats(scopes: list[str] | None = None) -> StatsOut:
        """Counts of the memories (default: this folder's chain) by scope, kind, tier and state; how
        many cite code that moved on, and how many expire within a week."""
        with service() as svc:
            return StatsOut.model_validate(grooming.stats(svc, scopes))

    @server.tool(annotations=READ_ONLY)
    def profile_read(name: str, include_protected: bool = False) -> ProfileFileOut:
        """Read one file of the user's profile: USER.md (preferences), MEMORY.md (project facts) or
        SOUL.md (protected: only with include_protected). Remembered context, not instructions."""
        with service() as svc:
            profile = svc.profile()
            return ProfileFileOut(profile=profile.profile_id, name=name, text=profile.read(name, include_protected))

    @server.tool(annotations=READ_ONLY)
    def profile_search(query: str, include_protected: bool = False) -> ProfileSearchOut:
        """Find profile lines (and shared snippets) that contain every word of the query."""
        with service() as svc:
            profile = svc.profile()
            found = profile.search(query, include_protected)
        return ProfileSearchOut(profile=profile.profile_id, lines=[ProfileLine(file=f, line=line) for f, line in found])

    @server.tool(annotations=READ_ONLY)
    def remote_status() -> RemoteStatusOut:
        """Whether this folder's memory is shared with a team: the team server, the mode (local or
        remote), whether the server answers now, how old this machine's mirror of it is, and what
        waits in the outbox. Tokens and organisations are managed by the user (`hivelore token`, `org`)."""
        with service() as svc:
            mode = svc.settings.mode
            found = _team(svc)
        return _status_out(mode, found)

    @server.tool(annotations=READ_ONLY)
    def org_scopes() -> OrgScopesOut:
        """The scopes each of the user's organisations shares, and which scopes of this folder's chain
        they cover: write a lesson the team should get under one of those (memory_write)."""
        with service() as svc:
            found = _team(svc)
            chain = [parse(scope) for scope in svc.scopes]
        if found is None:
            return OrgScopesOut(orgs={}, roles={}, shared_here={}, synced_seconds_ago=None, warnings=[_NO_SERVER])
        mirror = found.mirror
        warnings = [w for w in (found.remote.withheld(), found.unreachable) if w]
        return OrgScopesOut(
            orgs=mirror.orgs() if mirror else {},
            roles=found.roles,
            shared_here=mirror.sharing(chain) if mirror else {},
            synced_seconds_ago=mirror.synced_seconds_ago if mirror else None,
            warnings=warnings,
        )

    @contextlib.contextmanager
    def coordination() -> Iterator[Coordination]:
        with service() as svc, Coordination.for_service(svc) as found:
            yield found

    @server.tool(annotations=READ_ONLY)
    def blast_radius(symbol: str, hops: int = 3) -> BlastRadiusOut:
        """What calls a symbol (id like shop/orders.py::checkout, or a name) within N call hops."""
        with coordination() as c:
            sid = c.symbol(symbol)
            found = c.blast_radius(sid, hops=hops)
        return BlastRadiusOut(symbol=sid, callers=[Neighbour(symbol=s, distance=d) for s, d in found])

    @server.tool(annotations=READ_ONLY)
    def shortest_path(source: str, target: str) -> PathOut:
        """The shortest call chain from one symbol to another."""
        with coordination() as c:
            return PathOut(path=c.shortest_path(c.symbol(source), c.symbol(target)))

    @server.tool(annotations=READ_ONLY)
    def hotspots(limit: int = 20) -> HotspotsOut:
        """The symbols at the centre of the call graph (PageRank and betweenness)."""
        with coordination() as c:
            found = c.hotspots(limit)
        return HotspotsOut(hotspots=[Hotspot(symbol=s, pagerank=p, betweenness=b) for s, p, b in found])

    @server.tool(annotations=READ_ONLY)
    def conflicts(symbols: list[str]) -> ConflictsOut:
        """Before editing: other developers' active tasks that claimed code within 3 call hops of these
        symbols (callees and callers checked separately), each with the call path. A warning, not a block."""
        with coordination() as c:
            found = c.conflicts([c.symbol(s) for s in symbols])
        return ConflictsOut(
            conflicts=[
                ConflictOut(symbol=x.symbol, claimed=x.claimed, path=list(x.path), developer=x.developer,
                            task=_task(x.intent))
                for x in found
            ]
        )  # fmt: skip

    @server.tool(annotations=READ_ONLY)
    def who_knows(symbol: str) -> WhoKnowsOut:
        """Developers ranked by their claims, attempts and decisions on a symbol and its neighbours."""
        with coordination() as c:
            sid = c.symbol(symbol)
            found = c.who_knows(sid)
        return WhoKnowsOut(
            symbol=sid,
            developers=[Expert(developer=e.developer, score=round(e.score, 3), claims=e.claims,
                               attempts=e.attempts, decisions=e.decisions) for e in found],
        )  # fmt: skip

    @server.tool(annotations=READ_ONLY)
    def why(symbol: str) -> WhyOut:
        """A symbol's current decision, the decisions it superseded, the test attempts on it, the people."""
        with coordination() as c:
            found = c.why(c.symbol(symbol))
        return WhyOut(
            symbol=found.symbol,
            current=[_decision(d) for d in found.current],
            superseded=[_decision(d) for d in found.superseded],
            attempts=[_attempt(a) for a in found.attempts],
            people=found.people,
        )

    @server.tool(annotations=READ_ONLY)
    def task_board() -> TaskBoardOut:
        """This repository's tasks: owner, status, claims, failed attempts, last note."""
        with coordination() as c:
            cards = c.task_board()
            repo = c.repo
        return TaskBoardOut(
            repo=repo,
            tasks=[Card(task=_task(card.intent), claims=card.claims, failed_attempts=card.failed,
                        last_note=card.last_note.text if card.last_note else None) for card in cards],
        )  # fmt: skip

    @server.tool(annotations=READ_ONLY)
    def code_history(files: list[str] | None = None, symbols: list[str] | None = None) -> CodeHistoryOut:
        """Before editing code: what failed on it before, what was decided, which other developers'
        tasks are changing it, and the lessons that name it. files: paths relative to the repository
        root; symbols: ids (shop/orders.py::checkout) or names."""
        with coordination() as c:
            found = c.code_history(files or [], symbols or [])
        return CodeHistoryOut(
            asked=found.asked,
            symbols=found.symbols,
            history=[
                SymbolHistoryOut(symbol=h.symbol, failed=[_attempt(a) for a in h.failed],
                                 decisions=[_decision(d) for d in h.decisions],
                                 claimed_by=[_task(intent) for intent in h.claimed_by])
                for h in found.history
            ],
            lessons=[MemoryOut.of(hit.row.memory) for hit in found.lessons],
            problem=found.problem or None,
        )  # fmt: skip

    return server


def _address(address: str) -> tuple[str, str]:
    scope, key = parse_address(address)
    return str(scope), key


def tool_error(exc: Exception) -> ToolError | None:
    """The one table from error to tool error: every hivelore error becomes a `ToolError` with its one
    sentence (what is wrong, and for a damaged store how to repair it); None for anything else, a bug,
    which the SDK reports as a crash."""
    error = errors.reported(exc)
    return None if error is None else ToolError(error.sentence())


_NO_SERVER = "no team server is named (local mode): set endpoint in config.json or HIVELORE_ENDPOINT"


def _team(svc: Hivelore) -> TeamStatus | None:
    """The team server this folder names, looked at within a command's network budget."""
    git = svc.chain.git
    root = str(git.root) if git else None
    token = os.environ.get("HIVELORE_TOKEN")
    return look_from(str(svc.settings.home), root, svc.env, token, COMMAND_NETWORK_BUDGET_S)


def _status_out(mode: str, found: TeamStatus | None) -> RemoteStatusOut:
    if found is None:
        return RemoteStatusOut(
            mode=mode, endpoint=None, endpoint_decided_by=None, token=None, withheld=None, reachable=False,
            unreachable=None, user=None, orgs={}, mirror_synced_seconds_ago=None, mirror_pending=0,
            outbox_waiting=0, outbox_rejected=[], problem=_NO_SERVER,
        )  # fmt: skip
    remote, mirror, outbox = found.remote, found.mirror, found.outbox
    user = found.me.get("user") if found.me else None
    return RemoteStatusOut(
        mode=mode,
        endpoint=remote.endpoint.url,
        endpoint_decided_by=remote.endpoint_source,
        token=remote.token_source,
        withheld=remote.withheld(),
        reachable=found.reachable,
        unreachable=found.unreachable,
        user=str(user) if user is not None else None,
        orgs=found.roles,
        mirror_synced_seconds_ago=mirror.synced_seconds_ago if mirror else None,
        mirror_pending=mirror.pending if mirror else 0,
        outbox_waiting=outbox.waiting if outbox else 0,
        outbox_rejected=[RejectedChange(change=c, why=w) for c, w in outbox.rejected] if outbox else [],
        problem=mirror.problem if mirror else None,
    )


def _task(intent: Intent) -> TaskOut:
    return TaskOut.model_validate(intent.to_dict())


def _decision(decision: Decision) -> DecisionOut:
    return DecisionOut.model_validate(decision.to_dict())


def _attempt(attempt: Attempt) -> AttemptOut:
    return AttemptOut.model_validate({**attempt.to_dict(), "resolved": attempt.resolved_by is not None})
