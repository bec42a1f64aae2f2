"""This machine's memories and the team server's, side by side (`hivelore list` and `doctor` in remote mode).

`compare` pairs the copies of each scope::key on both sides and marks the key: only here
(`local-only`), only on the server (`remote-only`), on both with the same text (`both`) or with
other text (`differs`). The server's side is its mirror, so `mirror_state` says as of when.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from hivelore.memory.model import Memory, iso_from_epoch
from hivelore.memory.tier import Tier
from hivelore.remote.replica import FRESH_S
from hivelore.remote.tier import RemoteTier

MARKS = ("both", "differs", "local-only", "remote-only")


@dataclass
class Pair:
    """The copies of one scope::key: here (tier name, memory), on the server (space, memory)."""

    scope: str
    key: str
    local: list[tuple[str, Memory]] = field(default_factory=list)
    remote: list[tuple[str, Memory]] = field(default_factory=list)

    @property
    def mark(self) -> str:
        if not self.remote:
            return "local-only"
        if not self.local:
            return "remote-only"
        texts = {m.value for _, m in self.local} | {m.value for _, m in self.remote}
        return "both" if len(texts) == 1 else "differs"


def compare(local: Tier, remote: RemoteTier, scopes: Sequence[str], include_hidden: bool = False) -> list[Pair]:
    """Every key of `scopes` on either side, by scope (in the order given) and key."""
    if not scopes:
        return []
    pairs: dict[tuple[str, str], Pair] = {}
    for tier, side in ((local, "local"), (remote, "remote")):
        names = {origin: name for name, origin in tier.parts.items()}
        for copy in tier.listed(scopes, include_hidden):
            pair = pairs.setdefault((copy.scope, copy.key), Pair(copy.scope, copy.key))
            getattr(pair, side).append((names.get(copy.origin, copy.origin), copy.memory))
    order = {scope: n for n, scope in enumerate(scopes)}
    return sorted(pairs.values(), key=lambda p: (order.get(p.scope, len(order)), p.key))


def mirror_state(remote: RemoteTier, started: float) -> dict[str, object]:
    """As of when the server's side is shown, and what waits to be sent to it. `live` is true when the
    server answered a sync since `started` (or just before: a fresh mirror is not synced again)."""
    replica = remote.replica
    synced = replica.mirror.synced
    return {
        "endpoint": replica.remote.endpoint.url,
        "live": bool(synced) and synced >= started - FRESH_S,
        "synced_at": iso_from_epoch(synced) if synced else None,
        "synced_seconds_ago": round(time.time() - synced, 1) if synced else None,
        "outbox_waiting": len(replica.outbox.waiting()),
        "outbox_rejected": len(replica.outbox.rejected()),
        "pending_in_mirror": replica.mirror.pending(),
        "mirror": replica.mirror.path,
    }
