"""The team layer by example: three developers' agents sharing one machine's team.db in the shop repository."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import git, make_repo
from hypothesis import given, settings
from hypothesis import strategies as st

from hivelore.team.model import NoSuchIntent, TeamUnavailable, file_claim, file_claim_ids
from hivelore.team.store import FILENAME, SqliteTeam, developer_for
from hivelore.team.testruns import TestRun, parse

REPO = "acme/shop"
PLACE_ORDER = "shop/api.py::place_order"
CHECKOUT = "shop/orders.py::checkout"
TOTAL = "shop/orders.py::total"
CURRENT_USER = "shop/auth.py::current_user"
VALIDATE_TOKEN = "shop/tokens.py::validate_token"
DECODE_JWT = "shop/tokens.py::decode_jwt"
B64 = "shop/encoding.py::b64decode"
SEND_RECEIPT = "shop/emails.py::send_receipt"
SHOP_CALLS = {
    PLACE_ORDER: [CHECKOUT, SEND_RECEIPT],  # the shared caller of checkout and send_receipt
    CHECKOUT: [CURRENT_USER, TOTAL],
    CURRENT_USER: [VALIDATE_TOKEN],
    VALIDATE_TOKEN: [DECODE_JWT],
    DECODE_JWT: [B64],
}
REFRESH = "tests/test_auth.py::test_refresh_session"
FAILING_REFRESH = TestRun("pytest", "failed", (REFRESH,), (), 11, 0)
ALL_PASS = TestRun("pytest", "passed", (), (), 12, 0)
HOUR = 3_600


class CallGraph:
    """A small real call graph over a dict (caller -> callees): what team.py asks of `codegraph.Graph`."""

    def __init__(self, calls: dict[str, list[str]]) -> None:
        self.calls = calls
        self.walks = 0  # how often `within` ran

    def callees(self, symbol: str) -> list[str]:
        return self.calls.get(symbol, [])

    def callers(self, symbol: str) -> list[str]:
        return [caller for caller, callees in self.calls.items() if symbol in callees]

    def within(self, symbol: str, hops: int, direction: str) -> dict[str, list[str]]:
        """{reached: shortest call path, caller first}, breadth first along one direction."""
        self.walks += 1
        step = self.callees if direction == "callees" else self.callers
        paths, frontier = {symbol: [symbol]}, [symbol]  # paths from `symbol` along the walk
        for _ in range(hops):
            frontier = [
                paths.setdefault(nxt, [*paths[node], nxt])[-1]
                for node in frontier
                for nxt in step(node)
                if nxt not in paths
            ]
        del paths[symbol]
        return {target: path[::-1] if direction == "callers" else path for target, path in paths.items()}


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, hours: float = 0, days: float = 0) -> None:
        self.now += hours * HOUR + days * 24 * HOUR


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def home(tmp_path: Path) -> str:
    return str(tmp_path / "hivelore-home")


@pytest.fixture
def team(home: str, clock: Clock) -> Iterator[SqliteTeam]:
    with SqliteTeam.open(home, clock=clock) as team:
        yield team


@pytest.fixture
def graph() -> CallGraph:
    return CallGraph(SHOP_CALLS)


# -- the shop story -----------------------------------------------------------------------------


def test_the_shop_story_with_three_developers(team: SqliteTeam, graph: CallGraph, clock: Clock) -> None:
    # dev-a's agent starts "add JWT support" and, before editing, claims what it is about to change
    jwt = team.intent_for_session("claude", "a-1", "dev-a", REPO, "add JWT support\n\nuse pyjwt, RS256")
    assert (jwt.title, jwt.owner, jwt.status) == ("add JWT support", "dev-a", "active")
    assert team.claim(jwt.id, [VALIDATE_TOKEN, SEND_RECEIPT]) == 2
    assert team.claim(jwt.id, [VALIDATE_TOKEN]) == 0  # the next edit of it claims nothing new
    assert team.active_claims(REPO) == [(SEND_RECEIPT, jwt, "dev-a"), (VALIDATE_TOKEN, jwt, "dev-a")]
    team.record_change(jwt.id, [VALIDATE_TOKEN])

    # dev-b's agent is about to edit checkout, which calls current_user, which calls validate_token
    speedup = team.intent_for_session("codex", "b-1", "dev-b", REPO, "make checkout faster")
    (conflict,) = team.conflicts(graph, REPO, [CHECKOUT], "dev-b")  # send_receipt shares only a caller
    assert conflict.path == (CHECKOUT, CURRENT_USER, VALIDATE_TOKEN)
    assert (conflict.developer, conflict.intent, conflict.direction) == ("dev-a", jwt, "callees")
    assert conflict.describe() == (
        "checkout → current_user → validate_token: validate_token is being changed by dev-a"
        f' (task {jwt.id}: "add JWT support")'
    )
    assert team.mark_warned("codex", "b-1", conflict.key)  # shown once …
    assert not team.mark_warned("codex", "b-1", conflict.key)  # … and not again for the same edit

    # dev-a's first run fails test_refresh_session; running it again unchanged adds up, no new row
    first = team.record_attempt(jwt.id, "pytest -q", FAILING_REFRESH)
    assert (first.failed, first.symbols, first.count, first.developer) == ((REFRESH,), (VALIDATE_TOKEN,), 1, "dev-a")
    assert team.record_attempt(jwt.id, "pytest -q", FAILING_REFRESH).count == 2
    rs256 = team.decide(
        "access tokens are RS256 JWTs; validate_token checks exp and aud", [VALIDATE_TOKEN], intent_id=jwt.id
    )
    team.note(jwt.id, "validate_token done; refresh flow half done")
    team.handoff(jwt.id, "test_refresh_session still fails on expired refresh tokens")
    assert team.conflicts(graph, REPO, [CHECKOUT], "dev-b") == []  # a handed-off intent warns nobody

    # the next morning dev-c resumes the task and gets everything in one answer
    clock.advance(hours=14)
    resumed = team.resume(jwt.id, "dev-c", "claude", "c-1")
    assert (resumed.intent.owner, resumed.intent.status) == ("dev-c", "active")
    assert [claim.symbol for claim in resumed.claims] == [SEND_RECEIPT, VALIDATE_TOKEN]
    assert [(attempt.id, attempt.failed, attempt.count) for attempt in resumed.failed] == [(first.id, (REFRESH,), 2)]
    assert resumed.decisions == [rs256]
    assert [(note.kind, note.developer) for note in resumed.notes] == [("progress", "dev-a"), ("handoff", "dev-a")]
    assert [claim.developer for claim in team.claims(jwt.id)] == ["dev-a", "dev-a"]  # who claimed them stays
    assert team.intent_for_session("claude", "c-1", "dev-c", REPO) == resumed.intent
    (conflict,) = team.conflicts(graph, REPO, [CHECKOUT], "dev-b")
    assert conflict.developer == "dev-c"

    # dev-c fixes it: the passing run resolves the failure, once
    team.record_change(jwt.id, [VALIDATE_TOKEN])
    fixed = team.record_attempt(jwt.id, "pytest -q", ALL_PASS)
    assert fixed.resolves == (first.id,)
    assert team.attempts(jwt.id)[0].resolved_by == fixed.id
    again = team.record_attempt(jwt.id, "pytest -q", ALL_PASS)
    assert (again.id, again.count, again.resolves) == (fixed.id, 2, (first.id,))

    # a new decision on the same code supersedes the old one; the history stays
    hs256 = team.decide(
        "tokens are HS256 after all: one service signs and checks them", [VALIDATE_TOKEN], intent_id=jwt.id
    )
    why = team.why(REPO, VALIDATE_TOKEN)
    assert (why.current, [d.id for d in why.superseded]) == ([hs256], [rs256.id])
    assert not why.superseded[0].active
    assert why.people == ["dev-a", "dev-c"]  # dev-a claimed it, ran it and decided on it; dev-c ran it and decided
    assert [(e.developer, e.score) for e in team.who_knows(graph, REPO, VALIDATE_TOKEN)] == [("dev-a", 6), ("dev-c", 5)]
    board = [(card.intent.id, card.intent.owner, card.claims, card.failed) for card in team.task_board(REPO)]
    assert board == [(jwt.id, "dev-c", 2, 0), (speedup.id, "dev-b", 0, 0)]


# -- conflicts ----------------------------------------------------------------------------------


def dev_a_claims(team: SqliteTeam, *symbols: str) -> int:
    intent = team.create_intent("dev-a", REPO, "add JWT support")
    team.claim(intent.id, symbols)
    return intent.id


def test_a_shared_caller_alone_is_not_a_conflict(team: SqliteTeam, graph: CallGraph) -> None:
    dev_a_claims(team, SEND_RECEIPT)  # place_order calls both checkout and send_receipt
    assert team.conflicts(graph, REPO, [CHECKOUT], "dev-b") == []


def test_a_claimed_caller_is_a_conflict_with_the_path_in_call_order(team: SqliteTeam, graph: CallGraph) -> None:
    dev_a_claims(team, VALIDATE_TOKEN)
    (conflict,) = team.conflicts(graph, REPO, [DECODE_JWT], "dev-b")
    assert (conflict.path, conflict.direction, conflict.distance) == ((VALIDATE_TOKEN, DECODE_JWT), "callers", 1)


def test_editing_the_claimed_symbol_itself_is_a_conflict(team: SqliteTeam, graph: CallGraph) -> None:
    dev_a_claims(team, VALIDATE_TOKEN)
    (conflict,) = team.conflicts(graph, REPO, [VALIDATE_TOKEN], "dev-b")
    assert (conflict.path, conflict.direction, conflict.distance) == ((VALIDATE_TOKEN,), "same", 0)


def test_claims_beyond_three_call_hops_are_not_conflicts(team: SqliteTeam, graph: CallGraph) -> None:
    dev_a_claims(team, B64)  # checkout → current_user → validate_token → decode_jwt → b64decode
    assert team.conflicts(graph, REPO, [CHECKOUT], "dev-b") == []
    assert [c.distance for c in team.conflicts(graph, REPO, [CHECKOUT], "dev-b", hops=4)] == [4]


def test_each_claim_is_reported_once_with_its_shortest_path(team: SqliteTeam, graph: CallGraph) -> None:
    dev_a_claims(team, VALIDATE_TOKEN, TOTAL)
    conflicts = team.conflicts(graph, REPO, [PLACE_ORDER, CHECKOUT, CURRENT_USER], "dev-b")
    assert [(c.claimed, c.path) for c in conflicts] == [
        (TOTAL, (CHECKOUT, TOTAL)),
        (VALIDATE_TOKEN, (CURRENT_USER, VALIDATE_TOKEN)),
    ]


def test_own_claims_finished_and_idle_intents_do_not_warn(team: SqliteTeam, graph: CallGraph, clock: Clock) -> None:
    intent_id = dev_a_claims(team, VALIDATE_TOKEN)
    assert team.conflicts(graph, REPO, [CHECKOUT], "dev-a") == []
    assert team.conflicts(graph, "acme/other-repo", [CHECKOUT], "dev-b") == []
    clock.advance(days=8)  # dev-a's session died without a handoff a week ago
    assert team.conflicts(graph, REPO, [CHECKOUT], "dev-b") == []
    team.claim(intent_id, [CURRENT_USER])  # activity wakes it up
    assert len(team.conflicts(graph, REPO, [CHECKOUT], "dev-b")) == 2
    team.done(intent_id)
    assert team.conflicts(graph, REPO, [CHECKOUT], "dev-b") == []


def test_when_nobody_else_claims_anything_the_graph_is_not_walked(team: SqliteTeam, graph: CallGraph) -> None:
    dev_a_claims(team, VALIDATE_TOKEN)
    assert team.conflicts(graph, REPO, [CHECKOUT], "dev-a") == []
    assert graph.walks == 0


def test_warnings_are_remembered_per_session(home: str, team: SqliteTeam) -> None:
    assert not team.warned("codex", "b-1", "checkout-vs-validate_token")
    assert team.mark_warned("codex", "b-1", "checkout-vs-validate_token")
    with SqliteTeam.open(home) as another_process:
        assert another_process.warned("codex", "b-1", "checkout-vs-validate_token")
        assert another_process.mark_warned("codex", "b-2", "checkout-vs-validate_token")  # a new session


# -- attempts: deduplication and resolves -------------------------------------------------------


def test_a_failure_that_comes_back_after_a_fix_is_a_new_attempt(team: SqliteTeam) -> None:
    intent_id = dev_a_claims(team, VALIDATE_TOKEN)
    first = team.record_attempt(intent_id, "pytest -q", FAILING_REFRESH)
    other = team.record_attempt(intent_id, "pytest -q", TestRun("pytest", "failed", ("tests/test_x.py::test_y",)))
    assert team.record_attempt(intent_id, "pytest  -q", FAILING_REFRESH).id == first.id
    team.record_attempt(intent_id, "pytest -q", ALL_PASS)
    regression = team.record_attempt(intent_id, "pytest -q", FAILING_REFRESH)
    assert regression.id not in (first.id, other.id)
    assert [(a.outcome, a.count, a.resolved_by is not None) for a in team.attempts(intent_id)] == [
        ("failed", 2, True),
        ("failed", 1, True),
        ("passed", 1, False),
        ("failed", 1, False),
    ]


RUNS = [
    FAILING_REFRESH,
    ALL_PASS,
    TestRun("pytest", "failed", ("tests/test_x.py::test_y",)),
    TestRun("pytest", "error", (), ("tests/test_broken.py",)),
]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(RUNS), st.sampled_from(["pytest", "pytest -x"])), max_size=25))
def test_every_run_is_counted_once_and_each_failure_resolved_at_most_once(runs: list[tuple[TestRun, str]]) -> None:
    with tempfile.TemporaryDirectory() as home, SqliteTeam.open(home) as team:
        intent_id = team.create_intent("dev-a", REPO, "add JWT support").id
        for run, command in runs:
            team.record_change(intent_id, [VALIDATE_TOKEN])
            team.record_attempt(intent_id, command, run)
        attempts = team.attempts(intent_id)
        assert sum(attempt.count for attempt in attempts) == len(runs)
        open_keys = [(a.outcome, a.failed, a.errors) for a in attempts if a.resolved_by is None]
        assert len(open_keys) == len(set(open_keys))  # an open failure is never split over two rows
        resolved = [attempt_id for attempt in attempts for attempt_id in attempt.resolves]
        assert len(resolved) == len(set(resolved)) == sum(a.resolved_by is not None for a in attempts)
        assert all(a.outcome != "passed" for a in attempts if a.resolved_by is not None)


def test_a_pass_resolves_failures_on_the_symbols_it_changed_in_any_intent(team: SqliteTeam) -> None:
    jwt = dev_a_claims(team, VALIDATE_TOKEN)
    team.record_change(jwt, [VALIDATE_TOKEN])
    broken = team.record_attempt(jwt, "pytest tests/test_auth.py", FAILING_REFRESH)
    unrelated = team.create_intent("dev-b", REPO, "receipts")
    team.record_change(unrelated.id, [SEND_RECEIPT])
    assert team.record_attempt(unrelated.id, "pytest", ALL_PASS).resolves == ()

    hotfix = team.create_intent("dev-b", REPO, "hotfix token expiry")
    team.record_change(hotfix.id, [VALIDATE_TOKEN, DECODE_JWT])
    assert team.record_attempt(hotfix.id, "pytest", ALL_PASS).resolves == (broken.id,)


def test_a_pass_of_the_same_command_resolves_the_intents_failures_without_changes(team: SqliteTeam) -> None:
    intent_id = dev_a_claims(team)
    flaky = team.record_attempt(intent_id, "go test ./...", TestRun("go", "failed", ("shop.TestCheckout",)))
    build = team.record_attempt(intent_id, "go test ./...", TestRun("go", "error", (), ("shop/broken",)))
    other_command = team.record_attempt(intent_id, "go test ./tokens", TestRun("go", "failed", ("tokens.TestJWT",)))
    passed = team.record_attempt(intent_id, "go test ./...", TestRun("go", "passed"))
    assert passed.resolves == (flaky.id, build.id)
    assert team.attempts(intent_id)[2] == other_command


def test_attempts_keep_the_names_a_real_runner_output_gave(team: SqliteTeam) -> None:
    output = (Path(__file__).parent / "fixtures" / "test-output" / "pytest" / "pytest-q.txt").read_text()
    attempt = team.record_attempt(dev_a_claims(team), "pytest -q tests/test_calc.py", parse(output, "pytest -q", 1))
    assert attempt.failed == (
        "tests/test_calc.py::TestDivide::test_divide_by_zero",
        "tests/test_calc.py::test_add_wrong",
        "tests/test_calc.py::test_parse_port[x80-80]",
    )


# -- decisions ----------------------------------------------------------------------------------


def test_a_decision_is_superseded_only_on_the_symbols_a_newer_one_covers(team: SqliteTeam, clock: Clock) -> None:
    both = team.decide("tokens live 15 minutes", [VALIDATE_TOKEN, DECODE_JWT], developer="dev-a", repo=REPO)
    clock.advance(hours=1)
    newer = team.decide("tokens live 5 minutes", [VALIDATE_TOKEN], developer="dev-b", repo=REPO)
    assert team.decisions(REPO, VALIDATE_TOKEN) == [newer]
    assert [d.id for d in team.decisions(REPO, VALIDATE_TOKEN, include_superseded=True)] == [newer.id, both.id]
    (still,) = team.decisions(REPO, DECODE_JWT)
    assert (still.id, still.current, still.active) == (both.id, (DECODE_JWT,), True)
    elsewhere = team.decide("tokens live 1 hour", [VALIDATE_TOKEN], developer="dev-c", repo="acme/other")
    assert team.decisions(REPO, VALIDATE_TOKEN) == [newer] and elsewhere.active


def test_a_decision_needs_a_text_and_an_author(team: SqliteTeam) -> None:
    with pytest.raises(ValueError, match="needs a text"):
        team.decide("  ", [VALIDATE_TOKEN], developer="dev-a", repo=REPO)
    with pytest.raises(ValueError, match="a developer and a repo"):
        team.decide("use RS256", [VALIDATE_TOKEN], developer="dev-a")


# -- queries ------------------------------------------------------------------------------------


def test_who_knows_counts_neighbours_less(team: SqliteTeam, graph: CallGraph) -> None:
    jwt = dev_a_claims(team, VALIDATE_TOKEN)  # dev-a: a claim on it
    team.decide("current_user returns None for anonymous users", [CURRENT_USER], developer="dev-b", repo=REPO)
    payments = team.create_intent("dev-c", REPO, "payments")
    team.claim(payments.id, [TOTAL])  # two hops away: not a neighbour
    team.record_change(jwt, [VALIDATE_TOKEN])
    team.record_attempt(jwt, "pytest", FAILING_REFRESH)  # dev-a: an attempt on it
    experts = team.who_knows(graph, REPO, VALIDATE_TOKEN)
    assert [(e.developer, e.score, e.claims, e.attempts, e.decisions) for e in experts] == [
        ("dev-a", 3.0, 1, 1, 0),
        ("dev-b", 1.5, 0, 0, 1),  # a decision on a caller, one hop away
    ]


def test_history_tells_what_failed_here_before(team: SqliteTeam, clock: Clock) -> None:
    jwt = dev_a_claims(team, VALIDATE_TOKEN)
    team.record_change(jwt, [VALIDATE_TOKEN])
    failure = team.record_attempt(jwt, "pytest", FAILING_REFRESH)
    team.record_change(jwt, [VALIDATE_TOKEN])
    team.record_attempt(jwt, "pytest", ALL_PASS)
    decision = team.decide("refresh tokens rotate on use", [VALIDATE_TOKEN], intent_id=jwt)
    history = team.history(REPO, [VALIDATE_TOKEN, CHECKOUT])
    assert [(a.id, a.resolved_by is not None) for a in history.failed] == [(failure.id, True)]
    assert history.decisions == [decision]
    assert team.history(REPO, [CHECKOUT]).failed == []


def test_the_task_board_shows_owner_status_claims_failures_and_the_last_note(team: SqliteTeam, clock: Clock) -> None:
    jwt = dev_a_claims(team, VALIDATE_TOKEN, CURRENT_USER)
    team.record_attempt(jwt, "pytest", FAILING_REFRESH)
    team.handoff(jwt, "refresh flow half done")
    clock.advance(hours=1)
    receipts = team.intent_for_session("claude", "b-1", "dev-b", REPO, "send receipts by email")
    clock.advance(hours=1)
    done = team.create_intent("dev-c", REPO, "old task")
    team.done(done.id)
    board = team.task_board(REPO)
    assert [(c.intent.title, c.intent.owner, c.intent.status, c.claims, c.failed) for c in board] == [
        ("send receipts by email", "dev-b", "active", 0, 0),
        ("add JWT support", "dev-a", "handed_off", 2, 1),
        ("old task", "dev-c", "done", 0, 0),
    ]
    assert board[1].last_note == team.notes(jwt)[-1] and board[1].last_note.text == "refresh flow half done"
    assert board[0].last_note is None
    assert [c.intent.id for c in team.task_board(REPO, status="active")] == [receipts.id]
    with pytest.raises(ValueError, match="not 'paused'"):
        team.task_board(REPO, status="paused")


# -- intents and sessions -----------------------------------------------------------------------


def test_a_session_keeps_one_intent_per_repo_titled_by_its_first_prompt(team: SqliteTeam) -> None:
    first = team.intent_for_session("claude", "s-1", "dev-a", REPO, "\n  Add   JWT support to the API " + "x" * 200)
    assert len(first.title) == 120 and first.title.startswith("Add JWT support to the API x")
    assert team.intent_for_session("claude", "s-1", "dev-a", REPO, "another prompt") == first
    elsewhere = team.intent_for_session("claude", "s-1", "dev-a", "acme/docs", "")
    assert elsewhere.id != first.id and elsewhere.title == "untitled (claude session s-1)"
    assert [intent.id for intent in team.intents(REPO)] == [first.id]


def test_resuming_drops_the_empty_intent_the_session_started_with(team: SqliteTeam) -> None:
    jwt = dev_a_claims(team, VALIDATE_TOKEN)
    scratch = team.intent_for_session("claude", "c-1", "dev-c", REPO, f"resume task {jwt}")
    team.resume(jwt, "dev-c", "claude", "c-1")
    with pytest.raises(NoSuchIntent, match=f"no task {scratch.id}"):
        team.intent(scratch.id)
    assert [intent.id for intent in team.intents(REPO)] == [jwt]


def test_an_unknown_intent_is_a_lookup_error(team: SqliteTeam) -> None:
    with pytest.raises(NoSuchIntent):
        team.claim(404, [CHECKOUT])
    with pytest.raises(NoSuchIntent):
        team.record_attempt(404, "pytest", ALL_PASS)


# -- developers ---------------------------------------------------------------------------------


def test_the_developer_comes_from_git_config_unless_hivelore_developer_says(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "shop")  # user.email dev@example.com in .git/config
    env = {"HOME": str(tmp_path / "home"), "GIT_CONFIG_NOSYSTEM": "1"}
    assert developer_for(str(repo / "src"), env) == "dev@example.com"
    assert developer_for(str(repo), {**env, "HIVELORE_DEVELOPER": "dev-a"}) == "dev-a"
    assert developer_for(str(repo), env, use_git=True) == "dev@example.com"


def test_the_global_config_its_includes_and_linked_worktrees_are_read(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Ada\n[include]\n\tpath = ~/.gitconfig-work\n")
    (home / ".gitconfig-work").write_text('[user]\n\temail = "ada@acme.example" ; work address\n')
    env = {"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    repo = make_repo(tmp_path / "shop")
    git(repo, "config", "--unset", "user.email")
    git(repo, "config", "--unset", "user.name")
    git(repo, "worktree", "add", "-q", str(tmp_path / "shop-jwt"))
    assert developer_for(str(tmp_path / "shop-jwt"), env) == "ada@acme.example"
    assert developer_for(str(tmp_path / "shop-jwt"), env, use_git=True) == "ada@acme.example"
    (home / ".gitconfig-work").unlink()
    assert developer_for(str(repo), env) == "Ada"
    nobody = {"HOME": str(tmp_path / "nobody"), "GIT_CONFIG_NOSYSTEM": "1", "USER": "ada"}
    assert developer_for(str(tmp_path), nobody) == "ada"  # no git identity anywhere: the OS user


# -- several agents at once ---------------------------------------------------------------------

WORKER = """
import os, sys, time
from hivelore.team.store import SqliteTeam
from hivelore.team.testruns import TestRun
home, ready, go, what, times = sys.argv[1:6]
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.001)
team = SqliteTeam.open(home)
for _ in range(int(times)):
    if what == "session":
        print(team.intent_for_session("claude", "shared", "dev-a", "acme/shop", "add JWT support").id)
    else:
        run = TestRun("pytest", "failed", ("tests/test_auth.py::test_refresh_session",))
        print(team.record_attempt(int(what), "pytest -q", run).count)
"""


def run_together(tmp_path: Path, home: str, processes: int, what: str, times: int) -> list[int]:
    """Start real processes, release them at the same moment, and collect the numbers they print."""
    go = tmp_path / "go"
    procs = []
    for n in range(processes):
        args = [home, str(tmp_path / f"ready-{n}"), str(go), what, str(times)]
        procs.append(subprocess.Popen([sys.executable, "-c", WORKER, *args], stdout=subprocess.PIPE, text=True))
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("ready-*"))) < processes and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    outputs = [proc.communicate(timeout=120)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * processes
    return sorted(int(line) for output in outputs for line in output.split())


def test_parallel_agents_recording_the_same_failure_lose_no_count(tmp_path: Path, home: str) -> None:
    with SqliteTeam.open(home) as team:
        intent = team.create_intent("dev-a", REPO, "add JWT support")
    assert run_together(tmp_path, home, processes=5, what=str(intent.id), times=20) == list(range(1, 101))
    with SqliteTeam.open(home) as team:
        (attempt,) = team.attempts(intent.id)
        assert attempt.count == 100


def test_hooks_of_one_session_racing_on_a_new_team_db_create_one_intent(tmp_path: Path, home: str) -> None:
    ids = run_together(tmp_path, home, processes=5, what="session", times=3)
    assert len(set(ids)) == 1 and len(ids) == 15


# -- a damaged team.db --------------------------------------------------------------------------


def test_a_corrupt_team_db_is_a_clear_error(home: str) -> None:
    Path(home).mkdir()
    Path(home, FILENAME).write_bytes(b"this is not a database, it was truncated by a full disk\n" * 100)
    with pytest.raises(TeamUnavailable, match=r"team\.db cannot be used \(file is not a database\); move it away"):
        SqliteTeam.open(home)


def test_a_team_db_of_another_schema_version_is_refused(home: str) -> None:
    with SqliteTeam.open(home) as team:
        team.conn.execute("UPDATE meta SET value = '0' WHERE name = 'team-schema'")
    with pytest.raises(TeamUnavailable, match="has team schema 0, this hivelore needs 1"):
        SqliteTeam.open(home)


def test_a_database_that_is_not_a_team_db_is_left_alone(home: str) -> None:
    Path(home).mkdir()
    sqlite3.connect(Path(home, FILENAME)).execute("CREATE TABLE notes (text TEXT)")
    with pytest.raises(TeamUnavailable, match="not a hivelore team database"):
        SqliteTeam.open(home)
    assert sqlite3.connect(Path(home, FILENAME)).execute("PRAGMA journal_mode").fetchone() == ("delete",)


def test_damage_noticed_after_opening_is_a_clear_error_too(home: str, team: SqliteTeam) -> None:
    intent = team.create_intent("dev-a", REPO, "add JWT support")
    sqlite3.connect(Path(home, FILENAME)).execute("DROP TABLE claims")
    with pytest.raises(TeamUnavailable, match="no such table: claims"):
        team.claim(intent.id, [CHECKOUT])


# --- where an edit lands ---------------------------------------------------------------------------------------------


def test_an_edits_text_is_found_everywhere_it_occurs(tmp_path: Path) -> None:
    """Claude's Edit with replace_all changes every occurrence, and a patch's context lines may repeat: each place
    counts, so the symbol really being edited is never the one left out."""
    from hivelore.team.coordination import MAX_ANCHOR_SPANS, _anchor_lines

    source = tmp_path / "m.py"
    source.write_text("def a():\n    return total\n\ndef b():\n    return total\n\ndef c():\n    pass\n")
    assert _anchor_lines(str(source), ["    return total"]) == [(2, 2), (5, 5)]
    assert _anchor_lines(str(source), ["def c():\n    pass"]) == [(7, 8)]
    assert _anchor_lines(str(source), ["not there"]) == []
    assert _anchor_lines(str(tmp_path / "gone.py"), ["def a():"]) == []

    source.write_text("x = 1\n" * (MAX_ANCHOR_SPANS + 10))
    assert len(_anchor_lines(str(source), ["x = 1"])) == MAX_ANCHOR_SPANS


# -- file claims: edits made before the repository's graph existed -------------------------------------------


class FileGraph(CallGraph):
    """The shop call graph plus where each symbol sits: `symbols_in` and `symbols_at`, as codegraph answers."""

    LINES = {VALIDATE_TOKEN: (1, 8), DECODE_JWT: (11, 20), CHECKOUT: (1, 9), TOTAL: (12, 14)}

    def symbols_in(self, path: str) -> list[str]:
        return sorted((s for s in self.LINES if s.startswith(f"{path}::")), key=lambda s: self.LINES[s])

    def symbols_at(self, path: str, first: int, last: int) -> list[str]:
        found = [s for s in self.symbols_in(path) if self.LINES[s][0] <= last and self.LINES[s][1] >= first]
        return sorted(found, key=lambda s: self.LINES[s][1] - self.LINES[s][0])


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=40), st.lists(st.integers(min_value=-3, max_value=10**6), max_size=5))
def test_a_file_claim_names_its_file_and_lines_whatever_the_path(path: str, lines: list[int]) -> None:
    ids = file_claim_ids(path, lines)

    assert [file_claim(claim) for claim in ids] == (
        [(path, line) for line in sorted({n for n in lines if n > 0})] or [(path, None)]
    )
    assert file_claim(CHECKOUT) is None


def test_file_claims_become_the_symbols_at_their_lines_or_the_whole_file(team: SqliteTeam) -> None:
    graph = FileGraph(SHOP_CALLS)
    jwt = team.create_intent("dev-a", REPO, "add JWT support")
    cart = team.create_intent("dev-b", REPO, "fix the total")
    team.claim(jwt.id, file_claim_ids("shop/tokens.py", [12]) + file_claim_ids("README.md"))
    team.claim(cart.id, file_claim_ids("shop/orders.py"))

    assert team.upgrade_file_claims(graph, REPO, jwt.id) == 2
    assert [c.symbol for c in team.claims(jwt.id)] == [DECODE_JWT]  # README.md has no symbols: nothing to claim
    assert [c.symbol for c in team.claims(cart.id)] == ["file::shop/orders.py"]  # another intent: untouched
    assert team.upgrade_file_claims(graph, REPO) == 1
    assert sorted(c.symbol for c in team.claims(cart.id)) == [CHECKOUT, TOTAL]
    assert team.upgrade_file_claims(graph, REPO) == 0


def test_a_file_claim_conflicts_with_an_edit_of_its_file_and_with_code_near_its_symbols(team: SqliteTeam) -> None:
    graph = FileGraph(SHOP_CALLS)
    jwt = team.create_intent("dev-a", REPO, "add JWT support")
    team.claim(jwt.id, file_claim_ids("shop/tokens.py", [3, 12]))

    (same,) = team.conflicts(None, REPO, [], "dev-b", paths=["shop/tokens.py"])
    (near,) = team.conflicts(graph, REPO, [CHECKOUT], "dev-b", paths=["shop/orders.py"])

    file_level = "(file-level claim: the code graph was still being built)"
    assert same.describe() == f'dev-a\'s task {jwt.id}: "add JWT support" is changing shop/tokens.py {file_level}'
    assert near.path == (CHECKOUT, CURRENT_USER, VALIDATE_TOKEN)
    assert near.describe() == (
        f'checkout → current_user → validate_token: dev-a\'s task {jwt.id}: "add JWT support" is changing '
        f"shop/tokens.py {file_level}"
    )
    assert team.conflicts(None, REPO, [], "dev-b", paths=["shop/orders.py"]) == []
    assert team.conflicts(None, REPO, [], "dev-a", paths=["shop/tokens.py"]) == []  # one's own claim


def test_without_a_graph_an_edited_file_conflicts_with_symbol_claims_in_it(team: SqliteTeam) -> None:
    """Another worktree of the repository has its graph (and claims symbols); this one has none yet."""
    jwt = team.create_intent("dev-a", REPO, "add JWT support")
    team.claim(jwt.id, [VALIDATE_TOKEN])

    (conflict,) = team.conflicts(None, REPO, [], "dev-b", paths=["shop/tokens.py"])

    assert conflict.describe() == f'{VALIDATE_TOKEN} is being changed by dev-a (task {jwt.id}: "add JWT support")'
