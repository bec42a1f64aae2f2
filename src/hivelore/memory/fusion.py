"""One step between a search's BM25 hits and its ranking: when a meaning-based ranking is at hand
(vectors.py, the `semantic` extra), merge the two; without one, the BM25 hits pass unchanged.

The gate keeps lexical recall whole: when some memory holds every query word (FTS5's every-word
match, the signal `match` already uses), the query was written in the lesson's words, and BM25's
hits are the answer, exactly as without the model. Otherwise (a paraphrase, a
vague reference), the two rankings are merged by weighted reciprocal rank fusion, BM25 at a low
weight: its any-word fallback list is mostly noise for a query that shares no word with its lesson.

Pure and stdlib only. The weights sit in the range a 2-fold cross-validation chose when the models were
measured (BM25 at 0.1-0.25, k 5-20); benchmarks/recall's held-out set was never used to choose them.
"""

from __future__ import annotations

from collections.abc import Sequence

from hivelore.memory import bm25
from hivelore.memory.tier import Candidate

RRF_K = 5.0  # small: the top few places of each ranking should count far more than the tenth
LEXICAL_WEIGHT = 0.25  # BM25's weight in the merge when no memory holds every query word

Pairs = list[tuple[Candidate, float]]


def holds_every_word(candidate: Candidate, words: Sequence[str]) -> bool:
    """Whether the memory holds every query word as FTS5's every-word query matches it."""
    return _holds(candidate, [bm25.Phrase.of(word) for word in words])


def _holds(candidate: Candidate, phrases: Sequence[bm25.Phrase]) -> bool:
    memory = candidate.memory
    value = f"{memory.value}\n{memory.when}" if memory.when else memory.value
    text = f"{memory.key} {value} {' '.join(memory.tags)}"
    # Tokenizing costs most of a search's gate (tens of hits at 60,000 memories). An ASCII text folds
    # to its lower case alone, so a query token it does not hold even as a substring is in no column.
    if text.isascii():
        lowered = text.lower()
        if not all(part in lowered for phrase in phrases for part in phrase.parts):
            return False
    columns = bm25.columns(memory.key, value, memory.tags)
    return all(any(phrase.count(column) for column in columns) for phrase in phrases)


def _identity(candidate: Candidate) -> tuple[str, str]:
    return candidate.origin, candidate.place


def fuse(lexical: Pairs, semantic: Pairs, words: Sequence[str]) -> Pairs:
    """BM25's (candidate, relevance) pairs and the meaning-based ranking, merged: candidates with a
    relevance in (0, 1], best first; BM25's pairs themselves when one of them holds every query word."""
    phrases = [bm25.Phrase.of(word) for word in words]
    if any(_holds(candidate, phrases) for candidate, _ in lexical):
        return lexical
    return _reciprocal_rank(sorted(lexical, key=lambda pair: -pair[1]), semantic)


def _reciprocal_rank(lexical: Pairs, semantic: Pairs) -> Pairs:
    scores: dict[tuple[str, str], float] = {}
    chosen: dict[tuple[str, str], Candidate] = {}
    for weight, ranking in ((LEXICAL_WEIGHT, lexical), (1.0, semantic)):
        for place, (candidate, _) in enumerate(ranking):
            identity = _identity(candidate)
            chosen.setdefault(identity, candidate)
            scores[identity] = scores.get(identity, 0.0) + weight / (RRF_K + place + 1)
    best = max(scores.values(), default=1.0)
    ordered = sorted(scores, key=lambda identity: -scores[identity])
    return [(chosen[identity], scores[identity] / best) for identity in ordered]
