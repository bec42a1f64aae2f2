"""The team on the server beyond the contract suite (tests/test_team_store_contract.py): what many
processes writing at once leave, and a change replayed with its Idempotency-Key."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable

import httpx
import psycopg
from conftest import unique

from hivelore.server.auth import digest
from hivelore.server.postgres import accounts
from hivelore.server.postgres.team import PostgresTeam
from hivelore.server.postgres.teamwatch import TeamWatch
from hivelore.team.testruns import TestRun

REPO = "acme/shop"
FAILING = TestRun("pytest", "failed", ("tests/test_auth.py::test_refresh_session",), (), 11, 0)


def _team(conn: psycopg.Connection) -> tuple[int, int, str]:
    """An organisation sharing REPO, its owner, and the owner's hl_rw_ token."""
    name = unique("team")
    user = accounts.add_user(conn, name)
    accounts.create_org(conn, name, user.id)
    org_id, _ = accounts.role_in(conn, name, user.id)
    accounts.bind_scope(conn, org_id, f"repo::{REPO}", user.id)
    return org_id, user.id, accounts.create_token(conn, user.id, "rw").token


def test_five_writers_of_the_same_failure_leave_one_attempt_counted_by_all(
    database_url: str, db: psycopg.Connection
) -> None:
    org_id, user_id, _ = _team(db)
    intent = PostgresTeam(db, org_id, user_id).intent_for_session("codex", "s-1", "dev-a", REPO, "fix refresh")
    sessions: list[int] = []

    def write() -> None:
        with PostgresTeam.open(database_url, org_id, user_id) as team:
            sessions.append(team.intent_for_session("codex", "s-2", "dev-a", REPO, "another session").id)
            for _ in range(20):
                team.record_attempt(intent.id, "pytest -q", FAILING)

    writers = [threading.Thread(target=write) for _ in range(5)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()

    (attempt,) = PostgresTeam(db, org_id, user_id).attempts(intent.id)
    assert attempt.count == 100
    assert len(set(sessions)) == 1 and len(sessions) == 5


def test_an_attempt_replayed_with_its_idempotency_key_is_counted_once(
    db: psycopg.Connection, api: httpx.Client
) -> None:
    _, _, token = _team(db)
    headers = {"Authorization": f"Bearer {token}"}
    intent = api.post(
        "/v1/team/intents", json={"developer": "dev-a", "repo": REPO, "title": "fix refresh"}, headers=headers
    )
    path = f"/v1/team/intents/{intent.json()['id']}/attempts"
    body = {
        "command": "pytest",
        "run": {"runner": "pytest", "outcome": "failed", "failed": list(FAILING.failed)},
        "at": 1.0,
    }

    first = api.post(path, json=body, headers={**headers, "Idempotency-Key": "attempt-1"})
    again = api.post(path, json=body, headers={**headers, "Idempotency-Key": "attempt-1"})
    other = api.post(path, json=body, headers={**headers, "Idempotency-Key": "attempt-2"})

    assert first.status_code == again.status_code == other.status_code == 200, first.text
    assert (first.json()["count"], again.json(), other.json()["count"]) == (1, first.json(), 2)


PASSING = TestRun("pytest", "passed", (), (), 12, 0)


def _rate_window(db: psycopg.Connection, token: str) -> tuple[object, int]:
    """The token's current rate-limit minute and its count of requests."""
    row = db.execute(
        "SELECT w.started, w.count FROM rate_windows w JOIN tokens t ON t.id = w.token_id WHERE t.hash = %s"
        " ORDER BY w.started DESC LIMIT 1",
        (digest(token),),
    ).fetchone()
    return (row[0], row[1]) if row else (None, 0)


def test_the_replica_holds_claims_and_failures_with_what_fixed_them_and_is_304_while_nothing_changed(
    db: psycopg.Connection, api: httpx.Client
) -> None:
    org_id, user_id, token = _team(db)
    headers = {"Authorization": f"Bearer {token}"}
    team = PostgresTeam(db, org_id, user_id)
    broke = team.intent_for_session("claude", "c-1", "dev-c", REPO, "rotate refresh tokens")
    team.claim(broke.id, ["shop/sessions.py::refresh_session"])
    team.record_change(broke.id, ["shop/sessions.py::refresh_session"])
    failed = team.record_attempt(broke.id, "pytest -q tests/test_auth.py", FAILING)

    first = api.get("/v1/team/replica", params={"repo": REPO}, headers=headers)
    assert first.status_code == 200, first.text
    etag = first.headers["etag"]
    assert [(c["symbol"], c["developer"]) for c in first.json()["claims"]] == [
        ("shop/sessions.py::refresh_session", "dev-c")
    ]
    (failure,) = first.json()["failures"][REPO]
    assert failure["attempt"]["id"] == failed.id and failure["title"] == "rotate refresh tokens"
    assert failure["attempt"]["symbols"] == ["shop/sessions.py::refresh_session"] and failure["fix"] is None

    same = api.get("/v1/team/replica", params={"repo": REPO}, headers={**headers, "If-None-Match": etag})
    assert (same.status_code, same.content, same.headers["etag"]) == (304, b"", etag)

    # dev-e's passing run, after changing refresh_session, resolves it: the replica changes with it.
    fixer = team.intent_for_session("codex", "e-1", "dev-e", REPO, "refresh keeps the session")
    team.record_change(fixer.id, ["shop/sessions.py::refresh_session"])
    passed = team.record_attempt(fixer.id, "pytest -q tests/test_auth.py", PASSING)
    changed = api.get("/v1/team/replica", params={"repo": REPO}, headers={**headers, "If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag
    (failure,) = changed.json()["failures"][REPO]
    assert failure["fix"]["id"] == passed.id and failure["fix"]["developer"] == "dev-e"
    assert failure["fix_title"] == "refresh keeps the session"


def test_a_replica_request_waiting_for_a_change_is_answered_when_a_claim_lands_and_counts_once(
    db: psycopg.Connection, api: httpx.Client
) -> None:
    org_id, user_id, token = _team(db)
    headers = {"Authorization": f"Bearer {token}"}
    etag = api.get("/v1/team/replica", params={"repo": REPO}, headers=headers).headers["etag"]
    asking = {**headers, "If-None-Match": etag}

    window = _rate_window(db, token)
    started = time.monotonic()
    idle = api.get("/v1/team/replica", params={"repo": REPO, "wait": 1.0}, headers=asking)
    assert idle.status_code == 304 and time.monotonic() - started >= 0.7  # held (to within 0.25 s): nothing changed
    after = _rate_window(db, token)
    assert after[1] == (window[1] + 1 if after[0] == window[0] else 1)  # one request, however long it waited

    answers: list[tuple[httpx.Response, float]] = []

    def wait_for_change() -> None:
        answer = api.get("/v1/team/replica", params={"repo": REPO, "wait": 8.0}, headers=asking)
        answers.append((answer, time.monotonic()))

    waiting = threading.Thread(target=wait_for_change)
    waiting.start()
    time.sleep(0.5)
    team = PostgresTeam(db, org_id, user_id)
    team.claim(team.intent_for_session("claude", "a-1", "dev-a", REPO, "add JWT").id, ["shop/tokens.py::validate"])
    claimed = time.monotonic()
    waiting.join()
    ((answer, at),) = answers
    assert answer.status_code == 200, answer.text
    assert [c["symbol"] for c in answer.json()["claims"]] == ["shop/tokens.py::validate"]
    assert at - claimed < 2.0  # answered on the change (looked at every 0.25 s), not after the 8 s wait


def test_a_change_made_straight_in_the_database_wakes_a_held_replica_request(
    db: psycopg.Connection, api: httpx.Client
) -> None:
    """No replica wrote it, so only PostgreSQL's notification (migration 0019) can tell the waiting
    request; it is answered at once, not when its 8 s are up."""
    org_id, user_id, token = _team(db)
    headers = {"Authorization": f"Bearer {token}"}
    team = PostgresTeam(db, org_id, user_id)
    intent = team.intent_for_session("claude", "a-1", "dev-a", REPO, "add JWT")
    team.claim(intent.id, ["shop/tokens.py::validate"])
    etag = api.get("/v1/team/replica", params={"repo": REPO}, headers=headers).headers["etag"]
    answers: list[tuple[httpx.Response, float]] = []

    def wait_for_change() -> None:
        asked = api.get(
            "/v1/team/replica", params={"repo": REPO, "wait": 8.0}, headers={**headers, "If-None-Match": etag}
        )
        answers.append((asked, time.monotonic()))

    waiting = threading.Thread(target=wait_for_change)
    waiting.start()
    time.sleep(1.0)
    db.execute("UPDATE team_intents SET status = 'done' WHERE id = %s", (intent.id,))  # as at a psql prompt
    done = time.monotonic()
    waiting.join()

    ((answer, at),) = answers
    assert answer.status_code == 200 and answer.json()["claims"] == []
    assert at - done < 1.0, at - done


def test_the_watch_hears_a_committed_change_and_not_a_rolled_back_one(
    database_url: str, db: psycopg.Connection
) -> None:
    org_id, user_id, _ = _team(db)
    intent = PostgresTeam(db, org_id, user_id).intent_for_session("codex", "b-1", "dev-b", REPO, "rate limits")

    async def heard(change: Callable[[], None]) -> bool:
        watch = TeamWatch(database_url)
        watch.start(asyncio.get_running_loop())
        try:
            assert watch.listening
            changed = watch.changed()
            await asyncio.to_thread(change)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), 2.0)
            return changed.is_set()
        finally:
            await asyncio.to_thread(watch.stop)

    def rolled_back() -> None:
        with psycopg.connect(database_url) as conn:
            conn.execute("UPDATE team_intents SET title = 'renamed' WHERE id = %s", (intent.id,))
            conn.rollback()

    def committed() -> None:
        with psycopg.connect(database_url) as conn:
            conn.execute("UPDATE team_intents SET title = 'renamed' WHERE id = %s", (intent.id,))

    assert asyncio.run(heard(rolled_back)) is False
    assert asyncio.run(heard(committed)) is True


def test_a_replica_whose_listening_connection_dies_listens_again(db: psycopg.Connection, api: httpx.Client) -> None:
    """Its held requests look every 0.25 s meanwhile; /readyz says which."""
    assert api.get("/readyz").json()["team_changes"] == "heard"
    (ended,) = db.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE datname = current_database() AND query = 'LISTEN hivelore_team'"
    ).fetchone()
    assert ended

    def becomes(state: str) -> bool:
        deadline = time.monotonic() + 10.0
        while api.get("/readyz").json()["team_changes"] != state:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    assert becomes("polled")  # noticed within a second
    assert becomes("heard")  # listening again a second later
