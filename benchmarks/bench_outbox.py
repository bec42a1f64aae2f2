"""The outbox's replay against the team server, one write a request (what a flush sent before
`POST /v1/memories/batch`, and still sends to a server without it) and in batches, in the same run.

Used by bench_server.py (`--runs outbox`), over its database and replicas: each of S senders — a
machine whose outbox fills while the server is away — is a real `hivelore.remote.replica.Replica`
with its own HIVELORE_HOME, mirror and outbox on disk and its own member's token. Each round queues
W writes in every outbox (as a hook queues them: files written whole and fsynced), then flushes
every outbox at once (a thread each) and times it, with the CPU of the senders (this process), the
replicas and PostgreSQL. The two ways alternate round by round; the report prints, per way, the
median writes/s and CPU a write over the rounds, and the batched way's ratio to one by one.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import bench_server as harness

from hivelore.remote.client import Endpoint
from hivelore.remote.credentials import Remote
from hivelore.remote.replica import BATCH_PATH, Replica

WAYS = ("one by one", "batched")
ROUNDS = 3  # of each way, alternating
BUDGET_S = 30.0  # a flush's network budget: a loaded replica answers a batch of 100 in well under it


@dataclass
class Round:
    way: str
    writes: int
    seconds: float
    usage: harness.Usage
    rejected: int


def replay(
    replicas: Sequence[harness.Replica],
    team: harness.Team,
    loaded: harness.Loaded,
    senders: int,
    writes: int,
    work: Path,
    seed: int,
) -> list[Round]:
    """ROUNDS rounds of each way, alternating: `senders` outboxes of `writes` writes each, flushed at once."""
    homes = [
        (work / f"outbox-{n}", replicas[n % len(replicas)], team.clients[n % len(team.clients)]) for n in range(senders)
    ]
    lessons = [harness.Client(n, account, replicas[0], loaded, seed) for n, (_, _, account) in enumerate(homes)]
    rounds: list[Round] = []
    try:
        for number in range(ROUNDS):
            for way in WAYS:
                harness.log(f"outbox replay, {way}, round {number + 1}: {senders} outboxes of {writes} writes…")
                for home, source in zip(homes, lessons, strict=True):
                    machine = _machine(*home)
                    try:
                        for _ in range(writes):
                            machine.outbox.add("write", source.lesson(f"outbox-{uuid.uuid4().hex[:8]}"))
                    finally:
                        machine.close()
                rounds.append(_flush_all(homes, way, replicas, team.database))
    finally:
        for source in lessons:
            source.http.close()
    return rounds


def _machine(home: Path, replica: harness.Replica, account: harness.Account) -> Replica:
    """A machine's replica of the server: opened in the thread that uses it (its mirror is SQLite)."""
    home.mkdir(parents=True, exist_ok=True)
    remote = Remote(Endpoint(replica.base), "bench", account.token, "bench", True)
    return Replica(str(home), remote, BUDGET_S)


def _flush_all(
    homes: Sequence[tuple[Path, harness.Replica, harness.Account]],
    way: str,
    replicas: Sequence[harness.Replica],
    database: str,
) -> Round:
    """Flush every machine's outbox at once, a thread each: a machine a round, its client new (as after
    a restart), so one by one is asked for, never remembered from the round before."""
    sent = [0] * len(homes)
    unsent = [0] * len(homes)

    def flush(n: int) -> None:
        machine = _machine(*homes[n])
        try:
            if way == "one by one":
                machine.client.missing(BATCH_PATH)  # the fallback: what every flush did before the route
            report = machine.flush()
            sent[n], unsent[n] = report.sent, len(report.rejected) + report.waiting
        finally:
            machine.close()

    threads = [threading.Thread(target=flush, args=(n,)) for n in range(len(homes))]
    with harness.measured(replicas, database) as usage:
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - started
    return Round(way, sum(sent), seconds, usage[0], sum(unsent))


def report(rounds: Sequence[Round], replicas: int, senders: int, writes: int) -> None:
    print(
        f"outbox replay ({replicas} replica{'s' if replicas > 1 else ''}): {senders} outboxes of {writes} writes"
        f" flushed at once, {ROUNDS} rounds a way, alternating; median of the rounds"
    )
    medians: dict[str, float] = {}
    for way in WAYS:
        mine = [r for r in rounds if r.way == way]
        rate = statistics.median(r.writes / r.seconds for r in mine)
        medians[way] = rate

        def cpu(part: str, rounds: Sequence[Round] = mine) -> float:
            return statistics.median(getattr(r.usage, part) / max(r.writes, 1) * 1000 for r in rounds)

        demand = cpu("client") + cpu("replicas") + cpu("postgres")
        print(
            f"  {way:>10}: {rate:,.0f} writes/s; CPU a write {demand:.2f} ms (senders {cpu('client'):.2f},"
            f" replicas {cpu('replicas'):.2f}, PostgreSQL {cpu('postgres'):.2f}) → at most"
            f" {(os.cpu_count() or 1) * 1000 / demand:,.0f} writes/s on {os.cpu_count()} cores;"
            f" not sent {sum(r.rejected for r in mine)}"
        )
    print(f"  batched ÷ one by one: {medians['batched'] / medians['one by one']:.2f}×")
