"""The hook adapters, against every recorded and documented payload in tests/fixtures/hook-payloads.

`normalise` turns each agent's stdin payload into one Event; `answer` renders hivelore's text in the agent's own
stdout contract. Variants of fixture payloads (a failing exit code, an error flag) are built in the tests from a
real fixture and say which field they change.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hivelore.hooks import adapters
from hivelore.hooks.adapters import CAP, Event, answer, holds_pre_tool_text, normalise
from hivelore.hooks.catalog import AGENTS, HOOK_EVENTS, kind_of

PAYLOADS = Path(__file__).parent / "fixtures" / "hook-payloads"
FOLDER_AGENT = {"claude-code": "claude", "codex": "codex", "kiro": "kiro", "gemini": "gemini", "cursor": "cursor"}
STR_FIELDS = (
    "agent", "name", "kind", "session_id", "cwd", "prompt", "tool", "action", "command", "error", "output",
    "source", "summary", "last_message", "transcript_path",
)  # fmt: skip
KINDS = {"session_start", "prompt", "pre_tool", "post_tool", "tool_failure", "stop", "compact", "session_end", "other"}
ACTIONS = {"shell", "edit", "read", "mcp", "other", ""}


def _example_cases() -> list:
    cases = []
    for folder, agent in FOLDER_AGENT.items():
        for path in sorted((PAYLOADS / folder).glob("*.json")):
            if path.name == "payloads.json":
                continue
            doc = json.loads(path.read_text())
            # Codex's legacy notify program is not a hook; its file names the event "notify".
            event = doc["event"] if path.name == "notify.json" else doc["wire_event_name"]
            for index, example in enumerate(doc["examples"]):
                case_id = f"{folder}/{path.stem}#{index} {example['name']}"
                cases.append(pytest.param(agent, event, example["payload"], id=case_id))
    return cases


def _capture_cases() -> list:
    """Every line of the raw captures; the event is the payload's own, as an installation would have wired it."""
    cases = []
    for folder, pattern in (("claude-code", "*.ndjson"), ("codex", "*.ndjson"), ("gemini", "*.ndjson")):
        for path in sorted((PAYLOADS / folder).glob(pattern)):
            lines = [line for line in path.read_text().splitlines() if line.strip()]
            for number, line in enumerate(lines, 1):
                payload = json.loads(line)["_payload"]
                case_id = f"{folder}/{path.name}:{number} {payload['hook_event_name']}"
                cases.append(pytest.param(FOLDER_AGENT[folder], payload["hook_event_name"], payload, id=case_id))
    for key, payload in json.loads((PAYLOADS / "kiro" / "payloads.json").read_text()).items():
        if not key.startswith("_"):
            cases.append(pytest.param("kiro", payload["hook_event_name"], payload, id=f"kiro/payloads.json:{key}"))
    return cases


EXAMPLES = _example_cases()
CAPTURES = _capture_cases()
ALL_CASES = EXAMPLES + CAPTURES


def example(folder: str, event: str, name: str) -> dict:
    """A fixture example's payload (a deep copy, so a test may alter it)."""
    doc = json.loads((PAYLOADS / folder / f"{event}.json").read_text())
    return copy.deepcopy(next(e["payload"] for e in doc["examples"] if e["name"] == name))


def capture(folder: str, name: str, line: int) -> dict:
    return json.loads((PAYLOADS / folder / name).read_text().splitlines()[line - 1])["_payload"]


def kiro_capture(key: str) -> dict:
    return copy.deepcopy(json.loads((PAYLOADS / "kiro" / "payloads.json").read_text())[key])


# --- every payload --------------------------------------------------------------------------------------------------


def assert_well_typed(event: Event) -> None:
    for field in STR_FIELDS:
        assert isinstance(getattr(event, field), str), field
    assert isinstance(event.paths, tuple) and all(isinstance(p, str) and p for p in event.paths)
    assert event.exit_code is None or (isinstance(event.exit_code, int) and not isinstance(event.exit_code, bool))
    for field in ("failed", "interrupted", "subagent"):
        assert isinstance(getattr(event, field), bool), field
    assert event.kind in KINDS and event.action in ACTIONS
    assert len(event.error) <= CAP and len(event.output) <= CAP
    assert not (event.failed and event.interrupted)


@pytest.mark.parametrize(("agent", "event_name", "payload"), ALL_CASES)
def test_every_payload_normalises_to_its_kind(agent: str, event_name: str, payload: dict) -> None:
    event = normalise(agent, event_name, payload)

    assert_well_typed(event)
    assert (event.agent, event.name) == (agent, event_name)
    wired = kind_of(agent, event_name)
    if (agent, event_name, payload.get("trigger")) == ("gemini", "PreCompress", "auto"):
        assert event.kind == "other"  # before every model turn, compressing or not: see test_gemini_pre_compress…
    elif wired in ("post_tool", "tool_failure"):
        # a post-tool event is a tool_failure exactly when the call failed; an interrupt is a plain post_tool
        assert event.kind == ("tool_failure" if event.failed else "post_tool")
    else:
        assert event.kind == wired
    if event.kind in ("pre_tool", "post_tool", "tool_failure"):
        assert event.tool and event.action
    if event.action == "shell":
        assert event.command
    if agent != "kiro" and event.kind != "other":  # only some Kiro CLI captures carry a session_id
        assert event.session_id
    assert event.cwd
    assert normalise(agent, event_name, payload) == event  # deterministic, and Event compares by value


def test_the_fixtures_that_are_tool_failures() -> None:
    failures = {
        case.id.split(" ")[0]
        for case in ALL_CASES
        if normalise(*case.values).kind == "tool_failure"  # type: ignore[arg-type]
    }
    assert failures == {
        "claude-code/PostToolUseFailure#0",
        "claude-code/PostToolUseFailure#1",
        "claude-code/PostToolUseFailure#2",
        "codex/PostToolUse#1",  # no exit code, but pytest's summary counts a failed test
        "codex/real-0.171-hooks.ndjson:2",  # no exit code (its transcript is not here), but an `Error: …` line
        "claude-code/PostToolUseFailure#3",
        "gemini/AfterTool#1",
        "gemini/real-0.61-hooks.ndjson:5",  # ./bin/migrate: "Exit Code: 1" in llmContent
        "gemini/real-0.61-hooks.ndjson:16",
    }


def test_replay_covers_every_capture_line() -> None:
    ndjson_lines = sum(
        1 for path in PAYLOADS.glob("*/*.ndjson") for line in path.read_text().splitlines() if line.strip()
    )
    kiro_keys = [k for k in json.loads((PAYLOADS / "kiro" / "payloads.json").read_text()) if not k.startswith("_")]
    assert len(CAPTURES) == ndjson_lines + len(kiro_keys) == 24 + 9 + 3 + 18 + 6 + 12 + 22


# --- per agent ------------------------------------------------------------------------------------------------------


def test_claude_tool_failure_keeps_the_error_and_its_exit_code() -> None:
    event = normalise("claude", "PostToolUseFailure", example("claude-code", "PostToolUseFailure", "docs example #1"))

    assert (event.kind, event.failed, event.interrupted) == ("tool_failure", True, False)
    assert (event.tool, event.action, event.command) == ("Bash", "shell", "npm test")
    assert event.error == "Exit code 1\nError: Cannot find module 'express'"
    assert event.exit_code == 1


def test_claude_edit_failure_names_the_file() -> None:
    payload = example("claude-code", "PostToolUseFailure", "Edit old_string not found")
    event = normalise("claude", "PostToolUseFailure", payload)

    assert (event.kind, event.action, event.exit_code) == ("tool_failure", "edit", None)
    assert event.paths == ("/home/dev/src/acme-api/src/acme/cart.py",)
    assert event.error.startswith("String to replace not found")


def test_an_interrupt_is_not_a_failure() -> None:
    event = normalise("claude", "PostToolUseFailure", example("claude-code", "PostToolUseFailure", "interrupted"))

    assert (event.kind, event.failed, event.interrupted) == ("post_tool", False, True)
    assert event.command == "npm run build"


def test_claude_bash_interrupted_in_its_response_is_not_a_failure() -> None:
    payload = example("claude-code", "PostToolUse", "Bash")
    payload["tool_response"]["interrupted"] = True  # variant: the user stopped the command

    event = normalise("claude", "PostToolUse", payload)

    assert (event.kind, event.failed, event.interrupted) == ("post_tool", False, True)


def test_claude_post_tool_use_fields() -> None:
    bash = normalise("claude", "PostToolUse", example("claude-code", "PostToolUse", "Bash"))
    assert (bash.command, bash.output, bash.exit_code) == (
        "pytest -q tests/test_orders.py",
        "..\n2 passed in 0.41s\n",
        None,
    )

    edit = normalise("claude", "PostToolUse", example("claude-code", "PostToolUse", "Edit with structuredPatch"))
    assert (edit.action, edit.paths, edit.output) == ("edit", ("/home/dev/src/acme-api/src/acme/cart.py",), "")

    read = normalise("claude", "PostToolUse", example("claude-code", "PostToolUse", "recorded PostToolUse (Read)"))
    assert read.action == "read" and read.paths[0].endswith("/sample.txt")
    assert read.output == "[redacted] file content"

    mcp = normalise("claude", "PostToolUse", example("claude-code", "PostToolUse", "MCP tool (content-block array)"))
    assert mcp.action == "mcp" and '"total": 1' in mcp.output


def test_claude_session_prompt_stop_and_compact_fields() -> None:
    start = normalise("claude", "SessionStart", example("claude-code", "SessionStart", "compact"))
    assert (start.source, start.session_id) == ("compact", "8f3c2a1e-5b7d-4c9e-a1f2-3d4e5f6a7b8c")

    prompt = normalise("claude", "UserPromptSubmit", example("claude-code", "UserPromptSubmit", "plain prompt"))
    assert prompt.prompt == "Why does the /orders endpoint return 500 when the cart is empty?"

    stop = normalise("claude", "Stop", example("claude-code", "Stop", "recorded headless -p run"))
    assert stop.last_message == "banana" and stop.transcript_path

    compacted = normalise("claude", "PostCompact", example("claude-code", "PostCompact", "auto"))
    assert compacted.summary.startswith("User is fixing cart totals")


def test_claude_subagent_payloads_are_flagged() -> None:
    for line in range(1, 25):
        payload = capture("claude-code", "round1.ndjson", line)
        assert normalise("claude", payload["hook_event_name"], payload).subagent == ("agent_id" in payload)

    start, stop, main_stop = (capture("claude-code", "round3-named-subagent.ndjson", n) for n in (1, 2, 3))
    assert normalise("claude", "SubagentStart", start).subagent
    assert normalise("claude", "SubagentStop", stop).subagent
    assert not normalise("claude", "Stop", main_stop).subagent
    # `--agent` names the session's agent without making it a sub-agent
    assert not normalise("claude", "SessionStart", example("claude-code", "SessionStart", "fork with --agent")).subagent
    spawn = normalise("claude", "PreToolUse", example("claude-code", "PreToolUse", "Agent (spawn subagent)"))
    assert spawn.subagent and spawn.action == "other"


def test_codex_bash_command_and_plain_string_output() -> None:
    payload = capture("codex", "round4-codex.ndjson", 12)
    event = normalise("codex", "PostToolUse", payload)

    assert (event.kind, event.tool, event.action) == ("post_tool", "Bash", "shell")
    assert event.command == "echo agentaura-probe"
    assert event.output == "agentaura-probe\n"
    # Codex passes only the output text for Bash and this transcript is not on this machine: the exit code is
    # unknown (not 0), and the output does not say it failed
    assert (event.exit_code, event.exit_unknown, event.failed) == (None, True, False)
    assert event.session_id == "01990005-0000-7000-8000-000000000005"


def test_codex_formatted_shell_output_with_an_exit_code_line_is_a_failure() -> None:
    payload = example("codex", "PostToolUse", "Bash (tool_response is a plain string)")
    # variant: the formatted exec output Codex gives the model ("Exit code: N ... Output:")
    payload["tool_response"] = "Exit code: 1\nWall time: 0.5 seconds\nOutput:\n..F\n1 failed, 2 passed in 0.52s\n"

    event = normalise("codex", "PostToolUse", payload)

    assert (event.kind, event.failed, event.exit_code) == ("tool_failure", True, 1)
    assert "1 failed" in event.error


def test_codex_apply_patch_names_the_patched_files() -> None:
    event = normalise("codex", "PostToolUse", example("codex", "PostToolUse", "apply_patch"))

    assert (event.action, event.paths, event.command) == ("edit", ("src/acme/cart.py",), "")
    patch = "*** Begin Patch\n*** Add File: a.py\n+x\n*** Update File: b.py\n*** Move to: c.py\n*** Delete File: d.py\n"
    moved = normalise("codex", "PreToolUse", {"tool_name": "apply_patch", "tool_input": {"command": patch}})
    assert moved.paths == ("a.py", "b.py", "c.py", "d.py")


def test_codex_apply_patch_anchors_are_the_text_each_hunk_replaces() -> None:
    """So the pre-edit hook claims the functions a patch changes, not every symbol of its files."""
    event = normalise(
        "codex", "PreToolUse", example("codex", "PreToolUse", "apply_patch (raw patch in tool_input.command)")
    )
    assert event.anchors == ("    return sum(i.price for i in items)",)

    patch = (
        "*** Begin Patch\n*** Update File: shop/orders.py\n@@ def checkout(cart):\n     user = current_user()\n"
        "-    total = cart.total()\n+    total = cart.total(user)\n     return pay(total)\n@@ class Cart:\n"
        "-    def total(self):\n+    def total(self, user=None):\n*** Add File: shop/new.py\n+x = 1\n*** End Patch\n"
    )
    event = normalise("codex", "PreToolUse", {"tool_name": "apply_patch", "tool_input": {"command": patch}})
    assert event.anchors == (
        "def checkout(cart):",
        "    user = current_user()\n    total = cart.total()\n    return pay(total)",
        "class Cart:",
        "    def total(self):",
    )


def test_codex_mcp_error_result_is_a_failure() -> None:
    payload = example("codex", "PostToolUse", "MCP tool (serialized McpToolOutput)")
    payload["tool_response"]["isError"] = True  # variant: the MCP server reported an error

    event = normalise("codex", "PostToolUse", payload)

    assert (event.kind, event.action) == ("tool_failure", "mcp")
    assert event.error == '{"hits": [], "total": 0}'


def test_codex_stop_with_null_message_and_subagent_stop() -> None:
    stop = normalise("codex", "Stop", example("codex", "Stop", "no assistant text (null)"))
    assert stop.last_message == ""
    sub = normalise("codex", "SubagentStop", example("codex", "SubagentStop", "worker subagent"))
    assert sub.subagent and sub.kind == "other"
    assert sub.last_message == "Checked 14 call sites; none pass qty."


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        (kiro_capture("postToolUse_fs_write_str_replace"), "aidlc/spaces/default/memory/project.md"),  # success/result
        (
            kiro_capture("postToolUse_write"),
            "/tmp/example-project/aidlc-docs/ideation/intent-capture/intent-statement.md",
        ),
    ],
    ids=["legacy success-result envelope", "items envelope"],
)
def test_kiro_writes_name_their_path_in_both_envelopes(payload: dict, path: str) -> None:
    event = normalise("kiro", "postToolUse", payload)

    assert (event.kind, event.action, event.paths, event.failed) == ("post_tool", "edit", (path,), False)


def test_kiro_write_reported_unsuccessful_is_a_failure() -> None:
    payload = kiro_capture("postToolUse_fs_write_str_replace")
    payload["tool_response"] = {"success": False, "result": ["no match for old_str"]}  # variant: legacy failure

    event = normalise("kiro", "postToolUse", payload)

    assert (event.kind, event.failed, event.error) == ("tool_failure", True, "no match for old_str")


def test_kiro_shell_read_and_deferred_events() -> None:
    shell = normalise("kiro", "postToolUse", kiro_capture("postToolUse_shell"))
    assert (shell.command, shell.output, shell.session_id) == (
        "echo PROBE-BASH",
        "PROBE-BASH",
        "cb3a220a-609f-4265-8ff9-2cafd3658000",
    )

    read = normalise("kiro", "preToolUse", kiro_capture("preToolUse_fs_read"))
    assert (read.action, read.paths) == ("read", ("aidlc/spaces/default/memory/project.md",))

    deferred = example("kiro", "postToolUse", "docs deferred (only_when_turn_complete: hook_events[])")
    event = normalise("kiro", "postToolUse", deferred)
    assert (event.tool, event.action, event.paths) == (
        "fs_write",
        "edit",
        ("/project1/src/main.rs", "/project2/lib.rs"),
    )


def test_kiro_json_item_exit_status_and_ide_exit_code_text() -> None:
    payload = kiro_capture("postToolUse_shell")
    payload["tool_response"] = {"items": [{"Json": {"exit_status": "2", "stdout": "", "stderr": "boom"}}]}  # variant
    event = normalise("kiro", "postToolUse", payload)
    assert (event.kind, event.exit_code, event.error) == ("tool_failure", 2, "boom")

    # Kiro IDE's execute_bash result, as described in SOURCE.md ("Output:\n...\nExit Code: 0")
    ide = {
        "tool_name": "execute_bash",
        "tool_input": {"command": "npm test"},
        "tool_response": "Output:\nfail\nExit Code: 1",
    }
    event = normalise("kiro", "postToolUse", ide)
    assert (event.kind, event.exit_code) == ("tool_failure", 1)


def test_kiro_ide_write_path_comes_from_the_prose_result() -> None:
    ide = {"tool_name": "fs_write", "tool_input": {}, "tool_response": "Replaced text in src/app.ts"}
    assert normalise("kiro", "postToolUse", ide).paths == ("src/app.ts",)
    ide["tool_response"] = "Created the docs/new file.md file."
    assert normalise("kiro", "postToolUse", ide).paths == ("docs/new file.md",)


def test_kiro_session_prompt_stop_and_subagent() -> None:
    spawn = normalise("kiro", "agentSpawn", kiro_capture("agentSpawn"))
    assert (spawn.kind, spawn.cwd, spawn.session_id) == ("session_start", "/tmp/example-project", "")
    assert normalise("kiro", "stop", kiro_capture("stop")).last_message == "HELLO"
    assert normalise("kiro", "postToolUse", kiro_capture("postToolUse_subagent")).subagent
    assert normalise("kiro", "preToolUse", kiro_capture("preToolUse_invoke_sub_agent")).subagent
    assert normalise("kiro", "preToolUse", example("kiro", "preToolUse", "docs MCP tool")).action == "mcp"


def test_cursor_shell_events() -> None:
    after = normalise("cursor", "afterShellExecution", example("cursor", "afterShellExecution", "pytest"))

    # hivelore hooks Cursor's postToolUse instead (catalog.py), but the older event still normalises.
    assert (after.kind, after.tool, after.action) == ("other", "Shell", "shell")
    assert (after.command, after.output) == ("pytest -q", "3 passed in 0.41s\n")
    assert after.exit_code is None  # Cursor's afterShellExecution documents no exit code
    assert after.session_id == "c0f1e2d3-b4a5-4968-8778-695a4b3c2d1e"  # conversation_id
    assert after.cwd == "/home/dev/src/acme-api"  # first workspace root

    before = normalise("cursor", "beforeShellExecution", example("cursor", "beforeShellExecution", "pytest"))
    assert (before.kind, before.command, before.output) == ("other", "pytest -q", "")  # preToolUse is hooked


def test_cursor_file_mcp_agent_and_subagent_events() -> None:
    edit = normalise("cursor", "afterFileEdit", example("cursor", "afterFileEdit", "edit"))
    assert (edit.action, edit.paths) == ("edit", ("/home/dev/src/acme-api/src/acme/cart.py",))

    mcp = normalise("cursor", "afterMCPExecution", example("cursor", "afterMCPExecution", "stdio server"))
    assert (mcp.tool, mcp.action, mcp.output) == ("memory_search", "mcp", '{"hits": [], "total": 0}')

    before_mcp = normalise("cursor", "beforeMCPExecution", example("cursor", "beforeMCPExecution", "stdio server"))
    assert (before_mcp.action, before_mcp.command) == ("mcp", "")  # its `command` starts the server, not a shell

    read = normalise("cursor", "beforeReadFile", example("cursor", "beforeReadFile", "read"))
    assert (read.action, read.paths) == ("read", ("/home/dev/src/acme-api/.env",))

    reply = normalise("cursor", "afterAgentResponse", example("cursor", "afterAgentResponse", "final text"))
    assert reply.last_message == "total() ignored qty; fixed and added a test."
    assert normalise("cursor", "subagentStop", example("cursor", "subagentStop", "subagent finished")).subagent


def test_cursor_generic_post_tool_events_carry_failures() -> None:
    """hivelore hooks Cursor's generic postToolUse / postToolUseFailure (documented, no fixture yet)."""
    common = {"conversation_id": "c1", "workspace_roots": ["/home/dev/src/acme-api"]}
    failed = normalise(
        "cursor",
        "postToolUseFailure",
        {**common, "tool_name": "Shell", "tool_input": {"command": "pnpm test"}, "error_message": "db down"}
        | {"failure_type": "error"},
    )
    assert (failed.kind, failed.action, failed.command) == ("tool_failure", "shell", "pnpm test")
    assert failed.error == "db down"

    result = json.dumps({"content": [{"type": "text", "text": "db down"}], "isError": True})
    mcp = normalise("cursor", "postToolUse", {**common, "tool_name": "mcp__db__query", "tool_output": result})
    assert (mcp.kind, mcp.action, mcp.error) == ("tool_failure", "mcp", "db down")


def test_gemini_after_tool_failure() -> None:
    event = normalise("gemini", "AfterTool", example("gemini", "AfterTool", "replace (edit) with error"))

    assert (event.kind, event.failed, event.tool, event.action) == ("tool_failure", True, "replace", "edit")
    assert event.paths == ("/home/dev/src/acme-api/src/acme/cart.py",)
    assert event.error == "could not find the string to replace"


def test_gemini_shell_exit_code_from_llm_content() -> None:
    payload = example("gemini", "AfterTool", "run_shell_command")
    ok = normalise("gemini", "AfterTool", payload)
    assert (ok.kind, ok.command, ok.exit_code) == ("post_tool", "pytest -q", 0)

    payload["tool_response"]["llmContent"] = "Command: pytest -q\nStdout: 1 failed\nExit Code: 1"  # variant
    failed = normalise("gemini", "AfterTool", payload)
    assert (failed.kind, failed.exit_code, failed.error) == ("tool_failure", 1, payload["tool_response"]["llmContent"])


def test_gemini_prompt_and_after_agent() -> None:
    after = normalise("gemini", "AfterAgent", example("gemini", "AfterAgent", "turn done"))
    assert (after.kind, after.last_message) == ("stop", "total() ignored qty; fixed and added a test.")
    assert normalise("gemini", "BeforeAgent", example("gemini", "BeforeAgent", "prompt")).prompt.startswith("Why")


def test_gemini_pre_compress_is_a_compaction_only_when_the_user_asked_for_one() -> None:
    """Gemini CLI 0.61 sends PreCompress "auto" before every model turn (the real session in
    gemini/real-0.61-hooks.ndjson: one per turn, nothing compressed), and decides only afterwards whether the
    history is over its threshold; "manual" is the user's /compress."""
    turns = [capture("gemini", "real-0.61-hooks.ndjson", n) for n in range(1, 23)]
    automatic = [p for p in turns if p["hook_event_name"] == "PreCompress"]
    assert len(automatic) == 6 and {p["trigger"] for p in automatic} == {"auto"}

    assert {normalise("gemini", "PreCompress", p).kind for p in automatic} == {"other"}
    assert normalise("gemini", "PreCompress", example("gemini", "PreCompress", "trigger=manual")).kind == "compact"
    assert normalise("codex", "PreCompact", {**automatic[0], "hook_event_name": "PreCompact"}).kind == "compact"


def test_gemini_before_and_after_tool_of_one_edit_share_no_call_id() -> None:
    before, after = (capture("gemini", "real-0.61-hooks.ndjson", n) for n in (18, 19))
    assert (before["hook_event_name"], after["hook_event_name"]) == ("BeforeTool", "AfterTool")
    assert before["tool_input"] == after["tool_input"] and not {"tool_use_id", "call_id", "tool_call_id"} & set(after)

    edit = normalise("gemini", "BeforeTool", before)
    assert (edit.kind, edit.action, edit.paths) == ("pre_tool", "edit", ("/tmp/gmlab/shop/shop/orders.py",))
    assert normalise("gemini", "AfterTool", after).kind == "post_tool"


def test_gemini_and_cursor_hold_what_is_said_before_a_tool_for_the_tool_result() -> None:
    """Gemini shows a BeforeTool answer to the user only, Cursor a preToolUse one to nobody (hivelore decides no
    permission): the model hears either with the tool's result. Kiro's post-tool stdout reaches nobody."""
    assert {agent: holds_pre_tool_text(agent) for agent in HOOK_EVENTS} == {
        "claude": False, "codex": False, "kiro": False, "gemini": True, "cursor": True,
    }  # fmt: skip


# --- names, odd input -----------------------------------------------------------------------------------------------


def test_the_command_line_event_name_wins_over_the_payloads() -> None:
    payload = example("claude-code", "Stop", "normal end of turn")  # says hook_event_name "Stop"
    event = normalise("claude", "SessionEnd", payload)
    assert (event.name, event.kind) == ("SessionEnd", "session_end")
    assert event.last_message.startswith("Fixed the cart total")

    assert normalise("claude", "", payload).kind == "stop"  # no command-line name: the payload's own


@pytest.mark.parametrize("payload", [None, [], "text", 42, 3.5, True, {"tool_name": 7, "tool_input": "x"}])
def test_payloads_of_the_wrong_shape_give_a_bare_event(payload: object) -> None:
    event = normalise("claude", "PostToolUse", payload)

    assert_well_typed(event)
    assert (event.kind, event.tool, event.command, event.paths) == ("post_tool", "", "", ())


def test_wrong_types_inside_a_payload_are_ignored() -> None:
    payload = {
        "session_id": 12,
        "cwd": ["/x"],
        "prompt": {"text": "hi"},
        "tool_name": "Bash",
        "tool_input": {"command": 42, "file_path": None},
        "tool_response": {"stdout": 5, "stderr": None, "exit_code": True},
        "workspace_roots": "not a list",
    }
    event = normalise("codex", "PostToolUse", payload)

    assert_well_typed(event)
    assert (event.session_id, event.cwd, event.prompt, event.command, event.exit_code) == ("", "", "", "", None)


def test_huge_output_is_capped() -> None:
    payload = example("codex", "PostToolUse", "recorded PostToolUse (Bash)")
    payload["tool_response"] = "x" * 5_000_000
    assert len(normalise("codex", "PostToolUse", payload).output) == CAP

    failure = example("claude-code", "PostToolUseFailure", "docs example #1")
    failure["error"] = "Exit code 2\n" + "y" * 100_000
    event = normalise("claude", "PostToolUseFailure", failure)
    assert (len(event.error), event.exit_code) == (CAP, 2)


def test_unknown_agents_and_events_are_other() -> None:
    assert normalise("vim", "PostToolUse", {"tool_name": "Bash"}).kind == "other"
    assert normalise("claude", "NoSuchEvent", {}).kind == "other"
    assert normalise(None, None, None) == Event(kind="other")  # type: ignore[arg-type]


PAYLOAD_KEYS = (
    "tool_name", "tool_input", "tool_response", "tool_output", "result_json", "command", "file_path", "path",
    "operations", "items", "result", "Json", "Text", "stdout", "stderr", "exit_code", "exitCode", "error",
    "is_interrupt", "interrupted", "success", "isError", "status", "hook_events", "workspace_roots", "cwd",
    "session_id", "prompt", "source", "agent_id", "llmContent", "content", "metadata", "edits", "paths",
    "hook_event_name", "last_assistant_message", "toolSuccess", "failure_type", "mcp_context", "patch",
)  # fmt: skip
JSON_KEYS = st.sampled_from(PAYLOAD_KEYS) | st.text(max_size=8)
JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text()
    | st.sampled_from(["*** Begin Patch\n*** Update File: a\n", "Exit code: 1", '{"isError": true}', "{", "0"])
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(JSON_KEYS, children, max_size=6),
    max_leaves=40,
)
EVENT_NAMES = st.sampled_from([name for events in HOOK_EVENTS.values() for name, _ in events]) | st.text(max_size=20)


@settings(max_examples=400, deadline=None)
@given(agent=st.sampled_from(AGENTS) | st.text(max_size=8), event_name=EVENT_NAMES, payload=JSON_VALUES)
def test_normalise_never_raises(agent: str, event_name: str, payload: object) -> None:
    event = normalise(agent, event_name, payload)

    assert_well_typed(event)
    assert isinstance(answer(event, "a lesson"), str)
    if isinstance(payload, dict):  # normalise's guard would hide a bug: run the unguarded body as well
        adapters._fill(Event(agent=agent, name=event_name, kind=kind_of(agent, event_name)), payload)


# --- answer ---------------------------------------------------------------------------------------------------------

TEXT = "You have hit this before: run `pytest -q` from the repo root.\nسطر عربي"


def _context(name: str) -> dict:
    return {"hookSpecificOutput": {"hookEventName": name, "additionalContext": TEXT}}


SYSTEM = {"systemMessage": TEXT}
# (agent, wire event) -> what `answer` prints for TEXT: a parsed JSON object, the plain text, or "" (nothing)
EXPECTED_ANSWERS = {
    ("claude", "SessionStart"): _context("SessionStart"),
    ("claude", "UserPromptSubmit"): _context("UserPromptSubmit"),
    ("claude", "PreToolUse"): _context("PreToolUse"),
    ("claude", "PostToolUse"): _context("PostToolUse"),
    ("claude", "PostToolUseFailure"): _context("PostToolUseFailure"),
    ("claude", "PreCompact"): "",
    ("claude", "PostCompact"): "",
    ("claude", "Stop"): SYSTEM,
    ("claude", "SessionEnd"): "",
    ("codex", "SessionStart"): _context("SessionStart"),
    ("codex", "UserPromptSubmit"): _context("UserPromptSubmit"),
    ("codex", "PreToolUse"): _context("PreToolUse"),
    ("codex", "PostToolUse"): _context("PostToolUse"),
    ("codex", "PreCompact"): SYSTEM,
    ("codex", "Stop"): SYSTEM,
    ("codex", "SessionEnd"): "",
    ("kiro", "agentSpawn"): TEXT,
    ("kiro", "userPromptSubmit"): TEXT,
    ("kiro", "preToolUse"): "",
    ("kiro", "postToolUse"): "",
    ("kiro", "stop"): "",
    ("gemini", "SessionStart"): _context("SessionStart"),
    ("gemini", "BeforeAgent"): _context("BeforeAgent"),
    ("gemini", "BeforeTool"): SYSTEM,
    ("gemini", "AfterTool"): _context("AfterTool"),
    ("gemini", "PreCompress"): SYSTEM,
    ("gemini", "AfterAgent"): SYSTEM,
    ("gemini", "SessionEnd"): SYSTEM,
    ("cursor", "sessionStart"): {"additional_context": TEXT},
    ("cursor", "beforeSubmitPrompt"): {"continue": True},
    ("cursor", "preToolUse"): "",
    ("cursor", "postToolUse"): {"additional_context": TEXT},
    ("cursor", "postToolUseFailure"): {"additional_context": TEXT},
    ("cursor", "preCompact"): {"user_message": TEXT},
    ("cursor", "stop"): "",
    ("cursor", "sessionEnd"): "",
}
# the events whose contract needs a JSON object on stdout even with nothing to say
ANSWER_IDS = [f"{agent}/{event_name}" for agent, event_name in sorted(EXPECTED_ANSWERS)]
NEUTRAL_ANSWERS = {
    ("cursor", "beforeSubmitPrompt"): {"continue": True},
}


def test_every_hooked_event_has_an_expected_answer() -> None:
    hooked = {(agent, name) for agent, events in HOOK_EVENTS.items() for name, _ in events}
    assert set(EXPECTED_ANSWERS) == hooked


@pytest.mark.parametrize(("agent", "event_name"), sorted(EXPECTED_ANSWERS), ids=ANSWER_IDS)
def test_answer_follows_the_agents_contract(agent: str, event_name: str) -> None:
    out = answer(normalise(agent, event_name, {}), TEXT)
    expected = EXPECTED_ANSWERS[(agent, event_name)]

    if isinstance(expected, dict):
        assert len(out.splitlines()) == 1
        assert json.loads(out) == expected
        assert TEXT not in expected.values() or "سطر عربي" in out  # ensure_ascii=False
    else:
        assert out == expected


@pytest.mark.parametrize(("agent", "event_name"), sorted(EXPECTED_ANSWERS), ids=ANSWER_IDS)
@pytest.mark.parametrize("text", ["", "   \n"], ids=["empty", "blank"])
def test_nothing_to_say_prints_nothing_or_the_neutral_object(agent: str, event_name: str, text: str) -> None:
    out = answer(normalise(agent, event_name, {}), text)

    neutral = NEUTRAL_ANSWERS.get((agent, event_name))
    assert (json.loads(out) if neutral else out) == (neutral or "")


def test_answers_never_block_deny_or_continue_the_agent() -> None:
    for agent, event_name in EXPECTED_ANSWERS:
        out = answer(normalise(agent, event_name, {}), TEXT)
        if out.startswith("{"):
            body = json.loads(out)
            assert "decision" not in body and "followup_message" not in body
            assert body.get("continue", True) is True and body.get("permission", "allow") == "allow"


def test_an_interrupted_failure_is_answered_as_the_wire_event() -> None:
    event = normalise("claude", "PostToolUseFailure", example("claude-code", "PostToolUseFailure", "interrupted"))
    assert event.kind == "post_tool"

    assert json.loads(answer(event, TEXT)) == _context("PostToolUseFailure")


def test_answer_json_stays_one_line_whatever_the_text() -> None:
    text = 'line one\nline two\r\u2028\u2029\x85\ttab "quoted" \\ end'
    out = answer(normalise("claude", "SessionStart", {}), text)

    assert len(out.splitlines()) == 1
    assert json.loads(out)["hookSpecificOutput"]["additionalContext"] == text


def test_answer_without_an_event_or_text_prints_nothing() -> None:
    assert answer("not an event", TEXT) == ""  # type: ignore[arg-type]
    assert answer(normalise("claude", "SessionStart", {}), None) == ""  # type: ignore[arg-type]
    assert answer(normalise("vim", "SessionStart", {}), TEXT) == ""


# --- the hook path stays light --------------------------------------------------------------------------------------


def test_importing_the_adapters_stays_light() -> None:
    code = (
        "import sys\n"
        "from hivelore.hooks.adapters import answer, normalise\n"
        "answer(normalise('claude', 'PostToolUseFailure', {'tool_name': 'Bash', 'error': 'Exit code 1'}), 'x')\n"
        "heavy = ('typing', 'dataclasses', 'pathlib', 'typer', 'pydantic', 'yaml', 'rich', 'httpx', 'mcp')\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert result.stdout.strip() == ""


# --- an exit code from the agent's transcript (Codex's PostToolUse carries none) -------------------------------------

ROLLOUTS = PAYLOADS / "codex" / "rollouts"


def real_codex(event: str, command_start: str) -> dict:
    """A hook payload the real Codex CLI 0.171.0 wrote (codex/real-0.171-hooks.ndjson, see its SOURCE.md)."""
    for line in (PAYLOADS / "codex" / "real-0.171-hooks.ndjson").read_text().splitlines():
        payload = json.loads(line)["_payload"]
        command = payload.get("tool_input", {}).get("command", "")
        if payload["hook_event_name"] == event and command.startswith(command_start):
            return payload
    raise LookupError(f"no {event} for {command_start!r}")


def with_transcript(payload: dict, tmp_path: Path, rollout: str) -> dict:
    """The payload with its transcript_path pointing at a copy of a fixture rollout (the recorded path was
    the capture's temporary folder)."""
    copied = tmp_path / Path(payload["transcript_path"]).name
    copied.write_bytes((ROLLOUTS / rollout).read_bytes())
    return {**payload, "transcript_path": str(copied)}


def test_the_real_codex_failure_payload_has_no_exit_code_and_the_rollout_has_it(tmp_path: Path) -> None:
    payload = real_codex("PostToolUse", "sleep 0.3; echo 'Error")
    assert payload["tool_response"] == "Error: connect ECONNREFUSED 127.0.0.1:5432\n"

    event = normalise("codex", "PostToolUse", with_transcript(payload, tmp_path, "exec-failed-0.171.jsonl"))

    assert (event.kind, event.failed, event.exit_code, event.exit_unknown) == ("tool_failure", True, 1, False)
    assert event.error == "Error: connect ECONNREFUSED 127.0.0.1:5432\n"


def test_the_real_codex_success_is_exit_0_from_the_rollout(tmp_path: Path) -> None:
    payload = real_codex("PostToolUse", "echo db is up")

    event = normalise("codex", "PostToolUse", with_transcript(payload, tmp_path, "exec-succeeded-0.171.jsonl"))

    assert (event.kind, event.failed, event.exit_code, event.exit_unknown) == ("post_tool", False, 0, False)


def test_a_call_is_matched_by_its_id_not_by_being_the_last_one(tmp_path: Path) -> None:
    """The same rollout read for another call id: that call is not in it, so its exit code is unknown."""
    payload = {**real_codex("PostToolUse", "echo db is up"), "tool_use_id": "call_someOtherCall"}

    event = normalise("codex", "PostToolUse", with_transcript(payload, tmp_path, "exec-failed-0.171.jsonl"))

    assert (event.kind, event.exit_code, event.exit_unknown) == ("post_tool", None, True)


@pytest.mark.parametrize(("call_id", "code"), [("call_legacyEnd1", 1), ("call_legacyOut2", 2)])
def test_older_rollouts_exec_command_end_and_shell_output_metadata(call_id: str, code: int) -> None:
    assert adapters.exit_from_transcript(str(ROLLOUTS / "legacy-shell-built.jsonl"), call_id) == code


def test_without_a_transcript_the_exit_is_unknown_and_only_the_output_can_say_it_failed() -> None:
    """Never a success taken for granted: no exit code anywhere gives exit_unknown, and the failure comes from
    the error line (ECONNREFUSED) or pytest's summary; plain output stays an unknown, not a failure."""
    payload = real_codex("PostToolUse", "sleep 0.3; echo 'Error")
    payload["transcript_path"] = "/nonexistent/rollout.jsonl"

    failed = normalise("codex", "PostToolUse", payload)
    plain = normalise("codex", "PostToolUse", {**payload, "tool_response": "db is up\n"})

    assert (failed.kind, failed.exit_code, failed.exit_unknown) == ("tool_failure", None, True)
    assert failed.error == "Error: connect ECONNREFUSED 127.0.0.1:5432\n"
    assert (plain.kind, plain.failed, plain.exit_code, plain.exit_unknown) == ("post_tool", False, None, True)


def test_claude_post_tool_use_is_a_success_without_any_exit_code() -> None:
    """Claude (and Cursor) report failures at an event of their own: their PostToolUse needs no exit code."""
    event = normalise("claude", "PostToolUse", example("claude-code", "PostToolUse", "Bash"))

    assert (event.kind, event.exit_code, event.exit_unknown) == ("post_tool", None, False)


def test_only_the_tail_of_a_transcript_is_read(tmp_path: Path) -> None:
    """The call's record followed by more than TRANSCRIPT_TAIL bytes of later lines is out of reach."""
    record = (ROLLOUTS / "legacy-shell-built.jsonl").read_text().splitlines()[1]
    filler = json.dumps({"type": "event_msg", "payload": {"type": "token_count", "pad": "x" * 1000}}) + "\n"
    near, far = tmp_path / "near.jsonl", tmp_path / "far.jsonl"
    near.write_text(filler * 10 + record + "\n" + filler * 10)
    far.write_text(record + "\n" + filler * (adapters.TRANSCRIPT_TAIL // len(filler) + 1))

    assert adapters.exit_from_transcript(str(near), "call_legacyEnd1") == 1
    assert adapters.exit_from_transcript(str(far), "call_legacyEnd1") is None


def test_a_transcript_path_that_is_not_a_regular_file_is_not_read(tmp_path: Path) -> None:
    """A FIFO would block the hook forever; a folder cannot be read: both give no exit code, at once."""
    import os

    fifo = tmp_path / "rollout.jsonl"
    os.mkfifo(fifo)

    assert adapters.exit_from_transcript(str(fifo), "call_fail0") is None
    assert adapters.exit_from_transcript(str(tmp_path), "call_fail0") is None


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=4000) | JSON_VALUES.map(lambda v: json.dumps(v).encode()), call_id=st.text(max_size=12))
def test_any_transcript_content_gives_an_int_or_none(tmp_path_factory: pytest.TempPathFactory, data: bytes,
                                                    call_id: str) -> None:  # fmt: skip
    path = tmp_path_factory.mktemp("transcript") / "rollout.jsonl"
    path.write_bytes(data + b"\n" + data)

    code = adapters.exit_from_transcript(str(path), call_id)

    assert code is None or (isinstance(code, int) and not isinstance(code, bool))
