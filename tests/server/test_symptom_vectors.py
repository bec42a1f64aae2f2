"""A memory's second vector, of its symptoms (`when`) alone, on the team server (migration 0018): the
backfill gives it to a row with symptoms and to no other, and a question in the words of the
symptoms ranks the same on the server as on one machine, where the rule is the same (a memory is as
near as the nearer of its two vectors: memory/vectors.py `with_symptoms`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import psycopg
from conftest import Account
from test_memories import wait_for_meaning
from test_remote_recall import DISTRACTORS, needs_model

from hivelore.memory import vectors
from hivelore.memory.service import Hivelore
from hivelore.server.postgres import vectors as server_vectors
from hivelore.server.postgres.tier import PostgresTier

SCOPE = "repo::acme/symptoms"
LESSON = (
    "Integration tests fail with ECONNREFUSED 127.0.0.1:5432 when Postgres is not running. The compose file"
    " names the service db; `docker compose up -d db` starts it, `docker compose ps` shows it healthy, and"
    " the fixtures in tests/conftest.py read DATABASE_URL from .env.test, whose port must match compose's."
)
WHEN = "the test suite cannot connect to the database server"
QUERIES = ("the suite can't reach the database server, what should I launch beforehand?", "memory runs out", "lockfile")


@needs_model
def test_symptoms_get_a_vector_of_their_own_and_rank_alike_on_the_server_and_on_one_machine(
    api: httpx.Client, db: psycopg.Connection, make_user: Callable[..., Account], tmp_path: Path, database_url: str
) -> None:
    home = tmp_path / "home"
    local = Hivelore.open(cwd=tmp_path, env={"HIVELORE_HOME": str(home), "HIVELORE_HOOK_SERVER": "off"})
    local.write(SCOPE, "pg-down", LESSON, when=WHEN)
    for key, value in DISTRACTORS.items():
        local.write(SCOPE, key, value)
    who = make_user()
    PostgresTier(db, {"personal": f"user:{who.id}"}, []).store_batch(
        "personal", list(local.export(include_hidden=True)), lambda new, old: new
    )
    embedder = vectors.Embedder()
    local.semantic = vectors.Semantic(home / vectors.VECTORS_FILE, embedder)
    server_vectors.backfill(lambda: psycopg.connect(database_url, autocommit=True), server_vectors.Model(embedder))
    wait_for_meaning(api)
    kept = dict(
        db.execute(
            "SELECT m.key, v.symptoms IS NOT NULL FROM memory_vectors v JOIN memories m USING (id) WHERE m.space = %s",
            (f"user:{who.id}",),
        ).fetchall()
    )
    assert kept == {"pg-down": True, **{key: False for key in DISTRACTORS}}
    scopes = local.scopes_in_vault()
    for query in QUERIES:
        here = [h.row.key for h in local.search(query, scopes, limit=5)]
        params = {"q": query, "scope": scopes, "chain": local.scopes, "limit": 5}
        there = api.get("/v1/memories/search", params=params, headers=who.headers())
        assert there.status_code == 200, there.text
        assert [h["memory"]["key"] for h in there.json()["hits"]] == here, query
    assert [h.row.key for h in local.search(QUERIES[0], scopes, limit=1)] == ["pg-down"]
    local.semantic.close()
