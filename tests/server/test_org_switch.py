"""An organisation switches memory off for a repository (orgswitch.py, migration 0009).

On the server: while it is off, nothing under the repository (or a branch of it) is stored or served
for the organisation's members, and a write says which organisation switched it off and who can
switch it back. On a member's machine: after the next sync, a checkout of that repository is off as
`"mode": "off"` makes it — every hook (a real hook process, with the hook server) answers nothing and
stores nothing, the CLI says so in one line, doctor names the switch — and on again once it is
switched back on."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from conftest import Account, Server, unique
from harness import KEY, LESSON, REPO, claude_prompt, failing_tests, make_repo, session_start
from test_remote_mode import hivelore, hook

from hivelore.server.postgres import accounts, migrate

BRANCH = "branch::acme/checkout::main"
SYNC_WAIT_S = 20.0


@pytest.fixture
def team(db: psycopg.Connection, make_user: Callable[..., Account]) -> tuple[str, Account, Account]:
    """An org sharing repo::acme/checkout: its owner (the admin here) and a member."""
    admin, member = make_user("admin"), make_user("member")
    org = unique("acme")
    accounts.create_org(db, org, admin.id)
    org_id, _ = accounts.role_in(db, org, admin.id)
    db.execute("INSERT INTO members (org_id, user_id, role) VALUES (%s, %s, 'member')", (org_id, member.id))
    accounts.bind_scope(db, org_id, REPO, admin.id)
    return org, admin, member


def _write(api: httpx.Client, who: Account, scope: str, key: str = KEY, value: str = LESSON) -> httpx.Response:
    return api.post("/v1/memories", headers=who.headers(), json={"scope": scope, "key": key, "value": value})


def test_while_a_repository_is_off_the_server_keeps_and_serves_nothing_of_it_for_the_orgs_members(
    api: httpx.Client, team: tuple[str, Account, Account], make_user: Callable[..., Account]
) -> None:
    org, admin, member = team
    stranger = make_user("stranger")
    assert _write(api, member, REPO).status_code == 200
    assert _write(api, member, "global", "editor", "the member uses vim").status_code == 200
    bad = api.put(f"/v1/orgs/{org}/switches/project::shop", headers=admin.headers())
    assert bad.status_code == 400 and "is not a repository's scope" in bad.json()["error"]
    assert api.put(f"/v1/orgs/{org}/switches/{REPO}", headers=admin.headers()).status_code == 204
    listed = api.get(f"/v1/orgs/{org}/switches", headers=member.headers()).json()
    assert [(s["org"], s["scope"], s["by"]) for s in listed] == [(org, REPO, admin.name)]

    for who, scope in ((member, REPO), (member, BRANCH), (admin, REPO)):
        refused = _write(api, who, scope, "new", "a new lesson")
        assert refused.status_code == 403, refused.text
        sentence = refused.json()["error"]
        assert f"the organisation {org} switched memory off for {REPO} ({admin.name}," in sentence
        assert (
            f"an admin or owner of {org} can switch it back on with `hivelore org switch-on {org} {REPO}`" in sentence
        )
    address = {"scope": REPO, "key": KEY}
    for path in ("/v1/memories/archive", "/v1/memories/forget"):
        assert api.post(path, headers=member.headers(), json=address).status_code == 403
    imported = api.post("/v1/memories/import", headers=member.headers(), json={"records": [{**address, "value": "x"}]})
    assert imported.status_code == 200 and "switched memory off" in imported.json()["rejected"][0]
    assert api.get("/v1/memories/read", headers=member.headers(), params=address).status_code == 403
    searched = api.get("/v1/memories/search", headers=member.headers(), params={"q": "postgres", "scope": REPO})
    assert searched.json()["hits"] == []
    context = api.get("/v1/memories/context", headers=member.headers(), params={"scope": [BRANCH, REPO, "global"]})
    assert [s["memory"]["key"] for s in context.json()["shown"]] == ["editor"]
    changes = api.get("/v1/memories/changes", headers=member.headers()).json()
    assert [m["memory"]["key"] for m in changes["memories"]] == ["editor"]
    assert [(s["org"], s["scope"]) for s in changes["switched_off"]] == [(org, REPO)]
    # Not the org's to govern: a stranger's own memory under the repository.
    assert _write(api, stranger, REPO).json()["space"] == "personal"
    assert api.get("/v1/memories/changes", headers=stranger.headers()).json()["switched_off"] == []

    assert api.delete(f"/v1/orgs/{org}/switches/{REPO}", headers=admin.headers()).status_code == 204
    again = api.get("/v1/memories/changes", headers=member.headers(), params={"since": changes["cursor"]}).json()
    assert KEY in [m["memory"]["key"] for m in again["memories"]]  # sent again to the mirrors
    assert again["switched_off"] == []
    assert _write(api, member, REPO, "new", "a new lesson").status_code == 200
    gone = api.delete(f"/v1/orgs/{org}/switches/{REPO}", headers=admin.headers())
    assert gone.status_code == 404 and "is not switched off" in gone.json()["error"]


def _wait_for(what: str, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + SYNC_WAIT_S
    while not check():
        assert time.monotonic() < deadline, f"not seen within {SYNC_WAIT_S:g} s: {what}"
        time.sleep(0.2)


def _machine(tmp_path: Path, name: str, server: Server, who: Account) -> tuple[Path, Path]:
    home, repo = tmp_path / f"home-{name}", make_repo(tmp_path / f"repo-{name}")
    home.mkdir()
    (home / "config.json").write_text(json.dumps({"mode": "remote", "endpoint": server.url}))
    assert hivelore(home, repo, "remote", "login", "--token", "-", stdin=who.token).returncode == 0
    return home, repo


def _mirrored(home: Path) -> list[str]:
    (mirror,) = (home / "remote").glob("*.db")
    with sqlite3.connect(mirror) as conn:
        return [row[0] for row in conn.execute("SELECT key FROM memories WHERE scope = ?", (REPO,))]


def _prompts(home: Path) -> list[str]:
    with sqlite3.connect(home / "events.db") as conn:
        return [row[0] for row in conn.execute("SELECT session_id FROM prompts ORDER BY rowid")]


@pytest.fixture
def machines(
    tmp_path: Path, server: Server, team: tuple[str, Account, Account]
) -> Iterator[tuple[tuple[Path, Path], tuple[Path, Path]]]:
    """The admin's machine and the member's, each with a clone of acme/checkout."""
    admin, member = _machine(tmp_path, "admin", server, team[1]), _machine(tmp_path, "member", server, team[2])
    yield admin, member
    for home, repo in (admin, member):
        hivelore(home, repo, "hook-server", "stop")


def test_an_org_switch_turns_a_members_checkout_off_after_its_next_sync_and_back_on(
    api: httpx.Client,
    team: tuple[str, Account, Account],
    machines: tuple[tuple[Path, Path], tuple[Path, Path]],
) -> None:
    org, admin, member = team
    (home_a, repo_a), (home_b, repo_b) = machines
    assert _write(api, admin, REPO).status_code == 200
    # The member has been working: their mirror is synced, their hook server follows the team server.
    assert hivelore(home_b, repo_b, "remote", "status").returncode == 0
    assert LESSON in hook(home_b, repo_b, *session_start("claude", repo_b, "on-1"))

    off = hivelore(home_a, repo_a, "org", "switch-off", org, REPO)
    assert off.returncode == 0, off.stderr
    _wait_for("the switch in the member's mirror", lambda: bool(list((home_b / "remote").glob("*.off.json"))))
    assert _mirrored(home_b) == []  # the mirror dropped what the server no longer serves

    answers = [
        hook(home_b, repo_b, *session_start("claude", repo_b, "off-1")),
        hook(home_b, repo_b, "UserPromptSubmit", claude_prompt(repo_b, "off-1", "why does the postgres test fail?")),
        hook(home_b, repo_b, *failing_tests("claude", repo_b, "off-1")),
    ]
    assert answers == ["", "", ""]
    assert "off-1" not in _prompts(home_b)
    line = f"hivelore is off in this repository (set by the organisation {org}'s switch for {REPO} on"
    written = hivelore(home_b, repo_b, "write", f"{REPO}::k", "v")
    assert written.returncode != 0 and written.stderr.startswith(f"hivelore: {line}")
    assert written.stderr.count("\n") == 1 and f"hivelore org switch-on {org} {REPO}" in written.stderr
    doctor = hivelore(home_b, repo_b, "doctor")
    assert doctor.returncode == 0 and line in doctor.stdout
    assert f"set by {admin.name} at" in doctor.stdout and "as of the last sync at" in doctor.stdout
    refused = _write(api, member, REPO, "new", "a new lesson")
    assert refused.status_code == 403 and f"the organisation {org} switched memory off" in refused.json()["error"]

    on = hivelore(home_a, repo_a, "org", "switch-on", org, REPO)
    assert on.returncode == 0, on.stderr
    _wait_for("the switch gone from the member's mirror", lambda: not list((home_b / "remote").glob("*.off.json")))
    _wait_for("the lesson back in the member's mirror", lambda: _mirrored(home_b) == [KEY])
    assert LESSON in hook(home_b, repo_b, *session_start("claude", repo_b, "on-2"))
    hook(home_b, repo_b, "UserPromptSubmit", claude_prompt(repo_b, "on-2", "why does the postgres test fail?"))
    assert "on-2" in _prompts(home_b)
    assert _write(api, member, REPO, "new", "a new lesson").status_code == 200

    audit = hivelore(home_a, repo_a, "org", "audit", org)
    assert audit.returncode == 0, audit.stderr
    actions = [line.split()[1:3] for line in audit.stdout.splitlines()]
    assert actions[:2] == [[admin.name, "switch-on"], [admin.name, "switch-off"]]


def test_a_database_that_has_a_later_migration_but_not_0009_gets_it_on_start(db: psycopg.Connection) -> None:
    """0010 (the dashboard's sessions) shipped before this branch's 0009: a database migrated then
    must still get 0009 when a server of this version starts."""
    with db.transaction():
        db.execute("DROP TABLE repo_switches")
        db.execute("DELETE FROM schema_migrations WHERE version = 9")
    assert migrate.missing(db) == [9]  # what /readyz refuses on, though a later version is there
    assert [m.version for m in migrate.migrate(db)] == [9]
    assert migrate.missing(db) == []
    assert db.execute("SELECT to_regclass('repo_switches') IS NOT NULL").fetchone() == (True,)
    assert migrate.migrate(db) == []
