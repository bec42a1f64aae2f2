"""The seam under the memory service: what a tier keeps, and the record ranking works on.

`Hivelore` (memory/service.py) holds the rules: validation, the guard, which tier a write goes to,
scope precedence and ranking. A tier only keeps memories: the local tier (files, with the SQLite
index; memory/local/tier.py), the scan that stands in for it when the index cannot be used, and an
in-memory tier that only the contract suite (tests/test_tier_contract.py) uses. Every tier passes
that suite.

`Tier` is a plain base class, not a `typing.Protocol`: the hook path imports this module, and it
imports only the standard library.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from hivelore.memory.model import Memory, epoch_from_iso
from hivelore.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from hivelore.memory.scope import Scope

Build = Callable[[Memory | None], Memory | None]
Merge = Callable[[Memory, Memory | None], Memory | None]


def value_chars(value: str) -> int:
    """The length of a value as one line shows it (whitespace runs collapsed)."""
    return len(" ".join(value.split()))


class Candidate:
    """One copy of a memory as ranking sees it: its address, the fields a score needs, and where it is.

    `origin` names the part of a tier the copy is in (a local tier: the vault's folder) and orders
    copies of one key across parts (`Hivelore.roots`); `place` names the copy within it (a local
    tier: the file's path under that folder) and orders copies within a part. The memory itself may
    be decoded only when asked for (the index's rows do so), so ranking hundreds of candidates
    decodes only the few that are shown."""

    __slots__ = (
        "origin",
        "place",
        "scope",
        "key",
        "kind",
        "state",
        "updated_ts",
        "seen_count",
        "value_chars",
        "_memory",
    )
    origin: str
    place: str
    scope: str
    key: str
    kind: str
    state: str
    updated_ts: float
    seen_count: int
    value_chars: int  # of the value with its whitespace collapsed: a line's length without decoding
    _memory: Memory | None  # None until a subclass decodes it (Candidate.of always sets it)

    @classmethod
    def of(cls, memory: Memory, origin: str, place: str) -> Candidate:
        """The candidate for a memory in hand."""
        candidate = cls.__new__(cls)
        candidate.origin, candidate.place = origin, place
        candidate.scope, candidate.key = str(memory.scope), memory.key
        candidate.kind, candidate.state = memory.kind, memory.state
        candidate.updated_ts = epoch_from_iso(memory.updated)
        candidate.seen_count = memory.seen_count
        candidate.value_chars = value_chars(memory.value)
        candidate._memory = memory
        return candidate

    @property
    def memory(self) -> Memory:
        assert self._memory is not None, "Candidate.of sets the memory; a subclass decodes it"
        return self._memory

    @property
    def path(self) -> Path:
        """Where the copy is, as a path: a file, for the local tiers."""
        return Path(self.origin, self.place)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.scope}::{self.key} at {self.origin}/{self.place})"


@record
class Survey:
    counts: dict[str, int]  # visible memories per scope, for the scopes that have any
    candidates: list[Candidate]
    shadowed: int


@record
class Wanted:
    """What a paged read (`Tier.page`) keeps of the copies in its scopes; empty means "any"."""

    hidden: bool = False  # the archived and expired copies instead of the visible ones
    tag: str = ""
    kind: str = ""
    state: str = ""
    expiring_before: float | None = None  # only copies whose TTL ends at or before this epoch
    origins: frozenset[str] | None = None  # only copies in these parts (`Tier.parts` values)
    words: tuple[str, ...] = ()  # lower-case words that the key and text must all hold

    def keeps(self, copy: Candidate, now: float) -> bool:
        """Whether this copy, as it is now, is one the read asked for."""
        memory = copy.memory
        if self.hidden == memory.is_visible(now):
            return False
        if self.expiring_before is not None and not (memory.expires_at and memory.is_expired(self.expiring_before)):
            return False
        text = f"{memory.key} {memory.value}".lower() if self.words else ""
        return (
            (not self.tag or self.tag in memory.tags)
            and (not self.kind or memory.kind == self.kind)
            and (not self.state or memory.state == self.state)
            and (self.origins is None or copy.origin in self.origins)
            and all(word in text for word in self.words)
        )


def listing_order(scopes: Sequence[str]) -> Callable[[Candidate], tuple[int, str, str, str]]:
    """The order a paged read gives: by scope as `scopes` lists them (narrowest first), then key, then
    where the copy is (the same order the index's SQL gives: strings compare by code point there too)."""
    rank = {scope: n for n, scope in enumerate(scopes)}
    return lambda c: (rank.get(c.scope, len(rank)), c.key, c.origin, c.place)


class Tier:
    """Where memories are kept. A tier holds one or more named parts (`parts`: name → origin, the
    winning part first); the local tier's are "project" and "home". Scopes are strings as
    `str(Scope)` writes them, narrowest first where order matters.

    A tier never decides: which part a write goes to, which copy of a key wins, and how candidates
    rank are the service's rules. What a reader should know (a file skipped, a fallback) is
    appended to `warnings`, the list the service shares among its tiers; each text once."""

    parts: dict[str, str]
    warnings: list[str]

    # -- reads ------------------------------------------------------------------------------------

    def copies(self, scopes: Sequence[str], keys: set[str]) -> list[Candidate]:
        """Every copy (hidden ones too) in `scopes` whose key is one of `keys`, as it is now."""
        raise NotImplementedError

    def listed(self, scopes: Sequence[str], include_hidden: bool = False) -> list[Candidate]:
        """Every copy in `scopes`: the visible ones, or all of them."""
        raise NotImplementedError

    def page(self, scopes: Sequence[str], wanted: Wanted, offset: int, limit: int) -> tuple[list[Candidate], int]:
        """The copies in `scopes` that `wanted` keeps, in `listing_order`: `limit` of them from `offset`,
        and how many there are in all. This reads every copy; a tier with an index pages in it."""
        now = time.time()
        kept = [c for c in self.listed(scopes, include_hidden=wanted.hidden) if wanted.keeps(c, now)]
        kept.sort(key=listing_order(scopes))
        return kept[offset : offset + limit], len(kept)

    def match(self, scopes: Sequence[str], words: Sequence[str], limit: int) -> list[tuple[Candidate, float]]:
        """Visible copies in `scopes` that hold the query's `words` (lower-case), best first, each with
        its relevance (> 0; comparable only within one call): the best `limit` of them, or more (a
        tier that has read every match already may give them all, rather than cut between ties)."""
        raise NotImplementedError

    def survey(self, scopes: Sequence[str], per_scope: int) -> Survey:
        """What a read without a query starts from, in one look: the visible memories per scope,
        per scope at least the `per_scope` most recent and the `per_scope` most seen visible copies
        (a tier may give more), and how many visible copies lose to another copy of their key in
        this tier (a narrower scope, or the same scope in an earlier part: all but one per key)."""
        raise NotImplementedError

    def rivals(self, scopes: Sequence[str], of: Sequence[Candidate]) -> list[Candidate]:
        """The visible copies in `scopes` of these candidates' keys, other than the candidates
        themselves: what may shadow them. A key whose only copy is one of `of` has none."""
        raise NotImplementedError

    def fresh(self, candidate: Candidate) -> Candidate | None:
        """One of this tier's candidates as it is now, or None if it is gone or no longer visible."""
        raise NotImplementedError

    def counts(self, scopes: Sequence[str]) -> dict[str, int]:
        """Visible memories per scope, for the scopes that have any."""
        raise NotImplementedError

    def generation(self) -> int:
        """A number that changes whenever the tier's contents change (a copy re-read included)."""
        raise NotImplementedError

    def scopes(self) -> set[str]:
        """Every scope the tier holds memories in."""
        raise NotImplementedError

    def scopes_known(self) -> set[str]:
        """The scopes the tier holds memories in, as cheaply as it can tell (what a browser offers to
        pick from): a tier with an index may leave out a folder made by hand until a read visits it."""
        return self.scopes()

    def everything(self, include_hidden: bool = False) -> Iterator[Memory]:
        """Every memory of the tier, all scopes (an export)."""
        raise NotImplementedError

    # -- writes -----------------------------------------------------------------------------------

    def store(
        self, part: str, scope: Scope, key: str, build: Build, prefer: Candidate | None = None
    ) -> tuple[Path, Memory | None, Memory | None]:
        """Read-modify-write scope::key in `part`, atomically with respect to other writers: `build`
        gets the memory there now (None if none) and returns the one to keep, or None to leave it.
        `prefer` is the copy a read chose. Returns (where, the memory before, the memory after)."""
        raise NotImplementedError

    def delete(self, candidate: Candidate, still: Callable[[Memory], bool]) -> bool:
        """Delete this copy if it is still scope::key's and `still` holds for it, as it is now."""
        raise NotImplementedError

    def unwritable(self, part: str, memories: Sequence[Memory]) -> dict[str, ValueError]:
        """Why the copies of these memories' addresses cannot be written in `part`, by address, for
        those that have a reason (checked before an import writes anything)."""
        raise NotImplementedError

    def store_batch(self, part: str, memories: Sequence[Memory], merge: Merge) -> tuple[list[str], list[str]]:
        """Write many memories (distinct addresses) to `part` at once: `merge(incoming, existing)` gives
        what to keep, or None for no change. The addresses written, and those left unchanged."""
        raise NotImplementedError

    def close(self) -> None:
        """Let go of what the tier holds open."""
