"""A coding thesaurus mined from the store itself: which words go together in the memories people
wrote (a symptom in a lesson's `when` and the cause in its text, "database" and "postgres", "out of
memory" and "heap"), so that a query in other words than a lesson's can still reach it.

Mined from the stored memories only (their key, text, `when` and tags as the full-text index holds
them; never from queries), by co-occurrence: two words are related when they appear in the same
memories more often than their frequencies alone would give (the Ochiai coefficient, the cosine of
their memory sets), each word keeping its few strongest partners. Words are reduced to a light stem,
so "databases" and "database" are one entry, and a stem is looked up as a prefix.

The table lives in `thesaurus.db` beside the index and is mined from it by `mine_index`, which only
what switches the expansion on calls (the recall benchmark, the tests): it is off in the product
(`MemoryService.expand`), so neither `index rebuild` nor the hook server spends time mining it. It
can be deleted at any time. Stdlib only: the hook path would read it.

Expansions are down-weighted (EXPANSION_WEIGHT) and only ever used when no memory holds every query
word (the same gate as fusion.py), so a query in a lesson's own words ranks exactly as without them.
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import combinations
from pathlib import Path

from hivelore.home import private_file
from hivelore.memory import bm25
from hivelore.memory.recall import STOPWORDS
from hivelore.memory.tier import Candidate

THESAURUS_FILE = "thesaurus.db"
MIN_SHARED = 2  # memories two words must share: one shared memory is a coincidence
MIN_ASSOCIATION = 0.12  # Ochiai coefficient below which two words are not related
PARTNERS = 6  # strongest partners kept per word
MAX_SHARE = 0.2  # a word in more than this share of memories is too common to relate to anything
WORDS_PER_MEMORY = 48  # the rarest words of a long memory: pairs grow with the square of its words
EXPANSIONS = 6  # expansion words added to one query
EXPANSION_WEIGHT = 0.35  # an expansion's relevance against a query word's own
_SUFFIXES = ("ations", "ation", "ings", "ing", "ed", "s")
# Glue the query stop words leave in: it relates to everything and says nothing.
_GLUE_TEXT = (
    "after again against also because before being both cannot down during each every few further here how"
    " instead its itself more most only other over same such through under until very one two three"
)
_MORE_GLUE = frozenset(_GLUE_TEXT.split())


def stem(word: str) -> str:
    """A light stem (no language model): enough to make plurals and -ing forms one entry."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4 and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


def terms(text: str) -> set[str]:
    """The distinct stems of a text that can relate to something: no glue, no short numbers."""
    found = set()
    for token in bm25.tokens(text):
        if token.isdigit():
            if len(token) >= 3:
                found.add(token)
        elif len(token) > 2 and token not in STOPWORDS and token not in _MORE_GLUE:
            found.add(stem(token))
    return found


def mine(texts: Iterable[str]) -> dict[str, list[tuple[str, float]]]:
    """Per stem, its strongest partners with their association in (0, 1], strongest first."""
    documents = [terms(text) for text in texts]
    frequency: Counter[str] = Counter(t for document in documents for t in document)
    ceiling = max(MIN_SHARED * 2, int(MAX_SHARE * len(documents)))
    useful = {t for t, n in frequency.items() if MIN_SHARED <= n <= ceiling}
    together: Counter[tuple[str, str]] = Counter()
    for document in documents:
        kept = sorted((t for t in document if t in useful), key=lambda t: (frequency[t], t))[:WORDS_PER_MEMORY]
        together.update(combinations(sorted(kept), 2))
    partners: dict[str, list[tuple[str, float]]] = {}
    for (a, b), shared in together.items():
        if shared < MIN_SHARED:
            continue
        strength = shared / math.sqrt(frequency[a] * frequency[b])
        if strength >= MIN_ASSOCIATION:
            partners.setdefault(a, []).append((b, strength))
            partners.setdefault(b, []).append((a, strength))
    return {t: sorted(found, key=lambda p: (-p[1], p[0]))[:PARTNERS] for t, found in partners.items()}


class Thesaurus:
    """`thesaurus.db`: the mined pairs, and how many memories they were mined from."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    @classmethod
    def open(cls, path: Path) -> Thesaurus | None:
        """The thesaurus at `path`, or None when none was mined yet (or the file is unusable)."""
        if not path.exists():
            return None
        try:
            conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=1)
            conn.execute("SELECT 1 FROM related LIMIT 1").fetchall()
        except sqlite3.Error:
            return None
        return cls(conn)

    def partners(self, words: Sequence[str]) -> dict[str, list[tuple[str, float]]]:
        stems = sorted({stem(w) for w in words})
        if not stems:
            return {}
        sql = f"SELECT word, other, weight FROM related WHERE word IN ({', '.join('?' * len(stems))})"
        found: dict[str, list[tuple[str, float]]] = {}
        for word, other, weight in self.conn.execute(sql, stems):
            found.setdefault(word, []).append((other, weight))
        return found

    def expand(self, words: Sequence[str]) -> list[tuple[str, float]]:
        """Words to add to a query of `words`, each with its weight against a query word's own
        (at most EXPANSIONS, strongest first; none that a query word already covers)."""
        own = {stem(w) for w in words}
        best: dict[str, float] = {}
        for found in self.partners(words).values():
            for other, weight in found:
                if other not in own and not any(other.startswith(o) or o.startswith(other) for o in own):
                    best[other] = max(best.get(other, 0.0), weight)
        chosen = sorted(best.items(), key=lambda p: (-p[1], p[0]))[:EXPANSIONS]
        return [(word, EXPANSION_WEIGHT * weight) for word, weight in chosen]

    def close(self) -> None:
        self.conn.close()


def build(path: Path, texts: Sequence[str]) -> int:
    """Mine `texts` (every stored memory's indexed text) into a new thesaurus at `path`, replacing
    the old one in one step; how many words it relates."""
    partners = mine(texts)
    fresh = path.with_name(f"{path.name}.{time.time_ns()}.tmp")
    private_file(str(fresh))  # the words of every memory: as private as the memories
    conn = sqlite3.connect(fresh)
    try:
        conn.executescript(
            "CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "CREATE TABLE related (word TEXT NOT NULL, other TEXT NOT NULL, weight REAL NOT NULL,"
            " PRIMARY KEY (word, other)) WITHOUT ROWID;"
        )
        with conn:
            conn.execute("INSERT INTO meta VALUES ('memories', ?)", (str(len(texts)),))
            conn.executemany(
                "INSERT INTO related VALUES (?, ?, ?)",
                ((word, other, weight) for word, found in partners.items() for other, weight in found),
            )
    finally:
        conn.close()
    fresh.replace(path)
    return len(partners)


def indexed_texts(index_path: Path) -> list[str]:
    """Every memory's text as the full-text index holds it (key, value with its `when`, tags); none
    from an index still being created."""
    conn = sqlite3.connect(f"{index_path.as_uri()}?mode=ro", uri=True, timeout=5)
    try:
        rows = conn.execute("SELECT key, value, tags FROM memories_fts").fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        rows = []
    finally:
        conn.close()
    return [f"{key.replace('-', ' ')}\n{value}\n{tags}" for key, value, tags in rows]


def mine_index(index_path: Path) -> int:
    """Mine the thesaurus beside this index from every memory it holds, replacing the old one; how
    many words it relates."""
    return build(index_path.with_name(THESAURUS_FILE), indexed_texts(index_path))


Pairs = list[tuple[Candidate, float]]


def widened(lexical: Pairs, extra: Pairs, weight: float) -> Pairs:
    """BM25's (candidate, relevance) pairs with the expansion query's pairs added at `weight`: a
    memory's relevance is its own words' plus the weighted expansions', best first."""
    scores: dict[tuple[str, str], float] = {}
    chosen: dict[tuple[str, str], Candidate] = {}
    for factor, pairs in ((1.0, lexical), (weight, extra)):
        for candidate, relevance in pairs:
            identity = (candidate.origin, candidate.place)
            chosen.setdefault(identity, candidate)
            scores[identity] = scores.get(identity, 0.0) + factor * relevance
    ordered = sorted(scores, key=lambda identity: -scores[identity])
    return [(chosen[identity], scores[identity]) for identity in ordered]
