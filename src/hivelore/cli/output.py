"""What every command shares: turning errors into one line and an exit code, JSON, warnings.

Stdlib only: the fast commands (`search`, `context`) must not pay for typer or rich; and no store:
a `search` the hook server answers imports none.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator

from hivelore import errors

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from typing import NoReturn

    from hivelore.memory.service import Hivelore

EXIT_FAILED = 1  # not found, a damaged store, a busy one
EXIT_BAD_INPUT = 2
EXIT_CONFLICT = 3

# The one table from error to exit code. The first class that matches wins: the profile's errors
# are all bad input (ValueErrors, as callers catch them), but its drift is a conflict and its
# damaged ledger an unavailable store.
EXIT_CODES: tuple[tuple[type[errors.HiveloreError], int], ...] = (
    (errors.Conflict, EXIT_CONFLICT),
    (errors.Unavailable, EXIT_FAILED),
    (errors.Busy, EXIT_FAILED),
    (errors.BadInput, EXIT_BAD_INPUT),
    (errors.NotFound, EXIT_FAILED),
)


def fail(message: str, code: int) -> NoReturn:
    print(f"hivelore: {message}", file=sys.stderr)
    raise SystemExit(code)


def exit_code(error: errors.HiveloreError) -> int:
    return next((code for kind, code in EXIT_CODES if isinstance(error, kind)), EXIT_FAILED)


@contextlib.contextmanager
def reported_errors() -> Iterator[None]:
    """Turn hivelore's errors into one line on stderr and their exit code; anything else is a bug
    and keeps its traceback."""
    try:
        yield
    except BrokenPipeError:
        raise  # the reader of a pipe stopped reading: not an error to report (cli.run leaves quietly)
    except Exception as exc:
        error = errors.reported(exc)
        if error is None:
            raise
        fail(error.sentence(), exit_code(error))


def print_json(data: object) -> None:
    json.dump(data, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")


def print_warnings(service: Hivelore) -> None:
    for warning in service.warnings:
        print(f"hivelore: warning: {warning}", file=sys.stderr)
