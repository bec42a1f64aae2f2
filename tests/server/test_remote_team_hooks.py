"""The team across machines through the hooks: two HIVELORE_HOMEs, each with its own clone of the
shop (same origin) and its own developer, in remote mode against a live `hivelore serve`. Real hook
processes answered by each home's resident hook server: a claim made by dev-a's edit hook is queued
in dev-a's outbox, sent by dev-a's hook server, and seen by dev-b's pre-edit hook from the replica of
the team's claims dev-b's hook server keeps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import httpx
import psycopg
import pytest
from conftest import Account, Server, free_port, start_server, unique
from harness import SHOP_FILES, call, make_shop, mcp_session

from hivelore.remote.client import Client, Endpoint
from hivelore.remote.mirror import path_for
from hivelore.remote.team import RemoteTeam
from hivelore.remote.teamshare import ClaimsReplica, FailuresReplica, TeamReplica, refresh_team
from hivelore.server.postgres import accounts
from hivelore.team.coordination import REPLICA_STALE_S
from hivelore.team.store import SqliteTeam

SCOPE = "repo::acme/shop"
SESSIONS = "from shop.tokens import validate_token\n\n\ndef refresh_session(token):\n    return validate_token(token)\n"
SHOP = {**SHOP_FILES, "shop/sessions.py": SESSIONS}
REFRESH = "    return validate_token(token)"
TEST_COMMAND = "pytest -q tests/test_tokens.py"
PYTEST_FAILURE = """\
.F                                                                       [100%]
=================================== FAILURES ===================================
_____________________________ test_refresh_session _____________________________
E       AssertionError: assert 'old.jwt' != 'old.jwt'
=========================== short test summary info ============================
FAILED tests/test_tokens.py::test_refresh_session - AssertionError: assert 'old.jwt' != 'old.jwt'
1 failed, 1 passed in 0.04s
"""
PYTEST_PASS = "..   [100%]\n2 passed in 0.03s\n"
SEEN_WAIT_S = 20.0  # what the test waits at most; the figure itself is benchmarks/bench_team_server.py's
VALIDATE = "    return token.split('.')[0]"
CHECKOUT = "    return {'user': user, 'total': sum(cart)}"


class Machine:
    """One developer's laptop: a home, a clone of the shop, a developer name."""

    def __init__(self, home: Path, repo: Path, developer: str) -> None:
        self.home, self.repo, self.developer = home, repo, developer
        self.hook_server = "on"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HIVELORE_")}
        mine = {"HIVELORE_HOME": str(self.home), "HIVELORE_DEVELOPER": self.developer}
        return {**env, **mine, "HIVELORE_HOOK_SERVER": self.hook_server}

    def cli(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "hivelore", *args], input=stdin, cwd=self.repo, env=self.env(),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    def hook(self, event: str, payload: dict) -> str:
        """One Claude hook as Claude Code runs it: what the agent is told."""
        result = subprocess.run(
            [sys.executable, "-m", "hivelore", "hook", "--agent", "claude", "--event", event],
            input=json.dumps({"cwd": str(self.repo), "hook_event_name": event, **payload}),
            cwd=self.repo, env=self.env(), capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert result.returncode == 0 and result.stderr == "", result.stderr
        return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"] if result.stdout else ""

    def prompt(self, session: str, text: str) -> str:
        return self.hook("UserPromptSubmit", {"session_id": session, "prompt": text})

    def edit(self, session: str, path: str, old: str) -> str:
        tool_input = {"file_path": str(self.repo / path), "old_string": old, "new_string": old + "  # changed"}
        return self.hook("PreToolUse", {"session_id": session, "tool_name": "Edit", "tool_input": tool_input})

    def claims(self, url: str) -> ClaimsReplica:
        return ClaimsReplica.beside(path_for(str(self.home), url))

    def failures(self, url: str) -> FailuresReplica:
        return FailuresReplica.beside(path_for(str(self.home), url))

    def change(self, session: str, path: str, old: str, new: str) -> str:
        """An edit as Claude Code makes it: the pre-edit hook, the file changed, the post-edit hook."""
        said = self.edit(session, path, old)
        changed = self.repo / path
        changed.write_text(changed.read_text().replace(old, new))
        tool_input = {"file_path": str(changed), "old_string": old, "new_string": new}
        post = {"session_id": session, "tool_name": "Edit", "tool_input": tool_input, "tool_response": {}}
        assert self.hook("PostToolUse", post) == ""
        return said

    def test_run(self, session: str, output: str, passed: bool) -> str:
        """`pytest` run through the Bash tool: a PostToolUse when it passed, PostToolUseFailure when not."""
        payload = {"session_id": session, "tool_name": "Bash", "tool_input": {"command": TEST_COMMAND}}
        if passed:
            return self.hook("PostToolUse", {**payload, "tool_response": {"stdout": output, "stderr": ""}})
        return self.hook("PostToolUseFailure", {**payload, "error": f"Exit code 1\n{output}"})


@pytest.fixture
def team(db: psycopg.Connection, make_user: Callable[..., Account]) -> tuple[Account, Account]:
    """dev-a owns an organisation that shares repo::acme/shop; dev-b is a member of it."""
    owner = make_user("dev-a")
    email = f"{unique('dev-b')}@example.com"
    member = make_user("dev-b", email=email)
    org = unique("acme")
    accounts.create_org(db, org, owner.id)
    org_id, _ = accounts.role_in(db, org, owner.id)
    accounts.bind_scope(db, org_id, SCOPE, owner.id)
    accounts.accept(db, accounts.invite(db, org_id, org, email, "member", owner.id).token, member.id)
    return owner, member


def _machines(
    tmp_path: Path, server: Server, team: tuple[Account, Account], developers: tuple[str, str]
) -> Iterator[tuple[Machine, Machine]]:
    made = []
    for account, developer in zip(team, developers, strict=True):
        home = tmp_path / developer / "home"
        home.mkdir(parents=True)
        machine = Machine(home, make_shop(tmp_path / developer / "shop", SHOP), developer)
        (home / "config.json").write_text(json.dumps({"mode": "remote", "endpoint": server.url}))
        assert machine.cli("remote", "login", "--token", "-", stdin=account.token).returncode == 0
        indexed = machine.cli("graph", "index")
        assert indexed.returncode == 0, indexed.stderr
        made.append(machine)
    yield made[0], made[1]
    for machine in made:
        machine.cli("hook-server", "stop")


@pytest.fixture
def machines(tmp_path: Path, server: Server, team: tuple[Account, Account]) -> Iterator[tuple[Machine, Machine]]:
    yield from _machines(tmp_path, server, team, ("dev-a", "dev-b"))


@pytest.fixture
def c_and_d(tmp_path: Path, server: Server, team: tuple[Account, Account]) -> Iterator[tuple[Machine, Machine]]:
    yield from _machines(tmp_path, server, team, ("dev-c", "dev-d"))


def wait_for(what: str, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + SEEN_WAIT_S
    while not check():
        assert time.monotonic() < deadline, f"not seen within {SEEN_WAIT_S:g} s: {what}"
        time.sleep(0.1)


def test_a_claim_made_by_one_machines_edit_hook_warns_the_other_machines_pre_edit_hook(
    server: Server, team: tuple[Account, Account], machines: tuple[Machine, Machine]
) -> None:
    a, b = machines
    b.prompt("b-0", "look around")  # starts dev-b's hook server, which keeps the replica of the claims
    wait_for("dev-b's replica of the claims", lambda: b.claims(server.url).read("acme/shop")[1] is not None)

    a.prompt("a-1", "add JWT support")
    assert a.edit("a-1", "shop/tokens.py", VALIDATE) == ""

    def dev_a_claim_in_b_replica() -> bool:
        claims, _ = b.claims(server.url).read("acme/shop")
        return any(symbol.endswith("validate_token") and who == "dev-a" for symbol, _intent, who in claims)

    wait_for("dev-a's claim in dev-b's replica", dev_a_claim_in_b_replica)
    b.prompt("b-1", "speed up checkout")
    warning = b.edit("b-1", "shop/orders.py", CHECKOUT)
    assert "heads-up (a warning, not a block)" in warning
    assert "checkout → current_user → validate_token" in warning
    assert "dev-a" in warning and "add JWT support" in warning
    assert "as of" not in warning  # the replica is fresh: its age is not worth saying
    assert b.edit("b-1", "shop/orders.py", CHECKOUT) == ""  # once per session

    # On the server, dev-a's session's task holds the claim: the queued change went whole.
    board = httpx.get(f"{server.url}/v1/team/board", params={"repo": "acme/shop"}, headers=team[0].headers())
    (card,) = [c for c in board.json()["cards"] if c["intent"]["title"] == "add JWT support"]
    assert card["intent"]["owner"] == "dev-a"
    claims = httpx.get(f"{server.url}/v1/team/intents/{card['intent']['id']}/claims", headers=team[0].headers())
    assert [c["symbol"] for c in claims.json()["claims"]] == ["shop/tokens.py::validate_token"]

    # dev-b's hook server goes, and nobody refreshes the replica: a warning from it says how old it is.
    b.cli("hook-server", "stop")
    b.hook_server = "off"
    replica = b.claims(server.url)
    kept, synced = replica.read("acme/shop")
    assert synced is not None
    replica.write({"acme/shop": kept}, synced - REPLICA_STALE_S - 7)  # as if the server went away 10 s ago
    warning = b.edit("b-2", "shop/orders.py", CHECKOUT)
    assert "validate_token is being changed by dev-a" in warning
    assert "(as of 1" in warning and "s ago)" in warning

    # The commands read and write the server's team: dev-a hands the task off, dev-b resumes it.
    listed = b.cli("task", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert card["intent"]["id"] in [t["id"] for t in json.loads(listed.stdout)]
    task = str(card["intent"]["id"])
    assert a.cli("task", "handoff", task, "tokens validate; refresh next").returncode == 0
    with SqliteTeam.open(str(a.home)) as local:  # the hooks' task of that session stops claiming too
        assert [i.title for i in local.intents("acme/shop", "handed_off")] == ["add JWT support"]
        assert local.active_claims("acme/shop") == []
    resumed = b.cli("task", "resume", task, "--json")
    assert resumed.returncode == 0, resumed.stderr
    taken = json.loads(resumed.stdout)
    assert taken["claims"] == ["shop/tokens.py::validate_token"]
    assert [n["text"] for n in taken["notes"]] == ["tokens validate; refresh next"]
    assert taken["task"]["owner"] == "dev-b"


def test_the_replica_keeps_the_claims_of_the_shared_repositories_and_says_which_one_is_refused(
    server: Server, team: tuple[Account, Account], tmp_path: Path
) -> None:
    owner = team[0]
    client = Client(Endpoint(server.url), owner.token)
    try:
        remote = RemoteTeam(client)
        task = remote.intent_for_session("codex", "a-9", "dev-a", "acme/shop", "rotate keys")
        remote.claim(task.id, ["shop/keys.py::rotate"])
        replica = TeamReplica(ClaimsReplica(str(tmp_path / "claims.json")), FailuresReplica(str(tmp_path / "f.json")))
        problems, _etag = refresh_team(client, replica, ["acme/shop", "nobody/else"])
    finally:
        client.close()
    assert len(problems) == 1 and "nobody/else" in problems[0] and "org share" in problems[0]
    claims, synced = replica.claims.read("acme/shop")
    assert [(symbol, intent.id, who) for symbol, intent, who in claims] == [("shop/keys.py::rotate", task.id, "dev-a")]
    assert synced is not None and time.time() - synced < SEEN_WAIT_S
    assert replica.claims.read("nobody/else") == ([], None)


def test_a_claim_made_while_the_server_is_away_waits_in_the_outbox_and_lands_when_it_is_back(
    database_url: str, team: tuple[Account, Account], tmp_path: Path
) -> None:
    port = free_port()
    own = start_server(database_url, tmp_path / "server.log", port=port)
    a = Machine(tmp_path / "home", make_shop(tmp_path / "shop", SHOP_FILES), "dev-a")
    a.home.mkdir()
    try:
        (a.home / "config.json").write_text(json.dumps({"mode": "remote", "endpoint": own.url}))
        assert a.cli("remote", "login", "--token", "-", stdin=team[0].token).returncode == 0
        assert a.cli("graph", "index").returncode == 0
        a.prompt("a-1", "add JWT support")  # starts the hook server
        wait_for("the replica of the claims", lambda: a.claims(own.url).read("acme/shop")[1] is not None)
        own.stop()

        started = time.monotonic()
        assert a.edit("a-1", "shop/tokens.py", VALIDATE) == ""
        assert time.monotonic() - started < SEEN_WAIT_S / 4  # answered from disk, not after a network wait
        outbox = Path(path_for(str(a.home), own.url).removesuffix(".db") + ".outbox")
        assert [json.loads(p.read_text())["op"] for p in outbox.glob("*.json")] == ["team"]

        own = start_server(database_url, tmp_path / "server.log", port=port)
        wait_for("the outbox sent", lambda: not list(outbox.glob("*.json")))
        client = Client(Endpoint(own.url), team[1].token)
        claims = RemoteTeam(client).active_claims("acme/shop")
        client.close()
        assert [(s, who, intent.title) for s, intent, who in claims] == [
            ("shop/tokens.py::validate_token", "dev-a", "add JWT support")
        ]
    finally:
        a.cli("hook-server", "stop")
        own.stop()


def test_a_failure_on_one_machine_is_told_before_an_edit_and_in_a_failing_run_on_another_until_resolved(
    server: Server, c_and_d: tuple[Machine, Machine]
) -> None:
    c, d = c_and_d
    d.prompt("d-0", "look around")  # starts dev-d's hook server, which keeps the replica
    wait_for("dev-d's replica", lambda: d.claims(server.url).read("acme/shop")[1] is not None)

    # dev-c changes refresh_session and the test run fails test_refresh_session.
    c.prompt("c-1", "rotate refresh tokens")
    assert c.change("c-1", "shop/sessions.py", REFRESH, REFRESH + "[::-1]") == ""
    c.test_run("c-1", PYTEST_FAILURE, passed=False)

    def failure_in_d_replica(resolved: bool) -> bool:
        found = d.failures(server.url).read("acme/shop")
        return any(f.attempt.developer == "dev-c" and (f.fix is not None) == resolved for f in found)

    wait_for("dev-c's failure in dev-d's replica", lambda: failure_in_d_replica(False))

    # dev-d, on another machine, is told before editing refresh_session: what failed, by whom, when.
    d.prompt("d-1", "make sessions last longer")
    said = d.edit("d-1", "shop/sessions.py", REFRESH)
    (line,) = [line for line in said.splitlines() if "failed here before" in line]
    assert f"`{TEST_COMMAND}` — tests/test_tokens.py::test_refresh_session, not resolved yet" in line
    assert "(dev-c, today at " in line and 'in "rotate refresh tokens")' in line
    assert "refresh_session is being changed by dev-c" in said  # and the claim, from the same replica
    assert "failed here before" not in d.edit("d-1", "shop/sessions.py", REFRESH)  # once per session

    # dev-d's own run fails the same test: the failure hook says a teammate hit it.
    heard = d.test_run("d-1", PYTEST_FAILURE, passed=False)
    assert "a teammate hit this: tests/test_tokens.py::test_refresh_session failed for dev-c today at" in heard
    assert "not resolved yet, dev-c may know more" in heard

    # dev-c's next change passes: it resolves the failure, and dev-d hears what fixed it.
    c.change("c-1", "shop/sessions.py", REFRESH + "[::-1]", REFRESH)  # reminded of its own failure, from team.db
    assert c.test_run("c-1", PYTEST_PASS, passed=True) == ""
    wait_for("the fix in dev-d's replica", lambda: failure_in_d_replica(True))
    said = d.edit("d-2", "shop/sessions.py", REFRESH)
    (line,) = [line for line in said.splitlines() if "failed here before" in line]
    assert "test_refresh_session, resolved later (dev-c, today at " in line
    assert f"what fixed it: dev-c's passing `{TEST_COMMAND}` today at " in line
    assert line.endswith(", changing refresh_session")


@pytest.fixture
def own_server(database_url: str, tmp_path: Path) -> Iterator[Server]:
    """A replica of its own, so that its log holds only this test's requests (the session's server also
    answers the hook servers of other tests of this worker)."""
    running = start_server(database_url, tmp_path / "own-server.log")
    yield running
    running.stop()


@pytest.fixture
def own_machines(
    tmp_path: Path, own_server: Server, team: tuple[Account, Account]
) -> Iterator[tuple[Machine, Machine]]:
    yield from _machines(tmp_path, own_server, team, ("dev-a", "dev-b"))


def test_an_idle_hook_server_keeps_its_replica_fresh_with_a_request_the_server_holds_not_a_poll_a_second(
    own_server: Server, own_machines: tuple[Machine, Machine]
) -> None:
    server = own_server
    a, _ = own_machines
    a.prompt("a-0", "look around")  # starts dev-a's hook server
    wait_for("dev-a's replica", lambda: a.claims(server.url).read("acme/shop")[1] is not None)
    time.sleep(1.0)  # its first answer is whole; the next ones are asked with its ETag
    offset = server.log.stat().st_size
    time.sleep(9.0)
    with server.log.open() as log:
        log.seek(offset)
        asked = [json.loads(line) for line in log if '"/v1/team/replica"' in line]
    # Nothing changed: each request is held about 4 s and answered 304 (a poll a second made 9).
    assert 1 <= len(asked) <= 3, asked
    assert all(r["status"] == 304 and r["ms"] > 3000 for r in asked), asked
    _, synced = a.claims(server.url).read("acme/shop")
    assert synced is not None and time.time() - synced < REPLICA_STALE_S  # a 304 is an answer: still fresh
    doctor = a.cli("doctor", "--json")
    assert doctor.returncode == 0, doctor.stderr
    shown = json.loads(doctor.stdout)["team_claims"]
    assert (shown["claims"], shown["failures"]) == (0, 0)
    assert shown["synced_seconds_ago"] is not None and shown["synced_seconds_ago"] < REPLICA_STALE_S


def test_context_symbol_and_mcp_code_history_on_another_machine_include_the_teams_failed_attempts(
    server: Server, c_and_d: tuple[Machine, Machine], tmp_path: Path
) -> None:
    """dev-c's failing run on refresh_session reaches the team server; dev-d, on another machine with no hook
    server of its own (so no replica), asks for that code's history: `context --symbol` and the MCP tool
    `code_history` both ask the server, and say what failed, for whom and when."""
    c, d = c_and_d
    d.hook_server = "off"
    c.prompt("c-1", "rotate refresh tokens")
    assert c.change("c-1", "shop/sessions.py", REFRESH, REFRESH + "[::-1]") == ""
    c.test_run("c-1", PYTEST_FAILURE, passed=False)

    def context() -> str:
        done = d.cli("context", "--symbol", "refresh_session")
        assert done.returncode == 0, done.stderr
        return done.stdout

    wait_for("dev-c's claim in dev-d's context", lambda: "being changed by dev-c" in context())
    wait_for("dev-c's failed attempt in dev-d's context", lambda: "failed here before" in context())
    (line,) = [line for line in context().splitlines() if "failed here before" in line]
    assert f"`{TEST_COMMAND}` — tests/test_tokens.py::test_refresh_session, not resolved yet (dev-c, " in line

    async def code_history() -> dict:
        async with mcp_session(d.home, d.repo, tmp_path / "mcp.log") as session:
            return await call(session, "code_history", symbols=["refresh_session"])

    found = anyio.run(code_history)
    (history,) = found["history"]
    assert [(a["developer"], a["failed"]) for a in history["failed"]] == [
        ("dev-c", ["tests/test_tokens.py::test_refresh_session"])
    ]
