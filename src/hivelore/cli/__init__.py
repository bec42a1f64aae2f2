"""The `hivelore` command. `hook`, `search` and `context` take fast paths that never import typer."""

from __future__ import annotations

import contextlib
import os
import sys

FAST_COMMANDS = ("hook", "search", "context")


def run() -> None:
    """The console script. The fast commands leave without the interpreter's teardown: by then
    their writes are committed and their output flushed, and closing SQLite (which checkpoints its
    log) and freeing every module would only add to the agent's wait."""
    try:
        main()
    except SystemExit as exc:
        if len(sys.argv) > 1 and sys.argv[1] in FAST_COMMANDS and isinstance(exc.code, int | None):
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):  # the reader went away: nothing to tell it
                    stream.flush()
            os._exit(exc.code or 0)
        raise


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "hook":  # runs on every agent event: nothing more is imported
        from hivelore.hooks.command import main as hook

        raise SystemExit(hook(sys.argv[2:]))
    from hivelore.cli.fast import COMMANDS

    if len(sys.argv) > 1 and sys.argv[1] in COMMANDS:
        raise SystemExit(COMMANDS[sys.argv[1]](sys.argv[2:]))
    from hivelore.cli.app import app

    if len(sys.argv) == 1:
        sys.argv.append("--help")
    try:
        result = app(standalone_mode=False)
    except Exception as exc:
        # typer vendors click and does not export its exception base; a click error is recognised by
        # its interface. It becomes one line, like every other hivelore error, not a usage box.
        message = getattr(exc, "format_message", None)
        if message is None:
            raise
        if message():  # an empty one follows the help a group without a subcommand printed
            print(f"hivelore: {message()} (see `hivelore --help`)", file=sys.stderr)
        raise SystemExit(getattr(exc, "exit_code", 2)) from None
    raise SystemExit(result if isinstance(result, int) else 0)
