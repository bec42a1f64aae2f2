"""The task board and the code map on the team server (`/dash/tasks`, `/dash/codemap`), over HTTP
against a real `hivelore serve` and its PostgreSQL: the team's tasks as PostgresTeam holds them, the
code graph as a checkout pushes it (/v1/graph/push, with what `hivelore graph push` sends), a chooser
of the repositories the caller's organisations share, the token's scopes and role; and the
dashboard's loose ends on the server (a JSON request without a session, a word for a number, a
viewer's commit, the forget dialog, an expired session's row)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest
from conftest import Account, Server, unique
from harness import SHOP_FILES, make_shop

from hivelore.codegraph import Graph
from hivelore.remote.graph import described
from hivelore.server import auth
from hivelore.server.postgres import accounts
from hivelore.server.postgres.team import PostgresTeam
from hivelore.team.testruns import TestRun

CHECKOUT = "shop/orders.py::checkout"
VALIDATE = "shop/tokens.py::validate_token"
CURRENT_USER = "shop/users.py::current_user"
FAILING = "tests/test_orders.py::test_checkout_total"


@dataclass
class Shop:
    org: str
    repo: str  # OWNER/NAME, with a pushed graph
    bare: str  # another repository the org shares, never pushed
    owner: Account  # logs in: the tasks are other developers'
    viewer: Account
    limited: str  # a token of the owner's limited to project::elsewhere
    task: int  # dev-b's active task on checkout: a failing attempt, two decisions, a note
    other: int  # dev-a's active task on validate_token (two hops below checkout: a conflict)
    handed: int  # dev-b's task handed off


def push_graph(api: httpx.Client, who: Account, repo: str, home: Path, checkout: Path) -> None:
    """Index the checkout here and send its graph to /v1/graph/push, as `hivelore graph push` does."""
    with Graph.open(str(home), str(checkout)) as graph:
        graph.index()
        files = list(described(graph).values())
    answer = api.post("/v1/graph/push", json={"repo": repo, "files": files, "removed": []}, headers=who.headers())
    assert answer.status_code == 200, answer.text


def _tasks(team: PostgresTeam, repo: str) -> tuple[int, int, int]:
    task = team.create_intent("dev-b", repo, "speed up <b>checkout</b>")
    team.claim(task.id, [CHECKOUT])
    team.record_attempt(task.id, "pytest -q tests/test_orders.py", TestRun("pytest", "failed", failed=(FAILING,)))
    team.decide("Totals are computed in cents", [CHECKOUT], intent_id=task.id, developer="dev-b", repo=repo)
    team.decide("Totals are Decimal, rounded once", [CHECKOUT], intent_id=task.id, developer="dev-b", repo=repo)
    team.note(task.id, "the rounding test still fails", developer="dev-b")
    other = team.create_intent("dev-a", repo, "rotate <script>alert('t')</script> tokens")
    team.claim(other.id, [VALIDATE])
    handed = team.create_intent("dev-b", repo, "daily report")
    team.handoff(handed.id, "receipts need a locale: over to you", developer="dev-b")
    return task.id, other.id, handed.id


@pytest.fixture(scope="module", name="shop")
def shop_fixture(database_url: str, server: Server, tmp_path_factory: pytest.TempPathFactory) -> Shop:
    """An organisation sharing two repositories, a pushed graph of the first, three tasks of other
    developers in it, an owner and a viewer; a staged note for the viewer's refused commit."""
    org, owner_name = unique("board"), unique("shop")
    repo, bare = f"{owner_name}/shop", f"{owner_name}/zbare"
    base = tmp_path_factory.mktemp("board")
    with psycopg.connect(database_url, autocommit=True) as db:
        people = {}
        for role in ("owner", "viewer"):
            user = accounts.add_user(db, unique(role))
            people[role] = Account(user.name, user.id, accounts.create_token(db, user.id, "rw").token)
        accounts.create_org(db, org, people["owner"].id)
        org_id, _ = accounts.role_in(db, org, people["owner"].id)
        db.execute(
            "INSERT INTO members (org_id, user_id, role) VALUES (%s, %s, 'viewer')", (org_id, people["viewer"].id)
        )
        for shared in (repo, bare):
            accounts.bind_scope(db, org_id, f"repo::{shared}", people["owner"].id)
        limited = accounts.create_token(db, people["owner"].id, "rw", scopes=["project::elsewhere"]).token
        task, other, handed = _tasks(PostgresTeam(db, org_id, people["owner"].id), repo)
    with httpx.Client(base_url=server.url, timeout=30) as api:
        push_graph(api, people["owner"], repo, base / "home", make_shop(base / "shop", SHOP_FILES))
        note = {"scope": f"repo::{repo}", "key": "prefer-cents", "value": "keep money in cents", "state": "staged"}
        assert api.post("/v1/memories", json=note, headers=people["owner"].headers()).status_code == 200
    return Shop(org, repo, bare, people["owner"], people["viewer"], limited, task, other, handed)


@pytest.fixture
def browser(server: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


def log_in(browser: httpx.Client, token: str) -> None:
    browser.get("/dash/login")
    form = {"token": token, "csrf": browser.cookies["hivelore_csrf"], "next": "/dash/memories"}
    assert browser.post("/dash/login", data=form).status_code == 303


def test_the_board_shows_other_developers_tasks_by_status_with_their_claims_and_failures(
    browser: httpx.Client, shop: Shop
) -> None:
    log_in(browser, shop.owner.token)
    board = browser.get("/dash/tasks", params={"repo": shop.repo})
    mine = browser.get("/dash/tasks", params={"repo": shop.repo, "owner": "dev-b", "status": "handed_off"})

    assert board.status_code == 200 and f"Task board of {shop.repo}" in board.text
    card = re.search(rf'<a class="card" href="/dash/tasks/{shop.task}">(.*?)</a>', board.text, re.S)
    assert card is not None and "speed up &lt;b&gt;checkout&lt;/b&gt;" in card.group(1)
    assert "dev-b" in card.group(1) and "1 claims · 1 failing attempts" in card.group(1)
    assert "progress: the rounding test still fails" in card.group(1)
    assert "rotate &lt;script&gt;alert(" in board.text and "<script>alert" not in board.text
    assert re.findall(r'href="/dash/tasks/(\d+)"', mine.text) == [str(shop.handed)]


def test_a_task_shows_its_claims_attempts_decisions_and_notes(browser: httpx.Client, shop: Shop) -> None:
    log_in(browser, shop.viewer.token)  # a viewer reads the team
    page = browser.get(f"/dash/tasks/{shop.task}")
    handed = browser.get(f"/dash/tasks/{shop.handed}")

    assert page.status_code == 200, page.text
    assert f"<code>{CHECKOUT}</code> by dev-b" in page.text
    assert f"<code>{FAILING}</code>" in page.text and "pytest -q tests/test_orders.py" in page.text
    assert re.search(r'class="current">Totals are Decimal, rounded once', page.text)
    assert "<del>Totals are computed in cents</del>" in page.text
    assert "the rounding test still fails" in page.text
    assert "handed off, owned by dev-b" in handed.text and "receipts need a locale: over to you" in handed.text
    assert 'method="post"' not in page.text.replace('method="post" action="/dash/logout"', "")  # no action


def test_a_chooser_offers_every_shared_repository_and_a_token_reaches_only_what_it_admits(
    browser: httpx.Client, shop: Shop
) -> None:
    log_in(browser, shop.owner.token)
    first = browser.get("/dash/tasks")
    bare = browser.get("/dash/tasks", params={"repo": shop.bare})
    log_in(browser, shop.limited)
    limited_board = browser.get("/dash/tasks", params={"repo": shop.repo})
    limited_default = browser.get("/dash/tasks")
    limited_task = browser.get(f"/dash/tasks/{shop.task}")
    limited_map = browser.get("/dash/codemap/folder.json", params={"repo": shop.repo})

    chooser = re.search(r'<form[^>]*id="repo-chooser".*?</form>', first.text, re.S)
    assert chooser is not None
    offered = re.findall(r"<option[^>]*>([^<]+)</option>", chooser.group(0))
    assert shop.repo in offered and shop.bare in offered
    assert bare.status_code == 200 and f"Task board of {shop.bare}" in bare.text and "none" in bare.text
    assert (
        limited_board.status_code == 403
        and "this token is limited to the scopes project::elsewhere" in limited_board.text
    )
    assert limited_default.status_code == 404
    assert "none of your organisations shares a repository your token admits" in limited_default.text
    assert limited_task.status_code == 404 and f"no task {shop.task}" in limited_task.text
    assert limited_map.status_code == 403 and "project::elsewhere" in limited_map.json()["error"]


def test_the_code_map_answers_from_the_pushed_graph(browser: httpx.Client, shop: Shop) -> None:
    log_in(browser, shop.owner.token)
    at = {"repo": shop.repo}
    page = browser.get("/dash/codemap", params=at)
    root = browser.get("/dash/codemap/folder.json", params=at).json()
    file = browser.get("/dash/codemap/file.json", params={**at, "path": "shop/orders.py"}).json()
    blast = browser.get("/dash/codemap/blast.json", params={**at, "symbol": "validate_token"}).json()
    path = browser.get("/dash/codemap/path.json", params={**at, "a": "checkout", "b": "validate_token"}).json()
    hot = browser.get("/dash/codemap/hotspots.json", params={**at, "limit": "3"})
    again = browser.get("/dash/codemap/hotspots.json", params={**at, "limit": "3"})

    assert page.status_code == 200 and f'data-repo="{shop.repo}"' in page.text
    assert "rotate &lt;script&gt;alert(" in page.text and "<script>alert" not in page.text
    assert root["path"] == "shop" and "shop/orders.py" in [c["path"] for c in root["children"]]
    claimed = {s["id"]: [c["developer"] for c in s["claims"]] for s in file["symbols"]}
    assert claimed[CHECKOUT] == ["dev-b"]
    assert blast["reached"] == [{"id": CURRENT_USER, "hops": 1}, {"id": CHECKOUT, "hops": 2}]
    assert path == {"kind": "calls", "chains": [[CHECKOUT, CURRENT_USER, VALIDATE]]}
    assert hot.status_code == 200 and len(hot.json()["hotspots"]) == 3 and again.json() == hot.json()
    conflicts = re.findall(r'data-conflict="\d+">#(\d+) [^<]*↔ #(\d+)', page.text)
    assert conflicts and {int(n) for n in conflicts[0]} == {shop.task, shop.other}


def test_a_repository_never_pushed_says_how_to_fill_its_map(browser: httpx.Client, shop: Shop) -> None:
    log_in(browser, shop.owner.token)
    page = browser.get("/dash/codemap", params={"repo": shop.bare})
    answer = browser.get("/dash/codemap/folder.json", params={"repo": shop.bare})

    sentence = f"no code graph of {shop.bare} is on the team server yet: run `hivelore graph push`"
    assert page.status_code == 409 and sentence in page.text
    assert answer.status_code == 409 and answer.json()["error"].startswith(sentence)


def test_a_json_request_without_a_session_gets_401_json_and_a_word_for_a_number_400(
    browser: httpx.Client, shop: Shop
) -> None:
    anonymous = browser.get("/dash/codemap/blast.json", params={"repo": shop.repo, "symbol": "checkout"})
    log_in(browser, shop.owner.token)
    at = {"repo": shop.repo, "symbol": "validate_token"}
    hops = browser.get("/dash/codemap/blast.json", params={**at, "hops": "three"})
    limit = browser.get("/dash/codemap/hotspots.json", params={"repo": shop.repo, "limit": "2.5"})
    page = browser.get("/dash/codemap", params={**at, "hops": "x"})

    assert anonymous.status_code == 401 and anonymous.json() == {
        "error": "this needs a dashboard session: log in at /dash/login with your token, then ask again."
    }
    assert hops.status_code == 400 and hops.json() == {"error": "hops must be a whole number from 1 to 6, not 'three'."}
    assert limit.status_code == 400 and limit.json()["error"].startswith("limit must be a whole number from 1 to 100")
    assert page.status_code == 200 and "hops must be a whole number from 1 to 6, not &#39;x&#39;." in page.text


def test_a_viewers_commit_is_403_and_forget_says_what_it_does_on_the_server(browser: httpx.Client, shop: Shop) -> None:
    log_in(browser, shop.owner.token)
    owners = browser.get("/dash/memory", params={"scope": f"repo::{shop.repo}", "key": "prefer-cents"}).text
    log_in(browser, shop.viewer.token)
    form = {"scope": f"repo::{shop.repo}", "key": "prefer-cents", "csrf": browser.cookies["hivelore_csrf"]}
    refused = browser.post("/dash/memory/commit", data=form)

    assert "Delete the file" not in owners
    assert f"Delete repo::{shop.repo}::prefer-cents from the team server (org:{shop.org})" in owners
    assert refused.status_code == 403 and f"this needs the role member in {shop.org}; you are viewer." in refused.text


def test_an_expired_session_is_deleted_when_it_is_looked_up(
    browser: httpx.Client, shop: Shop, database_url: str
) -> None:
    log_in(browser, shop.viewer.token)
    row = "SELECT count(*) FROM dashboard_sessions WHERE hash = %s"
    with psycopg.connect(database_url, autocommit=True) as db:
        mine = (auth.digest(browser.cookies["hivelore_session"]),)
        db.execute("UPDATE dashboard_sessions SET expires = now() - interval '1 minute' WHERE hash = %s", mine)
        before = db.execute(row, mine).fetchone()
        ended = browser.get("/dash/tasks")
        after = db.execute(row, mine).fetchone()

    assert ended.status_code == 303 and "ended=true" in ended.headers["location"]
    assert (before, after) == ((1,), (0,))
