"""The vectors of a memory's symptoms (`when`) on the team server (migration 0018), one per phrasing
(`when` split on `;`), stacked in the `symptoms` column: the backfill gives them to a row with
symptoms and to no other, and to a row an older replica left without them (or with the whole `when`
as one); a question in the words of one phrasing ranks the same on the server as on one machine,
where the rule is the same (a memory is as near as the nearest of its vectors: memory/vectors.py
`with_symptoms`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import psycopg
import pytest
from conftest import Account
from test_memories import wait_for_meaning
from test_remote_recall import DISTRACTORS, needs_model

from hivelore.memory import vectors
from hivelore.memory.model import Memory
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
# Found through its second phrasing alone: the lesson's text, its symptoms joined and their first
# phrasing are all farther from STUCK than STATEMENT_TIMEOUT is (tests/test_semantic.py measures it).
TWO_PHRASINGS = "pytest errors out in conftest before the first test; my tests hang waiting for postgres"
STUCK = "why are my tests stuck waiting on the database?"
STATEMENT_TIMEOUT = "tests hang forever when postgres is under load: set statement_timeout in the test settings"
NOW = "2026-11-01T00:00:00Z"
CASES = {
    "one phrasing": (WHEN, DISTRACTORS, QUERIES),
    "the second phrasing": (TWO_PHRASINGS, {**DISTRACTORS, "pg-timeout": STATEMENT_TIMEOUT}, (STUCK, *QUERIES[1:])),
}


def local_home(tmp_path: Path, when: str, distractors: dict[str, str]) -> Hivelore:
    home = tmp_path / "home"
    local = Hivelore.open(cwd=tmp_path, env={"HIVELORE_HOME": str(home), "HIVELORE_HOOK_SERVER": "off"})
    local.write(SCOPE, "pg-down", LESSON, when=when)
    for key, value in distractors.items():
        local.write(SCOPE, key, value)
    return local


def symptoms_kept(db: psycopg.Connection, who: Account) -> dict[str, int]:
    """Per key of the user's space with a vector, how many phrasings' vectors its row holds."""
    rows = db.execute(
        "SELECT m.key, coalesce(octet_length(v.symptoms), 0) FROM memory_vectors v JOIN memories m USING (id)"
        " WHERE m.space = %s",
        (f"user:{who.id}",),
    ).fetchall()
    return {key: size // server_vectors.VECTOR_BYTES for key, size in rows}


@needs_model
@pytest.mark.parametrize("case", CASES)
def test_each_phrasing_gets_a_vector_of_its_own_and_ranks_alike_on_the_server_and_on_one_machine(
    case: str,
    api: httpx.Client,
    db: psycopg.Connection,
    make_user: Callable[..., Account],
    tmp_path: Path,
    database_url: str,
) -> None:
    when, distractors, queries = CASES[case]
    local = local_home(tmp_path, when, distractors)
    who = make_user()
    PostgresTier(db, {"personal": f"user:{who.id}"}, []).store_batch(
        "personal", list(local.export(include_hidden=True)), lambda new, old: new
    )
    embedder = vectors.Embedder()
    local.semantic = vectors.Semantic(tmp_path / "home" / vectors.VECTORS_FILE, embedder)
    server_vectors.backfill(lambda: psycopg.connect(database_url, autocommit=True), server_vectors.Model(embedder))
    wait_for_meaning(api)
    assert symptoms_kept(db, who) == {"pg-down": when.count(";") + 1, **{key: 0 for key in distractors}}
    scopes = local.scopes_in_vault()
    for query in queries:
        here = [h.row.key for h in local.search(query, scopes, limit=5)]
        params = {"q": query, "scope": scopes, "chain": local.scopes, "limit": 5}
        there = api.get("/v1/memories/search", params=params, headers=who.headers())
        assert there.status_code == 200, there.text
        assert [h["memory"]["key"] for h in there.json()["hits"]] == here, query
    assert [h.row.key for h in local.search(queries[0], scopes, limit=1)] == ["pg-down"]
    local.semantic.close()


@needs_model
def test_a_row_an_older_replica_wrote_gets_its_phrasings_vectors_from_the_backfill(
    db: psycopg.Connection, make_user: Callable[..., Account], database_url: str
) -> None:
    """A rolling upgrade: a replica of older code stored the lesson's vector and no symptoms' vector
    (code before migration 0018) or one of the whole `when` (before each phrasing had its own). The
    backfill gives both rows their phrasings' vectors with a new change number, so a replica's copy
    reads them, touches no other row, and finds nothing left to do the next time."""
    who = make_user()
    space = f"user:{who.id}"
    written = Memory.from_dict(
        {"scope": SCOPE, "key": "pg-down", "value": LESSON, "when": TWO_PHRASINGS, "created": NOW, "updated": NOW}
    )
    older = {"pg-down": written, "joined": written.evolve(key="joined"), "plain": written.evolve(key="plain", when="")}
    PostgresTier(db, {"personal": space}, []).store_batch("personal", list(older.values()), lambda new, old: new)
    model = server_vectors.Model(vectors.Embedder())
    joined, *phrasings = model.vectors([TWO_PHRASINGS, *TWO_PHRASINGS.split("; ")]).values()
    for key, memory in older.items():
        text = vectors.memory_text(memory)
        db.execute(
            "INSERT INTO memory_vectors (id, hash, vector, symptoms)"
            " SELECT id, %s, %s, %s FROM memories WHERE space = %s AND key = %s",
            (vectors.text_hash(text), *model.vectors([text]).values(), joined if key == "joined" else None, space, key),
        )
    copy = server_vectors.Meaning()
    query = model.query(STUCK)
    ids = dict(db.execute("SELECT id, key FROM memories WHERE space = %s", (space,)).fetchall())

    def nearest() -> dict[str, float]:
        return {ids[id_]: score for id_, score in copy.nearest(db, [space], [SCOPE], query, 3)}

    def kept() -> dict[str, tuple[int, bytes | None]]:
        rows = db.execute(
            "SELECT m.key, v.seq, v.symptoms FROM memory_vectors v JOIN memories m USING (id) WHERE m.space = %s",
            (space,),
        ).fetchall()
        return {key: (seq, symptoms) for key, seq, symptoms in rows}

    before, ranked = kept(), nearest()
    assert ranked["pg-down"] < ranked["joined"] < 0.5  # by its text alone; by the whole `when`
    connect = lambda: psycopg.connect(database_url, autocommit=True)  # noqa: E731
    server_vectors.backfill(connect, model)  # over the whole database: other tests' rows may have their turn
    after = kept()
    assert {key: symptoms for key, (_, symptoms) in after.items()} == {
        "pg-down": b"".join(phrasings),
        "joined": b"".join(phrasings),
        "plain": None,
    }
    assert {key for key, (seq, _) in after.items() if seq != before[key][0]} == {"pg-down", "joined"}
    server_vectors.backfill(connect, model)
    assert kept() == after  # nothing done again
    second = float(query @ server_vectors._stacked([phrasings[1]])[0])  # 0.73: by its second phrasing
    assert nearest() == pytest.approx({"pg-down": second, "joined": second, "plain": ranked["plain"]}, abs=1e-4)
