"""What the pages show, computed from the services' records: no HTML here (templates/ has it), and
no web framework, so the rules of a view are plain functions."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlencode

from hivelore.memory.model import Memory
from hivelore.memory.service import Hivelore, MemoryService
from hivelore.memory.tier import Candidate, Wanted

EXPIRING_DAYS = 7  # "expiring soon": hidden by their TTL within this many days
SHOWN = 200  # rows on one page: a vault of 60,000 is narrowed by scope, search or filters, not scrolled
TIERS = ("project", "home", "team server")  # this machine's; the team server names its spaces
DAY = 86_400
MAX_PAGE = 100_000  # past any vault's last page: an offset SQLite and the URL both hold


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
    page: int = 0  # which SHOWN rows, from 0

    def wanted(self, names: dict[str, str]) -> Wanted:
        """The paged read's filters (all but the search), with the tier named as `tier_names` does."""
        origins = frozenset(o for o, name in names.items() if name == self.tier) if self.tier else None
        expiring = time.time() + EXPIRING_DAYS * DAY if self.expiring else None
        words = tuple(self.q.lower().split()) if self.archived else ()  # archived ones are not searchable
        return Wanted(self.archived, self.tag, self.kind, self.state, expiring, origins, words)

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
    refused: dict[str, str] = field(default_factory=dict)  # action: why the caller may not (shown instead)

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
    more: int  # matching rows after this page
    first: int = 0  # how many matching rows come before this page
    total: int = 0  # matching rows in all


def tier_names(service: MemoryService) -> dict[str, str]:
    """{origin: tier} for every part the service reads: on this machine the repository's `.hivelore/`
    ("project"), the user's home ("home"), and in remote mode the team server's spaces ("team server");
    on the team server each space by its name (`org:acme`, `personal`)."""
    here = isinstance(service, Hivelore)
    return {
        origin: name if not here or name in ("project", "home") else "team server"
        for tier in service.tiers
        for name, origin in tier.parts.items()
    }


def tier_choices(service: MemoryService) -> tuple[str, ...]:
    """The tiers the tier filter offers."""
    return TIERS if isinstance(service, Hivelore) else service.tier_names


def _tier(names: dict[str, str], copy: Candidate) -> str:
    return names.get(copy.origin, "team server")  # a space the mirror heard of after the names were taken


def listing(service: MemoryService, filters: Filters) -> Listing:
    """The memories the view shows: search hits ranked as `hivelore search` ranks them, or the copies
    in the scopes (by scope, narrowest first, then key) read a page at a time from the tiers; filtered,
    SHOWN of them from page `filters.page`."""
    scopes = service.scopes_for([filters.scope] if filters.scope else None)
    first = filters.page * SHOWN
    if filters.q and not filters.archived:
        hits = service.search(filters.q, scopes, limit=SHOWN * 5)
        names = tier_names(service)  # after the first read, which opens the tiers
        found = [Row(h.row, _tier(names, h.row), h.score) for h in hits]
        kept = [row for row in found if filters.keeps(row.memory, row.tier)]
        rows, total = kept[first : first + SHOWN], len(kept)
    else:
        names = tier_names(service)
        copies, total = service.page(scopes, filters.wanted(names), first, SHOWN)
        rows = [Row(c, _tier(names, c)) for c in copies]
    return Listing(scopes, rows, max(0, total - first - len(rows)), first, total)


def page_links(filters: Filters, found: Listing) -> dict[str, str]:
    """The query strings of the previous and next pages ("prev", "next"), for those there are."""
    asked = {name: value for name, value in asdict(filters).items() if value not in ("", False, 0)}
    links = {}
    if filters.page > 0:
        links["prev"] = urlencode({**asked, "page": filters.page - 1})
    if found.more:
        links["next"] = urlencode({**asked, "page": filters.page + 1})
    return links


def copies_of(service: MemoryService, scope: str, key: str, actions: Sequence[str]) -> list[Row]:
    """Every copy of scope::key (archived ones too), the one that wins first, each with the `actions`
    the caller may not take on it and why."""
    copies = service.copies([scope], key=key)
    names = tier_names(service)
    return [Row(c, _tier(names, c), refused=_refused(service, c, actions)) for c in copies]


def _refused(service: MemoryService, copy: Candidate, actions: Sequence[str]) -> dict[str, str]:
    reasons = {action: service.refusal(action, copy) for action in actions}
    return {action: reason for action, reason in reasons.items() if reason}
