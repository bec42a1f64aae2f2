"""The coding thesaurus (memory/thesaurus.py): words that go together in the stored memories widen a
query no memory matches whole, at a low weight, and never change a query in a lesson's own words.

The store is written and indexed by the real `hivelore` command (the `cli` fixture); the thesaurus is
mined where the expansion is switched on (`mine_index`: nothing in the product reads it, so `index
rebuild` does not mine it), and the searches run through `Hivelore.search` in process."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from hivelore.memory import thesaurus
from hivelore.memory.service import Hivelore

CLI = Callable[..., subprocess.CompletedProcess[str]]
SCOPE = "repo::acme/checkout"
TARGET = "pg-down-before-pytest"
# The target never says "database"; the other memories say it beside "postgres".
MEMORIES = {
    TARGET: "Start postgres with docker compose up -d db before pytest.",
    "pool-exhausted": "The postgres database pool is exhausted under load: cap pool_size per worker.",
    "vacuum-after-deletes": "The postgres database needs a VACUUM after bulk deletes or queries slow down.",
    "restore-takes-an-hour": "A postgres database restore from the nightly dump takes an hour: use the snapshot.",
    "redis-protected-mode": "Redis refuses remote clients in protected mode: bind the interface, set requirepass.",
}


def keys(repo: Path, home: Path, query: str, expand: bool = True) -> list[str]:
    """The keys `Hivelore.search` finds, with the thesaurus (off by default: the bench found no gain yet)."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HIVELORE_")}, "HIVELORE_HOME": str(home)}
    service = Hivelore.open(repo, env=env)
    try:
        service.expand = expand
        return [hit.row.key for hit in service.search(query)]
    finally:
        service.close()


def store(cli: CLI, home: Path) -> None:
    for key, value in MEMORIES.items():
        assert cli("write", f"{SCOPE}::{key}", value).returncode == 0
    assert cli("index", "rebuild").returncode == 0
    assert not (home / thesaurus.THESAURUS_FILE).exists()  # the product does not mine it
    assert thesaurus.mine_index(home / "index.db") > 0


def test_words_that_share_memories_are_related_and_glue_is_not() -> None:
    partners = thesaurus.mine(MEMORIES.values())
    assert [(w, round(s, 2)) for w, s in partners["database"]] == [("postgre", 0.87)]  # a stem, read as a prefix
    assert "the" not in partners and "with" not in partners
    assert "redis" not in partners  # in one memory only: nothing to learn from it


def test_a_query_no_memory_matches_whole_reaches_a_lesson_through_a_related_word(
    cli: CLI, home: Path, repo: Path
) -> None:
    store(cli, home)
    found = keys(repo, home, "database unreachable")
    assert TARGET in found
    assert found.index(TARGET) > 0  # an expansion ranks below the query's own words
    assert TARGET not in keys(repo, home, "database unreachable", expand=False)
    (home / thesaurus.THESAURUS_FILE).unlink()
    assert TARGET not in keys(repo, home, "database unreachable")


def test_a_query_in_a_lessons_own_words_ranks_exactly_as_without_the_thesaurus(
    cli: CLI, home: Path, repo: Path
) -> None:
    store(cli, home)
    assert keys(repo, home, "postgres database") == keys(repo, home, "postgres database", expand=False)


def test_mining_again_replaces_the_thesaurus_with_the_stores_words(cli: CLI, home: Path, repo: Path) -> None:
    store(cli, home)
    assert TARGET in keys(repo, home, "database unreachable")
    assert cli("forget", f"{SCOPE}::pool-exhausted").returncode == 0
    assert cli("forget", f"{SCOPE}::vacuum-after-deletes").returncode == 0
    assert thesaurus.mine_index(home / "index.db") == 0  # "database" is in one memory left: nothing relates
    assert TARGET not in keys(repo, home, "database unreachable")
