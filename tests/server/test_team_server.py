"""The team on the server beyond the contract suite (tests/test_team_store_contract.py): what many
processes writing at once leave, and a change replayed with its Idempotency-Key."""

from __future__ import annotations

import threading

import httpx
import psycopg
from conftest import unique

from hivelore.server.postgres import accounts
from hivelore.server.postgres.team import PostgresTeam
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
