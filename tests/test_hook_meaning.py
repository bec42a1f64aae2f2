"""The model in the hooks where it is warm: the hook server loads it in the background and then answers the
prompt and failure hooks by meaning too; a hook process answering alone stays lexical.

Real processes only: `hivelore write`, `hivelore hook` (tests/harness.py) and a real hook server for the
test's home, which loads all-MiniLM-L6-v2 from the `semantic` extra's wheel."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import claude_prompt, hook

from hivelore.hooks.client import server_state, start_server, stop_server
from hivelore.memory import vectors

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the hook server needs Linux"),
    pytest.mark.skipif(not vectors.installed(), reason="the semantic extra is not installed"),
]

ADDRESS = "repo::acme/checkout::pg-down-before-pytest"
LESSON = "Integration tests fail with ECONNREFUSED 127.0.0.1:5432 when Postgres is not running; start it first."
WHEN = "the test suite cannot connect to the database server at all"
# Its words are the symptoms' ("when"), not the lesson's: the keyword filter of the lexical hook drops it.
PROMPT = "my test suite cannot connect to the database server, any idea?"
LOAD_WAIT_S = 90.0  # the model loads in one to four seconds; a shared machine may be slower


def write(home: Path, repo: Path, *args: str) -> None:
    env = {**os.environ, "HIVELORE_HOME": str(home)}
    subprocess.run([sys.executable, "-m", "hivelore", "write", *args], cwd=repo, env=env, check=True)


@pytest.fixture
def warm_server(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A hook server for the test's home that has loaded the model, stopped afterwards."""
    monkeypatch.setenv("HIVELORE_HOOK_SERVER", "on")
    monkeypatch.setenv("HIVELORE_HOOK_MODEL", "on")
    home.mkdir(parents=True, exist_ok=True)
    start_server(str(home))
    try:
        deadline = time.monotonic() + LOAD_WAIT_S
        while "recall by meaning" not in server_state(str(home), {}):
            assert time.monotonic() < deadline, f"the model was not loaded: {server_state(str(home), {})}"
            time.sleep(0.2)
        yield home
    finally:
        stop_server(str(home))


def test_the_hook_process_alone_stays_lexical(home: Path, repo: Path) -> None:
    write(home, repo, ADDRESS, LESSON, "--when", WHEN)
    assert hook(home, repo, "claude", "UserPromptSubmit", claude_prompt(repo, "alone-1", PROMPT)) == ""


def test_the_warm_hook_server_shows_a_lesson_near_the_prompt_in_meaning(warm_server: Path, repo: Path) -> None:
    """A memory written while the server runs gets its vector between events (`Semantic.fill`): the first
    prompts may come before it; within seconds the prompt is answered with the lesson. A prompt about
    something else still gets nothing, and the server mined no thesaurus meanwhile."""
    home = warm_server
    write(home, repo, ADDRESS, LESSON, "--when", WHEN)
    write(home, repo, "repo::acme/checkout::navbar-css", "The navbar's CSS grid collapses below 640px; use flex.")
    deadline = time.monotonic() + LOAD_WAIT_S
    session = 0
    while True:
        session += 1
        told = hook(home, repo, "claude", "UserPromptSubmit", claude_prompt(repo, f"warm-{session}", PROMPT))
        if told or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert told.splitlines()[1:] == [f"- {ADDRESS} [lesson]: {LESSON}"]
    unrelated = "please rename the variable in this function"
    assert hook(home, repo, "claude", "UserPromptSubmit", claude_prompt(repo, "other", unrelated)) == ""
    assert not (home / "thesaurus.db").exists()  # nothing in the product reads it: the server does not mine it
