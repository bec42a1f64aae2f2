"""memory/bm25.py against SQLite FTS5 itself: the same tokens as the unicode61 tokenizer, and the same
bm25 as the local index's, so a tier that is not SQLite ranks a search as the local one does."""

from __future__ import annotations

import sqlite3
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hivelore.memory import bm25
from hivelore.memory.local.index import fts_query

ALPHABET = "abcdeéèñüxyz0123456789_-.:/ ÀÉ\tß"
TEXT = st.text(alphabet=ALPHABET, max_size=60)


def fts_table() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(key, value, tags,"
        " tokenize = 'unicode61 remove_diacritics 2', prefix = '3 4')"
    )
    return conn


def unicode61_tokens(text: str) -> list[str]:
    conn = fts_table()
    conn.execute("INSERT INTO t (key, value, tags) VALUES ('', ?, '')", (text,))
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    return [term for (term,) in conn.execute("SELECT term FROM v ORDER BY offset")]


@given(TEXT)
def test_tokens_are_the_unicode61_tokenizers(text: str) -> None:
    assert bm25.tokens(text) == unicode61_tokens(text)


@given(st.text(alphabet=string.printable, max_size=80))
def test_ascii_tokens_are_the_unicode61_tokenizers(text: str) -> None:
    """The ASCII fast path (no folding) gives what FTS5 gives."""
    assert bm25.tokens(text) == unicode61_tokens(text)


ROWS = [
    ("tests-need-local-postgres", "pnpm test fails with ECONNREFUSED 5432 when the db is down", ["db", "tests"]),
    ("redis-worker", "the worker tests fail with ECONNREFUSED 6379 until redis is up", ["redis"]),
    ("postgres_port", "Postgres listens on 5432; tests use the docker compose service db", ["db"]),
    ("node-memory", "jest runs out of memory: raise node's heap with --max-old-space-size", ["node", "tests"]),
    ("café-menu", "the café page caches its menu for ten minutes; tests clear the cache", []),
    ("refresh-session", "test_refresh_session fails when the clock is skewed: freeze time in tests", ["auth"]),
]


@pytest.mark.parametrize(
    ("words", "every_word"),
    [
        (["econnrefused", "5432"], True),
        (["tests"], True),
        (["test"], True),
        (["db"], True),
        (["postgres", "tests"], True),
        (["cafe"], True),
        (["test_refresh_session"], True),
        (["redis", "memory", "db"], False),
        (["5432", "heap", "menu"], False),
    ],
)
def test_score_is_fts5s_bm25_with_the_index_weights(words: list[str], every_word: bool) -> None:
    conn = fts_table()
    for key, value, tags in ROWS:
        conn.execute(
            "INSERT INTO t (key, value, tags) VALUES (?, ?, ?)",
            (key.replace("-", " ").replace("_", " "), value, " ".join(tags)),
        )
    expected = {
        rowid: -rank
        for rowid, rank in conn.execute(
            "SELECT rowid, bm25(t, 3.0, 1.0, 2.0) FROM t WHERE t MATCH ?", (fts_query(words, every_word),)
        )
    }
    assert expected, "the query matches something"
    phrases = [bm25.Phrase.of(word) for word in words]
    rows = [bm25.columns(key, value, tags) for key, value, tags in ROWS]
    holding = tuple(sum(1 for row in rows if any(p.count(column) for column in row)) for p in phrases)
    corpus = bm25.Corpus(len(rows), sum(len(column) for row in rows for column in row), holding)
    for rowid, relevance in expected.items():
        assert bm25.score(phrases, rows[rowid - 1], corpus) == pytest.approx(relevance, rel=1e-9)


WORDS = ["db", "test", "tests", "testing", "postgres", "pg", "redis", "a", "fails", "failed", "5432", "port"]
COLUMN = st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join)


@given(
    rows=st.lists(st.tuples(COLUMN, COLUMN, COLUMN), min_size=1, max_size=8),
    words=st.lists(st.sampled_from([*WORDS, "tes", "fail", "postg"]), min_size=1, max_size=3),
    every_word=st.booleans(),
)
def test_a_scorer_over_joined_columns_is_fts5s_bm25(
    rows: list[tuple[str, str, str]], words: list[str], every_word: bool
) -> None:
    """The server scores its shortlist with Scorer.joined over each row's stored terms: any rows, any
    query of whole words and prefixes, it gives what FTS5 gives."""
    conn = fts_table()
    conn.executemany("INSERT INTO t (key, value, tags) VALUES (?, ?, ?)", rows)
    expected = dict(
        conn.execute(
            "SELECT rowid, -bm25(t, 3.0, 1.0, 2.0) FROM t WHERE t MATCH ?", (fts_query(words, every_word),)
        ).fetchall()
    )
    phrases = [bm25.Phrase.of(word) for word in words]
    tokenized = [tuple(bm25.tokens(column) for column in row) for row in rows]
    holding = tuple(sum(1 for row in tokenized if any(p.count(c) for c in row)) for p in phrases)
    corpus = bm25.Corpus(len(rows), sum(len(c) for row in tokenized for c in row), holding)
    scorer = bm25.Scorer(phrases, corpus)
    for rowid, relevance in expected.items():
        assert scorer.joined(*rows[rowid - 1]) == pytest.approx(relevance, rel=1e-9)
