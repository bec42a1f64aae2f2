"""One agent hook event, answered in this process: `respond(argv, payload, cwd, ppid)`.

`hivelore hook --agent A --event E [--read-only]` reaches this through `hooks.client`, which hands
the event to the resident hook server when one runs (the server calls `respond` in turn) and
calls it here otherwise.

A hook must never fail or stall the agent: whatever arrives (garbage, nothing, megabytes, the
wrong agent), it exits 0, prints only what the agent's parser accepts, and writes what went wrong
to `HIVELORE_HOME/logs/hooks.log` instead (`hooks.log`).
"""

from __future__ import annotations

import json
import os
import re  # json imports it anyway

from hivelore.home import home_path
from hivelore.hooks.adapters import Event, answer, normalise
from hivelore.hooks.catalog import AGENTS
from hivelore.hooks.log import log
from hivelore.hooks.wire import MAX_PAYLOAD

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from collections.abc import Callable

    from hivelore.hooks.handlers import HookContext
    from hivelore.memory.service import Hivelore, Pool

USAGE = "usage: hivelore hook --agent claude|codex|kiro|gemini|cursor --event EVENT [--read-only]  (payload on stdin)"


def respond(
    argv: list[str],
    raw: bytes,
    cwd: str,
    ppid: int,
    pool: Pool | None = None,
    later: list[Callable[[], None]] | None = None,
) -> tuple[str, str]:
    """What to print on stdout and on stderr for one hook event: its command line, the bytes that
    came on stdin, the folder and the parent process (the agent) of the hook process. `pool`: the
    SQLite connections the hook server keeps open from one event to the next. `later`: where the
    hook server takes the work the answer does not depend on (`HookContext.defer`), to do once the
    answer is sent; without it, that work is done before this returns."""
    try:
        agent, event_name, read_only = _arguments(argv)
    except ValueError as exc:
        log("-", "-", f"hivelore hook {' '.join(argv)}: {exc}")  # the agent may never show stderr
        return "", f"hivelore: {exc} ({USAGE})\n"
    event = normalise(agent, event_name, _payload(agent, event_name, raw))
    if not event.session_id:
        # Some payloads name no session (Kiro CLI); the agent process that runs the hooks stands in for it.
        event.session_id = f"process-{ppid}"
    text = ""
    # Most pre-tool calls are reads and shell commands, which hivelore only looks at once they ran:
    # they answer before the stores are even imported.
    if event.kind != "other" and not (event.kind == "pre_tool" and event.action != "edit"):
        try:
            text = _handle(event, read_only, cwd, pool, later)
        except Exception as exc:  # a hook never fails the agent: the log says what went wrong
            log(agent, event_name, f"{type(exc).__name__}: {exc}")
    reply = answer(event, text)
    return (reply + "\n" if reply else ""), ""


def _arguments(argv: list[str]) -> tuple[str, str, bool]:
    values = {"--agent": "", "--event": ""}
    read_only = False
    args = list(argv)
    while args:
        arg = args.pop(0)
        name, has_value, text = arg.partition("=")
        if arg == "--read-only":
            read_only = True
        elif name in values and (has_value or args):
            values[name] = text if has_value else args.pop(0)
        else:
            raise ValueError(f"unexpected argument '{arg}'")
    if values["--agent"] not in AGENTS:
        raise ValueError(f"--agent must be one of {', '.join(AGENTS)}, not '{values['--agent']}'")
    if not values["--event"]:
        raise ValueError("--event is missing")
    return values["--agent"], values["--event"], read_only


def _payload(agent: str, event_name: str, raw: bytes) -> object:
    """The JSON object that came on stdin, or None when there is none or it is not a JSON object
    (logged). Kiro IDE 0.12 passes its payload in the USER_PROMPT variable instead."""
    if not raw.strip() and agent == "kiro" and os.environ.get("USER_PROMPT"):
        raw = os.environ["USER_PROMPT"].encode("utf-8", "replace")
        if not raw.lstrip().startswith(b"{"):
            return {"prompt": raw.decode("utf-8")}
    if len(raw) > MAX_PAYLOAD:
        log(agent, event_name, f"payload over {MAX_PAYLOAD:,} bytes: ignored")
        return None
    if not raw.strip():
        return None
    try:
        payload = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, or nested beyond the parser's depth
        log(agent, event_name, f"payload is not JSON ({exc})")
        return None
    if not isinstance(payload, dict):
        log(agent, event_name, f"payload is JSON but not an object ({type(payload).__name__}): ignored")
        return None
    if b"\\ud" in raw or b"\\uD" in raw:  # a surrogate escape: most likely a pair, which is fine
        payload = _without_surrogates(payload)
    return payload


def _without_surrogates(value: object) -> object:
    """`value` with every lone surrogate (`"\\ud800"` is valid JSON, but no UTF-8 text: the stores and
    the answer could not take it) replaced by U+FFFD, in keys and strings at any depth."""
    if isinstance(value, str):
        return re.sub("[\ud800-\udfff]", "\ufffd", value)
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_surrogates(item) for item in value]
    return value


def hide_private(event: Event, prefixes: tuple[str, ...]) -> None:
    """Take the private spans out of every text the event carries, before any handler sees it: this
    is where a hook payload becomes what hivelore may store (the prompt, a command, its output, the
    agent's last message or compaction summary, the texts an edit replaces)."""
    from hivelore.privacy import strip_private

    for name in ("prompt", "command", "error", "output", "summary", "last_message"):
        setattr(event, name, strip_private(getattr(event, name), prefixes))
    event.anchors = tuple(strip_private(anchor, prefixes) for anchor in event.anchors)


def _handle(event: Event, read_only: bool, cwd: str, pool: Pool | None, later: list[Callable[[], None]] | None) -> str:
    from hivelore.config import switches
    from hivelore.events.store import EventStore, EventStoreBusy, EventStoreUnavailable, reset
    from hivelore.hooks.handlers import HANDLERS, HookContext

    def open_service() -> Hivelore:
        from pathlib import Path

        from hivelore.memory.service import Hivelore

        return Hivelore.open(Path(cwd), agent=event.agent, session=event.session_id, pool=pool)

    if event.cwd and os.path.isdir(event.cwd):
        cwd = event.cwd
    event.cwd = cwd
    # Decided per event, from the event's folder: one hook server answers for every repository.
    switched = switches(cwd, os.environ)
    if switched.mode == "off":
        return ""  # nothing is read, nothing is stored
    read_only = read_only or switched.capture == "off"
    hide_private(event, switched.private_prefix)
    home = home_path(os.environ)
    store = None
    try:
        store = EventStore.open(home, pool=pool)
    except EventStoreBusy as exc:
        log(event.agent, event.name, f"event store busy, event not recorded: {exc}")
    except EventStoreUnavailable as exc:
        log(event.agent, event.name, f"event store unusable, recreating it: {exc}")
        try:
            store = reset(home)
        except EventStoreUnavailable as again:  # e.g. the folder is read-only: answer without the store
            log(event.agent, event.name, f"event store cannot be recreated: {again}")
    heard = answer(event, "?") != ""  # whether this agent shows anything a hook says at this event
    context = HookContext(event, open_service, store, read_only, heard)
    try:
        return HANDLERS[event.kind](context)
    finally:
        if later is None:
            _finish(context)
        else:
            later.append(lambda: _finish(context))


def _finish(context: HookContext) -> None:
    """The event's deferred work, then its stores closed and its warnings logged."""
    event = context.event
    for work in context.deferred:
        try:
            work()
        except Exception as exc:  # as for the rest of the event: the log says what went wrong
            log(event.agent, event.name, f"{type(exc).__name__}: {exc}")
    for warning in context.close():
        log(event.agent, event.name, f"warning: {warning}")
    if context.store is not None:
        context.store.close()
