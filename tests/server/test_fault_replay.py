"""The team server killed under its clients, and the outbox's replay.

Clients write through the real remote-mode path (memory/service.py → remote/tier.py → the outbox and
the replica in remote/), each in its own HIVELORE_HOME, logged in with `hivelore remote login`. The
server is SIGKILLed mid-way and started again on its port: the outboxes replay with their
idempotency keys and the server ends holding every write once — nothing missing, nothing twice.
A change whose answer was lost lands once when replayed; a newer change never overtakes an older
one waiting in the outbox, even when the clock steps back. (Replicas sharing a rate limit, and
PostgreSQL restarted: test_faults.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg
import pytest
from conftest import Account, Server, free_port, start_server, unique
from harness import REPO, make_repo

from hivelore.memory.service import COMMAND_NETWORK_BUDGET_S, Hivelore
from hivelore.remote.credentials import resolve
from hivelore.remote.outbox import Outbox
from hivelore.remote.replica import Replica
from hivelore.server.postgres import accounts

CLIENTS = 3
KILL_AFTER = 9  # rows on the server before the kill
AFTER_RESTART = 2  # writes the server answers each client once it is back
WAIT_S = 60.0  # a bound on every wait below; each is a condition, met in a few seconds


def environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVELORE_")}
    return {**env, "HIVELORE_HOME": str(home), "HIVELORE_HOOK_SERVER": "off"}


def hivelore(home: Path, repo: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hivelore", *args], input=stdin, cwd=repo, env=environment(home),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def machine(tmp_path: Path, name: str, server: Server, who: Account) -> tuple[Path, Path]:
    """A developer's machine: a home in remote mode, logged in, and a clone of acme/checkout."""
    home, repo = tmp_path / f"home-{name}", make_repo(tmp_path / f"repo-{name}")
    home.mkdir()
    (home / "config.json").write_text(json.dumps({"mode": "remote", "endpoint": server.url}))
    login = hivelore(home, repo, "remote", "login", "--token", "-", stdin=who.token)
    assert login.returncode == 0, login.stderr
    return home, repo


def command(home: Path, repo: Path, budget_s: float = COMMAND_NETWORK_BUDGET_S) -> Hivelore:
    """The service as a command opens it (`hivelore write`, MCP); a budget of 0 is a hook's."""
    return Hivelore.open(repo, env=environment(home), network_budget_s=budget_s)


def sync(home: Path, repo: Path) -> None:
    """Bring the home's mirror up to the server, without sending what its outbox holds."""
    found = resolve(str(home), str(repo), environment(home))
    assert found is not None
    replica = Replica(str(home), found, COMMAND_NETWORK_BUDGET_S)
    try:
        replica.sync()
    finally:
        replica.close()


def outbox(home: Path) -> list[str]:
    return sorted(p.name for folder in (home / "remote").glob("*.outbox") for p in folder.glob("*.json"))


def stored(database_url: str, key_prefix: str) -> list[tuple[str, str, int]]:
    """(key, value, seen_count) of every row of the server whose key starts with `key_prefix`."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT key, record->>'value', seen_count FROM memories WHERE scope = %s AND key LIKE %s ORDER BY key",
            (REPO, key_prefix + "%"),
        ).fetchall()
    return [(str(k), str(v), int(n)) for k, v, n in rows]


def clients_of(keys: Iterable[str]) -> set[str]:
    """The clients that wrote `keys` (`RUN-cN-NN`)."""
    return {key.rsplit("-", 1)[0] for key in keys}


@pytest.fixture
def team(db: psycopg.Connection, make_user: Callable[..., Account]) -> list[Account]:
    """Developers of one org that shares repo::acme/checkout."""
    people = [make_user(f"dev-{n}") for n in range(CLIENTS)]
    org = unique("acme")
    accounts.create_org(db, org, people[0].id)
    org_id, _ = accounts.role_in(db, org, people[0].id)
    for member in people[1:]:
        db.execute("INSERT INTO members (org_id, user_id, role) VALUES (%s, %s, 'member')", (org_id, member.id))
    accounts.bind_scope(db, org_id, REPO, people[0].id)
    return people


def test_a_write_never_overtakes_an_older_change_waiting_in_the_outbox(
    server: Server, team: list[Account], tmp_path: Path, database_url: str
) -> None:
    home, repo = machine(tmp_path, "a", server, team[0])
    key = unique("order")
    sync(home, repo)  # the mirror is fresh: the next command does not flush before it writes
    hook = command(home, repo, budget_s=0)  # a hook writes to the outbox and never waits on the server
    hook.write(REPO, key, "first: the hook wrote this before the command did")
    hook.close()
    assert len(outbox(home)) == 1

    later = command(home, repo)
    later.write(REPO, key, "second: the command wrote this after the hook")
    later.close()
    status = hivelore(home, repo, "remote", "status", "--json")  # sends whatever still waits
    assert json.loads(status.stdout)["outbox"]["waiting"] == 0, status.stdout + status.stderr

    # Sent in the order they were made: the newer value is the one the server keeps.
    assert stored(database_url, key) == [(key, "second: the command wrote this after the hook", 2)]
    assert outbox(home) == []


def test_a_change_whose_answer_was_lost_is_applied_once_when_the_outbox_replays_it(
    server: Server, team: list[Account], tmp_path: Path, database_url: str
) -> None:
    home, repo = machine(tmp_path, "a", server, team[0])
    key = unique("lost")
    sync(home, repo)  # the mirror knows the org shares the scope: the write is for the server
    hook = command(home, repo, budget_s=0)
    hook.write(REPO, key, "the server applied this but its answer never came back")
    hook.close()
    [name] = outbox(home)
    change = json.loads(next((home / "remote").glob(f"*.outbox/{name}")).read_text())
    # The first send: applied by the server, its answer lost on the way back.
    first = httpx.post(
        f"{server.url}/v1/memories",
        json=change["body"],
        headers={**team[0].headers(), "Idempotency-Key": name.removesuffix(".json").split("-", 1)[1]},
        timeout=10,
    )
    assert first.status_code == 200, first.text

    status = hivelore(home, repo, "remote", "status", "--json")
    shown = json.loads(status.stdout)["outbox"]
    assert (shown["waiting"], shown["rejected"]) == (0, []), status.stdout + status.stderr
    assert stored(database_url, key) == [(key, "the server applied this but its answer never came back", 1)]


def test_the_server_killed_while_clients_write_ends_with_every_write_exactly_once(
    database_url: str, team: list[Account], tmp_path: Path
) -> None:
    port = free_port()
    server = start_server(database_url, tmp_path / "server.log", port=port)
    run = unique("kill")
    with ThreadPoolExecutor(CLIENTS) as pool:
        machines = list(pool.map(lambda n: machine(tmp_path, f"c{n}", server, team[n]), range(CLIENTS)))
    written: dict[str, str] = {}  # every write a client made: key, value
    queued: list[str] = []  # the writes a client was told wait in its outbox: the server was away
    failures: list[str] = []
    restarted = threading.Event()
    deadline = time.monotonic() + WAIT_S

    def write_until_back(c: int, home: Path, repo: Path) -> None:
        """Write, one command at a time, until the server has answered AFTER_RESTART writes after its restart."""
        n = after = 0
        while after < AFTER_RESTART and time.monotonic() < deadline:
            key, n = f"{run}-c{c}-{n:03d}", n + 1
            written[key] = f"client {c} wrote lesson {n} of the kill run"
            try:
                service = command(home, repo)
                try:
                    service.write(REPO, key, written[key])
                    if any("waits in the outbox" in w for w in service.warnings):
                        queued.append(key)
                    elif restarted.is_set():
                        after += 1
                finally:
                    service.close()
            except Exception as exc:  # a write a user would have seen fail: the test fails
                failures.append(f"{key}: {exc!r}")
                return

    def wait_for(condition: Callable[[], bool], what: str) -> None:
        while not condition():
            assert not failures, failures[:3]
            assert time.monotonic() < deadline, what
            time.sleep(0.05)

    writers = [threading.Thread(target=write_until_back, args=(c, *m)) for c, m in enumerate(machines)]
    try:
        for writer in writers:
            writer.start()
        wait_for(lambda: len(stored(database_url, run)) >= KILL_AFTER, "the clients' writes did not reach the server")
        server.process.kill()  # SIGKILL: no shutdown; a request in flight loses its answer
        server.process.wait(10)
        # Down longer than a client's retries: every client was told a write waits in its outbox.
        wait_for(lambda: len(clients_of(queued)) == CLIENTS, "a client's write did not wait in its outbox")
        server = start_server(database_url, tmp_path / "server.log", port=port)
        restarted.set()
        for writer in writers:
            writer.join(WAIT_S)
        assert not failures, failures[:3]
        assert not any(w.is_alive() for w in writers), "a client hung"
        assert len(clients_of(written)) == CLIENTS and time.monotonic() < deadline, "a client did not finish"
        # What still waits is sent as remote mode sends it: `remote status` flushes, then shows.
        with ThreadPoolExecutor(CLIENTS) as pool:
            statuses = list(pool.map(lambda m: hivelore(*m, "remote", "status", "--json"), machines))
        for status in statuses:
            shown = json.loads(status.stdout)["outbox"]
            assert (shown["waiting"], shown["rejected"]) == (0, []), status.stdout + status.stderr
    finally:
        server.stop()

    rows = stored(database_url, run)
    assert [key for key, _, _ in rows] == sorted(written), "a write is missing, or on the server twice"
    assert {key: value for key, value, _ in rows} == written
    assert [key for key, _, seen in rows if seen != 1] == [], "a replayed write was applied a second time"
    assert all(outbox(home) == [] for home, _ in machines)


def test_the_outbox_keeps_the_order_changes_were_made_when_the_clock_steps_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    box = Outbox(str(tmp_path / "server.outbox"))
    first = box.add("write", {"scope": REPO, "key": "k", "value": "first"})
    an_hour = 3600 * 10**9
    monkeypatch.setattr(time, "time_ns", lambda: int(first.name.split("-")[0]) - an_hour)  # NTP stepped it back
    second = box.add("write", {"scope": REPO, "key": "k", "value": "second"})
    assert [c.body["value"] for c in box.waiting()] == ["first", "second"]
    assert second.name > first.name


def test_changes_waiting_when_the_token_is_revoked_wait_for_a_new_login_and_land_once(
    server: Server, team: list[Account], tmp_path: Path, database_url: str, db: psycopg.Connection
) -> None:
    from hivelore.remote.replica import refresh_mirrors

    home, repo = machine(tmp_path, "a", server, team[0])
    key = unique("revoked")
    sync(home, repo)
    hook = command(home, repo, budget_s=0)  # queued without asking the server, as a hook does
    for n in range(2):
        hook.write(REPO, f"{key}-{n}", f"written while the token was still good ({n})")
    hook.close()
    for token in accounts.tokens_of(db, team[0].id):
        accounts.revoke_token(db, team[0].id, token.id)

    # The hook server's round and `remote status` both stop at the refusal: nothing is set aside.
    problems = refresh_mirrors(str(home), COMMAND_NETWORK_BUDGET_S)
    assert any("refused the token" in p and "hivelore remote login" in p for p in problems), problems
    status = hivelore(home, repo, "remote", "status", "--json")
    assert status.returncode == 2 and "refused the token" in status.stderr, status.stderr
    report = json.loads(status.stdout)
    assert report["outbox"]["waiting"] == 2 and report["outbox"]["rejected"] == [], report
    assert "hivelore remote login" in report["mirror"]["problem"]
    assert len(outbox(home)) == 2 and stored(database_url, key) == []

    fresh = accounts.create_token(db, team[0].id, "rw").token
    assert hivelore(home, repo, "remote", "login", "--token", "-", stdin=fresh).returncode == 0
    again = hivelore(home, repo, "remote", "status", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["outbox"]["waiting"] == 0, again.stdout + again.stderr
    assert stored(database_url, key) == [
        (f"{key}-{n}", f"written while the token was still good ({n})", 1) for n in range(2)
    ]
    assert outbox(home) == []
