"""`hivelore hook` end to end: the real command, one subprocess per agent event, the payload on stdin.

Every call runs `python -m hivelore hook --agent A --event E` in the `repo` fixture's checkout (origin
acme/checkout, branch main, so a lesson's default scope is repo::acme/checkout) with HIVELORE_HOME set to the
test's home, exactly as an agent runs an installed hook. Payloads are the recorded and documented ones in
tests/fixtures/hook-payloads, pointed at the temporary repo (their `cwd`, Cursor's `workspace_roots`); a test
that needs a variant says which fields it changes.

Whatever happens, a hook exits 0, prints nothing on stderr and either nothing or one answer in the agent's own
format on stdout; `hook()` checks that on every call, and that no call takes longer than HOOK_SECONDS.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from harness import (
    ADDRESS,
    BAD_INPUT,
    HOOK_SECONDS,
    KEY,
    LESSON,
    NUDGE,
    PAYLOADS,
    REPO,
    SEEN,
    SHOP_FILES,
    aimed,
    claude_prompt,
    example,
    failing_tests,
    fixture_payloads,
    hook,
    hook_env,
    log_lines,
    make_shop,
    mcp_session,
    problems,
    run_hook,
    said,
    session_start,
)

from hivelore.events.store import EventStore
from hivelore.hooks.catalog import AGENTS, HOOK_EVENTS

CLI = Callable[..., subprocess.CompletedProcess[str]]


BRANCH = "branch::acme/checkout::main"


# --- running the hook ---------------------------------------------------------------------------------------------


def git_status(repo: Path) -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--ignored"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


# --- payloads -----------------------------------------------------------------------------------------------------


def claude_bash_ok(repo: Path, session: str, command: str) -> dict:
    """Claude's PostToolUse of a Bash call that succeeded (its response carries no exit code)."""
    payload = example("claude", "PostToolUse", "Bash")
    payload["tool_input"]["command"] = command
    return aimed(payload, repo, session_id=session)


def claude_stop(repo: Path, session: str) -> dict:
    return aimed(example("claude", "Stop", "normal end of turn"), repo, session_id=session)


# --- 1. every recorded and documented payload -------------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_every_fixture_payload_gets_a_well_formed_answer_or_none(home: Path, repo: Path, agent: str) -> None:
    """Each example and raw capture of the agent's folder, replayed in order in one home, as that agent.

    Every call exits 0 in under HOOK_SECONDS with an empty stderr and prints nothing or one answer the agent
    parses: claude/codex/gemini/cursor one line of JSON (hookSpecificOutput names the wire event and carries a
    string additionalContext; Cursor's fields are its own; nothing blocks or denies), Kiro plain text. Events
    hivelore does not hook print nothing. No handler fails (hooks.log stays empty), nothing is written into the
    repository, and the session-start event is answered at least once (so the replay is not vacuous).
    """
    failures, answered = [], set()
    cases = fixture_payloads(agent)
    assert len(cases) >= 5
    for label, event, payload in cases:
        result = run_hook(home, repo, ["--agent", agent, "--event", event], json.dumps(aimed(payload, repo)).encode())
        found = problems(agent, event, result.stdout)
        if result.returncode != 0:
            found.append(f"exit code {result.returncode}")
        if result.stderr:
            found.append(f"stderr {result.stderr[-300:]!r}")
        if result.seconds >= HOOK_SECONDS:
            found.append(f"took {result.seconds:.1f} s")
        failures += [f"{label} ({event}): {problem}" for problem in found]
        if result.stdout and not found and said(agent, result.stdout):
            answered.add(event)

    assert failures == []
    assert log_lines(home) == []
    assert git_status(repo) == ""
    first_event = HOOK_EVENTS[agent][0]
    assert first_event[1] == "session_start" and first_event[0] in answered


# --- 2. bad input -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "stdin", "logged"), list(BAD_INPUT.values()), ids=list(BAD_INPUT))
def test_bad_input_exits_0_and_says_why_in_the_log(
    home: Path, repo: Path, args: list[str], stdin: bytes, logged: str | None
) -> None:
    """Whatever arrives, the hook exits 0 quickly and prints nothing or a well-formed answer on stdout.

    A bad payload or command line leaves one line in HIVELORE_HOME/logs/hooks.log (an agent shows a hook's
    stderr at best in a verbose mode); an empty stdin and an event hivelore does not hook are not errors.
    A wrong command line also gets a usage line on stderr, for whoever runs it by hand.
    """
    result = run_hook(home, repo, args, stdin)

    assert result.returncode == 0
    assert result.seconds < HOOK_SECONDS
    agent = args[1]
    event = args[3] if len(args) > 3 else ""
    assert problems(agent if agent in AGENTS else "claude", event, result.stdout) == []
    lines = log_lines(home)
    if logged is None:
        assert lines == []
    else:
        assert len(lines) == 1 and logged in lines[0]
    if agent not in AGENTS or not event:
        assert result.stdout == b""
        assert b"usage: hivelore hook" in result.stderr
    else:
        assert result.stderr == b""
    if event == "BeforeEverything":
        assert result.stdout == b""


def test_a_lone_surrogate_in_a_payload_is_replaced_and_the_event_answered(home: Path, repo: Path, cli: CLI) -> None:
    """`"\\ud800"` is valid JSON, but decodes to no text UTF-8 can hold (the stores and the answer could not take
    it): it is read as U+FFFD, and the event is answered like any other, in a failed command and in a prompt."""
    event, failure = failing_tests("claude", repo, "lone-1", command="pnpm test \udfff")
    prompt = claude_prompt(repo, "lone-1", "why does pnpm test fail with ECONNREFUSED 5432? \ud800")
    assert b"\\udfff" in json.dumps(failure).encode() and b"\\ud800" in json.dumps(prompt).encode()

    nudge = hook(home, repo, "claude", event, failure)
    assert nudge.startswith("hivelore: `pnpm test \ufffd` failed") and NUDGE in nudge
    assert cli("write", ADDRESS, LESSON).returncode == 0
    assert ADDRESS in hook(home, repo, "claude", "UserPromptSubmit", prompt)

    store = EventStore.open(str(home))
    try:
        assert [p.text for p in store.prompts()] == ["why does pnpm test fail with ECONNREFUSED 5432? \ufffd"]
    finally:
        store.close()
    assert log_lines(home) == []


# --- 3. the session story ------------------------------------------------------------------------------------------


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def ahook(home: Path, repo: Path, agent: str, event: str, payload: dict) -> str:
    """`hook` in a worker thread, so a test with an MCP session keeps its event loop running."""
    return await anyio.to_thread.run_sync(lambda: hook(home, repo, agent, event, payload))


@pytest.mark.anyio
@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
async def test_a_failure_nudges_a_lesson_is_written_over_mcp_and_the_next_session_gets_it(
    home: Path, repo: Path, tmp_path: Path, agent: str
) -> None:
    """The story hivelore exists for, with real processes only.

    Session 1 starts on an empty vault, `pnpm test` fails with ECONNREFUSED 127.0.0.1:5432 and no lesson
    matches: the hook nudges the agent to write one with memory_write, naming the scope repo::acme/checkout.
    The agent writes it over the real MCP server. Session 2 starts with the lesson injected ("1 of 1", framed
    as considerations, not rules) and, when the same failure happens again, is shown the lesson ("you have hit
    something like this before") instead of the nudge, though its session start already listed it.
    """
    event, payload = session_start(agent, repo, "story-1")
    assert await ahook(home, repo, agent, event, payload) == (
        f"hivelore: no memories yet for {BRANCH}. When something was non-obvious, write a lesson with memory_write."
    )

    event, payload = failing_tests(agent, repo, "story-1")
    nudge = await ahook(home, repo, agent, event, payload)
    assert nudge.startswith("hivelore: `pnpm test` failed")
    assert NUDGE in nudge and "memory_write" in nudge and f"scope '{REPO}'" in nudge

    async with mcp_session(home, repo, tmp_path / "mcp.log") as session:
        result = await session.call_tool("memory_write", {"scope": REPO, "key": KEY, "value": LESSON})
        assert not result.is_error and result.structured_content["created"] is True

    event, payload = session_start(agent, repo, "story-2")
    context = await ahook(home, repo, agent, event, payload)
    header, *lines = context.splitlines()
    assert header == f"1 of 1 memories · {BRANCH} — considerations, not rules; read any in full with memory_read"
    assert lines == [f"- {ADDRESS} [lesson]: {LESSON}", "left out: nothing"]

    event, payload = failing_tests(agent, repo, "story-2")
    again = await ahook(home, repo, agent, event, payload)
    assert again.splitlines() == [
        f"hivelore: {SEEN} (considerations, not rules; read any in full with memory_read):",
        f"- {ADDRESS} [lesson]: {LESSON}",
    ]


# --- 4. once per session, again after compaction ------------------------------------------------------------------


def test_the_session_start_block_is_given_once_per_session_and_again_after_compaction(
    home: Path, repo: Path, cli: CLI
) -> None:
    """A resumed session is not told twice; after PreCompact (the agent's context was summarised away) or a
    SessionStart with source "compact" the block comes back, once."""
    assert cli("write", ADDRESS, LESSON).returncode == 0

    def start(source: str) -> str:
        return hook(home, repo, "claude", *session_start("claude", repo, "once-1", source))

    block = start("startup")
    assert ADDRESS in block and block.startswith("1 of 1 memories")
    assert start("resume") == ""

    precompact = aimed(example("claude", "PreCompact", "auto"), repo, session_id="once-1")
    assert hook(home, repo, "claude", "PreCompact", precompact) == ""  # Claude discards PreCompact output
    assert start("resume") == block
    assert start("resume") == ""

    assert start("compact") == block
    assert start("resume") == ""
    # another session of the same folder gets its own block
    assert hook(home, repo, "claude", *session_start("claude", repo, "once-2")) == block


# --- 5. lessons under a prompt ---------------------------------------------------------------------------------------


def test_a_prompt_shows_the_lessons_it_bears_on_once_and_is_kept_unless_read_only(
    home: Path, repo: Path, cli: CLI
) -> None:
    """A question about the failing tests gets the postgres lesson (not the unrelated one); asked again in the
    same session it is silent (already shown); an unrelated request is silent. Prompts are kept in events.db
    for promotion, in order; a `--read-only` hook answers the same but keeps nothing."""
    assert cli("write", ADDRESS, LESSON).returncode == 0
    assert cli("write", f"{REPO}::changelog-lives-in-docs", "The changelog is docs/CHANGES.md.").returncode == 0
    question = "why does pnpm test fail with ECONNREFUSED 5432?"

    shown = hook(home, repo, "claude", "UserPromptSubmit", claude_prompt(repo, "prompt-1", question))
    assert shown.splitlines() == [
        "hivelore: lessons that may bear on this request (considerations, not rules; read any in full with "
        "memory_read):",
        f"- {ADDRESS} [lesson]: {LESSON}",
    ]
    assert hook(home, repo, "claude", "UserPromptSubmit", claude_prompt(repo, "prompt-1", question)) == ""
    unrelated = "rename the button label"
    assert hook(home, repo, "claude", "UserPromptSubmit", claude_prompt(repo, "prompt-1", unrelated)) == ""

    read_only = claude_prompt(repo, "prompt-2", question)
    assert hook(home, repo, "claude", "UserPromptSubmit", read_only, "--read-only") == shown

    store = EventStore.open(str(home))
    try:
        kept = [(p.agent, p.session_id, p.text, p.root) for p in store.prompts()]
    finally:
        store.close()
    assert kept == [("claude", "prompt-1", text, True) for text in (question, question, unrelated)]


def test_a_prompt_shows_at_most_three_lessons(home: Path, repo: Path, cli: CLI) -> None:
    """Five lessons match; the prompt gets three, asking again gets the other two, then nothing."""
    for n in range(5):
        value = f"ECONNREFUSED 5432 from pnpm test, cause number {n}: see runbook section {n}."
        assert cli("write", f"{REPO}::econnrefused-cause-{n}", value).returncode == 0
    question = "why does pnpm test fail with ECONNREFUSED 5432?"

    def lessons() -> list[str]:
        text = hook(home, repo, "claude", "UserPromptSubmit", claude_prompt(repo, "cap-1", question))
        return [line for line in text.splitlines() if line.startswith("- ")]

    first, second = lessons(), lessons()
    assert (len(first), len(second)) == (3, 2)
    assert {line.split(" [")[0] for line in first + second} == {f"- {REPO}::econnrefused-cause-{n}" for n in range(5)}
    assert lessons() == []


# --- 6. a fix is learnt -----------------------------------------------------------------------------------------------


def test_the_commands_that_fixed_a_failure_are_offered_when_it_happens_again(home: Path, repo: Path) -> None:
    """`pnpm test` fails (no lesson stored: a nudge), `docker compose up -d db` succeeds, `pnpm test` then
    passes: in a new session the same failure is answered with what fixed it, not with a nudge."""
    event, payload = failing_tests("claude", repo, "fix-1")
    assert NUDGE in hook(home, repo, "claude", event, payload)
    assert hook(home, repo, "claude", "PostToolUse", claude_bash_ok(repo, "fix-1", "docker compose up -d db")) == ""
    assert hook(home, repo, "claude", "PostToolUse", claude_bash_ok(repo, "fix-1", "pnpm test")) == ""

    event, payload = failing_tests("claude", repo, "fix-2")
    assert hook(home, repo, "claude", event, payload) == (
        "hivelore: `pnpm test` failed like this 1 time before; what fixed it then: `docker compose up -d db`."
    )


def test_a_failure_that_passed_when_run_again_says_so(home: Path, repo: Path) -> None:
    """No command in between: the fix learnt is the rerun itself."""
    event, payload = failing_tests("claude", repo, "flaky-1")
    hook(home, repo, "claude", event, payload)
    hook(home, repo, "claude", "PostToolUse", claude_bash_ok(repo, "flaky-1", "pnpm test"))

    event, payload = failing_tests("claude", repo, "flaky-2")
    assert hook(home, repo, "claude", event, payload) == (
        "hivelore: `pnpm test` failed like this 1 time before; it passed when simply run again."
    )


def test_the_same_failure_twice_in_a_session_is_answered_once(home: Path, repo: Path, cli: CLI) -> None:
    """With a matching lesson or without, a repeated failure is not answered again in the same session
    (and never with "no stored lesson matches" while a lesson matches)."""
    event, payload = failing_tests("claude", repo, "twice-1")
    assert NUDGE in hook(home, repo, "claude", event, payload)
    assert hook(home, repo, "claude", event, payload) == ""

    assert cli("write", ADDRESS, LESSON).returncode == 0
    event, payload = failing_tests("claude", repo, "twice-2")
    assert SEEN in hook(home, repo, "claude", event, payload)
    assert hook(home, repo, "claude", event, payload) == ""


# --- 7. stop and session end ----------------------------------------------------------------------------------------


def test_a_session_with_friction_gets_one_retrospective_nudge_at_stop(home: Path, repo: Path) -> None:
    """Claude's Stop is answered with a systemMessage (additionalContext there would keep Claude going), once
    per session; a session without friction gets nothing."""
    event, payload = failing_tests("claude", repo, "stop-1")
    hook(home, repo, "claude", event, payload)
    out = run_hook(
        home, repo, ["--agent", "claude", "--event", "Stop"], json.dumps(claude_stop(repo, "stop-1")).encode()
    )

    assert list(json.loads(out.stdout)) == ["systemMessage"]
    assert said("claude", out.stdout) == (
        "hivelore: this session had friction (1 failed command). If the cause or the fix was non-obvious, save it "
        f"for next time with memory_write (scope '{REPO}', a short kebab-case key naming the problem, the value: "
        "symptom → cause → fix)."
    )
    assert hook(home, repo, "claude", "Stop", claude_stop(repo, "stop-1")) == ""

    hook(home, repo, "claude", "UserPromptSubmit", claude_prompt(repo, "stop-2", "rename the button label"))
    hook(home, repo, "claude", "PostToolUse", claude_bash_ok(repo, "stop-2", "pnpm test"))
    assert hook(home, repo, "claude", "Stop", claude_stop(repo, "stop-2")) == ""


def test_session_end_keeps_the_last_message_as_a_staged_note(home: Path, repo: Path) -> None:
    """The adapter reads last_assistant_message (also prompt_response, assistant_response, Cursor's text); no
    recorded SessionEnd carries one, so this is the recorded payload plus that field. The note is a Markdown
    file in the vault, staged, kind note, in the branch scope, tagged with the agent, expiring."""
    message = "Fixed the checkout tests: the db container has to be up before pnpm test."
    payload = aimed(example("claude", "SessionEnd", "reason=prompt_input_exit"), repo, session_id="end-1")
    payload["last_assistant_message"] = message

    assert hook(home, repo, "claude", "SessionEnd", payload) == ""  # Claude discards SessionEnd output

    notes = [path for path in home.rglob("*.md") if message in path.read_text()]
    assert len(notes) == 1
    text = notes[0].read_text()
    assert notes[0].parent == home / "branch" / "acme" / "checkout" / "main"
    assert re.search(r"^state: staged$", text, re.MULTILINE) and re.search(r"^kind: note$", text, re.MULTILINE)
    assert re.search(r"^tags: \[session-note, claude\]$", text, re.MULTILINE)
    assert re.search(r'^expires_at: "\d{4}-', text, re.MULTILINE)


def test_the_agents_last_words_come_back_as_its_words_not_as_a_lesson(home: Path, repo: Path) -> None:
    """The real Codex Stop payload whose model said "Saved the lesson." (it had saved nothing): the next
    session start shows that sentence attributed to the agent, with its session and time, as a note that says
    it is not a stored lesson; no lesson line claims it."""
    lines = (PAYLOADS / "codex" / "real-0.171-hooks.ndjson").read_text().splitlines()
    stop = next(json.loads(line)["_payload"] for line in lines if '"Stop"' in line)
    assert stop["last_assistant_message"] == "Saved the lesson."
    assert hook(home, repo, "codex", "Stop", aimed(stop, repo)) == ""

    event, payload = session_start("codex", repo, "words-2")
    context = hook(home, repo, "codex", event, payload)

    [line] = [line for line in context.splitlines() if "Saved the lesson." in line]
    said = rf"the agent \(codex\) said at the end of session {stop['session_id']} at \d{{4}}-\d\d-\d\d \d\d:\d\d UTC"
    quoted = r'\(its own words, not a stored lesson\): "Saved the lesson\."'
    assert re.search(rf"\[note\] \[staged\]: {said} {quoted}$", line)
    assert "[lesson]" not in context


# --- 7b. Codex: the exit code from its rollout transcript ------------------------------------------------------------


def codex_real(repo: Path, tmp_path: Path, session: str, rollout: str, **fields: Any) -> dict:
    """The PostToolUse payload the real Codex CLI 0.171.0 sent for a failing `exec_command` (no exit code in it;
    codex/real-0.171-hooks.ndjson), aimed at the repo, its transcript_path at a copy of the rollout that Codex
    had written when the hook ran (codex/rollouts/), with `fields` set on top."""
    lines = (PAYLOADS / "codex" / "real-0.171-hooks.ndjson").read_text().splitlines()
    payload = next(
        p for p in (json.loads(line)["_payload"] for line in lines)
        if p["hook_event_name"] == "PostToolUse" and "ECONNREFUSED" in p["tool_response"]
    )  # fmt: skip
    transcript = tmp_path / session / Path(payload["transcript_path"]).name
    transcript.parent.mkdir(parents=True, exist_ok=True)
    transcript.write_bytes((PAYLOADS / "codex" / "rollouts" / rollout).read_bytes())
    return aimed(payload, repo, session_id=session, transcript_path=str(transcript), **fields)


def test_a_codex_failure_is_read_from_its_transcript_nudged_then_recognised(
    home: Path, repo: Path, cli: CLI, tmp_path: Path
) -> None:
    """Codex's PostToolUse says only "Error: connect ECONNREFUSED …": the exit code (1) is in the rollout. The
    failure is recorded with it and answered with the nudge naming the repo scope; once a lesson is written, the
    same failure in a new session brings it back."""
    payload = codex_real(repo, tmp_path, "cx-1", "exec-failed-0.171.jsonl")
    assert "exit_code" not in json.dumps(payload)

    first = hook(home, repo, "codex", "PostToolUse", payload)

    assert NUDGE in first and f"scope '{REPO}'" in first
    store = EventStore.open(str(home))
    try:
        runs = store.conn.execute("SELECT command, exit_code FROM runs WHERE session_id = 'cx-1'").fetchall()
    finally:
        store.close()
    assert runs == [(payload["tool_input"]["command"], 1)]

    assert cli("write", ADDRESS, LESSON).returncode == 0
    again = hook(home, repo, "codex", "PostToolUse", codex_real(repo, tmp_path, "cx-2", "exec-failed-0.171.jsonl"))

    assert again.startswith(f"hivelore: {SEEN}") and KEY in again


def test_a_codex_command_of_unknown_outcome_is_not_taken_for_the_fix(home: Path, repo: Path, tmp_path: Path) -> None:
    """The same command again, with output that says nothing and no transcript to read: its exit code is unknown,
    so it is not remembered as the run that fixed the failure ("it passed when simply run again" would be a guess)."""
    hook(home, repo, "codex", "PostToolUse", codex_real(repo, tmp_path, "cx-3", "exec-failed-0.171.jsonl"))
    unknown = codex_real(repo, tmp_path, "cx-3", "exec-failed-0.171.jsonl", tool_response="checked\n")
    unknown["transcript_path"] = str(tmp_path / "no-such-rollout.jsonl")
    assert hook(home, repo, "codex", "PostToolUse", unknown) == ""

    again = hook(home, repo, "codex", "PostToolUse", codex_real(repo, tmp_path, "cx-4", "exec-failed-0.171.jsonl"))

    assert NUDGE in again and "simply run again" not in again


# --- 7c. Gemini: what is said before a tool reaches the model with its result ---------------------------------------


def gemini_real(line: int, repo: Path, session: str) -> dict:
    """Line `line` of gemini/real-0.61-hooks.ndjson (the real Gemini CLI 0.61.0), aimed at the repo: its cwd, and a
    tool input's file_path moved from the recorded folder into `repo`."""
    recorded = (PAYLOADS / "gemini" / "real-0.61-hooks.ndjson").read_text().splitlines()[line - 1]
    payload = aimed(json.loads(recorded)["_payload"], repo, session_id=session)
    path = payload.get("tool_input", {}).get("file_path")
    if path:
        payload["tool_input"]["file_path"] = str(repo / Path(path).relative_to("/tmp/gmlab/shop"))
    return payload


def claim_validate_token(home: Path, shop: Path) -> None:
    """dev-a's Claude session works on "add JWT support" and edits validate_token: its task claims it."""
    hook(home, shop, "claude", "UserPromptSubmit", claude_prompt(shop, "a-1", "add JWT support"), developer="dev-a")
    old = "    return token.split('.')[0]"
    edit = {"file_path": str(shop / "shop/tokens.py"), "old_string": old, "new_string": old + "  # jwt"}
    pre = aimed(example("claude", "PreToolUse", "Bash"), shop, session_id="a-1", tool_name="Edit", tool_input=edit)
    assert hook(home, shop, "claude", "PreToolUse", pre, developer="dev-a") == ""


@pytest.fixture
def shop(tmp_path: Path, home: Path) -> Path:
    """The shop of tests/test_team_flow.py (checkout → current_user → validate_token), its graph indexed, and
    validate_token claimed by dev-a's task "add JWT support"."""
    repo = make_shop(tmp_path / "shop", SHOP_FILES)
    indexed = subprocess.run(
        [sys.executable, "-m", "hivelore", "graph", "index"], cwd=repo, env=hook_env(home, "dev-a"),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert indexed.returncode == 0, indexed.stderr
    claim_validate_token(home, repo)
    return repo


def test_gemini_is_warned_before_its_edit_and_its_model_gets_the_warning_with_the_result(
    home: Path, shop: Path
) -> None:
    """Gemini CLI shows a BeforeTool answer to the user only: the warning about dev-a's claim is shown there (as
    systemMessage), held, and given to the model with the edit's AfterTool (additionalContext), said as what it is
    — said before the edit. Once: the next tool result carries nothing, and nothing stays held."""
    user_sees = hook(home, shop, "gemini", "BeforeTool", gemini_real(18, shop, "g-1"), developer="dev-b")
    assert "checkout → current_user → validate_token" in user_sees

    result = run_hook(home, shop, ["--agent", "gemini", "--event", "AfterTool"],
                      json.dumps(gemini_real(19, shop, "g-1")).encode(), "dev-b")  # fmt: skip

    assert problems("gemini", "AfterTool", result.stdout) == [] and result.stderr == b""
    model_sees = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert model_sees.startswith("hivelore, before your edit of shop/orders.py:\n- heads-up (a warning, not a block)")
    assert "checkout → current_user → validate_token" in model_sees and "dev-a" in model_sees
    assert "add JWT support" in model_sees
    assert hook(home, shop, "gemini", "AfterTool", gemini_real(19, shop, "g-1"), developer="dev-b") == ""
    with EventStore.open(str(home)) as store:
        assert store.take_notices("gemini", "g-1") == []
    assert log_lines(home) == []


def test_a_held_warning_waits_for_its_own_session_and_claude_holds_nothing(home: Path, shop: Path) -> None:
    """Another Gemini session's tool result does not take the warning; Claude Code, whose model reads its
    PreToolUse answer, is warned there and its PostToolUse says nothing more."""
    hook(home, shop, "gemini", "BeforeTool", gemini_real(18, shop, "g-2"), developer="dev-b")
    assert hook(home, shop, "gemini", "AfterTool", gemini_real(19, shop, "g-other"), developer="dev-b") == ""
    assert "validate_token" in hook(home, shop, "gemini", "AfterTool", gemini_real(19, shop, "g-2"), developer="dev-b")

    old = "    return {'user': user, 'total': sum(cart)}"
    edit = {"file_path": str(shop / "shop/orders.py"), "old_string": old, "new_string": old + "  # items"}
    pre = aimed(example("claude", "PreToolUse", "Bash"), shop, session_id="c-1", tool_name="Edit", tool_input=edit)
    assert "validate_token" in hook(home, shop, "claude", "PreToolUse", pre, developer="dev-c")
    post = {**pre, "hook_event_name": "PostToolUse", "tool_response": {"filePath": edit["file_path"]}}
    assert hook(home, shop, "claude", "PostToolUse", post, developer="dev-c") == ""


def test_gemini_automatic_pre_compress_forgets_nothing_and_manual_compress_does(home: Path, repo: Path) -> None:
    """Gemini's PreCompress "auto" comes before every model turn, compressing or not (the real session: six in
    two sessions, nothing compressed): it leaves what the session was shown, and opens no store; the user's
    /compress ("manual") is a compaction."""
    failing = failing_tests("gemini", repo, "g-3")
    assert NUDGE in hook(home, repo, "gemini", *failing)
    automatic = gemini_real(3, repo, "g-3")
    assert automatic["trigger"] == "auto"

    assert hook(home, repo, "gemini", "PreCompress", automatic) == ""
    assert hook(home, repo, "gemini", *failing) == ""  # still shown: the nudge is not repeated
    manual = aimed(example("gemini", "PreCompress", "trigger=manual"), repo, session_id="g-3")
    assert hook(home, repo, "gemini", "PreCompress", manual) == ""
    assert NUDGE in hook(home, repo, "gemini", *failing)  # compacted: the model lost it, so it is said again


# --- 8. the hook path imports nothing heavy -------------------------------------------------------------------------

HEAVY = ("typer", "click", "pydantic", "rich", "httpx", "yaml", "mcp")


def probe(event: str) -> str:
    """A `python -c` program: the hook command as `hivelore hook` and `hivelore-hook` run it (answered in its own
    process: conftest.py turns the hook server off), then the heavy modules it imported."""
    return (
        "import sys\n"
        "from hivelore.hooks.client import main\n"
        f"main(['--agent', 'claude', '--event', {event!r}])\n"
        f"heavy = {HEAVY!r}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy), file=sys.stderr)\n"
    )


@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit", "PostToolUseFailure", "SessionEnd", "Stop"])
def test_the_hook_process_imports_no_heavy_library(home: Path, repo: Path, cli: CLI, event: str) -> None:
    """typer, click, pydantic, rich, httpx, yaml and mcp cost more than a whole hook is allowed to take: a session
    start and a prompt that inject a lesson, a failure that shows it, a session end that writes a note and a stop
    that re-writes it import none of them (each probe also checks that its path really ran)."""
    assert cli("write", ADDRESS, LESSON).returncode == 0
    stop = aimed(example("claude", "Stop", "normal end of turn"), repo, session_id="light-1")
    hook(home, repo, "claude", "Stop", {**stop, "last_assistant_message": "First turn: looked at the db setup."})
    payloads = {
        "Stop": {**stop, "last_assistant_message": "Second turn: the checkout tests need the db container up first."},
        "SessionStart": session_start("claude", repo, "light-1")[1],
        "UserPromptSubmit": claude_prompt(repo, "light-1", "why does pnpm test fail with ECONNREFUSED 5432?"),
        "PostToolUseFailure": failing_tests("claude", repo, "light-1")[1],
        "SessionEnd": aimed(example("claude", "SessionEnd", "reason=other"), repo, session_id="light-1"),
    }
    payloads["SessionEnd"]["last_assistant_message"] = "The checkout tests need the db container up first."

    result = subprocess.run(
        [sys.executable, "-c", probe(event)],
        input=json.dumps(payloads[event]),
        cwd=repo,
        env=hook_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.stderr.strip().splitlines()[-1] == "[]"
    if event in ("SessionEnd", "Stop"):
        assert any("db container up first" in path.read_text() for path in home.rglob("*.md"))
        assert not any("First turn" in path.read_text() for path in home.rglob("*.md"))  # replaced, not added
    else:
        assert ADDRESS in said("claude", result.stdout.encode())
    assert log_lines(home) == []
