"""Remote mode, as two developers' machines live it: two HIVELORE_HOMEs, two clones of one repository,
one team server on loopback. A lesson written on one machine under a scope the team shares reaches
the other machine's next session start (a real hook process, answered from the mirror the hook server
keeps current) and its failure hook; a write made while the server is away waits in the outbox and
lands once when it is back."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from conftest import Account, Server, free_port, org_sharing, start_server
from harness import ADDRESS, KEY, LESSON, REPO, SEEN, failing_tests, make_repo, mcp_session, session_start

pytestmark = pytest.mark.anyio

BRANCH = "branch::acme/checkout::main"
SYNC_WAIT_S = 20.0


def machine(tmp_path: Path, name: str, server: Server, who: Account) -> tuple[Path, Path]:
    """A developer's machine: a home in remote mode, logged in, and a clone of acme/checkout."""
    home, repo = tmp_path / f"home-{name}", make_repo(tmp_path / f"repo-{name}")
    home.mkdir()
    (home / "config.json").write_text(json.dumps({"mode": "remote", "endpoint": server.url}))
    login = hivelore(home, repo, "remote", "login", "--token", "-", stdin=who.token)
    assert login.returncode == 0, login.stderr
    return home, repo


def environment(home: Path, hook_server: bool = False) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVELORE_")}
    return {**env, "HIVELORE_HOME": str(home), "HIVELORE_HOOK_SERVER": "on" if hook_server else "off"}


def hivelore(home: Path, repo: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hivelore", *args], input=stdin, cwd=repo, env=environment(home),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def hook(home: Path, repo: Path, event: str, payload: dict) -> str:
    """A Claude hook process as Claude Code runs it, with the hook server on; what Claude is told."""
    result = subprocess.run(
        [sys.executable, "-m", "hivelore", "hook", "--agent", "claude", "--event", event],
        input=json.dumps(payload), cwd=repo, env=environment(home, hook_server=True),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"] if result.stdout else ""


def mirrored(home: Path, key: str) -> bool:
    for path in (home / "remote").glob("*.db"):
        with sqlite3.connect(path) as conn:
            if conn.execute("SELECT 1 FROM memories WHERE key = ? AND pending = 0", (key,)).fetchone():
                return True
    return False


@pytest.fixture
def team(db: psycopg.Connection, make_user: Callable[..., Account]) -> tuple[Account, Account]:
    """Two developers of one org that shares repo::acme/checkout."""
    a, b = make_user("dev-a"), make_user("dev-b")
    org_sharing(db, REPO, a, b)
    return a, b


async def test_a_lesson_written_on_one_machine_reaches_a_teammates_next_session_and_failure(
    server: Server, team: tuple[Account, Account], tmp_path: Path
) -> None:
    home_a, repo_a = machine(tmp_path, "a", server, team[0])
    home_b, repo_b = machine(tmp_path, "b", server, team[1])
    # B has been working: an earlier session started the hook server, which follows the team server.
    assert hook(home_b, repo_b, *session_start("claude", repo_b, "b-0")).startswith("hivelore: no memories yet")

    # A hits the failure, is nudged, and the agent writes the lesson over MCP: it goes to the team server.
    assert hook(home_a, repo_a, *session_start("claude", repo_a, "a-1")).startswith("hivelore: no memories yet")
    nudge = hook(home_a, repo_a, *failing_tests("claude", repo_a, "a-1"))
    assert "memory_write" in nudge and f"scope '{REPO}'" in nudge
    async with mcp_session(home_a, repo_a, tmp_path / "mcp-a.log") as session:
        result = await session.call_tool("memory_write", {"scope": REPO, "key": KEY, "value": LESSON})
        assert not result.is_error, result.content
        assert result.structured_content["tier"].startswith("org:")
    assert not list(home_a.glob("repo/**/*.md")), "a shared lesson is the team's, not a file on A's machine"

    deadline = time.monotonic() + SYNC_WAIT_S
    while not mirrored(home_b, KEY):
        assert time.monotonic() < deadline, "B's hook server did not bring the lesson over"
        time.sleep(0.2)

    context = hook(home_b, repo_b, *session_start("claude", repo_b, "b-1"))
    header, *lines = context.splitlines()
    assert header == f"1 of 1 memories · {BRANCH} — considerations, not rules; read any in full with memory_read"
    assert lines == [f"- {ADDRESS} [lesson]: {LESSON}", "left out: nothing"]
    again = hook(home_b, repo_b, *failing_tests("claude", repo_b, "b-1"))
    assert again.splitlines()[0].startswith(f"hivelore: {SEEN}")
    assert f"- {ADDRESS} [lesson]: {LESSON}" in again.splitlines()


def test_a_write_made_while_the_server_is_away_waits_in_the_outbox_and_lands_once(
    database_url: str, team: tuple[Account, Account], tmp_path: Path
) -> None:
    port = free_port()
    server = start_server(database_url, tmp_path / "server.log", port=port)
    try:
        home_a, repo_a = machine(tmp_path, "a", server, team[0])
        home_b, repo_b = machine(tmp_path, "b", server, team[1])
        assert (
            hivelore(home_a, repo_a, "remote", "status").returncode == 0
        )  # A has synced once: it knows what is shared
        server.stop()
        written = hivelore(home_a, repo_a, "write", ADDRESS, LESSON)
        assert written.returncode == 0, written.stderr
        assert "waits in the outbox" in written.stderr
        status = hivelore(home_a, repo_a, "remote", "status", "--json")
        assert json.loads(status.stdout)["outbox"]["waiting"] == 1
        # Read on A meanwhile: the lesson is there, pending.
        assert KEY in hivelore(home_a, repo_a, "search", "ECONNREFUSED").stdout

        server = start_server(database_url, tmp_path / "server.log", port=port)
        listed = hivelore(home_a, repo_a, "remote", "status", "--json")
        assert json.loads(listed.stdout)["outbox"]["waiting"] == 0, listed.stdout
        found = json.loads(hivelore(home_b, repo_b, "read", ADDRESS, "--json").stdout)
        assert found["value"] == LESSON and found["seen_count"] == 1
    finally:
        server.stop()


def test_an_import_in_remote_mode_refuses_a_shared_record_before_writing_anything(
    server: Server, team: tuple[Account, Account], tmp_path: Path
) -> None:
    """A shared scope's record cannot be imported through the tier (the server's import is `migrate
    --to remote`'s): the file is refused whole and nothing is written, or with --skip-invalid the
    rest lands and the shared record is listed as rejected."""
    home, repo = machine(tmp_path, "a", server, team[0])
    assert hivelore(home, repo, "remote", "status").returncode == 0  # synced once: it knows what is shared
    records = [
        {"scope": "global", "key": "local-lesson", "value": "a lesson of this machine only"},
        {"scope": REPO, "key": "shared-lesson", "value": "a lesson of the team's repository"},
    ]
    (repo / "lessons.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))

    refused = hivelore(home, repo, "import", "lessons.jsonl")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "lessons.jsonl:2: an import goes to this machine's tiers" in refused.stderr
    assert "nothing was imported" in refused.stderr
    assert hivelore(home, repo, "read", "global::local-lesson").returncode == 1, "nothing was written"

    skipped = hivelore(home, repo, "import", "lessons.jsonl", "--skip-invalid")
    assert skipped.returncode == 0, skipped.stderr
    assert "rejected 1" in skipped.stdout
    assert hivelore(home, repo, "read", "global::local-lesson").returncode == 0
    assert hivelore(home, repo, "read", f"{REPO}::shared-lesson").returncode == 1
