"""`hivelore dashboard`: the web pages over this machine's stores (the `hivelore[dashboard]` extra)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Annotated

import typer

from hivelore.cli.output import EXIT_FAILED, fail

DEFAULT_PORT = 8766  # beside the team server's 8765
HOST = "127.0.0.1"  # the pages change memories: never listen beyond this machine


def _dashboard_modules() -> None:
    try:
        import fastapi  # noqa: F401
        import jinja2  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        fail(f"the dashboard needs the dashboard extra ({exc.name} is missing): pip install 'hivelore[dashboard]'", 1)


def _check_port(port: int) -> None:
    with socket.socket() as probe:
        try:
            probe.bind((HOST, port))
        except OSError:
            fail(f"port {port} on {HOST} is taken: pick another with --port.", EXIT_FAILED)


def dashboard(
    port: Annotated[int, typer.Option(min=1, max=65535, help="The port to listen on (127.0.0.1 only).")] = DEFAULT_PORT,
) -> None:
    """Serve the dashboard (memories, task board) of this folder on 127.0.0.1 (docs/dashboard.md)."""
    _dashboard_modules()
    _check_port(port)
    import uvicorn

    from hivelore.dashboard.app import create_app

    print(f"hivelore dashboard on http://{HOST}:{port}/ (Ctrl-C stops it)", flush=True)
    uvicorn.run(create_app(Path.cwd()), host=HOST, port=port, access_log=False, log_config=None)
