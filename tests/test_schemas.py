"""The JSON shapes (hivelore.schemas) say what their records hold.

Each model is paired with the record it serialises. Its fields are the record's fields, apart from
the ones named here: renamed for the JSON, converted on the way (a note to its text), or left out on
purpose. A field added to a record fails `test_a_model_has_its_records_fields` until its model
carries it too or this table says why not.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from pydantic import BaseModel

from hivelore import schemas
from hivelore.mcp import answers
from hivelore.memory.grooming import Problem
from hivelore.memory.model import Memory
from hivelore.memory.recall import Ranked
from hivelore.memory.scope import parse
from hivelore.memory.service import CommitReport, NotCommitted, TreeEntry, WriteResult
from hivelore.team import store as team
from hivelore.team.history import CodeHistory, SymbolHistory


@dataclass(frozen=True)
class Shape:
    model: type[BaseModel]
    record: type
    renamed: dict[str, str] = field(default_factory=dict)  # model field -> record field
    converted: frozenset[str] = frozenset()  # model fields whose type the surface changes
    left_out: frozenset[str] = frozenset()  # record fields the JSON does not carry


SHAPES = [
    Shape(schemas.MemoryOut, Memory),
    Shape(schemas.WriteOut, WriteResult, left_out=frozenset({"revived"})),
    Shape(
        schemas.Hit,
        Ranked,
        renamed={"memory": "row", "stale": "note"},
        converted=frozenset({"memory"}),
        left_out=frozenset({"relevance"}),
    ),
    Shape(schemas.TreeKey, TreeEntry),
    Shape(schemas.LintProblem, Problem),
    Shape(schemas.CommitOut, CommitReport),
    Shape(schemas.NotCommittedOut, NotCommitted),
    Shape(schemas.TaskOut, team.Intent, left_out=frozenset({"repo", "created_ts", "updated_ts"})),
    Shape(schemas.ConflictOut, team.Conflict, renamed={"task": "intent"}, left_out=frozenset({"direction"})),
    Shape(schemas.Expert, team.Expert),
    Shape(schemas.DecisionOut, team.Decision, left_out=frozenset({"repo", "intent_id", "ts", "current"})),
    Shape(
        schemas.AttemptOut,
        team.Attempt,
        renamed={"resolved": "resolved_by"},
        converted=frozenset({"resolved"}),
        left_out=frozenset({"id", "intent_id", "errors", "symbols", "first_ts", "last_ts", "resolves"}),
    ),
    Shape(schemas.WhyOut, team.Why),
    Shape(
        schemas.Card,
        team.Card,
        renamed={"task": "intent", "failed_attempts": "failed"},
        converted=frozenset({"last_note"}),
    ),
    Shape(schemas.SymbolHistoryOut, SymbolHistory),
    Shape(schemas.CodeHistoryOut, CodeHistory, converted=frozenset({"lessons", "problem"})),  # "" → None
]  # fmt: skip

# Answers built from a query's plain values (the code graph's tuples, the profile's lines) or wrapping
# other shapes: no record to follow.
ENVELOPES = {
    "SearchOut", "ScopeGroup", "ListOut", "ForgetOut", "ScopesOut", "TreeOut", "ProfileFileOut", "ProfileLine",
    "ProfileSearchOut", "Neighbour", "BlastRadiusOut", "PathOut", "Hotspot", "HotspotsOut", "ConflictsOut",
    "WhoKnowsOut", "TaskBoardOut", "RemoteStatusOut", "RejectedChange", "OrgScopesOut", "LintOut", "StatsOut",
}  # fmt: skip

MODEL_OF = {shape.record.__name__: shape.model.__name__ for shape in SHAPES}


def _record_fields(record: type) -> dict[str, str]:
    """The record's fields in order, each with its annotation's text."""
    if hasattr(record, "_fields"):  # @record
        return {name: record.__annotations__[name] for name in record._fields}
    parameters = inspect.signature(record.__init__).parameters  # sqlitedb.Record: fields are __slots__
    return {name: parameters[name].annotation for name in record.__slots__}


def _as_json(annotation: str) -> str:
    """A record field's type as its model states it: tuples as lists, scopes and paths as strings,
    records as their models."""
    text = re.sub(r"tuple\[(\w+), \.\.\.\]", r"list[\1]", annotation)
    return re.sub(r"\b\w+\b", lambda word: {"Scope": "str", "Path": "str", **MODEL_OF}.get(word[0], word[0]), text)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda shape: shape.model.__name__)
def test_a_model_has_its_records_fields(shape: Shape) -> None:
    model_fields = list(shape.model.model_fields)
    record_fields = _record_fields(shape.record)
    as_record = [shape.renamed.get(name, name) for name in model_fields]

    assert set(as_record) <= set(record_fields), f"{shape.model.__name__} has fields its record lacks"
    assert set(record_fields) - set(as_record) == shape.left_out
    for name in model_fields:
        if name not in shape.converted:
            expected = _as_json(record_fields[shape.renamed.get(name, name)])
            assert shape.model.__annotations__[name] == expected, f"{shape.model.__name__}.{name}"


def test_every_model_is_paired_with_its_record_or_is_an_envelope() -> None:
    models = {name for name, value in vars(schemas).items() if isinstance(value, type) and issubclass(value, BaseModel)}
    models.discard("BaseModel")
    paired = {shape.model.__name__ for shape in SHAPES}

    assert models == paired | ENVELOPES
    assert not paired & ENVELOPES


def test_a_memory_shown_as_json_says_what_its_to_dict_says() -> None:
    memory = Memory(
        scope=parse("repo::acme/checkout"),
        key="tests-need-postgres",
        value="Start it first.",
        tags=("db",),
        created="2026-01-02T03:04:05Z",
        updated="2026-01-02T03:04:05Z",
        provenance={"agent": "codex"},
    )

    assert schemas.MemoryOut.of(memory).model_dump() == memory.to_dict()


def test_the_prepared_mcp_answers_are_fingerprinted_with_the_shapes() -> None:
    # outputSchema is derived from these models, so an edit of them must invalidate the kept answers
    assert Path(schemas.__file__).resolve() in {Path(source).resolve() for source in answers.SOURCES}
