"""What every team store does (team/store.py's `TeamStore`), one suite run over each store.

`STORES` holds a function per store that opens an empty one of its kind on the given clock: `SqliteTeam`
(team.db, in a fresh folder), the team server's `PostgresTeam` (an organisation of the test's own in
the run's database) and `RemoteTeam`, its client, over HTTP to a live server on loopback (one for the
module) as a user of the test's own.
The tests speak only through the `TeamStore` methods, in the shop repository's call graph of
tests/test_team.py (checkout → current_user → validate_token → decode_jwt → b64decode).
"""

from __future__ import annotations

import inspect
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from test_team import (
    ALL_PASS,
    CHECKOUT,
    CURRENT_USER,
    DECODE_JWT,
    FAILING_REFRESH,
    REPO,
    SEND_RECEIPT,
    SHOP_CALLS,
    TOTAL,
    VALIDATE_TOKEN,
    CallGraph,
    Clock,
    FileGraph,
)

from hivelore.team.model import NoSuchIntent, file_claim_ids, warning_key
from hivelore.team.store import SqliteTeam, TeamStore
from hivelore.team.testruns import TestRun

OTHER_REPO = "acme/other"


def _organisation(url: str) -> tuple[int, int, str]:
    """A user of this test's own, owner of an organisation of its own that shares the repositories the
    suite uses: (org id, user id, an hl_rw_ token of the user's)."""
    import psycopg

    from hivelore.server.postgres import accounts

    name = f"team-{secrets.token_hex(6)}"
    with psycopg.connect(url, autocommit=True) as conn:
        user = accounts.add_user(conn, name)
        accounts.create_org(conn, name, user.id)
        org_id, _ = accounts.role_in(conn, name, user.id)
        for repo in (REPO, OTHER_REPO):
            accounts.bind_scope(conn, org_id, f"repo::{repo}", user.id)
        return org_id, user.id, accounts.create_token(conn, user.id, "rw").token


def _postgres(request: pytest.FixtureRequest, folder: Path, clock: Clock) -> TeamStore:
    """The team server's store, for an organisation of this test's own in the run's database."""
    from hivelore.server.postgres.team import PostgresTeam

    url = request.getfixturevalue("database_url")
    org_id, user_id, _token = _organisation(url)
    return PostgresTeam.open(url, org_id, user_id, clock)


def _remote(request: pytest.FixtureRequest, folder: Path, clock: Clock) -> TeamStore:
    """The team server's store over HTTP: a live server on loopback, as a user of this test's own."""
    from hivelore.remote.client import Client, Endpoint
    from hivelore.remote.team import RemoteTeam

    url = request.getfixturevalue("team_server")
    _org, _user, token = _organisation(request.getfixturevalue("database_url"))
    client = Client(Endpoint(url), token)
    request.addfinalizer(client.close)
    return RemoteTeam(client, clock)


STORES: dict[str, Callable[[pytest.FixtureRequest, Path, Clock], TeamStore]] = {
    "sqlite": lambda request, folder, clock: SqliteTeam.open(str(folder), clock=clock),
    "postgres": _postgres,
    "remote": _remote,
}


@pytest.fixture(scope="module")
def team_server(database_url: str) -> Iterator[str]:
    """The team server's app, served by uvicorn in a thread of this process on a free loopback port."""
    import socket
    import threading
    import time

    import uvicorn

    from hivelore.server.app import Settings, create_app

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(
        create_app(Settings(database_url, pool_size=2)), host="127.0.0.1", port=port, log_config=None, access_log=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "the team server did not start"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> Iterator[TeamStore]:
    with STORES[request.param](request, tmp_path / "store", clock) as opened:
        yield opened


@pytest.fixture
def graph() -> FileGraph:
    return FileGraph(SHOP_CALLS)


def jwt_task(store: TeamStore, *symbols: str) -> int:
    """dev-a's session "a-1" working on "add JWT support", with these symbols claimed."""
    intent = store.intent_for_session("claude", "a-1", "dev-a", REPO, "add JWT support")
    store.claim(intent.id, symbols)
    return intent.id


def test_the_store_implements_every_method_of_the_contract(store: TeamStore) -> None:
    offered = [name for name, _ in inspect.getmembers(TeamStore, inspect.isfunction) if not name.startswith("__")]

    missing = [name for name in offered if getattr(type(store), name) is getattr(TeamStore, name)]

    assert "conflicts" in offered and missing == []


# -- tasks and sessions -----------------------------------------------------------------------------------------


def test_a_session_gets_one_task_titled_by_its_first_prompt(store: TeamStore) -> None:
    assert store.session_intent("claude", "a-1", REPO) is None

    first = store.intent_for_session("claude", "a-1", "dev-a", REPO, "\n add  JWT support\nwith RS256")
    again = store.intent_for_session("claude", "a-1", "dev-a", REPO, "something else")

    assert (first.title, first.owner, first.status, first.repo) == ("add JWT support", "dev-a", "active", REPO)
    assert again == first == store.session_intent("claude", "a-1", REPO) == store.intent(first.id)
    assert store.intents(REPO) == [first] and store.intents(OTHER_REPO) == []


def test_tasks_are_listed_by_status_and_an_unknown_one_is_not_found(store: TeamStore, clock: Clock) -> None:
    old = store.create_intent("dev-b", REPO, "old task")
    clock.advance(hours=1)
    new = store.create_intent("dev-c", REPO, "new task")

    assert store.done(old.id).status == "done"
    assert [i.id for i in store.intents(REPO)] == [new.id, old.id]
    assert store.intents(REPO, status="done") == [store.intent(old.id)]
    with pytest.raises(NoSuchIntent):
        store.intent(404)
    with pytest.raises(ValueError):
        store.intents(REPO, status="paused")
    with pytest.raises(ValueError):
        store.create_intent("dev-a", REPO, "   ")


# -- claims -----------------------------------------------------------------------------------------------------


def test_claims_count_what_is_new_and_active_claims_leave_out_the_asker(store: TeamStore) -> None:
    jwt = jwt_task(store)

    assert store.claim(jwt, [VALIDATE_TOKEN, SEND_RECEIPT]) == 2
    assert store.claim(jwt, [VALIDATE_TOKEN]) == 0

    assert [c.symbol for c in store.claims(jwt)] == [SEND_RECEIPT, VALIDATE_TOKEN]
    assert [(symbol, owner) for symbol, _intent, owner in store.active_claims(REPO)] == [
        (SEND_RECEIPT, "dev-a"), (VALIDATE_TOKEN, "dev-a")
    ]  # fmt: skip
    assert store.active_claims(REPO, other_than="dev-a") == []


def test_claims_of_finished_and_idle_tasks_are_not_active(store: TeamStore, clock: Clock) -> None:
    jwt = jwt_task(store, VALIDATE_TOKEN)
    clock.advance(days=8)
    assert store.active_claims(REPO) == []

    store.claim(jwt, [CURRENT_USER])  # activity wakes it up
    assert len(store.active_claims(REPO)) == 2
    store.done(jwt)
    assert store.active_claims(REPO) == []


def test_file_claims_become_the_symbols_at_their_lines(store: TeamStore, graph: FileGraph) -> None:
    jwt = jwt_task(store, *file_claim_ids("shop/tokens.py", [12]))

    assert store.upgrade_file_claims(graph, REPO) == 1
    assert [c.symbol for c in store.claims(jwt)] == [DECODE_JWT]
    assert store.upgrade_file_claims(graph, REPO) == 0


# -- attempts ---------------------------------------------------------------------------------------------------


def test_the_same_failure_is_counted_and_a_pass_on_the_changed_code_resolves_it(store: TeamStore) -> None:
    jwt = jwt_task(store, VALIDATE_TOKEN)
    store.record_change(jwt, [VALIDATE_TOKEN])
    failed = store.record_attempt(jwt, "pytest -q", FAILING_REFRESH)
    assert store.record_attempt(jwt, "pytest  -q", FAILING_REFRESH).id == failed.id

    hotfix = store.create_intent("dev-b", REPO, "hotfix token expiry")
    store.record_change(hotfix.id, [VALIDATE_TOKEN])
    passed = store.record_attempt(hotfix.id, "pytest", ALL_PASS)

    assert passed.resolves == (failed.id,) and passed.symbols == (VALIDATE_TOKEN,)
    (attempt,) = store.attempts(jwt)
    assert (attempt.count, attempt.symbols, attempt.resolved_by) == (2, (VALIDATE_TOKEN,), passed.id)
    with pytest.raises(NoSuchIntent):
        store.record_attempt(404, "pytest", ALL_PASS)


# -- decisions and notes ----------------------------------------------------------------------------------------


def test_a_newer_decision_supersedes_an_older_one_on_the_symbols_it_covers(store: TeamStore, clock: Clock) -> None:
    both = store.decide("tokens live 15 minutes", [VALIDATE_TOKEN, DECODE_JWT], developer="dev-a", repo=REPO)
    clock.advance(hours=1)
    newer = store.decide("tokens live 5 minutes", [VALIDATE_TOKEN], developer="dev-b", repo=REPO)

    assert store.decisions(REPO, VALIDATE_TOKEN) == [newer]
    assert [d.id for d in store.decisions(REPO, VALIDATE_TOKEN, include_superseded=True)] == [newer.id, both.id]
    assert [d.current for d in store.decisions(REPO, DECODE_JWT)] == [(DECODE_JWT,)]
    with pytest.raises(ValueError):
        store.decide(" ", [VALIDATE_TOKEN], developer="dev-a", repo=REPO)


def test_a_handed_off_task_is_resumed_with_what_it_holds(store: TeamStore) -> None:
    jwt = jwt_task(store, VALIDATE_TOKEN)
    store.record_change(jwt, [VALIDATE_TOKEN])
    failed = store.record_attempt(jwt, "pytest", FAILING_REFRESH)
    decision = store.decide("use RS256", [VALIDATE_TOKEN], intent_id=jwt)
    progress = store.note(jwt, "tokens parse", "progress")

    handoff = store.handoff(jwt, "refresh half done")
    assert store.intent(jwt).status == "handed_off" and store.active_claims(REPO) == []
    taken = store.resume(jwt, "dev-c", "codex", "c-1")

    assert (taken.intent.owner, taken.intent.status) == ("dev-c", "active")
    assert [c.symbol for c in taken.claims] == [VALIDATE_TOKEN]
    assert taken.failed == [failed] and taken.decisions == [decision]
    assert taken.notes == store.notes(jwt) == [progress, handoff] and handoff.kind == "handoff"
    assert store.session_intent("codex", "c-1", REPO) == taken.intent
    with pytest.raises(ValueError):
        store.note(jwt, "a thought", "idea")


# -- warnings and queries ---------------------------------------------------------------------------------------


def test_conflicts_name_the_call_path_to_another_developers_claim(store: TeamStore) -> None:
    jwt_task(store, VALIDATE_TOKEN, TOTAL)
    graph = CallGraph(SHOP_CALLS)

    found = store.conflicts(graph, REPO, [CHECKOUT], "dev-b")

    assert [(c.claimed, c.path, c.direction) for c in found] == [
        (TOTAL, (CHECKOUT, TOTAL), "callees"),
        (VALIDATE_TOKEN, (CHECKOUT, CURRENT_USER, VALIDATE_TOKEN), "callees"),
    ]
    assert store.conflicts(graph, REPO, [CHECKOUT], "dev-a") == []
    assert store.conflicts(graph, REPO, [CHECKOUT], "dev-b", hops=1)[0].claimed == TOTAL
    (same_file,) = store.conflicts(None, REPO, [], "dev-b", paths=["shop/tokens.py"])
    assert same_file.claimed == VALIDATE_TOKEN


def test_a_warning_is_shown_once_per_session(store: TeamStore) -> None:
    assert not store.warned("codex", "b-1", "checkout-vs-validate_token")
    assert store.mark_warned("codex", "b-1", "checkout-vs-validate_token")
    assert not store.mark_warned("codex", "b-1", "checkout-vs-validate_token")
    assert store.warned("codex", "b-1", "checkout-vs-validate_token")
    assert store.mark_warned("codex", "b-2", "checkout-vs-validate_token")


def test_a_warning_is_kept_under_the_key_the_hooks_make(store: TeamStore) -> None:
    key = warning_key("team-hit", 12, "dev-a")
    assert store.mark_warned("claude", "b-1", key)
    assert store.warned("claude", "b-1", key)
    assert not store.mark_warned("claude", "b-1", key)


def test_who_knows_why_history_and_the_board_answer_from_what_was_recorded(store: TeamStore) -> None:
    jwt = jwt_task(store, VALIDATE_TOKEN)
    store.record_change(jwt, [VALIDATE_TOKEN])
    failed = store.record_attempt(jwt, "pytest", FAILING_REFRESH)
    decision = store.decide(
        "current_user returns None for anonymous users", [CURRENT_USER], developer="dev-b", repo=REPO
    )

    experts = store.who_knows(CallGraph(SHOP_CALLS), REPO, VALIDATE_TOKEN)
    why = store.why(REPO, CURRENT_USER)
    history = store.history(REPO, [VALIDATE_TOKEN, CURRENT_USER])
    (card,) = store.task_board(REPO)

    assert [(e.developer, e.score, e.claims, e.attempts, e.decisions) for e in experts] == [
        ("dev-a", 3.0, 1, 1, 0), ("dev-b", 1.5, 0, 0, 1)
    ]  # fmt: skip
    assert (why.current, why.superseded, why.attempts, why.people) == ([decision], [], [], ["dev-b"])
    assert (history.failed, history.decisions) == ([failed], [decision])
    assert (card.intent.id, card.claims, card.failed, card.last_note) == (jwt, 1, 1, None)


def test_a_run_that_is_not_a_failure_adds_nothing_to_history(store: TeamStore) -> None:
    jwt = jwt_task(store, VALIDATE_TOKEN)
    store.record_change(jwt, [VALIDATE_TOKEN])
    store.record_attempt(jwt, "pytest", TestRun("pytest", "passed", (), (), 3, 0))

    assert store.history(REPO, [VALIDATE_TOKEN]).failed == []
    assert [a.outcome for a in store.why(REPO, VALIDATE_TOKEN).attempts] == ["passed"]
