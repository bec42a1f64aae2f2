"""Where agent differences end: each agent's hook payload becomes one `Event`, and hivelore's answer text is
rendered back in that agent's own stdout contract.

This runs on every agent event, so it imports only cheap stdlib modules and never raises: a payload of the wrong
shape gives an `Event` with empty fields (and kind "other" when the event is not one hivelore hooks).

Sources for the payload shapes are the fixtures in tests/fixtures/hook-payloads (see each SOURCE.md); sources for
the output contracts are cited next to `_CONTRACTS` and `_CURSOR_OUTPUT`.
"""

from __future__ import annotations

import json
import os
import re
import stat

from hivelore.hooks.catalog import HOOK_EVENTS, kind_of

CAP = 20_000  # error and output text kept per event; the rest of a huge tool output is noise for a lesson
_MAX_ITEMS = 1_000  # list elements looked at (paths, content blocks, deferred Kiro events)
_MAX_JSON = 1_000_000  # longest JSON-in-a-string (Cursor's tool_input / result_json) worth parsing

_SHELL_TOOLS = frozenset(
    {"bash", "powershell", "shell", "execute_bash", "execute_pwsh", "execute_cmd", "run_shell_command", "exec_command"}
)
_SHELL_HINTS = ("shell", "bash", "pwsh", "terminal", "run_command")
_EDIT_TOOLS = frozenset(
    {"edit", "multiedit", "write", "notebookedit", "apply_patch", "write_file", "replace", "fs_write", "str_replace"}
    | {"fs_append", "create_file", "edit_file"}
)
_READ_TOOLS = frozenset({"read", "notebookread", "read_file", "read_many_files", "fs_read", "read_files"})
_SEARCH_TOOLS = frozenset({"grep", "glob", "ls", "search_file_content", "list_directory"})  # reads without a file
# Tools whose input or output is a sub-agent's work: Claude's Agent (formerly Task), Kiro's subagent tools.
_DELEGATE_TOOLS = frozenset({"agent", "task", "invoke_sub_agent", "subagent"})

_PATH_KEYS = ("file_path", "path", "notebook_path", "absolute_path", "filePath", "target_file")
_PATH_LIST_KEYS = ("paths", "file_paths", "image_paths")
_CONTENT_KEYS = ("content", "new_string", "old_string", "edits", "file_text", "new_str", "old_str", "new_source")
_TEXT_KEYS = ("output", "llmContent", "items", "result", "content", "text", "Text", "Json", "file", "returnDisplay")
_EXIT_KEYS = ("exit_code", "exitCode", "exit_status", "exitStatus", "returncode")
_FAILED_STATUS = frozenset({"error", "failed", "failure"})
_LAST_MESSAGE_KEYS = ("last_assistant_message", "prompt_response", "assistant_response", "last-assistant-message")
_CALL_ID_KEYS = ("tool_use_id", "call_id", "toolCallId", "tool_call_id")
TRANSCRIPT_TAIL = 256 * 1024  # bytes at the end of an agent's transcript searched for a call's exit code
# Agents with a post-tool event for failures of its own (Claude, Cursor): their post-tool event means success.
_FAILURE_EVENT_AGENTS = frozenset(
    agent for agent, events in HOOK_EVENTS.items() if any(kind == "tool_failure" for _, kind in events)
)

# "Exit code 1" (Claude's error), "Exit code: 1" / "Process exited with code 1" (Codex's formatted shell output),
# "Exit Code: 1" (Gemini's run_shell_command llmContent, Kiro IDE's execute_bash result).
_EXIT_LINE = re.compile(r"^\s*(?:exit code:?|process exited with code)\s*(-?\d{1,9})\s*$", re.IGNORECASE | re.MULTILINE)
_PATCH_FILE = re.compile(r"^\*\*\* (?:(?:Update|Add|Delete) File|Move to): (.+?)\s*$", re.MULTILINE)
# Kiro IDE 1.x sends an empty tool_input for writes; the path is only in the prose result (SOURCE.md, Known gaps).
_KIRO_PROSE_PATH = re.compile(r"^(?:Created the (.+) file\.|Replaced text in (.+?))\s*$", re.MULTILINE)


class Event:
    """One agent hook event, normalised. String fields are "" when the payload does not carry them, never None.

    `subagent` is True when the payload comes from a sub-agent (Claude/Codex `agent_id`, Cursor `subagent_id`,
    SubagentStart/SubagentStop events) or is a delegation tool call whose input/output is a sub-agent's text
    (Claude Agent/Task, Kiro subagent/invoke_sub_agent): such text is never the user's own statement.

    `exit_unknown` is True for a shell call whose exit code neither the payload nor the agent's transcript gives,
    at an event that reports failures and successes alike (Codex's PostToolUse): `exit_code` stays None, and
    `failed` is what the output says by testruns.says_failed, never a success taken for granted.
    """

    __slots__ = (
        "agent", "name", "kind", "session_id", "cwd", "prompt", "tool", "action", "command", "paths",
        "exit_code", "exit_unknown", "failed", "interrupted", "error", "output", "source", "summary", "last_message",
        "subagent", "transcript_path", "anchors",
    )  # fmt: skip

    agent: str
    name: str
    kind: str
    session_id: str
    cwd: str
    prompt: str
    tool: str
    action: str
    command: str
    paths: tuple[str, ...]
    exit_code: int | None
    exit_unknown: bool
    failed: bool
    interrupted: bool
    error: str
    output: str
    source: str
    summary: str
    last_message: str
    subagent: bool
    transcript_path: str
    anchors: tuple[str, ...]  # for an edit: the texts it replaces (old_string…), to find the lines it touches

    def __init__(self, **values: object) -> None:
        unknown = set(values) - set(self.__slots__)
        if unknown:
            raise TypeError(f"Event has no field {sorted(unknown)[0]!r}")
        for slot in self.__slots__:
            setattr(self, slot, values.get(slot, _DEFAULTS[slot]))

    def __repr__(self) -> str:
        shown = (f"{s}={getattr(self, s)!r}" for s in self.__slots__ if getattr(self, s) != _DEFAULTS[s])
        return f"Event({', '.join(shown)})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Event):
            return NotImplemented
        return all(getattr(self, s) == getattr(other, s) for s in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable, so not hashable


_DEFAULTS: dict[str, object] = dict.fromkeys(Event.__slots__, "")
_DEFAULTS.update(
    kind="other",
    paths=(),
    exit_code=None,
    exit_unknown=False,
    failed=False,
    interrupted=False,
    subagent=False,
    anchors=(),
)


def normalise(agent: str, event_name: str, payload: object) -> Event:
    """The agent's hook stdin payload as an `Event`. Never raises.

    The kind comes from the catalog for `event_name` (the name installation wired on the command line, trusted
    over the payload's own `hook_event_name`, which is used only when the command line gave none).
    """
    agent = agent if isinstance(agent, str) else ""
    p = payload if isinstance(payload, dict) else {}
    name = event_name if isinstance(event_name, str) and event_name else _str(p.get("hook_event_name"))
    kind = kind_of(agent, name)
    event = Event(agent=agent, name=name, kind=kind)
    try:
        _fill(event, p)
    except Exception:  # a hook must exit 0 whatever it receives: a bug here degrades to a bare event
        return Event(agent=agent, name=name, kind=kind)
    return event


def _fill(event: Event, p: dict) -> None:
    cursor = event.agent == "cursor"
    ids = ("conversation_id", "session_id") if cursor else ("session_id", "conversation_id")
    event.session_id = _first_str(p, *ids)
    event.cwd = _cwd(p, cursor)
    event.transcript_path = _first_str(p, "transcript_path", "agent_transcript_path")
    event.prompt = _first_str(p, "prompt")
    if event.kind == "session_start":
        event.source = _first_str(p, "source")
    event.summary = _first_str(p, "compact_summary", "summary")
    if event.kind == "compact" and _compaction_unlikely(event.agent, p):
        event.kind = "other"
    # Cursor's afterAgentResponse carries the reply as a bare `text`; elsewhere `text` is not a reply.
    event.last_message = _first_str(p, *_LAST_MESSAGE_KEYS, *(("text",) if cursor else ()))
    _fill_tool(event, p)
    event.subagent = _is_subagent(event, p)
    _settle_kind(event)


def _compaction_unlikely(agent: str, p: dict) -> bool:
    """Gemini CLI 0.61 sends PreCompress with trigger "auto" before every model turn, before it checks whether
    the history is over its threshold (half the model's window by default, a setting or a remote flag
    otherwise); the payload does not say which, and nearly always nothing is compressed. Only "manual" (the
    user's /compress) is taken for a compaction."""
    return agent == "gemini" and p.get("trigger") == "auto"


def _cwd(p: dict, cursor: bool) -> str:
    roots = p.get("workspace_roots")
    root = roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) else ""
    # Cursor's workspace root is stable across a session; its shell events' own cwd may be a subfolder.
    return (root or _str(p.get("cwd"))) if cursor else (_str(p.get("cwd")) or root)


def _is_subagent(event: Event, p: dict) -> bool:
    from_subagent = _first_str(p, "agent_id", "subagent_id", "parent_conversation_id")
    subagent_event = event.name.lower() in ("subagentstart", "subagentstop")
    return bool(from_subagent) or subagent_event or event.tool.lower() in _DELEGATE_TOOLS


def _settle_kind(event: Event) -> None:
    """A post-tool event that failed is a tool_failure; an interrupt is neither (the user stopped it)."""
    if event.kind not in ("post_tool", "tool_failure"):
        return
    if event.interrupted:
        event.kind, event.failed = "post_tool", False
    elif event.kind == "tool_failure" or event.failed:
        event.kind, event.failed = "tool_failure", True


# --- the tool call ------------------------------------------------------------------------------------------------


def _fill_tool(event: Event, p: dict) -> None:
    deferred = p.get("hook_events")
    if isinstance(deferred, list) and "tool_name" not in p:
        # Kiro's postToolUse with only_when_turn_complete: one payload listing every tool call of the turn.
        calls = [_tool_event(event, e) for e in deferred[:_MAX_ITEMS] if isinstance(e, dict)]
        _merge(event, calls)
    else:
        _fill_call(event, p)


def _tool_event(parent: Event, p: dict) -> Event:
    event = Event(agent=parent.agent, name=parent.name)
    _fill_call(event, p)
    return event


def _merge(event: Event, calls: list[Event]) -> None:
    tools = {c.tool for c in calls}
    actions = {c.action for c in calls}
    event.tool = tools.pop() if len(tools) == 1 else ""
    event.action = actions.pop() if len(actions) == 1 else ("other" if calls else "")
    event.command = "\n".join(c.command for c in calls if c.command)
    event.paths = _unique([path for c in calls for path in c.paths])
    event.failed = any(c.failed for c in calls)
    event.interrupted = not event.failed and any(c.interrupted for c in calls)
    codes = [c.exit_code for c in calls if c.exit_code is not None]
    event.exit_code = next((code for code in codes if code != 0), codes[0] if codes else None)
    event.exit_unknown = not event.failed and any(c.exit_unknown for c in calls)
    event.error = _cap("\n".join(c.error for c in calls if c.error))
    event.output = _cap("\n".join(c.output for c in calls if c.output))


def _fill_call(event: Event, p: dict) -> None:
    tool, inputs, response, action = _call(event.agent, event.name, p)
    event.tool = tool
    event.action = action or _action(tool, inputs)
    if event.action == "shell":
        event.command = _command(inputs)
    event.paths = _paths(event.action, tool, inputs, response)
    if event.action == "edit":
        event.anchors = _anchors(inputs)
    # Claude's Write/Edit response echoes the written file, which is not output
    echo = event.action == "edit" and isinstance(response, dict) and "filePath" in response
    event.output = "" if echo else _cap(_text(response, 0))
    top_error = _error_text(p.get("error")) or _str(p.get("error_message"))
    r = response if isinstance(response, dict) else {}
    event.exit_code = _exit_code(p, r, event.action, (top_error, event.output))
    if tool or response is not None:
        _fill_outcome(event, p, r, top_error)
        if _outcome_unsaid(event, response):
            _settle_unknown_exit(event, p)
    elif top_error:
        event.error = _cap(top_error)  # e.g. Claude StopFailure's error type: an error, but not a tool's


def _call(agent: str, name: str, p: dict) -> tuple[str, dict, object, str]:
    """(tool name, tool input, tool response, action if the event itself says it) from a payload."""
    if agent == "cursor":
        call = _cursor_call(name, p)
        if call:
            return call
    tool = _first_str(p, "tool_name", "toolName")  # toolName/toolArgs/toolResult: Kiro IDE 0.12 (SOURCE.md)
    inputs = _json_object(p.get("tool_input", p.get("toolArgs")))
    response = p.get("tool_response", p.get("toolResult"))
    if agent == "cursor":  # Cursor's generic postToolUse passes the result as a JSON string
        response = _json_object(p.get("tool_output", response))
    mcp = isinstance(p.get("mcp_context"), dict) or isinstance(p.get("mcp_server"), dict)
    return tool, inputs if isinstance(inputs, dict) else {}, response, "mcp" if mcp else ""


def _cursor_call(name: str, p: dict) -> tuple[str, dict, object, str] | None:
    """Cursor's per-action events carry the call at the top level; tool names follow its generic hooks' names."""
    if name in ("beforeShellExecution", "afterShellExecution"):
        # `output` exists only after execution; Cursor documents no exit code for shell commands.
        return "Shell", {"command": p.get("command")}, p.get("output"), "shell"
    if name in ("beforeMCPExecution", "afterMCPExecution"):
        inputs = _json_object(p.get("tool_input"))  # a JSON string, as is result_json
        inputs = inputs if isinstance(inputs, dict) else {}
        return _str(p.get("tool_name")), inputs, _json_object(p.get("result_json")), "mcp"
    if name in ("afterFileEdit", "afterTabFileEdit"):
        return "Write", {"file_path": p.get("file_path"), "edits": p.get("edits")}, None, "edit"
    if name in ("beforeReadFile", "beforeTabFileRead"):
        return "Read", {"file_path": p.get("file_path")}, None, "read"
    return None


def _action(tool: str, inputs: dict) -> str:
    """What the call does, judged by its name and, for names we do not know, by its inputs."""
    low = tool.lower()
    if low.startswith(("mcp__", "@")):  # mcp__server__tool (Claude, Codex, Gemini); @server/tool (Kiro)
        return "mcp"
    if low in _EDIT_TOOLS or _patch_paths(inputs):
        return "edit"
    if _command(inputs) and (low in _SHELL_TOOLS or any(hint in low for hint in _SHELL_HINTS)):
        return "shell"
    has_path = any(isinstance(inputs.get(k), str) for k in _PATH_KEYS)
    if has_path and any(k in inputs for k in _CONTENT_KEYS):
        return "edit"
    if low in _READ_TOOLS or low in _SEARCH_TOOLS or isinstance(inputs.get("operations"), list):
        return "read"
    if has_path and ("read" in low or "view" in low):
        return "read"
    return "other" if tool else ""


def _command(inputs: dict) -> str:
    command = inputs.get("command")
    if isinstance(command, str):
        return command
    if isinstance(command, list) and command and all(isinstance(part, str) for part in command):
        # argv form (older Codex shell tool): ["bash", "-lc", "<script>"] is the script
        if len(command) == 3 and command[1] in ("-c", "-lc"):
            return command[2]
        return " ".join(command)
    return ""


def _paths(action: str, tool: str, inputs: dict, response: object) -> tuple[str, ...]:
    if action not in ("edit", "read") or tool.lower() in _SEARCH_TOOLS:
        return ()
    found = _patch_paths(inputs) + _input_paths(inputs)
    if not found and action == "edit":
        found = _response_paths(response)
    return _unique(found)


_ANCHOR_KEYS = ("old_string", "old_str")  # Claude Edit/MultiEdit, Gemini replace; Kiro fs_write str_replace


def _anchors(inputs: dict) -> tuple[str, ...]:
    """The texts an edit replaces, when its input names them (a whole-file write names none); for a
    Codex patch, each hunk's old lines and the line its `@@` header names."""
    edits = inputs.get("edits")
    found = [inputs.get(k) for k in _ANCHOR_KEYS]
    if isinstance(edits, list):
        found += [e.get(k) for e in edits[:_MAX_ITEMS] if isinstance(e, dict) for k in _ANCHOR_KEYS]
    found += _patch_anchors(_patch_text(inputs))
    return tuple(text for text in found if isinstance(text, str) and text.strip())


def _patch_text(inputs: dict) -> str:
    """A Codex apply_patch body, wherever the tool input holds it ("" for none)."""
    for key in ("command", "patch", "input"):
        text = inputs.get(key)
        if isinstance(text, str) and "*** Begin Patch" in text:
            return text
    return ""


def _patch_paths(inputs: dict) -> list[str]:
    """Files named in a Codex apply_patch body ("*** Update File: x")."""
    return [m.group(1) for m in _PATCH_FILE.finditer(_patch_text(inputs))]


def _patch_anchors(patch: str) -> list[str]:
    """Per hunk of a patch, the text it replaces as the file has it now (its context and removed
    lines, in order), and the line its `@@ …` header quotes (often the enclosing `def`)."""
    found: list[str] = []
    block: list[str] = []
    for line in patch.splitlines()[: _MAX_ITEMS * 10]:
        if line.startswith(("@@", "*** ")):
            found.append("\n".join(block))
            block = []
            found.append(line[2:].strip() if line.startswith("@@") else "")
        elif line.startswith((" ", "-")):
            block.append(line[1:])
    found.append("\n".join(block))
    return [text for text in found if text.strip()]


def _input_paths(inputs: dict) -> list[str]:
    found = [inputs[k] for k in _PATH_KEYS if isinstance(inputs.get(k), str)]
    lists = [inputs.get(k) for k in _PATH_LIST_KEYS]
    operations = inputs.get("operations")  # Kiro fs_read: [{"mode": "Line", "path": ...}, ...]
    if isinstance(operations, list):
        for op in operations[:_MAX_ITEMS]:
            if isinstance(op, dict):
                found.append(op.get("path"))
                lists.append(op.get("image_paths"))
    for values in lists:
        if isinstance(values, list):
            found.extend(values[:_MAX_ITEMS])
    return [path for path in found if isinstance(path, str)]


def _response_paths(response: object) -> list[str]:
    if isinstance(response, dict):  # Claude's Write/Edit response repeats the path
        return [path for path in (response.get("filePath"),) if isinstance(path, str)]
    text = _text(response, 0)
    return [m.group(1) or m.group(2) for m in _KIRO_PROSE_PATH.finditer(text[:CAP])]


def _fill_outcome(event: Event, p: dict, r: dict, top_error: str) -> None:
    """Failed / interrupted / error text from whatever failure signal the agent's payload carries."""
    event.interrupted = p.get("is_interrupt") is True or r.get("interrupted") is True
    failed = (
        r.get("is_error") is True  # MCP results
        or r.get("isError") is True
        or r.get("success") is False  # Kiro's legacy envelope
        or p.get("toolSuccess") is False  # Kiro IDE 0.12
        or _str(r.get("status")).lower() in _FAILED_STATUS
        or bool(_error_text(r.get("error")))  # Gemini's tool_response.error
        or bool(_str(p.get("failure_type")))  # Cursor's postToolUseFailure
        or event.exit_code not in (None, 0)
    )
    event.failed = failed and not event.interrupted
    error = top_error or _error_text(r.get("error"))
    if not error and event.failed:
        error = _str(r.get("stderr")) or event.output
    event.error = _cap(error)


def _outcome_unsaid(event: Event, response: object) -> bool:
    """A shell call that ran, at an event for successes and failures alike, with nothing saying which it was."""
    return (
        event.action == "shell"
        and response is not None
        and event.exit_code is None
        and not event.failed
        and not event.interrupted
        and event.agent not in _FAILURE_EVENT_AGENTS
        and kind_of(event.agent, event.name) == "post_tool"
    )


def _settle_unknown_exit(event: Event, p: dict) -> None:
    """The exit code from the agent's transcript (Codex's rollout records it; its hook payload does not);
    failing that, the outcome is unknown and only the output's own words can make it a failure."""
    code = exit_from_transcript(event.transcript_path, _first_str(p, *_CALL_ID_KEYS))
    if code is not None:
        event.exit_code, event.failed = code, code != 0
    else:
        from hivelore.team import testruns  # only for this case: the common hook pays nothing for its parsers

        event.exit_unknown = True
        event.failed = testruns.says_failed(event.output, event.command)
    if event.failed and not event.error:
        event.error = event.output


def exit_from_transcript(path: str, call_id: str) -> int | None:
    """The exit code an agent's transcript (a JSON-lines file) records for the tool call `call_id`, looked for
    in its last TRANSCRIPT_TAIL bytes, newest line first; None when the file or the call is not there.

    Only a regular file is read (the path comes from the payload: a FIFO or a device would hang the hook).
    Codex's rollout: an `item_completed` event whose CommandExecution item has this id and an `exit_code`
    (0.17x), an `exec_command_end` event with this `call_id` (earlier versions), or the call's
    `function_call_output`, whose text says "Process exited with code N" / "Exit code: N" or whose JSON
    carries `metadata.exit_code`. Never raises.
    """
    if not path or not call_id or len(call_id) > 200:
        return None
    try:
        tail = _tail(path, TRANSCRIPT_TAIL)
    except (OSError, ValueError):
        return None
    # the id as it appears inside a JSON line: lines without it are not parsed
    needle = json.dumps(call_id, ensure_ascii=False).encode("utf-8", "surrogatepass")
    for line in reversed(tail.split(b"\n")):
        if needle not in line:
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        code = _exit_for_call(record, call_id, 0)
        if code is not None:
            return code
    return None


def _tail(path: str, size: int) -> bytes:
    """The whole lines in the last `size` bytes of a regular file."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return b""
        start = max(0, info.st_size - size)
        os.lseek(fd, start, os.SEEK_SET)
        chunks, left = [], info.st_size - start
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    return data.split(b"\n", 1)[1] if start and b"\n" in data else (b"" if start else data)


def _exit_for_call(value: object, call_id: str, depth: int) -> int | None:
    """The exit code a transcript record gives for `call_id`, wherever in the record the call's object sits."""
    if depth > 6:
        return None
    if isinstance(value, list):
        for item in value[:_MAX_ITEMS]:
            code = _exit_for_call(item, call_id, depth + 1)
            if code is not None:
                return code
        return None
    if not isinstance(value, dict):
        return None
    if call_id in (value.get("call_id"), value.get("id")):
        code = next((_int(value[k]) for k in _EXIT_KEYS if _int(value.get(k)) is not None), None)
        if code is None and value.get("type") in ("function_call_output", "custom_tool_call_output"):
            code = _exit_in_output(value.get("output"))
        if code is not None:
            return code
    for item in value.values():
        if isinstance(item, (dict, list)):
            code = _exit_for_call(item, call_id, depth + 1)
            if code is not None:
                return code
    return None


def _exit_in_output(output: object) -> int | None:
    """A Codex function_call_output: formatted text with an exit-code line, or JSON with metadata.exit_code."""
    parsed = _json_object(output)
    if isinstance(parsed, dict):
        metadata = parsed.get("metadata")
        code = _int(metadata.get("exit_code")) if isinstance(metadata, dict) else None
        if code is not None:
            return code
    return _exit_in_text(_text(output, 0))


def _exit_code(p: dict, r: dict, action: str, texts: tuple[str, str]) -> int | None:
    for source in (p, *_result_dicts(r)):
        for key in _EXIT_KEYS:
            code = _int(source.get(key))
            if code is not None:
                return code
    if action != "shell":
        return None
    for text in texts:
        code = _exit_in_text(text)
        if code is not None:
            return code
    return None


def _result_dicts(r: dict) -> list[dict]:
    """The response and the structured parts an exit code may sit in (Codex metadata, Kiro Json items)."""
    found = [r]
    if isinstance(r.get("metadata"), dict):
        found.append(r["metadata"])
    for key in ("items", "result"):
        items = r.get(key)
        for item in items[:_MAX_ITEMS] if isinstance(items, list) else ():
            inner = item.get("Json", item) if isinstance(item, dict) else None
            if isinstance(inner, dict):
                found.append(inner)
    return found


def _exit_in_text(text: str) -> int | None:
    """An exit-code line at the head (Claude, Codex) or the tail (Gemini, Kiro IDE) of a shell result."""
    head = "\n".join(text[:2_000].splitlines()[:5])
    tail = "\n".join(text[-2_000:].splitlines()[-6:])
    for part in (head, tail):
        match = _EXIT_LINE.search(part)
        if match:
            return int(match.group(1))
    return None


# --- small readers ------------------------------------------------------------------------------------------------


def _text(value: object, depth: int) -> str:
    """The readable text of a tool response: a string, content blocks, stdout/stderr, a known text field."""
    if isinstance(value, str):
        return value
    if depth > 4:
        return ""
    if isinstance(value, list):
        return _join([_text(item, depth + 1) for item in value[:_MAX_ITEMS]])
    if not isinstance(value, dict):
        return ""
    if "stdout" in value or "stderr" in value:
        return _join([_str(value.get("stdout")), _str(value.get("stderr"))])
    for key in _TEXT_KEYS:
        text = _text(value.get(key), depth + 1)
        if text:
            return text
    return ""


def _join(parts: list[str]) -> str:
    kept, size = [], 0
    for part in parts:
        if part:
            kept.append(part)
            size += len(part)
            if size > CAP:
                break
    return "\n".join(kept)


def _error_text(value: object) -> str:
    if isinstance(value, dict):  # {"message": ...}
        return _str(value.get("message"))
    return _str(value)


def _json_object(value: object) -> object:
    """A JSON object passed as a string (Cursor's tool_input and result_json) parsed; anything else unchanged."""
    if isinstance(value, str) and len(value) <= _MAX_JSON and value.lstrip().startswith("{"):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def _int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,9}", value.strip()):
        return int(value)
    return None


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _first_str(p: dict, *keys: str) -> str:
    for key in keys:
        value = p.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _cap(text: str) -> str:
    return text[:CAP]


def _unique(paths: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(path for path in paths if path))[:_MAX_ITEMS]


# --- the answer -----------------------------------------------------------------------------------------------------

# How each agent takes text back, by the catalog kind of the wire event:
#   "context": {"hookSpecificOutput": {"hookEventName": <wire name>, "additionalContext": text}}, read by the model
#   "system":  {"systemMessage": text}, shown to the user, never blocks
#   "plain":   the text itself on stdout
# Kinds not listed print nothing: the agent discards what a hook prints there.
_CONTRACTS: dict[str, dict[str, str]] = {
    # code.claude.com/docs/en/hooks, "Add context for Claude" and "Decision control": additionalContext on
    # SessionStart/UserPromptSubmit/PreToolUse/PostToolUse/PostToolUseFailure. On Stop it would make Claude keep
    # going ("Stop decision control"), so the user gets a systemMessage. PreCompact and SessionEnd discard JSON.
    "claude": dict.fromkeys(("session_start", "prompt", "pre_tool", "post_tool", "tool_failure"), "context")
    | {"stop": "system"},
    # openai/codex codex-rs/hooks/schema/generated/*.command.output.schema.json: hookSpecificOutput.additionalContext
    # for SessionStart/UserPromptSubmit/PreToolUse/PostToolUse; Stop and PreCompact take only systemMessage
    # (shown as a warning); there is no SessionEnd output schema.
    "codex": dict.fromkeys(("session_start", "prompt", "pre_tool", "post_tool"), "context")
    | {"stop": "system", "compact": "system"},
    # geminicli.com/docs/hooks/reference: additionalContext on SessionStart, BeforeAgent and AfterTool;
    # AfterAgent's feedback would force a retry, so it gets systemMessage, as do PreCompress and SessionEnd
    # ("Displayed to the user"). At BeforeTool Gemini CLI 0.61 reads only `continue`, `decision` (block/deny
    # stop the tool, ask prompts the user) and hookSpecificOutput.tool_input (rewrites the call), and
    # systemMessage goes to the terminal: nothing reaches the model without stopping or changing the call
    # (bundle: evaluateBeforeToolHook; additionalContext is read only after the tool, in executeToolWithHooks).
    # So the user sees a pre-tool warning at once, and the model gets it with the tool's result
    # (`holds_pre_tool_text`).
    "gemini": dict.fromkeys(("session_start", "prompt", "post_tool"), "context")
    | dict.fromkeys(("pre_tool", "stop", "compact", "session_end"), "system"),
    # kiro.dev/docs/cli/hooks (= aws/amazon-q-developer-cli docs/hooks.md): agentSpawn and userPromptSubmit add
    # exit-0 STDOUT to the agent's context; for the other events STDOUT "is captured but not shown".
    "kiro": {"session_start": "plain", "prompt": "plain"},
}

# cursor.com/docs/hooks, "Hook events": the neutral object each event needs and the field that carries text.
# sessionStart takes additional_context; beforeSubmitPrompt cannot inject context, so it only lets the prompt
# through; preCompact shows user_message. A pre-tool answer would have to carry a `permission`, and "allow" could
# skip Cursor's own approval of a command, so hivelore prints nothing there (Cursor fails open): a pre-edit
# warning is held and given to the model with the tool's result (`holds_pre_tool_text`).
# afterShellExecution/afterFileEdit/afterMCPExecution/sessionEnd have no output, and stop's followup_message
# would be submitted as a new user message, so those print nothing.
_CURSOR_OUTPUT: dict[str, tuple[dict[str, object], str]] = {
    "sessionStart": ({}, "additional_context"),
    "beforeSubmitPrompt": ({"continue": True}, ""),
    "preCompact": ({}, "user_message"),
    "postToolUse": ({}, "additional_context"),
    "postToolUseFailure": ({}, "additional_context"),
}


def answer(event: Event, text: str) -> str:
    """What to print on stdout so the agent shows `text` (to the model where it can, else to the user).

    "" means print nothing. Never blocks, denies or continues the agent; JSON answers are one line.
    """
    if not isinstance(event, Event):
        return ""
    text = text if isinstance(text, str) and text.strip() else ""
    if event.agent == "cursor":
        return _cursor_answer(event.name, text)
    # The wire event's own kind, not event.kind: an interrupted PostToolUseFailure is still answered as one.
    style = _CONTRACTS.get(event.agent, {}).get(kind_of(event.agent, event.name), "")
    if not text or not style:
        return ""
    if style == "plain":
        return text
    if style == "system":
        return _dump({"systemMessage": text})
    return _dump({"hookSpecificOutput": {"hookEventName": event.name, "additionalContext": text}})


def holds_pre_tool_text(agent: str) -> bool:
    """Whether what hivelore says before an agent's tool runs must be held for the tool's result to reach the
    model: the agent shows a pre-tool answer to the user only (Gemini CLI), or to nobody (Cursor, where it would
    have to decide a permission: see _CURSOR_OUTPUT), yet gives the model a post-tool one."""
    if agent == "cursor":
        return "preToolUse" not in _CURSOR_OUTPUT and _CURSOR_OUTPUT["postToolUse"][1] == "additional_context"
    contract = _CONTRACTS.get(agent, {})
    return contract.get("pre_tool") == "system" and contract.get("post_tool") == "context"


def _cursor_answer(name: str, text: str) -> str:
    neutral, field = _CURSOR_OUTPUT.get(name, ({}, ""))
    body = dict(neutral)
    if text and field:
        body[field] = text
    return _dump(body) if body else ""


def _dump(body: dict) -> str:
    # json.dumps escapes "\n" but, with ensure_ascii=False, not the other characters str.splitlines() breaks on.
    line = json.dumps(body, ensure_ascii=False)
    return line.replace("\x85", "\\u0085").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
