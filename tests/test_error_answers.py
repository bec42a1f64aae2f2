"""One table from an error to its HTTP answer, shared by the team server and the dashboard: each
error class carries its status and code (errors.py), docs/server.md lists them, and the dashboard
answers an error with the status the server gives it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.requests import Request

import hivelore.dashboard.routes  # noqa: F401 -- their error classes join the hierarchy
import hivelore.remote.client  # noqa: F401
import hivelore.server.app  # noqa: F401
from hivelore import errors
from hivelore.dashboard.codemap import NotIndexed
from hivelore.memory.guard import GuardError, GuardViolation
from hivelore.server.auth import Unauthenticated
from hivelore.server.limits import QuotaExceeded, RateLimited

DOCS = Path(__file__).parents[1] / "docs" / "server.md"


def every_error() -> list[type[errors.HiveloreError]]:
    found, todo = [], [errors.HiveloreError]
    while todo:
        kind = todo.pop()
        found.append(kind)
        todo += kind.__subclasses__()
    return found


def documented() -> dict[str, set[int]]:
    """docs/server.md's table: code → the statuses it lists."""
    rows = re.findall(r"^\| `(\w+)` \| ([\d, ]+) \|", DOCS.read_text(), flags=re.M)
    return {code: {int(s) for s in statuses.split(",")} for code, statuses in rows}


@pytest.mark.parametrize("kind", every_error(), ids=lambda kind: f"{kind.__module__}.{kind.__name__}")
def test_every_error_answers_with_a_status_and_code_the_docs_list(kind: type[errors.HiveloreError]) -> None:
    table = documented()
    if kind is NotIndexed:  # the dashboard's own: a code graph never built (409 with the page saying how)
        assert (kind.status, kind.code) == (409, "not_indexed")
        return
    assert kind.code in table, f"{kind.__name__}'s code {kind.code!r} is not in docs/server.md's table"
    assert kind.status in table[kind.code]


def test_a_subclass_answers_as_its_own_code_says_and_otherwise_as_its_parent() -> None:
    violation = GuardViolation("secret", "value", "a password: use a reference to the vault instead")
    assert errors.answer_of(GuardError(violation)) == (400, "guard_refused")
    assert errors.answer_of(errors.BadInput("no")) == (400, "bad_input")
    assert errors.answer_of(QuotaExceeded("full")) == (403, "quota_exceeded")
    assert errors.answer_of(RateLimited("slow down", 3)) == (429, "rate_limited")
    assert errors.answer_of(Unauthenticated("who?")) == (401, "unauthenticated")
    assert errors.answer_of(hivelore.remote.client.RateLimited("slow")) == (429, "busy")
    assert errors.answer_of(errors.HiveloreError("?")) == (500, "internal_error")


@pytest.mark.parametrize(
    ("error", "status"), [(errors.Busy("locked"), 429), (errors.Conflict("changed"), 409), (errors.NotFound("x"), 404)]
)
def test_the_dashboard_answers_an_error_with_the_servers_status(error: errors.HiveloreError, status: int) -> None:
    """Its problem page gave Busy and Conflict 400, where the server it is mounted in gives 429 and 409."""
    request = Request({"type": "http", "method": "GET", "path": "/", "headers": [], "state": {"base": ""}})
    page = hivelore.dashboard.routes._problem(request, error)
    assert page.status_code == status == errors.answer_of(error)[0]
    assert error.sentence() in page.body.decode()
