"""A real `hivelore dashboard` on a loopback port, over a home seeded through the real CLI and hooks:
the shop repository's lessons (one of them carrying `<script>`), and dev-a's task with a claim, a
failed test run, a decision that superseded another, and a handoff note."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from harness import SHOP_FILES, claude_hook_as, cli_as, make_shop

START_TIMEOUT_S = 30
SCRIPT_LESSON = "never paste <script>alert('x')</script> into a template unescaped"
PYTEST_FAILURE = """\
.F                                                                       [100%]
=================================== FAILURES ===================================
_____________________________ test_refresh_session _____________________________
tests/test_tokens.py:9: AssertionError
=========================== short test summary info ============================
FAILED tests/test_tokens.py::test_refresh_session - AssertionError: assert 'old.jwt' != 'old.jwt'
1 failed, 1 passed in 0.04s
"""


@dataclass
class Dashboard:
    url: str
    home: Path
    repo: Path
    process: subprocess.Popen[bytes]
    task_id: int


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout


def _seed(home: Path, repo: Path) -> int:
    """Lessons in three scopes and both tiers, and dev-a's task; the id of the task."""
    ok(cli_as(home, repo, "dev-a", "write", "repo::acme/shop::xss-in-templates", SCRIPT_LESSON, "--tags", "web"))
    ok(cli_as(home, repo, "dev-a", "write", "repo::acme/shop::tests-need-postgres",
               "the checkout tests need a local postgres on 5432", "--kind", "fact", "--tags", "db,tests"))  # fmt: skip
    ok(cli_as(home, repo, "dev-a", "write", "global::prefer-uv", "use uv to install python packages", "--staged"))
    ok(cli_as(home, repo, "dev-a", "write", "global::rotate-keys", "rotate the staging keys", "--ttl-days", "2"))
    ok(cli_as(home, repo, "dev-a", "write", "repo::acme/shop::old-cache-rule", "clear the cache by hand"))
    ok(cli_as(home, repo, "dev-a", "archive", "repo::acme/shop::old-cache-rule"))
    ok(cli_as(home, repo, "dev-a", "graph", "index"))
    claude_hook_as(home, repo, "dev-a", "UserPromptSubmit", {"session_id": "a-1", "prompt": "add JWT support"})
    edit = {"file_path": str(repo / "shop/tokens.py"), "old_string": "    return token.split('.')[0]",
            "new_string": "    return token.split('.')[0]  # changed"}  # fmt: skip
    claude_hook_as(home, repo, "dev-a", "PreToolUse", {"session_id": "a-1", "tool_name": "Edit", "tool_input": edit})
    failure = {"session_id": "a-1", "tool_name": "Bash", "tool_input": {"command": "pytest -q tests/test_tokens.py"},
               "error": f"Exit code 1\n{PYTEST_FAILURE}"}  # fmt: skip
    claude_hook_as(home, repo, "dev-a", "PostToolUseFailure", failure)
    ok(cli_as(home, repo, "dev-a", "task", "decide", "Tokens are opaque ids", "--symbol", "validate_token"))
    ok(cli_as(home, repo, "dev-a", "task", "decide", "Tokens are JWTs signed with RS256", "--symbol", "validate_token"))
    (task,) = json.loads(ok(cli_as(home, repo, "dev-a", "task", "list", "--json")))
    ok(cli_as(home, repo, "dev-a", "task", "handoff", str(task["id"]), "refresh_session still fails: see the attempt"))
    ok(cli_as(home, repo, "dev-b", "task", "create", "speed up <b>checkout</b>"))
    return int(task["id"])


def start(home: Path, repo: Path, log: Path) -> tuple[str, subprocess.Popen[bytes]]:
    port = _free_port()
    env = {**os.environ, "HIVELORE_HOME": str(home), "HIVELORE_DEVELOPER": "dev-a"}
    with log.open("ab") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "hivelore", "dashboard", "--port", str(port)], cwd=repo, env=env,
            stdout=sink, stderr=sink,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"hivelore dashboard exited with {process.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(f"{url}/memories", timeout=2).status_code == 200:
                return url, process
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    process.terminate()
    raise AssertionError(f"hivelore dashboard was not ready in {START_TIMEOUT_S} s:\n{log.read_text()}")


# Not a conftest.py: tests/server's test modules import their conftest by that name, and two would clash.
# A test module imports this fixture under another name; pytest finds it as `dashboard`.
@pytest.fixture(scope="module", name="dashboard")
def dashboard_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    base = tmp_path_factory.mktemp("dashboard")
    home, repo = base / "home", make_shop(base / "shop", SHOP_FILES)
    task_id = _seed(home, repo)
    url, process = start(home, repo, base / "dashboard.log")
    yield Dashboard(url, home, repo, process, task_id)
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
