"""The service layer: every surface (CLI, MCP, hooks) calls these methods, so validation, the
guard, scopes and ranking exist once.

The rules are here; keeping memories is the tiers' (memory/tier.py). The local tier reads through
the SQLite index; when the index is missing or unreadable, a bounded scan of the folders of the
scopes being read stands in for it (chosen once, on first use), and says so.
"""

from __future__ import annotations

import builtins  # `Hivelore.list` shadows the type in the class body
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from hivelore import errors
from hivelore.config import Off, Settings, load_settings
from hivelore.confined import LinkRefused
from hivelore.home import private_home
from hivelore.memory import citations, fusion, recall
from hivelore.memory.local.index import RebuildStats, rebuild
from hivelore.memory.local.tier import VaultTier, open_local
from hivelore.memory.local.vault import Swept, Vault
from hivelore.memory.model import (
    MAX_SEEN_COUNT,
    STATES,
    Memory,
    iso_from_epoch,
    now_iso,
    validate_key,
    validate_kind,
    validate_tags,
    validate_timestamp,
    validate_ttl_days,
)
from hivelore.memory.scope import Chain, Level, Scope, chain_for, parse
from hivelore.memory.tier import Candidate, Tier, Wanted, listing_order
from hivelore.records import record
from hivelore.sqlitedb import Pool  # the type of `Hivelore.open`'s pool, for the surfaces that keep one

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from hivelore.memory.citations import Code
    from hivelore.memory.thesaurus import Thesaurus
    from hivelore.memory.transfer import ImportRecord, ImportReport
    from hivelore.memory.vectors import Semantic
    from hivelore.profile.store import Profile
    from hivelore.remote.tier import RemoteTier

MAX_SEARCH_LIMIT = 1000
# A hook speaks unasked: a memory it shows for its meaning alone must be nearer the prompt or error
# than a search's meaning hits (vectors.MIN_SIMILARITY), which the agent asked for.
RELATED_SIMILARITY = 0.45
MEANING_CHARS = 2_000  # of a prompt or an error, what is ranked by meaning (the model reads 256 tokens)
MAX_RELATED_HITS = 8  # search hits looked at for memories related to a prompt or an error
CANDIDATES_PER_SCOPE = 50  # per scope, most recent and most seen: ample for a budget of ~15 lines
# Imported records written under one lock, one index transaction and one fsync per folder: large
# enough that those costs vanish per record, small enough that other writers wait a moment only.
IMPORT_BATCH = 500
# How long a command (CLI, MCP) waits for the team server in remote mode before it reads the mirror.
COMMAND_NETWORK_BUDGET_S = 3.0


# A tier, and the name of the part of it a write goes to ("project", "home").
Target = tuple[Tier, str]


class NotFound(errors.NotFound):
    """No visible memory at that address."""


@record
class WriteResult:
    memory: Memory
    path: Path
    tier: str
    created: bool
    revived: bool = False  # it was archived or expired, and is visible again


ALREADY_COMMITTED = "already committed"


@record
class NotCommitted:
    address: str
    reason: str


@record
class CommitReport:
    """What `commit` turned committed, and what it did not, each with why."""

    committed: list[Memory]
    not_committed: list[NotCommitted]


@record
class TreeEntry:
    key: str
    winner: Memory
    shadowed: list[Memory]


@record
class Budgets:
    """How much a read gives: the session-start block's characters, one line's, and search hits."""

    context_budget_chars: int
    context_line_chars: int
    search_limit: int


class MemoryService:
    """The rules of memory over some tiers, seen from one chain of scopes: validation, the guard,
    where a write goes, which copy of a key wins, and ranking. `Hivelore` composes it over one
    machine's tiers; the team server composes it over PostgreSQL (server/memories.py).

    A composition says which tiers are read (`tiers`, the winning one first), which names a caller
    may give a part of them (`tier_names`), where a new memory goes (`_default_tier`), what a write
    records of where it came from (`_provenance`), and whether the caller may change a copy
    (`_check_change`)."""

    tier_names: tuple[str, ...] = ()
    private_prefix: tuple[str, ...] = ()  # lines starting with one of these are never stored (privacy.py)

    def __init__(self, chain: Chain, budgets: Budgets, agent: str = "cli", session: str = "") -> None:
        self.chain = chain
        self.budgets = budgets
        self.agent = agent
        self.session = session
        self.warnings: list[str] = []
        # Set by a warm process that loaded the model (vectors.py): searches then rank by meaning too.
        self.semantic: Semantic | None = None
        # Widen a query no memory matches whole with the thesaurus's partners: off until it pays. On
        # benchmarks/bench_recall.py it gained no paraphrase and cost a few vague queries (README).
        self.expand = False

    @property
    def scopes(self) -> list[str]:
        return [str(s) for s in self.chain.scopes]

    @property
    def tiers(self) -> list[Tier]:
        """The tiers read, the winning one first."""
        raise NotImplementedError

    def _named_tier(self, tier: str) -> Target:
        """The tier and part a caller named (`--tier home`); ValueError for a name it does not know."""
        raise NotImplementedError

    def _default_tier(self, scope: Scope) -> Target:
        """Where a new memory under `scope` goes."""
        raise NotImplementedError

    def _provenance(self) -> dict[str, str]:
        """What a write records of where it came from."""
        raise NotImplementedError

    def _check_change(self, action: str, tier: Tier, part: str) -> None:
        """Raise (an errors.HiveloreError) when the caller may not `action` ("archive", "restore" or
        "forget") a copy in this part of this tier. On one machine the user may change anything."""

    def close(self) -> None:
        for tier in self.tiers:
            tier.close()

    def code(self) -> Code | None:
        """The code this folder's memories cite (memory/citations.py), or None where there is none to
        check against (no repository, no code graph yet, or a server, which holds no code)."""
        return None

    def cites_here(self, memory: Memory) -> bool:
        """Whether a memory's cites name this folder's code: they are paths and ids in the repository
        it was written in, which another repository's graph knows nothing of."""
        return False

    # -- the tiers ----------------------------------------------------------------------------

    @property
    def roots(self) -> list[str]:
        """The origins of the tiers' parts (the local tier's folders), the winning one first."""
        return [origin for tier in self.tiers for origin in tier.parts.values()]

    def _part_of(self, copy: Candidate) -> tuple[Tier, str]:
        """The tier a copy came from, and the name of its part there ("project", "home")."""
        for tier in self.tiers:
            for name, origin in tier.parts.items():
                if origin == copy.origin:
                    return tier, name
        raise LookupError(f"{copy} is in none of the tiers")

    def _copies_of(self, scopes: Sequence[str], keys: set[str]) -> list[Candidate]:
        """Every copy of these keys in these scopes (hidden ones too), in the order they win."""
        found = [c for tier in self.tiers for c in tier.copies(scopes, keys)]
        # A file edited in place may now hold another key: keep only what still is a key's copy.
        found = [c for c in found if c.key in keys and c.scope in scopes]
        return sorted(found, key=lambda c: recall.precedence(c, scopes, self.roots))

    def _listed(self, scopes: Sequence[str], include_hidden: bool = False) -> list[Candidate]:
        return [c for tier in self.tiers for c in tier.listed(scopes, include_hidden)]

    def copies(
        self, scopes: Iterable[str] | None = None, include_hidden: bool = False, key: str | None = None
    ) -> list[Candidate]:
        """Every copy in these scopes (the folder's chain by default), or every copy of `key` (hidden
        ones too, in the order they win), each with where it is: what a browser of the vault lists."""
        chosen = self.scopes_for(scopes)
        if key is not None:
            validate_key(key)
            return self._copies_of(chosen, {key})
        return self._listed(chosen, include_hidden)

    def page(
        self, scopes: Iterable[str] | None, wanted: Wanted, offset: int, limit: int
    ) -> tuple[list[Candidate], int]:
        """The copies in these scopes (the folder's chain by default) that `wanted` keeps, by scope
        (narrowest first), key and place: `limit` of them from `offset`, and how many in all. What a
        browser of the vault pages through, without reading every copy."""
        chosen = self.scopes_for(scopes)
        if len(self.tiers) == 1:
            return self.tiers[0].page(chosen, wanted, offset, limit)
        # Each tier's first offset + limit copies hold the merged page's.
        pages = [tier.page(chosen, wanted, 0, offset + limit) for tier in self.tiers]
        merged = sorted((c for found, _ in pages for c in found), key=listing_order(chosen))
        return merged[offset : offset + limit], sum(total for _, total in pages)

    def scopes_known(self) -> list[str]:
        """The scopes the tiers know memories in, narrowest first, as cheaply as they can tell: what a
        browser offers to pick from (`scopes_in_vault` walks every folder; an index may leave out a
        folder made by hand until a read visits it)."""
        found = {scope for tier in self.tiers for scope in tier.scopes_known()}
        return self.scopes_for(found) if found else []

    def scopes_for(self, scopes: Iterable[str] | None) -> list[str]:
        """Validate requested scopes (narrowest first), or the folder's chain when none are given."""
        if not scopes:
            return self.scopes
        parsed = sorted({parse(s) for s in scopes}, key=lambda s: (-s.level, str(s)))
        return [str(s) for s in parsed]

    # -- writes -------------------------------------------------------------------------------

    def _tier_for_write(self, scope: Scope, key: str, tier: str | None) -> tuple[Tier, str]:
        if tier is not None:
            return self._named_tier(tier)
        for copy in self._copies_of([str(scope)], {key}):  # a re-write updates the copy that exists
            return self._part_of(copy)
        return self._default_tier(scope)

    def write(
        self,
        scope: str,
        key: str,
        value: str,
        *,
        tags: Sequence[str] = (),
        kind: str | None = None,
        ttl_days: float | None = None,
        state: str = "committed",
        tier: str | None = None,
        cites: Sequence[str] = (),
        when: str | None = None,
    ) -> WriteResult:
        """Upsert (scope, key): a re-write replaces the value, bumps seen_count and updated. The code
        it cites (`cites`, and for a lesson or a decision the names its text gives) is kept with
        each one's hash now, so a read can tell when that code moved on. `when` is the symptoms in
        plain words (how someone hitting this would describe it, not knowing the cause): indexed with
        the value; a re-write without one keeps the one there."""
        provenance = self._provenance()
        value = self._public(value)
        target, value, clean_tags, expires = _checked(scope, key, value, tags, kind, state, ttl_days, provenance)
        cited = self._cited(value, kind or "lesson", cites)
        symptoms = _checked_when(self._public(when)) if when else ""
        where, part = self._tier_for_write(target, key, tier)
        now = now_iso()

        def build(existing: Memory | None) -> Memory:
            if existing is None:
                return Memory(
                    scope=target,
                    key=key,
                    value=value,
                    kind=kind or "lesson",
                    state=state,
                    tags=clean_tags,
                    created=now,
                    updated=now,
                    expires_at=expires,
                    provenance=provenance,
                    cites=cited,
                    when=symptoms,
                )
            return existing.evolve(
                value=value,
                kind=kind or existing.kind,
                state="committed" if "committed" in (state, existing.state) else "staged",
                tags=clean_tags or existing.tags,
                updated=now,
                seen_count=existing.seen_count + 1,
                expires_at=expires or (None if existing.is_expired() else existing.expires_at),
                archived_at=None,
                provenance=provenance,
                cites=cited,
                when=symptoms or existing.when,
            )

        path, existing, memory = where.store(part, target, key, build)
        assert memory is not None  # build always returns one
        if self.semantic is not None:
            self.semantic.remember([memory])
        revived = existing is not None and not existing.is_visible()
        return WriteResult(memory, path, _part_at(where, part, path), existing is None, revived)

    def _cited(self, value: str, kind: str, names: Sequence[str]) -> dict[str, str]:
        """What a write cites: the names given (each must resolve, or ValueError), then what a lesson's
        or a decision's text names that resolves to exactly one symbol or file."""
        if not names and kind not in citations.CITING_KINDS:
            return {}
        code = self.code()
        found = citations.named(names, code)
        if code is not None and kind in citations.CITING_KINDS:
            for name, digest in citations.detect(value, code).items():
                if len(found) < citations.MAX_CITES:
                    found.setdefault(name, digest)
        return found

    def staleness(self, memories: Iterable[Memory]) -> dict[str, citations.Staleness]:
        """Per address, what the cites of these memories say against the code now; memories whose
        cites are not this folder's code, or that cite nothing, are left out."""
        checked = [m for m in memories if m.cites and self.cites_here(m)]
        code = self.code() if checked else None
        if code is None:
            return {}
        current = code.current(name for m in checked for name in m.cites)
        return {m.address: citations.staleness(m.cites, current) for m in checked}

    def _against_code(self, ranked: builtins.list[recall.Ranked], window: int) -> builtins.list[recall.Ranked]:
        """The ranked hits with those citing code that moved on marked and demoted (the first `window`
        of them are looked at: the rest would not be shown)."""
        looked = ranked[:window]
        verdicts = self.staleness(r.row.memory for r in looked)
        marks = {}
        for n, r in enumerate(looked):
            found = verdicts.get(r.row.memory.address, citations.FRESH)
            if found.verdict:
                marks[n] = (found.note(), citations.STALE_FACTOR[found.verdict])
        return recall.demoted(ranked, marks) if marks else ranked

    def part_name(self, copy: Candidate) -> str:
        """The name of the part of its tier a copy is in ("project", "home", an organisation's space)."""
        return self._part_of(copy)[1]

    def merge(self, merged: Memory, others: Sequence[Memory]) -> Memory:
        """A dedupe's merge: the visible copy of `merged`'s address given its value, tags, cites and
        seen count (the guard checks them first), then each of `others` archived, not deleted.
        ValueError before anything is written when the merged memory cannot be kept."""
        copy = self._find(str(merged.scope), merged.key, visible=True)
        scope, key = str(merged.scope), merged.key
        _checked(scope, key, merged.value, merged.tags, merged.kind, "committed", None, merged.provenance)
        change = {"value": merged.value, "tags": merged.tags, "seen_count": merged.seen_count}
        kept = self._modify("commit", copy, {**change, "cites": citations.checked_cites(merged.cites)})
        for other in others:
            self.archive(str(other.scope), other.key)
        return kept

    def _public(self, value: str) -> str:
        """The value without its private spans and lines: the one place a memory's text loses them."""
        from hivelore.privacy import strip_private  # a write's: searches and the context block never need it

        public = strip_private(value, self.private_prefix)
        if value.strip() and not public.strip():
            raise ValueError(
                "the value is all private (<private>…</private> or private-prefixed lines): nothing to store."
            )
        return public

    def _find(self, scope: str, key: str, visible: bool, tier: str | None = None) -> Candidate:
        """The first copy of scope::key (project tier first), visible ones only if `visible`, in one
        tier if `tier` ("home" or "project") is given."""
        target, copies = self._copies(scope, key, tier)
        for copy in copies:
            if copy.memory.is_visible() or not visible:
                return copy
        raise self._not_found(target, key, tier, visible)

    def _copies(self, scope: str, key: str, tier: str | None) -> tuple[str, list[Candidate]]:
        """scope::key's scope as written canonically, and its copies (hidden ones too), project tier
        first, or only the given tier's."""
        target = str(parse(scope))
        validate_key(key)
        copies = self._copies_of([target], {key})  # first: it opens the tiers, which name their parts
        if tier is not None and tier not in self.tier_names:
            raise ValueError(f"tier '{tier}' is not {' or '.join(repr(n) for n in self.tier_names)}.")
        return target, [c for c in copies if tier in (None, self._part_of(c)[1])]

    def _not_found(self, target: str, key: str, tier: str | None, visible: bool) -> NotFound:
        hidden = " (archived or expired ones are hidden)" if visible else ""
        where = f" in the {tier} tier" if tier else ""
        return NotFound(
            f"no memory {target}::{key}{where}{hidden}: see `hivelore list` or `hivelore search`{self._unread()}."
        )

    def _modify(self, action: str, copy: Candidate, change: dict[str, object]) -> Memory:
        """Change fields of the copy a read found (`_find`), under the lock, with `updated` bumped."""
        tier, part = self._part_of(copy)
        self._check_change(action, tier, part)

        def build(existing: Memory | None) -> Memory:
            if existing is None:
                raise NotFound(f"{copy.memory.address} was deleted while hivelore was changing it.")
            return existing.evolve(**change, updated=now_iso())

        _, _, memory = tier.store(part, copy.memory.scope, copy.key, build, prefer=copy)
        return memory  # type: ignore[return-value]

    def archive(self, scope: str, key: str, tier: str | None = None) -> Memory:
        """Hide the first visible copy (project tier first, or the given tier's)."""
        return self._modify("archive", self._find(scope, key, visible=True, tier=tier), {"archived_at": now_iso()})

    def restore(self, scope: str, key: str, tier: str | None = None) -> Memory:
        """Make an archived or expired memory visible again: the first hidden copy, project tier first
        (a visible copy in one tier must not hide an archived one in the other), or the given tier's."""
        target, copies = self._copies(scope, key, tier)
        hidden = [c for c in copies if not c.memory.is_visible()]
        if hidden:
            return self._modify("restore", hidden[0], {"archived_at": None, "expires_at": None})
        if copies:
            raise ValueError(f"{target}::{key} is not archived or expired: nothing to restore.")
        raise self._not_found(target, key, tier, visible=False)

    def forget(self, scope: str, key: str, tier: str | None = None) -> Path:
        """Delete the memory's file (archived and expired ones too): the first copy, project tier
        first, or the given tier's."""
        copy = self._find(scope, key, visible=False, tier=tier)
        where, part = self._part_of(copy)
        self._check_change("forget", where, part)
        if not where.delete(copy, lambda memory: True):
            raise NotFound(f"{copy.memory.address} changed while hivelore was deleting it; nothing was deleted.")
        return copy.path

    def refusal(self, action: str, copy: Candidate) -> str | None:
        """Why the caller may not `action` ("archive", "restore", "forget", "commit") this copy, or None
        when they may: what a page asks before it offers the button (the change itself checks again)."""
        try:
            self._check_change(action, *self._part_of(copy))
        except errors.HiveloreError as exc:
            return exc.sentence()
        return None

    def forget_staged(self, captured: Callable[[Memory], bool], dry_run: bool = False) -> list[Memory]:
        """Delete the files of the staged memories `captured` picks (what hooks kept, such as a
        session's notes), in every scope the vault holds; each only if, read again, it is still staged
        and picked (an agent may have just committed it). Committed memories are never touched."""

        def picked(memory: Memory) -> bool:
            return memory.state == "staged" and captured(memory)

        found = [c for c in self._listed(self.scopes_in_vault(), include_hidden=True) if picked(c.memory)]
        if dry_run:
            return [c.memory for c in found]
        gone = []
        for copy in found:
            where, part = self._part_of(copy)
            self._check_change("forget", where, part)
            if where.delete(copy, picked):
                gone.append(copy.memory)
        return gone

    def commit(self, addresses: Sequence[tuple[str, str]] = ()) -> CommitReport:
        """Turn staged memories committed: these (scope, key) addresses, or, given none, every visible
        staged memory of this folder's chain. A committed memory keeps no expiry (a session's note
        expires only while staged) and passes the guard again. Every address asked for is reported,
        committed or not, with the reason; a malformed address refuses the whole call first."""
        found = [self._staged_copy(scope, key) for scope, key in addresses]
        if not addresses:
            found = [c for c in self._listed(self.scopes) if c.memory.state == "staged"]
        committed, refused = [], []
        for item in found:
            if isinstance(item, NotCommitted):
                refused.append(item)
                continue
            try:
                committed.append(self._commit_copy(item))
            except (ValueError, errors.HiveloreError) as exc:  # the guard, or a role the server asks for
                refused.append(NotCommitted(item.memory.address, str(exc)))
        return CommitReport(committed, refused)

    def _staged_copy(self, scope: str, key: str) -> Candidate | NotCommitted:
        """The winning visible copy of scope::key if it is staged, else why it cannot be committed."""
        target, copies = self._copies(scope, key, None)
        address = f"{target}::{key}"
        visible = [c for c in copies if c.memory.is_visible()]
        if not copies:
            return NotCommitted(address, "not found: no memory at this address (see `hivelore list`)")
        if not visible:
            return NotCommitted(address, "archived or expired: restore it first, then commit it")
        if visible[0].memory.state == "committed":
            return NotCommitted(address, ALREADY_COMMITTED)
        return visible[0]

    def _commit_copy(self, copy: Candidate) -> Memory:
        memory = copy.memory
        try:
            _check_content(str(memory.scope), memory.key, memory.value, memory.tags, memory.kind, memory.provenance)
        except ValueError as exc:
            raise ValueError(f"the guard refused it: {exc}") from exc
        return self._modify("commit", copy, {"state": "committed", "expires_at": None})

    def purge(self, dry_run: bool = False) -> list[Memory]:
        """Delete the files of archived and expired memories in this folder's chain (each only if,
        read again, it is still hidden: another agent may have just revived it)."""
        hidden = [c for c in self._listed(self.scopes, include_hidden=True) if not c.memory.is_visible()]
        if dry_run:
            return [c.memory for c in hidden]
        for copy in hidden:
            self._check_change("forget", *self._part_of(copy))
        return [c.memory for c in hidden if self._part_of(c)[0].delete(c, lambda m: not m.is_visible())]

    # -- reads --------------------------------------------------------------------------------

    def read(self, scope: str, key: str) -> Memory:
        return self._find(scope, key, visible=True).memory

    def resolve(self, key: str) -> Memory:
        """The winning copy of a bare key along this folder's chain (narrowest scope first)."""
        validate_key(key)
        for copy in self._copies_of(self.scopes, {key}):
            if copy.memory.is_visible():
                return copy.memory
        raise NotFound(f"no memory with key '{key}' in {' → '.join(self.scopes)}: see `hivelore list`{self._unread()}.")

    def _unread(self) -> str:
        """For a 'not found': the files this read had to skip, since the memory may be in one of them
        (the warnings themselves are not printed when a command fails)."""
        skipped = [w.removeprefix("skipped ") for w in self.warnings if w.startswith("skipped ")]
        return f" (files skipped as unreadable: {'; '.join(skipped)})" if skipped else ""

    def search(self, query: str, scopes: Iterable[str] | None = None, limit: int | None = None) -> list[recall.Ranked]:
        """Visible memories matching `query`, ranked; a key shadowed by a narrower scope is left out."""
        return self._search(query, scopes, limit, query)

    def _search(self, query: str, scopes: Iterable[str] | None, limit: int | None, meaning: str) -> list[recall.Ranked]:
        """`search`, with the text the model ranks by (`meaning`) apart from the query's words."""
        chosen = self.scopes_for(scopes)
        if limit is not None and not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise ValueError(f"limit must be from 1 to {MAX_SEARCH_LIMIT}, not {limit}.")
        limit = limit or self.budgets.search_limit
        words = recall.query_words(query)
        if not words:
            raise ValueError("the query has no words to search for.")
        # Each tier's relevance is comparable only within that tier: each is scaled to its best.
        pairs = [pair for tier in self.tiers for pair in _scaled(tier.match(chosen, words, max(limit * 5, 50)))]
        pairs = self._with_thesaurus(words, chosen, pairs, max(limit * 5, 50))
        pairs = self._with_meaning(meaning, words, chosen, pairs, max(limit * 5, 50))
        # A hit loses to a narrower copy of its key even when that copy does not match the query.
        pairs += [(c, 0.0) for c in self._rivals(chosen, [c for c, _ in pairs])]
        ranked, _ = recall.winners(recall.rank(pairs, chosen, recall.SEARCH_WEIGHTS), chosen, self.roots, self.scopes)
        hits = self._against_code([r for r in ranked if r.relevance > 0], 2 * limit)
        return hits[:limit]

    def _with_thesaurus(
        self, words: Sequence[str], scopes: Sequence[str], pairs: list[tuple[Candidate, float]], limit: int
    ) -> list[tuple[Candidate, float]]:
        """BM25's hits widened by the thesaurus's partners of the query words (thesaurus.py), when no
        hit holds every query word; else, or without a thesaurus, BM25's hits unchanged."""
        found = self.thesaurus() if self.expand else None
        if found is None or any(fusion.holds_every_word(candidate, words) for candidate, _ in pairs):
            return pairs
        expansions = found.expand(words)
        if not expansions:
            return pairs
        extra = [p for tier in self.tiers for p in _scaled(tier.match(scopes, [w for w, _ in expansions], limit))]
        from hivelore.memory.thesaurus import widened

        return widened(pairs, extra, max(weight for _, weight in expansions))

    def thesaurus(self) -> Thesaurus | None:
        """The thesaurus mined from this store (thesaurus.py), or None where none was mined."""
        return None

    def _with_meaning(
        self, query: str, words: Sequence[str], scopes: Sequence[str], pairs: list[tuple[Candidate, float]], limit: int
    ) -> list[tuple[Candidate, float]]:
        """BM25's hits fused with the memories nearest in meaning (fusion.py) when this process holds
        the model; else BM25's hits unchanged."""
        nearest = self._nearest(query, scopes, limit)
        return pairs if nearest is None else fusion.fuse(pairs, nearest, words)

    def _nearest(self, query: str, scopes: Sequence[str], limit: int) -> list[tuple[Candidate, float]] | None:
        """The `limit` visible memories nearest to `query` in meaning, nearest first, with their cosine;
        None when this process holds no model. The team server finds them in PostgreSQL's vectors."""
        if self.semantic is None:
            return None
        # The tiers' generations, read after `match` brought them up to date: a change lists them again.
        key = (tuple(self.roots), tuple(scopes), tuple(tier.generation() for tier in self.tiers))
        visible = self.semantic.visible(key, lambda: [c for t in self.tiers for c in t.listed(scopes)])
        return self.semantic.rank(query, visible, limit)

    def _rivals(self, scopes: Sequence[str], copies: Sequence[Candidate]) -> list[Candidate]:
        """The other visible copies of these copies' keys, so shadowing is decided over every copy."""
        return [c for tier in self.tiers for c in tier.rivals(scopes, copies)] if copies else []

    def related(self, text: str, exclude: Iterable[str] = (), limit: int = 3) -> list[recall.Ranked]:
        """Committed memories that bear on a piece of text (a prompt, an error): the best search hits
        for its keywords that contain at least two of them (all of them when there are fewer), or,
        where the model is loaded, that are near the whole text in meaning (RELATED_SIMILARITY),
        leaving out the addresses in `exclude` (already shown). Staged ones (notes a hook captured)
        are not what anyone learnt on purpose. Empty when nothing is relevant."""
        words = recall.keywords(text)
        if not words:
            return []
        needed = min(2, len(words))
        excluded = set(exclude)
        meaning = text[:MEANING_CHARS]
        hits = [
            hit
            for hit in self._search(" ".join(words), None, MAX_RELATED_HITS, meaning)
            if hit.row.state == "committed" and hit.row.memory.address not in excluded
        ]
        near = self.semantic.near(meaning, [h.row for h in hits], RELATED_SIMILARITY) if self.semantic else set()
        found = [
            hit
            for hit in hits
            if recall.word_overlap(hit.row, words) >= needed or (hit.row.origin, hit.row.place) in near
        ]
        return found[:limit]

    def citing(self, names: Iterable[str], exclude: Iterable[str] = (), limit: int = 3) -> list[recall.Ranked]:
        """Committed memories whose text names one of these symbols (`validate_token`, `Cart.total`)
        as written: the lessons about the code an agent is about to edit."""
        excluded = set(exclude)
        found: dict[str, recall.Ranked] = {}
        for name in dict.fromkeys(n for n in names if len(n) >= 3):
            for hit in self.search(name, limit=MAX_RELATED_HITS) if recall.query_words(name) else []:
                memory = hit.row.memory
                cited = name in memory.value or name in memory.key
                if cited and hit.row.state == "committed" and memory.address not in excluded:
                    found.setdefault(memory.address, hit)
        return list(found.values())[:limit]

    def _winner(self, scopes: Sequence[str], copy: Candidate) -> Candidate | None:
        """The copy of this copy's key that wins in `scopes` (narrowest scope, then first tier), as
        it is now, or None if no copy is visible. Asked only of the copies a budgeted read is about
        to show, so the copies of the hundreds of candidates it ranks are never looked up; a key
        takes the place its best-ranked copy earned, and shows its winning copy there."""
        fresh = self._part_of(copy)[0].fresh(copy)
        rivals = self._rivals(scopes, [copy])
        for other in sorted(
            [*([fresh] if fresh else []), *rivals], key=lambda c: recall.precedence(c, scopes, self.roots)
        ):
            winner = other if other is fresh else self._part_of(other)[0].fresh(other)
            if winner is not None:
                return winner
        return None

    def list(self, scopes: Iterable[str] | None = None, include_hidden: bool = False) -> dict[str, list[Memory]]:
        chosen = self.scopes_for(scopes)
        grouped: dict[str, list[Memory]] = {s: [] for s in chosen}
        for copy in self._listed(chosen, include_hidden):
            grouped[copy.scope].append(copy.memory)
        return {s: sorted(ms, key=lambda m: m.key) for s, ms in grouped.items() if ms}

    def tree(self, scopes: Iterable[str] | None = None) -> builtins.list[TreeEntry]:
        """Per key: the copy that wins (narrowest scope, then project tier) and the copies it shadows."""
        chosen = self.scopes_for(scopes)
        by_key: dict[str, list[Candidate]] = {}
        for copy in self._listed(chosen):
            by_key.setdefault(copy.key, []).append(copy)
        entries = []
        for key in sorted(by_key):
            copies = sorted(by_key[key], key=lambda c: recall.precedence(c, chosen, self.roots))
            entries.append(TreeEntry(key, copies[0].memory, [c.memory for c in copies[1:]]))
        return entries

    def scopes_in_vault(self) -> builtins.list[str]:
        """Every scope that has memories in any tier, narrowest first."""
        found = {scope for tier in self.tiers for scope in tier.scopes()}
        return self.scopes_for(found) if found else []

    def _visible_counts(self, scopes: Sequence[str]) -> dict[str, int]:
        return _summed(tier.counts(scopes) for tier in self.tiers)

    def scope_counts(self) -> dict[str, int]:
        """Visible memories per scope, for every scope that has any, narrowest first."""
        scopes = self.scopes_in_vault()
        counts = self._visible_counts(scopes) if scopes else {}
        return {s: counts[s] for s in scopes if counts.get(s)}

    def context(self, budget_chars: int | None = None) -> recall.Selection:
        """The ranked, budgeted, de-duplicated memories for this folder's chain, and what was left out."""
        budget = budget_chars or self.budgets.context_budget_chars
        scopes = self.scopes
        surveys = [tier.survey(scopes, CANDIDATES_PER_SCOPE) for tier in self.tiers]
        per_scope = _summed(s.counts for s in surveys)
        shadowed = sum(s.shadowed for s in surveys)
        candidates = [c for s in surveys for c in s.candidates]
        ranked = recall.rank([(c, 0.0) for c in candidates], scopes, recall.CONTEXT_WEIGHTS)
        generations = [tier.generation() for tier in self.tiers]
        shown, duplicates = recall.fit_budget(
            ranked, budget, self.budgets.context_line_chars, lambda copy: self._winner(scopes, copy)
        )
        if [tier.generation() for tier in self.tiers] != generations:  # a file edited or deleted in place was re-read
            surveys = [tier.survey(scopes, CANDIDATES_PER_SCOPE) for tier in self.tiers]
            per_scope = _summed(s.counts for s in surveys)
            shadowed = sum(s.shadowed for s in surveys)
        return recall.Selection(
            shown=shown,
            total=sum(per_scope.values()),
            duplicates=duplicates,
            shadowed=shadowed,
            left_out=recall.left_out(scopes, per_scope, shown),
        )

    def render_context(self, selection: recall.Selection) -> str:
        return recall.render(selection, str(self.chain.narrowest), self.budgets.context_line_chars)

    # -- import / export ------------------------------------------------------------------------

    def export(self, include_hidden: bool = False) -> Iterator[Memory]:
        """Every memory of the tiers (all scopes), from the files themselves."""
        for tier in self.tiers:
            yield from tier.everything(include_hidden)

    def _check_record(self, record: ImportRecord) -> Memory:
        """The memory a record would become, or ValueError saying why it cannot be imported."""
        provenance = {**self._provenance(), **dict(record.provenance)}
        scope, value, tags, expires = _checked(
            record.scope,
            record.key,
            self._public(record.value),
            record.tags,
            record.kind,
            record.state,
            record.ttl_days,
            provenance,
        )
        for name in ("created", "updated", "expires_at", "archived_at"):
            validate_timestamp(name, getattr(record, name))
        now = now_iso()
        return Memory(
            scope=scope,
            key=record.key,
            value=value,
            kind=record.kind,
            state=record.state,
            tags=tags,
            created=record.created or now,
            updated=record.updated or record.created or now,
            seen_count=min(max(record.seen_count or 1, 1), MAX_SEEN_COUNT),
            expires_at=expires or record.expires_at,
            archived_at=record.archived_at,
            provenance=provenance,
            cites=citations.checked_cites(record.cites),
            when=_checked_when(self._public(record.when)) if record.when else "",
        )

    def import_records(
        self,
        records: Iterable[ImportRecord],
        skip_invalid: bool = False,
        dry_run: bool = False,
        tier: str | None = None,
        unreadable: Sequence[str] = (),
    ) -> ImportReport:
        """Validate every record first; unless `skip_invalid`, one bad record (or one `unreadable`
        source, already described) means nothing is written.

        Records are written in batches of IMPORT_BATCH: one lock, one index transaction and one fsync
        per folder each, every file still replaced atomically. A record is in the report once its
        batch is on disk, so an import killed midway leaves whole files of the batches before, and
        running it again finishes it. Re-importing is idempotent: a memory whose value, kind and
        tags already match is unchanged.
        """
        from hivelore.memory.transfer import ImportReport

        report = ImportReport(written=[], unchanged=[], rejected=list(unreadable))
        memories: list[tuple[Memory, str]] = []
        for entry in records:
            try:
                memories.append((self._check_record(entry), entry.source))
            except ValueError as exc:
                report.rejected.append(f"{entry.source}: {exc}")
        targets = self._import_targets([m for m, _ in memories], tier)
        # The targets must be writable too (a broken file there would stop the import midway).
        unwritable = self._unwritable([(m, t) for (m, _), t in zip(memories, targets, strict=True)])
        checked: list[tuple[Memory, Target]] = []
        for (memory, source), target in zip(memories, targets, strict=True):
            if isinstance(target, ValueError):
                report.rejected.append(f"{source}: {target}")
            elif (problem := unwritable.get((target, memory.address))) is not None:
                report.rejected.append(f"{source}: {problem}")
            else:
                checked.append((memory, target))
        if (report.rejected and not skip_invalid) or dry_run:
            if dry_run:
                report.written.extend(m.address for m, _ in checked)
            return report
        for batch in _batches(checked, IMPORT_BATCH):
            for (where, part), group in _grouped(batch).items():
                written, unchanged = where.store_batch(part, group, _merge_import)
                report.written.extend(written)
                report.unchanged.extend(unchanged)
        return report

    def _unwritable(
        self, targets: Sequence[tuple[Memory, Target | ValueError]]
    ) -> dict[tuple[Target, str], ValueError]:
        """Why the copy of (target, address) cannot be written, for the targets that have a reason."""
        found: dict[tuple[Target, str], ValueError] = {}
        writable: builtins.list[tuple[Memory, Target]] = [(m, t) for m, t in targets if not isinstance(t, ValueError)]
        for target, group in _grouped(writable).items():
            where, part = target
            for address, problem in where.unwritable(part, group).items():
                found[(target, address)] = problem
        return found

    def _import_targets(self, memories: Sequence[Memory], tier: str | None) -> builtins.list[Target | ValueError]:
        """`_tier_for_write` of many memories, the copies of their keys looked up once per scope."""
        if tier is not None:
            try:
                target = self._named_tier(tier)
            except ValueError as exc:
                return [exc for _ in memories]
            return [target for _ in memories]
        copies: dict[tuple[str, str], Candidate] = {}
        for scope in dict.fromkeys(str(m.scope) for m in memories):
            wanted = {m.key for m in memories if str(m.scope) == scope}
            for copy in self._copies_of([scope], wanted):
                copies.setdefault((copy.scope, copy.key), copy)  # the first is the copy a write updates
        targets: builtins.list[Target | ValueError] = []
        for memory in memories:
            found = copies.get((str(memory.scope), memory.key))
            targets.append(self._part_of(found) if found is not None else self._default_tier(memory.scope))
        return targets


class Hivelore(MemoryService):
    """One user's memory as seen from one working folder: the repository's `.hivelore/` and the
    user's home, read through the SQLite index; in remote mode, the team server's memories beside
    them (remote/tier.py), read from this machine's mirror of them.

    `network_budget_s` is how long a read may wait for the team server to bring the mirror up to
    date (and a write for the server's answer); 0 — a hook — never asks it: reads take the mirror
    as it is, and writes wait in the outbox for the hook server to send them."""

    tier_names: tuple[str, ...] = ("home", "project")

    def __init__(
        self,
        settings: Settings,
        chain: Chain,
        agent: str = "cli",
        session: str = "",
        env: Mapping[str, str] | None = None,
        network_budget_s: float = 0.0,
        token: str | None = None,
        pool: Pool | None = None,
    ) -> None:
        budgets = Budgets(settings.context_budget_chars, settings.context_line_chars, settings.search_limit)
        super().__init__(chain, budgets, agent, session)
        self.settings = settings
        self.private_prefix = settings.private_prefix
        self.home = Vault(settings.home, "home")
        private_home(str(settings.home))
        project_root = chain.git.root / ".hivelore" if chain.git else None
        self.project_root = project_root  # where `--tier project` writes, even before the folder exists
        self.project = Vault(project_root, "project") if project_root and self._usable(project_root) else None
        # Within one scope the project tier (committed with the repository) wins over the home tier.
        self.vaults = [v for v in (self.project, self.home) if v]
        self._local: VaultTier | None = None
        self.pool = pool  # the connections a long-lived process keeps (the hook server's), or None
        self.env = os.environ if env is None else env
        self.network_budget_s = network_budget_s
        self.token = token  # the team server's token a command was given (HIVELORE_TOKEN); else the kept one
        self._remote: RemoteTier | None = None
        self.remote_problem: str | None = None  # why remote mode reads and writes only this machine
        self._code: Code | None = None
        self._thesaurus: Thesaurus | None = None
        self._thesaurus_opened = False
        self._code_opened = False  # the code graph is looked for once, on the first read that needs it

    def _usable(self, project_root: Path) -> bool:
        """Whether the repository has a project tier: a real `.hivelore` folder. A link there (which
        could lead anywhere on the disk) is not read, and writing to it is refused."""
        if project_root.is_symlink():
            self.warnings.append(f"skipped {LinkRefused(str(project_root), str(project_root.parent))}")
            return False
        return project_root.is_dir()

    @classmethod
    def open(
        cls,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        agent: str = "cli",
        session: str = "",
        network_budget_s: float = 0.0,
        token: str | None = None,
        allow_off: bool = False,
        pool: Pool | None = None,
    ) -> Hivelore:
        """The service for `cwd`'s folder. Where hivelore is off (`"mode": "off"`) this raises `Off`
        saying so, unless the caller looks at the switch itself (`allow_off`: doctor, forget, uninstall).
        `pool`: the SQLite connections a long-lived process keeps between services (the hook server)."""
        env = os.environ if env is None else env
        chain = chain_for(cwd or Path.cwd())
        settings = load_settings(chain.git.root if chain.git else None, env)
        if settings.off and not allow_off:
            raise Off(settings.off_message())
        session = session or env.get("HIVELORE_SESSION", "")
        agent = env.get("HIVELORE_AGENT", agent)
        return cls(
            settings,
            chain,
            agent=agent,
            session=session,
            env=env,
            network_budget_s=network_budget_s,
            token=token,
            pool=pool,
        )

    def profile(self, profile_id: str | None = None) -> Profile:
        """The user's profile (USER.md, MEMORY.md, SOUL.md, the ledger): `profile_id`, else the one
        the settings name. Opening it finishes a write an earlier process was killed in."""
        from hivelore.profile.store import Profile, check_profile_id

        return Profile.open(str(self.settings.home), check_profile_id(profile_id or self.settings.profile))

    @property
    def index_path(self) -> Path:
        return self.settings.home / "index.db"

    @property
    def local(self) -> VaultTier:
        """The local tier: read through the index, or (when it cannot be used) by scanning the
        files, decided on first use and kept."""
        if self._local is None:
            self._local = open_local(self.vaults, self.project_root, self.index_path, self.warnings, self.pool)
        return self._local

    @property
    def remote(self) -> RemoteTier | None:
        """The team server's tier in remote mode, opened on first use (and brought up to date within
        the network budget); None in local mode, or when remote mode cannot be used (`remote_problem`
        says why, and a warning too)."""
        if self._remote is None and self.settings.mode == "remote" and self.remote_problem is None:
            self._remote = self._open_remote()
        return self._remote

    def _open_remote(self) -> RemoteTier | None:
        from hivelore.remote.credentials import resolve
        from hivelore.remote.replica import Replica
        from hivelore.remote.tier import RemoteTier

        git_root = str(self.chain.git.root) if self.chain.git else None
        found = resolve(str(self.settings.home), git_root, self.env, token=self.token)
        if found is None or not found.token:
            self.remote_problem = (
                found.withheld() or f"no token for {found.endpoint}: run `hivelore remote login`"
                if found
                else "remote mode names no team server: set endpoint in config.json or HIVELORE_ENDPOINT"
            )
            self.warnings.append(f"{self.remote_problem}; reading and writing this machine only")
            return None
        replica = Replica(str(self.settings.home), found, self.network_budget_s)
        if self.network_budget_s > 0 and replica.stale():
            try:
                replica.flush()
                replica.sync()
            except errors.HiveloreError as exc:
                self.warnings.append(f"{exc.sentence().rstrip('.')}: {_as_of(replica.age_s)}")
        tier = RemoteTier(replica, self.warnings, online=self.network_budget_s > 0)
        self.tier_names = ("home", "project", *tier.parts)
        return tier

    @property
    def tiers(self) -> list[Tier]:
        """The tiers read, the winning one first: this machine's, then the team server's."""
        remote = self.remote
        return [self.local, remote] if remote is not None else [self.local]

    @property
    def index_problem(self) -> str | None:
        """Why reads fall back to the files, or None when they go through the index."""
        return self.local.problem

    def close(self) -> None:
        if self._local is not None:
            self._local.close()
            self._local = None
        if self._remote is not None:
            self._remote.close()
            self._remote = None
        if self._code is not None:
            self._code.close()
        self._code, self._code_opened = None, False
        if self._thesaurus is not None:
            self._thesaurus.close()
        self._thesaurus, self._thesaurus_opened = None, False

    def code(self) -> Code | None:
        if not self._code_opened and self.chain.git is not None:
            from hivelore.codegraph.cited import GraphCode

            try:
                self._code = GraphCode.open(str(self.settings.home), str(self.chain.git.root))
            except errors.Unavailable as exc:  # a damaged or busy graph.db: reads go on unchecked
                self.warnings.append(f"cited code not checked: {exc.sentence()}")
        self._code_opened = True
        return self._code

    def cites_here(self, memory: Memory) -> bool:
        git = self.chain.git
        if git is None:
            return False
        written_in = memory.provenance.get("repo")
        if written_in:
            return written_in == git.owner_repo
        return memory.scope in self.chain.scopes and memory.scope.level is not Level.GLOBAL

    def _named_tier(self, tier: str) -> tuple[Tier, str]:
        if tier == "home":
            return self.local, "home"
        if tier == "project":
            if not self.chain.git:
                raise ValueError("the project tier needs a git repository: run this inside one, or use --tier home.")
            return self.local, "project"
        remote = self.remote
        if remote is not None and tier in remote.parts:
            return remote, tier
        raise ValueError(f"tier '{tier}' is not {' or '.join(repr(n) for n in self.tier_names)}.")

    def _default_tier(self, scope: Scope) -> tuple[Tier, str]:
        """Where a new memory goes. In remote mode, a scope an organisation shares goes to the team
        server (and every scope, with `remote_writes: "all"`). Otherwise the project tier for the
        scopes of this folder's chain below global, when the repository has one; else home."""
        remote = self.remote
        if remote is not None and (self.settings.remote_writes == "all" or remote.sharing(scope)):
            from hivelore.remote.tier import AUTO

            return remote, AUTO
        if self.project and scope in self.chain.scopes and scope.level is not Level.GLOBAL:
            return self.local, "project"
        return self.local, "home"

    def _provenance(self) -> dict[str, str]:
        git = self.chain.git
        found = {
            "agent": self.agent,
            "session": self.session,
            "repo": git.owner_repo if git and git.owner_repo else "",
            "branch": git.branch if git and git.branch else "",
            "commit": git.commit if git and git.commit else "",
        }
        return {k: v for k, v in found.items() if v}

    # -- the local index ------------------------------------------------------------------------

    def rebuild_index(self) -> RebuildStats:
        """Re-read every file into a new index; the next read chooses the local tier again. The
        thesaurus is not mined here: nothing in the product reads it (`expand` is off)."""
        self.close()
        return rebuild(self.index_path, self.vaults)

    def thesaurus(self) -> Thesaurus | None:
        if not self._thesaurus_opened:
            self._thesaurus_opened = True
            from hivelore.memory.thesaurus import THESAURUS_FILE, Thesaurus  # a search's, only with `expand`

            self._thesaurus = Thesaurus.open(self.index_path.with_name(THESAURUS_FILE))
        return self._thesaurus

    def sweep(self) -> Swept:
        """Remove the temp files writers killed mid-write left in the tiers' folders (stale ones only)."""
        return self.local.sweep()

    def index_status(self) -> dict[str, object]:
        return self.local.status([str(s) for s in self.chain.scopes])


def _checked(
    scope: str,
    key: str,
    value: str,
    tags: Sequence[str],
    kind: str | None,
    state: str,
    ttl_days: float | None,
    provenance: Mapping[str, str],
) -> tuple[Scope, str, tuple[str, ...], str | None]:
    """Validate what a write or an import asks for: (scope, trimmed value, clean tags, expires_at). The guard
    sees every field that will be stored, `provenance` included."""
    target = parse(scope)
    validate_key(key)
    clean_tags = validate_tags(list(tags))
    if kind is not None:
        validate_kind(kind)
    if state not in STATES:
        raise ValueError(f"state '{state}' is not one of {', '.join(STATES)}.")
    validate_ttl_days(ttl_days)
    value = value.strip()
    if not value:
        raise ValueError("the value is empty: say what was learned.")
    _check_content(str(target), key, value, clean_tags, kind or "", provenance)
    expires = iso_from_epoch(time.time() + ttl_days * 86400) if ttl_days else None
    return target, value, clean_tags, expires


def _merge_import(incoming: Memory, existing: Memory | None) -> Memory | None:
    """An imported memory over what is on disk: unchanged when it says the same (re-imports are no-ops)."""
    if existing is None:
        return incoming
    if (existing.value, existing.kind, existing.tags) == (incoming.value, incoming.kind, incoming.tags):
        return None
    return incoming.evolve(created=existing.created, seen_count=max(existing.seen_count, incoming.seen_count))


def _part_at(tier: Tier, part: str, path: Path) -> str:
    """The name of the part a write landed in: `part`, unless the tier chose it (the team server
    places a write by its scope's sharing), when it is the part whose origin holds `path`."""
    if part in tier.parts:
        return part
    return next((name for name, origin in tier.parts.items() if path.parts[:1] == Path(origin).parts), part)


def _as_of(age_s: float | None) -> str:
    """How old what a read shows of the team server is."""
    if age_s is None:
        return "its memories are not on this machine yet"
    return f"showing its memories as of {age_s:.0f} s ago"


def _scaled(pairs: builtins.list[tuple[Candidate, float]]) -> builtins.list[tuple[Candidate, float]]:
    best = max((relevance for _, relevance in pairs), default=0.0) or 1.0
    return [(candidate, relevance / best) for candidate, relevance in pairs]


MAX_WHEN_CHARS = 1000


def _checked_when(when: str) -> str:
    """The symptoms line, on one line: two or three short phrasings, not a second lesson."""
    text = " ".join(when.split())
    if len(text) > MAX_WHEN_CHARS:
        raise ValueError(f"'when' is {len(text):,} characters; keep it to the symptoms, at most {MAX_WHEN_CHARS:,}.")
    return text


def _grouped(items: Iterable[tuple[Memory, Target]]) -> dict[Target, list[Memory]]:
    groups: dict[Target, list[Memory]] = {}
    for memory, target in items:
        groups.setdefault(target, []).append(memory)
    return groups


def _summed(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for part in counts:
        for scope, n in part.items():
            total[scope] = total.get(scope, 0) + n
    return total


def _batches(checked: Sequence[tuple[Memory, Target]], size: int) -> Iterator[list[tuple[Memory, Target]]]:
    """Runs of at most `size` records, a new one before an address the current one already has (its
    second record must see the first one's file)."""
    batch: list[tuple[Memory, Target]] = []
    addresses: set[str] = set()
    for item in checked:
        if len(batch) >= size or item[0].address in addresses:
            yield batch
            batch, addresses = [], set()
        batch.append(item)
        addresses.add(item[0].address)
    if batch:
        yield batch


def _check_content(
    scope: str, key: str, value: str, tags: Sequence[str], kind: str, provenance: Mapping[str, str]
) -> None:
    """The guard, one call for the whole record, imported here because compiling its patterns is the
    largest part of a read-only command's start-up, and reads never need it."""
    from hivelore.memory.guard import check_record

    check_record(scope=scope, key=key, value=value, tags=tags, kind=kind, provenance=provenance)
