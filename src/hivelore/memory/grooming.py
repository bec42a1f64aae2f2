"""Grooming a vault: `lint` (what is stale, near-duplicate, malformed or keyed by something
volatile), `dedupe` (near-duplicates merged, nothing lost), `stats` and the `diff` of two scopes.

Each is a read (or, for dedupe, a few writes) through `MemoryService`, so the CLI and the MCP tools
answer the same. Similarity is Jaccard over the words the index holds (FTS5's unicode61 tokens of
key and text, `memory/bm25.tokens`), stop words left out: lexical, cheap and explainable.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence

from hivelore.memory import bm25, citations, recall
from hivelore.memory.model import Memory, epoch_from_iso
from hivelore.memory.recall import STOPWORDS
from hivelore.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from hivelore.memory.service import MemoryService
    from hivelore.memory.tier import Candidate

NEAR_DUPLICATE = 0.6  # Jaccard of two memories' words from which lint calls them near-duplicates
COMMON_WORD = 50  # a word in more memories than this pairs none of them up (it still counts in Jaccard)
EXPIRING_DAYS = 7
MAX_MERGED_TAGS = 16
PROBLEM_KINDS = ("stale", "near-duplicate", "malformed", "volatile-key")

# What makes a key volatile: it names a moment or a run, not the lesson, so the next time the same
# lesson is written under another key and the two never meet.
_VOLATILE = (
    (re.compile(r"(?<!\d)(?:19|20)\d\d-?[01]\d-?[0-3]\d(?!\d)"), "it holds a date"),
    (re.compile(r"(?<!\d)[0-2]?\d[:h][0-5]\d(?!\d)"), "it holds a time of day"),
    (re.compile(r"(?<![0-9a-f])[0-9a-f]{8}(?:-?[0-9a-f]{4}){3}-?[0-9a-f]{12}", re.I), "it holds a UUID"),
    (re.compile(r"(?<![0-9a-z])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![0-9a-z])", re.I), "it holds a hash"),
    (re.compile(r"(?<!\d)\d{6,}(?!\d)"), "it holds a long number (a pid, a run or a timestamp)"),
    (
        re.compile(r"(?:^|[-_.:])(?:today|yesterday|tomorrow|tmp|temp|wip|latest|current|now|new)(?:$|[-_.:])"),
        "it says when, not what (today, tmp, latest …)",
    ),
    (re.compile(r"(?:^|[-_.:])session[-_.:]?[0-9a-z]*\d[0-9a-z]*(?:$|[-_.:])", re.I), "it names a session"),
)


@record
class Problem:
    kind: str  # one of PROBLEM_KINDS
    address: str  # the memory's, or for an unreadable file its path
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "address": self.address, "detail": self.detail}


@record
class Lint:
    scopes: list[str]
    memories: int  # visible memories looked at
    problems: list[Problem]

    def counts(self) -> dict[str, int]:
        return {kind: sum(p.kind == kind for p in self.problems) for kind in PROBLEM_KINDS}


@record
class Similar:
    first: Memory
    second: Memory
    similarity: float


def volatile(key: str) -> str:
    """Why a key names a moment or a run rather than what was learnt, or "" when it does not."""
    lowered = key.lower()
    return next((why for pattern, why in _VOLATILE if pattern.search(lowered)), "")


def words(memory: Memory) -> frozenset[str]:
    """The words two memories are compared by: the index's tokens of key and text, no stop words."""
    return frozenset(w for w in bm25.tokens(f"{memory.key} {memory.value}") if w not in STOPWORDS)


def _value_words(memory: Memory) -> frozenset[str]:
    return frozenset(bm25.tokens(memory.value))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def near_duplicates(memories: Sequence[Memory], threshold: float = NEAR_DUPLICATE) -> list[Similar]:
    """Pairs of memories at two addresses whose words are at least `threshold` alike, most alike
    first. Pairs are found through the words they share (a word more than COMMON_WORD memories
    hold pairs none up), so the cost follows the pairs, not the square of the vault."""
    sets = [words(m) for m in memories]
    postings: dict[str, list[int]] = {}
    for n, found in enumerate(sets):
        for word in found:
            postings.setdefault(word, []).append(n)
    pairs: set[tuple[int, int]] = set()
    for holders in postings.values():
        if len(holders) <= COMMON_WORD:
            pairs.update((a, b) for i, a in enumerate(holders) for b in holders[i + 1 :])
    found_pairs = []
    for a, b in pairs:
        if memories[a].address == memories[b].address:
            continue  # two tiers' copies of one key: shadowing (`tree`), not a duplicate
        similarity = jaccard(sets[a], sets[b])
        if similarity >= threshold:
            found_pairs.append(Similar(memories[a], memories[b], similarity))
    found_pairs.sort(key=lambda s: (-s.similarity, s.first.address, s.second.address))
    return found_pairs


def lint(service: MemoryService, scopes: Iterable[str] | None = None) -> Lint:
    """The problems of the visible memories in these scopes (the folder's chain by default)."""
    chosen = service.scopes_for(scopes)
    memories = [c.memory for c in winning(service, chosen)]
    problems = [
        Problem("malformed", w.removeprefix("skipped ").split(":", 1)[0], w.removeprefix("skipped "))
        for w in service.warnings
        if w.startswith("skipped ")
    ]
    for memory in memories:
        try:
            citations.checked_cites(memory.cites)
        except ValueError as exc:
            problems.append(Problem("malformed", memory.address, str(exc)))
    stale = service.staleness(memories)
    problems += [Problem("stale", address, s.note()) for address, s in stale.items() if s.verdict]
    problems += [
        Problem("near-duplicate", s.first.address, f"{s.similarity:.2f} alike with {s.second.address}")
        for s in near_duplicates(memories)
    ]
    problems += [Problem("volatile-key", m.address, why) for m in memories if (why := volatile(m.key))]
    return Lint(chosen, len(memories), problems)


# -- dedupe ---------------------------------------------------------------------------------------


@record
class Merge:
    """Near-duplicates of one scope, merged into `keeper`; the others archived."""

    keeper: Memory
    others: list[Memory]
    value: str  # the keeper's text, then what each other says that it does not

    def to_dict(self) -> dict[str, object]:
        return {"keeper": self.keeper.address, "archived": [m.address for m in self.others], "value": self.value}


def merged_value(keeper: Memory, others: Sequence[Memory]) -> str:
    """The keeper's text, then, for each other memory, its text (unless every word of it is in the
    keeper's already) and where it came from: nothing either said is lost."""
    parts = [keeper.value]
    have = _value_words(keeper)
    for other in others:
        origin = ", ".join(f"{k} {v}" for k, v in other.provenance.items() if k in ("agent", "commit", "imported_from"))
        said = "" if _value_words(other) <= have else f"{other.value}\n"
        parts.append(f"{said}(merged from {other.address}, {other.updated}{'; ' + origin if origin else ''})")
        have |= _value_words(other)
    return "\n\n".join(parts)


def plan_merges(memories: Sequence[Memory], threshold: float = NEAR_DUPLICATE) -> list[Merge]:
    """The merges dedupe would make: near-duplicates grouped within one scope (across scopes, a
    copy may be true in one place only, so lint names them and they stay); each group's keeper is
    the most seen, then the most recently updated."""
    parent: dict[str, str] = {}

    def root(address: str) -> str:
        while parent.get(address, address) != address:
            address = parent[address]
        return address

    by_address = {m.address: m for m in memories}
    for similar in near_duplicates(memories, threshold):
        if similar.first.scope == similar.second.scope:
            parent[root(similar.first.address)] = root(similar.second.address)
    groups: dict[str, list[Memory]] = {}
    for address in parent:
        groups.setdefault(root(address), []).append(by_address[address])
    for top, group in groups.items():
        if by_address[top] not in group:
            group.append(by_address[top])
    merges = []
    for group in groups.values():
        group.sort(key=lambda m: (-m.seen_count, -_updated(m), m.key))
        keeper, others = group[0], group[1:]
        merges.append(Merge(keeper, others, merged_value(keeper, others)))
    merges.sort(key=lambda m: m.keeper.address)
    return merges


def _updated(memory: Memory) -> float:
    return epoch_from_iso(memory.updated) if memory.updated else 0.0


def merged(merge: Merge) -> Memory:
    """The keeper as the merge leaves it: the merged text, every tag and cite of the group, the seen
    counts summed."""
    group = [merge.keeper, *merge.others]
    tags = tuple(dict.fromkeys(t for m in group for t in m.tags))[:MAX_MERGED_TAGS]
    cites: dict[str, str] = {}
    for memory in group:
        for name, digest in memory.cites.items():
            if len(cites) < citations.MAX_CITES:
                cites.setdefault(name, digest)
    seen = sum(m.seen_count for m in group)
    return merge.keeper.evolve(value=merge.value, tags=tags, cites=cites, seen_count=seen)


@record
class Deduped:
    merges: list[Merge]  # planned (a dry run) or made
    refused: list[tuple[Merge, str]]  # merges that could not be made, and why (nothing of them was changed)


def dedupe(service: MemoryService, scopes: Iterable[str] | None = None, apply: bool = False) -> Deduped:
    """The merges of near-duplicates in these scopes (the folder's chain by default); made when `apply`."""
    chosen = service.scopes_for(scopes)
    merges = plan_merges([c.memory for c in winning(service, chosen)])
    if not apply:
        return Deduped(merges, [])
    made, refused = [], []
    for merge in merges:
        try:
            service.merge(merged(merge), merge.others)
            made.append(merge)
        except ValueError as exc:
            refused.append((merge, str(exc)))
    return Deduped(made, refused)


# -- stats and diff -------------------------------------------------------------------------------


def stats(service: MemoryService, scopes: Iterable[str] | None = None) -> dict[str, object]:
    """Counts of the memories in these scopes (the folder's chain by default; hidden ones counted
    apart): by scope, kind, tier and state, how many cite code that moved on, how many expire within
    EXPIRING_DAYS days."""
    chosen = service.scopes_for(scopes)
    now = time.time()
    everything = service.copies(chosen, include_hidden=True)
    visible = [c for c in everything if c.memory.is_visible(now)]
    soon = now + EXPIRING_DAYS * 86400
    stale = service.staleness(c.memory for c in visible)
    return {
        "scopes": chosen,
        "visible": len(visible),
        "hidden": {
            "archived": sum(c.memory.archived_at is not None for c in everything),
            "expired": sum(c.memory.archived_at is None and c.memory.is_expired(now) for c in everything),
        },
        "by_scope": _tally(c.scope for c in visible),
        "by_kind": _tally(c.kind for c in visible),
        "by_tier": _tally(service.part_name(c) for c in visible),
        "by_state": _tally(c.state for c in visible),
        "citing_code": sum(bool(c.memory.cites) for c in visible),
        "stale": {verdict: sum(s.verdict == verdict for s in stale.values()) for verdict in citations.STALE_FACTOR},
        "expiring_within_days": {
            "days": EXPIRING_DAYS,
            "count": sum(bool(c.memory.expires_at) and c.memory.is_expired(soon) for c in visible),
        },
    }


def _tally(items: Iterable[str]) -> dict[str, int]:
    counted: dict[str, int] = {}
    for item in items:
        counted[item] = counted.get(item, 0) + 1
    return dict(sorted(counted.items(), key=lambda kv: (-kv[1], kv[0])))


DIFF_MARKS = ("only-a", "only-b", "differs", "same")


@record
class KeyDiff:
    key: str
    mark: str  # one of DIFF_MARKS
    a: Memory | None
    b: Memory | None

    def to_dict(self) -> dict[str, object]:
        return {
            "key": self.key,
            "mark": self.mark,
            "a": self.a.to_dict() if self.a else None,
            "b": self.b.to_dict() if self.b else None,
        }


def diff_scopes(service: MemoryService, a: str, b: str) -> list[KeyDiff]:
    """Per key of either scope, its winning visible copy in each and whether their texts agree."""
    first, second = (service.scopes_for([s])[0] for s in (a, b))
    if first == second:
        raise ValueError(f"both scopes are {first}: give two different scopes.")
    sides = (_winners(service, first), _winners(service, second))
    found = []
    for key in sorted(sides[0].keys() | sides[1].keys()):
        left, right = sides[0].get(key), sides[1].get(key)
        if left is None or right is None:
            mark = "only-a" if right is None else "only-b"
        else:
            mark = "same" if left.value == right.value else "differs"
        found.append(KeyDiff(key, mark, left, right))
    return found


def _winners(service: MemoryService, scope: str) -> dict[str, Memory]:
    return {copy.key: copy.memory for copy in winning(service, [scope])}


def winning(service: MemoryService, scopes: Sequence[str]) -> list[Candidate]:
    """The visible copy of each address in these scopes that a read shows (project tier first)."""
    copies = sorted(service.copies(scopes), key=lambda c: recall.precedence(c, scopes, service.roots))
    first: dict[tuple[str, str], Candidate] = {}
    for copy in copies:
        first.setdefault((copy.scope, copy.key), copy)
    return list(first.values())
