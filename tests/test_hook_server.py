"""The hook server end to end: real `hivelore hook` processes handing events to a real server process.

conftest.py turns the server off for the rest of the suite; here it is on (`server_on`), each test starts the
server for its home and waits until it answers, and stops it afterwards. What must hold: an event answered by
the server is answered exactly as the hook process answers it itself, in the hook's own environment and
folder; the server leaves when it should (asked, idle, home removed, code changed); a broken client cannot take
it down.
"""

from __future__ import annotations

import ast
import contextlib
import fcntl
import json
import os
import pwd
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from harness import (
    ADDRESS,
    BAD_INPUT,
    HOOK_SECONDS,
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
    search,
    searches_answered,
    session_start,
)
from hypothesis import given
from hypothesis import strategies as st

import hivelore.hooks.wire as wire
from hivelore import __version__
from hivelore.events.store import EventStore
from hivelore.hooks.client import server_state, start_server, stop_server
from hivelore.hooks.wire import (
    HOOK_ENVIRON,
    HOOK_ENVIRON_PREFIXES,
    HOOK_ENVIRON_WITHHELD,
    WireError,
    hook_environ,
    pack,
    pack_environ,
    run_folder,
    server_address,
    unpack,
    unpack_environ,
)

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


NOTE_MINUTE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC")


def note_minutes(home: Path) -> dict[str, list[str]]:
    """Every memory file of `home` with the minutes its text names (a session note names the one it was taken at)."""
    return {str(path.relative_to(home)): NOTE_MINUTE.findall(path.read_text()) for path in sorted(home.rglob("*.md"))}


def told_by(home: Path, repo: Path, agent: str, event: str, stdin: bytes, server: str, label: str) -> str:
    result = run_hook(home, repo, ["--agent", agent, "--event", event], stdin, hook_server=server)
    assert (result.returncode, result.stderr, problems(agent, event, result.stdout)) == (0, b"", []), label
    return said(agent, result.stdout)


class Replayed(NamedTuple):
    by_server: list[tuple[str, str]]  # (label, what the agent was told) of each payload
    by_itself: list[tuple[str, str]]


def replay_side_by_side(served: Path, alone: Path, repo: Path, agent: str) -> Replayed | None:
    """Every fixture payload of `agent`, in order, to the hook of `served` (its server answers) and at once to the
    hook of `alone` (it answers itself): the answers, contract checked. None when a minute ended between the two
    hooks of an event that took a session note.

    Why side by side: a session note names the minute it was taken at, and its words count when two notes are
    compared for near-duplicates (recall.fit_budget). Whether Codex's notes "OK" and "done" of two sessions are
    near-duplicates depends on that minute's digits (the test below), so two replays a minute apart may list one
    note fewer, with or without a server. Here each note is taken in the same minute in both homes, whatever the
    minutes the replay spans."""
    replayed = Replayed([], [])
    for label, event, payload in fixture_payloads(agent):
        stdin = json.dumps(aimed(payload, repo)).encode()
        replayed.by_server.append((label, told_by(served, repo, agent, event, stdin, "on", label)))
        server_state(str(served), {})  # answered after the event's deferred work (the Stop note): it is done
        replayed.by_itself.append((label, told_by(alone, repo, agent, event, stdin, "off", label)))
        by_server, by_itself = note_minutes(served), note_minutes(alone)
        assert list(by_server) == list(by_itself), f"{label}: not the same memory files with and without the server"
        if by_server != by_itself:
            return None
    return replayed


SESSION_ID = re.compile(r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}(?:-[0-9a-f]{12})?")


def lines_of_notes(told: str) -> list[str]:
    """An answer's lines in order, sessions unnamed: notes taken within a second of each other may rank either
    way, and of two sessions' notes with the same words ("OK") either may be the one kept."""
    return sorted(SESSION_ID.sub("SESSION", line) for line in told.splitlines())


def comparable(told: list[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    return [(label, lines_of_notes(text)) for label, text in told]


# --- 1. the same answers as the hook process's own ---------------------------------------------------------------


@pytest.mark.parametrize("agent", ["claude", "codex", "kiro", "gemini", "cursor"])
def test_every_fixture_payload_is_answered_by_the_server_as_by_the_hook_itself(
    tmp_path: Path, repo: Path, server_on: None, agent: str
) -> None:
    """Two homes with the same lesson: one with a server, one without. Replaying every recorded and documented
    payload of the agent through both gives the same answers, and the server answered every one of them."""
    for attempt in ("first", "again", "third"):
        served, alone = tmp_path / f"served-{attempt}", tmp_path / f"alone-{attempt}"
        write_lesson(served, repo)
        write_lesson(alone, repo)
        with running_server(served):
            replayed = replay_side_by_side(served, alone, repo, agent)
            answered = events_answered(served)
        if replayed is not None:
            break
    else:
        raise AssertionError("a minute ended while a session note was taken in three replays out of three")

    assert comparable(replayed.by_server) == comparable(replayed.by_itself)
    assert answered == len(replayed.by_server)
    assert any(text for _, text in replayed.by_server)  # not a vacuous replay
    assert [line for line in log_lines(served) if "hook server" not in line] == []  # no handler failed


def test_two_session_notes_are_compared_by_the_agents_words_whatever_the_minute_they_were_taken_at(
    home: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same Codex sessions, replayed on 2026-12-03 at 13:02 and at 13:03 (in this process, no server), list
    the same notes. Before notes were compared by the agent's own words alone (recall._own_words), their
    attribution decided it: at 13:02 the stamp gave the notes "OK" and "done" of two sessions one more word in
    common, which lifted their likeness to recall.NEAR_DUPLICATE, and "done" was left out."""
    from hivelore.hooks.command import respond

    real_gmtime = time.gmtime
    last_start: dict[int, str] = {}  # what the last session start of the replay was told, per minute
    for minute in (2, 3):
        monkeypatch.setenv("HIVELORE_HOME", str(home / f"13-0{minute}"))
        at = (2026, 12, 3, 13, minute)
        monkeypatch.setattr(
            time, "gmtime", lambda seconds=None, at=at: time.struct_time((*at, *real_gmtime(seconds)[5:]))
        )
        for label, event, payload in fixture_payloads("codex"):
            if label.startswith("round4-codex.ndjson:"):
                out, _ = respond(
                    ["--agent", "codex", "--event", event], json.dumps(aimed(payload, repo)).encode(), str(repo), 1
                )
                last_start[minute] = (
                    said("codex", out.encode()) if event == "SessionStart" else last_start.get(minute, "")
                )

    assert lines_of_notes(last_start[2].replace("13:02", "13:03")) == lines_of_notes(last_start[3])
    assert '"done"' in last_start[3] and '"OK"' in last_start[3]


def test_hooks_answering_alone_beside_the_server_leave_its_event_store_usable(
    tmp_path: Path, repo: Path, server_on: None
) -> None:
    """A hook process that answers alone (the server busy, or HIVELORE_HOOK_SERVER=off in one terminal) opens and
    closes events.db beside the server. Once, that took the file from under the server: its own opening of the
    file (home.private_file) dropped SQLite's locks, the lone hook checkpointed and deleted the WAL files, and
    every later event the server answered failed with "disk I/O error"."""
    home = tmp_path / "home"
    write_lesson(home, repo)
    with running_server(home):
        for n in range(10):
            for server in ("on", "off"):
                payload = {"session_id": f"{server}-{n}", "prompt": "why ECONNREFUSED 5432 again", "cwd": str(repo)}
                args = ["--agent", "claude", "--event", "UserPromptSubmit"]
                assert run_hook(home, repo, args, json.dumps(payload).encode(), hook_server=server).returncode == 0
        answered = events_answered(home)

    assert answered >= 9  # the first may start it
    assert [line for line in log_lines(home) if "hook server" not in line] == []


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


def test_a_search_is_left_to_the_command_by_a_server_without_the_model(served: Path, repo: Path) -> None:
    """conftest.py starts the servers with HIVELORE_HOOK_MODEL=off: `hivelore search` answers itself, by BM25,
    exactly as with the server off."""
    write_lesson(served, repo)
    for args in (["postgres"], ["--json", "postgres"], ["--limit", "0", "postgres"], ["a word nobody wrote"]):
        with_server = search(served, repo, *args)
        without = search(served, repo, *args, HIVELORE_HOOK_SERVER="off")
        assert (with_server.returncode, with_server.stdout, with_server.stderr) == (
            without.returncode, without.stdout, without.stderr,
        )  # fmt: skip
    assert ADDRESS in search(served, repo, "postgres").stdout
    assert searches_answered(served) == 0


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


def test_what_other_processes_write_between_events_is_what_the_next_event_reads(served: Path, repo: Path) -> None:
    """The server keeps each store's connection open from one event to the next: a lesson another process
    writes between two prompts is found by the second, and an index deleted and rebuilt into a new file
    in between is the one the next prompt reads."""
    prompt = "why does pnpm test fail with ECONNREFUSED 5432?"
    assert hook_told(served, repo, "claude", "UserPromptSubmit", claude_prompt(repo, "s-1", prompt)) == ""
    write_lesson(served, repo)
    assert LESSON[:40] in hook_told(served, repo, "claude", "UserPromptSubmit", claude_prompt(repo, "s-2", prompt))
    for suffix in ("", "-wal", "-shm"):
        (served / f"index.db{suffix}").unlink(missing_ok=True)
    env = {**os.environ, "HIVELORE_HOME": str(served)}
    subprocess.run([sys.executable, "-m", "hivelore", "index", "rebuild"], cwd=repo, env=env, check=True)

    assert LESSON[:40] in hook_told(served, repo, "claude", "UserPromptSubmit", claude_prompt(repo, "s-3", prompt))
    assert events_answered(served) == 3
    assert not [line for line in log_lines(served) if "index" in line]


def test_the_server_answers_stop_before_it_keeps_the_session_note(served: Path, repo: Path) -> None:
    """Stop's answer does not wait for the agent's last message to be kept as the session's note (a file
    and its folder synced, 10 to 40 ms of every turn on a busy disk): the server answers, then writes
    it, before it answers anything else. Here the home's vault lock is held, so the note cannot be
    written until it is released; the Stop hook returns all the same."""
    payload = {"session_id": "s-stop", "cwd": str(repo), "hook_event_name": "Stop", "stop_hook_active": False,
               "last_assistant_message": "The migrations ran once postgres was started."}  # fmt: skip
    lock = os.open(served / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    released = threading.Timer(HOOK_SECONDS, fcntl.flock, (lock, fcntl.LOCK_UN))
    released.start()
    try:
        result = run_hook(served, repo, ["--agent", "claude", "--event", "Stop"], json.dumps(payload).encode())
        assert (result.returncode, result.stderr) == (0, b"")
        assert result.seconds < HOOK_SECONDS, "the Stop answer waited for the note to be written"
        assert not any("migrations ran" in path.read_text() for path in served.rglob("*.md"))
    finally:
        released.cancel()
        fcntl.flock(lock, fcntl.LOCK_UN)
        os.close(lock)
    server_state(str(served), {})  # answered once the Stop's deferred work is done
    notes = [path for path in served.rglob("*.md") if "migrations ran" in path.read_text()]
    assert len(notes) == 1 and "last-message" in notes[0].name


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
    # It writes why it left after giving its address up.
    wait_for(lambda: "idle for 1 s" in "\n".join(log_lines(home)[-1:]), "the server to say it left")


def test_a_server_whose_home_is_removed_leaves(home: Path, server_on: None) -> None:
    with running_server(home):  # the check is inside: leaving the block would stop the server itself
        pid = server_pid(home)
        shutil.rmtree(home)
        wait_for(lambda: not process_alive(pid), "the server of a removed home to leave")


def test_a_server_whose_code_changed_steps_aside_for_a_new_one(
    home: Path, repo: Path, tmp_path: Path, server_on: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upgrade or an edit of hivelore's source: the old server answers "stale", the hook answers the event
    itself (correctly) and starts a server with the new code.

    The server and hooks here run a copy of hivelore (PYTHONPATH), and the copy is what changes: every hook server
    that another test runs at the same time (pytest -n 2) would otherwise see its own code change and leave."""
    copy = tmp_path / "site"
    shutil.copytree(Path(wire.__file__).parents[1], copy / "hivelore")
    monkeypatch.setenv("PYTHONPATH", str(copy))
    write_lesson(home, repo)
    with running_server(home):
        old = server_pid(home)
        source = copy / "hivelore" / "hooks" / "wire.py"
        os.utime(source, ns=(source.stat().st_atime_ns, time.time_ns()))
        event, payload = session_start("claude", repo, "stale-1")
        assert LESSON[:40] in hook_told(home, repo, "claude", event, payload)
        wait_for(lambda: server_pid(home) not in (None, old), "a new server")
    assert any("its code changed on disk" in line for line in log_lines(home))


# --- 4. a broken or foreign client ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        b"",
        b"garbage",
        b"5:hello",
        pack([b"hivelore-hook/1", b"hook"]),
        pack([b"hivelore-hook/1", b"search"]),
        pack([b"other-protocol/9", b"stop"]),
    ],
    ids=["nothing", "garbage", "cut short", "too few fields", "a search with too few fields", "another protocol"],
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
    os.makedirs(run_folder(str(home)), mode=0o700, exist_ok=True)
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


SHORT_HOMES = Path("/tmp/hl")  # pytest-xdist's basetemp (popen-gwN) can make tmp_path too long for a socket file


def test_each_home_interpreter_and_version_has_its_own_server() -> None:
    tmp_path = SHORT_HOMES  # names only, nothing made: a home short enough for a socket file under any pytest basetemp
    names = {
        server_address(str(tmp_path / "a"), sys.executable, __version__),
        server_address(str(tmp_path / "b"), sys.executable, __version__),
        server_address(str(tmp_path / "a"), "/other/python", __version__),
        server_address(str(tmp_path / "a"), sys.executable, "0.0.0"),
    }
    assert len(names) == 4
    assert {os.path.dirname(name) for name in names} == {os.fsencode(run_folder(str(tmp_path / h))) for h in "ab"}


def test_a_socket_file_too_long_for_an_address_gives_way_to_an_abstract_name(tmp_path: Path) -> None:
    assert server_address(str(SHORT_HOMES / "h"), sys.executable, __version__).endswith(b".sock")
    assert abstract_address(long_home(tmp_path)).startswith(b"\0hivelore-hooks-")


# --- 6. other users and slow clients ------------------------------------------------------------------------------
#
# Another local user must not pose as the server (and so receive a hook's payload and environment, and answer in
# hivelore's name), nor reach our server, nor hold up our hooks; neither may a slow client of our own.

OTHER_PYTHON = "/usr/bin/python3"  # the venv's interpreter may live where another user cannot enter (/root)
IMPOSTOR = "hivelore context from someone else"
# Run as the other user: binds ADDRESS (hex) first, and reports how many bytes the first client sent it, answering
# that client as a server would (so a hook that trusted it would print IMPOSTOR).
SQUATTER = f"""
import socket, sys
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(bytes.fromhex(sys.argv[1]))
listener.listen(8)
print("listening", flush=True)
listener.settimeout(60)
conn, _ = listener.accept()
conn.settimeout(10)
got = b""
try:
    while chunk := conn.recv(65536):
        got += chunk
    body = b'{{"hookSpecificOutput": {{"hookEventName": "SessionStart", "additionalContext": "{IMPOSTOR}"}}}}\\n'
    conn.sendall(b"2:ok,%d:%s,0:," % (len(body), body))
except OSError:
    pass
print(len(got), flush=True)
"""
# A client that connects to ADDRESS (hex) and sends one byte every INTERVAL seconds for DURATION seconds, or until
# the server closes the connection; then prints what happened as JSON.
DRIBBLER = """
import json, socket, sys, time
address, interval, duration = bytes.fromhex(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(address)
print("connected", flush=True)
start, sent, error = time.monotonic(), 0, ""
while time.monotonic() - start < duration:
    try:
        sock.send(b"9")
    except OSError as exc:
        error = type(exc).__name__
        break
    sent += 1
    time.sleep(interval)
print(json.dumps({"sent": sent, "error": error, "seconds": time.monotonic() - start}), flush=True)
"""


class OtherUser(NamedTuple):
    name: str
    uid: int
    gid: int

    def run(self, program: str, *args: str) -> subprocess.Popen[str]:
        """`python -c program args…` as this user, started: its stdout a pipe of lines."""
        command = ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", OTHER_PYTHON, "-I"]
        return subprocess.Popen(
            [*command, "-c", program, *args], cwd="/", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )


@pytest.fixture(scope="module")
def other_user() -> Iterator[OtherUser]:
    """A second Unix user, created for these tests and removed after them."""
    if os.geteuid() != 0:
        pytest.skip("creating a second Unix user (useradd) needs root")
    missing = [tool for tool in ("useradd", "userdel", "setpriv") if shutil.which(tool) is None]
    if missing or not os.access(OTHER_PYTHON, os.X_OK):
        pytest.skip(f"needs {', '.join(missing) or OTHER_PYTHON} to run a process as a second user")
    name = f"hlt{os.getpid()}"
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    try:
        entry = pwd.getpwnam(name)
        yield OtherUser(name, entry.pw_uid, entry.pw_gid)
    finally:
        subprocess.run(["userdel", name], check=True)


def long_home(tmp_path: Path) -> Path:
    """A home whose socket file would not fit in a socket address: its server listens on an abstract name, which
    any local user can see in /proc/net/unix, bind first, or connect to."""
    return tmp_path / ("home-with-a-long-name-" + "x" * 90)


def abstract_address(home: Path) -> bytes:
    address = server_address(str(home), sys.executable, __version__)
    assert address.startswith(b"\0"), "the home's socket file fits an address: make the name longer"
    return address


def first_line(process: subprocess.Popen[str]) -> str:
    line = process.stdout.readline().strip()
    assert line, f"the helper process failed: {process.stderr.read()}"
    return line


def test_another_user_holding_the_address_gets_nothing_and_the_hook_answers_itself(
    tmp_path: Path, repo: Path, server_on: None, other_user: OtherUser
) -> None:
    home = long_home(tmp_path)
    write_lesson(home, repo)
    squatter = other_user.run(SQUATTER, abstract_address(home).hex())
    try:
        assert first_line(squatter) == "listening"
        event, payload = session_start("claude", repo, "squatted")
        told = hook_told(home, repo, "claude", event, payload)
        received = first_line(squatter)
    finally:
        squatter.kill()
        squatter.wait()

    assert received == "0"  # not one byte: no payload, no environment
    assert LESSON[:40] in told and IMPOSTOR not in told
    logged = "\n".join(log_lines(home))
    assert f"is held by uid {other_user.uid}, not by this user: it was sent nothing" in logged
    assert "hook server started" not in logged  # its name is taken: no server is started to fail


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder every user may pass through (pytest's own are its user's only), removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix="hivelore-shared-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)  # a test that failed may have left a server writing its last log line


def test_another_user_cannot_reach_or_take_a_socket_file(
    open_folder: Path, repo: Path, server_on: None, other_user: OtherUser
) -> None:
    """With the home in a folder every user may pass through, the socket file's own folder is what keeps another
    user out: it can neither connect to our server nor put a socket of its own where our hooks look."""
    home = open_folder / "home"
    home.mkdir(mode=0o755)
    with running_server(home):
        address = server_address(str(home), sys.executable, __version__)
        assert not address.startswith(b"\0")  # a socket file
        assert stat.S_IMODE(os.stat(run_folder(str(home))).st_mode) == 0o700
        tries = other_user.run(
            "import socket, sys\n"
            "for verb in ('connect', 'bind'):\n"
            "    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
            "    try:\n"
            "        getattr(sock, verb)(bytes.fromhex(sys.argv[1]) if verb == 'connect' else sys.argv[2])\n"
            "        print(verb, 'worked')\n"
            "    except OSError as exc:\n"
            "        print(verb, type(exc).__name__)\n",
            address.hex(), os.path.join(run_folder(str(home)), "other.sock"),
        )  # fmt: skip
        out, err = tries.communicate(timeout=30)
        write_lesson(home, repo)
        event, payload = session_start("claude", repo, "shared")
        told = hook_told(home, repo, "claude", event, payload)
        answered = events_answered(home)
    wait_for(lambda: any("hook server left" in line for line in log_lines(home)), "the server to leave")

    assert out.splitlines() == ["connect PermissionError", "bind PermissionError"], err
    assert LESSON[:40] in told and answered == 1


def test_another_user_connecting_is_refused_at_accept_and_delays_no_hook(
    tmp_path: Path, repo: Path, server_on: None, other_user: OtherUser
) -> None:
    """The other user connects and sends a byte every half second: the server closes the connection as it accepts
    it, and our hook, started meanwhile, is answered by the server as usual."""
    home = long_home(tmp_path)
    write_lesson(home, repo)
    with running_server(home):
        dribbler = other_user.run(DRIBBLER, abstract_address(home).hex(), "0.5", "8")
        try:
            assert first_line(dribbler) == "connected"
            event, payload = session_start("claude", repo, "while-dribbling")
            told = hook_told(home, repo, "claude", event, payload)
            ended = json.loads(first_line(dribbler))
        finally:
            dribbler.kill()
            dribbler.wait()
        answered = events_answered(home)

    assert LESSON[:40] in told and answered == 1
    assert ended["error"] in ("BrokenPipeError", "ConnectionResetError") and ended["sent"] <= 2, ended
    assert f"refused a connection from uid {other_user.uid}" in "\n".join(log_lines(home))


def test_a_slow_client_of_our_own_delays_no_other_hook_and_is_cut_off_at_the_deadline(served: Path, repo: Path) -> None:
    """A client of the same user that sends one byte a second: a hook started meanwhile is answered while it is
    still sending, and the server drops it READ_WAIT_S after it connected, however often it sends."""
    from hivelore.hooks.server import READ_WAIT_S

    write_lesson(served, repo)
    address = server_address(str(served), sys.executable, __version__)
    dribble_s = 3 * READ_WAIT_S
    dribbler = subprocess.Popen(
        [sys.executable, "-c", DRIBBLER, address.hex(), "1", str(dribble_s)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert first_line(dribbler) == "connected"
        event, payload = session_start("claude", repo, "beside-a-slow-client")
        told = hook_told(served, repo, "claude", event, payload)
        still_sending = dribbler.poll() is None
        ended = json.loads(first_line(dribbler))
    finally:
        dribbler.kill()
        dribbler.wait()

    assert LESSON[:40] in told
    assert still_sending  # answered before the slow client finished
    assert events_answered(served) == 1
    assert ended["error"] in ("BrokenPipeError", "ConnectionResetError"), ended
    assert ended["seconds"] < dribble_s - 2, ended  # cut off at the deadline, not waited out
    assert any(f"was not whole after {READ_WAIT_S:g} s" in line for line in log_lines(served))


# --- 7. the environment a hook passes on -------------------------------------------------------------------------


SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "GITHUB_TOKEN": "ghp_" + "a1" * 18,
    "HIVELORE_TOKEN": "hl_rw_" + "b2" * 20,  # hivelore's own, though its name has the prefix hooks pass on
}


def test_a_hook_sends_the_server_only_the_variables_hooks_read(home: Path, repo: Path, server_on: None) -> None:
    """What arrives at the server's address from a real hook whose environment holds cloud and git tokens."""
    address = server_address(str(home), sys.executable, __version__)
    os.makedirs(run_folder(str(home)), mode=0o700)
    env = {**hook_env(home), **SECRETS, "HIVELORE_DEVELOPER": "dev@example.com", "LC_ALL": "C.UTF-8"}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(address)
        listener.listen(1)
        hook = subprocess.Popen(
            [sys.executable, "-m", "hivelore", "hook", "--agent", "claude", "--event", "SessionStart"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=repo, env=env,
        )  # fmt: skip
        hook.stdin.write(json.dumps(session_start("claude", repo, "secrets")[1]).encode())
        hook.stdin.close()
        conn, _ = listener.accept()
        with conn:
            request = b""
            while chunk := conn.recv(1 << 20):
                request += chunk
            conn.sendall(pack([b"ok", b"", b""]))
        hook.wait(timeout=60)
    sent = unpack_environ(unpack(request)[8])

    assert not set(SECRETS) & set(sent)
    assert not any(value in request for value in map(str.encode, SECRETS.values()))
    assert sent == hook_environ(env)
    assert {"HIVELORE_HOME", "HIVELORE_DEVELOPER", "PATH", "LC_ALL"} <= set(sent)


def test_the_server_a_hook_starts_holds_none_of_its_secrets(home: Path, repo: Path, server_on: None) -> None:
    event, payload = session_start("claude", repo, "spawned")
    env = {**hook_env(home), **SECRETS}
    try:
        subprocess.run(
            [sys.executable, "-m", "hivelore", "hook", "--agent", "claude", "--event", event],
            input=json.dumps(payload).encode(), cwd=repo, env=env, capture_output=True, timeout=60, check=True,
        )  # fmt: skip
        wait_for(lambda: server_pid(home) is not None, "the hook to start a server")
        environ = Path(f"/proc/{server_pid(home)}/environ").read_bytes()
    finally:
        stop_server(str(home))
    assert b"HIVELORE_HOME=" in environ
    assert not any(name.encode() in environ for name in SECRETS)


ENVIRON_READERS = {"environ", "env", "getenv"}  # what a read of a variable goes through in hivelore's code
IMPLICIT = {"expanduser": {"HOME"}, "home": {"HOME"}}  # os.path.expanduser("~"), Path.home()


def test_every_variable_the_hook_path_reads_is_passed_to_the_server() -> None:
    """The server answers each event in the environment the hook sent, so a variable that code on the hook path
    reads and HOOK_ENVIRON leaves out would make the server answer differently from the hook process: the walk
    covers every module the server and the hook command import, at any depth, and the indexer they start."""
    from hivelore.hooks.server import WARM_MODULES

    roots = ["hivelore.hooks.client", "hivelore.hooks.command", "hivelore.hooks.server", *WARM_MODULES]
    modules = hivelore_imports([*roots, "hivelore.cli.graph"])  # `hivelore graph index` runs in the background
    read = {name: module for module in sorted(modules) for name in variables_read(module)}

    assert {"HIVELORE_HOME", "USER_PROMPT", "GIT_CONFIG_GLOBAL", "XDG_CONFIG_HOME", "HOME"} <= set(read)  # not vacuous
    left_out = {n: m for n, m in read.items() if n not in HOOK_ENVIRON and not n.startswith(HOOK_ENVIRON_PREFIXES)}
    assert left_out == {}
    withheld_but_read = {n: m for n, m in read.items() if n in HOOK_ENVIRON_WITHHELD}
    assert withheld_but_read == {}


def module_file(name: str) -> Path | None:
    base = Path(wire.__file__).parents[2] / Path(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def hivelore_imports(roots: list[str]) -> set[str]:
    """`roots` and every hivelore module they import, at module level or inside a function, transitively; and the
    packages they are in, whose module-level code runs when a module of theirs is imported (their functions need
    not: `graph index` does not run `hivelore.cli.main`'s other commands)."""
    seen: set[str] = set()
    todo = [(name, True) for name in roots]
    while todo:
        name, whole = todo.pop()
        path = module_file(name)
        if (name, whole) in seen or path is None:
            continue
        seen.add((name, whole))
        parts = name.split(".")
        todo += [(".".join(parts[:i]), False) for i in range(1, len(parts))]
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree) if whole else tree.body:
            if isinstance(node, ast.Import):
                todo += [(alias.name, True) for alias in node.names if alias.name.startswith("hivelore")]
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("hivelore"):
                todo += [(node.module, True), *((f"{node.module}.{alias.name}", True) for alias in node.names)]
    return {name for name, _ in seen}


def variables_read(module: str) -> set[str]:
    """The environment variables `module` reads: `X.get("NAME")`, `X["NAME"]`, `"NAME" in X` for any X named
    environ or env, `os.getenv("NAME")`, names given by a module-level constant, and HOME through expanduser or
    Path.home()."""
    tree = ast.parse(module_file(module).read_text())
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }

    def text(node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        return constants.get(node.id) if isinstance(node, ast.Name) else None

    def reader(node: ast.AST) -> bool:
        last = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
        return last in ENVIRON_READERS

    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in IMPLICIT:
                found |= IMPLICIT[node.func.attr]
            elif (node.func.attr == "get" and reader(node.func.value)) or node.func.attr == "getenv":
                found.add(text(node.args[0]) if node.args else None)
        elif isinstance(node, ast.Subscript) and reader(node.value):
            found.add(text(node.slice))
        elif isinstance(node, ast.Compare) and any(reader(c) for c in node.comparators):
            found.add(text(node.left))
    return {name for name in found if name and re.fullmatch(r"[A-Z][A-Z0-9_]*", name)}


# --- 8. what a payload may hold ----------------------------------------------------------------------------------


def test_a_lone_surrogate_is_answered_through_the_server_like_any_other_payload(served: Path, repo: Path) -> None:
    write_lesson(served, repo)
    payload = claude_prompt(repo, "surrogate", "why does pnpm test fail with ECONNREFUSED 5432? \ud800")
    assert LESSON[:40] in hook_told(served, repo, "claude", "UserPromptSubmit", payload)
    assert events_answered(served) == 1
    assert [line for line in log_lines(served) if "hook server" not in line] == []
