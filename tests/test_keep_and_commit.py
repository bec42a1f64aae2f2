""" "Remember this" is heard, and staged memories are committed on the spot.

The prompt hook runs as the agent runs it (the real `hivelore hook` process, recorded payloads of Claude Code
and Codex pointed at the `repo` fixture); `hivelore commit` runs as the real command; `memory_commit` through
a real MCP session. The folder's narrowest scope is the branch scope, where a session's notes are staged.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from harness import ADDRESS, aimed, call, claude_prompt, example, hook, mcp_session

pytestmark = pytest.mark.anyio

CLI = Callable[..., subprocess.CompletedProcess[str]]
BRANCH = "branch::acme/checkout::main"
MESSAGE = "The checkout tests need the db container up before pnpm test."


def staged_note(home: Path, repo: Path, session: str) -> str:
    """End a Claude turn with a last message (kept as the session's staged note); its address."""
    payload = aimed(example("claude", "Stop", "normal end of turn"), repo, session_id=session)
    payload["last_assistant_message"] = MESSAGE
    hook(home, repo, "claude", "Stop", payload)
    return f"{BRANCH}::session-claude-{session}-last-message"


def test_claude_a_request_to_keep_names_the_scope_and_the_sessions_staged_note(home: Path, repo: Path) -> None:
    note = staged_note(home, repo, "keep-1")

    told = hook(home, repo, "claude", "UserPromptSubmit", claude_prompt(repo, "keep-1", "Remember this, please."))

    assert f"write it now with memory_write into scope '{BRANCH}'" in told
    assert f"This session's staged notes: {note}; memory_commit turns one committed as it is." in told


def test_claude_a_look_alike_prompt_gets_no_keep_answer(home: Path, repo: Path) -> None:
    staged_note(home, repo, "keep-2")
    prompt = claude_prompt(repo, "keep-2", "I don't remember this function; keep this loop short")
    assert "memory_write" not in hook(home, repo, "claude", "UserPromptSubmit", prompt)


@pytest.mark.parametrize("words", ["don't forget that the API rate-limits", "تذكر هذا", "یادت باشه"])
def test_codex_a_request_to_keep_is_heard_in_each_language(home: Path, repo: Path, words: str) -> None:
    payload = aimed(example("codex", "UserPromptSubmit", "prompt"), repo, session_id="keep-3", prompt=words)
    told = hook(home, repo, "codex", "UserPromptSubmit", payload)
    assert f"memory_write into scope '{BRANCH}'" in told
    assert "staged notes" not in told  # this session has none


def test_commit_turns_the_staged_note_committed_and_says_what_it_did_not(home: Path, repo: Path, cli: CLI) -> None:
    note = staged_note(home, repo, "keep-4")
    assert cli("write", ADDRESS, "Start postgres first.").returncode == 0
    missing = f"{BRANCH}::no-such-note"

    result = cli("commit", note, ADDRESS, missing, "--json")

    assert result.returncode == 1  # "already committed" is no failure; "not found" is
    assert result.stderr == "hivelore: 1 of the memories asked for was not committed; see why above.\n"
    assert json.loads(result.stdout) == {
        "committed": [note],
        "not_committed": [
            {"address": ADDRESS, "reason": "already committed"},
            {"address": missing, "reason": "not found: no memory at this address (see `hivelore list`)"},
        ],
    }
    shown = json.loads(cli("read", note, "--json").stdout)
    assert (shown["state"], shown["expires_at"]) == ("committed", None)
    told = hook(home, repo, "claude", "UserPromptSubmit", claude_prompt(repo, "keep-4", "keep this in mind"))
    assert "staged notes" not in told  # committed now


def test_commit_without_an_address_commits_every_staged_memory_of_the_chain(home: Path, repo: Path, cli: CLI) -> None:
    first, second = staged_note(home, repo, "keep-5"), staged_note(home, repo, "keep-6")

    result = cli("commit")

    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == [f"committed {first}", f"committed {second}"]
    assert cli("commit").stdout == "nothing staged to commit\n"


def test_commit_refuses_a_malformed_address_before_committing_anything(home: Path, repo: Path, cli: CLI) -> None:
    note = staged_note(home, repo, "keep-7")

    result = cli("commit", note, "not an address")

    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert json.loads(cli("read", note, "--json").stdout)["state"] == "staged"


def test_commit_leaves_an_expired_note_and_says_why(home: Path, repo: Path, cli: CLI) -> None:
    assert cli("write", f"{BRANCH}::short-lived", "gone soon", "--staged", "--ttl-days", "0.000001").returncode == 0

    result = cli("commit", f"{BRANCH}::short-lived")

    assert result.returncode == 1
    assert (
        result.stdout == f"not committed {BRANCH}::short-lived: archived or expired: restore it first, then commit it\n"
    )


async def test_mcp_memory_commit_reports_both_lists(home: Path, repo: Path, tmp_path: Path) -> None:
    note = staged_note(home, repo, "keep-8")
    async with mcp_session(home, repo, tmp_path / "mcp.log") as session:
        first = await call(session, "memory_commit", addresses=[note])
        again = await call(session, "memory_commit", addresses=[note])

    assert [m["key"] for m in first["committed"]] == ["session-claude-keep-8-last-message"]
    assert first["committed"][0]["state"] == "committed" and first["not_committed"] == []
    assert again == {"committed": [], "not_committed": [{"address": note, "reason": "already committed"}]}
