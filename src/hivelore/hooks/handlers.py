"""What hivelore does on each normalised hook event, and the text it answers with.

Every handler takes the event, the memory service for the event's folder and the event store, and
returns the text for the agent ("" to stay silent). Lessons are framed as considerations, not
rules; nudges name the scope to write into. A session is identified by agent + session id.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

from hivelore.errors import Conflict
from hivelore.events.store import EventStore, Failure, error_lines
from hivelore.hooks.adapters import Event, holds_pre_tool_text
from hivelore.hooks.keep_requests import asks_to_keep
from hivelore.memory.model import SESSION_NOTE_TAG

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from typing import TypeVar

    from hivelore.memory import recall
    from hivelore.memory.service import Hivelore
    from hivelore.memory.signatures import Links
    from hivelore.team.coordination import Coordination

    T = TypeVar("T")

PROMPT_LESSONS = 3  # at most this many lessons under a prompt
FAILURE_LESSONS = 3
NOTE_TTL_DAYS = 14  # captured session notes expire unless someone commits them
NOTE_CHARS = 3_000
REPEATED_CALLS = 3  # the same call this many times in a session is friction
EVENTS_KEPT_DAYS = 90  # sessions, prompts, calls and unfixed failures older than this are forgotten
PRUNE_EVERY_S = 86_400  # by the first session start of each day
RETROSPECTIVE = "nudge:retrospective"  # kept among a session's shown addresses, so it is given once
FRAMING = "considerations, not rules; read any in full with memory_read"


class HookContext:
    """What a handler works with: the event, the memory service for its folder (opened on first use:
    the most frequent events, a read or a shell command that ran, need only the event store), the
    event store (None when events.db cannot be used), whether this hook may record prompts, failures
    and notes (`--hooks read-only` may not; it still keeps the session's bookkeeping of what it
    showed), and whether the agent shows what a hook says at this event at all (`heard`). `deferred`:
    work the answer does not depend on, done after the answer was sent (`defer`)."""

    __slots__ = ("event", "_open_service", "_service", "store", "read_only", "heard", "deferred")

    def __init__(
        self,
        event: Event,
        open_service: Callable[[], Hivelore],
        store: EventStore | None,
        read_only: bool,
        heard: bool = True,
    ) -> None:
        self.event, self._open_service = event, open_service
        self._service: Hivelore | None = None
        self.store, self.read_only, self.heard = store, read_only, heard
        self.deferred: list[Callable[[], None]] = []

    def defer(self, work: Callable[[], None]) -> None:
        """Do `work` once the agent has its answer: the hook server sends the answer first (the
        next event waits for it, one event at a time), a hook process does it before it exits."""
        self.deferred.append(work)

    @property
    def service(self) -> Hivelore:
        if self._service is None:
            self._service = self._open_service()
        return self._service

    def close(self) -> list[str]:
        """Close the service if it was opened; the warnings it gathered."""
        if self._service is None:
            return []
        self._service.close()
        return list(self._service.warnings)

    @property
    def recording(self) -> bool:
        return self.store is not None and not self.read_only

    @property
    def recorder(self) -> EventStore:
        """The event store, for a handler that checked `recording` first."""
        assert self.store is not None, "check ctx.recording before recording"
        return self.store

    def shown(self) -> set[str]:
        return self.store.shown(self.event.agent, self.event.session_id) if self.store else set()

    def mark_shown(self, addresses: Sequence[str]) -> None:
        """Remember what this session was shown; text the agent drops (`heard` False) was not shown."""
        if self.store is not None and addresses and self.heard:
            self.store.mark_shown(self.event.agent, self.event.session_id, addresses)


def session_start(ctx: HookContext) -> str:
    """The user's profile (shared → USER.md → SOUL.md → MEMORY.md), then the ranked, budgeted lessons
    of the folder's chain: once per session, again after compaction."""
    event, store = ctx.event, ctx.store
    if store is not None:
        store.prune(EVENTS_KEPT_DAYS, every_s=PRUNE_EVERY_S)
        store.touch_session(event.agent, event.session_id, event.cwd, event.subagent)
        if event.source == "compact":
            store.mark_compacted(event.agent, event.session_id)
        if not store.take_context(event.agent, event.session_id):
            return ""
    selection = ctx.service.context()
    ctx.mark_shown([r.row.memory.address for r in selection.shown])
    return "\n\n".join(part for part in (_profile_block(ctx), ctx.service.render_context(selection)) if part)


def prompt(ctx: HookContext) -> str:
    """Up to three lessons the prompt bears on that this session has not seen. The prompt (the
    user's own, direct input of a root session) is kept, and may promote or forget profile lines.
    A prompt asking to keep something ("remember this") is answered with where to write it now."""
    event = ctx.event
    said = []
    if ctx.recording and event.prompt and not event.subagent:
        ctx.recorder.record_prompt(event.agent, event.session_id, event.prompt, root_session=True)
        said.append(_promote(ctx))
    if not event.subagent and asks_to_keep(event.prompt):
        said.append(_keep_request(ctx))
    _warm_model(ctx)
    hits = ctx.service.related(event.prompt, exclude=ctx.shown(), limit=PROMPT_LESSONS)
    if hits:
        ctx.mark_shown([h.row.memory.address for h in hits])
        said.append(_lesson_block("hivelore: lessons that may bear on this request", hits, ctx))
    return "\n\n".join(part for part in said if part)


def tool_failure(ctx: HookContext) -> str:
    """Matching lessons ("you have hit something like this before"), else what fixed this failure
    before, else a nudge to write a lesson into the repo scope; once per failure signature and
    session. The failure signature is staged. A failing test run is recorded for the session's task,
    and a teammate's failure of the same tests (remote mode) is said first, with what fixed it."""
    event = ctx.event
    if event.interrupted:
        return ""
    failure = _stage_failure(ctx)
    found = _failure_signature(event.error or event.output, failure)
    if failure is not None and found:
        _signatures(ctx, lambda links: links.saw(event.agent, event.session_id, found))
    heard = ""
    if ctx.recording and event.action == "shell" and not event.subagent:
        heard = _record_test_run(ctx, event.error or event.output)
    said = _failure_advice(ctx, failure, found)
    return "\n\n".join(part for part in (heard, said) if part)


def _failure_advice(ctx: HookContext, failure: Failure | None, found: str) -> str:
    """What a failure brings up, once per failure signature and session: the lessons linked to its
    signature `found` (memory/signatures.py) and matching lessons, else the fix that worked before,
    else a nudge to write one."""
    event = ctx.event
    nudge_key = f"nudge:{failure.fingerprint}" if failure else ""
    if nudge_key and nudge_key in ctx.shown():
        return ""  # this session was already told about this failure
    text = f"{event.command}\n{event.error or event.output}"
    if failure is not None:
        text = f"{event.command}\n{failure.summary}\n" + "\n".join(error_lines(event.error or event.output))
    # Not excluding what this session was shown: a lesson listed at session start is the one this failure
    # is about, and saying "no stored lesson matches" would be false.
    _warm_model(ctx)
    hits = _with_linked(_linked_lessons(ctx, found), ctx.service.related(text, limit=FAILURE_LESSONS))
    ctx.mark_shown([*([nudge_key] if nudge_key else []), *(h.row.memory.address for h in hits)])
    if hits:
        return _lesson_block("hivelore: you have hit something like this before", hits, ctx)
    return _known_fix(failure) if failure is not None and failure.fix else _nudge(ctx, failure)


def pre_tool(ctx: HookContext) -> str:
    """Before an edit: claim the code it touches for the session's task, and warn (once, never
    block) when another developer's active task has claimed code within three call hops of it, and
    about what failed on this code before. Other calls: silent. For an agent whose model reads
    nothing said before a tool runs (Gemini CLI), the warning is also held for the tool's result."""
    event = ctx.event
    if event.action != "edit" or not event.paths or not ctx.recording:
        return ""
    from hivelore.team.coordination import cited_name  # only for an edit it records: it brings the team model

    checked = _coordinate(ctx, lambda c: c.before_edit(event.agent, event.session_id, event.paths, event.anchors))
    said, symbols = checked if checked else ([], [])
    lessons = ctx.service.citing([cited_name(s) for s in symbols], exclude=ctx.shown())
    if lessons:
        from hivelore.memory import recall

        ctx.mark_shown([h.row.memory.address for h in lessons])
        width = ctx.service.settings.context_line_chars
        said += [f"a lesson about this code: {recall.line_for(h.row, width, h.note)[2:]}" for h in lessons]
    if not said:
        return ""
    lines = "\n".join(f"- {line}" for line in said)
    if holds_pre_tool_text(event.agent):
        _hold_for_result(ctx, f"hivelore, before your edit of {_shown_paths(event)}:\n{lines}")
    return f"hivelore:\n{lines}"


def _hold_for_result(ctx: HookContext, text: str) -> None:
    """Keep what the user is shown now for the model, which gets it with the tool's result."""
    from hivelore.events.store import EventStoreUnavailable

    try:
        ctx.recorder.hold_notice(ctx.event.agent, ctx.event.session_id, text)
    except EventStoreUnavailable as exc:  # the user still sees it; the model will not
        ctx.service.warnings.append(f"a pre-edit notice was not held for the model: {exc}")


def post_tool(ctx: HookContext) -> str:
    """A call that succeeded: a shell command may resolve an earlier failure (remembered as its fix);
    identical calls are counted as friction. A shell command whose exit code is unknown (and whose
    output does not say it failed) is not taken for a success: it resolves nothing. Silent, but for
    a test run whose output says tests failed that a teammate's attempt failed too (remote mode)."""
    event = ctx.event
    if not ctx.recording or event.subagent:
        return ""
    _link_written_lesson(ctx)
    if event.action == "shell" and event.command:
        if not event.exit_unknown:
            ctx.recorder.record_success(event.agent, event.session_id, event.cwd, event.tool, event.command)
        heard = _record_test_run(ctx, event.output)  # a run that failed with exit code 0
        _count_call(ctx)
        return heard
    if event.action == "edit" and event.paths:
        _coordinate(ctx, lambda c: c.after_edit(event.paths, event.agent, event.session_id))
    _count_call(ctx)
    return ""


def compact(ctx: HookContext) -> str:
    """Compaction: the session-start block is due again; a summary, if the agent sent one, is kept."""
    event = ctx.event
    if ctx.store is not None:
        ctx.store.mark_compacted(event.agent, event.session_id)
    _capture_note(ctx, event.summary, "compaction-summary")
    return ""


def stop(ctx: HookContext) -> str:
    """A retrospective nudge once per session, only when it had friction; the agent's last message
    is kept as the session's staged note, as the agent's own words (never as a lesson it claims)."""
    event = ctx.event
    if event.kind == "stop":
        # Writing the note syncs a file and its folder, 10 to 40 ms of the agent's wait for nothing it
        # is told. Not at session end: the agent leaves then, and the note must be there when it has.
        ctx.defer(lambda: _capture_note(ctx, event.last_message, "last-message"))
    else:
        _capture_note(ctx, event.last_message, "last-message")
    if event.kind == "session_end" and ctx.recording and (event.last_message or event.summary):
        summary = agent_words(event, event.last_message or event.summary, "last-message")
        _coordinate(ctx, lambda c: c.progress(event.agent, event.session_id, summary), task=False)
    if ctx.store is None or event.subagent:
        return ""
    friction = ctx.store.friction(event.agent, event.session_id)
    if friction.failures == 0 and friction.max_repeats < REPEATED_CALLS or RETROSPECTIVE in ctx.shown():
        return ""
    ctx.mark_shown([RETROSPECTIVE])
    what = []
    if friction.failures:
        what.append(f"{friction.failures} failed command{'s' if friction.failures > 1 else ''}")
    if friction.max_repeats >= REPEATED_CALLS:
        what.append(f"one call repeated {friction.max_repeats} times")
    return (
        f"hivelore: this session had friction ({', '.join(what)}). If the cause or the fix was non-obvious, "
        f"save it for next time with memory_write (scope {_write_scope(ctx)!r}, a short kebab-case key naming "
        "the problem, the value: symptom → cause → fix)."
    )


def with_held_notices(handler: Callable[[HookContext], str]) -> Callable[[HookContext], str]:
    """A tool-result handler that first gives the model what was held for it before the tool ran (see
    `pre_tool`: Gemini CLI's model reads nothing a BeforeTool hook says), then the handler's own text."""

    def handle(ctx: HookContext) -> str:
        event = ctx.event
        said = handler(ctx)  # first: should it fail, what is held stays held for the next result
        if ctx.store is None or not ctx.heard or not holds_pre_tool_text(event.agent):
            return said
        from hivelore.events.store import EventStoreUnavailable

        try:
            held = ctx.store.take_notices(event.agent, event.session_id)
        except EventStoreUnavailable:  # busy: the notices stay held, and the next tool result takes them
            return said
        return "\n\n".join(part for part in (*held, said) if part)

    handle.__name__, handle.__doc__ = handler.__name__, handler.__doc__
    return handle


HANDLERS: dict[str, Callable[[HookContext], str]] = {
    "session_start": session_start,
    "prompt": prompt,
    "pre_tool": pre_tool,
    "tool_failure": with_held_notices(tool_failure),
    "post_tool": with_held_notices(post_tool),
    "compact": compact,
    "stop": stop,
    "session_end": stop,
}


def _profile_block(ctx: HookContext) -> str:
    try:
        return ctx.service.profile().injection_block()
    except ValueError as exc:  # a damaged ledger or intent: the lessons still come
        ctx.service.warnings.append(f"the profile was left out: {exc}")
        return ""


def _promote(ctx: HookContext) -> str:
    """Promote what the user has now said in three root sessions; forget what they asked to forget."""
    from hivelore.profile.promotion import observe

    event = ctx.event
    try:
        outcome = observe(ctx.recorder, ctx.service.profile(), event.agent, event.session_id, event.prompt)
    except (ValueError, Conflict) as exc:  # over budget, drift, a damaged ledger: the prompt itself goes on
        ctx.service.warnings.append(f"no profile change from this prompt: {exc}")
        return ""
    lines = [f"- {p.line} (said in {len(p.entry['sessions'])} sessions)" for p in outcome.promoted]
    lines += [f"- forgotten: {line}" for line in outcome.forgotten]
    return "hivelore: your profile changed:\n" + "\n".join(lines) if lines else ""


def _coordinate(ctx: HookContext, work: Callable[[Coordination], T], *, task: bool = True) -> T | None:
    """Run `work` on the team coordination of the event's repository, with the session's task
    created from its first prompt if it has none yet (`task`). Trouble there (a damaged team.db, a
    file the parser chokes on) is logged, and the rest of the hook goes on."""
    from hivelore.team.coordination import Coordination

    event = ctx.event
    if ctx.service.chain.git is None:
        return None  # a folder outside git has no repository to share, and may be a whole home folder
    coordination = None
    try:
        coordination = Coordination.for_service(ctx.service)
        if task:
            first = ctx.store.first_prompt(event.agent, event.session_id) if ctx.store else ""
            coordination.intent(event.agent, event.session_id, first)
        return work(coordination)
    except Exception as exc:  # noqa: BLE001 -- coordination is an extra: it must not cost the lessons
        ctx.service.warnings.append(f"team coordination skipped: {type(exc).__name__}: {exc}")
        return None
    finally:
        if coordination is not None:
            coordination.close()


def _record_test_run(ctx: HookContext, output: str) -> str:
    """Record a test command's run for the session's task; what to say when a teammate's attempt
    failed the same tests (remote mode), else nothing."""
    from hivelore.team import testruns

    event = ctx.event
    if not testruns.is_test_command(event.command):
        return ""

    def record(c: Coordination) -> list[str]:
        attempt = c.test_run(event.agent, event.session_id, event.command, output, event.exit_code)
        return c.teammates_hit(event.agent, event.session_id, attempt)

    heard = _coordinate(ctx, record)
    return "\n".join(f"hivelore: {line}" for line in heard) if heard else ""


def _stage_failure(ctx: HookContext) -> Failure | None:
    event = ctx.event
    if not ctx.recording or event.subagent:
        return None
    _count_call(ctx)
    exit_code = event.exit_code if event.exit_code is not None else -1
    command = event.command or event.tool
    return ctx.recorder.record_failure(
        event.agent, event.session_id, event.cwd, event.tool, command, exit_code, event.error or event.output
    )


def _warm_model(ctx: HookContext) -> None:
    """In the hook server, once it has loaded the model (vectors.start_resident), recall by meaning too.
    A hook process never imports the model's module, so it finds none and stays lexical and quick."""
    vectors = sys.modules.get("hivelore.memory.vectors")
    if vectors is not None:
        ctx.service.semantic = vectors.resident(ctx.service.settings.home)


def _failure_signature(error: str, failure: Failure | None) -> str:
    """The error's class and key words (memory/signatures.py); an error that names no class (a Go or
    Jest assertion) stands for itself by its fingerprint."""
    from hivelore.memory.signatures import signature

    found = signature(error)
    return found or (f"fingerprint {failure.fingerprint}" if failure is not None else "")


def _signatures(ctx: HookContext, work: Callable[[Links], T]) -> T | None:
    """Run `work` on the home's failure-signature links; a store that cannot be used is logged, and
    the hook goes on without it."""
    import sqlite3

    from hivelore.memory.signatures import Links

    links = None
    try:
        links = Links(ctx.service.settings.home)
        return work(links)
    except sqlite3.Error as exc:
        ctx.service.warnings.append(f"failure-signature links skipped: {exc}")
        return None
    finally:
        if links is not None:
            links.close()


def _link_written_lesson(ctx: HookContext) -> None:
    """A call that wrote a lesson links it to the failures this session saw before it: it fixed them."""
    from hivelore.memory.signatures import written_lesson

    event = ctx.event
    address = written_lesson(event.tool, event.command, event.output) if not event.failed else ""
    if address:
        _signatures(ctx, lambda links: links.wrote(event.agent, event.session_id, address))


def _linked_lessons(ctx: HookContext, found: str) -> list[recall.Ranked]:
    """The committed, visible lessons linked to this failure signature, as search hits."""
    from hivelore.errors import NotFound
    from hivelore.memory import recall
    from hivelore.memory.tier import Candidate

    addresses = _signatures(ctx, lambda links: links.lessons(found)) if found else None
    hits = []
    for address in addresses or []:
        scope, _, key = address.rpartition("::")
        try:
            memory = ctx.service.read(scope, key)
        except (NotFound, ValueError):
            continue  # forgotten, archived or renamed since: the link is simply not used
        if memory.state == "committed":
            hits.append(recall.Ranked(Candidate.of(memory, "", address), 1.0, 1.0))
    return hits


def _with_linked(linked: list[recall.Ranked], hits: list[recall.Ranked]) -> list[recall.Ranked]:
    shown = {h.row.memory.address for h in linked}
    return [*linked, *(h for h in hits if h.row.memory.address not in shown)][:FAILURE_LESSONS]


def _count_call(ctx: HookContext) -> None:
    event = ctx.event
    call = event.command or " ".join(event.paths)
    if call:
        ctx.recorder.record_call(event.agent, event.session_id, event.tool, call)


def _lesson_block(title: str, hits: Sequence[recall.Ranked], ctx: HookContext) -> str:
    from hivelore.memory import recall

    lines = [recall.line_for(h.row, ctx.service.settings.context_line_chars, h.note) for h in hits]
    return "\n".join([f"{title} ({FRAMING}):", *lines])


def _keep_request(ctx: HookContext) -> str:
    """The user asked to keep something: write it now, into the narrowest scope of the folder's chain;
    and the session's staged notes, which the user may mean, can be committed as they are."""
    scope = ctx.service.scopes[0]
    lines = [
        f"hivelore: the user asks you to keep something: write it now with memory_write into scope {scope!r} "
        "(a short kebab-case key naming it; the value: what to keep, in the user's terms)."
    ]
    staged = _staged_notes(ctx, scope)
    if staged:
        lines.append(f"This session's staged notes: {', '.join(staged)}; memory_commit turns one committed as it is.")
    return "\n".join(lines)


def _staged_notes(ctx: HookContext, scope: str) -> list[str]:
    """The addresses of this session's notes that are still staged and visible (see `_capture_note`)."""
    event = ctx.event
    keys = [_note_key(event, what) for what in ("last-message", "compaction-summary")]
    copies = [c for key in keys for c in ctx.service.copies([scope], key=key)]
    return [c.memory.address for c in copies if c.memory.state == "staged" and c.memory.is_visible()]


def _known_fix(failure: Failure) -> str:
    times = f"{failure.seen_before} time{'s' if failure.seen_before != 1 else ''} before"
    if failure.rerun:
        return f"hivelore: `{failure.command}` failed like this {times}; it passed when simply run again."
    steps = "; then ".join(f"`{command}`" for command in failure.fix)
    return f"hivelore: `{failure.command}` failed like this {times}; what fixed it then: {steps}."


def _nudge(ctx: HookContext, failure: Failure | None) -> str:
    before = failure.seen_before if failure else 0
    seen = f" (seen {before} time{'s' if before > 1 else ''} before)" if before else ""
    what = f"`{ctx.event.command}`" if ctx.event.command else f"the {ctx.event.tool or 'tool'} call"
    return (
        f"hivelore: {what} failed{seen} and no stored lesson matches. Once you know the fix, if it was "
        f"non-obvious, save it with memory_write into scope {_write_scope(ctx)!r} (a short kebab-case key "
        "naming the problem; the value: symptom → cause → fix)."
    )


def _write_scope(ctx: HookContext) -> str:
    """Where a lesson from this folder belongs by default: the repository, else the project (a
    repository without a remote, a plain folder), else global."""
    for level in ("repo::", "project::"):
        found = [s for s in ctx.service.scopes if s.startswith(level)]
        if found:
            return found[0]
    return "global"


def _capture_note(ctx: HookContext, text: str, what: str) -> None:
    """Keep an agent's last message or compaction summary as a staged, expiring note: one per session
    and `what`, replaced as the session goes on, worded as what the agent said (`agent_words`). A
    note the guard refuses is left out (and logged)."""
    event = ctx.event
    if not ctx.recording or event.subagent or not text.strip():
        return
    value = agent_words(event, text, what)
    key = _note_key(event, what)
    try:
        ctx.service.write(
            ctx.service.scopes[0], key, value, kind="note", state="staged", ttl_days=NOTE_TTL_DAYS,
            tags=(SESSION_NOTE_TAG, event.agent),
        )  # fmt: skip
    except ValueError as exc:  # the guard: a secret or an injection in the agent's own words
        ctx.service.warnings.append(f"the session's {what.replace('-', ' ')} was not kept: {exc}")


def _note_key(event: Event, what: str) -> str:
    return f"session-{event.agent}-{_slug(event.session_id) or 'unknown'}-{what}"


def agent_words(event: Event, text: str, what: str) -> str:
    """The agent's own text (its last message, or its compaction summary) attributed to it, with its
    session and the time: "Saved the lesson." read back later as a bare note would pass for a fact
    (a lesson that was never written), so the note says who said it and that it is not a lesson."""
    import time

    said = "wrote in its compaction summary" if what == "compaction-summary" else "said at the end"
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    quoted = text.strip()
    if len(quoted) > NOTE_CHARS:
        quoted = quoted[: NOTE_CHARS - 1] + "…"
    return (
        f"the agent ({event.agent}) {said} of session {event.session_id or 'unknown'} at {stamp} "
        f'(its own words, not a stored lesson): "{quoted}"'
    )


def _shown_paths(event: Event) -> str:
    """The edited files as the user would name them: relative to the session's folder when inside it."""
    root = event.cwd.rstrip("/\\")
    shown = [p[len(root) + 1 :] if root and p.startswith(root + os.sep) else p for p in event.paths]
    return ", ".join(shown)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text[:24]).strip("-").lower()
