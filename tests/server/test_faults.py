"""PostgreSQL restarted under a running server: memories written from several threads, each with its
Idempotency-Key and sent again until acknowledged; while PostgreSQL is down the server refuses with a
503, a sentence and Retry-After (at least one is required); every acknowledged write is there after,
exactly once; and the server recovers alone. Two
replicas on one database share each token's rate limit. (The server killed while clients write:
test_fault_replay.py.)"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psycopg
import pytest
from conftest import Account, Server, start_server, unique

from hivelore.remote.client import Client, Endpoint

CLUSTERS = Path("/etc/postgresql")
LESSON = "pnpm test fails with ECONNREFUSED 5432 until the db is up: run docker compose up -d db first"


def restart_postgres(down_s: float) -> None:
    """Stop PostgreSQL, leave it down `down_s` (so requests meet it down, whatever the machine's
    speed), and start it again."""
    version = next(CLUSTERS.iterdir()).name
    for action in ("stop", "start"):
        subprocess.run(
            ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", action],
            check=True,
            capture_output=True,
            timeout=60,
        )
        if action == "stop":
            time.sleep(down_s)


WRITERS = 4
SCOPE = "project::faults"


@pytest.mark.skipif(
    shutil.which("pg_ctlcluster") is None or not CLUSTERS.is_dir(),
    reason="restarting PostgreSQL needs pg_ctlcluster (Debian's postgresql-common) on this machine",
)
@pytest.mark.restarts_postgres
def test_a_postgres_restart_loses_no_acknowledged_write_and_the_server_recovers(
    unlimited: Server, make_user: Callable[..., Account], database_url: str
) -> None:
    user, prefix = make_user("steady"), unique("w")
    acknowledged: list[str] = []
    refusals: list[httpx.Response] = []
    failures: list[str] = []
    stop = threading.Event()

    def write_memories(writer: int) -> None:
        """Each write is sent, with its Idempotency-Key, until the server acknowledges it, as the
        outbox does: a refusal while PostgreSQL is down is waited out, never skipped."""
        with httpx.Client(base_url=unlimited.url, timeout=15) as client:
            n = 0
            while not stop.is_set():
                n += 1
                key = f"{prefix}-{writer}-{n:04d}"
                body = {"scope": SCOPE, "key": key, "value": f"write {n} of writer {writer}: {LESSON}"}
                headers = {**user.headers(), "Idempotency-Key": key}
                while True:
                    try:
                        answer = client.post("/v1/memories", json=body, headers=headers)
                    except httpx.TransportError as exc:
                        failures.append(f"the server dropped a request: {exc!r}")
                        return
                    if answer.status_code in (429, 503):
                        refusals.append(answer)
                        time.sleep(0.2)  # not the 5 s Retry-After asks: the test waits for the recovery
                        continue
                    if answer.status_code == 200:
                        acknowledged.append(key)
                    else:
                        failures.append(f"{answer.status_code}: {answer.text}")
                    break

    writers = [threading.Thread(target=write_memories, args=(n,)) for n in range(WRITERS)]
    for writer in writers:
        writer.start()
    time.sleep(1.0)
    restart_postgres(down_s=1.5)
    time.sleep(2.0)
    stop.set()
    for writer in writers:
        writer.join(60)

    assert not failures, failures[:3]
    assert refusals, "no request met PostgreSQL down: the 503 was never shown"
    for refusal in refusals:
        assert refusal.status_code == 503 and refusal.headers["retry-after"] == "5"
        assert refusal.json()["error"] == "the database cannot be reached: try again in a moment."
    deadline = time.monotonic() + 20
    while httpx.get(f"{unlimited.url}/readyz", timeout=5).status_code != 200:
        assert time.monotonic() < deadline, "the server did not recover after PostgreSQL came back"
        time.sleep(0.2)
    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT key, seen_count FROM memories WHERE scope = %s AND key LIKE %s", (SCOPE, prefix + "-%")
        ).fetchall()
    assert len(acknowledged) > 10, "the load never ran"
    stored = [key for key, _ in rows]
    assert sorted(stored) == sorted(acknowledged), "an acknowledged write is missing, or one was never acknowledged"
    assert {seen for _, seen in rows} == {1}, "a write was applied twice"
    after = httpx.post(
        f"{unlimited.url}/v1/memories",
        json={"scope": SCOPE, "key": f"{prefix}-after", "value": LESSON},
        headers=user.headers(),
        timeout=10,
    )
    assert after.status_code == 200


def test_a_client_keeps_one_connection_and_reopens_it_when_the_server_restarted(
    database_url: str, make_user: Callable[..., Account], tmp_path: Path
) -> None:
    user = make_user("warm")
    server = start_server(database_url, tmp_path / "warm.log")
    port = int(server.url.rsplit(":", 1)[1])
    client = Client(Endpoint(server.url), user.token)
    try:
        for _ in range(3):
            assert client.get("/v1/me") == client.get("/v1/me")
        assert client.opened == 1
        server.stop()  # the kept connection is closed by the server as it leaves
        server = start_server(database_url, tmp_path / "warm.log", port=port)
        assert isinstance(client.get("/v1/me"), dict)
        assert client.opened == 2
        server.stop()
        server = start_server(database_url, tmp_path / "warm.log", port=port)
        # A change without an idempotency key is never sent twice: the closed connection is seen
        # before it is used, and the change goes once, on a new one.
        made = client.post("/v1/tokens", {"kind": "ro", "name": "after-restart"})
        assert isinstance(made, dict) and made["kind"] == "ro" and client.opened == 3
    finally:
        client.close()
        server.stop()


RATE_LIMIT = 30  # a minute per token: `hivelore serve --requests-per-minute`


def minute(database_url: str) -> object:
    """The minute PostgreSQL's clock is in: the rate window every replica counts in."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute("SELECT date_trunc('minute', now())").fetchone()
    assert row is not None
    return row[0]


def alternated(urls: list[str], token: str, n: int) -> list[httpx.Response]:
    """`n` requests of one token, each to the next replica in turn."""
    headers = {"Authorization": f"Bearer {token}"}
    clients = [httpx.Client(base_url=url, timeout=10, headers=headers) for url in urls]
    try:
        return [clients[i % len(clients)].get("/v1/me") for i in range(n)]
    finally:
        for client in clients:
            client.close()


def test_two_replicas_on_one_database_share_a_tokens_rate_limit(
    database_url: str, make_user: Callable[..., Account], tmp_path: Path
) -> None:
    limit = ("--requests-per-minute", str(RATE_LIMIT))
    replicas = [start_server(database_url, tmp_path / f"replica-{n}.log", *limit) for n in range(2)]
    try:
        for _ in range(2):  # a run that straddles a minute counts in two windows: the second cannot
            token = make_user("burst").token
            started = minute(database_url)
            answers = alternated([r.url for r in replicas], token, 2 * RATE_LIMIT + 10)
            if minute(database_url) == started:
                break
    finally:
        for replica in replicas:
            replica.stop()

    assert [a.status_code for a in answers] == [200] * RATE_LIMIT + [429] * (RATE_LIMIT + 10)
    assert {str(a.url.port) for a in answers[:RATE_LIMIT]} == {r.url.rsplit(":", 1)[1] for r in replicas}
    for refusal in answers[RATE_LIMIT:]:
        retry_after = refusal.headers["retry-after"]
        assert retry_after.isdigit() and 1 <= int(retry_after) <= 60
        assert refusal.json()["error"] == (
            f"this token made more than {RATE_LIMIT} requests this minute: try again in {retry_after} s."
        )
