"""The team server's shortlist past its size: an any-word search ranks in SQL only the rows of its
rarest words (as many as hold CANDIDATE_FACTOR rows per shortlisted one), and still finds a match
of every kind a search should."""

from __future__ import annotations

import secrets

import psycopg

from hivelore.memory import bm25
from hivelore.memory.model import Memory, now_iso
from hivelore.memory.scope import parse
from hivelore.server.postgres.tier import CANDIDATE_FACTOR, PostgresTier, _rare

SCOPE = "repo::acme/checkout"


def phrases(*words: str) -> list[bm25.Phrase]:
    return [bm25.Phrase.of(word) for word in words]


def test_the_rarest_words_are_ranked_while_their_rows_fit_the_budget() -> None:
    deadlock, refused, the = phrases("deadlock", "refused", "the")
    budget = CANDIDATE_FACTOR * 10
    assert _rare([the, refused, deadlock], [budget, budget - 3, 3], 10) == [deadlock, refused]
    assert _rare([the, deadlock], [budget * 9, 3], 10) == [deadlock]


def test_every_word_is_ranked_when_even_the_rarest_holds_more_than_the_budget() -> None:
    the, test = phrases("the", "test")
    assert _rare([the, test], [10**6, 10**5], 10) == [the, test]


def test_a_word_no_row_holds_is_never_the_only_one_ranked() -> None:
    """Ranking only a word held nowhere would find nothing, though the other words match."""
    missing, refused = phrases("xyzzy", "refused")
    assert _rare([missing, refused], [0, 10**6], 10) == [missing, refused]


def test_an_any_word_search_past_the_shortlist_finds_the_rows_of_its_rare_word(database_url: str) -> None:
    now = now_iso()
    scope = parse(SCOPE)
    common = [
        Memory(scope=scope, key=f"common-{n}", value="the tests, the tests, the tests", created=now, updated=now)
        for n in range(60)
    ]
    # What ts_rank, blind to rarity, puts last: one match in a long row. bm25 puts it first.
    story = "a deadlock between the refunds job and the nightly export, which both lock orders then payments " * 3
    rare = Memory(scope=scope, key="pg-deadlock", value=story, created=now, updated=now)
    with psycopg.connect(database_url, autocommit=True) as conn:
        tier = PostgresTier(conn, {"home": f"test:{secrets.token_hex(6)}:home"}, [])
        tier.store_batch("home", [*common, rare], lambda new, old: new)
        # Wanted 1 hit: a shortlist of 8 rows, 61 matches of "the", one of "deadlock".
        [(found, relevance)] = tier.match([SCOPE], ["deadlock", "the", "tests"], 1)
        assert found.key == "pg-deadlock" and relevance > 0
