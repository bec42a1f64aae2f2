"""Hooks in remote mode while the team server goes away and comes back: real hook processes answered
by the resident hook server, a real `hivelore serve` stopped under them. A hook answers from the
mirror at once, and says in the hook log when that mirror is stale; `hivelore hook-server status`
(what `doctor` shows) says since when the mirrors are not synced and why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from conftest import Account, free_port, start_server, unique
from harness import ADDRESS, KEY, LESSON, REPO, make_repo, session_start

from hivelore.remote.tier import STALE_S
from hivelore.server.postgres import accounts

HOOK_WAIT_S = 5.0  # far above what a hook answered from the mirror takes, far below a network wait
SYNC_WAIT_S = 20.0


def environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVELORE_")}
    return {**env, "HIVELORE_HOME": str(home), "HIVELORE_HOOK_SERVER": "on"}


def hivelore(home: Path, repo: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hivelore", *args], input=stdin, cwd=repo, env=environment(home),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def hook(home: Path, repo: Path, session: str) -> tuple[float, str]:
    """A Claude session start as Claude Code runs it: (seconds, what Claude is told)."""
    event, payload = session_start("claude", repo, session)
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "hivelore", "hook", "--agent", "claude", "--event", event], input=json.dumps(payload),
        cwd=repo, env=environment(home), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0 and result.stderr == "", result.stderr
    said = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"] if result.stdout else ""
    return time.monotonic() - started, said


def wait_for(what: str, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + SYNC_WAIT_S
    while not check():
        assert time.monotonic() < deadline, f"not seen within {SYNC_WAIT_S:g} s: {what}"
        time.sleep(0.2)


@pytest.fixture
def member(db: psycopg.Connection, make_user: Callable[..., Account]) -> Account:
    """The owner of an org that shares repo::acme/checkout."""
    who = make_user("dev")
    org = unique("acme")
    accounts.create_org(db, org, who.id)
    org_id, _ = accounts.role_in(db, org, who.id)
    accounts.bind_scope(db, org_id, REPO, who.id)
    return who


@pytest.fixture
def machine(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    home.mkdir()
    yield home, repo
    hivelore(home, repo, "hook-server", "stop")


def test_hooks_answer_from_the_mirror_while_the_server_is_away_and_say_when_it_is_stale(
    database_url: str, member: Account, machine: tuple[Path, Path], tmp_path: Path
) -> None:
    home, repo = machine
    port = free_port()
    server = start_server(database_url, tmp_path / "server.log", port=port)
    try:
        stored = httpx.post(
            f"{server.url}/v1/memories", json={"scope": REPO, "key": KEY, "value": LESSON}, headers=member.headers()
        )
        assert stored.status_code == 200, stored.text
        (home / "config.json").write_text(json.dumps({"mode": "remote", "endpoint": server.url}))
        assert hivelore(home, repo, "remote", "login", "--token", "-", stdin=member.token).returncode == 0
        hook(home, repo, "s-0")  # answered in its own process; it starts the hook server
        wait_for("a synced mirror", lambda: "mirrors synced at" in hivelore(home, repo, "hook-server", "status").stdout)
    finally:
        server.stop()

    wait_for("the sync failing", lambda: "not synced since" in hivelore(home, repo, "hook-server", "status").stdout)
    state = hivelore(home, repo, "hook-server", "status").stdout
    assert "hooks answer from them as they are" in state and "cannot be reached" in state
    time.sleep(STALE_S)  # the mirror was synced before the server stopped: now it is older than STALE_S
    seconds, said = hook(home, repo, "s-1")
    assert seconds < HOOK_WAIT_S
    assert f"- {ADDRESS} [lesson]: {LESSON}" in said.splitlines()
    log = (home / "logs" / "hooks.log").read_text()
    assert "claude SessionStart: warning: answered from the team server's mirror, which was last synced" in log

    server = start_server(database_url, tmp_path / "server.log", port=port)
    try:
        wait_for("the sync again", lambda: "mirrors synced at" in hivelore(home, repo, "hook-server", "status").stdout)
        assert "the team server answers again" in (home / "logs" / "hooks.log").read_text()
    finally:
        server.stop()
