"""The team model's records as JSON, and back: what the team server's `/v1/team` routes answer and what
`RemoteTeam` reads. A record is an object of its fields (tuples as lists, nested records as objects),
so a record that goes to the server and comes back is equal to what it was.

Stdlib only: the hook server's client imports it.
"""

from __future__ import annotations

from hivelore.sqlitedb import Record
from hivelore.team.model import Attempt, Card, Claim, Decision, History, Intent, Note, Resume, SharedFailure, Why
from hivelore.team.testruns import TestRun


def encode(value: object) -> object:
    """A record (or a list of them, or a test run) as JSON takes it."""
    if isinstance(value, Record | TestRun):
        return {field: encode(getattr(value, field)) for field in value.__slots__}
    if isinstance(value, list | tuple):
        return [encode(item) for item in value]
    return value


def intent(data: dict) -> Intent:
    return Intent(**data)


def claim(data: dict) -> Claim:
    return Claim(**data)


def note(data: dict) -> Note:
    return Note(**data)


def attempt(data: dict) -> Attempt:
    lists = {name: tuple(data[name]) for name in ("failed", "errors", "symbols", "resolves")}
    return Attempt(**{**data, **lists})


def shared_failure(data: dict) -> SharedFailure:
    fix = data["fix"]
    return SharedFailure(attempt(data["attempt"]), data["title"], attempt(fix) if fix else None, data["fix_title"])


def decision(data: dict) -> Decision:
    return Decision(**{**data, "symbols": tuple(data["symbols"]), "current": tuple(data["current"])})


def resume(data: dict) -> Resume:
    return Resume(
        intent(data["intent"]),
        [claim(c) for c in data["claims"]],
        [attempt(a) for a in data["failed"]],
        [decision(d) for d in data["decisions"]],
        [note(n) for n in data["notes"]],
    )


def why(data: dict) -> Why:
    return Why(
        data["symbol"],
        [decision(d) for d in data["current"]],
        [decision(d) for d in data["superseded"]],
        [attempt(a) for a in data["attempts"]],
        list(data["people"]),
    )


def history(data: dict) -> History:
    return History([attempt(a) for a in data["failed"]], [decision(d) for d in data["decisions"]])


def card(data: dict) -> Card:
    last = data["last_note"]
    return Card(intent(data["intent"]), data["claims"], data["failed"], note(last) if last is not None else None)


def test_run(data: dict) -> TestRun:
    return TestRun(
        data["runner"], data["outcome"], tuple(data["failed"]), tuple(data["errors"]), data["passed"], data["skipped"]
    )
