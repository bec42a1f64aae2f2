"""`hivelore context --file PATH --symbol NAME`: after the lessons, the history of that code — what
failed on it before, what was decided, which other developers' tasks are changing it, and the
lessons that name it. The pre-edit hook tells an agent this when it starts an edit; here it can be
asked for first. The team service gathers it (`Coordination.code_history`); this module prints it
(`context --json` prints `CodeHistory.to_json()`).

Only `context` with those options imports this module, and with it the code graph and the team
model: the plain `context` runs on every session start and opens neither.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from hivelore.memory import recall
from hivelore.memory.service import Hivelore
from hivelore.team.coordination import HISTORY_ATTEMPTS, Coordination, failed_here_before
from hivelore.team.history import CodeHistory, SymbolHistory


def gather(service: Hivelore, files: Sequence[str], names: Sequence[str]) -> CodeHistory:
    """The history of the files (relative to the current folder) and of the named symbols."""
    with Coordination.for_service(service) as coordination:
        return coordination.code_history([os.path.abspath(path) for path in files], names)


# -- as text ------------------------------------------------------------------------------------


def render(found: CodeHistory, line_chars: int, now: float | None = None) -> str:
    """The section printed under the lessons."""
    if found.problem:
        return found.problem
    now = time.time() if now is None else now
    lines = [_header(found)]
    for history in found.history:
        lines += [history.symbol, *(f"  - {line}" for line in _symbol_lines(history, line_chars, now))]
    if found.lessons:
        said = (recall.line_for(hit.row, line_chars, hit.note) for hit in found.lessons)
        lines += ["lessons that name this code:", *said]
    return "\n".join(lines)


def _header(found: CodeHistory) -> str:
    asked = ", ".join(found.asked)
    if not found.symbols:
        return f"code history · {asked}: no symbols in the code graph (not code it reads, or new since it was indexed)"
    if not found.history:
        symbols = "its symbol" if len(found.symbols) == 1 else f"its {len(found.symbols)} symbols"
        return f"code history · {asked}: no failed attempts, decisions or other developers' claims on {symbols}"
    return (
        f"code history · {asked} · {len(found.history)} of {len(found.symbols)} symbols with history"
        " — considerations, not rules"
    )


def _symbol_lines(history: SymbolHistory, line_chars: int, now: float) -> list[str]:
    lines = [failed_here_before(a, _ago(a.last_ts, now)) for a in history.failed[:HISTORY_ATTEMPTS]]
    earlier = len(history.failed) - HISTORY_ATTEMPTS
    if earlier > 0:
        attempts = "attempt" if earlier == 1 else "attempts"
        lines.append(f"and {earlier} earlier failed {attempts}: `hivelore graph why {history.symbol}`")
    lines += [f"decided: {_cut(d.text, line_chars)} ({d.developer}, {_ago(d.ts, now)})" for d in history.decisions]
    lines += [f"being changed by {intent.owner} ({intent.label})" for intent in history.claimed_by]
    return lines


def _cut(text: str, chars: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else text[: chars - 1].rstrip() + "…"


def _ago(ts: float, now: float) -> str:
    seconds = max(0.0, now - ts)
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86_400:
        return f"{int(seconds // 3600)} h ago"
    days = int(seconds // 86_400)
    return f"{days} day{'s' if days > 1 else ''} ago"
