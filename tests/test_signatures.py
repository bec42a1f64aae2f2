"""Failure signatures linked to the lessons that fixed them (memory/signatures.py): an error alone finds
its fix, though the lesson shares no word with it.

The end-to-end test uses real processes only: `hivelore hook` per agent event (tests/harness.py), the real
MCP server for the write, and a real runner's output from /work/shared/fixtures/test-output (pytest's
collection error, captured from pytest 9.2 itself).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from harness import NUDGE, REPO, SEEN, aimed, example, hook, mcp_session

from hivelore.memory import signatures

CLI = Callable[..., subprocess.CompletedProcess[str]]
FIXTURES = Path("/work/shared/fixtures/test-output")
needs_fixtures = pytest.mark.skipif(not FIXTURES.is_dir(), reason="the runner outputs are not on this machine")

KEY = "runner-needs-project-root-on-path"
LESSON = "Put `pythonpath = .` in the ini options so imports resolve from the project root."
COMMAND = "pytest -q tests/test_calc.py"


def runner_output(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


@needs_fixtures
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("pytest/pytest-collection-error.txt", "ModuleNotFoundError: no module named calc"),
        ("pytest/pytest-syntax-error.txt", "SyntaxError: invalid syntax"),
        ("pytest/pytest-q.txt", "ZeroDivisionError: division by zero"),  # the last full line, not the cut summary
        ("unittest/unittest-v.txt", "AssertionError: not less than"),
        ("cargo-test/cargo-test.txt", "ParseIntError: kind invaliddigit"),
        ("go-test/go-test.txt", ""),  # no error class: the hook falls back to the fingerprint
    ],
)
def test_a_signature_is_the_error_class_and_its_key_words(name: str, expected: str) -> None:
    assert signatures.signature(runner_output(name)) == expected


def test_paths_numbers_and_hex_are_stripped_so_two_runs_share_a_signature() -> None:
    one = "Traceback …\nOSError: [Errno 28] No space left on device: '/tmp/build-81723/out.o' at 0x7f3a9c"
    two = "OSError: [Errno 28] No space left on device: '/var/tmp/build-4/x.o' at 0x55d0aa"
    assert signatures.signature(one) == signatures.signature(two) == "OSError: errno no space left on device at"
    assert signatures.signature("Error: connect ECONNREFUSED 127.0.0.1:5432") == "ECONNREFUSED"
    assert signatures.signature("all good, 3 passed") == ""


def test_the_written_lesson_is_read_from_an_mcp_answer_or_a_cli_command() -> None:
    answer = {"memory": {"scope": REPO, "key": KEY, "kind": "lesson", "state": "committed"}}
    assert signatures.written_lesson("mcp__hivelore__memory_write", "", json.dumps(answer)) == f"{REPO}::{KEY}"
    note = {"memory": {**answer["memory"], "kind": "note"}}
    assert signatures.written_lesson("mcp__hivelore__memory_write", "", json.dumps(note)) == ""
    assert signatures.written_lesson("Bash", f"hivelore write {REPO}::{KEY} 'x' --when y", "") == f"{REPO}::{KEY}"
    assert signatures.written_lesson("Bash", f"hivelore write {REPO}::{KEY} 'x' --kind fact", "") == ""
    assert signatures.written_lesson("Bash", f"hivelore write {REPO}::{KEY} 'x' --staged", "") == ""
    assert signatures.written_lesson("Bash", "git commit -m 'write it'", "") == ""


def test_the_links_are_kept_in_a_write_ahead_log(tmp_path: Path) -> None:
    """The failure hook commits a pending signature on every failure: in the rollback journal that
    synced the file twice (20 ms of the hook on a busy disk); in WAL mode with synchronous NORMAL a
    commit syncs nothing while the hook server keeps the file open."""
    links = signatures.Links(tmp_path)
    links.saw("claude", "s1", "ECONNREFUSED: connect")
    modes = (links.conn.execute("PRAGMA journal_mode").fetchone(), links.conn.execute("PRAGMA synchronous").fetchone())
    links.close()
    assert modes == (("wal",), (1,))  # 1: NORMAL


def test_a_link_is_made_only_from_the_session_that_saw_the_failure_and_only_recently(tmp_path: Path) -> None:
    links = signatures.Links(tmp_path)
    try:
        links.saw("claude", "s1", "ECONNREFUSED", now=1000.0)
        assert links.wrote("claude", "s2", f"{REPO}::other", now=1001.0) == []
        assert links.wrote("claude", "s1", f"{REPO}::{KEY}", now=1002.0) == ["ECONNREFUSED"]
        assert links.lessons("ECONNREFUSED") == [f"{REPO}::{KEY}"]
        links.saw("claude", "s3", "SyntaxError: invalid syntax", now=0.0)
        late = signatures.PENDING_S + 1.0
        assert links.wrote("claude", "s3", f"{REPO}::late", now=late) == []
    finally:
        links.close()


def failure(repo: Path, session: str, output: str) -> tuple[str, dict]:
    payload = example("claude", "PostToolUseFailure", "Bash non-zero exit")
    payload["tool_input"]["command"] = COMMAND
    payload["error"] = f"Exit code 2\n{output}"
    return "PostToolUseFailure", aimed(payload, repo, session_id=session)


def mcp_result(repo: Path, session: str, answer: str) -> tuple[str, dict]:
    payload = example("claude", "PostToolUse", "MCP tool (content-block array)")
    payload["tool_name"] = "mcp__hivelore__memory_write"
    payload["tool_input"] = {"scope": REPO, "key": KEY, "value": LESSON}
    payload["tool_response"] = [{"type": "text", "text": answer}]
    return "PostToolUse", aimed(payload, repo, session_id=session)


@needs_fixtures
@pytest.mark.anyio
async def test_a_lesson_written_after_a_failure_is_shown_when_the_error_comes_back(
    home: Path, repo: Path, tmp_path: Path
) -> None:
    """Session 1: pytest fails at collection (no lesson: a nudge); the agent writes a lesson over the real MCP
    server, and the hook sees that call. Another session that hits the error before the link is made gets the
    nudge, though the lesson is stored: it shares no word with the error. After the link, session 2's same
    failure is answered with the lesson."""
    output = runner_output("pytest/pytest-collection-error.txt")

    def run(event: str, payload: dict) -> str:
        return hook(home, repo, "claude", event, payload)

    assert NUDGE in await anyio.to_thread.run_sync(run, *failure(repo, "fix-1", output))
    async with mcp_session(home, repo, tmp_path / "mcp.log") as session:
        result = await session.call_tool("memory_write", {"scope": REPO, "key": KEY, "value": LESSON})
        assert not result.is_error
        answer = result.content[0].text  # type: ignore[union-attr]  # the one text block the SDK returns

    assert NUDGE in await anyio.to_thread.run_sync(run, *failure(repo, "before-link", output))
    assert await anyio.to_thread.run_sync(run, *mcp_result(repo, "fix-1", answer)) == ""

    again = await anyio.to_thread.run_sync(run, *failure(repo, "fix-2", output))
    assert again.splitlines() == [
        f"hivelore: {SEEN} (considerations, not rules; read any in full with memory_read):",
        f"- {REPO}::{KEY} [lesson]: {LESSON}",
    ]


@needs_fixtures
def test_a_lesson_written_in_another_session_is_not_linked(home: Path, repo: Path, cli: CLI) -> None:
    output = runner_output("pytest/pytest-collection-error.txt")
    assert cli("write", f"{REPO}::{KEY}", LESSON).returncode == 0
    assert NUDGE in hook(home, repo, "claude", *failure(repo, "alone-1", output))
    answer = json.dumps({"memory": {"scope": REPO, "key": KEY, "kind": "lesson", "state": "committed"}})
    assert hook(home, repo, "claude", *mcp_result(repo, "someone-else", answer)) == ""
    assert NUDGE in hook(home, repo, "claude", *failure(repo, "alone-2", output))
