"""`hivelore migrate --to remote`, `list` side by side and `doctor`'s mirror, run as a user runs them:
the real CLI as a subprocess, a home in remote mode and a clone of acme/checkout, a live server on
loopback (its own, when the test needs a small quota or rate limit or stops it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psycopg
import pytest
from conftest import Account, Server, start_server, unique
from harness import REPO, make_repo

from hivelore.server.postgres import accounts

LONG_WORD = "x" * 2100  # this machine indexes it; PostgreSQL's words stop at 2,047 bytes


def hivelore(home: Path, repo: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVELORE_")}
    env.update({"HIVELORE_HOME": str(home), "HIVELORE_HOOK_SERVER": "off"})
    return subprocess.run(
        [sys.executable, "-m", "hivelore", *args], input=stdin, cwd=repo, env=env,
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, result.stderr
    return result


def machine(tmp_path: Path, server: Server, who: Account) -> tuple[Path, Path]:
    """A home in remote mode, logged in to `server`, and a clone of acme/checkout."""
    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    home.mkdir()
    log_in(home, repo, server, who)
    return home, repo


def log_in(home: Path, repo: Path, server: Server, who: Account) -> None:
    """Put `home` in remote mode, logged in to `server`."""
    (home / "config.json").write_text(json.dumps({"mode": "remote", "endpoint": server.url}))
    ok(hivelore(home, repo, "remote", "login", "--token", "-", stdin=who.token))


def local(home: Path, repo: Path, address: str, value: str, *extra: str) -> None:
    """A memory in the home tier of this machine (in remote mode a shared scope's write would go to the server)."""
    ok(hivelore(home, repo, "write", address, value, "--tier", "home", *extra))


def on_server(api: httpx.Client, who: Account, scope: str, key: str) -> dict | None:
    answer = api.get("/v1/memories/read", params={"scope": scope, "key": key}, headers=who.headers())
    return answer.json() if answer.status_code == 200 else None


def migrate(home: Path, repo: Path, *args: str) -> tuple[int, dict]:
    result = hivelore(home, repo, "migrate", "--to", "remote", "--json", *args)
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, json.loads(result.stdout)


@pytest.fixture
def member(db: psycopg.Connection, make_user: Callable[..., Account]) -> tuple[Account, str]:
    """A user of an organisation that shares repo::acme/checkout, and the org's space name."""
    who = make_user("migrating")
    org = unique("acme")
    accounts.create_org(db, org, who.id)
    org_id, _ = accounts.role_in(db, org, who.id)
    accounts.bind_scope(db, org_id, REPO, who.id)
    return who, f"org:{org}"


def test_a_dry_run_then_a_run_copies_keeps_created_skips_the_hidden_and_a_second_run_changes_nothing(
    server: Server, api: httpx.Client, member: tuple[Account, str], tmp_path: Path
) -> None:
    who, org_space = member
    home, repo = machine(tmp_path, server, who)
    local(home, repo, f"{REPO}::deploy-order", "Run the migrations before the new pods start.")
    local(home, repo, "global::pager", "The pager rota is in the wiki under ops.")
    local(home, repo, "global::old-ci", "CI ran on Jenkins.")
    ok(hivelore(home, repo, "archive", "global::old-ci"))
    local(home, repo, "global::soon", "The freeze ends on Friday.", "--ttl-days", "0.00001")
    local(home, repo, "global::huge-word", f"The fixture holds {LONG_WORD} as one token.")
    (repo / ".hivelore").mkdir()  # a project tier: its copy of a key wins over the home tier's
    ok(hivelore(home, repo, "write", f"{REPO}::ports", "The app listens on 8080.", "--tier", "project"))
    local(home, repo, f"{REPO}::ports", "The app listens on 3000.")
    time.sleep(1.0)  # global::soon has expired
    created = json.loads(ok(hivelore(home, repo, "read", f"{REPO}::deploy-order", "--json")).stdout)["created"]

    code, dry = migrate(home, repo)
    assert code == 0 and dry["dry_run"] is True
    plan = {p["address"]: (p["space"], p["action"]) for p in dry["plan"]}
    assert plan == {
        f"{REPO}::deploy-order": (org_space, "new"),
        f"{REPO}::ports": (org_space, "new"),
        "global::pager": ("personal", "new"),
        "global::huge-word": ("personal", "new"),
    }
    skipped = {s["address"]: s["why"] for s in dry["skipped"]}
    assert skipped.keys() == {"global::old-ci", "global::soon", f"{REPO}::ports"}
    assert "shadowed by the project tier's copy" in skipped[f"{REPO}::ports"]
    assert {p["address"]: p["tier"] for p in dry["plan"]}[f"{REPO}::ports"] == "project"
    assert skipped["global::old-ci"].startswith("archived") and skipped["global::soon"].startswith("expired")
    assert on_server(api, who, REPO, "deploy-order") is None  # a dry run sends nothing

    code, done = migrate(home, repo, "--yes")
    assert code == 1, "a refused record makes the exit non-zero"
    assert sorted(done["copied"]) == sorted([f"{REPO}::deploy-order", f"{REPO}::ports", "global::pager"])
    assert [r["address"] for r in done["refused"]] == ["global::huge-word"]
    assert "2,047" in done["refused"][0]["why"]
    assert done["stopped"] is None and done["not_copied"] == []
    assert {s["address"] for s in done["skipped"]} == {"global::old-ci", "global::soon", f"{REPO}::ports"}
    assert on_server(api, who, REPO, "ports")["memory"]["value"] == "The app listens on 8080."  # type: ignore[index]
    copy = on_server(api, who, REPO, "deploy-order")
    assert copy is not None and copy["space"] == org_space
    assert copy["memory"]["created"] == created and copy["memory"]["seen_count"] == 1
    assert on_server(api, who, "global", "old-ci") is None and on_server(api, who, "global", "soon") is None

    code, again = migrate(home, repo, "--yes")
    assert again["copied"] == [] and sorted(again["unchanged"]) == sorted(done["copied"])
    assert on_server(api, who, REPO, "deploy-order") == copy  # nothing changed, not even seen_count
    code, dry = migrate(home, repo)
    assert {p["address"]: p["action"] for p in dry["plan"]}[f"{REPO}::deploy-order"] == "unchanged"

    text = ok(hivelore(home, repo, "migrate", "--to", "remote")).stdout
    assert "dry run" in text and "run again with --yes" in text and "old-ci" in text


def test_a_quota_stop_says_what_was_and_was_not_copied(
    database_url: str, make_user: Callable[..., Account], tmp_path: Path
) -> None:
    server = start_server(database_url, tmp_path / "server.log", "--active-memories", "3")
    try:
        who = make_user("quota")
        home, repo = machine(tmp_path, server, who)
        for n in range(5):
            local(home, repo, f"global::lesson-{n}", f"Lesson number {n} about the build.")
        code, report = migrate(home, repo, "--yes", "--per-minute", "6000")  # the pace is the 429 test's
        assert code == 1
        assert len(report["copied"]) == 3 and len(report["not_copied"]) == 2
        assert set(report["copied"]) | set(report["not_copied"]) == {f"global::lesson-{n}" for n in range(5)}
        assert "active memories" in report["stopped"]
        assert report["requests"] < 10, "a quota stop is not retried forever"
        text = hivelore(home, repo, "migrate", "--to", "remote", "--yes", "--per-minute", "6000")
        assert text.returncode == 1 and "stopped: your account holds 3 active memories" in text.stdout
        assert text.stdout.count("not copied global::lesson-") == 2
    finally:
        server.stop()


def minutes_ending_in(seconds: float) -> str:
    """A PostgreSQL time zone (libpq's PGTZ) a fraction of a minute off UTC, so that the minutes of a session's
    clock, which the server counts a token's requests in (server/limits.py), end `seconds` from now and every 60 s
    after that, instead of on the minute of UTC."""
    end = int(time.time() + seconds) % 60  # the second of each UTC minute at which the server's minutes end
    return f"{-(end + 0.5) / 3600:.7f}"  # in hours east of UTC; PostgreSQL keeps the whole seconds


def used_up(server: Server, who: Account) -> float:
    """Make requests until the server refuses one (a 429); the seconds its Retry-After says are left of its minute."""
    with httpx.Client(base_url=server.url, headers=who.headers()) as client:
        while (answer := client.get("/v1/me")).status_code != 429:
            pass
    return float(answer.headers["Retry-After"])


RATE_MINUTE_LEFT_S = 20.0  # left of the server's minute as it starts: enough to start, log in and use up its limit
MIGRATE_START_S = 4.0  # at least this much of the minute left when the migration starts, so that it meets the 429


def test_a_429_is_waited_out_and_the_run_finishes(
    database_url: str, make_user: Callable[..., Account], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The migration meets a 429, waits as long as its Retry-After says and finishes. The server's minute is set to
    end a few seconds after its limit is used up (`minutes_ending_in`): the wait takes seconds, not up to a minute."""
    who = make_user("paced")
    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    for n in range(4):  # before the server: the home tier is the same in local and in remote mode
        local(home, repo, f"global::paced-{n}", f"Paced lesson {n}.")
    monkeypatch.setenv("PGTZ", minutes_ending_in(RATE_MINUTE_LEFT_S))  # read by the server's libpq
    server = start_server(database_url, tmp_path / "server.log", "--requests-per-minute", "10")
    monkeypatch.delenv("PGTZ")
    try:
        log_in(home, repo, server, who)
        left = used_up(server, who)
        if left < MIGRATE_START_S:  # the machine was slower than RATE_MINUTE_LEFT_S allows: the next minute, then
            time.sleep(left)
            used_up(server, who)
        code, report = migrate(home, repo, "--yes", "--batch", "1", "--per-minute", "6000")
        assert code == 0, report
        assert len(report["copied"]) == 4 and report["waited_s"] > 0
    finally:
        server.stop()


def test_list_shows_both_sides_and_as_of_when_the_server_is_away_and_doctor_the_mirror(
    database_url: str, member: tuple[Account, str], tmp_path: Path
) -> None:
    who, org_space = member
    server = start_server(database_url, tmp_path / "server.log")
    try:
        home, repo = machine(tmp_path, server, who)
        local(home, repo, f"{REPO}::only-here", "Only on this machine.")
        local(home, repo, f"{REPO}::same", "The same text on both sides.")
        local(home, repo, f"{REPO}::other", "This machine's text.")
        with httpx.Client(base_url=server.url, headers=who.headers()) as client:
            for key, value in (("same", "The same text on both sides."), ("other", "The server's text."),
                               ("only-there", "Only on the team server.")):  # fmt: skip
                assert client.post("/v1/memories", json={"scope": REPO, "key": key, "value": value}).status_code == 200

        listed = json.loads(ok(hivelore(home, repo, "list", "--json")).stdout)
        assert listed["remote"]["live"] is True and listed["remote"]["endpoint"] == server.url
        pairs = {p["key"]: p for p in listed["scopes"][REPO]}
        assert {k: p["mark"] for k, p in pairs.items()} == {
            "only-here": "local-only",
            "same": "both",
            "other": "differs",
            "only-there": "remote-only",
        }
        assert pairs["other"]["local"][0]["tier"] == "home" and pairs["other"]["remote"][0]["space"] == org_space
        assert pairs["other"]["remote"][0]["memory"]["value"] == "The server's text."
        text = ok(hivelore(home, repo, "list")).stdout
        assert "live" in text and "remote-only" in text and "local-only" in text and "differs" in text

        doctor = json.loads(ok(hivelore(home, repo, "doctor", "--json")).stdout)["remote_mirror"]
        assert doctor["live"] is True and doctor["outbox_waiting"] == 0 and doctor["synced_at"]
    finally:
        server.stop()

    ok(hivelore(home, repo, "write", f"{REPO}::while-away", "Written while the server is away."))
    away = json.loads(ok(hivelore(home, repo, "list", "--json")).stdout)
    assert away["remote"]["live"] is False and away["remote"]["synced_at"] == doctor["synced_at"]
    assert {p["key"] for p in away["scopes"][REPO]} >= {"only-there", "while-away"}
    assert "as of " + doctor["synced_at"] in ok(hivelore(home, repo, "list")).stdout
    doctor = json.loads(ok(hivelore(home, repo, "doctor", "--json")).stdout)["remote_mirror"]
    assert doctor["live"] is False and doctor["outbox_waiting"] == 1 and doctor["synced_seconds_ago"] > 0
    text = ok(hivelore(home, repo, "doctor")).stdout
    assert "remote_mirror" in text and "outbox_waiting: 1" in text


def test_local_mode_list_is_unchanged_and_migrate_names_what_is_missing(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    local(home, repo, f"{REPO}::k", "A lesson.")
    assert json.loads(ok(hivelore(home, repo, "list", "--json")).stdout) == {
        REPO: [json.loads(ok(hivelore(home, repo, "read", f"{REPO}::k", "--json")).stdout)]
    }
    wrong = hivelore(home, repo, "migrate", "--to", "cloud")
    assert wrong.returncode == 2 and wrong.stderr.strip() == (
        "hivelore: migrate copies to the team server only: pass --to remote, not --to cloud"
    )
    too_big = hivelore(home, repo, "migrate", "--to", "remote", "--batch", "501")
    assert too_big.returncode == 2 and too_big.stderr.strip() == (
        "hivelore: --batch 501 is not 1 to 500: the server takes 500 records at most."
    )
    nowhere = hivelore(home, repo, "migrate", "--to", "remote")
    assert nowhere.returncode == 2 and nowhere.stderr.startswith("hivelore: no team server is named")
