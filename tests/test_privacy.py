"""The user's control: private spans never stored, hivelore off per repository, capture off.

The hook tests run the real `hivelore-hook` launcher with each agent's recorded or documented prompt
payload (tests/fixtures/hook-payloads) carrying a private span and a private-prefixed line, then read
every file under HIVELORE_HOME and the repository's `.hivelore` folder, bytes and all (SQLite's logs
too), for the secret.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from harness import aimed, example, hook, hook_env, mcp_session, text_of
from hypothesis import given
from hypothesis import strategies as st

from hivelore.config import ConfigError, load_settings
from hivelore.privacy import strip_private


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


CLI = Callable[..., subprocess.CompletedProcess[str]]
HOOK = Path(sys.executable).with_name("hivelore-hook")
PREFIX = "#private"

# --- the function: property tests --------------------------------------------------------------------------------

plain = st.text(alphabet=st.characters(blacklist_characters="<"), max_size=40)
lines = st.text(alphabet=st.characters(blacklist_characters="<\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"), max_size=30)
secret = st.from_regex(r"[A-Z]{6,12}", fullmatch=True).map(lambda s: f"SECRET{s}")


def tag(name: str, case: list[bool], closing: bool = False) -> str:
    spelled = "".join(c.upper() if up else c for c, up in zip(name, case, strict=True))
    return f"</{spelled}>" if closing else f"<{spelled}>"


cases = st.lists(st.booleans(), min_size=7, max_size=7)


@given(plain)
def test_text_without_a_tag_or_prefix_is_unchanged(text: str) -> None:
    assert strip_private(text) == text


@given(plain, plain, plain, secret, plain, cases, cases)
def test_a_span_is_removed_and_what_is_around_it_stays(
    before: str, inner1: str, after: str, hidden: str, inner2: str, open_case: list[bool], close_case: list[bool]
) -> None:
    text = f"{before}{tag('private', open_case)}{inner1}{hidden}{inner2}{tag('private', close_case, True)}{after}"
    assert strip_private(text) == before + after


@given(plain, secret, st.text(max_size=40).filter(lambda t: "</" not in t.lower()))
def test_an_unclosed_span_hides_everything_after_it(before: str, hidden: str, rest: str) -> None:
    assert strip_private(f"{before}<private>{rest}{hidden}{rest}") == before


def nested(depth: int, hidden: str, filler: str) -> str:
    return "<Private>" + filler + (nested(depth - 1, hidden, filler) if depth else hidden) + filler + "</PRIVATE>"


@given(plain, plain, st.integers(0, 6), secret, plain)
def test_nested_spans_hide_up_to_their_outermost_close(
    before: str, after: str, depth: int, hidden: str, f: str
) -> None:
    assert strip_private(before + nested(depth, hidden, f) + after) == before + after


@given(st.lists(st.tuples(st.booleans(), lines, st.sampled_from(["", " ", "\t"])), max_size=8), secret)
def test_prefixed_lines_are_removed_whole(rows: list[tuple[bool, str, str]], hidden: str) -> None:
    kept = [f"{text}\n" for private, text, _ in rows if not private and not text.lstrip().startswith(PREFIX)]
    text = "".join(f"{indent}{PREFIX} {hidden} {text}\n" if private else f"{text}\n" for private, text, indent in rows)
    assert strip_private(text, [PREFIX]) == "".join(kept)


@given(st.text(alphabet="<>/privatePRIVATE x\n", max_size=60))
def test_stripping_twice_changes_nothing_more(text: str) -> None:
    once = strip_private(text, [PREFIX])
    assert strip_private(once, [PREFIX]) == once
    assert "<private>" not in once.lower()


def test_a_tag_that_removing_a_span_joins_counts_too() -> None:
    assert strip_private("a <priv<private>x</private>ate>SECRET") == "a "


def test_a_span_opened_on_a_prefixed_line_still_hides_its_later_lines() -> None:
    text = "keep\n#private note <private>\nSECRET\n</private>tail\nlast\n"
    assert strip_private(text, [PREFIX]) == "keep\nlast\n"  # "tail" ends the prefixed line the span closed on


# --- settings ----------------------------------------------------------------------------------------------------


def test_off_names_the_file_that_switched_it_off(tmp_path: Path) -> None:
    (tmp_path / ".hivelore.json").write_text('{"mode": "off"}')
    settings = load_settings(tmp_path, {"HIVELORE_HOME": str(tmp_path / "home")})
    assert settings.off
    assert settings.off_message().startswith(f"hivelore is off in this repository (set by {tmp_path}/.hivelore.json)")


def test_capture_off_wins_wherever_it_is_said(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.json").write_text('{"capture": "off"}')
    (tmp_path / ".hivelore.json").write_text('{"capture": "on", "private_prefix": ["#private", "//secret"]}')
    settings = load_settings(tmp_path, {"HIVELORE_HOME": str(home)})
    assert (settings.capture, dict(settings.decided_by)["capture"]) == ("off", str(home / "config.json"))
    assert settings.private_prefix == ("#private", "//secret")


@pytest.mark.parametrize(
    ("content", "says"),
    [('{"capture": "no"}', 'is not "on" or "off"'), ('{"private_prefix": ""}', "'private_prefix' must be")],
)
def test_a_bad_privacy_setting_is_one_sentence_naming_the_file(tmp_path: Path, content: str, says: str) -> None:
    (tmp_path / ".hivelore.json").write_text(content)
    with pytest.raises(ConfigError, match=says) as raised:
        load_settings(tmp_path, {"HIVELORE_HOME": str(tmp_path / "home")})
    assert str(tmp_path / ".hivelore.json") in str(raised.value)


# --- hooks of all five agents ------------------------------------------------------------------------------------

PROMPTS = {  # agent: (wire event, fixture example)
    "claude": ("UserPromptSubmit", "plain prompt"),
    "codex": ("UserPromptSubmit", "prompt"),
    "gemini": ("BeforeAgent", "prompt"),
    "cursor": ("beforeSubmitPrompt", "prompt with attachment"),
    "kiro": ("userPromptSubmit", "prompt"),
}


def run_launcher(home: Path, repo: Path, agent: str, event: str, payload: dict) -> str:
    """The installed `hivelore-hook` launcher, as an agent runs it; a hook always exits 0 and stays quiet on stderr."""
    result = subprocess.run(
        [str(HOOK), "--agent", agent, "--event", event],
        input=json.dumps(payload).encode(),
        cwd=repo,
        env=hook_env(home),
        capture_output=True,
        timeout=60,
    )
    assert (result.returncode, result.stderr) == (0, b"")
    return result.stdout.decode()


def files_holding(text: str, *folders: Path) -> list[str]:
    found = []
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file() and text.encode() in path.read_bytes():
                found.append(str(path))
    return found


def stored_prompts(home: Path) -> list[str]:
    with sqlite3.connect(home / "events.db") as conn:
        return [row[0] for row in conn.execute("SELECT text FROM prompts")]


@pytest.mark.parametrize("agent", sorted(PROMPTS))
def test_a_private_span_in_each_agents_prompt_is_stored_nowhere(home: Path, repo: Path, agent: str) -> None:
    (repo / ".hivelore").mkdir()
    (repo / ".hivelore.json").write_text(json.dumps({"private_prefix": PREFIX}))
    event, name = PROMPTS[agent]
    hidden, line_hidden = f"SECRET-SPAN-{agent}", f"SECRET-LINE-{agent}"
    prompt = (
        f"We use pnpm in this repo, PUBLIC-{agent}. <PRIVATE>my card is {hidden}\nand more</private> thanks\n"
        f"  {PREFIX} {line_hidden}\nplease <private>unclosed {hidden}"
    )
    payload = aimed(example(agent, event, name), repo, prompt=prompt)
    if agent == "kiro":
        payload["session_id"] = "kiro-private"
    for _ in range(2):
        run_launcher(home, repo, agent, event, payload)

    assert any(f"PUBLIC-{agent}" in text for text in stored_prompts(home))  # the prompt was kept…
    assert files_holding(hidden, home, repo / ".hivelore") == []  # …without its private parts
    assert files_holding(line_hidden, home, repo / ".hivelore") == []


def test_private_spans_stay_out_of_failures_and_the_agents_last_words(home: Path, repo: Path) -> None:
    (repo / ".hivelore").mkdir()
    failed = aimed(example("claude", "PostToolUseFailure", "Bash non-zero exit"), repo, session_id="s-1")
    failed["tool_input"]["command"] = "psql <private>postgres://u:SECRET-CMD@db</private> -c 'select 1'"
    failed["error"] = "Exit code 1\nconnection refused <private>SECRET-ERR</private>"
    hook(home, repo, "claude", "PostToolUseFailure", failed)
    stop = aimed(example("claude", "Stop", "recorded Stop (main)"), repo, session_id="s-1")
    stop["last_assistant_message"] = "Fixed the port. <private>SECRET-LAST</private> Saved a lesson."
    hook(home, repo, "claude", "Stop", stop)

    assert "Fixed the port." in "".join(p.read_text() for p in (repo / ".hivelore").rglob("*.md"))
    for hidden in ("SECRET-CMD", "SECRET-ERR", "SECRET-LAST"):
        assert files_holding(hidden, home, repo / ".hivelore") == [], hidden


@pytest.mark.anyio
async def test_a_memory_written_through_the_cli_or_mcp_loses_its_private_spans(
    home: Path, repo: Path, cli: CLI, tmp_path: Path
) -> None:
    written = cli("write", "repo::acme/checkout::db-port", "Postgres listens on 5433 <private>pw SECRET-CLI</private>")
    assert written.returncode == 0, written.stderr
    async with mcp_session(home, repo, tmp_path / "mcp.log") as session:
        value = {"scope": "repo::acme/checkout", "key": "cache", "value": "Redis on 6380 <private>SECRET-MCP"}
        assert not (await session.call_tool("memory_write", value)).is_error
        read = await session.call_tool("memory_read", {"scope": "repo::acme/checkout", "key": "cache"})
    assert "Redis on 6380" in text_of(read)
    assert "Postgres listens on 5433" in cli("read", "repo::acme/checkout::db-port").stdout
    assert files_holding("SECRET-CLI", home) == files_holding("SECRET-MCP", home) == []


def test_a_memory_that_is_all_private_is_refused_and_nothing_is_written(home: Path, cli: CLI) -> None:
    result = cli("write", "repo::acme/checkout::k", "<private>SECRET-ALL</private>")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "all private" in result.stderr
    assert files_holding("SECRET-ALL", home) == [] and not list(home.rglob("*.md"))


def test_an_import_loses_its_private_spans(home: Path, repo: Path, cli: CLI, tmp_path: Path) -> None:
    record = {
        "scope": "repo::acme/checkout",
        "key": "ci",
        "value": "CI runs on arm64 <private>token SECRET-IMP</private>",
    }
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(record) + "\n")
    result = cli("import", str(source))
    assert result.returncode == 0, result.stderr
    assert "CI runs on arm64" in cli("read", "repo::acme/checkout::ci").stdout
    assert files_holding("SECRET-IMP", home) == []


# --- off and capture off -----------------------------------------------------------------------------------------


def claude_story(home: Path, repo: Path, session: str) -> list[str]:
    """A session start, a prompt, a failing command and a stop, as Claude Code sends them."""
    start = aimed(example("claude", "SessionStart", "startup with model"), repo, session_id=session)
    prompt = aimed(example("claude", "UserPromptSubmit", "plain prompt"), repo, session_id=session)
    prompt["prompt"] = "Why does the postgres test fail? We use pnpm in this repo."
    failed = aimed(example("claude", "PostToolUseFailure", "Bash non-zero exit"), repo, session_id=session)
    stop = aimed(example("claude", "Stop", "recorded Stop (main)"), repo, session_id=session)
    stop["last_assistant_message"] = "The postgres port was wrong."
    events = [("SessionStart", start), ("UserPromptSubmit", prompt), ("PostToolUseFailure", failed), ("Stop", stop)]
    return [hook(home, repo, "claude", event, payload) for event, payload in events]


def test_off_in_a_repository_makes_every_hook_silent_and_stores_nothing(home: Path, repo: Path, cli: CLI) -> None:
    assert cli("write", "repo::acme/checkout::db-port", "the postgres test needs port 5433").returncode == 0
    (repo / ".hivelore").mkdir()
    (repo / ".hivelore.json").write_text('{"mode": "off"}')
    before = sorted(p.name for p in home.iterdir())

    assert claude_story(home, repo, "off-1") == ["", "", "", ""]
    assert sorted(p.name for p in home.iterdir()) == before  # no events.db, no team.db: nothing was kept
    assert list((repo / ".hivelore").iterdir()) == []


@pytest.mark.anyio
async def test_off_is_said_in_one_line_by_the_cli_and_mcp_and_doctor_names_the_file(
    home: Path, repo: Path, cli: CLI, tmp_path: Path
) -> None:
    (repo / ".hivelore.json").write_text('{"mode": "off"}')
    line = f"hivelore is off in this repository (set by {repo}/.hivelore.json)"
    for args in (("search", "postgres"), ("write", "global::k", "v"), ("list",)):
        result = cli(*args)
        assert result.returncode != 0 and result.stdout == ""
        assert result.stderr.startswith(f"hivelore: {line}") and result.stderr.count("\n") == 1

    async with mcp_session(home, repo, tmp_path / "mcp.log") as session:
        searched = await session.call_tool("memory_search", {"query": "postgres"})
    assert searched.is_error and line in text_of(searched)
    doctor = cli("doctor")
    assert doctor.returncode == 0 and line in doctor.stdout


def test_hivelore_mode_off_switches_it_off_everywhere(home: Path, repo: Path) -> None:
    payload = aimed(example("claude", "UserPromptSubmit", "plain prompt"), repo, session_id="env-off")
    env = {**hook_env(home), "HIVELORE_MODE": "off"}
    result = subprocess.run(
        [str(HOOK), "--agent", "claude", "--event", "UserPromptSubmit"],
        input=json.dumps(payload).encode(), cwd=repo, env=env, capture_output=True, timeout=60,
    )  # fmt: skip
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert not home.exists() or not (home / "events.db").exists()


def test_off_in_one_repository_leaves_another_on(home: Path, repo: Path, tmp_path: Path) -> None:
    from harness import make_repo

    other = make_repo(tmp_path / "other", origin="git@github.com:acme/other.git")
    (repo / ".hivelore.json").write_text('{"mode": "off"}')
    for folder, session in ((repo, "in-off"), (other, "in-on")):
        payload = aimed(example("claude", "UserPromptSubmit", "plain prompt"), folder, session_id=session)
        hook(home, folder, "claude", "UserPromptSubmit", payload)
    with sqlite3.connect(home / "events.db") as conn:
        assert [r[0] for r in conn.execute("SELECT session_id FROM prompts")] == ["in-on"]


def test_capture_off_keeps_the_reads_and_stores_no_prompt_failure_or_note(home: Path, repo: Path, cli: CLI) -> None:
    lesson = "the postgres test needs the local postgres on port 5433"
    assert cli("write", "repo::acme/checkout::db-port", lesson).returncode == 0
    (repo / ".hivelore.json").write_text('{"capture": "off"}')

    start = claude_story(home, repo, "quiet-1")[0]
    assert "db-port" in start  # the session start still gives the lessons
    with sqlite3.connect(home / "events.db") as conn:
        kept = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("prompts", "runs", "evidence")}
    assert kept == {"prompts": 0, "runs": 0, "evidence": 0}
    assert [p.name for p in home.rglob("*.md") if "session-" in p.name] == []


def test_the_hook_server_decides_off_and_private_spans_per_event(
    home: Path, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One resident server answers for every repository: the switch and the prefix are each event's folder's."""
    from harness import make_repo

    from hivelore.hooks.client import server_state, start_server, stop_server

    monkeypatch.setenv("HIVELORE_HOOK_SERVER", "on")
    other = make_repo(tmp_path / "other", origin="git@github.com:acme/other.git")
    (repo / ".hivelore.json").write_text('{"mode": "off"}')
    (other / ".hivelore.json").write_text(json.dumps({"private_prefix": PREFIX}))
    home.mkdir()
    start_server(str(home))
    deadline = time.monotonic() + 30
    while not server_state(str(home), {}).startswith("running"):
        assert time.monotonic() < deadline, "the hook server did not start"
        time.sleep(0.05)
    try:
        for folder, session in ((repo, "in-off"), (other, "in-on"), (repo, "in-off-2")):
            payload = aimed(example("claude", "UserPromptSubmit", "plain prompt"), folder, session_id=session)
            payload["prompt"] = (
                f"We use pnpm here ({session}).\n{PREFIX} SECRET-SERVED <private>SECRET-SERVED</private>"
            )
            run_launcher(home, folder, "claude", "UserPromptSubmit", payload)
        assert "3 events answered" in server_state(str(home), {})
    finally:
        stop_server(str(home))
    assert [p.splitlines() for p in stored_prompts(home)] == [["We use pnpm here (in-on)."]]
    assert files_holding("SECRET-SERVED", home) == []
