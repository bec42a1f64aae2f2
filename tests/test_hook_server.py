"""The hook server end to end: real `hivelore hook` processes handing events to a real server process.

conftest.py turns the server off for the rest of the suite; here it is on (`server_on`), each test starts the
server for its home and waits until it answers, and stops it afterwards. What must hold: an event answered by
the server is answered exactly as the hook process answers it itself, in the hook's own environment and
folder; the server leaves when it should (asked, idle, home removed, code changed); a broken client cannot take
it down.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_hooks import (
    ADDRESS,
    BAD_INPUT,
    LESSON,
    NUDGE,
    SEEN,
    aimed,
    claude_prompt,
    failing_tests,
    fixture_payloads,
    hook_env,
    log_lines,
    problems,
    run_hook,
    said,
    session_start,
)

import hivelore.hooks.wire as wire
from hivelore import __version__
from hivelore.eventstore import EventStore
from hivelore.hooks.client import server_state, start_server, stop_server
from hivelore.hooks.wire import WireError, pack, pack_environ, server_address, unpack, unpack_environ

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the hook server needs Linux")

WAIT_S = 15.0


def wait_for(condition, what: str) -> None:  # noqa: ANN001
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"waited {WAIT_S} s for {what}"
        time.sleep(0.05)


def events_answered(home: Path) -> int:
    """How many hook events the server of `home` answered (-1: no server)."""
    state = server_state(str(home), {})
    if not state.startswith("running"):
        return -1
    return int(state.split(", ")[2].split()[0])


def process_alive(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:  # gone
        return False


def server_pid(home: Path) -> int | None:
    state = server_state(str(home), {})
    return int(state.split("pid ")[1].split(",")[0]) if state.startswith("running") else None


@pytest.fixture
def server_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIVELORE_HOOK_SERVER", "on")


@contextlib.contextmanager
def running_server(home: Path, idle: str | None = None) -> Iterator[Path]:
    """A hook server for `home`, answering once the block starts, stopped when it ends (if still running)."""
    home.mkdir(parents=True, exist_ok=True)
    if idle:
        os.environ["HIVELORE_HOOK_SERVER_IDLE"] = idle  # read by the server at start
    try:
        start_server(str(home))
    finally:
        os.environ.pop("HIVELORE_HOOK_SERVER_IDLE", None)
    wait_for(lambda: server_pid(home) is not None, "the hook server to start")
    try:
        yield home
    finally:
        stop_server(str(home))


@pytest.fixture
def served(home: Path, server_on: None) -> Iterator[Path]:
    """The test's home, with a hook server answering for it."""
    with running_server(home):
        yield home


def write_lesson(home: Path, repo: Path) -> None:
    env = {**os.environ, "HIVELORE_HOME": str(home)}
    subprocess.run([sys.executable, "-m", "hivelore", "write", ADDRESS, LESSON], cwd=repo, env=env, check=True)


def replay(home: Path, repo: Path, agent: str) -> list[tuple[str, str]]:
    """Every fixture payload of `agent`, in order: (label, what the agent was told); contract checked."""
    told = []
    for label, event, payload in fixture_payloads(agent):
        result = run_hook(home, repo, ["--agent", agent, "--event", event], json.dumps(aimed(payload, repo)).encode())
        assert (result.returncode, result.stderr, problems(agent, event, result.stdout)) == (0, b"", []), label
        told.append((label, said(agent, result.stdout)))
    return told


# --- 1. the same answers as the hook process's own ---------------------------------------------------------------


@pytest.mark.parametrize("agent", ["claude", "codex", "kiro", "gemini", "cursor"])
def test_every_fixture_payload_is_answered_by_the_server_as_by_the_hook_itself(
    tmp_path: Path, repo: Path, server_on: None, monkeypatch: pytest.MonkeyPatch, agent: str
) -> None:
    """Two homes with the same lesson: one with a server, one without. Replaying every recorded and documented
    payload of the agent through both gives the same answers, and the server answered every one of them."""
    with_server, alone = tmp_path / "served", tmp_path / "alone"
    for home in (with_server, alone):
        write_lesson(home, repo)
    with running_server(with_server):
        by_server = replay(with_server, repo, agent)
        answered = events_answered(with_server)
    monkeypatch.setenv("HIVELORE_HOOK_SERVER", "off")
    by_itself = replay(alone, repo, agent)

    assert by_server == by_itself
    assert answered == len(by_server)
    assert any(text for _, text in by_server)  # not a vacuous replay
    assert [line for line in log_lines(with_server) if "hook server" not in line] == []  # no handler failed


@pytest.mark.parametrize(
    ("args", "stdin", "logged"),
    [*BAD_INPUT.values(), (["--agent", "claude", "--event", ""], b"{}", "--event is missing")],
    ids=[*BAD_INPUT, "empty --event"],
)
def test_bad_input_gets_the_same_answer_and_log_line_through_the_server(
    tmp_path: Path,
    repo: Path,
    server_on: None,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    stdin: bytes,
    logged: str | None,
) -> None:
    served = tmp_path / "served"
    with running_server(served):
        through_server = run_hook(served, repo, args, stdin)
        answered = events_answered(served)

    alone = tmp_path / "alone"
    monkeypatch.setenv("HIVELORE_HOOK_SERVER", "off")
    by_itself = run_hook(alone, repo, args, stdin)

    assert answered == 1
    assert (through_server.returncode, through_server.stdout, through_server.stderr) == (
        by_itself.returncode, by_itself.stdout, by_itself.stderr,
    )  # fmt: skip
    logged_lines = [line.split(" ", 1)[1] for line in log_lines(served) if "hook server" not in line]
    assert logged_lines == [line.split(" ", 1)[1] for line in log_lines(alone)]
    assert (logged is None) == (logged_lines == [])


# --- 2. the session story, through the server ----------------------------------------------------------------------


def test_a_failure_is_nudged_then_remembered_across_sessions(served: Path, repo: Path) -> None:
    home = served
    event, payload = failing_tests("claude", repo, "story-1")
    first = hook_told(home, repo, "claude", event, payload)
    assert NUDGE in first and "repo::acme/checkout" in first

    write_lesson(home, repo)
    event, payload = session_start("claude", repo, "story-2")
    assert LESSON[:40] in hook_told(home, repo, "claude", event, payload)
    event, payload = failing_tests("claude", repo, "story-2")
    again = hook_told(home, repo, "claude", event, payload)
    assert SEEN in again and NUDGE not in again
    assert events_answered(home) == 3


def hook_told(home: Path, repo: Path, agent: str, event: str, payload: dict) -> str:
    result = run_hook(home, repo, ["--agent", agent, "--event", event], json.dumps(payload).encode())
    assert (result.returncode, result.stderr, problems(agent, event, result.stdout)) == (0, b"", [])
    return said(agent, result.stdout)


def test_each_event_runs_in_its_hook_process_environment(served: Path, repo: Path, tmp_path: Path) -> None:
    """The server takes each hook's environment: a Kiro IDE prompt that comes in USER_PROMPT (stdin empty)
    finds the lesson, and the next event, without the variable, does not see the last one's."""
    write_lesson(served, repo)
    env = {**hook_env(served), "USER_PROMPT": "why does pnpm test fail with ECONNREFUSED 5432?"}
    args = ["--agent", "kiro", "--event", "userPromptSubmit"]
    result = subprocess.run(
        [sys.executable, "-m", "hivelore", "hook", *args], input=b"", cwd=repo, env=env, capture_output=True
    )
    assert result.returncode == 0 and LESSON[:40] in result.stdout.decode()

    result = subprocess.run(
        [sys.executable, "-m", "hivelore", "hook", *args],
        input=b"",
        cwd=repo,
        env=hook_env(served),
        capture_output=True,
    )
    assert (result.returncode, result.stdout) == (0, b"")
    assert events_answered(served) == 2


def test_the_first_event_is_answered_by_the_hook_which_then_starts_the_server(
    home: Path, repo: Path, server_on: None
) -> None:
    write_lesson(home, repo)
    event, payload = session_start("claude", repo, "first-1")
    try:
        assert LESSON[:40] in hook_told(home, repo, "claude", event, payload)
        wait_for(lambda: server_pid(home) is not None, "the hook to start a server")
        event, payload = session_start("claude", repo, "first-2")
        assert LESSON[:40] in hook_told(home, repo, "claude", event, payload)
        assert events_answered(home) == 1
    finally:
        stop_server(str(home))


def test_a_store_removed_while_the_server_runs_is_created_again(served: Path, repo: Path) -> None:
    """The server holds each store file open between events; a file deleted under it (by hand, or reset as
    damaged) is not the one the next event writes to: that event creates a new one, and the server follows."""
    prompt = "why does pnpm test fail with ECONNREFUSED 5432?"
    hook_told(served, repo, "claude", "UserPromptSubmit", claude_prompt(repo, "before", prompt))
    for suffix in ("", "-wal", "-shm"):
        (served / f"events.db{suffix}").unlink(missing_ok=True)

    for session in ("after-1", "after-2"):
        hook_told(served, repo, "claude", "UserPromptSubmit", claude_prompt(repo, session, prompt))

    store = EventStore.open(str(served))
    try:
        assert [store.first_prompt("claude", s) for s in ("before", "after-1", "after-2")] == ["", prompt, prompt]
    finally:
        store.close()
    assert events_answered(served) == 3


# --- 3. when the server leaves ----------------------------------------------------------------------------------


def test_stop_status_and_doctor(served: Path, repo: Path) -> None:
    env = {**os.environ, "HIVELORE_HOME": str(served)}
    hivelore = [sys.executable, "-m", "hivelore"]
    status = subprocess.run([*hivelore, "hook-server", "status"], cwd=repo, env=env, capture_output=True, text=True)
    assert status.stdout.startswith(f"running: pid {server_pid(served)}, since ")
    doctor = subprocess.run([*hivelore, "doctor", "--json"], cwd=repo, env=env, capture_output=True, text=True)
    assert json.loads(doctor.stdout)["hook_server"].startswith("running: ")

    stopped = subprocess.run([*hivelore, "hook-server", "stop"], cwd=repo, env=env, capture_output=True, text=True)
    assert stopped.stdout == "stopped\n"
    wait_for(lambda: "asked to stop" in "\n".join(log_lines(served)), "the server to say it left")
    assert server_state(str(served), {}) == "not running: the next hook event starts it"
    off = subprocess.run(
        [*hivelore, "hook-server", "status"], cwd=repo, env={**env, "HIVELORE_HOOK_SERVER": "off"},
        capture_output=True, text=True,
    )  # fmt: skip
    assert off.stdout.startswith("off (HIVELORE_HOOK_SERVER is set to off)")


def test_an_idle_server_leaves(home: Path, server_on: None) -> None:
    with running_server(home, idle="1"):
        wait_for(lambda: server_pid(home) is None, "the idle server to leave")
    assert "idle for 1 s" in log_lines(home)[-1]


def test_a_server_whose_home_is_removed_leaves(home: Path, server_on: None) -> None:
    with running_server(home):  # the check is inside: leaving the block would stop the server itself
        pid = server_pid(home)
        shutil.rmtree(home)
        wait_for(lambda: not process_alive(pid), "the server of a removed home to leave")


def test_a_server_whose_code_changed_steps_aside_for_a_new_one(served: Path, repo: Path) -> None:
    """An upgrade or an edit of hivelore's source: the old server answers "stale", the hook answers the event
    itself (correctly) and starts a server with the new code."""
    write_lesson(served, repo)
    old = server_pid(served)
    source = Path(wire.__file__)
    before = source.stat()
    os.utime(source, ns=(before.st_atime_ns, time.time_ns()))
    try:
        event, payload = session_start("claude", repo, "stale-1")
        assert LESSON[:40] in hook_told(served, repo, "claude", event, payload)
    finally:
        os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))
    wait_for(lambda: server_pid(served) not in (None, old), "a new server")
    assert any("its code changed on disk" in line for line in log_lines(served))


# --- 4. a broken or foreign client ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [b"", b"garbage", b"5:hello", pack([b"hivelore-hook/1", b"hook"]), pack([b"other-protocol/9", b"stop"])],
    ids=["nothing", "garbage", "cut short", "too few fields", "another protocol"],
)
def test_a_bad_request_is_refused_and_the_server_goes_on(served: Path, repo: Path, message: bytes) -> None:
    address = server_address(str(served), sys.executable, __version__)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(address)
        sock.sendall(message)
        sock.shutdown(socket.SHUT_WR)
        answer = sock.recv(1 << 16)
    assert answer in (b"", pack([b"refused", b"", b""]))
    write_lesson(served, repo)
    event, payload = session_start("claude", repo, "after-garbage")
    assert LESSON[:40] in hook_told(served, repo, "claude", event, payload)


def test_an_event_a_leaving_server_dropped_is_answered_by_the_hook_itself(
    home: Path, repo: Path, server_on: None
) -> None:
    """A server that closes the connection without a word (it was leaving while the event waited to be accepted)
    has not handled the event: the hook answers it in its own process."""
    write_lesson(home, repo)
    address = server_address(str(home), sys.executable, __version__)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(address)
        listener.listen(1)
        event, payload = session_start("claude", repo, "dropped")
        hook = subprocess.Popen(
            [sys.executable, "-m", "hivelore", "hook", "--agent", "claude", "--event", event],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=repo, env=hook_env(home),
        )  # fmt: skip
        conn, _ = listener.accept()
        conn.close()  # dropped unread
        out, _ = hook.communicate(json.dumps(payload).encode(), timeout=60)
    assert hook.returncode == 0 and LESSON[:40] in said("claude", out)
    wait_for(lambda: server_pid(home) is not None, "the hook to start a real server once the name was free")
    stop_server(str(home))


def test_a_request_for_another_home_is_refused(served: Path, tmp_path: Path) -> None:
    """The server answers only for its own home and interpreter, even if another's name led here."""
    from hivelore.hooks.client import exchange, request

    address = server_address(str(served), sys.executable, __version__)
    assert exchange(address, request(b"status", str(tmp_path / "elsewhere"), [])) == [b"refused", b"", b""]


# --- 5. the wire format -----------------------------------------------------------------------------------------


@given(st.lists(st.binary(max_size=200), max_size=8))
def test_pack_and_unpack_round_trip(fields: list[bytes]) -> None:
    assert unpack(pack(fields)) == fields


@given(st.lists(st.binary(min_size=1, max_size=50), min_size=1, max_size=5), st.data())
def test_a_message_cut_short_is_an_error(fields: list[bytes], data: st.DataObject) -> None:
    message = pack(fields)
    cut = data.draw(st.integers(min_value=1, max_value=len(message) - 1))
    try:
        got = unpack(message[:cut])
    except WireError:
        return
    assert got != fields  # a prefix that happens to be whole messages is not the message


NAMES = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="=\0"), min_size=1)
VALUES = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"))


@given(st.dictionaries(NAMES, VALUES))
def test_an_environment_survives_the_wire(environ: dict[str, str]) -> None:
    assert unpack_environ(pack_environ(environ)) == environ


def test_each_home_interpreter_and_version_has_its_own_server(tmp_path: Path) -> None:
    names = {
        server_address(str(tmp_path / "a"), sys.executable, __version__),
        server_address(str(tmp_path / "b"), sys.executable, __version__),
        server_address(str(tmp_path / "a"), "/other/python", __version__),
        server_address(str(tmp_path / "a"), sys.executable, "0.0.0"),
    }
    assert len(names) == 4 and all(name.startswith(b"\0hivelore-hooks-") for name in names)
