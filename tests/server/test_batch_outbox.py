"""The outbox replayed through `POST /v1/memories/batch`: writes waiting one after another go in one
request, each answered on its own — a write the server's guard refuses is set aside (and shown by
`hivelore remote status`) while the writes after it land; a batch whose answer was lost, or that the
server cut short, is sent again with the same keys and nothing lands twice; a server older than the
route gets the writes one by one. And the client decides by the error's `code`, not its status alone."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from conftest import Account, Server, free_port, org_sharing, start_server, started, unique
from harness import REPO
from test_fault_replay import command, environment, hivelore, machine, outbox, stored, sync

from hivelore import errors
from hivelore.memory.service import COMMAND_NETWORK_BUDGET_S
from hivelore.remote.client import Client, Endpoint, QuotaReached, RateLimited, Refused
from hivelore.remote.credentials import resolve
from hivelore.remote.replica import BATCH_PATH, Replica, batches

SECRET = "the deploy user's key is AKIAZ7Q3K9X2M4R8T6WB"

# A server as it was before the batch route: the same app without it.
OLDER_SERVER = """
import sys
import uvicorn
from hivelore.server import logs
from hivelore.server.app import Settings, create_app
from hivelore.server.routes import memories
memories.router.routes = [r for r in memories.router.routes if getattr(r, "path", "") != "/v1/memories/batch"]
logs.configure()
app = create_app(Settings(database_url=sys.argv[1], meaning=False))
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), access_log=False, log_config=None)
"""


@pytest.fixture
def member(db: psycopg.Connection, make_user: Callable[..., Account]) -> Account:
    """A member of an org that shares repo::acme/checkout: their lessons there go to the server."""
    owner, member = make_user("owner"), make_user("member")
    org_sharing(db, REPO, owner, member)
    return member


def replica_of(home: Path, repo: Path) -> Replica:
    found = resolve(str(home), str(repo), environment(home))
    assert found is not None
    return Replica(str(home), found, COMMAND_NETWORK_BUDGET_S)


def requests_to(log: Path, path: str) -> list[int]:
    """The status of each request to `path` in a server's log, in order."""
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    return [int(line["status"]) for line in lines if line.get("path") == path and "status" in line]


def test_the_outbox_sends_waiting_writes_in_one_batch_and_a_refused_one_blocks_nothing(
    server: Server, member: Account, tmp_path: Path, database_url: str
) -> None:
    home, repo = machine(tmp_path, "a", server, member)
    run = unique("mixed")
    sync(home, repo)
    hook = command(home, repo, budget_s=0)  # a hook queues its writes without asking the server
    hook.write(REPO, f"{run}-0", "lesson zero: run the migrations before the tests")
    hook.write(REPO, f"{run}-1", "lesson one: the cache must be warmed first")
    hook.close()
    replica = replica_of(home, repo)
    try:
        # A write this machine's guard let through (an older client's, say) that the server's refuses.
        replica.outbox.add("write", {"scope": REPO, "key": f"{run}-2", "value": SECRET})
        replica.outbox.add("write", {"scope": REPO, "key": f"{run}-3", "value": "lesson three: after the refusal"})
        replica.outbox.add("archive", {"scope": REPO, "key": f"{run}-0"})  # alone, in its place
        replica.outbox.add("write", {"scope": REPO, "key": f"{run}-4", "value": "lesson four: after the archive"})
        assert [len(group) for group in batches(replica.outbox.waiting())] == [4, 1, 1]
        before = len(requests_to(server.log, BATCH_PATH))
        flushed = replica.flush()
    finally:
        replica.close()
    assert (flushed.sent, flushed.waiting, flushed.held) == (5, 0, None)
    [refusal] = flushed.rejected
    assert "secret" in refusal.lower()
    assert requests_to(server.log, BATCH_PATH)[before:] == [200]  # the four writes went in one request
    assert [key for key, _, _ in stored(database_url, run)] == [f"{run}-{n}" for n in (0, 1, 3, 4)]
    with psycopg.connect(database_url, autocommit=True) as conn:
        archived = conn.execute("SELECT archived FROM memories WHERE key = %s", (f"{run}-0",)).fetchone()
    assert archived == (True,), "the archive was applied after the write it follows"
    assert outbox(home) == []
    status = hivelore(home, repo, "remote", "status", "--json")
    shown = json.loads(status.stdout)["outbox"]
    assert shown["waiting"] == 0
    assert [r["change"] for r in shown["rejected"]] == [f"write {REPO}::{run}-2"], shown
    assert shown["rejected"][0]["why"] == refusal


def test_a_batch_cut_short_or_whose_answer_was_lost_is_replayed_and_nothing_lands_twice(
    server: Server, member: Account, tmp_path: Path, database_url: str
) -> None:
    home, repo = machine(tmp_path, "a", server, member)
    run = unique("crash")
    sync(home, repo)
    hook = command(home, repo, budget_s=0)
    for n in range(4):
        hook.write(REPO, f"{run}-{n}", f"lesson {n} of a batch the server was killed under")
    hook.close()
    replica = replica_of(home, repo)
    try:
        waiting = replica.outbox.waiting()
        # The server was killed two writes into the batch: each is its own transaction, so those two
        # were kept, with their keys — as if each had been sent alone with it.
        for change in waiting[:2]:
            kept = httpx.post(
                f"{server.url}/v1/memories",
                json=change.body,
                headers={**member.headers(), "Idempotency-Key": change.key},
                timeout=10,
            )
            assert kept.status_code == 200, kept.text
        # And a client killed after the server answered a whole batch, before it cleared its outbox.
        writes = [{"write": c.body, "idempotency_key": c.key} for c in waiting]
        lost = httpx.post(f"{server.url}{BATCH_PATH}", json={"writes": writes}, headers=member.headers(), timeout=10)
        assert [r["status"] for r in lost.json()["results"]] == [200] * 4
        flushed = replica.flush()
    finally:
        replica.close()
    assert (flushed.sent, flushed.rejected, flushed.waiting) == (4, [], 0)
    assert stored(database_url, run) == [
        (f"{run}-{n}", f"lesson {n} of a batch the server was killed under", 1) for n in range(4)
    ], "a replayed write was applied a second time"
    assert outbox(home) == []


@pytest.fixture
def older_server(database_url: str, tmp_path: Path) -> Iterator[Server]:
    port = free_port()
    server = started([sys.executable, "-c", OLDER_SERVER, database_url, str(port)], port, tmp_path / "older.log")
    yield server
    server.stop()


def test_a_server_without_the_batch_route_gets_the_writes_one_by_one(
    older_server: Server, member: Account, tmp_path: Path, database_url: str
) -> None:
    home, repo = machine(tmp_path, "a", older_server, member)
    run = unique("older")
    sync(home, repo)
    hook = command(home, repo, budget_s=0)
    for n in range(3):
        hook.write(REPO, f"{run}-{n}", f"lesson {n} for a server older than batches")
    hook.close()
    replica = replica_of(home, repo)
    try:
        replica.outbox.add("write", {"scope": REPO, "key": f"{run}-x", "value": SECRET})
        for n in range(3, 5):
            replica.outbox.add("write", {"scope": REPO, "key": f"{run}-{n}", "value": f"lesson {n}, after a refusal"})
        flushed = replica.flush()
        assert replica.client.lacks(BATCH_PATH)
    finally:
        replica.close()
    assert (flushed.sent, flushed.waiting, len(flushed.rejected)) == (5, 0, 1)
    assert requests_to(older_server.log, BATCH_PATH) == [404], "the route is asked for once, then not again"
    assert requests_to(older_server.log, "/v1/memories").count(200) == 5
    assert [key for key, _, _ in stored(database_url, run)] == [f"{run}-{n}" for n in range(5)]


def test_the_client_tells_a_full_quota_from_a_role_and_the_rate_limit_from_a_busy_server(
    database_url: str, make_user: Callable[..., Account], tmp_path: Path
) -> None:
    server = start_server(database_url, tmp_path / "server.log", "--active-memories", "1", "--requests-per-minute", "4")
    try:
        who, reader = make_user("full"), make_user("reader", kind="ro")
        client = Client(Endpoint(server.url), who.token)
        client.retry_budget_s = 0  # a 429 is raised, not waited out
        client.post("/v1/memories", {"scope": "project::shop", "key": "one", "value": "the only lesson that fits"})
        with pytest.raises(QuotaReached) as full:
            client.post("/v1/memories", {"scope": "project::shop", "key": "two", "value": "one too many"})
        assert (full.value.status, full.value.code) == (403, "quota_exceeded")
        with pytest.raises(Refused) as role:
            Client(Endpoint(server.url), reader.token).post(
                "/v1/memories", {"scope": "project::shop", "key": "k", "value": "a reader cannot write"}
            )
        assert (role.value.status, role.value.code) == (403, "forbidden") and not isinstance(role.value, QuotaReached)
        with pytest.raises(Refused) as token:
            Client(Endpoint(server.url), "hl_rw_" + "x" * 40).get("/v1/me")
        assert token.value.about_token
        with pytest.raises(RateLimited) as limited:
            for _ in range(4):
                client.get("/v1/me")
        assert isinstance(limited.value, errors.Busy) and "requests this minute" in limited.value.sentence()
    finally:
        server.stop()


def test_a_migration_refused_for_its_token_stops_at_once_without_splitting(
    server: Server, make_user: Callable[..., Account], tmp_path: Path
) -> None:
    reader = make_user("reader", kind="ro")
    home, repo = machine(tmp_path, "a", server, reader)
    for n in range(8):
        written = hivelore(home, repo, "write", f"global::lesson-{n}", f"Lesson {n} of the build.", "--tier", "home")
        assert written.returncode == 0, written.stderr
    result = hivelore(home, repo, "migrate", "--to", "remote", "--yes", "--json")
    report = json.loads(result.stdout)
    assert result.returncode == 1 and "hl_ro_" in report["stopped"], report
    assert report["requests"] == 1, "a refusal no half of the request would escape is not split"
    assert len(report["not_copied"]) == 8
