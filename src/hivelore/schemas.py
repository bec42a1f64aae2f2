"""The JSON shapes of hivelore's records, as pydantic models: what the MCP tools answer.

The SDK turns each tool's result model into its `outputSchema` and `structuredContent`. A model
restates its record's fields (tests/test_schemas.py holds the two equal, naming what a model leaves
out on purpose), so a field added to a record fails that test until its shape says it too.

Only the JSON surfaces import this module (pydantic is slow to import); nothing below them does.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from hivelore.memory.model import Memory


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
    cites: dict[str, str] = Field(
        default_factory=dict,
        description="The code it cites (symbol id or file path) with the code graph's hash when it was written.",
    )
    when: str = ""  # the symptoms in plain words, when the writer gave them

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
    stale: str = Field(
        default="",
        description='"code changed since: …" or "cites code that no longer exists: …" when code it cites moved on.',
    )


WARNINGS: list[str] = Field(
    default_factory=list,
    description="What the read passed over, e.g. a memory file skipped as unreadable (the CLI prints these on stderr).",
)


class SearchOut(BaseModel):
    scopes: list[str]
    hits: list[Hit]
    warnings: list[str] = WARNINGS


class ScopeGroup(BaseModel):
    scope: str
    memories: list[MemoryOut]


class ListOut(BaseModel):
    groups: list[ScopeGroup]
    warnings: list[str] = WARNINGS


class ForgetOut(BaseModel):
    forgotten: str
    path: str


class NotCommittedOut(BaseModel):
    address: str
    reason: str = Field(description="Why it stayed as it was: not found, already committed, the guard refused it …")


class CommitOut(BaseModel):
    committed: list[MemoryOut]
    not_committed: list[NotCommittedOut]


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


class LintProblem(BaseModel):
    kind: str = Field(description="stale, near-duplicate, malformed or volatile-key")
    address: str = Field(description="SCOPE::KEY, or for a file that cannot be read its path")
    detail: str


class LintOut(BaseModel):
    scopes: list[str]
    memories: int = Field(description="visible memories looked at")
    counts: dict[str, int]
    problems: list[LintProblem]
    warnings: list[str] = WARNINGS


class StatsOut(BaseModel):
    scopes: list[str]
    visible: int
    hidden: dict[str, int] = Field(description="archived, expired")
    by_scope: dict[str, int]
    by_kind: dict[str, int]
    by_tier: dict[str, int]
    by_state: dict[str, int]
    citing_code: int
    stale: dict[str, int] = Field(description="per verdict: code changed since, cites code that no longer exists")
    expiring_within_days: dict[str, int] = Field(description="days, count")


class ProfileFileOut(BaseModel):
    profile: str
    name: str = Field(description="USER.md, MEMORY.md or SOUL.md")
    text: str


class ProfileLine(BaseModel):
    file: str = Field(description="USER.md, MEMORY.md, SOUL.md or shared/NAME.md")
    line: str


class ProfileSearchOut(BaseModel):
    profile: str
    lines: list[ProfileLine]


class Neighbour(BaseModel):
    symbol: str
    distance: int = Field(description="Call hops from the symbol asked about.")


class BlastRadiusOut(BaseModel):
    symbol: str
    callers: list[Neighbour] = Field(description="What calls the symbol within the hops, nearest first.")


class PathOut(BaseModel):
    path: list[str] | None = Field(description="The shortest call chain, caller first; null: no chain.")


class Hotspot(BaseModel):
    symbol: str
    pagerank: float
    betweenness: float


class HotspotsOut(BaseModel):
    hotspots: list[Hotspot]


class TaskOut(BaseModel):
    id: int
    title: str
    owner: str
    status: str


class ConflictOut(BaseModel):
    symbol: str = Field(description="The symbol you would edit.")
    claimed: str = Field(description="The symbol another developer's task claimed.")
    path: list[str] = Field(description="The shortest call path between them, caller first.")
    developer: str
    task: TaskOut


class ConflictsOut(BaseModel):
    conflicts: list[ConflictOut]


class Expert(BaseModel):
    developer: str
    score: float
    claims: int
    attempts: int
    decisions: int


class WhoKnowsOut(BaseModel):
    symbol: str
    developers: list[Expert]


class DecisionOut(BaseModel):
    id: int
    text: str
    developer: str
    symbols: list[str]


class AttemptOut(BaseModel):
    command: str
    outcome: str
    failed: list[str]
    developer: str
    count: int
    resolved: bool


class WhyOut(BaseModel):
    symbol: str
    current: list[DecisionOut]
    superseded: list[DecisionOut]
    attempts: list[AttemptOut]
    people: list[str]


class Card(BaseModel):
    task: TaskOut
    claims: int
    failed_attempts: int
    last_note: str | None


class TaskBoardOut(BaseModel):
    repo: str
    tasks: list[Card]


class SymbolHistoryOut(BaseModel):
    symbol: str
    failed: list[AttemptOut] = Field(description="Failed test runs on the symbol, latest first.")
    decisions: list[DecisionOut] = Field(description="Its active decisions, newest first.")
    claimed_by: list[TaskOut] = Field(description="Other developers' active tasks that claimed it.")


class CodeHistoryOut(BaseModel):
    asked: list[str] = Field(description="The files and symbol ids asked about, as the code graph names them.")
    symbols: list[str] = Field(description="The symbols looked at: those of the files, and the named ones.")
    history: list[SymbolHistoryOut] = Field(description="The symbols with failed attempts, decisions or claims.")
    lessons: list[MemoryOut] = Field(description="Lessons that name these symbols.")
    problem: str | None = Field(description="Why there is nothing to look at (no git repository, no graph yet).")


class RejectedChange(BaseModel):
    change: str = Field(description="The change the server refused, like `write repo::acme/shop::key`.")
    why: str = Field(description="The server's sentence.")


class RemoteStatusOut(BaseModel):
    mode: str = Field(description="local (this machine's memories only) or remote (the team server's beside them).")
    endpoint: str | None = Field(description="The team server this folder names; None when it names none.")
    endpoint_decided_by: str | None = Field(description="The setting or file that named it.")
    token: str | None = Field(description="Where the token comes from (never the token itself).")
    withheld: str | None = Field(description="Why no token is sent to this server, when none is.")
    reachable: bool = Field(description="Whether the server answered just now.")
    unreachable: str | None = Field(description="Why it did not, when it did not.")
    user: str | None = Field(description="Who the token is, as the server says.")
    orgs: dict[str, str] = Field(description="Per organisation the user belongs to, their role.")
    mirror_synced_seconds_ago: float | None = Field(
        description="How old this machine's copy of the server's memories is (what reads show); None: never synced."
    )
    mirror_pending: int = Field(description="Memories written here that the server has not confirmed yet.")
    outbox_waiting: int = Field(description="Changes waiting to be sent to the server.")
    outbox_rejected: list[RejectedChange] = Field(description="Changes the server refused.")
    problem: str | None = Field(description="Why the outbox could not be sent or the mirror synced just now.")


class OrgScopesOut(BaseModel):
    orgs: dict[str, list[str]] = Field(description="Per organisation, the scopes it shares with its members.")
    roles: dict[str, str] = Field(description="Per organisation, the user's role (empty when the server is away).")
    shared_here: dict[str, str] = Field(
        description="Scopes of this folder's chain that an organisation shares, with the organisation: a "
        "memory_write under one of them goes to the team (a branch scope follows its repository's sharing)."
    )
    synced_seconds_ago: float | None = Field(description="How old the sharing shown is (the mirror's last sync).")
    warnings: list[str] = Field(description="Why this may be incomplete or old.")
