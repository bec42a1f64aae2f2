"""The errors hivelore reports, one hierarchy for every surface.

    HiveloreError
    ├── NotFound      no such memory, task or symbol          CLI exit 1, HTTP 404
    ├── BadInput      what was given cannot be used            CLI exit 2, HTTP 400  (also a ValueError)
    ├── Conflict      a file changed since it was read (drift) CLI exit 3, HTTP 409
    ├── Forbidden     a token or role does not allow it        HTTP 403  (raised by the team server only)
    ├── Unavailable   a store is damaged or of another version CLI exit 1, HTTP 503  (says how to repair it)
    └── Busy          another process held the write lock      CLI exit 1, HTTP 429

Each module keeps its own class (`GraphUnavailable`, `GuardError`, …) as a subclass of one of these,
so callers catch what they always caught; each surface (cli/output.py, mcp/tools.py) maps the five
it can meet in one table. Over HTTP, each class carries its answer (`status`, and `code`: stable, for
programs; docs/server.md lists them): the team server and the dashboard answer an error by
`answer_of`, so both give one error the same status, and a subclass that needs another says so.
The message of every error is one sentence for the user: what is wrong and what to do.

Stdlib only, and nothing imported: the hook path imports the modules that define these.
"""

from __future__ import annotations


class HiveloreError(Exception):
    """Anything hivelore refuses or cannot do; `sentence()` is what the user is told."""

    status, code = 500, "internal_error"  # what no subclass stands for: a failure of the server

    def sentence(self) -> str:
        text = str(self).strip() or type(self).__name__
        return text if text.endswith((".", "?", "!")) else f"{text}."


class NotFound(HiveloreError, LookupError):
    """Nothing has that name: a memory, a task, a symbol."""

    status, code = 404, "not_found"


class BadInput(HiveloreError, ValueError):
    """What was given cannot be used (a ValueError too: code that caught ValueError still does)."""

    status, code = 400, "bad_input"


class Conflict(HiveloreError):
    """A file changed on disk between our read and our write (drift); nothing was written."""

    status, code = 409, "conflict"


class Forbidden(HiveloreError):
    """A known caller asked for what their token or role does not allow (the team server's refusals,
    server/auth.py; the dashboard shows them as 403 too)."""

    status, code = 403, "forbidden"


class Unavailable(HiveloreError):
    """A store cannot be used: damaged, from another schema version, or not hivelore's. `repair` is
    the sentence that says how to get it back, when the message does not say it already."""

    status, code = 503, "unavailable"
    repair = ""

    def __init__(self, message: str = "", repair: str | None = None) -> None:
        super().__init__(message)
        if repair is not None:
            self.repair = repair

    def sentence(self) -> str:
        text = str(self).strip().rstrip(".")
        if self.repair and self.repair not in text:
            text = f"{text}: {self.repair}"
        return f"{text}."


class Busy(HiveloreError):
    """Other processes held a store's write lock for the whole busy timeout; retrying later may work."""

    status, code = 429, "busy"


def answer_of(error: HiveloreError) -> tuple[int, str]:
    """The HTTP status and the body's `code` for an error the service reported."""
    return error.status, error.code


def reported(exc: BaseException) -> HiveloreError | None:
    """What a surface tells the user about `exc`: the exception itself when it is one of ours; for a
    foreign one that means something to the user, the error it stands for (a bare ValueError from
    parsing, an unknown name, a raw SQLite error of the index, a file that cannot be used); None for
    anything else, which is a bug and must show as one."""
    if isinstance(exc, HiveloreError):
        return exc
    if isinstance(exc, ValueError):
        return BadInput(str(exc))
    if isinstance(exc, LookupError) and not isinstance(exc, KeyError | IndexError):  # those two are bugs
        return NotFound(str(exc))
    import sqlite3  # loaded already wherever a store was opened

    if isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc)):
        return Busy("the index is busy (another hivelore process is writing it): try again in a moment")
    if isinstance(exc, sqlite3.DatabaseError):  # the stores other than the index wrap their own
        return Unavailable(f"the index is damaged ({exc})", "run `hivelore index rebuild` (the files are untouched)")
    if isinstance(exc, OSError):
        return BadInput(f"cannot use {exc.filename}: {exc.strerror}" if exc.filename else str(exc))
    return None
