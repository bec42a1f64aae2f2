"""Shared fixtures: a temporary HIVELORE_HOME and real git repositories to run in."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import postgres_turns
import pytest
from harness import make_repo
from hypothesis import settings
from teamserver import Server, start_server

# Property tests check what holds, not how fast: on a shared 2-core machine one example can take 300 ms
# for no reason of its own (speed is measured in benchmarks/, never in tests).
settings.register_profile("hivelore", deadline=None)
settings.load_profile("hivelore")

POSTGRES_ADMIN_URL = os.environ.get("HIVELORE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")

# Hooks run as subprocesses answer in their own process: a hook server started per test's home would
# outlive the test. tests/test_hook_server.py turns it on and stops what it starts.
os.environ["HIVELORE_HOOK_SERVER"] = "off"
# A hook server started by a test leaves the model unloaded (tests/test_hook_meaning.py turns it on): each
# server would load it, and answers by meaning differ from a hook process's own, which the tests compare.
os.environ["HIVELORE_HOOK_MODEL"] = "off"

TURNS_FOLDER = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or a run in one process)
        config.stash[TURNS_FOLDER] = Path(tempfile.mkdtemp(prefix="hivelore-postgres-turns-"))


def pytest_unconfigure(config: pytest.Config) -> None:
    if TURNS_FOLDER in config.stash:
        shutil.rmtree(config.stash[TURNS_FOLDER], ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's hook, on the controller, for each worker it starts: tests/postgres_turns.py's folder."""
    node.workerinput[postgres_turns.TURNS_KEY] = str(node.config.stash[TURNS_FOLDER])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    postgres_turns.mark_postgres_modules(items)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[object]:
    """Set-up, test and teardown within one turn at PostgreSQL (tests/postgres_turns.py)."""
    with postgres_turns.turn(item, nextitem):
        return (yield)


@pytest.fixture(scope="session", autouse=True)
def no_hook_server_outlives_the_tests(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """tests/test_hook_server.py stops the servers it starts; should a failing test leave one, it is
    stopped here, so that a test run never leaves a process behind."""
    yield
    base = str(tmp_path_factory.getbasetemp())
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"hivelore.hooks.server" in args and any(a.decode(errors="replace").startswith(base) for a in args):
            with contextlib.suppress(OSError):
                os.kill(int(cmdline.parent.name), signal.SIGTERM)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HIVELORE_HOME for this test (set in the environment for in-process calls)."""
    path = tmp_path / "hivelore-home"
    monkeypatch.setenv("HIVELORE_HOME", str(path))
    monkeypatch.delenv("HIVELORE_MODE", raising=False)
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with origin git@github.com:acme/checkout.git on branch main."""
    return make_repo(tmp_path / "checkout")


@pytest.fixture
def cli(home: Path, repo: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the real `hivelore` command as a subprocess in the repo, with the temporary home."""

    def run(*args: str, cwd: Path | None = None, input: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "HIVELORE_HOME": str(home)}
        return subprocess.run(
            [sys.executable, "-m", "hivelore", *args],
            cwd=cwd or repo,
            env=env,
            input=input,
            capture_output=True,
            text=True,
            timeout=60,
        )

    return run


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    """A PostgreSQL database of this run's own on 127.0.0.1:5432 (`.ci/run` starts the server),
    migrated to the team server's schema, and dropped when the run ends."""
    import secrets

    import psycopg

    from hivelore.server.postgres import migrate

    name = f"hivelore_test_{os.getpid()}_{secrets.token_hex(4)}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            migrate.migrate(conn)
        yield url
    finally:
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def server(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The team server (tests/teamserver.py) over the run's database: one a session, for tests/server/
    and the tier contract's remote tier alike."""
    running = start_server(database_url, tmp_path_factory.mktemp("server") / "server.log")
    yield running
    running.stop()
