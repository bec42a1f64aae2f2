"""The team model: tasks (intents), claims, attempts, decisions and notes, the answers built from them,
and their pure rules — what every team store holds and answers, whatever keeps it (team.db today; a
remote or PostgreSQL store behind the same `TeamStore`, see store.py).

The rules that need no storage live here, so that every store applies them the same way: what a file
claim is (`file_claim_ids`, `file_claim`), a task's title and status, which other developers' claims
an edit conflicts with (`find_conflicts`), and how who_knows ranks people (`rank_experts`).

The code graph is duck-typed: any object with `within(symbol_id, hops, direction) -> {id: path}`,
where direction is "callees" (what symbol_id calls, transitively) or "callers" (what calls it), and
path is a shortest call chain between the two in call order, caller first: `[symbol_id, …, id]` for
callees, `[id, …, symbol_id]` for callers (symbol_id itself is not a key); for file claims, also
`symbols_in(path)` and `symbols_at(path, first, last)` (innermost first). That is all the team asks
of `codegraph.Graph`, which answers exactly that.

Stdlib only: the hook path imports it.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterable

from hivelore.errors import Busy, NotFound, Unavailable
from hivelore.events.store import normalise_command
from hivelore.sqlitedb import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from hivelore.codegraph import Graph

HOPS = 3
IDLE_DAYS = 7.0
TITLE_CAP = 120
TEXT_CAP = 8_000
COMMAND_CAP = 2_000
STATUSES = ("active", "handed_off", "done")
NOTE_KINDS = ("progress", "handoff")
WEIGHTS = {"claim": 1.0, "attempt": 2.0, "decision": 3.0}


class TeamUnavailable(Unavailable):
    """team.db cannot be used: damaged, from another schema version, or not hivelore's."""


class TeamBusy(TeamUnavailable, Busy):
    """Other processes held the write lock for the whole busy timeout; retrying later may work."""


class NoSuchIntent(NotFound):
    """No intent has this id."""


# -- records ------------------------------------------------------------------------------------


class Intent(Record):
    __slots__ = ("id", "repo", "title", "owner", "status", "created_ts", "updated_ts")

    def __init__(
        self, id: int, repo: str, title: str, owner: str, status: str, created_ts: float, updated_ts: float
    ) -> None:
        self.id, self.repo, self.title, self.owner, self.status = id, repo, title, owner, status
        self.created_ts, self.updated_ts = created_ts, updated_ts

    @property
    def label(self) -> str:
        """How a warning names it: `task 7: "add JWT support"`."""
        return f'task {self.id}: "{self.title}"'


class Claim(Record):
    __slots__ = ("intent_id", "symbol", "developer", "ts")

    def __init__(self, intent_id: int, symbol: str, developer: str, ts: float) -> None:
        self.intent_id, self.symbol, self.developer, self.ts = intent_id, symbol, developer, ts


class Attempt(Record):
    """A test run of an intent (`count` identical ones); `resolves`: the failed attempts it resolved."""

    __slots__ = (
        "id", "intent_id", "developer", "command", "outcome", "failed", "errors", "symbols", "count",
        "first_ts", "last_ts", "resolved_by", "resolves",
    )  # fmt: skip

    def __init__(
        self,
        id: int,
        intent_id: int,
        developer: str,
        command: str,
        outcome: str,
        failed: tuple[str, ...],
        errors: tuple[str, ...],
        symbols: tuple[str, ...],
        count: int,
        first_ts: float,
        last_ts: float,
        resolved_by: int | None,
        resolves: tuple[int, ...],
    ) -> None:
        self.id, self.intent_id, self.developer, self.command = id, intent_id, developer, command
        self.outcome, self.failed, self.errors, self.symbols = outcome, failed, errors, symbols
        self.count, self.first_ts, self.last_ts = count, first_ts, last_ts
        self.resolved_by, self.resolves = resolved_by, resolves


class Decision(Record):
    """`current`: the symbols this decision still holds for (the others were superseded)."""

    __slots__ = ("id", "repo", "intent_id", "developer", "text", "ts", "symbols", "current")

    def __init__(
        self,
        id: int,
        repo: str,
        intent_id: int | None,
        developer: str,
        text: str,
        ts: float,
        symbols: tuple[str, ...],
        current: tuple[str, ...],
    ) -> None:
        self.id, self.repo, self.intent_id, self.developer, self.text = id, repo, intent_id, developer, text
        self.ts, self.symbols, self.current = ts, symbols, current

    @property
    def active(self) -> bool:
        return bool(self.current) or not self.symbols


class Note(Record):
    __slots__ = ("id", "intent_id", "developer", "kind", "text", "ts")

    def __init__(self, id: int, intent_id: int, developer: str, kind: str, text: str, ts: float) -> None:
        self.id, self.intent_id, self.developer, self.kind, self.text, self.ts = (
            id,
            intent_id,
            developer,
            kind,
            text,
            ts,
        )


def warning_key(*parts: object) -> str:
    """What `mark_warned` keeps a warning under: its parts with a unit separator between them, a
    character no name holds and PostgreSQL's text can store (NUL it cannot: the team server refused
    every conflict warning's key)."""
    return "\x1f".join(str(part) for part in parts)


class Conflict(Record):
    """`claimed` (by `developer`'s `intent`) is `len(path) - 1` call hops from the edited `symbol`.

    direction: "callees" (the edited symbol calls towards the claimed one), "callers" (the claimed
    one calls towards the edited one) or "same" (the edited symbol itself is claimed); `path` is in
    call order, caller first.
    """

    __slots__ = ("symbol", "claimed", "path", "direction", "developer", "intent")

    def __init__(
        self, symbol: str, claimed: str, path: tuple[str, ...], direction: str, developer: str, intent: Intent
    ) -> None:
        self.symbol, self.claimed, self.path, self.direction = symbol, claimed, path, direction
        self.developer, self.intent = developer, intent

    @property
    def distance(self) -> int:
        return len(self.path) - 1

    @property
    def key(self) -> str:
        """What makes two warnings the same one (for `mark_warned`): the task by its number and owner,
        as a task of team.db and one of the team server may have the same number."""
        return warning_key(self.symbol, self.claimed, self.intent.id, self.intent.owner)

    def describe(self) -> str:
        """One line for a warning: the call path, who, and their intent; a file claim says it is one."""
        path = " → ".join(_short(symbol) for symbol in self.path)
        claimed_file = file_claim(self.claimed)
        if claimed_file is not None:
            where = f"{path}: " if len(self.path) > 1 else ""
            return (
                f"{where}{self.developer}'s {self.intent.label} is changing {claimed_file[0]}"
                " (file-level claim: the code graph was still being built)"
            )
        if not self.path:  # an edit of the file, seen before this repository's graph exists
            return f"{self.claimed} is being changed by {self.developer} ({self.intent.label})"
        return f"{path}: {_short(self.claimed)} is being changed by {self.developer} ({self.intent.label})"


class Resume(Record):
    """What a session taking over an intent needs, in one answer."""

    __slots__ = ("intent", "claims", "failed", "decisions", "notes")

    def __init__(
        self,
        intent: Intent,
        claims: list[Claim],
        failed: list[Attempt],
        decisions: list[Decision],
        notes: list[Note],
    ) -> None:
        self.intent, self.claims, self.failed, self.decisions, self.notes = intent, claims, failed, decisions, notes


class TaskView(Record):
    """A task as a reader sees it, without taking it over: its claims, every attempt, its notes, and the
    decisions on the symbols it claimed (current, then superseded)."""

    __slots__ = ("intent", "claims", "attempts", "notes", "current", "superseded")

    def __init__(
        self,
        intent: Intent,
        claims: list[Claim],
        attempts: list[Attempt],
        notes: list[Note],
        current: list[Decision],
        superseded: list[Decision],
    ) -> None:
        self.intent, self.claims, self.attempts, self.notes = intent, claims, attempts, notes
        self.current, self.superseded = current, superseded


class Expert(Record):
    __slots__ = ("developer", "score", "claims", "attempts", "decisions")

    def __init__(self, developer: str, score: float, claims: int, attempts: int, decisions: int) -> None:
        self.developer, self.score, self.claims, self.attempts, self.decisions = (
            developer, score, claims, attempts, decisions
        )  # fmt: skip


class Why(Record):
    """A symbol's current decisions, the ones they superseded, its attempts, and the people involved."""

    __slots__ = ("symbol", "current", "superseded", "attempts", "people")

    def __init__(
        self,
        symbol: str,
        current: list[Decision],
        superseded: list[Decision],
        attempts: list[Attempt],
        people: list[str],
    ) -> None:
        self.symbol, self.current, self.superseded, self.attempts, self.people = (
            symbol, current, superseded, attempts, people
        )  # fmt: skip


class History(Record):
    """What failed here before: failed attempts on the symbols (resolved or not) and their active decisions."""

    __slots__ = ("failed", "decisions")

    def __init__(self, failed: list[Attempt], decisions: list[Decision]) -> None:
        self.failed, self.decisions = failed, decisions


class SharedFailure(Record):
    """A failed attempt of the team's, as the team server answers it for a hook server's replica: the
    attempt, its task's title, and the passing attempt that resolved it (`fix`, with its task's
    title), if one did."""

    __slots__ = ("attempt", "title", "fix", "fix_title")

    def __init__(self, attempt: Attempt, title: str, fix: Attempt | None, fix_title: str) -> None:
        self.attempt, self.title, self.fix, self.fix_title = attempt, title, fix, fix_title

    @property
    def names(self) -> tuple[str, ...]:
        """The tests that failed (or errored)."""
        return (*self.attempt.failed, *self.attempt.errors)


class Card(Record):
    """One intent on the task board: its claims, its unresolved failed attempts and its last note."""

    __slots__ = ("intent", "claims", "failed", "last_note")

    def __init__(self, intent: Intent, claims: int, failed: int, last_note: Note | None) -> None:
        self.intent, self.claims, self.failed, self.last_note = intent, claims, failed, last_note


def _short(symbol: str) -> str:
    return symbol.rsplit("::", 1)[-1]


FILE_CLAIM = "file:"


def file_claim_ids(path: str, lines: Iterable[int] = ()) -> list[str]:
    """The claim rows that stand for an edit of `path` (relative to the repository) before the code
    graph exists: one per line a replaced text starts at, or one for the whole file."""
    found = sorted({line for line in lines if line > 0})
    return [f"{FILE_CLAIM}{line}:{path}" for line in found] or [f"{FILE_CLAIM}:{path}"]


def file_claim(claim: str) -> tuple[str, int | None] | None:
    """(path, line or None for the whole file) of a file claim row; None for a symbol id."""
    if not claim.startswith(FILE_CLAIM):
        return None
    line, _, path = claim[len(FILE_CLAIM) :].partition(":")
    return path, int(line) if line.isdigit() else None


def claimed_file(claim: str) -> str:
    """The file a claim row is in: a file claim's path, or the file part of a symbol id."""
    found = file_claim(claim)
    return found[0] if found is not None else claim.split("::", 1)[0]


def valid_status(status: str | None) -> str | None:
    if status is not None and status not in STATUSES:
        raise ValueError(f"a task is {', '.join(STATUSES)}, not {status!r}")
    return status


def title_from(prompt: str) -> str:
    """The first non-empty line of a prompt, whitespace collapsed, cut at 120 characters."""
    for line in prompt.splitlines():
        words = " ".join(line.split())
        if words:
            return words if len(words) <= TITLE_CAP else words[: TITLE_CAP - 1].rstrip() + "…"
    return ""


def file_claim_symbols(graph: Graph, path: str, lines: list[int | None]) -> list[str]:
    """The symbols a file claim stands for: the innermost at each known line, else all of the file's."""
    found: dict[str, None] = {}
    known = [line for line in lines if line is not None]
    if len(known) == len(lines):
        for line in known:
            found.update(dict.fromkeys(graph.symbols_at(path, line, line)[:1]))
    return list(found) or graph.symbols_in(path)


def file_claim_upgrades(
    graph: Graph, file_claims: Iterable[tuple[int, str, str, float]]
) -> list[tuple[int, str, str, float]]:
    """The symbol claims (intent, symbol, developer, ts) that file claims (same fields) stand for, now
    that the code graph exists: per intent and file, the symbols at its claimed lines (all the file's
    when a line is unknown), claimed by the same developer as of the earliest of them."""
    wanted: dict[tuple[int, str], list[int | None]] = {}
    owner: dict[tuple[int, str], tuple[str, float]] = {}
    for intent_id, claim, developer, ts in file_claims:
        path, line = file_claim(claim) or (claim, None)
        wanted.setdefault((intent_id, path), []).append(line)
        owner[intent_id, path] = (developer, min(ts, owner.get((intent_id, path), (developer, ts))[1]))
    claims = []
    for (intent_id, path), lines in wanted.items():
        developer, ts = owner[intent_id, path]
        claims += [(intent_id, symbol, developer, ts) for symbol in file_claim_symbols(graph, path, lines)]
    return claims


def command_key(command: str) -> str:
    """What makes two test commands the same one, for resolving (as the event store normalises them)."""
    return normalise_command(command, "")


def neighbourhoods(graph: Graph, symbol: str, hops: int) -> list[tuple[str, dict]]:
    """(direction, {reached symbol: call path}) for the symbol itself, then each direction separately."""
    return [
        ("same", {symbol: [symbol]}),
        ("callees", graph.within(symbol, hops, "callees")),
        ("callers", graph.within(symbol, hops, "callers")),
    ]


def find_conflicts(
    claims: Iterable[tuple[str, Intent, str]],
    graph: Graph | None,
    symbols: Iterable[str],
    hops: int = HOPS,
    paths: Iterable[str] = (),
) -> list[Conflict]:
    """The conflicts of an edit of `symbols` (in files `paths`, relative to the repository) with
    `claims`, (symbol, intent, developer) of other developers' active intents: each claimed symbol
    within `hops` call hops, callees and callers checked separately, and each file claim in an edited
    file or with a symbol within `hops`. Each (claim, intent) once, with its shortest path, nearest
    first. `graph` None: the repository has no graph yet, so only the edited files are compared."""
    claimed: dict[str, list[tuple]] = {}  # (intent, owner) or, once reached, (intent, owner, file claim)
    files: dict[str, list[tuple[Intent, str]]] = {}
    for symbol, intent, owner in claims:
        found = file_claim(symbol)
        if found is None:
            claimed.setdefault(symbol, []).append((intent, owner))
        elif (intent, owner) not in files.setdefault(f"{FILE_CLAIM}:{found[0]}", []):
            files[f"{FILE_CLAIM}:{found[0]}"].append((intent, owner))  # one per file and intent, whatever its lines
    if not claimed and not files:  # the usual case: nobody else is editing this repo
        return []
    # Keyed by the task's number and owner: claims of team.db and of the team server are merged in
    # remote mode, and a number alone can name a task of each.
    best: dict[tuple[str, int, str], Conflict] = {}
    edited = set(paths)
    for claim, holders in [*files.items(), *claimed.items()]:
        if claimed_file(claim) in edited and (graph is None or claim in files):  # the same file
            for intent, owner in holders:
                best[(claim, intent.id, owner)] = Conflict(claimed_file(claim), claim, (), "same", owner, intent)
    if graph is None:
        return sorted(best.values(), key=lambda c: (c.claimed, c.intent.id))
    for claim in files:  # a file claim is reached through any symbol of its file
        for symbol in graph.symbols_in(claimed_file(claim)):
            claimed.setdefault(symbol, []).extend((intent, owner, claim) for intent, owner in files[claim])
    for symbol in symbols:
        for direction, reached in neighbourhoods(graph, symbol, hops):
            for target in reached.keys() & claimed.keys():  # paths are built only for the hits
                path = tuple(reached[target])
                for intent, owner, *via_file in claimed[target]:
                    what = via_file[0] if via_file else target  # a file claim reached through its symbol
                    conflict = Conflict(symbol, what, path, direction, owner, intent)
                    known = best.get((what, intent.id, owner))
                    if known is None or conflict.distance < known.distance:
                        best[(what, intent.id, owner)] = conflict
    return sorted(best.values(), key=lambda c: (c.distance, c.claimed, c.intent.id))


def distances(graph: Graph, symbol: str, hops: int) -> dict[str, int]:
    """{symbol: call hops} for the symbol (0) and its neighbours within `hops`, either direction."""
    found: dict[str, int] = {}
    for _direction, reached in neighbourhoods(graph, symbol, hops):
        for target, path in reached.items():
            found[target] = min(found.get(target, len(path)), len(path) - 1)
    return found


def rank_experts(distance: dict[str, int], involvement: Iterable[tuple[str, str, str]]) -> list[Expert]:
    """Developers ranked by their involvement, (kind, developer, symbol) with kind "claim",
    "attempt" or "decision": WEIGHTS[kind] for each, divided by 1 + the symbol's distance."""
    scores: dict[str, float] = {}
    counts: dict[tuple[str, str], int] = {}
    for kind, developer, symbol in involvement:
        scores[developer] = scores.get(developer, 0.0) + WEIGHTS[kind] / (1 + distance[symbol])
        counts[developer, kind] = counts.get((developer, kind), 0) + 1
    experts = [
        Expert(dev, round(score, 3), *(counts.get((dev, kind), 0) for kind in ("claim", "attempt", "decision")))
        for dev, score in scores.items()
    ]
    return sorted(experts, key=lambda expert: (-expert.score, expert.developer))


WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def spoken_day(ts: float, now: float) -> str:
    """When `ts` was, as a teammate would say it on this machine's calendar: "today at 14:02",
    "yesterday", "on Tuesday" (within the week), else "on 3 Nov"."""
    then, today = time.localtime(ts), time.localtime(now)
    days = _day(today) - _day(then)
    if days <= 0:
        return f"today at {then.tm_hour:02d}:{then.tm_min:02d}"
    if days == 1:
        return "yesterday"
    if days < 7:
        return f"on {WEEKDAYS[then.tm_wday]}"
    return f"on {then.tm_mday} {MONTHS[then.tm_mon - 1]}"


def _day(moment: time.struct_time) -> int:
    return datetime.date(moment.tm_year, moment.tm_mon, moment.tm_mday).toordinal()
