"""What the dashboard's tests share to serve a page and look at it: an ASGI app served by uvicorn on a
loopback port in a thread, and Debian's chromium driven by Playwright (never a downloaded browser).

Not a conftest.py: tests/server's modules import their conftest by that name, and two would clash.
"""

from __future__ import annotations

import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
START_TIMEOUT_S = 30

needs_chromium = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="chromium is not installed (apt-get install -y chromium; .ci/run does)"
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def served(app: Any) -> Iterator[str]:
    """`app` answering on a free loopback port until the block ends; its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise AssertionError(f"uvicorn did not start on port {port}")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's chromium under Playwright, closed when the block ends (a playwright Browser)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


def screenshots(factory: pytest.TempPathFactory, what: str) -> Path:
    """A folder of the run's for the screenshots of `what` (docs/images/ holds copies of the current ones)."""
    folder = factory.mktemp("screenshots")
    print(f"{what} screenshots: {folder}")
    return folder


def click_node(page: Any, node_id: str) -> None:
    """A real mouse click where the code map (window.codemap, Cytoscape) drew the node."""
    page.wait_for_function("(id) => window.codemap.getElementById(id).length === 1", arg=node_id)
    box = page.locator("#map").bounding_box()
    assert box is not None
    spot = page.evaluate("(id) => window.codemap.getElementById(id).renderedPosition()", node_id)
    page.mouse.click(box["x"] + spot["x"], box["y"] + spot["y"])
