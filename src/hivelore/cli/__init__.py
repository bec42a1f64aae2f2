"""The `hivelore` command. `search` and `context` take a fast path that never imports typer."""

from __future__ import annotations

import sys


def main() -> None:
    from hivelore.cli.fast import COMMANDS

    if len(sys.argv) > 1 and sys.argv[1] in COMMANDS:
        raise SystemExit(COMMANDS[sys.argv[1]](sys.argv[2:]))
    from hivelore.cli.app import app

    app()
