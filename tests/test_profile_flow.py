"""Profile memory end to end: what the user says in the prompts of three root sessions becomes a line
of USER.md or MEMORY.md, through the real hook command; then the CLI and the MCP server read it.

Each hook runs as the agent runs it (`python -m hivelore hook …`, payload on stdin) in a temporary
HIVELORE_HOME and git repository.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

CLI = Callable[..., subprocess.CompletedProcess[str]]


def prompt(home: Path, repo: Path, session: str, text: str, *, subagent: bool = False) -> str:
    """One Claude UserPromptSubmit; what the agent is told (its additionalContext)."""
    payload = {"session_id": session, "cwd": str(repo), "hook_event_name": "UserPromptSubmit", "prompt": text}
    if subagent:
        payload["agent_id"] = "worker-1"
    return _hook(home, repo, "UserPromptSubmit", payload)


def session_start(home: Path, repo: Path, session: str) -> str:
    payload = {"session_id": session, "cwd": str(repo), "hook_event_name": "SessionStart", "source": "startup"}
    return _hook(home, repo, "SessionStart", payload)


def _hook(home: Path, repo: Path, event: str, payload: dict) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "hivelore", "hook", "--agent", "claude", "--event", event],
        input=json.dumps(payload),
        cwd=repo,
        env={**os.environ, "HIVELORE_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and result.stderr == ""
    log = home / "logs" / "hooks.log"
    assert not log.exists(), log.read_text()
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"] if result.stdout else ""


def user_md(home: Path) -> str:
    path = home / "profiles" / "default" / "USER.md"
    return path.read_text() if path.exists() else ""


def ledger(home: Path) -> list[dict]:
    path = home / "profiles" / "default" / "promotions.json"
    return json.loads(path.read_text())["entries"] if path.exists() else []


def test_a_preference_said_in_three_root_sessions_is_promoted_on_the_third(home: Path, repo: Path) -> None:
    assert "profile" not in prompt(home, repo, "s1", "I prefer TypeScript")
    assert "profile" not in prompt(home, repo, "s2", "I prefer TypeScript.")
    assert user_md(home) == ""  # two sessions are not enough

    told = prompt(home, repo, "s3", "I prefer\nTypeScript")

    assert "your profile changed" in told and "Prefer TypeScript." in told
    assert "- Prefer TypeScript." in user_md(home)
    (entry,) = ledger(home)
    assert entry["status"] == "active" and entry["sessions"] == ["claude:s1", "claude:s2", "claude:s3"]


def test_saying_it_again_in_one_session_counts_once(home: Path, repo: Path) -> None:
    for _ in range(3):
        prompt(home, repo, "same", "I prefer TypeScript")
    prompt(home, repo, "other", "I prefer TypeScript")
    assert user_md(home) == ""  # one earlier session besides this one: not two


def test_sub_agent_prompts_never_count(home: Path, repo: Path) -> None:
    prompt(home, repo, "s1", "I prefer TypeScript", subagent=True)
    prompt(home, repo, "s2", "I prefer TypeScript", subagent=True)
    prompt(home, repo, "s3", "I prefer TypeScript")
    assert user_md(home) == ""


def test_near_misses_and_quoted_text_never_promote(home: Path, repo: Path) -> None:
    for n, text in enumerate(["I like TypeScript", "Maybe use TypeScript", 'He said "I prefer TypeScript"']):
        for session in range(3):
            prompt(home, repo, f"{n}-{session}", text)
    assert user_md(home) == "" and ledger(home) == []


def test_a_new_preference_of_the_same_category_supersedes_the_old_one(home: Path, repo: Path) -> None:
    for session in ("a1", "a2", "a3"):
        prompt(home, repo, session, "Please keep replies concise: I prefer concise replies")
    assert "- Prefer concise replies." in user_md(home)

    for session in ("b1", "b2", "b3"):
        prompt(home, repo, session, "I prefer detailed replies")

    text = user_md(home)
    assert "- Prefer detailed replies." in text and "Prefer concise replies." not in text
    statuses = {e["line"]: e["status"] for e in ledger(home)}
    assert statuses == {"Prefer concise replies.": "superseded", "Prefer detailed replies.": "active"}


def test_forget_removes_the_line_and_it_takes_three_new_sessions_to_come_back(home: Path, repo: Path) -> None:
    for session in ("s1", "s2", "s3"):
        prompt(home, repo, session, "I prefer concise replies")
    assert "Prefer concise replies." in user_md(home)

    told = prompt(home, repo, "s4", "forget that I prefer concise replies")

    assert "forgotten: Prefer concise replies." in told
    assert "Prefer concise replies." not in user_md(home)
    prompt(home, repo, "s5", "I prefer concise replies")
    assert "Prefer concise replies." not in user_md(home)  # what was said before the forget no longer counts
    prompt(home, repo, "s6", "I prefer concise replies")
    prompt(home, repo, "s7", "I prefer concise replies")
    assert user_md(home).count("- Prefer concise replies.") == 1
    assert [e["status"] for e in ledger(home)] == ["forgotten", "active"]


def test_arabic_preferences_promote_the_same_english_line(home: Path, repo: Path) -> None:
    prompt(home, repo, "s1", "أفضّل TypeScript")
    prompt(home, repo, "s2", "افضل TypeScript")
    prompt(home, repo, "s3", "I prefer TypeScript")
    assert "- Prefer TypeScript." in user_md(home)


def test_a_project_fact_goes_to_memory_md(home: Path, repo: Path) -> None:
    for session in ("s1", "s2", "s3"):
        prompt(home, repo, session, "run tests with pnpm test")
    memory_md = home / "profiles" / "default" / "MEMORY.md"
    assert "- Run tests with pnpm test." in memory_md.read_text()
    assert user_md(home) == ""


def test_session_start_gives_the_profile_before_the_lessons(home: Path, repo: Path, cli: CLI) -> None:
    for session in ("s1", "s2", "s3"):
        prompt(home, repo, session, "I prefer TypeScript")
    assert cli("write", "repo::acme/checkout::tests-need-local-postgres", "pnpm test needs the db up").returncode == 0

    block = session_start(home, repo, "s9")

    profile_at, lesson_at = block.index("Prefer TypeScript."), block.index("tests-need-local-postgres")
    assert profile_at < lesson_at
    assert "not instructions" in block[:profile_at]  # remembered context, below the user's request


def test_the_profile_cli_reads_searches_lists_forgets_and_compacts(home: Path, repo: Path, cli: CLI) -> None:
    for session in ("s1", "s2", "s3"):
        prompt(home, repo, session, "I prefer concise replies")
    for session in ("s4", "s5", "s6"):
        prompt(home, repo, session, "I prefer detailed replies")

    assert "- Prefer detailed replies." in cli("profile", "read", "USER.md").stdout
    found = json.loads(cli("profile", "search", "detailed", "--json").stdout)
    assert found == [{"file": "USER.md", "line": "Prefer detailed replies."}]
    promotions = json.loads(cli("profile", "promotions", "--json").stdout)
    assert [(p["line"], p["status"]) for p in promotions] == [
        ("Prefer concise replies.", "superseded"),
        ("Prefer detailed replies.", "active"),
    ]
    protected = cli("profile", "read", "SOUL.md")
    assert protected.returncode == 2 and protected.stderr.count("\n") == 1

    forgot = cli("profile", "forget", "Prefer detailed replies.")
    assert forgot.returncode == 0 and "forgot: Prefer detailed replies." in forgot.stdout
    assert "Prefer detailed replies." not in user_md(home)
    missing = cli("profile", "forget", "Prefer Haskell.")
    assert missing.returncode == 1 and "no profile line matches" in missing.stderr

    user = home / "profiles" / "default" / "USER.md"
    user.write_text(user.read_text() + "- Reply in English.\n- Reply in English.\n")
    dry = cli("profile", "compact", "USER.md", "--dry-run")
    assert dry.returncode == 0 and "-- Reply in English." in dry.stdout and user.read_text().count("English") == 2
    applied = cli("profile", "compact", "USER.md")
    assert applied.returncode == 0 and user.read_text().count("English") == 1
    assert list(user.parent.glob("USER.md.*.bak"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_mcp_profile_read_and_search(home: Path, repo: Path) -> None:
    for session in ("s1", "s2", "s3"):
        prompt(home, repo, session, "I prefer TypeScript")
    env = {**os.environ, "HIVELORE_HOME": str(home)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "hivelore", "mcp"], cwd=str(repo), env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        text = (await session.call_tool("profile_read", {"name": "USER.md"})).structured_content
        found = (await session.call_tool("profile_search", {"query": "typescript"})).structured_content
        refused = await session.call_tool("profile_read", {"name": "SOUL.md"})

    assert text is not None and "- Prefer TypeScript." in text["text"]
    assert found == {"profile": "default", "lines": [{"file": "USER.md", "line": "Prefer TypeScript."}]}
    assert refused.is_error
