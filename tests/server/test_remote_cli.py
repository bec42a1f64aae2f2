"""`hivelore remote`, `org` and `token`, run as a user runs them, against a live server on loopback."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from conftest import Account, Server, free_port, unique
from harness import make_repo


def hivelore(home: Path, cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("HIVELORE_")}
    environment.update({"HIVELORE_HOME": str(home), "HIVELORE_HOOK_SERVER": "off", **env})
    return subprocess.run(
        [sys.executable, "-m", "hivelore", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )


def one_sentence(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hivelore: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_an_owner_invites_a_teammate_who_joins_from_the_terminal_and_keeps_the_token(
    server: Server, make_user: Callable[..., Account], tmp_path: Path
) -> None:
    alice = make_user("alice")
    as_alice = {"HIVELORE_ENDPOINT": server.url, "HIVELORE_TOKEN": alice.token}
    org = unique("shop")
    assert hivelore(tmp_path / "a", tmp_path, "org", "create", org, **as_alice).returncode == 0
    shared = hivelore(tmp_path / "a", tmp_path, "org", "share", org, "repo::acme/checkout", **as_alice)
    assert shared.stdout.strip() == f"repo::acme/checkout is shared by {org}"
    dana = unique("dana")
    invited = hivelore(tmp_path / "a", tmp_path, "org", "invite", org, f"{dana}@example.com", **as_alice)
    invitation = invited.stdout.strip()
    assert invitation.startswith("hl_inv_") and "\n" not in invitation, invited.stdout

    dana_home = tmp_path / "d"
    joined = hivelore(dana_home, tmp_path, "org", "join", invitation, "--name", dana, HIVELORE_ENDPOINT=server.url)
    assert joined.stdout.strip() == f"joined {org} as member ({dana})", joined.stderr
    kept = dana_home / "credentials.json"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert json.loads(kept.read_text())["tokens"][server.url].startswith("hl_rw_")

    listed = hivelore(dana_home, tmp_path, "org", "list", "--json", HIVELORE_ENDPOINT=server.url)
    assert json.loads(listed.stdout) == [{"org": org, "role": "member"}]
    shown = json.loads(hivelore(tmp_path / "a", tmp_path, "org", "show", org, "--json", **as_alice).stdout)
    assert shown["scopes"] == ["repo::acme/checkout"]
    assert sorted(m["user"] for m in shown["members"]) == sorted([alice.name, dana])

    refused = hivelore(dana_home, tmp_path, "org", "share", org, "project::x", HIVELORE_ENDPOINT=server.url)
    assert refused.returncode == 2
    assert one_sentence(refused.stderr) == f"hivelore: this needs the role admin in {org}; you are member."


def test_a_ci_token_is_made_listed_and_revoked(
    server: Server, make_user: Callable[..., Account], tmp_path: Path
) -> None:
    user = make_user("ci")
    env = {"HIVELORE_ENDPOINT": server.url, "HIVELORE_TOKEN": user.token}
    made = hivelore(
        tmp_path, tmp_path, "token", "create", "--kind", "ro", "--name", "ci", "--scope", "repo::acme/*", **env
    )
    token = made.stdout.strip()
    assert token.startswith("hl_ro_") and "shown this once" in made.stderr
    listed = json.loads(hivelore(tmp_path, tmp_path, "token", "list", "--json", **env).stdout)
    ci = next(t for t in listed if t["name"] == "ci")
    assert ci["scopes"] == ["repo::acme/*"] and "token" not in ci

    as_ci = {"HIVELORE_ENDPOINT": server.url, "HIVELORE_TOKEN": token}
    cannot = hivelore(tmp_path, tmp_path, "org", "create", unique("x"), **as_ci)
    assert cannot.returncode == 2 and "needs an hl_rw_ token" in one_sentence(cannot.stderr)
    assert hivelore(tmp_path, tmp_path, "token", "revoke", str(ci["id"]), **env).returncode == 0
    gone = hivelore(tmp_path, tmp_path, "remote", "status", **as_ci)
    assert gone.returncode == 2 and "revoked" in one_sentence(gone.stderr)


def test_a_repository_that_names_a_server_gets_no_token_until_the_user_trusts_its_host(
    server: Server, make_user: Callable[..., Account], tmp_path: Path
) -> None:
    user, home = make_user("bob"), tmp_path / "home"
    repo = make_repo(tmp_path / "repo")
    (repo / ".hivelore.json").write_text(json.dumps({"endpoint": server.url}))

    status = hivelore(home, repo, "remote", "status", "--json", HIVELORE_TOKEN=user.token)
    report = json.loads(status.stdout)
    assert report["approved"] is False and "me" not in report
    assert "hivelore remote trust 127.0.0.1" in report["withheld"]
    refused = hivelore(home, repo, "org", "list", HIVELORE_TOKEN=user.token)
    assert refused.returncode == 2 and "which you have not approved" in one_sentence(refused.stderr)
    doctor = json.loads(hivelore(home, repo, "doctor", "--json", HIVELORE_TOKEN=user.token).stdout)["team_server"]
    assert doctor["endpoint"] == server.url and doctor["decided_by"] == str(repo / ".hivelore.json")
    assert doctor["withheld"] == report["withheld"]

    assert hivelore(home, repo, "remote", "trust", "127.0.0.1").returncode == 0
    trusted = json.loads(hivelore(home, repo, "remote", "status", "--json", HIVELORE_TOKEN=user.token).stdout)
    assert trusted["approved"] is True and trusted["me"]["user"] == user.name


def test_a_repository_file_holding_a_token_is_refused(server: Server, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / ".hivelore.json").write_text(json.dumps({"endpoint": server.url, "token": "hl_rw_" + "x" * 43}))
    refused = hivelore(tmp_path / "home", repo, "remote", "status")
    assert refused.returncode == 2 and "holds a token" in one_sentence(refused.stderr)


@pytest.mark.parametrize(
    ("endpoint", "said"),
    [
        ("http://hivelore.example.com", "plain http to another machine"),
        ("ftp://hivelore.example.com", "is not a server address"),
        ("https://user:pw@hivelore.example.com", "password"),
    ],
)
def test_an_address_that_would_leak_the_token_is_refused(tmp_path: Path, endpoint: str, said: str) -> None:
    refused = hivelore(tmp_path, tmp_path, "org", "list", "--endpoint", endpoint, HIVELORE_TOKEN="hl_rw_" + "x" * 43)
    assert refused.returncode == 2 and said in one_sentence(refused.stderr)


def test_a_server_that_is_down_is_one_sentence_soon(tmp_path: Path) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    refused = hivelore(tmp_path, tmp_path, "org", "list", "--endpoint", down, HIVELORE_TOKEN="hl_rw_" + "x" * 43)
    assert refused.returncode == 1
    assert f"the team server at {down} cannot be reached" in one_sentence(refused.stderr)


def test_an_owner_runs_the_org_from_login_to_delete(
    server: Server, make_user: Callable[..., Account], db: psycopg.Connection, tmp_path: Path
) -> None:
    owner, bob = make_user("owner"), make_user("bob")
    home, org, env = tmp_path / "o", unique("shop"), {"HIVELORE_ENDPOINT": server.url}
    logged = subprocess.run(
        [sys.executable, "-m", "hivelore", "remote", "login", "--token", "-"],
        input=owner.token + "\n",
        env={**os.environ, "HIVELORE_HOME": str(home), "HIVELORE_HOOK_SERVER": "off", **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert logged.stdout.strip() == f"logged in to {server.url} as {owner.name}", logged.stderr
    assert hivelore(home, tmp_path, "org", "create", org, **env).returncode == 0
    bob_in = hivelore(home, tmp_path, "org", "invite", org, f"{bob.name}@example.com", **env).stdout.strip()
    db.execute("UPDATE users SET email = %s WHERE id = %s", (f"{bob.name}@example.com", bob.id))
    joined = hivelore(tmp_path / "b", tmp_path, "org", "join", bob_in, HIVELORE_TOKEN=bob.token, **env)
    assert joined.stdout.strip() == f"joined {org} as member ({bob.name})", joined.stderr

    steps = [
        (["org", "role", org, bob.name, "admin"], f"{bob.name} is admin in {org}"),
        (["org", "share", org, "project::shop"], f"project::shop is shared by {org}"),
        (["org", "unshare", org, "project::shop"], f"project::shop is no longer shared by {org}"),
        (["org", "remove", org, bob.name], f"{bob.name} is no longer in {org}"),
        (["org", "rename", org, f"{org}-2"], f"{org} is now {org}-2"),
    ]
    for args, said in steps:
        done = hivelore(home, tmp_path, *args, **env)
        assert done.stdout.strip() == said, done.stderr
    refused = hivelore(home, tmp_path, "org", "delete", f"{org}-2", **env)
    assert refused.returncode == 2 and "add --yes" in one_sentence(refused.stderr)
    assert hivelore(home, tmp_path, "org", "delete", f"{org}-2", "--yes", **env).stdout.strip() == f"deleted {org}-2"
    assert json.loads(hivelore(home, tmp_path, "org", "list", "--json", **env).stdout) == []


def test_logout_removes_the_kept_token_and_untrust_takes_an_approval_back(
    server: Server, make_user: Callable[..., Account], tmp_path: Path
) -> None:
    user, home = make_user("leaver"), tmp_path / "home"
    repo = make_repo(tmp_path / "repo")
    (repo / ".hivelore.json").write_text(json.dumps({"endpoint": server.url}))
    other = "https://hivelore.example.com"
    assert hivelore(home, repo, "remote", "trust", "127.0.0.1").returncode == 0
    assert hivelore(home, repo, "remote", "trust", "hivelore.example.com").returncode == 0
    assert hivelore(home, repo, "remote", "trust").stdout.splitlines() == ["127.0.0.1", "hivelore.example.com"]
    credentials = home / "credentials.json"
    kept = json.loads(credentials.read_text())
    kept["tokens"] = {other: "hl_rw_" + "y" * 43}
    credentials.write_text(json.dumps(kept))
    logged = subprocess.run(
        [sys.executable, "-m", "hivelore", "remote", "login", "--token", "-"],
        input=user.token + "\n",
        env={**os.environ, "HIVELORE_HOME": str(home), "HIVELORE_HOOK_SERVER": "off"},
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert logged.returncode == 0, logged.stderr
    assert json.loads(hivelore(home, repo, "remote", "status", "--json").stdout)["me"]["user"] == user.name

    out = hivelore(home, repo, "remote", "logout")  # the server this folder names
    assert out.stdout.strip() == f"logged out of {server.url}: its token is no longer kept here", out.stderr
    assert json.loads(credentials.read_text())["tokens"] == {other: "hl_rw_" + "y" * 43}
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
    assert "none: set HIVELORE_TOKEN" in json.loads(hivelore(home, repo, "remote", "status", "--json").stdout)["token"]
    again = hivelore(home, repo, "remote", "logout")
    assert again.returncode == 2 and f"no token is kept for {server.url}" in one_sentence(again.stderr)
    assert hivelore(home, repo, "remote", "logout", "hivelore.example.com").returncode == 0
    assert json.loads(credentials.read_text())["tokens"] == {}

    gone = hivelore(home, repo, "remote", "untrust", "127.0.0.1")
    assert gone.stdout.strip() == "127.0.0.1 is no longer approved: repositories that name it get no token"
    assert hivelore(home, repo, "remote", "trust").stdout.splitlines() == ["hivelore.example.com"]
    report = json.loads(hivelore(home, repo, "remote", "status", "--json", HIVELORE_TOKEN=user.token).stdout)
    assert report["approved"] is False and "me" not in report
    unknown = hivelore(home, repo, "remote", "untrust", "127.0.0.1")
    assert unknown.returncode == 2 and "is not an approved host" in one_sentence(unknown.stderr)
