"""`hivelore graph push` for real: the CLI in a subprocess, with its own HIVELORE_HOME and a clone of
the shop, in remote mode against a live `hivelore serve`; then the server's graph queries, compared
with what the local graph (the same checkout's graph.db) answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg
import pytest
from conftest import Account, Server, start_server, unique
from harness import SHOP_FILES, make_shop

from hivelore.codegraph import Graph
from hivelore.remote import graph as remote_graph
from hivelore.remote.client import Client, Endpoint
from hivelore.server.postgres import accounts
from hivelore.team.codemap import CodeMap

REPO = "acme/shop"
# More of the shop, so the queries have chains, ties and a class to walk.
MORE_FILES = {
    "shop/cart.py": (
        "from shop.orders import checkout, receipt\n\n\n"
        "class Cart:\n"
        "    def total(self):\n"
        "        return self.subtotal() + self.tax()\n\n"
        "    def subtotal(self):\n"
        "        return sum(self.items())\n\n"
        "    def tax(self):\n"
        "        return self.subtotal() // 10\n\n"
        "    def items(self):\n"
        "        return []\n\n"
        "    def pay(self, request):\n"
        "        order = checkout(request, self.items())\n"
        "        return receipt(order)\n"
    ),
    "shop/api.py": (
        "from shop.cart import Cart\nfrom shop.reports import daily\n\n\n"
        "def pay_handler(request):\n"
        "    return Cart().pay(request)\n\n\n"
        "def report_handler(orders):\n"
        "    return daily(orders)\n"
    ),
}


class Machine:
    def __init__(self, home: Path, repo: Path) -> None:
        self.home, self.repo = home, repo

    def cli(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HIVELORE_")}
        env |= {"HIVELORE_HOME": str(self.home), "HIVELORE_DEVELOPER": "dev-a", "HIVELORE_HOOK_SERVER": "off"}
        return subprocess.run(
            [sys.executable, "-m", "hivelore", *args], input=stdin, cwd=self.repo, env=env,
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    def push(self) -> dict:
        result = self.cli("graph", "push", "--json")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def graph(self) -> Graph:
        return Graph.open(str(self.home), str(self.repo))


def machine_of(tmp_path: Path, server: Server, account: Account, name: str) -> Machine:
    home = tmp_path / name / "home"
    home.mkdir(parents=True)
    machine = Machine(home, make_shop(tmp_path / name / "shop", {**SHOP_FILES, **MORE_FILES}))
    (home / "config.json").write_text(json.dumps({"mode": "remote", "endpoint": server.url}))
    login = machine.cli("remote", "login", "--token", "-", stdin=account.token)
    assert login.returncode == 0, login.stderr
    return machine


@pytest.fixture
def team(db: psycopg.Connection, make_user: Callable[..., Account]) -> dict[str, Account]:
    """An org sharing repo::acme/shop with an owner (who pushes) and a viewer; a stranger in an org of
    their own that shares nothing, and a twin in one that shares a repository of the same name."""
    owner, viewer, stranger, twin = (make_user(name) for name in ("owner", "viewer", "stranger", "twin"))
    org_id = _org(db, owner, share=True)
    db.execute("INSERT INTO members (org_id, user_id, role) VALUES (%s, %s, 'viewer')", (org_id, viewer.id))
    _org(db, stranger, share=False)
    _org(db, twin, share=True)
    return {"owner": owner, "viewer": viewer, "stranger": stranger, "twin": twin}


def _org(db: psycopg.Connection, owner: Account, share: bool) -> int:
    name = unique("acme")
    accounts.create_org(db, name, owner.id)
    org_id, _ = accounts.role_in(db, name, owner.id)
    if share:
        accounts.bind_scope(db, org_id, f"repo::{REPO}", owner.id)
    return org_id


def ask(server: Server, account: Account, route: str, **params: object) -> httpx.Response:
    return httpx.get(f"{server.url}/v1/graph/{route}", params={"repo": REPO, **params}, headers=account.headers())


def test_a_push_sends_what_changed_only(tmp_path: Path, server: Server, team: dict[str, Account]) -> None:
    machine = machine_of(tmp_path, server, team["owner"], "owner")
    first = machine.push()
    with machine.graph() as graph:
        files, symbols, calls = graph.store.counts()
    assert (first["files"], first["symbols"], first["calls"], first["removed"]) == (files, symbols, calls, 0)
    assert first["held"] == {"files": files, "symbols": symbols, "calls": calls}

    again = machine.cli("graph", "push")
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"nothing to send: the server holds this graph of {REPO}: {files} files")

    orders = machine.repo / "shop" / "orders.py"
    orders.write_text(orders.read_text().replace("sum(cart)", "sum(cart) + 1"))
    assert machine.push()["batches"] == 0  # the graph as indexed: the edit hooks (here, graph index) update it
    assert machine.cli("graph", "index", "shop/orders.py").returncode == 0
    edited = machine.push()
    assert (edited["files"], edited["removed"], edited["batches"]) == (1, 0, 1)
    assert edited["held"] == first["held"]

    (machine.repo / "shop" / "reports.py").unlink()
    assert machine.cli("graph", "index").returncode == 0
    removed = machine.push()
    assert removed["removed"] == 1
    assert removed["held"]["files"] == files - 1
    assert ask(server, team["owner"], "symbols", name="daily").json() == {"symbols": []}
    with machine.graph() as graph:
        assert removed["held"] == dict(zip(("files", "symbols", "calls"), graph.store.counts(), strict=True))


def test_the_servers_answers_are_the_local_graphs(
    tmp_path: Path, server: Server, unlimited: Server, team: dict[str, Account]
) -> None:
    """Pushed to one replica, asked of another (without a rate limit: every pair of symbols is asked)."""
    machine = machine_of(tmp_path, server, team["owner"], "owner")
    machine.push()
    owner, server = team["owner"], unlimited
    with machine.graph() as graph:
        ids = [s["id"] for s in graph.export()["symbols"]]
        local = CodeMap(graph, None, REPO)  # type: ignore[arg-type] -- its paths need no team
        for symbol in ids:
            for hops in (1, 3, 6):
                answer = ask(server, owner, "blast-radius", symbol=symbol, hops=hops).json()
                assert [(c["symbol"], c["distance"]) for c in answer["callers"]] == graph.blast_radius(symbol, hops)
            for other in ids:
                answer = ask(server, owner, "path", a=symbol, b=other).json()
                expected = local.path(symbol, other)
                assert (answer["kind"], answer["chains"]) == (expected.kind, [list(c) for c in expected.chains])
        hot = ask(server, owner, "hotspots", limit=50).json()["hotspots"]
        assert [(h["symbol"], h["pagerank"], h["betweenness"]) for h in hot] == graph.hotspots(50)
        assert len(hot) > 5
    found = ask(server, owner, "symbols", name="Cart.total").json()["symbols"]
    assert [s["id"] for s in found] == ["shop/cart.py::Cart.total"]
    assert ask(server, owner, "blast-radius", symbol="validate_token").json()["callers"][0] == {
        "symbol": "shop/users.py::current_user", "distance": 1,
    }  # fmt: skip
    assert ask(server, owner, "blast-radius", symbol="nowhere").status_code == 404


def test_a_push_in_small_batches_holds_the_same_graph(tmp_path: Path, server: Server, team: dict[str, Account]) -> None:
    machine = machine_of(tmp_path, server, team["owner"], "owner")
    assert machine.cli("graph", "index").returncode == 0
    client = Client(Endpoint(server.url), team["owner"].token)
    with machine.graph() as graph:
        sent = remote_graph.push(client, graph, REPO, limit=400)
        assert sent.batches >= sent.files > 1
        assert sent.held == dict(zip(("files", "symbols", "calls"), graph.store.counts(), strict=True))
        assert remote_graph.push(client, graph, REPO).batches == 0
    client.close()


def test_a_server_with_a_lower_body_limit_is_sent_halves_of_what_it_refused(
    tmp_path: Path, database_url: str, team: dict[str, Account]
) -> None:
    strict = start_server(database_url, tmp_path / "strict.log", "--max-body-kib", "4")
    try:
        machine = machine_of(tmp_path, strict, team["owner"], "owner")
        assert machine.cli("graph", "index").returncode == 0
        client = Client(Endpoint(strict.url), team["owner"].token)
        with machine.graph() as graph:
            files = remote_graph.described(graph).values()
            assert max(len(json.dumps(item)) for item in files) < 3000 < sum(len(json.dumps(i)) for i in files)
            sent = remote_graph.push(client, graph, REPO)  # in one body of the default 512 KiB, first
            assert sent.batches > 1 and sent.files == len(files)
            assert sent.held == dict(zip(("files", "symbols", "calls"), graph.store.counts(), strict=True))
        client.close()
    finally:
        strict.stop()


def test_a_viewer_cannot_push_and_another_org_cannot_read(
    tmp_path: Path, server: Server, team: dict[str, Account]
) -> None:
    viewer = machine_of(tmp_path, server, team["viewer"], "viewer")
    refused = viewer.cli("graph", "push")
    assert refused.returncode != 0
    assert "viewer" in refused.stderr and "member" in refused.stderr, refused.stderr
    assert ask(server, team["viewer"], "hotspots").status_code == 404  # nothing pushed: the push was refused

    machine_of(tmp_path, server, team["owner"], "owner").push()
    assert ask(server, team["viewer"], "hotspots").status_code == 200
    for route, params in (("hotspots", {}), ("symbols", {"name": "checkout"}), ("path", {"a": "x", "b": "y"})):
        refused = ask(server, team["stranger"], route, **params)
        assert refused.status_code == 403 and "none of your organisations shares" in refused.json()["error"]
        # an org that shares a repository of the same name has a graph of its own: none was pushed there
        assert ask(server, team["twin"], route, **params).status_code == 404
    assert ask(server, team["twin"], "files").json() == {
        "files": {}, "held": {"files": 0, "symbols": 0, "calls": 0},
    }  # fmt: skip


def test_two_pushes_of_one_repository_at_once_both_land(
    tmp_path: Path, server: Server, team: dict[str, Account]
) -> None:
    machine = machine_of(tmp_path, server, team["owner"], "owner")
    assert machine.cli("graph", "index").returncode == 0
    with machine.graph() as graph:
        body = {"repo": REPO, "files": list(remote_graph.described(graph).values())}
        counts = dict(zip(("files", "symbols", "calls"), graph.store.counts(), strict=True))
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: httpx.post(
            f"{server.url}/v1/graph/push", json=body, headers=team["owner"].headers(), timeout=60
        ), range(4)))  # fmt: skip
    assert [a.status_code for a in answers] == [200] * 4, [a.text for a in answers]
    assert all(a.json()["held"] == counts for a in answers)
