"""What the pages show, computed from the services' records: no HTML here (templates/ has it), and
no web framework, so the rules of a view are plain functions."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from hivelore.memory.model import Memory
from hivelore.memory.service import Hivelore
from hivelore.memory.tier import Candidate

EXPIRING_DAYS = 7  # "expiring soon": hidden by their TTL within this many days
SHOWN = 200  # rows on one page: a vault of 60,000 is narrowed by scope, search or filters, not scrolled
TIERS = ("project", "home", "team server")
DAY = 86_400


@dataclass(frozen=True)
class Filters:
    """What the memories view was asked for; empty strings mean "any"."""

    scope: str = ""
    q: str = ""
    tag: str = ""
    kind: str = ""
    state: str = ""
    tier: str = ""
    archived: bool = False
    expiring: bool = False

    def keeps(self, memory: Memory, tier: str) -> bool:
        if self.archived == memory.is_visible():  # the archived view shows only hidden ones, and back
            return False
        if self.expiring and not (memory.expires_at and memory.is_expired(time.time() + EXPIRING_DAYS * DAY)):
            return False
        return (
            (not self.tag or self.tag in memory.tags)
            and (not self.kind or memory.kind == self.kind)
            and (not self.state or memory.state == self.state)
            and (not self.tier or tier == self.tier)
        )


@dataclass(frozen=True)
class Row:
    copy: Candidate
    tier: str
    score: float | None = None

    @property
    def memory(self) -> Memory:
        return self.copy.memory

    @property
    def path(self) -> Path:  # built only for the rows shown: a Path per copy is most of a 60,000 listing
        return self.copy.path


@dataclass(frozen=True)
class Listing:
    scopes: list[str]  # the scopes read, narrowest first
    rows: list[Row]  # at most SHOWN
    more: int  # matching rows not shown


def tier_names(service: Hivelore) -> dict[str, str]:
    """{origin: tier} for every part the service reads: the repository's `.hivelore/` ("project"), the
    user's home ("home"), and in remote mode the team server's spaces ("team server")."""
    return {
        origin: name if name in ("project", "home") else "team server"
        for tier in service.tiers
        for name, origin in tier.parts.items()
    }


def _tier(names: dict[str, str], copy: Candidate) -> str:
    return names.get(copy.origin, "team server")  # a space the mirror heard of after the names were taken


def listing(service: Hivelore, filters: Filters) -> Listing:
    """The memories the view shows: search hits ranked as `hivelore search` ranks them, or every copy
    in the scopes (by scope, narrowest first, then key); filtered, at most SHOWN of them."""
    scopes = service.scopes_for([filters.scope] if filters.scope else None)
    if filters.q and not filters.archived:
        hits = service.search(filters.q, scopes, limit=SHOWN * 5)
        names = tier_names(service)  # after the first read, which opens the tiers
        found = [Row(h.row, _tier(names, h.row), h.score) for h in hits]
    else:
        copies = service.copies(scopes, include_hidden=filters.archived)
        order = {scope: n for n, scope in enumerate(scopes)}
        copies.sort(key=lambda c: (order.get(c.scope, len(order)), c.key))
        names = tier_names(service)
        found = [Row(c, _tier(names, c)) for c in copies]
        if filters.q:  # archived memories are not searchable: match the words in the text
            words = filters.q.lower().split()
            found = [r for r in found if all(w in f"{r.memory.key} {r.memory.value}".lower() for w in words)]
    kept = [row for row in found if filters.keeps(row.memory, row.tier)]
    return Listing(scopes, kept[:SHOWN], max(0, len(kept) - SHOWN))


def copies_of(service: Hivelore, scope: str, key: str) -> list[Row]:
    """Every copy of scope::key (archived ones too), the one that wins first."""
    copies = service.copies([scope], key=key)
    names = tier_names(service)
    return [Row(c, _tier(names, c)) for c in copies]
