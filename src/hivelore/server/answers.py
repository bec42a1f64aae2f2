"""The one table from an error the service reports to its HTTP status and the body's `code` (stable,
for programs: the sentence is for people and may change); the first class that matches wins.
docs/server.md lists the codes. app.py answers a request's error by it, and the batch route
(routes/memories.py) each write's."""

from __future__ import annotations

from hivelore import errors
from hivelore.memory import guard
from hivelore.server import auth
from hivelore.server.limits import QuotaExceeded, RateLimited

ANSWERS: tuple[tuple[type[errors.HiveloreError], int, str], ...] = (
    (auth.Unauthenticated, 401, "unauthenticated"),
    (QuotaExceeded, 403, "quota_exceeded"),
    (errors.Forbidden, 403, "forbidden"),
    (RateLimited, 429, "rate_limited"),
    (errors.Conflict, 409, "conflict"),
    (errors.Unavailable, 503, "unavailable"),
    (errors.Busy, 429, "busy"),
    (guard.GuardError, 400, "guard_refused"),
    (errors.BadInput, 400, "bad_input"),
    (errors.NotFound, 404, "not_found"),
)
INTERNAL = "internal_error"  # what no HiveloreError stands for: a failure of the server


def answer_of(error: errors.HiveloreError) -> tuple[int, str]:
    """The HTTP status and the `code` of an error the service reported."""
    return next(((status, code) for kind, status, code in ANSWERS if isinstance(error, kind)), (500, INTERNAL))
