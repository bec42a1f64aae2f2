"""Ranking at read time: relevance, scope specificity, recency and how often a memory was seen.

Nothing decays in the background; every score is computed when memory is read. This module is
pure (candidates in, ranked candidates out, whatever tier they came from) and stdlib only, so the hook path can use it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence

from hivelore.memory.model import SESSION_NOTE_TAG, Memory
from hivelore.memory.scope import parse, related
from hivelore.memory.tier import Candidate
from hivelore.records import record, replace

# Weights of the score's parts. Relevance dominates a search; without a query, the scope and
# recency decide. Each part is in [0, 1].
SEARCH_WEIGHTS = {"relevance": 0.55, "scope": 0.2, "recency": 0.15, "seen": 0.1}
CONTEXT_WEIGHTS = {"relevance": 0.0, "scope": 0.45, "recency": 0.3, "seen": 0.25}
RECENCY_HALF_LIFE_DAYS = 30.0
KIND_BONUS = {"lesson": 0.05, "decision": 0.04, "fact": 0.02, "note": 0.0}
STAGED_FACTOR = 0.7  # captured automatically, not written on purpose: ranks lower
NEAR_DUPLICATE = 0.8  # Jaccard similarity of word sets above which two memories say the same
MIN_LINE_CHARS = 40  # below this much budget left, no memory line fits

_WORD_RE = re.compile(r"\w+", re.UNICODE)


@record
class Ranked:
    row: Candidate
    score: float
    relevance: float
    note: str = ""  # what a read says next to it: "code changed since: …" (see `demoted`)


@record
class Selection:
    """What a budgeted read shows, and exactly what it leaves out."""

    shown: list[Ranked]
    total: int  # visible memories in the scopes read
    duplicates: int
    shadowed: int
    left_out: dict[str, int]


def query_words(text: str) -> list[str]:
    """The distinct words of a query, lower-cased, in order."""
    return list(dict.fromkeys(_WORD_RE.findall(text.lower())))


# Words that say nothing about which lesson applies: question words, pronouns, glue, and the
# verbs every prompt and error uses.
_STOPWORD_TEXT = (
    "a about after all also an and any are as at be been but by can could did do does doing done for from get"
    " got had has have how i if in into is it its just let me my no not now of on once or our please should so"
    " some than that the their them then there these they this to too us use was we were what when where which"
    " while who why will with would you your error errors failed fail fails failing run running ran"
)
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
MAX_KEYWORDS = 8


def keywords(text: str) -> list[str]:
    """The words of a prompt or an error that can pick out a lesson: distinct, lower-cased, no stop
    words, at most MAX_KEYWORDS, favouring the rarer-looking ones (words with digits, then longer
    words, like 5432 or econnrefused), in the text's order."""
    words = [w for w in query_words(text[:20_000]) if _is_keyword(w)]
    if len(words) <= MAX_KEYWORDS:
        return words
    chosen = set(sorted(words, key=lambda w: (not any(c.isdigit() for c in w), -len(w)))[:MAX_KEYWORDS])
    return [w for w in words if w in chosen]


def _is_keyword(word: str) -> bool:
    if word.isdigit():
        return len(word) >= 3  # a port like 5432 picks out a lesson; an exit status like 1 does not
    return len(word) > 1 and word not in STOPWORDS


def word_overlap(memory_row: Candidate, words: Sequence[str]) -> float:
    """Relevance without an index: how many query words the memory contains."""
    memory = memory_row.memory
    found = _words(f"{memory.key.replace('-', ' ')} {memory.value} {' '.join(memory.tags)}")
    return float(sum(word in found for word in words))


def score(row: Candidate, relevance: float, specificity: float, weights: dict[str, float], now: float) -> float:
    age_days = max(0.0, now - row.updated_ts) / 86400
    recency = 1.0 / (1.0 + age_days / RECENCY_HALF_LIFE_DAYS)
    seen = row.seen_count / (row.seen_count + 3.0)
    total = (
        weights["relevance"] * relevance
        + weights["scope"] * specificity
        + weights["recency"] * recency
        + weights["seen"] * seen
        + KIND_BONUS.get(row.kind, 0.0)
    )
    return total * (STAGED_FACTOR if row.state == "staged" else 1.0)


def rank(
    rows: Sequence[tuple[Candidate, float]], scopes: Sequence[str], weights: dict[str, float], now: float | None = None
) -> list[Ranked]:
    """Score rows (with raw BM25 relevance, 0 without a query), best first.

    `scopes` is narrowest first; specificity is 1.0 for the narrowest and falls toward 0.25 for
    the widest, so the same words in a narrower scope rank higher.
    """
    now = time.time() if now is None else now
    best = max((rel for _, rel in rows), default=0.0) or 1.0
    span = max(len(scopes) - 1, 1)
    ranked = []
    for row, rel in rows:
        position = scopes.index(row.scope) if row.scope in scopes else len(scopes) - 1
        specificity = 1.0 - 0.75 * position / span
        ranked.append(Ranked(row, score(row, rel / best, specificity, weights, now), rel / best))
    ranked.sort(key=lambda r: (-r.score, r.row.scope, r.row.key))
    return ranked


def demoted(ranked: Sequence[Ranked], marks: Mapping[int, tuple[str, float]]) -> list[Ranked]:
    """The one step after ranking that knows a memory may be out of date: the entries at the marked
    positions get their note and their score multiplied by its factor (memory/citations.py's
    STALE_FACTOR for cited code that moved on), and the list is sorted again."""
    changed = [
        replace(r, score=r.score * marks[n][1], note=marks[n][0]) if n in marks else r for n, r in enumerate(ranked)
    ]
    changed.sort(key=lambda r: (-r.score, r.row.scope, r.row.key))
    return changed


def precedence(row: Candidate, scopes: Sequence[str], roots: Sequence[str]) -> tuple[int, int, str]:
    """The order in which copies of one key win: narrower scope (`scopes` narrowest first), then the
    first tier (`roots` order), then the first file name."""
    scope = row.scope
    return (scopes.index(scope) if scope in scopes else len(scopes), roots.index(row.origin), row.place)


def winners(
    ranked: Sequence[Ranked], scopes: Sequence[str], roots: Sequence[str], chain: Sequence[str] = ()
) -> tuple[list[Ranked], int]:
    """Keep one copy per key among related scopes: the narrowest scope's, within a scope the first
    tier's (`roots` order), within a tier the first file name's. Scopes are related when one
    contains the other (see `scope.related`; the folder's `chain` is one line of them); copies in
    unrelated scopes, like two repositories, do not shadow each other."""

    by_key: dict[str, list[Ranked]] = {}
    for r in ranked:
        by_key.setdefault(r.row.key, []).append(r)
    losers: set[int] = set()
    for copies in by_key.values():
        if len(copies) < 2:
            continue
        copies = sorted(copies, key=lambda r: precedence(r.row, scopes, roots))
        for i, r in enumerate(copies):
            scope = parse(r.row.scope)
            if any(related(parse(w.row.scope), scope, chain) for w in copies[:i] if id(w) not in losers):
                losers.add(id(r))
    kept = [r for r in ranked if id(r) not in losers]
    return kept, len(ranked) - len(kept)


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD_RE.findall(text.lower()))


def _own_words(memory: Memory) -> frozenset[str]:
    """What a near-duplicate is judged on: the memory's own words. Every session note opens with the
    same attribution (the agent, its session, the minute: hooks.handlers.agent_words), which would make
    two short notes of different sessions ("OK", "done") near-duplicates in one minute and not in the
    next; only the agent's words, in the quotes, count."""
    value = memory.value
    if SESSION_NOTE_TAG in memory.tags:
        start, end = value.find('"'), value.rfind('"')
        if start < end:
            value = value[start + 1 : end]
    return _words(value)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def line_for(memory_row: Candidate, max_value_chars: int, note: str = "") -> str:
    """One memory as one line of injected context, with a read's `note` (`Ranked.note`) after it."""
    memory = memory_row.memory
    value = " ".join(memory.value.split())
    if len(value) > max_value_chars:
        value = value[: max_value_chars - 1].rstrip() + "…"
    seen = f" (seen {memory.seen_count}×)" if memory.seen_count > 1 else ""
    staged = " [staged]" if memory.state == "staged" else ""
    said = f" [{note}]" if note else ""
    return f"- {memory.address} [{memory.kind}]{staged}: {value}{seen}{said}"


def line_chars_at_least(row: Candidate, max_value_chars: int) -> int:
    """The fewest characters `line_for` can give this row, from its index columns alone (a cut value
    ends one character short when the cut fell after a space)."""
    staged = " [staged]" if row.state == "staged" else ""
    seen = f" (seen {row.seen_count}×)" if row.seen_count > 1 else ""
    value = row.value_chars if row.value_chars <= max_value_chars else max_value_chars - 1
    return len(f"- {row.scope}::{row.key} [{row.kind}]{staged}: ") + value + len(seen)


def fit_budget(
    ranked: Sequence[Ranked],
    budget_chars: int,
    max_value_chars: int,
    fresh: Callable[[Candidate], Candidate | None] = lambda row: row,
) -> tuple[list[Ranked], int]:
    """The best-ranked memories whose lines fit in the budget, and how many near-duplicates of a shown
    memory were passed over on the way. A long line is skipped, not cut off; the scan stops once no
    line could fit any more, so its cost does not grow with the store. `fresh` re-checks a row just
    before it is considered, so only what may be shown pays for a look at its file: it gives the row to
    show in the candidate's place (the winning copy of its key, say) or None to drop it."""
    shown: list[Ranked] = []
    shown_words: list[frozenset[str]] = []
    duplicates = used = 0
    for candidate in ranked:
        if budget_chars - used < MIN_LINE_CHARS:
            break
        if used + line_chars_at_least(candidate.row, max_value_chars) + 1 > budget_chars:
            continue
        row = fresh(candidate.row)
        if row is None or any((row.origin, row.place) == (r.row.origin, r.row.place) for r in shown):
            continue
        r = replace(candidate, row=row)
        cost = len(line_for(r.row, max_value_chars)) + 1
        if used + cost > budget_chars:
            continue
        words = _own_words(r.row.memory)
        if any(_jaccard(words, other) >= NEAR_DUPLICATE for other in shown_words):
            duplicates += 1
            continue
        shown.append(r)
        shown_words.append(words)
        used += cost
    return shown, duplicates


def left_out(scopes: Sequence[str], per_scope_total: dict[str, int], shown: Sequence[Ranked]) -> dict[str, int]:
    """Per scope (narrowest first), how many visible memories were not shown."""
    shown_per_scope: dict[str, int] = {}
    for r in shown:
        scope = r.row.scope
        shown_per_scope[scope] = shown_per_scope.get(scope, 0) + 1
    missing = {scope: per_scope_total.get(scope, 0) - shown_per_scope.get(scope, 0) for scope in scopes}
    return {scope: n for scope, n in missing.items() if n > 0}


def render(selection: Selection, scope: str, line_chars: int) -> str:
    """The block an agent gets at session start: honest header, one line per memory, what was left out."""
    if selection.total == 0:
        return (
            f"hivelore: no memories yet for {scope}. When something was non-obvious, write a lesson with memory_write."
        )
    header = (
        f"{len(selection.shown):,} of {selection.total:,} memories · {scope}"
        " — considerations, not rules; read any in full with memory_read"
    )
    lines = [header, *(line_for(r.row, line_chars) for r in selection.shown)]
    if selection.left_out:
        parts = " · ".join(f"{scope} {n:,}" for scope, n in selection.left_out.items())
        reasons = []
        if selection.shadowed:
            reasons.append(f"{selection.shadowed:,} shadowed by a winning copy of the same key")
        if selection.duplicates:
            reasons.append(f"{selection.duplicates:,} near-duplicates")
        over_budget = sum(selection.left_out.values()) - selection.shadowed - selection.duplicates
        if over_budget > 0:
            reasons.append(f"{over_budget:,} ranked below the budget's cut")
        why = f" ({', '.join(reasons)})" if reasons else ""
        lines.append(f"left out: {parts}{why} — use memory_search to find them")
    else:
        lines.append("left out: nothing")
    return "\n".join(lines)
