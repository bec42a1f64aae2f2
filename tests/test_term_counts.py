"""The rows holding each query word, as the local index's writes keep them (`term_rows`,
memory/local/terms.py): always what FTS5 itself counts by matching, after writes, rewrites, deletes,
hand edits, a rebuild and the upgrade of an index of the schema before."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hivelore.memory.local.index import UPGRADABLE, Index, fts_query
from hivelore.memory.local.tier import LocalTier
from hivelore.memory.service import Hivelore

# Query words of every kind a term covers or not: short tokens (exact), prefixes shared by several
# tokens of one row ("conn": connection and connected), a prefix past the sixteen characters kept,
# diacritics, a word of two tokens, a word of no token, a key's words (split at - and _), tags.
WORDS = [
    "ci", "db", "a", "i", "conn", "connection", "connect", "connected", "refused", "refu", "the", "test",
    "tests", "testing", "cafe", "café", "naïve", "postgres", "postgresqlconnectionpooler",
    "postgresqlconnectionpoolerx", "e2e", "5432", "foo_bar", "_", "lockfile", "deadlock", "flaky",
    "mirror", "nowhere", "tag", "tagged",
]  # fmt: skip


@pytest.fixture
def hl(home: Path, repo: Path) -> Hivelore:
    return Hivelore.open(repo)


def _tier(hl: Hivelore) -> LocalTier:
    tier = hl.local
    assert isinstance(tier, LocalTier)
    return tier


def _matched(index: Index, words: list[str]) -> dict[str, int]:
    """FTS5's own count of the rows each word matches, as a search's query asks for it."""
    sql = "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?"
    return {w: index.conn.execute(sql, (fts_query([w], every_word=True),)).fetchone()[0] for w in words}


def _fill(hl: Hivelore) -> None:
    hl.write("global", "conn-refused", "connection refused: the db was not connected yet", tags=["db", "ci"])
    hl.write("global", "foo_bar-key", "the foo_bar flag makes tests flaky in ci; testing with a café locale")
    hl.write("global", "pooler", "the postgresqlconnectionpoolerx proxy drops idle connections after 5432 s")
    hl.write("global", "naive-dates", "naïve datetimes in e2e tests", tags=["tagged", "e2e"])
    hl.write("repo::acme/checkout", "lock", "a deadlock in the lockfile mirror: the test waits")


def test_the_counts_the_writes_keep_are_what_fts5_matches(hl: Hivelore, home: Path, repo: Path) -> None:
    _fill(hl)
    index = _tier(hl).index
    assert index.document_counts(WORDS) == _matched(index, WORDS)
    assert index.document_counts(["connect", "ci", "tests"]) == {"connect": 2, "ci": 2, "tests": 2}

    hl.write("global", "conn-refused", "refused again, nothing else")  # a rewrite: its old words go
    hl.forget("global", "pooler")
    (home / "global" / "naive-dates.md").write_text(
        (home / "global" / "naive-dates.md").read_text().replace("naïve datetimes", "plain dates")
    )  # a hand edit, noticed by the next read
    hl.search("dates")
    assert index.document_counts(WORDS) == _matched(index, WORDS)
    assert index.document_counts(["connect", "datetimes", "5432"]) == {"connect": 0, "datetimes": 0, "5432": 0}

    hl.rebuild_index()
    rebuilt = Hivelore.open(repo)
    assert _tier(rebuilt).index.document_counts(WORDS) == _matched(_tier(rebuilt).index, WORDS)


def test_an_index_of_the_schema_before_gains_the_counts_when_opened(hl: Hivelore, home: Path, repo: Path) -> None:
    _fill(hl)
    hl.close()
    with sqlite3.connect(home / "index.db") as conn:
        conn.execute("DROP TABLE term_rows")
        conn.execute("UPDATE meta SET value = ? WHERE name = 'schema'", (UPGRADABLE,))
    conn.close()
    reopened = Hivelore.open(repo)
    index = _tier(reopened).index
    assert index.document_counts(WORDS) == _matched(index, WORDS)
    assert [h.row.key for h in reopened.search("deadlock lockfile")] == ["lock"]
