"""Forgetting what hooks captured: one session's, or everything before a date.

Hooks keep three kinds of things: event rows in events.db (prompts, commands and failures, what a
session was shown, profile evidence), staged session notes in the vault, and task links, claims
and test attempts in team.db. `forget_captured` removes them from all three and says how many of
each; memories written on purpose (committed ones, decisions, handoff notes) stay.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

from hivelore.errors import BadInput
from hivelore.memory.model import SESSION_NOTE_TAG
from hivelore.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from collections.abc import Callable

    from hivelore.memory.model import Memory
    from hivelore.memory.service import Hivelore

NOTE_TAG = SESSION_NOTE_TAG  # the tag hooks give the notes they keep


@record
class Forgotten:
    counts: dict[str, int]  # per kind, in the order reported
    notes: list[str]  # the addresses of the staged notes removed
    dry_run: bool


def parse_before(text: str) -> float:
    """`--before` as epoch seconds: a date (midnight UTC) or a date and time (UTC unless it says)."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise BadInput(f"--before takes a date like 2026-11-30 or 2026-11-30T12:00, not {text!r}.") from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def forget_captured(
    service: Hivelore, session_id: str | None = None, before: float | None = None, dry_run: bool = False
) -> Forgotten:
    """Remove what hooks captured from session `session_id` (any agent's), or before `before`."""
    if (session_id is None) == (before is None):
        raise BadInput("name a session (--session ID) or a date (--before DATE), not both and not neither.")
    if session_id is not None and not session_id.strip():
        raise BadInput("--session needs a session id, as `hivelore doctor` or the agent shows it.")
    home = str(service.settings.home)
    counts: dict[str, int] = {}
    if os.path.exists(os.path.join(home, "events.db")):
        from hivelore.events.store import EventStore

        with EventStore.open(home) as events:
            counts.update(events.forget_captured(session_id, before, dry_run))
    notes = service.forget_staged(_picker(session_id, before), dry_run)
    counts["staged notes"] = len(notes)
    if os.path.exists(os.path.join(home, "team.db")):
        from hivelore.team.store import SqliteTeam

        with SqliteTeam.open(home) as team:
            counts.update(team.forget_captured(session_id, before, dry_run))
    return Forgotten(counts, [m.address for m in notes], dry_run)


def _picker(session_id: str | None, before: float | None) -> Callable[[Memory], bool]:
    from hivelore.memory.model import epoch_from_iso

    def captured(memory: Memory) -> bool:
        if NOTE_TAG not in memory.tags:
            return False
        if session_id is not None:
            return memory.provenance.get("session") == session_id
        return before is not None and bool(memory.created) and epoch_from_iso(memory.created) < before

    return captured
