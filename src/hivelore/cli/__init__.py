"""The `hivelore` command. `hook`, `search`, `context` and a bare `mcp` take fast paths that never
import typer."""

from __future__ import annotations

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
            _leave(exc.code or 0)
        raise
    except BrokenPipeError:
        # The reader stopped reading (`hivelore search … | head`): what it took was enough. Quiet, and
        # exit 1, as click leaves the other commands.
        _leave(1)


def run_hook(argv: list[str]) -> None:
    """`hivelore hook ARGS`, and the `hivelore-hook ARGS` launcher: one agent event. It exits 0
    whatever happens; what went wrong is in HIVELORE_HOME/logs/hooks.log."""
    from hivelore.hooks.client import main as hook

    try:
        hook(argv)
    except Exception as exc:  # a hook never fails the agent
        from hivelore.hooks.log import log

        log("-", "-", f"hivelore hook {' '.join(argv)}: {type(exc).__name__}: {exc}")
    _leave(0)


def _leave(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 -- contextlib.suppress would cost every hook 0.5 ms of imports
            stream.flush()
        except (OSError, ValueError):  # the reader went away: nothing to tell it
            pass
    os._exit(code)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "hook":  # runs on every agent event: nothing more is imported
        run_hook(sys.argv[2:])
    if sys.argv[1:] == ["mcp"]:  # the agent counts typer's and rich's start-up against the handshake
        from hivelore.mcp.stdio import main as serve_mcp

        serve_mcp()
        raise SystemExit(0)
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
