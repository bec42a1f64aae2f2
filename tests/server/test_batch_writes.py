"""`POST /v1/memories/batch`: several writes in one request, each answered as `POST /v1/memories`
would answer it alone — the same checks (the guard, the token's scopes, the quota, the org's
sharing), the same error shape and `code`, the same idempotency keys — in the order sent, a refused
write never stopping the ones after it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import httpx
import psycopg
import pytest
from conftest import Account, Server, org_sharing, start_server, unique
from test_accounts import error_of

from hivelore.server.postgres import accounts
from hivelore.server.routes.memories import MAX_BATCH

REPO = "repo::acme/checkout"
LESSON = "pnpm test fails with ECONNREFUSED 5432 until the db is up: run docker compose up -d db first"
SECRET = "the key is AKIAZ7Q3K9X2M4R8T6WB for the deploy user"


def item(scope: str, key: str, value: str = LESSON, idempotency_key: str | None = None, **more: object) -> dict:
    return {"write": {"scope": scope, "key": key, "value": value, **more}, "idempotency_key": idempotency_key}


def batch(api: httpx.Client, who: Account, *items: dict) -> httpx.Response:
    return api.post("/v1/memories/batch", json={"writes": list(items)}, headers=who.headers())


def results(response: httpx.Response) -> list[dict]:
    assert response.status_code == 200, response.text
    return response.json()["results"]


def refusal(result: dict, code: str) -> str:
    """The sentence of one write's refusal, checked for the shape a single write's error has."""
    assert set(result) == {"status", "error", "code", "request_id"}, result
    assert result["error"].endswith(".") and result["code"] == code, result
    return result["error"]


@pytest.fixture
def member(db: psycopg.Connection, make_user: Callable[..., Account]) -> tuple[Account, str]:
    """A member of an org that shares repo::acme/checkout, and the org's space name."""
    owner, member = make_user("owner"), make_user("member")
    _, org = org_sharing(db, REPO, owner, member)
    return member, f"org:{org}"


def test_each_write_is_answered_in_order_and_a_refused_one_does_not_stop_the_rest(
    api: httpx.Client, db: psycopg.Connection, member: tuple[Account, str]
) -> None:
    who, org = member
    who.token = accounts.create_token(db, who.id, "rw", scopes=["repo::acme/*", "project::*"]).token
    answered = results(
        batch(
            api,
            who,
            item(REPO, "shared", tags=["db"], when="the tests hang on connect", cites={"db.py": "abc123"}),
            item("project::shop", "aws", SECRET),
            item("global", "outside"),  # the token is limited to repo::acme/* and project::*
            {"write": {"scope": REPO, "value": "no key"}},
            item("project::shop", "mine"),
        )
    )
    assert [r["status"] for r in answered] == [200, 400, 403, 400, 200]
    first = answered[0]["answer"]
    assert first["space"] == org and first["created"] and first["notices"] == []
    assert first["memory"]["when"] == "the tests hang on connect" and first["memory"]["cites"] == {"db.py": "abc123"}
    assert "secret" in refusal(answered[1], "guard_refused").lower()
    assert refusal(answered[2], "forbidden").startswith("this token is limited to the scopes")
    assert refusal(answered[3], "bad_input") == "key: field required."
    assert answered[4]["answer"]["space"] == "personal" and answered[4]["answer"]["notices"]
    # Nothing of the refused writes was kept.
    rows = db.execute(
        "SELECT key FROM memories WHERE space IN (%s, %s) AND key IN ('shared', 'aws', 'outside', 'mine') ORDER BY key",
        (f"org:{accounts.role_in(db, org.removeprefix('org:'), who.id)[0]}", f"user:{who.id}"),
    ).fetchall()
    assert rows == [("mine",), ("shared",)]


def test_a_batch_replayed_with_its_keys_writes_nothing_twice_and_matches_a_single_write(
    api: httpx.Client, make_user: Callable[..., Account]
) -> None:
    who = make_user()
    run = unique("run")
    # The first write went alone (its answer lost, say), with the key the batch sends it with again.
    single = api.post(
        "/v1/memories",
        json={"scope": "project::shop", "key": "a", "value": LESSON},
        headers={**who.headers(), "Idempotency-Key": f"{run}-a"},
    )
    assert single.status_code == 200, single.text
    writes = [item("project::shop", key, idempotency_key=f"{run}-{key}") for key in ("a", "b", "c")]
    first = results(batch(api, who, *writes))
    again = results(batch(api, who, *writes))
    assert first == again
    assert first[0]["answer"] == single.json()
    assert [r["answer"]["memory"]["seen_count"] for r in again] == [1, 1, 1]
    assert [r["answer"]["created"] for r in again] == [True, True, True]
    # A key sent before with another write is refused for that write alone.
    other = results(batch(api, who, item("project::shop", "a", "another text", f"{run}-a"), writes[1]))
    assert [r["status"] for r in other] == [409, 200]
    assert "Idempotency-Key" in refusal(other[0], "conflict")


def test_a_batch_is_refused_whole_for_a_read_only_token_or_too_many_writes(
    api: httpx.Client, make_user: Callable[..., Account]
) -> None:
    reader = make_user("ci", kind="ro")
    refused = batch(api, reader, item("project::shop", "k"))
    assert refused.status_code == 403 and "hl_ro_" in error_of(refused, "forbidden")
    who = make_user()
    many = batch(api, who, *[item("project::shop", f"k{n}") for n in range(MAX_BATCH + 1)])
    assert many.status_code == 400
    assert error_of(many, "bad_input") == (
        f"a batch holds at most {MAX_BATCH} writes, not {MAX_BATCH + 1}: send the rest in another."
    )
    assert results(batch(api, who)) == []


@pytest.fixture(scope="module")
def small_quota(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(database_url, tmp_path_factory.mktemp("quota") / "server.log", "--active-memories", "3")
    yield running
    running.stop()


def test_the_quota_is_checked_per_write_and_an_update_after_a_refusal_still_lands(
    small_quota: Server, make_user: Callable[..., Account]
) -> None:
    who = make_user()
    with httpx.Client(base_url=small_quota.url, timeout=10) as api:
        answered = results(
            batch(
                api,
                who,
                *[item("project::shop", f"k{n}") for n in range(4)],
                item("project::shop", "k0", "an update is no new memory"),
            )
        )
        assert [r["status"] for r in answered] == [200, 200, 200, 403, 200]
        assert refusal(answered[3], "quota_exceeded").startswith("your account holds 3 active memories")
        assert answered[4]["answer"]["memory"]["value"] == "an update is no new memory"


def quota_count(db: psycopg.Connection, user_id: int) -> tuple[int, int]:
    """(what memory_quota_used answers now, what counting the account's active rows gives)."""
    kept = db.execute("SELECT memory_quota_used(%s, extract(epoch FROM now()))", (user_id,)).fetchone()
    counted = db.execute(
        "SELECT count(*) FROM memories WHERE owner = %s AND NOT archived AND space NOT LIKE 'erased:%%'"
        " AND (expires_ts IS NULL OR expires_ts > extract(epoch FROM now()))",
        (user_id,),
    ).fetchone()
    assert kept is not None and counted is not None
    return int(kept[0]), int(counted[0])


def test_the_quota_count_kept_per_account_stays_the_count_of_its_active_rows(
    api: httpx.Client, db: psycopg.Connection, member: tuple[Account, str]
) -> None:
    """Migration 0017 keeps each account's count in a trigger instead of counting on every write:
    whatever changes a row — a write, an update, archive, restore, forget, an expiry, a data
    deletion and its restore — the count is still the one a count of the rows gives."""
    who, _ = member
    path = {"archive": "/v1/memories/archive", "restore": "/v1/memories/restore", "forget": "/v1/memories/forget"}

    def change(op: str, scope: str, key: str) -> None:
        answer = api.post(path[op], json={"scope": scope, "key": key}, headers=who.headers())
        assert answer.status_code == 200, answer.text

    assert results(batch(api, who, *[item("project::own", f"k{n}") for n in range(4)], item(REPO, "shared")))
    assert quota_count(db, who.id) == (5, 5)
    assert results(batch(api, who, item("project::own", "k0", "an update counts nothing new")))
    change("archive", "project::own", "k1")
    change("archive", REPO, "shared")
    assert quota_count(db, who.id) == (3, 3)
    change("restore", "project::own", "k1")
    change("forget", "project::own", "k2")
    assert quota_count(db, who.id) == (3, 3)
    brief = results(batch(api, who, item("project::own", "brief", ttl_days=0.00001)))  # under a second
    assert brief[0]["status"] == 200
    time.sleep(1.2)
    assert quota_count(db, who.id) == (3, 3), "an expired memory counts no more, with no write"
    assert api.delete("/v1/me/data", headers=who.headers()).status_code == 200
    assert quota_count(db, who.id) == (0, 0)
    assert api.post("/v1/me/data/restore", headers=who.headers()).status_code == 200
    assert quota_count(db, who.id) == (3, 3)
