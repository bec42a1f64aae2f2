"""The team on the team server: how soon a claim made by one developer is seen by another's conflict
check, over `RemoteTeam` (remote/team.py) and a live `hivelore serve`, against `SqliteTeam` on one
machine measured in the same run.

It creates a database of its own (hivelore_team_<pid>) on the PostgreSQL at 127.0.0.1:5432,
migrates it, makes an organisation `acme` that shares repo::acme/shop with two members, dev-a and
dev-b, each with an hl_rw_ token, and starts `hivelore serve` on loopback. dev-a and dev-b are two
clients (two `RemoteTeam`s, each its own keep-alive connection and token), as two machines would be.

    claim        dev-a's `claim` of one symbol (one request)
    conflicts    dev-b's conflict check of an edit of `checkout`, which calls every claimed symbol
                 (one request for the active claims, then `find_conflicts` on the client)
    visible      from the start of dev-a's claim to the first of dev-b's checks, run back to back
                 in a thread, that reports it: the claim → visible latency over HTTP

The same claim and check on one team.db (two developers on one machine) are the baseline. It prints
the median and p90 of each, and the ratio of the remote median to the baseline's. The issue's 2 s
target (a claim visible to a pre-edit check on another machine) is printed beside `visible`, never
asserted; the hook path's replica of the claims is not measured here (the hooks do not use the
server's team yet).

    python benchmarks/bench_team_server.py            # 200 claims
    python benchmarks/bench_team_server.py --small    # CI: 20 claims

The database and the server are removed at the end, on failure and on Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
from bench_remote_hooks import TeamServer

from hivelore.remote.client import Client, Endpoint
from hivelore.remote.team import RemoteTeam
from hivelore.server.postgres import accounts, migrate
from hivelore.team.contract import TeamStore
from hivelore.team.store import SqliteTeam

ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
REPO = "acme/shop"
EDITED = "shop/orders.py::checkout"
TARGET_S = 2.0


class FanGraph:
    """The edited symbol calls every claimed one (the duck-typed code graph of team/model.py)."""

    def __init__(self) -> None:
        self.callees: list[str] = []

    def within(self, symbol: str, hops: int, direction: str) -> dict[str, list[str]]:
        if symbol != EDITED or direction != "callees":
            return {}
        return {callee: [EDITED, callee] for callee in self.callees}

    def symbols_in(self, path: str) -> list[str]:
        return []


@contextlib.contextmanager
def database() -> Iterator[str]:
    name = f"hivelore_team_{os.getpid()}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def make_members(url: str) -> dict[str, str]:
    """The schema, the org sharing repo::acme/shop, and a token for each of its two members."""
    tokens = {}
    with psycopg.connect(url, autocommit=True) as conn:
        migrate.migrate(conn)
        for developer in ("dev-a", "dev-b"):
            user = accounts.add_user(conn, developer)
            if developer == "dev-a":
                accounts.create_org(conn, "acme", user.id)
                org_id, _ = accounts.role_in(conn, "acme", user.id)
                accounts.bind_scope(conn, org_id, f"repo::{REPO}", user.id)
            else:
                conn.execute("INSERT INTO members (org_id, user_id, role) VALUES (%s, %s, 'member')", (org_id, user.id))
            tokens[developer] = accounts.create_token(conn, user.id, "rw", name="bench").token
    return tokens


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def claims_and_checks(a: TeamStore, b: TeamStore, claims: int) -> dict[str, list[float]]:
    """dev-a claims `claims` symbols one at a time; dev-b checks its edit after each."""
    graph, intent = FanGraph(), a.intent_for_session("codex", "a-1", "dev-a", REPO, "add JWT support").id
    figures: dict[str, list[float]] = {"claim": [], "conflicts": []}
    for n in range(claims):
        symbol = f"shop/tokens.py::helper_{n}"
        graph.callees.append(symbol)
        figures["claim"].append(timed(lambda symbol=symbol: a.claim(intent, [symbol])))
        figures["conflicts"].append(timed(lambda: b.conflicts(graph, REPO, [EDITED], "dev-b")))
    return figures


class Watch(threading.Thread):
    """dev-b's checks, back to back on a store of the thread's own (`open_b()`), until one reports
    `symbol` (its time is `seen_at`) or the watch is stopped."""

    def __init__(self, open_b: Callable[[], TeamStore], graph: FanGraph, symbol: str) -> None:
        super().__init__()
        self.open_b, self.graph, self.symbol = open_b, graph, symbol
        self.ready, self.stop = threading.Event(), threading.Event()
        self.seen_at: float | None = None

    def run(self) -> None:
        with self.open_b() as b:
            self.ready.set()
            while not self.stop.is_set():
                if any(c.claimed == self.symbol for c in b.conflicts(self.graph, REPO, [EDITED], "dev-b")):
                    self.seen_at = time.perf_counter()
                    return


def visible(a: TeamStore, open_b: Callable[[], TeamStore], claims: int) -> list[float]:
    """From the start of each claim of dev-a's to the first check of dev-b's that reports it."""
    graph, intent = FanGraph(), a.intent_for_session("codex", "a-2", "dev-a", REPO, "rotate keys").id
    latencies: list[float] = []
    for n in range(claims):
        symbol = f"shop/keys.py::rotate_{n}"
        graph.callees.append(symbol)
        watch = Watch(open_b, graph, symbol)
        watch.start()
        watch.ready.wait()
        started = time.perf_counter()
        a.claim(intent, [symbol])
        watch.join(30)
        watch.stop.set()
        watch.join()
        if watch.seen_at is None:
            raise RuntimeError(f"dev-b's check never saw {symbol}")
        latencies.append(watch.seen_at - started)
    return latencies


def line(name: str, samples: list[float], baseline: list[float] | None = None, target: str = "") -> str:
    ordered = sorted(samples)
    median, p90 = statistics.median(ordered), ordered[int(0.9 * (len(ordered) - 1))]
    ratio = f"{median / statistics.median(baseline):8.1f}x" if baseline else " " * 9
    return f"{name:<18}{median * 1000:10.2f}{p90 * 1000:10.2f}   {ratio}  {target}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=200)
    parser.add_argument("--small", action="store_true", help="20 claims (CI)")
    args = parser.parse_args(argv)
    claims = 20 if args.small else args.claims
    with tempfile.TemporaryDirectory() as work, database() as url:
        tokens = make_members(url)
        server = TeamServer(url, Path(work) / "server.log")
        try:
            clients = {dev: Client(Endpoint(f"http://127.0.0.1:{server.port}"), token) for dev, token in tokens.items()}
            remote_a, remote_b = RemoteTeam(clients["dev-a"]), RemoteTeam(clients["dev-b"])
            with SqliteTeam.open(work) as local_a, SqliteTeam.open(work) as local_b:
                local = claims_and_checks(local_a, local_b, claims)
                local_visible = visible(local_a, lambda: SqliteTeam.open(work), claims)
            remote = claims_and_checks(remote_a, remote_b, claims)
            remote_visible = visible(remote_a, lambda: RemoteTeam(clients["dev-b"]), claims)
            for client in clients.values():
                client.close()
        finally:
            server.stop()
    print(f"{claims} claims, ms       median       p90   remote/local")
    for name in ("claim", "conflicts"):
        print(line(f"{name} local", local[name]))
        print(line(f"{name} remote", remote[name], local[name]))
    print(line("visible local", local_visible))
    print(line("visible remote", remote_visible, local_visible, f"target < {TARGET_S:g} s on another machine"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
