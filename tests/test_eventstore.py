"""The event store by example: what the hooks remember between calls, shared by parallel agents."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hivelore.events.store import (
    FILENAME,
    SCHEMA_VERSION,
    EventStore,
    EventStoreBusy,
    EventStoreUnavailable,
    Failure,
    Friction,
    Prompt,
    error_lines,
    fingerprint,
    normalise_command,
    reset,
)

FIXTURES = Path(__file__).parent / "fixtures"
TEST_OUTPUT = FIXTURES / "test-output"
APP = "/home/dev/src/acme-api"
DAY = 86_400


def pnpm_test_output(
    started: str = "09:14:03", took: str = "1.53s", tmp: str = "vitest-8Xk2a", port: int = 5432
) -> str:
    """What `pnpm test` (vitest) prints when PostgreSQL is not running."""
    return f"""
> acme-api@1.0.0 test {APP}
> vitest run

 RUN  v1.6.0 {APP}

 ❯ tests/orders.test.ts (3 tests | 1 failed) 812ms
   × orders > creates an order 804ms
     → connect ECONNREFUSED 127.0.0.1:{port}

⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯

 FAIL  tests/orders.test.ts > orders > creates an order
Error: connect ECONNREFUSED 127.0.0.1:{port}
 ❯ TCPConnectWrap.afterConnect [as oncomplete] node:net:1555:16
 ❯ Pool.connect /tmp/{tmp}/node_modules/pg-pool/index.js:45:11

 Test Files  1 failed | 3 passed (4)
      Tests  1 failed | 11 passed (12)
   Start at  {started}
   Duration  {took} (transform 210ms, setup 0ms, collect 904ms, tests 812ms)

 ELIFECYCLE  Test failed. See above for more details.
"""


MONDAY_RUN = pnpm_test_output()
TUESDAY_RUN = pnpm_test_output(started="17:02:44", took="2.08s", tmp="vitest-Qp93z")
REDIS_DOWN = pnpm_test_output(port=6379)
MIGRATION_ERROR = (
    'Error: relation "orders" does not exist\n    at Parser.parseErrorMessage (node_modules/pg/lib/parser.js:287:98)'
)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, days: float) -> None:
        self.now += days * DAY


@pytest.fixture
def folder(tmp_path: Path) -> str:
    return str(tmp_path / "hivelore-home")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(folder: str, clock: Clock) -> Iterator[EventStore]:
    with EventStore.open(folder, clock=clock) as opened:
        yield opened


# -- sessions ---------------------------------------------------------------------------------


def test_opening_creates_the_folder_and_a_wal_database(folder: str) -> None:
    EventStore.open(folder).close()
    conn = sqlite3.connect(Path(folder, FILENAME))
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert conn.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone() == (SCHEMA_VERSION,)


def test_the_session_start_block_is_due_once_per_session(store: EventStore) -> None:
    store.touch_session("claude", "s1", APP)
    assert store.take_context("claude", "s1")
    assert not store.take_context("claude", "s1")
    assert store.take_context("claude", "s2"), "another session gets its own"
    assert store.take_context("codex", "s1"), "session ids of different agents do not mix"


def test_after_compaction_the_context_is_due_again_and_shown_memories_may_be_shown_again(store: EventStore) -> None:
    assert store.take_context("claude", "s1")
    store.mark_shown("claude", "s1", ["repo::acme/api::db-port"])
    store.mark_compacted("claude", "s1")
    assert store.shown("claude", "s1") == set()
    assert store.take_context("claude", "s1")
    assert not store.take_context("claude", "s1")


def test_the_event_store_is_readable_by_its_owner_only(folder: str) -> None:
    """It keeps prompts and raw error output as they came (a pasted token included): no group or other access,
    for the database and its log files, and an older file made with the umask's mode is narrowed on open."""
    with EventStore.open(folder) as store:
        store.record_prompt("claude", "s1", "deploy with token ghp_notreallyatoken", root_session=True)
        modes = {p.name: p.stat().st_mode & 0o777 for p in Path(folder).glob(f"{FILENAME}*")}
    assert modes and set(modes.values()) == {0o600}, modes

    os.chmod(Path(folder, FILENAME), 0o644)
    EventStore.open(folder).close()
    assert Path(folder, FILENAME).stat().st_mode & 0o777 == 0o600


def test_of_two_hooks_starting_one_session_at_once_one_gives_the_block(folder: str) -> None:
    """Six processes take the session-start block of one session at the same moment: exactly one gets it."""
    program = (
        "import sys, time; from hivelore.events.store import EventStore\n"
        "store = EventStore.open(sys.argv[1])\n"
        "time.sleep(max(0.0, float(sys.argv[2]) - time.time()))\n"
        "print(store.take_context('claude', 'together'))\n"
    )
    start = str(time.time() + 1.0)
    procs = [
        subprocess.Popen([sys.executable, "-c", program, folder, start], stdout=subprocess.PIPE, text=True)
        for _ in range(6)
    ]
    answers = [proc.communicate(timeout=60)[0].strip() for proc in procs]
    assert sorted(answers) == ["False"] * 5 + ["True"]


def test_a_session_remembers_its_folder_and_whether_it_is_a_subagent(store: EventStore, clock: Clock) -> None:
    store.touch_session("claude", "main", APP)
    clock.advance(days=0.01)
    store.touch_session("claude", "helper", f"{APP}/.worktrees/x", subagent=True, parent="main")
    store.touch_session("claude", "main", APP)
    main, helper = store.session("claude", "main"), store.session("claude", "helper")
    assert (main.subagent, main.parent, main.last_ts > main.started_ts) == (False, "", True)
    assert (helper.subagent, helper.parent, helper.cwd) == (True, "main", f"{APP}/.worktrees/x")
    assert store.session("claude", "unknown") is None


def test_shown_addresses_are_remembered_per_session(store: EventStore) -> None:
    store.mark_shown("claude", "s1", ["repo::acme/api::db-port", "global::reply-style"])
    store.mark_shown("claude", "s1", ["global::reply-style", "branch::acme/api::main::ci"])
    assert store.shown("claude", "s1") == {
        "repo::acme/api::db-port",
        "global::reply-style",
        "branch::acme/api::main::ci",
    }
    assert store.shown("claude", "s2") == set()


# -- prompts ----------------------------------------------------------------------------------


def test_prompts_keep_agent_session_time_text_and_whether_the_session_is_root(store: EventStore, clock: Clock) -> None:
    store.record_prompt("claude", "monday", "I prefer pnpm over npm", root_session=True)
    clock.advance(days=1)
    store.record_prompt("claude", "tuesday-helper", "I prefer pnpm over npm", root_session=False)
    store.record_prompt("codex", "tuesday", "i prefer pnpm over npm!", root_session=True)
    assert store.prompts() == [
        Prompt("claude", "monday", clock.now - DAY, "I prefer pnpm over npm", True),
        Prompt("claude", "tuesday-helper", clock.now, "I prefer pnpm over npm", False),
        Prompt("codex", "tuesday", clock.now, "i prefer pnpm over npm!", True),
    ]
    # what promotion asks: in how many earlier root sessions did the user say it?
    said_in = {p.session_id for p in store.prompts(root_only=True) if "prefer pnpm" in p.text.lower()}
    assert said_in == {"monday", "tuesday"}
    assert [p.session_id for p in store.prompts(agent="codex")] == ["tuesday"]
    assert [p.session_id for p in store.prompts(session_id="monday")] == ["monday"]
    assert [p.session_id for p in store.prompts(since=clock.now)] == ["tuesday-helper", "tuesday"]


def test_a_long_prompt_keeps_its_first_8000_characters(store: EventStore) -> None:
    store.record_prompt("claude", "s1", "x" * 20_000, root_session=True)
    assert store.prompts()[0].text == "x" * 8_000


def test_text_that_sqlite_cannot_encode_is_stored_with_a_replacement(store: EventStore) -> None:
    store.record_prompt("claude", "s1", "from a JSON payload: \ud800", root_session=True)
    assert store.prompts()[0].text == "from a JSON payload: ?"


# -- failures and their fixes -------------------------------------------------------------------


def test_a_failure_signature_is_counted_across_sessions_and_agents(store: EventStore) -> None:
    monday = store.record_failure("claude", "monday", APP, "Bash", "pnpm test", 1, MONDAY_RUN)
    tuesday = store.record_failure("codex", "tuesday", APP, "Bash", "CI=1 pnpm test", 1, TUESDAY_RUN)
    assert (monday.seen_before, tuesday.seen_before) == (0, 1)
    assert tuesday == Failure(
        tool="Bash",
        command="pnpm test",
        exit_code=1,
        fingerprint=monday.fingerprint,
        summary="Error: connect ECONNREFUSED 127.0.0.1:5432",
        seen=2,
        fix=(),
    )


def test_a_real_claude_code_failure_payload_and_its_rerun_the_next_day(store: EventStore) -> None:
    examples = json.loads((FIXTURES / "hook-payloads" / "claude-code" / "PostToolUseFailure.json").read_text())
    payload = next(e["payload"] for e in examples["examples"] if e["name"] == "Bash non-zero exit")
    session, cwd, tool, command = payload["session_id"], payload["cwd"], payload["tool_name"], payload["tool_input"]
    first = store.record_failure("claude", session, cwd, tool, command["command"], 1, payload["error"])
    assert (first.command, first.summary) == ("pytest -q", "FAILED tests/test_cart.py::test_total")
    next_day = payload["error"].replace("0.52s", "0.61s")
    assert store.record_failure("claude", "next-day", cwd, tool, command["command"], 1, next_day).seen_before == 1


def test_another_error_port_or_exit_code_is_another_signature(store: EventStore) -> None:
    store.record_failure("claude", "s1", APP, "Bash", "pnpm test", 1, MONDAY_RUN)
    assert store.record_failure("claude", "s1", APP, "Bash", "pnpm test", 1, REDIS_DOWN).seen_before == 0
    assert store.record_failure("claude", "s1", APP, "Bash", "pnpm test", 2, MONDAY_RUN).seen_before == 0
    assert store.record_failure("claude", "s1", APP, "Bash", "pnpm lint", 1, MONDAY_RUN).seen_before == 0


def test_a_success_resolves_the_failure_and_the_commands_in_between_become_its_fix(store: EventStore) -> None:
    store.record_failure("claude", "s1", APP, "Bash", "pnpm test", 1, MONDAY_RUN)
    assert store.record_success("claude", "s1", APP, "Bash", "docker compose up -d db") == []
    store.record_success("claude", "s1", APP, "Bash", "pg_isready -h 127.0.0.1")
    store.record_success("claude", "s1", APP, "Bash", "docker compose up -d db")  # counted once
    (resolved,) = store.record_success("claude", "s1", APP, "Bash", f"cd {APP} && pnpm test 2>&1 | tail -40")
    assert resolved.command == "pnpm test"
    assert resolved.fix == ("docker compose up -d db", "pg_isready -h 127.0.0.1")
    assert not resolved.rerun
    assert store.record_success("claude", "s1", APP, "Bash", "pnpm test") == [], "already resolved"


def test_the_next_session_hitting_the_same_failure_is_given_the_fix(store: EventStore) -> None:
    store.record_failure("claude", "monday", APP, "Bash", "pnpm test", 1, MONDAY_RUN)
    store.record_success("claude", "monday", APP, "Bash", "docker compose up -d db")
    store.record_success("claude", "monday", APP, "Bash", "pnpm test")

    tuesday = store.record_failure("codex", "tuesday", APP, "Bash", "pnpm test", 1, TUESDAY_RUN)
    assert (tuesday.seen_before, tuesday.fix) == (1, ("docker compose up -d db",))


def test_a_failure_that_passes_when_simply_run_again_remembers_a_rerun(store: EventStore) -> None:
    store.record_failure("claude", "s1", APP, "Bash", "pnpm test", 1, MONDAY_RUN)
    (resolved,) = store.record_success("claude", "s1", APP, "Bash", "pnpm test")
    assert resolved.fix == ("pnpm test",)
    assert resolved.rerun


def test_failed_attempts_and_other_sessions_commands_are_not_part_of_the_fix(store: EventStore) -> None:
    store.record_failure("claude", "s1", APP, "Bash", "pnpm test", 1, MONDAY_RUN)
    store.record_failure("claude", "s1", APP, "Bash", "pnpm db:migrate", 1, MIGRATION_ERROR)
    store.record_success("codex", "elsewhere", APP, "Bash", "rm -rf node_modules")
    store.record_success("claude", "s1", APP, "Bash", "docker compose up -d db")
    store.record_failure("claude", "s1", APP, "Bash", "pnpm test", 1, TUESDAY_RUN)  # same signature, still open
    (resolved,) = store.record_success("claude", "s1", APP, "Bash", "pnpm test")
    assert resolved.fix == ("docker compose up -d db",)
    assert store.friction("claude", "s1") == Friction(failures=3, unresolved=1, max_repeats=0)


def test_a_success_in_another_folder_or_session_resolves_nothing(store: EventStore) -> None:
    store.record_failure("claude", "s1", APP, "Bash", "pnpm test", 1, MONDAY_RUN)
    assert store.record_success("claude", "s1", "/home/dev/src/other", "Bash", "pnpm test") == []
    assert store.record_success("claude", "s2", APP, "Bash", "pnpm test") == []
    assert len(store.record_success("claude", "s1", f"{APP}/", "Bash", "pnpm test")) == 1


def test_an_error_text_is_stored_capped_to_its_head_and_tail(store: EventStore, folder: str) -> None:
    error = "Error: first line\n" + "noise\n" * 10_000 + "Error: last line"
    store.record_failure("claude", "s1", APP, "Bash", "make", 2, error)
    (stored,) = sqlite3.connect(Path(folder, FILENAME)).execute("SELECT error FROM runs").fetchone()
    assert len(stored) < 8_100
    assert stored.startswith("Error: first line") and stored.endswith("Error: last line")
    assert "characters left out" in stored


# -- repeated calls and friction --------------------------------------------------------------


def test_identical_calls_are_counted_per_session(store: EventStore) -> None:
    read = '{"file_path": "src/app.py"}'
    assert [store.record_call("claude", "s1", "Read", read) for _ in range(3)] == [1, 2, 3]
    assert store.record_call("claude", "s1", "Bash", "pytest   -q") == 1
    assert store.record_call("claude", "s1", "Bash", "pytest -q") == 2, "whitespace does not make a call new"
    assert store.record_call("claude", "s1", "Read", '{"file_path": "src/db.py"}') == 1
    assert store.record_call("claude", "s2", "Read", read) == 1


def test_friction_sums_up_a_session_for_the_stop_time_nudge(store: EventStore) -> None:
    assert store.friction("claude", "s1") == Friction(failures=0, unresolved=0, max_repeats=0)
    store.record_failure("claude", "s1", APP, "Bash", "pnpm test", 1, MONDAY_RUN)
    store.record_failure("claude", "s1", APP, "Bash", "pnpm db:migrate", 1, MIGRATION_ERROR)
    store.record_success("claude", "s1", APP, "Bash", "pnpm db:migrate")
    for _ in range(4):
        store.record_call("claude", "s1", "Bash", "pnpm test")
    store.record_call("claude", "s1", "Read", "src/app.py")
    assert store.friction("claude", "s1") == Friction(failures=2, unresolved=1, max_repeats=4)
    assert store.friction("claude", "s2") == Friction(failures=0, unresolved=0, max_repeats=0)


# -- notices held for the next tool result ------------------------------------------------------


def test_notices_are_held_per_session_and_taken_once_oldest_first(store: EventStore, clock: Clock) -> None:
    store.hold_notice("gemini", "g-1", "before your edit of shop/orders.py: heads-up")
    clock.advance(days=0.001)
    store.hold_notice("gemini", "g-1", "before your edit of shop/users.py: heads-up")
    store.hold_notice("gemini", "g-2", "another session's")

    assert store.take_notices("gemini", "g-1") == [
        "before your edit of shop/orders.py: heads-up",
        "before your edit of shop/users.py: heads-up",
    ]
    assert store.take_notices("gemini", "g-1") == []
    assert store.take_notices("claude", "g-2") == []  # a session is agent + id
    assert store.take_notices("gemini", "g-2") == ["another session's"]


def test_an_events_db_from_before_notices_keeps_its_data_and_gets_the_table_when_one_is_held(folder: str) -> None:
    """Schema 2 shipped without the notices table: such a file is not reset (its failures, fixes and prompts
    stay); it has nothing to take, and the table appears with the first notice held (or the next prune)."""
    with EventStore.open(folder) as store:
        store.record_prompt("gemini", "g-1", "I prefer pnpm", root_session=True)
        store.conn.execute("DROP TABLE notices")
    with EventStore.open(folder) as store:
        assert store.take_notices("gemini", "g-1") == []
        store.hold_notice("gemini", "g-1", "heads-up")
        assert store.take_notices("gemini", "g-1") == ["heads-up"]
        assert [p.text for p in store.prompts()] == ["I prefer pnpm"]
        store.conn.execute("DROP TABLE notices")
        assert store.prune(older_than_days=30) == 0
        assert store.take_notices("gemini", "g-1") == []


# -- housekeeping -----------------------------------------------------------------------------


def test_prune_deletes_old_events_but_keeps_signatures_that_have_a_fix(store: EventStore, clock: Clock) -> None:
    store.touch_session("claude", "old", APP)
    store.mark_shown("claude", "old", ["global::reply-style"])
    store.record_prompt("claude", "old", "I prefer pnpm", root_session=True)
    store.record_call("claude", "old", "Bash", "pnpm test")
    store.record_failure("claude", "old", APP, "Bash", "pnpm test", 1, MONDAY_RUN)
    store.record_success("claude", "old", APP, "Bash", "docker compose up -d db")
    store.record_success("claude", "old", APP, "Bash", "pnpm test")
    store.record_failure("claude", "old", APP, "Bash", "pnpm db:migrate", 1, MIGRATION_ERROR)  # never fixed
    store.hold_notice("gemini", "old", "a notice whose tool result never came")
    clock.advance(days=40)
    store.record_prompt("claude", "new", "I prefer pnpm", root_session=True)

    # 1 session, 1 shown, 1 prompt, 4 runs, 1 call, 1 notice, 1 unfixed signature
    assert store.prune(older_than_days=30) == 10
    assert store.take_notices("gemini", "old") == []
    assert [p.session_id for p in store.prompts()] == ["new"]
    assert store.session("claude", "old") is None and store.shown("claude", "old") == set()
    again = store.record_failure("claude", "new", APP, "Bash", "pnpm test", 1, TUESDAY_RUN)
    assert (again.seen_before, again.fix) == (1, ("docker compose up -d db",))
    assert store.record_failure("claude", "new", APP, "Bash", "pnpm db:migrate", 1, MIGRATION_ERROR).seen_before == 0
    assert store.prune(older_than_days=30) == 0


def test_prune_every_so_often_runs_at_most_once_in_that_time(store: EventStore, clock: Clock) -> None:
    """The session-start hook prunes with every_s=one day: the first call of the day deletes, later ones do nothing."""
    store.record_prompt("claude", "old", "I prefer pnpm", root_session=True)
    clock.advance(days=100)
    assert store.prune(older_than_days=90, every_s=86_400) == 1
    store.record_prompt("claude", "s2", "I prefer pnpm", root_session=True)
    clock.advance(days=95)
    assert store.prune(older_than_days=90, every_s=86_400) == 1  # a day and more later: due again
    store.record_prompt("claude", "s3", "I prefer pnpm", root_session=True)
    clock.advance(days=91)
    store.prune(older_than_days=90, every_s=86_400)
    clock.advance(days=1 / 24)
    store.record_prompt("claude", "s4", "x", root_session=True)
    assert store.prune(older_than_days=0, every_s=86_400) is None  # pruned an hour ago: not due
    assert [p.session_id for p in store.prompts()] == ["s4"]


# -- several agents at once ---------------------------------------------------------------------

WORKER = """
import os, sys, time
from hivelore.events.store import EventStore
folder, ready, go, session, what, times, error = sys.argv[1:8]
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.001)
store = EventStore.open(folder)
for _ in range(int(times)):
    if what == "failure":
        print(store.record_failure("claude", session, "/app", "Bash", "pnpm test", 1, error).seen)
    elif what == "notices":
        print(*store.take_notices("gemini", "shared"))
    else:
        print(store.record_call("claude", "shared", "Bash", "pnpm test"))
"""


def run_together(tmp_path: Path, folder: str, processes: int, what: str, times: int = 1) -> list[int]:
    """Start real processes, release them at the same moment, and collect the numbers they print."""
    go = tmp_path / "go"
    procs = []
    for n in range(processes):
        ready = tmp_path / f"ready-{n}"
        args = [folder, str(ready), str(go), f"session-{n}", what, str(times), MONDAY_RUN]
        procs.append(subprocess.Popen([sys.executable, "-c", WORKER, *args], stdout=subprocess.PIPE, text=True))
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("ready-*"))) < processes and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    outputs = [proc.communicate(timeout=60)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * processes
    return sorted(int(line) for output in outputs for line in output.split())


def test_six_agents_recording_the_same_failure_at_once_count_six(tmp_path: Path, folder: str) -> None:
    # the folder is new: the six processes also race to create events.db
    assert run_together(tmp_path, folder, processes=6, what="failure") == [1, 2, 3, 4, 5, 6]
    with EventStore.open(folder) as store:
        assert store.record_failure("claude", "later", "/app", "Bash", "pnpm test", 1, TUESDAY_RUN).seen_before == 6


def test_parallel_repeated_calls_lose_no_count(tmp_path: Path, folder: str) -> None:
    EventStore.open(folder).close()
    assert run_together(tmp_path, folder, processes=6, what="call", times=25) == list(range(1, 151))


def test_tool_results_taking_the_held_notices_at_once_get_each_exactly_once(tmp_path: Path, folder: str) -> None:
    with EventStore.open(folder) as store:
        for number in range(1, 41):
            store.hold_notice("gemini", "shared", str(number))
    assert run_together(tmp_path, folder, processes=6, what="notices") == list(range(1, 41))


# -- a damaged or outdated events.db ------------------------------------------------------------


def open_for_a_hook(folder: str) -> EventStore | None:
    """How a hook is meant to open the store: never crash, skip when busy, start over when unusable."""
    try:
        return EventStore.open(folder)
    except EventStoreBusy:
        return None
    except EventStoreUnavailable:
        return reset(folder)


def test_a_corrupt_events_db_is_unavailable_and_reset_starts_over(folder: str) -> None:
    Path(folder).mkdir()
    Path(folder, FILENAME).write_bytes(b"this is not a database, it was truncated by a full disk\n" * 100)
    with pytest.raises(EventStoreUnavailable, match="reset discards and recreates it"):
        EventStore.open(folder)
    store = open_for_a_hook(folder)
    store.touch_session("claude", "s1", APP)
    assert store.take_context("claude", "s1")


def test_an_events_db_of_another_schema_version_is_unavailable_until_reset(folder: str) -> None:
    with EventStore.open(folder) as store:
        store.record_prompt("claude", "s1", "I prefer pnpm", root_session=True)
        store.conn.execute("UPDATE meta SET value = '0' WHERE name = 'schema'")
    with pytest.raises(EventStoreUnavailable, match=f"has schema 0, this hivelore needs {SCHEMA_VERSION}"):
        EventStore.open(folder)
    with reset(folder) as store:
        assert store.prompts() == []


def test_a_database_that_is_not_an_event_store_is_left_alone(folder: str) -> None:
    Path(folder).mkdir()
    sqlite3.connect(Path(folder, FILENAME)).execute("CREATE TABLE notes (text TEXT)")
    with pytest.raises(EventStoreUnavailable, match="not a hivelore event store"):
        EventStore.open(folder)
    untouched = sqlite3.connect(Path(folder, FILENAME))
    assert untouched.execute("SELECT name FROM sqlite_master").fetchall() == [("notes",)]
    assert untouched.execute("PRAGMA journal_mode").fetchone() == ("delete",)


def test_damage_noticed_after_opening_is_unavailable_too(store: EventStore, folder: str) -> None:
    sqlite3.connect(Path(folder, FILENAME)).execute("DROP TABLE calls")
    with pytest.raises(EventStoreUnavailable) as caught:
        store.record_call("claude", "s1", "Bash", "pnpm test")
    assert not isinstance(caught.value, EventStoreBusy)


def test_a_write_lock_held_too_long_is_reported_as_busy(folder: str) -> None:
    EventStore.open(folder).close()
    holder = sqlite3.connect(Path(folder, FILENAME), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    with EventStore.open(folder, timeout=0.05) as store:
        with pytest.raises(EventStoreBusy):
            store.record_call("claude", "s1", "Bash", "pnpm test")
        assert store.shown("claude", "s1") == set(), "reading does not wait for writers in WAL mode"
    holder.execute("ROLLBACK")


# -- normalising commands -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "normalised"),
    [
        ("pnpm test", "pnpm test"),
        ("  pnpm   test\n", "pnpm test"),
        ("FOO=1 pnpm test", "pnpm test"),
        ("CI=true NODE_OPTIONS='--max-old-space-size=4096' pnpm test", "pnpm test"),
        ('env PGPORT=5433 DSN="postgres://x y" pnpm test', "pnpm test"),
        (f"pytest {APP}/tests/test_cart.py -q", "pytest tests/test_cart.py -q"),
        (f"ls {APP}", "ls ."),
        (f"cd {APP} && pnpm test", "pnpm test"),
        ("pnpm test 2>&1 | tail -50", "pnpm test"),
        ("pnpm test 2>&1 | head -n 20 | tail -5", "pnpm test"),
        # kept as they are:
        (f"cat {APP}-old/README.md", f"cat {APP}-old/README.md"),  # a sibling folder is not under cwd
        ("cat /etc/hosts", "cat /etc/hosts"),
        ("git commit -m 'FOO=1 stays'", "git commit -m 'FOO=1 stays'"),
        ("pnpm test | grep FAIL", "pnpm test | grep FAIL"),  # a filter changes what ran
        ("cd packages/web && pnpm test", "cd packages/web && pnpm test"),
        ("FOO=1", "FOO=1"),
    ],
)
def test_normalise_command(command: str, normalised: str) -> None:
    assert normalise_command(command, APP) == normalised
    assert normalise_command(command, APP + "/") == normalised


def test_a_very_long_command_keeps_its_start_and_a_hash_of_the_whole() -> None:
    script = "python - <<'EOF'\n" + "print('hello')\n" * 5_000 + "EOF"
    normalised = normalise_command(script, APP)
    assert len(normalised) < 2_100
    assert normalised.startswith("python - <<'EOF' print('hello') print('hello')")
    changed_at_the_end = script.removesuffix("EOF") + "print('bye')\nEOF"
    assert normalise_command(changed_at_the_end, APP) != normalised


# -- fingerprints -----------------------------------------------------------------------------

RUNNER_OUTPUTS = sorted(TEST_OUTPUT.glob("*/*.txt"))
PROJECTS = {"pytest": "pyproj", "unittest": "pyproj", "jest": "jsproj", "go-test": "goproj", "cargo-test": "rsproj"}


def another_day_another_user(output: str) -> str:
    """The same failing run again: other timings, thread ids, object addresses, build hashes and user."""
    output = re.sub(r"\b(\d+)\.(\d+)( ?m?s)\b", lambda m: f"{int(m[1]) + 3}.{m[2][::-1]}7{m[3]}", output)
    output = re.sub(r"\((\d{5})\)", lambda m: f"({int(m[1]) + 977})", output)
    output = re.sub(r"0x[0-9a-f]{12}", "0x7f00c0ffee42", output)
    output = re.sub(r"-[0-9a-f]{16}\b", "-0123456789abcdef", output)
    return output.replace("/home/dev/", "/Users/alice/")


@pytest.mark.parametrize("path", RUNNER_OUTPUTS, ids=lambda p: p.name)
def test_the_same_run_another_day_by_another_user_has_the_same_fingerprint(path: Path) -> None:
    output = path.read_text()
    project = "/home/dev/" + PROJECTS[path.parent.name]
    rerun = another_day_another_user(output)
    assert rerun != output
    assert fingerprint(rerun, project.replace("/home/dev/", "/Users/alice/")) == fingerprint(output, project)


def test_an_edit_above_the_failing_line_does_not_change_the_fingerprint() -> None:
    output = (TEST_OUTPUT / "unittest" / "unittest-default.txt").read_text()
    shifted = re.sub(r"line (\d+)", lambda m: f"line {int(m[1]) + 12}", output)
    assert shifted != output
    assert fingerprint(shifted) == fingerprint(output)


def test_different_failures_have_different_fingerprints() -> None:
    distinct_failures = [
        "pytest/pytest-q.txt",
        "pytest/pytest-x-q.txt",  # stopped at the first failure
        "pytest/pytest-collection-error.txt",
        "pytest/pytest-syntax-error.txt",
        "unittest/unittest-default.txt",
        "jest/jest-default.txt",
        "go-test/go-test.txt",
        "go-test/go-test-build-failed.txt",  # plus a package that does not compile
        "cargo-test/cargo-test.txt",
        "cargo-test/cargo-test-no-fail-fast.txt",  # plus the integration test
    ]
    prints = {fingerprint((TEST_OUTPUT / name).read_text()) for name in distinct_failures}
    assert len(prints) == len(distinct_failures)
    assert len({fingerprint(MONDAY_RUN), fingerprint(REDIS_DOWN), fingerprint(MIGRATION_ERROR)}) == 3


def test_the_header_of_a_run_does_not_matter() -> None:
    """pytest's default output adds the platform, rootdir and plugins to -q's; the failures are the same."""
    default = (TEST_OUTPUT / "pytest" / "pytest-default.txt").read_text()
    quiet = (TEST_OUTPUT / "pytest" / "pytest-q.txt").read_text()
    assert fingerprint(default) == fingerprint(quiet)


def test_what_a_fingerprint_is_made_of() -> None:
    assert error_lines(MONDAY_RUN, APP) == [
        "❯ tests/orders.test.ts (<n> tests | <n> failed) <dur>",
        "× orders > creates an order <dur>",
        "→ connect ECONNREFUSED 127.0.0.1:5432",
        "Failed Tests 1",
        "FAIL tests/orders.test.ts > orders > creates an order",
        "Error: connect ECONNREFUSED 127.0.0.1:5432",
        "Test Files <n> failed | <n> passed (<n>)",
        "Tests <n> failed | <n> passed (<n>)",
        "ELIFECYCLE Test failed. See above for more details.",
    ]


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (
            "Error: lock held by 7c9e6679-7425-40de-944b-e07fc1f90ae7",
            "Error: lock held by 16fd2706-8baf-433b-82eb-8c7fada847da",
        ),
        ("2026-11-30T12:14:03.123Z ERROR worker crashed", "2026-12-01T08:00:59.001Z ERROR worker crashed"),
        ("[12:14:03] error: build failed", "[08:00:59] error: build failed"),
        ("TypeError at <Foo object at 0x7fd48fa4b8c0>", "TypeError at <Foo object at 0x7f5f9a398770>"),
        ("error: image sha 3f9a2c1d0b not found", "error: image sha 8e1b7a6c5d not found"),
        ("FAILED in 0.53s", "FAILED in 12.9s"),
        ("Timeout of 2000ms exceeded", "Timeout of 2500ms exceeded"),
        ("src/app.ts(12,5): error TS2345: Argument is wrong", "src/app.ts(40,9): error TS2345: Argument is wrong"),
        ("panicked at src/lib.rs:10:22", "panicked at src/lib.rs:31:7"),
        (
            "error: cannot open /tmp/pytest-of-dev/pytest-12/db0/x.sqlite",
            "error: cannot open /tmp/pytest-of-dev/pytest-13/db0/x.sqlite",
        ),
        ("Error: EACCES /var/folders/xy/k2j3h4/T/tmpa8f3kd_x", "Error: EACCES /var/folders/ab/q9w8e7/T/tmpz0x9c8_v"),
        ("Killed: process 48211 used 8123 MB", "Killed: process 51007 used 8411 MB"),
        ("\x1b[31mFAIL\x1b[0m src/app.test.ts", "FAIL src/app.test.ts"),
        ("Error: no such file /home/dev/notes.txt", "Error: no such file /home/alice/notes.txt"),
        ("Tests: 1 failed, 41 passed, 42 total", "Tests: 1 failed, 57 passed, 58 total"),
    ],
)
def test_volatile_details_do_not_change_the_fingerprint(one: str, other: str) -> None:
    assert fingerprint(one) == fingerprint(other)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Error: connect ECONNREFUSED 127.0.0.1:5432", "Error: connect ECONNREFUSED 127.0.0.1:6379"),
        (
            "Error: listen EADDRINUSE: address already in use :::3000",
            "Error: listen EADDRINUSE: address already in use :::8080",
        ),
        ("could not connect to server on port 5432", "could not connect to server on port 5433"),
        ("Error: connect ECONNREFUSED 127.0.0.1:5432", "Error: listen EADDRINUSE 127.0.0.1:5432"),
        ("ModuleNotFoundError: No module named 'calc'", "ModuleNotFoundError: No module named 'utils'"),
        (
            "npm ERR! 404 Not Found - GET https://registry.npmjs.org/lodahs",
            "npm ERR! 403 Forbidden - GET https://registry.npmjs.org/lodahs",
        ),
        ("error[E0308]: mismatched types", "error[E0382]: borrow of moved value"),
    ],
)
def test_a_different_problem_changes_the_fingerprint(one: str, other: str) -> None:
    assert fingerprint(one) != fingerprint(other)


def test_an_output_without_any_error_word_is_fingerprinted_by_its_last_lines() -> None:
    def run(result: str) -> str:
        return "compiling...\n" * 50 + f"step 1 ok\nstep 2 ok\nresult: {result}\n"

    assert error_lines(run("42 != 41")) == ["compiling...", "step 1 ok", "step 2 ok", "result: 42 != 41"]
    assert fingerprint(run("42 != 41")) != fingerprint(run("7 != 8"))
    assert re.fullmatch(r"[0-9a-f]{16}", fingerprint(""))


def test_a_huge_output_is_fingerprinted_quickly() -> None:
    huge = "".join(f"FAILED tests/test_{n}.py::test_x - AssertionError\n" for n in range(200_000))
    started = time.perf_counter()
    assert error_lines(huge)[0] == "FAILED tests/test_0.py::test_x"
    assert time.perf_counter() - started < 0.5


# Pieces the normalising patterns look for, so that generated texts exercise them and not only random characters.
PIECES = [
    *("Error", "error:", "FAILED", "● ", "E ", " - ", " ", "  ", "\n", "\t", ":", "::", "5432", "port "),
    *("0x7f", "1.5s", "12:03:44", "2026-11-30", "/tmp/", "/home/dev/", APP, "/", "'", '"', "=", "FOO=1 "),
    *("env ", "cd ", " && ", "2>&1", " | tail -5", ".py:10:3", "(12,5)", "line 7", "3 passed", "\x1b[31m"),
    *("\ud800", "é", "⎯⎯⎯"),
]
messy_text = st.one_of(st.text(max_size=3_000), st.lists(st.sampled_from(PIECES), max_size=80).map("".join))
folders = st.one_of(st.sampled_from(["", "/", APP, APP + "/", "C:\\work\\app"]), st.text(max_size=40))


@settings(max_examples=300, deadline=None)
@given(messy_text, folders)
def test_fingerprint_never_raises_and_is_deterministic(error: str, cwd: str) -> None:
    first = fingerprint(error, cwd)
    assert re.fullmatch(r"[0-9a-f]{16}", first)
    assert fingerprint(error, cwd) == first


@settings(max_examples=300, deadline=None)
@given(messy_text, folders)
def test_normalise_command_never_raises_and_is_deterministic(command: str, cwd: str) -> None:
    first = normalise_command(command, cwd)
    assert first == " ".join(first.split())
    assert normalise_command(command, cwd) == first
