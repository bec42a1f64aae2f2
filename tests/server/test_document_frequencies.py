"""BM25's document frequencies on the team server, kept by the writes (migration 0020's
`memory_terms`): whatever was written, updated, deleted, erased, restored or purged, a search's count
of the rows holding a query word is the count a pass over every row gives (what `_holding` computed
before, with the GIN index as the judge), so the ranking stays FTS5's."""

from __future__ import annotations

import secrets
from collections.abc import Sequence

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hivelore.memory import bm25
from hivelore.memory.model import Memory, now_iso
from hivelore.memory.scope import parse
from hivelore.server.postgres import accounts, erasure
from hivelore.server.postgres.tier import PostgresTier, phrase_query

# Words that share prefixes (a row holding two of them counts once for "conn"), short ones, and a
# phrase of two tokens: the cases the table, or its fallback to the GIN index, must count exactly.
VOCABULARY = ["connection", "connected", "conn", "db", "dbs", "docker", "compose", "5432", "54321", "the", "café"]
QUERY_WORDS = [
    "conn", "connect", "connection", "connected", "db", "dbs", "docker", "docker-compose", "5432", "the",
    "cafe", "café", "d", "co", "dock", "db::", "connectionless",
]  # fmt: skip


def scanned(conn: psycopg.Connection, spaces: Sequence[str], phrase: bm25.Phrase) -> int:
    """The rows of `spaces` holding `phrase`, by a pass over them all: the count a search must get."""
    row = conn.execute(
        "SELECT count(*) FROM memory_docs WHERE space = ANY(%s) AND doc @@ %s::tsquery",
        (list(spaces), phrase_query(phrase)),
    ).fetchone()
    return int(row[0]) if row else 0


def kept_terms(conn: psycopg.Connection, spaces: Sequence[str]) -> dict[tuple[str, str], int]:
    rows = conn.execute(
        "SELECT space, term, sum(rows) FROM memory_terms WHERE space = ANY(%s) GROUP BY space, term"
        " HAVING sum(rows) <> 0",
        (list(spaces),),
    )
    return {(space, term): int(n) for space, term, n in rows}


def recounted_terms(conn: psycopg.Connection, spaces: Sequence[str]) -> dict[tuple[str, str], int]:
    rows = conn.execute(
        "SELECT d.space, t.term, count(*) FROM memory_docs d, memory_terms_of(d.doc) t(term)"
        " WHERE d.space = ANY(%s) GROUP BY d.space, t.term",
        (list(spaces),),
    )
    return {(space, term): int(n) for space, term, n in rows}


def assert_counts_hold(conn: psycopg.Connection, tier: PostgresTier) -> None:
    spaces = list(tier.parts.values())
    assert kept_terms(conn, spaces) == recounted_terms(conn, spaces)
    phrases = [p for p in map(bm25.Phrase.of, QUERY_WORDS) if p.parts]
    fresh = PostgresTier(conn, tier.parts, [])  # counts are kept for one request: a new one counts again
    assert fresh._holding(phrases) == [scanned(conn, spaces, p) for p in phrases]


def put(tier: PostgresTier, key: str, value: str, scope: str = "repo::acme/checkout") -> None:
    now = now_iso()

    def build(existing: Memory | None) -> Memory:
        if existing is None:
            return Memory(scope=parse(scope), key=key, value=value, created=now, updated=now)
        return existing.evolve(value=value, seen_count=existing.seen_count + 1)

    tier.store("home", parse(scope), key, build)


def test_the_table_keeps_an_entry_for_single_words_and_none_for_phrases() -> None:
    assert bm25.held_term(bm25.Phrase.of("db")) == "=db"
    assert bm25.held_term(bm25.Phrase.of("conn")) == "conn"
    assert bm25.held_term(bm25.Phrase.of("Connection")) == "connection"
    assert bm25.held_term(bm25.Phrase.of("docker-compose")) is None  # two tokens: counted through the index
    assert bm25.held_term(bm25.Phrase.of("db::")) is None  # a prefix of two characters
    assert bm25.held_term(bm25.Phrase.of("x" * 17)) is None  # longer than the prefixes kept


operation = st.one_of(
    st.tuples(st.just("put"), st.integers(0, 5), st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=6)),
    st.tuples(st.just("delete"), st.integers(0, 5), st.just([])),
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(operation, min_size=1, max_size=12))
def test_writes_updates_and_deletes_keep_the_counts_a_pass_over_every_row_gives(
    database_url: str, operations: list[tuple[str, int, list[str]]]
) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        tier = PostgresTier(conn, {"home": f"test:{secrets.token_hex(6)}:home"}, [])
        for action, n, words in operations:
            if action == "put":
                put(tier, f"lesson-{n}", " ".join(words))
            else:
                for candidate in tier.copies(["repo::acme/checkout"], {f"lesson-{n}"}):
                    tier.delete(candidate, lambda memory: True)
        assert_counts_hold(conn, tier)


def test_a_batch_an_update_that_keeps_its_words_and_an_archive_keep_the_counts(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        tier = PostgresTier(conn, {"home": f"test:{secrets.token_hex(6)}:home"}, [])
        now = now_iso()
        shop = parse("project::shop")
        batch = [
            Memory(scope=shop, key=f"b{n}", value=f"docker compose up {n}", created=now, updated=now) for n in range(5)
        ]
        tier.store_batch("home", batch, lambda new, old: new)
        put(tier, "b1", "docker compose up 1")  # the same words: seen again, nothing to count
        put(tier, "b2", "the connection to 5432 was refused")
        [copy] = tier.copies(["project::shop"], {"b3"})
        tier.store("home", parse("project::shop"), "b3", lambda m: m.evolve(archived_at=now) if m else None)
        assert copy.memory.archived_at is None
        assert_counts_hold(conn, tier)


def test_an_erasure_its_restore_and_its_purge_move_the_counts_with_the_rows(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        user = accounts.add_user(conn, f"erased-{secrets.token_hex(4)}")
        personal = PostgresTier(conn, {"home": f"user:{user.id}"}, [])
        gone = PostgresTier(conn, {"home": f"erased:{user.id}"}, [])
        put(personal, "db-down", "connection refused on 5432: start the db")
        put(personal, "compose", "docker compose up -d db")
        erasure.erase(conn, user.id, window_days=1)
        assert kept_terms(conn, [f"user:{user.id}"]) == {}
        assert_counts_hold(conn, gone)
        put(personal, "compose", "docker compose up db, written again during the window")
        erasure.restore(conn, user.id)
        assert_counts_hold(conn, personal)
        assert_counts_hold(conn, gone)
        erasure.erase(conn, user.id, window_days=0)
        erasure.purge(conn)
        assert kept_terms(conn, [f"erased:{user.id}", f"user:{user.id}"]) == {}
