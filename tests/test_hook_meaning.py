"""The model in the hooks where it is warm: the hook server loads it in the background and then answers the
prompt and failure hooks, and `hivelore search`, by meaning too; a hook process answering alone, and a search
the server does not answer, stay lexical.

Real processes only: `hivelore write`, `hivelore hook` (tests/harness.py), `hivelore search` and a real hook
server for the test's home, which loads all-MiniLM-L6-v2 from the `semantic` extra's wheel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import claude_prompt, hook, search, searches_answered

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
# Shares no word with the lesson nor its symptoms: BM25 finds nothing.
PARAPHRASE = "my db connection gets rejected"


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


def found_by_meaning(home: Path, repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The warm server's answer to `search ARGS` once it holds the lesson's vector: a memory written while it
    runs gets one between events (`Semantic.fill`), so the first searches may come before it."""
    deadline = time.monotonic() + LOAD_WAIT_S
    while True:
        found = search(home, repo, *args)
        if ADDRESS in found.stdout or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def test_a_search_is_answered_by_meaning_through_the_warm_server(warm_server: Path, repo: Path) -> None:
    home = warm_server
    write(home, repo, ADDRESS, LESSON, "--when", WHEN)
    before = searches_answered(home)
    found = found_by_meaning(home, repo, PARAPHRASE)
    assert (found.returncode, found.stderr) == (0, "")
    assert found.stdout.splitlines()[0].startswith(f"{ADDRESS}  [lesson] score ")
    assert searches_answered(home) > before

    chain = "branch::acme/checkout::main → repo::acme/checkout → project::checkout → global"
    nothing = f"no memories match '{PARAPHRASE}' in {chain}\n"
    for lexical in (
        search(home, repo, "--lexical", PARAPHRASE),
        search(home, repo, PARAPHRASE, HIVELORE_HOOK_SERVER="off"),
    ):
        assert (lexical.returncode, lexical.stdout, lexical.stderr) == (0, nothing, "")


def test_json_through_the_server_has_the_fields_of_the_direct_answer(warm_server: Path, repo: Path) -> None:
    home = warm_server
    write(home, repo, ADDRESS, LESSON, "--when", WHEN)
    assert ADDRESS in found_by_meaning(home, repo, PARAPHRASE).stdout
    served = json.loads(search(home, repo, "--json", "Postgres").stdout)
    direct = json.loads(search(home, repo, "--json", "Postgres", HIVELORE_HOOK_SERVER="off").stdout)
    assert [hit["key"] for hit in served] == [hit["key"] for hit in direct] == ["pg-down-before-pytest"]
    assert [{**hit, "score": 0} for hit in served] == [{**hit, "score": 0} for hit in direct]


@pytest.mark.parametrize(
    "args", [["--limit", "0", "Postgres"], ["--scope", "nowhere", "Postgres"], ["--", "!!!"]],
    ids=["limit 0", "unknown scope", "no words"],
)  # fmt: skip
def test_bad_input_through_the_server_is_refused_as_by_the_command(
    warm_server: Path, repo: Path, args: list[str]
) -> None:
    home = warm_server
    before = searches_answered(home)
    served = search(home, repo, *args)
    direct = search(home, repo, *args, HIVELORE_HOOK_SERVER="off")
    assert searches_answered(home) == before + 1
    assert served.returncode == direct.returncode == 2
    assert served.stderr == direct.stderr and served.stderr.startswith("hivelore: ")
    assert len(served.stderr.splitlines()) == 1 and served.stdout == ""


def test_with_a_token_the_server_is_not_asked(warm_server: Path, repo: Path) -> None:
    """The server never holds HIVELORE_TOKEN: a command given one answers itself, reading the team server with
    it in remote mode (here, in local mode, it searches by BM25)."""
    home = warm_server
    write(home, repo, ADDRESS, LESSON, "--when", WHEN)
    assert ADDRESS in found_by_meaning(home, repo, PARAPHRASE).stdout
    before = searches_answered(home)
    tokened = search(home, repo, PARAPHRASE, HIVELORE_TOKEN="hl_not-for-the-hook-server")
    assert (tokened.returncode, tokened.stdout) == (0, search(home, repo, "--lexical", PARAPHRASE).stdout)
    assert ADDRESS not in tokened.stdout
    assert searches_answered(home) == before
