"""What every command shares: turning errors into one line and an exit code, JSON, warnings.

Stdlib only: the fast commands (`search`, `context`) must not pay for typer or rich.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import sys
from collections.abc import Iterator

from hivelore.service import Hivelore
from hivelore.vault import DriftError

EXIT_FAILED = 1  # not found, or the index is damaged
EXIT_BAD_INPUT = 2
EXIT_CONFLICT = 3


def fail(message: str, code: int) -> None:
    print(f"hivelore: {message}", file=sys.stderr)
    raise SystemExit(code)


@contextlib.contextmanager
def reported_errors() -> Iterator[None]:
    """Turn the service's errors into one line on stderr and a non-zero exit."""
    try:
        yield
    except LookupError as exc:  # NotFound, an unknown task or symbol; a bare KeyError is a bug, not an answer
        if isinstance(exc, KeyError | IndexError):
            raise
        fail(str(exc), EXIT_FAILED)
    except DriftError as exc:
        fail(str(exc), EXIT_CONFLICT)
    except ValueError as exc:  # scope, key, guard and config errors are all ValueErrors
        fail(str(exc), EXIT_BAD_INPUT)
    except sqlite3.OperationalError as exc:
        if "locked" not in str(exc) and "busy" not in str(exc):
            raise
        fail("the index is busy (another hivelore process is writing it): try again in a moment.", EXIT_FAILED)
    except sqlite3.DatabaseError as exc:
        fail(f"the index is damaged ({exc}): run `hivelore index rebuild` (the files are untouched).", EXIT_FAILED)
    except OSError as exc:
        fail(f"cannot use {exc.filename}: {exc.strerror}." if exc.filename else str(exc), EXIT_BAD_INPUT)


def print_json(data: object) -> None:
    json.dump(data, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")


def print_warnings(service: Hivelore) -> None:
    for warning in service.warnings:
        print(f"hivelore: warning: {warning}", file=sys.stderr)
