"""`hivelore forget --session ID` and `--before DATE`: what hooks captured goes, what was written on purpose stays.

Two Claude Code sessions run through the real hooks (a start, a prompt, a failing command, a stop whose last message
becomes a staged note); one is forgotten; the other, and a lesson written with `hivelore write`, are untouched.
team.db's side (task links, claims, test attempts) is checked on the store, where a session's task is made.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from harness import aimed, example, hook

from hivelore.team.store import SqliteTeam
from hivelore.team.testruns import parse

CLI = Callable[..., subprocess.CompletedProcess[str]]
LESSON = "repo::acme/checkout::db-port"


def captured_session(home: Path, repo: Path, session: str) -> None:
    start = aimed(example("claude", "SessionStart", "startup with model"), repo, session_id=session)
    prompt = aimed(example("claude", "UserPromptSubmit", "plain prompt"), repo, session_id=session)
    prompt["prompt"] = f"Why does the postgres test fail in {session}? We use pnpm in this repo."
    failed = aimed(example("claude", "PostToolUseFailure", "Bash non-zero exit"), repo, session_id=session)
    stop = aimed(example("claude", "Stop", "recorded Stop (main)"), repo, session_id=session)
    stop["last_assistant_message"] = f"In {session} the postgres port was wrong."
    for event, payload in (
        ("SessionStart", start),
        ("UserPromptSubmit", prompt),
        ("PostToolUseFailure", failed),
        ("Stop", stop),
    ):
        hook(home, repo, "claude", event, payload)


def rows(home: Path, session: str) -> dict[str, int]:
    with sqlite3.connect(home / "events.db") as conn:
        return {
            table: conn.execute(f"SELECT count(*) FROM {table} WHERE session_id = ?", (session,)).fetchone()[0]
            for table in ("prompts", "runs", "sessions")
        }


def notes(home: Path) -> list[str]:
    return sorted(p.stem for p in home.rglob("session-*.md"))


@pytest.fixture
def two_sessions(home: Path, repo: Path, cli: CLI) -> None:
    assert cli("write", LESSON, "the postgres test needs port 5433").returncode == 0
    captured_session(home, repo, "s-old")
    captured_session(home, repo, "s-new")
    assert rows(home, "s-old") == rows(home, "s-new") == {"prompts": 1, "runs": 1, "sessions": 1}
    assert len(notes(home)) == 2


def test_forget_a_session_removes_what_hooks_captured_from_it_and_says_what(
    home: Path, cli: CLI, two_sessions: None
) -> None:
    result = cli("forget", "--session", "s-old", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["dry_run"] is False
    assert {k: report["counts"][k] for k in ("prompts", "commands run", "staged notes", "sessions")} == {
        "prompts": 1,
        "commands run": 1,
        "staged notes": 1,
        "sessions": 1,
    }
    assert rows(home, "s-old") == {"prompts": 0, "runs": 0, "sessions": 0}
    assert rows(home, "s-new") == {"prompts": 1, "runs": 1, "sessions": 1}
    assert [n for n in notes(home) if "s-old" in n] == [] and len(notes(home)) == 1
    assert cli("read", LESSON).returncode == 0  # written on purpose: stays

    again = cli("forget", "--session", "s-old")
    assert again.returncode == 0
    assert again.stdout.strip() == "removed what hooks captured in session s-old: nothing was there"


def test_a_dry_run_counts_and_removes_nothing(home: Path, cli: CLI, two_sessions: None) -> None:
    result = cli("forget", "--session", "s-old", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("would remove what hooks captured in session s-old: 1 prompts, 1 commands run")
    assert "staged note branch::acme/checkout::main::session-claude-s-old-last-message" in result.stdout
    assert rows(home, "s-old") == {"prompts": 1, "runs": 1, "sessions": 1}
    assert len(notes(home)) == 2


def test_forget_before_a_date_removes_every_session_captured_before_it(
    home: Path, cli: CLI, two_sessions: None
) -> None:
    assert "nothing was there" in cli("forget", "--before", "2020-01-01").stdout
    result = cli("forget", "--before", "2999-01-01T00:00", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["counts"]["prompts"] == 2
    assert rows(home, "s-old") == rows(home, "s-new") == {"prompts": 0, "runs": 0, "sessions": 0}
    assert notes(home) == []
    assert cli("read", LESSON).returncode == 0


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ((), "name what to forget"),
        ((LESSON, "--session", "s-1"), "not both"),
        (("--session", "s-1", "--before", "2026-01-01"), "not both and not neither"),
        (("--before", "last tuesday"), "--before takes a date like 2026-11-30"),
        (("--session", " "), "--session needs a session id"),
        (("--session", "s-old", "--tier", "home"), "--tier picks the copy of a memory"),
        ((LESSON, "--dry-run"), "--dry-run goes with --session or --before"),
    ],
)
def test_bad_forget_arguments_are_one_sentence_and_change_nothing(
    home: Path, cli: CLI, two_sessions: None, args: tuple[str, ...], says: str
) -> None:
    result = cli("forget", *args)
    assert result.returncode == 2 and result.stdout == ""
    assert says in result.stderr and result.stderr.count("\n") == 1
    assert rows(home, "s-old") == {"prompts": 1, "runs": 1, "sessions": 1}


def test_forget_works_where_hivelore_is_off(home: Path, repo: Path, cli: CLI, two_sessions: None) -> None:
    (repo / ".hivelore.json").write_text('{"mode": "off"}')
    assert cli("forget", "--session", "s-old").returncode == 0
    assert rows(home, "s-old")["prompts"] == 0


# --- team.db: task links, claims, attempts --------------------------------------------------------------------------

FAILED_RUN = "FAILED tests/test_cart.py::test_empty - AssertionError\n1 failed in 0.1s"


def team_with_two_sessions(tmp_path: Path) -> tuple[SqliteTeam, int, int]:
    team = SqliteTeam.open(str(tmp_path))
    one = team.intent_for_session("claude", "s-1", "ann", "acme/checkout", "fix the empty cart")
    two = team.intent_for_session("codex", "s-2", "bob", "acme/checkout", "speed up checkout")
    team.claim(one.id, ["py:cart.total", "py:cart.empty"])
    team.claim(two.id, ["py:checkout.pay"])
    team.record_attempt(one.id, "pytest", parse(FAILED_RUN, "pytest", 1))
    team.mark_warned("claude", "s-1", "warned-once")
    return team, one.id, two.id


def test_forgetting_a_session_removes_its_task_claims_and_attempts_only(tmp_path: Path) -> None:
    team, one, two = team_with_two_sessions(tmp_path)
    with team:
        dry = team.forget_captured("s-1", dry_run=True)
        assert dry == {
            "task links": 1,
            "coordination warnings": 1,
            "claims": 2,
            "changed symbols": 0,
            "test attempts": 1,
            "tasks": 1,
        }
        assert len(team.claims(one)) == 2  # a dry run keeps it all
        assert team.forget_captured("s-1") == dry
        assert team.claims(one) == [] and team.attempts(one) == []
        assert [i.id for i in team.intents("acme/checkout")] == [two]
        assert [c.symbol for c in team.claims(two)] == ["py:checkout.pay"]


def test_a_task_someone_decided_on_keeps_its_decision(tmp_path: Path) -> None:
    team, one, _ = team_with_two_sessions(tmp_path)
    with team:
        team.decide("an empty cart totals 0, not None", ["py:cart.total"], intent_id=one, developer="ann")
        assert team.forget_captured("s-1")["tasks"] == 0
        assert team.intent(one).id == one and team.claims(one) == []


def test_forgetting_before_a_time_removes_older_claims(tmp_path: Path) -> None:
    team, one, two = team_with_two_sessions(tmp_path)
    with team:
        assert team.forget_captured(before=0.0) == dict.fromkeys(
            ("task links", "coordination warnings", "claims", "changed symbols", "test attempts", "tasks"), 0
        )
        counts = team.forget_captured(before=4_000_000_000.0)
        assert (counts["claims"], counts["tasks"], counts["task links"]) == (3, 2, 2)
        assert team.intents("acme/checkout") == []
