"""Memories on the team server, as a team uses them: a member's lesson under a shared scope lands in
the org's one shared row and every member reads it; anything else stays in the writer's personal
space, and the answer says so. Roles, token kinds, scope allow-lists, the quota and retried writes
hold; and the same query gives the same order on the server as on one machine."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg
import pytest
from conftest import Account, Server, start_server, unique
from test_accounts import error_of

from hivelore.memory import vectors
from hivelore.memory.service import Hivelore
from hivelore.server.postgres import accounts
from hivelore.server.postgres import vectors as server_vectors
from hivelore.server.postgres.tier import PostgresTier

REPO = "repo::acme/checkout"
CHAIN = ["branch::acme/checkout::main", REPO, "project::checkout", "global"]
# Shares no word with the ECONNREFUSED 5432 lessons: only the model finds them.
PARAPHRASE = "postgres connection refused"
LESSON = "pnpm test fails with ECONNREFUSED 5432 until the db is up: run docker compose up -d db first"


@pytest.fixture
def team(db: psycopg.Connection, make_user: Callable[..., Account]) -> dict[str, Account]:
    """An org sharing repo::acme/checkout, with an owner, a member, a viewer, and a stranger to it."""
    people = {role: make_user(role) for role in ("owner", "member", "viewer", "stranger")}
    org = unique("acme")
    accounts.create_org(db, org, people["owner"].id)
    org_id, _ = accounts.role_in(db, org, people["owner"].id)
    for role in ("member", "viewer"):
        db.execute("INSERT INTO members (org_id, user_id, role) VALUES (%s, %s, %s)", (org_id, people[role].id, role))
    accounts.bind_scope(db, org_id, REPO, people["owner"].id)
    people["org"] = Account(org, org_id, "")
    return people


def write(api: httpx.Client, who: Account, scope: str, key: str, value: str = LESSON, **more: object) -> httpx.Response:
    return api.post("/v1/memories", json={"scope": scope, "key": key, "value": value, **more}, headers=who.headers())


def test_a_members_lesson_under_a_shared_scope_is_the_orgs_and_every_member_reads_it(
    api: httpx.Client, team: dict[str, Account]
) -> None:
    org = f"org:{team['org'].name}"
    written = write(api, team["member"], REPO, "tests-need-local-postgres", tags=["db"])
    assert written.status_code == 200, written.text
    assert written.json()["space"] == org and written.json()["created"] and written.json()["notices"] == []
    assert written.json()["memory"]["provenance"]["user"] == team["member"].name
    # A branch of a shared repository is shared too; the owner's re-write updates the same one row.
    again = write(api, team["owner"], REPO, "tests-need-local-postgres", tags=["db"])
    assert again.json()["space"] == org and not again.json()["created"]
    assert again.json()["memory"]["seen_count"] == 2
    for role in ("owner", "member", "viewer"):
        found = api.get(
            "/v1/memories/search", params={"q": "ECONNREFUSED 5432", "scope": CHAIN}, headers=team[role].headers()
        )
        assert [h["memory"]["key"] for h in found.json()["hits"]] == ["tests-need-local-postgres"], role
        assert found.json()["hits"][0]["space"] == org
    stranger = api.get(
        "/v1/memories/search", params={"q": "ECONNREFUSED", "scope": CHAIN}, headers=team["stranger"].headers()
    )
    assert stranger.json()["hits"] == []
    branch = write(api, team["member"], "branch::acme/checkout::main", "wip")
    assert branch.json()["space"] == org


def test_a_write_nobody_shares_goes_to_the_personal_space_and_the_answer_says_so(
    api: httpx.Client, team: dict[str, Account]
) -> None:
    mine = write(api, team["member"], "project::scratch", "my-note")
    assert mine.json()["space"] == "personal"
    assert mine.json()["notices"] == [
        "project::scratch is shared by none of your organisations: this memory went to your personal space"
    ]
    viewer = write(api, team["viewer"], REPO, "viewer-lesson")
    assert viewer.json()["space"] == "personal"
    assert f"shared by {team['org'].name}, where you are a viewer" in viewer.json()["notices"][0]
    stranger = write(api, team["stranger"], REPO, "stranger-lesson")
    assert stranger.json()["space"] == "personal"
    # Personal memories are nobody else's.
    other = api.get(
        "/v1/memories/read", params={"scope": "project::scratch", "key": "my-note"}, headers=team["owner"].headers()
    )
    assert other.status_code == 404 and "no memory project::scratch::my-note" in error_of(other)
    viewer_cannot_choose = write(api, team["viewer"], REPO, "x", space=f"org:{team['org'].name}")
    assert viewer_cannot_choose.status_code == 403
    assert error_of(viewer_cannot_choose) == f"this needs the role member in {team['org'].name}; you are viewer."


def test_archive_and_restore_need_a_member_and_forget_an_admin(api: httpx.Client, team: dict[str, Account]) -> None:
    write(api, team["member"], REPO, "flaky-test")
    address = {"scope": REPO, "key": "flaky-test"}
    refused = api.post("/v1/memories/archive", json=address, headers=team["viewer"].headers())
    assert refused.status_code == 403 and "needs the role member" in error_of(refused)
    archived = api.post("/v1/memories/archive", json=address, headers=team["member"].headers())
    assert archived.status_code == 200 and archived.json()["memory"]["archived_at"]
    hidden = api.get("/v1/memories/read", params=address, headers=team["owner"].headers())
    assert hidden.status_code == 404
    restored = api.post("/v1/memories/restore", json=address, headers=team["member"].headers())
    assert restored.json()["memory"]["archived_at"] is None
    not_admin = api.post("/v1/memories/forget", json=address, headers=team["member"].headers())
    assert not_admin.status_code == 403 and "needs the role admin" in error_of(not_admin)
    forgotten = api.post("/v1/memories/forget", json=address, headers=team["owner"].headers())
    assert forgotten.json() == {"forgotten": f"{REPO}::flaky-test", "space": f"org:{team['org'].name}"}


def test_token_kinds_and_scope_allow_lists_hold(
    api: httpx.Client, db: psycopg.Connection, make_user: Callable[..., Account]
) -> None:
    reader = make_user("ci", kind="ro")
    refused = write(api, reader, "project::shop", "k")
    assert refused.status_code == 403 and "hl_ro_" in error_of(refused)
    writer = make_user("bot", kind="wo")
    assert write(api, writer, "project::shop", "k").status_code == 200
    cannot_read = api.get("/v1/memories", headers=writer.headers())
    assert cannot_read.status_code == 403 and "can only write" in error_of(cannot_read)

    limited = make_user("scoped")
    limited.token = accounts.create_token(db, limited.id, "rw", scopes=["repo::acme/*"]).token
    outside = write(api, limited, "project::shop", "k")
    assert outside.status_code == 403
    assert error_of(outside) == "this token is limited to the scopes repo::acme/*; project::shop is not among them."
    assert write(api, limited, REPO, "k").status_code == 200
    # A read of a chain keeps the scopes the token may see: the repository, and its branch with it.
    listed = api.get("/v1/memories", params={"scope": CHAIN}, headers=limited.headers())
    assert listed.json()["scopes"] == CHAIN[:2]
    assert api.get("/v1/memories", params={"scope": ["project::shop"]}, headers=limited.headers()).status_code == 403


def test_the_guard_and_the_rules_run_on_the_server(api: httpx.Client, make_user: Callable[..., Account]) -> None:
    who = make_user()
    secret = write(api, who, "project::shop", "aws", "the key is AKIAZ7Q3K9X2M4R8T6WB for the deploy user")
    assert secret.status_code == 400 and "secret" in error_of(secret).lower()
    in_scope = write(api, who, "project::ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", "k")
    assert in_scope.status_code == 400
    bad_scope = write(api, who, "repo::no-owner", "k")
    assert bad_scope.status_code == 400 and "scope" in error_of(bad_scope)
    empty = write(api, who, "project::shop", "k", "   ")
    assert empty.status_code == 400 and error_of(empty) == "the value is empty: say what was learned."
    listed = api.get("/v1/memories", headers=who.headers()).json()
    assert listed["memories"] == []


def test_a_retried_write_with_its_idempotency_key_lands_once(
    api: httpx.Client, make_user: Callable[..., Account]
) -> None:
    who = make_user()
    body = {"scope": "project::shop", "key": "once", "value": LESSON}
    headers = {**who.headers(), "Idempotency-Key": "outbox-1"}
    first = api.post("/v1/memories", json=body, headers=headers)
    second = api.post("/v1/memories", json=body, headers=headers)
    assert first.json() == second.json() and second.json()["memory"]["seen_count"] == 1
    other = api.post("/v1/memories", json={**body, "value": "something else"}, headers=headers)
    assert other.status_code == 409 and "Idempotency-Key" in error_of(other)
    fresh = api.post("/v1/memories", json=body, headers={**who.headers(), "Idempotency-Key": "outbox-2"})
    assert fresh.json()["memory"]["seen_count"] == 2


def test_a_replayed_archive_or_forget_answers_as_the_first_time_and_changes_nothing_again(
    api: httpx.Client, make_user: Callable[..., Account]
) -> None:
    who = make_user()
    address = {"scope": "project::shop", "key": "replayed"}
    assert write(api, who, "project::shop", "replayed").status_code == 200
    archive = {**who.headers(), "Idempotency-Key": "outbox-archive"}
    first = api.post("/v1/memories/archive", json=address, headers=archive)
    again = api.post("/v1/memories/archive", json=address, headers=archive)
    assert first.status_code == again.status_code == 200 and first.json() == again.json()
    assert api.post("/v1/memories/restore", json=address, headers=who.headers()).status_code == 200
    forget = {**who.headers(), "Idempotency-Key": "outbox-forget"}
    assert api.post("/v1/memories/forget", json=address, headers=forget).status_code == 200
    assert write(api, who, "project::shop", "replayed", "written again after the forget").status_code == 200
    replayed = api.post("/v1/memories/forget", json=address, headers=forget)
    assert replayed.status_code == 200
    kept = api.get("/v1/memories/read", params=address, headers=who.headers())
    assert kept.status_code == 200 and kept.json()["memory"]["value"] == "written again after the forget"


def test_a_scope_limited_token_sees_no_change_outside_its_scopes_in_the_feed(
    api: httpx.Client, make_user: Callable[..., Account]
) -> None:
    who = make_user()
    for scope, key in (("project::secretproj", "payroll-db-password-rotation"), ("repo::acme/checkout", "db-port")):
        assert write(api, who, scope, key).status_code == 200
        forgotten = api.post("/v1/memories/forget", json={"scope": scope, "key": key}, headers=who.headers())
        assert forgotten.status_code == 200
    made = api.post("/v1/tokens", json={"kind": "ro", "name": "ci", "scopes": ["repo::acme/*"]}, headers=who.headers())
    ci = {"Authorization": f"Bearer {made.json()['token']}"}
    feed = api.get("/v1/memories/changes", params={"since": 0}, headers=ci).json()
    assert [(g["scope"], g["key"]) for g in feed["gone"]] == [("repo::acme/checkout", "db-port")]


@pytest.fixture(scope="module")
def small_quota(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(database_url, tmp_path_factory.mktemp("quota") / "server.log", "--active-memories", "3")
    yield running
    running.stop()


def test_the_quota_counts_active_memories_only(small_quota: Server, make_user: Callable[..., Account]) -> None:
    who = make_user()
    with httpx.Client(base_url=small_quota.url, timeout=10) as api:
        for n in range(3):
            assert write(api, who, "project::shop", f"k{n}").status_code == 200
        assert write(api, who, "project::shop", "k0", "an update is no new memory").status_code == 200
        over = write(api, who, "project::shop", "k3")
        assert over.status_code == 403
        assert error_of(over, "quota_exceeded") == (
            "your account holds 3 active memories, the most it may hold (3): archive or forget some first"
            " (archived ones do not count)."
        )
        api.post("/v1/memories/archive", json={"scope": "project::shop", "key": "k1"}, headers=who.headers())
        assert write(api, who, "project::shop", "k3").status_code == 200
        revive = api.post("/v1/memories/restore", json={"scope": "project::shop", "key": "k1"}, headers=who.headers())
        assert revive.status_code == 403


def test_a_restore_counts_against_the_quota_of_who_first_wrote_the_memory(
    small_quota: Server, team: dict[str, Account]
) -> None:
    """An org's row counts against its writer's quota: a teammate restoring it must not push the
    writer past theirs, and a teammate at their own quota may restore a row that counts against another."""
    writer, teammate = team["member"], team["owner"]
    with httpx.Client(base_url=small_quota.url, timeout=10) as api:

        def restore(who: Account, key: str) -> httpx.Response:
            return api.post("/v1/memories/restore", json={"scope": REPO, "key": key}, headers=who.headers())

        for n in range(3):
            assert write(api, writer, REPO, f"w{n}").status_code == 200
        archived = api.post("/v1/memories/archive", json={"scope": REPO, "key": "w0"}, headers=teammate.headers())
        assert archived.status_code == 200
        assert write(api, writer, REPO, "w3").status_code == 200  # the writer's third active memory again

        over = restore(teammate, "w0")  # the teammate holds none, but w0 counts against the writer
        assert over.status_code == 403
        assert error_of(over, "quota_exceeded").startswith(
            f"the account of {writer.name}, who first wrote this memory, holds 3 active memories"
        )
        for n in range(3):
            assert write(api, teammate, "project::own", f"t{n}").status_code == 200  # the teammate's quota is full
        api.post("/v1/memories/archive", json={"scope": REPO, "key": "w3"}, headers=writer.headers())
        assert restore(teammate, "w0").status_code == 200  # the writer has room again; the teammate's is not asked


def test_import_keeps_created_derives_the_rest_and_a_second_run_changes_nothing(
    api: httpx.Client, make_user: Callable[..., Account]
) -> None:
    who = make_user()
    records = [
        {
            "scope": "project::shop",
            "key": f"k{n}",
            "value": f"lesson {n} about the cart",
            "created": "2026-01-02T03:04:05Z",
            "updated": "2026-01-03T00:00:00Z",
            "seen_count": 40,
            "provenance": {"agent": "codex", "user": "someone-else"},
        }
        for n in range(3)
    ] + [{"scope": "project::shop", "key": "bad/key", "value": "x"}]
    first = api.post("/v1/memories/import", json={"records": records, "skip_invalid": True}, headers=who.headers())
    assert first.status_code == 200, first.text
    assert first.json()["written"] == [f"project::shop::k{n}" for n in range(3)]
    assert len(first.json()["rejected"]) == 1 and first.json()["rejected"][0].startswith("record 4:")
    again = api.post("/v1/memories/import", json={"records": records, "skip_invalid": True}, headers=who.headers())
    assert again.json()["written"] == [] and len(again.json()["unchanged"]) == 3
    stored = api.get("/v1/memories/read", params={"scope": "project::shop", "key": "k0"}, headers=who.headers()).json()
    memory = stored["memory"]
    assert memory["created"] == "2026-01-02T03:04:05Z" and memory["updated"] > "2026-06"
    assert memory["seen_count"] == 1
    assert memory["provenance"] == {"agent": "codex", "user": who.name}


def test_imports_of_the_same_keys_in_other_orders_at_once_all_land(
    api: httpx.Client, make_user: Callable[..., Account]
) -> None:
    """Each import locks its addresses in one order before it writes: two in opposite orders (and a
    write between) once deadlocked, and PostgreSQL undid one of them (a 503)."""
    who = make_user()
    keys = [f"k{n:02d}" for n in range(40)]

    def send(round_: int, order: list[str]) -> int:
        records = [{"scope": "project::shop", "key": key, "value": f"{LESSON} ({round_}, {key})"} for key in order]
        with httpx.Client(base_url=str(api.base_url), timeout=30) as client:
            answer = client.post("/v1/memories/import", json={"records": records}, headers=who.headers())
        return answer.status_code

    with ThreadPoolExecutor(4) as pool:
        statuses = list(
            pool.map(lambda n: send(n, keys if n % 2 else keys[::-1]), range(16))  # each round, both orders
        )
    assert statuses == [200] * 16


def test_the_change_feed_gives_writes_and_deletions(
    api: httpx.Client, db: psycopg.Connection, make_user: Callable[..., Account]
) -> None:
    who = make_user()
    write(api, who, "project::shop", "kept")
    write(api, who, "project::shop", "dropped")
    api.post("/v1/memories/forget", json={"scope": "project::shop", "key": "dropped"}, headers=who.headers())
    feed = api.get("/v1/memories/changes", params={"since": 0}, headers=who.headers()).json()
    assert [m["memory"]["key"] for m in feed["memories"]] == ["kept"]
    assert feed["gone"] == [{"space": "personal", "scope": "project::shop", "key": "dropped"}]
    assert feed["spaces"] == ["personal"] and feed["more"] is False
    # Changes younger than the settling time are sent again: the cursor has not moved past them.
    assert feed["cursor"] == 0
    tier = PostgresTier(db, {"personal": f"user:{who.id}"}, [])
    settled = tier.changes(0, 1, settled_s=0)
    assert settled.more and len(settled.written) == 1 and settled.cursor == settled.written[0][2]
    rest = tier.changes(settled.cursor, 10, settled_s=0)
    assert [g[2] for g in rest.gone] == ["dropped"] and not rest.more


def wait_for_meaning(api: httpx.Client, timeout_s: float = 60) -> None:
    """Until the server's model is loaded (it loads in the background after the server starts)."""
    deadline = time.monotonic() + timeout_s
    while api.get("/readyz").json()["meaning"] != "ready":
        assert time.monotonic() < deadline, "the server's model did not load"
        time.sleep(0.1)


class OnceEmbedder(vectors.Embedder):
    """The model, computing each text's vector once: the local side and the server's backfill embed the same texts
    (vectors.memory_text), and what the test compares is their rankings, not the model's speed twice. A text one side
    embeds differently is still a text of its own, computed for it."""

    def __init__(self) -> None:
        super().__init__()
        self.known: dict[str, vectors.Matrix] = {}

    def embed(self, texts: Sequence[str]) -> vectors.Matrix:
        import numpy as np

        missing = [text for text in dict.fromkeys(texts) if text not in self.known]
        if missing:
            self.known.update(zip(missing, super().embed(missing), strict=True))
        return np.stack([self.known[text] for text in texts]) if texts else super().embed(texts)


def test_the_same_query_gives_the_same_order_on_the_server_as_on_one_machine(
    api: httpx.Client,
    db: psycopg.Connection,
    make_user: Callable[..., Account],
    tmp_path: Path,
    database_url: str,
) -> None:
    """One data set (benchmarks/synth.py, 400 memories over several scopes, some archived, expired,
    staged or shadowing one another), kept once in a local home and once in a user's space. With the
    semantic extra, both rank by meaning too (a warm local process's model; the server's, with the
    vectors its backfill gives the rows written here), and a paraphrase sharing no word with its
    lesson is compared as well."""
    sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
    import synth

    home = tmp_path / "home"
    synth.generate(home, 400, seed=7)
    local = Hivelore.open(cwd=tmp_path, env={"HIVELORE_HOME": str(home), "HIVELORE_HOOK_SERVER": "off"})
    local.rebuild_index()  # through the index, as reads go when it exists
    memories = list(local.export(include_hidden=True))
    who = make_user()
    PostgresTier(db, {"personal": f"user:{who.id}"}, []).store_batch("personal", memories, lambda new, old: new)
    scopes = local.scopes_in_vault()
    meaning = api.get("/readyz").json()["meaning"] != "off"
    if meaning:
        embedder = OnceEmbedder()
        local.semantic = vectors.Semantic(home / vectors.VECTORS_FILE, embedder)
        server_vectors.backfill(lambda: psycopg.connect(database_url, autocommit=True), server_vectors.Model(embedder))
        wait_for_meaning(api)
    queries = [
        "ECONNREFUSED",
        "tests fail",
        "docker compose db",
        "lockfile install",
        "timeout",
        "cache",
        "redis 6379",
        "pnpm test fails with ECONNREFUSED when the db is down",
        *([PARAPHRASE] if meaning else []),
    ]
    compared = 0
    for query in queries:
        here = [f"{h.row.scope}::{h.row.key}" for h in local.search(query, scopes, limit=10)]
        params = {"q": query, "scope": scopes, "chain": local.scopes, "limit": 10}
        there = api.get("/v1/memories/search", params=params, headers=who.headers())
        assert there.status_code == 200, there.text
        remote = [f"{h['memory']['scope']}::{h['memory']['key']}" for h in there.json()["hits"]]
        assert remote == here, query
        compared += len(here)
    assert compared >= 40, "the queries find enough to compare"
    if meaning:  # the paraphrase's lesson is found by its meaning, on both sides
        top = api.get(
            "/v1/memories/search", params={"q": PARAPHRASE, "scope": scopes, "limit": 3}, headers=who.headers()
        )
        assert any("5432" in h["memory"]["value"] for h in top.json()["hits"]), top.json()


def test_a_word_too_long_for_postgresql_or_a_search_of_too_many_words_is_a_400_not_a_503(
    api: httpx.Client, make_user: Callable[..., Account]
) -> None:
    """PostgreSQL indexes and searches words of at most 2,047 bytes, and a search counts each of its
    words in a column of its own (1,664 at most). Past either, its error used to be answered as
    "the database cannot be reached" (503, Retry-After), which a client's outbox would retry forever."""
    who = make_user()
    too_long = "the build log said " + "x" * 2100
    written = write(api, who, "project::shop", "long", too_long)
    assert written.status_code == 400
    refusal = "the value holds a word of 2,100 bytes, and the team server indexes words of at most 2,047"
    assert error_of(written) == f"{refusal}: break it up with spaces."
    record = {"scope": "project::shop", "key": "long", "value": too_long}
    imported = api.post("/v1/memories/import", json={"records": [record]}, headers=who.headers())
    assert imported.status_code == 200 and imported.json()["rejected"] == [
        f"record 1: {refusal}: break it up with spaces."
    ]
    assert write(api, who, "project::shop", "longest", "x" * 2047).status_code == 200

    word = api.get("/v1/memories/search", params={"q": "x" * 2048}, headers=who.headers())
    assert word.status_code == 400 and error_of(word) == (
        "the query holds a word of 2,048 bytes, and the team server indexes words of at most 2,047:"
        " no memory holds a word that long."
    )
    words = api.get("/v1/memories/search", params={"q": " ".join(f"w{n}" for n in range(1700))}, headers=who.headers())
    assert words.status_code == 400 and error_of(words) == (
        "the query has 1,700 different words; a search on the team server takes at most 100:"
        " keep the few that pick out the memory."
    )
    at_the_limits = " ".join([*(f"w{n}" for n in range(99)), "x" * 2047])
    found = api.get("/v1/memories/search", params={"q": at_the_limits}, headers=who.headers())
    assert found.status_code == 200, found.text


def test_a_viewers_import_of_a_key_the_org_holds_goes_to_their_personal_space(
    api: httpx.Client, db: psycopg.Connection, team: dict[str, Account]
) -> None:
    """An import is placed as a write is, by the scope's sharing alone: a viewer's record for a key
    the org already holds used to be written over the org's shared row."""
    write(api, team["member"], REPO, "flaky-test")
    record = {"scope": REPO, "key": "flaky-test", "value": "the viewer's own take on the flaky test"}
    imported = api.post("/v1/memories/import", json={"records": [record]}, headers=team["viewer"].headers())
    assert imported.json()["written"] == [f"{REPO}::flaky-test"]
    rows = db.execute(
        "SELECT space, record->>'value' FROM memories WHERE scope = %s AND key = 'flaky-test' ORDER BY space",
        (REPO,),
    ).fetchall()
    assert sorted(rows) == sorted([(f"org:{team['org'].id}", LESSON), (f"user:{team['viewer'].id}", record["value"])])
