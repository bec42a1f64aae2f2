"""The MCP tools an agent asks about the team (`remote_status`, `org_scopes`), through a real MCP client
against `python -m hivelore mcp`, in a home in remote mode logged in to a real `hivelore serve`; and the
same while that server is stopped, and in local mode. They answer what `hivelore remote status` says:
one library (remote/status.py) under both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from conftest import Account, Server, free_port, start_server, unique
from harness import REPO, call, make_repo, mcp_session

from hivelore.server.postgres import accounts

pytestmark = pytest.mark.anyio

BRANCH = "branch::acme/checkout::main"


def machine(tmp_path: Path, server: Server, who: Account) -> tuple[Path, Path]:
    """A developer's home in remote mode, logged in to `server`, and a clone of acme/checkout."""
    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    home.mkdir()
    (home / "config.json").write_text(json.dumps({"mode": "remote", "endpoint": server.url}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVELORE_")}
    login = subprocess.run(
        [sys.executable, "-m", "hivelore", "remote", "login", "--token", "-"], input=who.token, cwd=repo,
        env={**env, "HIVELORE_HOME": str(home)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert login.returncode == 0, login.stderr
    return home, repo


@pytest.fixture
def member(db: psycopg.Connection, make_user: Callable[..., Account]) -> tuple[Account, str]:
    """A user who owns an org that shares repo::acme/checkout; the org's name."""
    who = make_user("dev")
    org = unique("acme")
    accounts.create_org(db, org, who.id)
    org_id, _ = accounts.role_in(db, org, who.id)
    accounts.bind_scope(db, org_id, REPO, who.id)
    return who, org


async def test_an_agent_learns_the_team_server_and_which_scopes_of_its_folder_the_org_shares(
    server: Server, member: tuple[Account, str], tmp_path: Path
) -> None:
    who, org = member
    home, repo = machine(tmp_path, server, who)
    async with mcp_session(home, repo, tmp_path / "mcp.log") as session:
        status = await call(session, "remote_status")
        scopes = await call(session, "org_scopes")
    assert status["mode"] == "remote" and status["endpoint"] == server.url
    assert status["token"].endswith("credentials.json") and status["withheld"] is None
    assert status["reachable"] and status["unreachable"] is None and status["problem"] is None
    assert status["user"] == who.name and status["orgs"] == {org: "owner"}
    assert status["mirror_synced_seconds_ago"] is not None and status["mirror_synced_seconds_ago"] < 10
    assert (status["outbox_waiting"], status["outbox_rejected"], status["mirror_pending"]) == (0, [], 0)
    assert scopes["orgs"] == {org: [REPO]} and scopes["roles"] == {org: "owner"}
    # The branch follows its repository's sharing; project:: and global are not shared.
    assert scopes["shared_here"] == {BRANCH: org, REPO: org}
    assert scopes["warnings"] == []


async def test_with_the_server_stopped_they_say_so_and_answer_from_the_mirror(
    database_url: str, member: tuple[Account, str], tmp_path: Path
) -> None:
    who, org = member
    server = start_server(database_url, tmp_path / "server.log", port=free_port())
    try:
        home, repo = machine(tmp_path, server, who)
        async with mcp_session(home, repo, tmp_path / "mcp-up.log") as session:
            assert (await call(session, "remote_status"))["reachable"]  # the mirror is synced once
    finally:
        server.stop()
    async with mcp_session(home, repo, tmp_path / "mcp-down.log") as session:
        status = await call(session, "remote_status")
        scopes = await call(session, "org_scopes")
    assert not status["reachable"] and "cannot be reached" in status["unreachable"]
    assert status["problem"] == status["unreachable"] and status["user"] is None
    assert status["mirror_synced_seconds_ago"] is not None  # what reads show, and how old it is
    assert scopes["orgs"] == {org: [REPO]} and scopes["shared_here"] == {BRANCH: org, REPO: org}
    assert scopes["roles"] == {} and scopes["warnings"] == [status["unreachable"]]


async def test_in_local_mode_they_say_no_team_server_is_named(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    home.mkdir()
    async with mcp_session(home, repo, tmp_path / "mcp.log") as session:
        status = await call(session, "remote_status")
        scopes = await call(session, "org_scopes")
    assert status["mode"] == "local" and status["endpoint"] is None and not status["reachable"]
    assert "no team server is named" in status["problem"]
    assert scopes["orgs"] == {} and scopes["shared_here"] == {}
    assert "no team server is named" in scopes["warnings"][0]
