"""Where a team-server write's CPU goes: CPU milliseconds a write, split per stage and per process.

CPU time is what a shared, noisy machine measures well (wall-clock throughput is not), and on a
machine whose cores are the bottleneck, throughput is at most cores / (CPU a write). So this
benchmark sends writes one at a time (no queue, no contention) and reads the CPU used:

    in process   the route's own stages, called directly on one connection without HTTP (thread CPU
                 of this process, and the backend's CPU from /proc): the token and rate-limit
                 statement, the memberships, the service's write with its Idempotency-Key
                 (guard, tokens, lock, row, answer kept), and the route's work all together;
                 a cProfile of the route's work, grouped by package;
    over HTTP    `hivelore serve` as a subprocess, one client sending POST /v1/memories (the
                 benchmark's body, with an Idempotency-Key): CPU of the client, the replica and the
                 database's backends, a write; the replica's part minus the route's own is what
                 FastAPI, Starlette, uvicorn, pydantic and the worker-thread hop cost;
    batched      the same writes as records of POST /v1/memories/import (BATCH a request): the
                 same CPU, a record; and as writes of POST /v1/memories/batch (BATCH a request, an
                 idempotency key each, as an outbox sends them): the same CPU, a write;
    the quota    PostgreSQL's CPU a new write as the writer's account grows, with the quota and
                 without (two accounts, the same writes).

It prints each figure with the 2 cores' budget (2,000 ms of CPU a second) and the throughput that
budget allows; run it next to bench_server.py, whose wall-clock figures meet the machine's load.

    python benchmarks/write_cost.py              # 2,000 writes a stage
    python benchmarks/write_cost.py --writes 300 --growth-chunk 300  # quicker
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
from bench_server import (
    CORES_NOTE,
    ORG,
    WRITE_SCOPE,
    Replica,
    analyze,
    create_database,
    drop_database,
    make_team,
    start_replica,
    stop_replica,
)

from hivelore.server import auth, limits
from hivelore.server.memories import TeamMemories, memberships
from hivelore.server.postgres import idempotency

BATCH = 100  # records per import request
GROWTH_CHUNKS = 5  # readings of a write's cost as the account grows
VALUE = (
    "pnpm test fails with ECONNREFUSED 5432 until the database is up: run docker compose up -d db first,"
    " then pnpm test again; the checkout e2e suite needs the seeded schema (pnpm db:seed)"
)
PROVENANCE = {"agent": "claude-code", "session": "cost", "repo": "acme/checkout"}


def _ticks(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Cost:
    """CPU milliseconds a write in each process, and the wall time of the stage."""

    name: str
    writes: int
    parts: dict[str, float]  # process → CPU seconds in all
    wall: float

    def per_write(self, part: str) -> float:
        return self.parts.get(part, 0.0) / self.writes * 1000

    def total(self) -> float:
        return sum(self.parts.values()) / self.writes * 1000


@contextmanager
def cpu(pids: dict[str, int], out: dict[str, float]) -> Iterator[None]:
    """CPU seconds used during the block: this thread (`here`), and each process of `pids`."""
    before = {name: _ticks(pid) for name, pid in pids.items()}
    here, wall = time.thread_time(), time.perf_counter()
    yield
    out["here"] = time.thread_time() - here
    out["wall"] = time.perf_counter() - wall
    for name, pid in pids.items():
        out[name] = _ticks(pid) - before[name]


def write_body(n: int, run: str) -> dict[str, object]:
    return {"scope": WRITE_SCOPE, "key": f"cost-{run}-{n}", "value": f"{VALUE} ({n})", "tags": ["bench"]}


def route_write(conn: psycopg.Connection, who: auth.Caller, body: dict[str, object]) -> dict[str, object]:
    """The write route's work after its caller is known (routes/memories.py `write`), without HTTP."""

    def run() -> dict[str, object]:
        service = TeamMemories(conn, who, [WRITE_SCOPE], quota=10**9, provenance=PROVENANCE)
        result = service.write(str(body["scope"]), str(body["key"]), str(body["value"]), tags=["bench"])
        return {"memory": result.memory.to_dict(), "space": result.tier, "created": result.created}

    print_ = idempotency.fingerprint("POST", "/v1/memories", body)
    return idempotency.once(conn, who.user_id, str(uuid.uuid4()), print_, run)


def in_process(url: str, header: str, writes: int) -> tuple[list[Cost], pstats.Stats]:
    """The route's stages, each `writes` times on one connection."""
    costs = []
    with psycopg.connect(url, autocommit=True) as conn:
        backend = {"postgres": int(conn.info.backend_pid)}
        who = limits.identify(conn, header, 10**9)
        stages: list[tuple[str, Callable[[int], object]]] = [
            ("token + rate limit (limits.identify)", lambda n: limits.identify(conn, header, 10**9)),
            ("memberships", lambda n: memberships(conn, who.user_id)),
            ("service write + Idempotency-Key", lambda n: route_write(conn, who, write_body(n, "service"))),
            (
                "the route's work in all",
                lambda n: (limits.identify(conn, header, 10**9), route_write(conn, who, write_body(n, "route"))),
            ),
        ]
        for name, stage in stages:
            used: dict[str, float] = {}
            with cpu(backend, used):
                for n in range(writes):
                    stage(n)
            wall = used.pop("wall")
            costs.append(Cost(name, writes, {"python": used["here"], "postgres": used["postgres"]}, wall))
        profile = cProfile.Profile(time.thread_time)  # CPU, not the waits for PostgreSQL's answers
        profile.enable()
        for n in range(writes):
            limits.identify(conn, header, 10**9)
            route_write(conn, who, write_body(n, "profiled"))
        profile.disable()
    return costs, pstats.Stats(profile)


def quota_growth(url: str, headers: list[str], writes: int, chunks: int) -> list[tuple[int, float, float]]:
    """PostgreSQL's CPU a new write, with the quota and without, as the writer's account grows: per
    chunk of `writes`, (rows the account holds at its end, ms with the quota, ms without). The quota
    counts the owner's active rows on every write that makes a row visible (`memory_quota_used`)."""
    figures: dict[int, list[float]] = defaultdict(list)
    with psycopg.connect(url, autocommit=True) as conn:
        backend = {"postgres": int(conn.info.backend_pid)}
        quotas = zip(headers, (10**9, None), strict=True)
        writers = [(limits.identify(conn, header, 10**9), quota) for header, quota in quotas]
        # The two accounts' chunks in turn, so that both meet the same table as it grows.
        for chunk in range(chunks):
            for who, quota in writers:
                used: dict[str, float] = {}
                with cpu(backend, used):
                    for n in range(chunk * writes, (chunk + 1) * writes):
                        body = write_body(n, f"growth-{who.user}")
                        service = TeamMemories(conn, who, [WRITE_SCOPE], quota=quota, provenance=PROVENANCE)
                        service.write(str(body["scope"]), str(body["key"]), str(body["value"]), tags=["bench"])
                figures[(chunk + 1) * writes].append(used["postgres"] / writes * 1000)
            analyze(url)  # as autovacuum would: a plan made on stale statistics scans what it should look up
    return [(rows, with_quota, without) for rows, (with_quota, without) in sorted(figures.items())]


def backends(url: str) -> list[int]:
    name = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", (name,)
        ).fetchall()
    return [pid for (pid,) in rows]


def over_http(url: str, replica: Replica, token: str, writes: int, batch: int, route: str = "import") -> Cost:
    """`writes` writes from one client, one a request (`batch` 0) or `batch` a request of `route`:
    records of an import, or writes of a batch."""
    headers = {"Authorization": f"Bearer {token}"}
    run = "http" if not batch else f"{route}{batch}"
    with httpx.Client(base_url=replica.base, headers=headers, timeout=60.0) as client:
        client.get("/healthz").raise_for_status()
        client.get("/v1/me").raise_for_status()  # the replica's pool holds its connection from here
        pids = {"replica": replica.process.pid, **{f"pg{pid}": pid for pid in backends(url)}}
        used: dict[str, float] = {}
        with cpu(pids, used):
            if not batch:
                for n in range(writes):
                    sent = client.post("/v1/memories", json=write_body(n, run), headers={"Idempotency-Key": f"{n}"})
                    sent.raise_for_status()
            elif route == "batch":
                for start in range(0, writes, batch):
                    sent = client.post("/v1/memories/batch", json={"writes": [
                        {"write": {**write_body(n, run), "provenance": PROVENANCE}, "idempotency_key": f"{run}-{n}"}
                        for n in range(start, min(writes, start + batch))
                    ]})  # fmt: skip
                    sent.raise_for_status()
                    assert all(r["status"] == 200 for r in sent.json()["results"]), sent.text[:300]
            else:
                for start in range(0, writes, batch):
                    records = [
                        {**write_body(n, run), "provenance": PROVENANCE}
                        for n in range(start, min(writes, start + batch))
                    ]
                    body = {"records": records, "space": f"org:{ORG}"}
                    sent = client.post("/v1/memories/import", json=body, headers={"Idempotency-Key": f"b{start}"})
                    sent.raise_for_status()
                    assert len(sent.json()["written"]) == len(records), sent.text[:300]
    wall = used.pop("wall")
    postgres = sum(v for k, v in used.items() if k.startswith("pg"))
    parts = {"client": used["here"], "replica": used["replica"], "postgres": postgres}
    label = "POST /v1/memories, one write a request" if not batch else f"POST /v1/memories/{route}, {batch} a request"
    return Cost(label, writes, parts, wall)


def by_package(stats: pstats.Stats, writes: int) -> list[tuple[str, float]]:
    """Own (not cumulative) CPU time a write, grouped by the package of each function (the profiler's
    own cost inflates every figure: compare them with each other, not with the stage's CPU)."""
    groups: dict[str, float] = defaultdict(float)
    for (path, _, function), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        if "site-packages/" in path:
            package = path.split("site-packages/")[1].split("/")[0]
        elif "/hivelore/" in path:
            package = "hivelore." + path.split("/hivelore/")[1].split("/")[0].removesuffix(".py")
        elif path == "~":
            package = f"builtins ({function.split(' ')[-1].strip('>')})" if "method" in function else "builtins"
        else:
            package = "python stdlib"
        groups[package] += own
    ranked = sorted(groups.items(), key=lambda item: -item[1])
    return [(name, seconds / writes * 1000) for name, seconds in ranked]


def budget(total_ms: float) -> str:
    cores = os.cpu_count() or 1
    return f"{total_ms:.2f} ms → at most {cores * 1000 / total_ms:,.0f} writes/s on {cores} cores"


def report(
    writes: int,
    stages: list[Cost],
    http: list[Cost],
    profile: list[tuple[str, float]],
    growth: list[tuple[int, float, float]],
    loads: str,
) -> None:
    print(f"team-server write cost · {writes:,} writes a stage, one at a time · {CORES_NOTE}")
    print(f"load average (1 min) at the start of each part: {loads}")
    print()
    print("in process (no HTTP), CPU ms a write: python (this thread) + PostgreSQL (its backend)")
    for cost in stages:
        print(
            f"  {cost.name:<40} {cost.per_write('python'):6.2f} + {cost.per_write('postgres'):5.2f}"
            f" = {cost.total():6.2f} ms   (wall {cost.wall / cost.writes * 1000:.2f} ms)"
        )
    print()
    print("over HTTP, CPU ms a write: client + replica + PostgreSQL")
    for cost in http:
        print(
            f"  {cost.name:<40} {cost.per_write('client'):5.2f} + {cost.per_write('replica'):5.2f}"
            f" + {cost.per_write('postgres'):5.2f} = {budget(cost.total())}"
            f"   (wall {cost.wall / cost.writes * 1000:.2f} ms)"
        )
    route = stages[-1].per_write("python")
    print(
        f"  the replica's CPU a write beyond the route's own work ({route:.2f} ms): "
        f"{http[0].per_write('replica') - route:.2f} ms (HTTP, FastAPI, Starlette, pydantic, the thread hop)"
    )
    print()
    print("PostgreSQL's CPU ms a new write (no Idempotency-Key) as the writer's account grows: quota / none")
    for rows, with_quota, without in growth:
        print(f"  {rows:>6,} active memories held   {with_quota:5.2f} / {without:5.2f}")
    print()
    print("cProfile of the route's work (identify + service write), own CPU ms a write by package:")
    for name, ms in profile[:12]:
        print(f"  {name:<40} {ms:6.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=2000, help="writes a stage (default 2,000)")
    parser.add_argument("--batch", type=int, default=BATCH, help=f"records an import request (default {BATCH})")
    parser.add_argument(
        "--growth-chunk", type=int, default=1000, help="writes between readings of the quota's growth (default 1,000)"
    )
    args = parser.parse_args(argv)
    name = f"hivelore_cost_{os.getpid()}"
    url = create_database(name)
    replica = None
    loads = []
    try:
        team = make_team(url, 3)
        header = f"Bearer {team.clients[0].token}"
        loads.append(os.getloadavg()[0])
        analyze(url)
        stages, stats = in_process(url, header, args.writes)
        analyze(url)
        with tempfile.TemporaryDirectory(prefix="hivelore-cost-") as logs:
            replica = start_replica(url, Path(logs))
            loads.append(os.getloadavg()[0])
            http = [over_http(url, replica, team.clients[0].token, args.writes, 0)]
            loads.append(os.getloadavg()[0])
            http.append(over_http(url, replica, team.clients[0].token, args.writes, args.batch))
            loads.append(os.getloadavg()[0])
            http.append(over_http(url, replica, team.clients[0].token, args.writes, args.batch, "batch"))
            stop_replica(replica)
            replica = None
        loads.append(os.getloadavg()[0])
        others = [f"Bearer {account.token}" for account in team.clients[1:]]
        growth = quota_growth(url, others, args.growth_chunk, GROWTH_CHUNKS)
        profile = by_package(stats, args.writes)
        report(args.writes, stages, http, profile, growth, ", ".join(f"{x:.1f}" for x in loads))
    finally:
        if replica is not None:
            stop_replica(replica)
        drop_database(name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
