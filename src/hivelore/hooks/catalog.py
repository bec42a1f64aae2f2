"""Which events of which agent hivelore hooks into, and what each one means.

One table, read by the hook command (to normalise an event name) and by `install` (to wire it).
Normalised kinds: session_start, prompt, pre_tool, post_tool, tool_failure, stop, compact,
session_end. "Reading" hooks only inject lessons and record nothing; `--hooks read-only` installs
just those.
"""

from __future__ import annotations

AGENTS = ("claude", "codex", "kiro", "gemini", "cursor")

# agent -> ((wire event name, normalised kind), ...), in the order install writes them.
HOOK_EVENTS: dict[str, tuple[tuple[str, str], ...]] = {
    "claude": (
        ("SessionStart", "session_start"),
        ("UserPromptSubmit", "prompt"),
        ("PreToolUse", "pre_tool"),
        ("PostToolUse", "post_tool"),
        ("PostToolUseFailure", "tool_failure"),
        ("PreCompact", "compact"),
        ("PostCompact", "compact"),
        ("Stop", "stop"),
        ("SessionEnd", "session_end"),
    ),
    "codex": (
        ("SessionStart", "session_start"),
        ("UserPromptSubmit", "prompt"),
        ("PreToolUse", "pre_tool"),
        ("PostToolUse", "post_tool"),
        ("PreCompact", "compact"),
        ("Stop", "stop"),
        ("SessionEnd", "session_end"),
    ),
    "kiro": (
        ("agentSpawn", "session_start"),
        ("userPromptSubmit", "prompt"),
        ("preToolUse", "pre_tool"),
        ("postToolUse", "post_tool"),
        ("stop", "stop"),
    ),
    "gemini": (
        ("SessionStart", "session_start"),
        ("BeforeAgent", "prompt"),
        ("BeforeTool", "pre_tool"),
        ("AfterTool", "post_tool"),
        ("PreCompress", "compact"),
        ("AfterAgent", "stop"),
        ("SessionEnd", "session_end"),
    ),
    "cursor": (
        ("sessionStart", "session_start"),
        ("beforeSubmitPrompt", "prompt"),
        # The generic preToolUse (not beforeShellExecution): it carries edits, which are what the
        # pre-edit check needs; hivelore does not judge shell commands before they run.
        ("preToolUse", "pre_tool"),
        # postToolUse/postToolUseFailure, not the older after* events: only they carry a failure and
        # can answer with additional_context (cursor.com/docs/hooks, "Hook events").
        ("postToolUse", "post_tool"),
        ("postToolUseFailure", "tool_failure"),
        ("preCompact", "compact"),
        ("stop", "stop"),
        ("sessionEnd", "session_end"),
    ),
}

READING_KINDS = frozenset({"session_start", "prompt"})


def kind_of(agent: str, event: str) -> str:
    """The normalised kind of an agent's event, or "other" for one hivelore does not handle."""
    for name, kind in HOOK_EVENTS.get(agent, ()):
        if name == event:
            return kind
    return "other"


def events_for(agent: str, hooks: str) -> tuple[str, ...]:
    """The wire event names to install for `hooks` = all | read-only | none."""
    if hooks == "none":
        return ()
    return tuple(name for name, kind in HOOK_EVENTS[agent] if hooks == "all" or kind in READING_KINDS)
