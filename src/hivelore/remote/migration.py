"""`hivelore migrate --to remote`: this machine's memories copied to the team server.

A plan first (`plan`): every memory of the home and project tiers, except the archived and expired
ones and the copies a project-tier copy of the same key shadows (each skip with its reason), and
for each the space the server would put it in (the scope's sharing, as the mirror last heard it)
and whether the server already holds the same text there. The plan is what a dry run shows.

Then `migrate` sends the plan through the server's import (`POST /v1/memories/import`), which runs
every record through the guard again, keeps `created` and derives `updated` and `seen_count` itself;
a record equal to what the server holds changes nothing, so a second run is a no-op. Requests are
paced below the rate limit and a 429 is waited out as its `Retry-After` says. A refused record is
reported with the server's reason and the rest go on. A request refused for the quota (the answer's
code `quota_exceeded`) is split in halves until the records that still fit are in; the first record
refused alone stops the run, and the report says what was copied and what was not. Any other refusal
of the whole request (a read-only token, a role) stops the run at once: no half of it would fare better.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from hivelore import errors
from hivelore.memory.model import Memory
from hivelore.memory.tier import Tier
from hivelore.remote.client import Client, QuotaReached, Refused
from hivelore.remote.mirror import origin_of
from hivelore.remote.tier import PERSONAL, RemoteTier

IMPORT_PATH = "/v1/memories/import"
BATCH = 500  # records per request: the most the server's import takes (server/routes/memories.py)
BATCH_BYTES = 900_000  # of JSON per request: the server refuses a body over 1 MiB
PACE_PER_MINUTE = 60  # requests: half the server's default limit, the rest left to the agents on the token
REQUEST_TIMEOUT_S = 30.0  # an import of 500 records is one transaction on the server
RATE_WAIT_S = 130.0  # a request may wait out two 429s (each Retry-After is at most a minute)
_RECORD = re.compile(r"record (\d+): (.*)", re.DOTALL)


@dataclass(frozen=True)
class Pace:
    """How much one request carries and how often requests go."""

    batch: int = BATCH
    per_minute: float = PACE_PER_MINUTE

    @classmethod
    def of(cls, batch: int | None, per_minute: float | None) -> Pace:
        """The pace asked for (None: the default), or BadInput saying what is allowed."""
        pace = cls(BATCH if batch is None else batch, PACE_PER_MINUTE if per_minute is None else per_minute)
        if not 1 <= pace.batch <= BATCH:
            raise errors.BadInput(f"--batch {pace.batch} is not 1 to {BATCH}: the server takes {BATCH} records at most")
        if not pace.per_minute > 0:
            raise errors.BadInput(f"--per-minute {pace.per_minute:g} is not above 0: give the requests a minute")
        return pace


@dataclass
class Item:
    """One memory of this machine and what a migration does with it."""

    memory: Memory
    tier: str  # home or project: where it is on this machine
    space: str = PERSONAL  # where the server would put it (org:NAME or personal)
    action: str = "new"  # new, update (the server holds other text) or unchanged


@dataclass
class Plan:
    items: list[Item]
    skipped: list[tuple[str, str]]  # (address, why)

    def by_space(self) -> dict[str, int]:
        """How many would be copied (not unchanged) to each space."""
        counts: dict[str, int] = {}
        for item in self.items:
            if item.action != "unchanged":
                counts[item.space] = counts.get(item.space, 0) + 1
        return counts


@dataclass
class Report:
    copied: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (address, the server's reason)
    not_copied: list[str] = field(default_factory=list)  # left when the run stopped
    stopped: str | None = None  # why the run stopped before the end
    requests: int = 0
    waited_s: float = 0.0  # spent waiting out the rate limit (429) or a busy server (503)


def local_items(local: Tier) -> tuple[list[Item], list[tuple[str, str]]]:
    """What this machine holds, by scope and key, and what a migration skips, with why."""
    tiers = {origin: name for name, origin in local.parts.items()}
    copies = local.listed(sorted(local.scopes()), include_hidden=True)
    # The project tier's copy of a key wins over the home tier's, as it does in every read.
    copies.sort(key=lambda c: (c.scope, c.key, tiers.get(c.origin) != "project", c.place))
    items: list[Item] = []
    skipped: list[tuple[str, str]] = []
    taken: set[str] = set()
    for copy in copies:
        memory, tier = copy.memory, tiers.get(copy.origin, copy.origin)
        reason = _skip_reason(memory, tier, memory.address in taken)
        if reason:
            skipped.append((memory.address, reason))
        else:  # a hidden copy shadows nothing, as in reads
            items.append(Item(memory, tier))
            taken.add(memory.address)
    return items, skipped


def _skip_reason(memory: Memory, tier: str, shadowed: bool) -> str | None:
    if memory.archived_at:
        return f"archived ({memory.archived_at}) in the {tier} tier: restore it first to copy it"
    if memory.is_expired():
        return f"expired ({memory.expires_at}) in the {tier} tier"
    if shadowed:
        return f"the {tier} tier's copy is shadowed by the project tier's copy of the same key, which is copied"
    return None


def plan(local: Tier, remote: RemoteTier) -> Plan:
    """Where each memory would go and whether it changes anything there, from the mirror (sync it first)."""
    items, skipped = local_items(local)
    for item in items:
        item.space = remote.sharing(item.memory.scope) or PERSONAL
        there = [
            c.memory
            for c in remote.copies([str(item.memory.scope)], {item.memory.key})
            if c.origin == origin_of(item.space)
        ]
        if there:
            item.action = "unchanged" if _same(there[0], item.memory) else "update"
    return Plan(items, skipped)


def _same(a: Memory, b: Memory) -> bool:
    """What the server's import compares: an equal record changes nothing."""
    return (a.value, a.kind, tuple(a.tags)) == (b.value, b.kind, tuple(b.tags))


def migrate(items: Sequence[Item], client: Client, pace: Pace = Pace()) -> Report:
    """Send `items` to the server's import at `pace`."""
    client.retry_budget_s = max(client.retry_budget_s, RATE_WAIT_S)
    run = _Run(client, secrets.token_hex(8), 60.0 / pace.per_minute)
    batches = _batches([i.memory for i in items], pace.batch)
    for n, memories in enumerate(batches):
        try:
            run.send(memories)
        except errors.HiveloreError as exc:
            run.report.stopped = exc.sentence()
            done = set(run.report.copied) | set(run.report.unchanged) | {a for a, _ in run.report.refused}
            left = [m.address for group in batches[n:] for m in group]
            run.report.not_copied = [a for a in left if a not in done]
            break
    run.report.waited_s = round(client.waited_s, 1)
    return run.report


def _batches(memories: Sequence[Memory], size: int) -> list[list[Memory]]:
    """Groups of at most `size` records and BATCH_BYTES of JSON each, in order."""
    found: list[list[Memory]] = []
    current: list[Memory] = []
    current_bytes = 0
    for memory in memories:
        length = len(json.dumps(memory.to_dict())) + 2  # as the client sends it: ASCII, \u escapes, ", "
        if current and (len(current) >= size or current_bytes + length > BATCH_BYTES):
            found.append(current)
            current, current_bytes = [], 0
        current.append(memory)
        current_bytes += length
    return [*found, current] if current else found


class _Run:
    def __init__(self, client: Client, run_id: str, gap_s: float) -> None:
        self.client, self.run_id, self.gap_s = client, run_id, gap_s
        self.report = Report()
        self.last: float | None = None

    def send(self, memories: list[Memory]) -> None:
        """Import `memories`; a refusal for the quota splits it, down to the one record refused."""
        try:
            answer = self._post(memories)
        except Refused as exc:
            if not _fewer_may_fit(exc) or len(memories) == 1:
                raise
            half = len(memories) // 2
            self.send(memories[:half])
            self.send(memories[half:])
            return
        self.report.copied += [str(a) for a in answer.get("written", [])]
        self.report.unchanged += [str(a) for a in answer.get("unchanged", [])]
        self.report.refused += [_refusal(memories, str(r)) for r in answer.get("rejected", [])]

    def _post(self, memories: list[Memory]) -> dict[str, list[object]]:
        if self.last is not None:
            time.sleep(max(0.0, self.last + self.gap_s - time.monotonic()))
        self.last = time.monotonic()
        self.report.requests += 1
        body = {"records": [m.to_dict() for m in memories], "skip_invalid": True}
        # One key per request of this run: a request whose answer was lost is sent again and applied
        # once; a later run is new work (the server answers it "unchanged" itself).
        key = f"migrate-{self.run_id}-{self.report.requests}"
        answer = self.client.post(IMPORT_PATH, body, idempotency_key=key)
        if not isinstance(answer, dict):
            raise errors.Unavailable("the team server's import answered something that is not a report")
        return answer


def _fewer_may_fit(exc: Refused) -> bool:
    """Whether part of a refused request may still go in: the quota's refusal (a server older than
    the codes says only 403, which then stands for it, as it always did here)."""
    return isinstance(exc, QuotaReached) or not exc.code and exc.status == 403


def _refusal(memories: Sequence[Memory], reason: str) -> tuple[str, str]:
    """(address, why) of one record the server's import refused; it names the record by its place."""
    found = _RECORD.fullmatch(reason)
    if found and 1 <= int(found.group(1)) <= len(memories):
        return memories[int(found.group(1)) - 1].address, found.group(2)
    return "?", reason


def open_remote(home: str, repo_root: str | None, env: Mapping[str, str], token: str | None) -> RemoteTier:
    """The team server this folder names, with its mirror synced: a migration needs the server to answer."""
    from hivelore.remote.credentials import resolve
    from hivelore.remote.replica import Replica

    found = resolve(home, repo_root, env, token=token)
    if found is None:
        raise errors.BadInput(
            "no team server is named: set HIVELORE_ENDPOINT, or put "
            '{"endpoint": "https://…"} in your config.json, then run migrate again'
        )
    if not found.token:
        raise errors.BadInput(found.withheld() or f"no token for {found.endpoint}: run `hivelore remote login`")
    replica = Replica(home, found, budget_s=REQUEST_TIMEOUT_S)
    replica.client.retry_budget_s = RATE_WAIT_S
    try:
        replica.sync()
    except errors.HiveloreError:
        replica.close()
        raise
    return RemoteTier(replica, [], online=True)
