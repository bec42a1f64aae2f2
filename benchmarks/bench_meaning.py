"""Recall by meaning on the team server, under load: `python benchmarks/bench_server.py --meaning`.

On a database of its own with N synthetic memories (bench_server's harness and load), it runs the
same clients against one replica with the model and then one started with --no-meaning (BM25 alone,
the baseline), in the same window, and prints per mode: search and write p50/p99 and throughput,
the replica's resident memory, the model's load time (the replica's own log) and the first search
(which reads the space's vectors into the replica).

The vectors: the first --meaning-texts rows get their own, computed here by the server's model
code (postgres/vectors.py) and timed; every other row gets a copy of one of those (its hash says
`reused`). Embedding 100,000 synthetic lessons takes tens of CPU-minutes on this machine's model,
and a search's cost does not depend on which vectors the rows hold, only on how many: the search
figures are those of N rows, the recall of the copies is not measured here (bench_recall.py is).
Searches mix bench_server's queries with paraphrases that share no word with their lessons.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from pathlib import Path

import bench_server as harness
import httpx
import psycopg

from hivelore.memory import vectors
from hivelore.memory.model import Memory
from hivelore.server.postgres import vectors as server_vectors

PARAPHRASES = (
    "postgres connection refused",
    "the suite cannot reach the database, what do I start first?",
    "node process runs out of heap during the build",
    "end to end checks are flaky on slow machines",
)
READY_S = 600.0


def give_vectors(url: str, real: int) -> tuple[int, float, float]:
    """Vectors for every row: the first `real` computed, the rest copies of them. (rows computed,
    wall seconds, CPU seconds of this process)."""
    model = server_vectors.Model(vectors.Embedder())
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT id, record FROM memories ORDER BY id LIMIT %s", (real,)).fetchall()
        texts = [vectors.memory_text(Memory.from_dict(record)) for _, record in rows]
        wall, cpu = time.perf_counter(), time.process_time()
        computed = model.vectors(texts)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        hashes = [vectors.text_hash(text) for text in texts]
        conn.execute(
            "INSERT INTO memory_vectors (id, hash, vector) SELECT * FROM unnest(%s::bigint[], %s::text[], %s::bytea[])",
            ([id_ for id_, _ in rows], hashes, [computed[h] for h in hashes]),
        )
        conn.execute(
            """
            INSERT INTO memory_vectors (id, hash, vector)
            SELECT m.id, 'reused', source.vector FROM (
                SELECT id, row_number() OVER (ORDER BY id) - 1 AS n FROM memories
                WHERE id NOT IN (SELECT id FROM memory_vectors)
            ) m JOIN (
                SELECT vector, row_number() OVER (ORDER BY id) - 1 AS n FROM memory_vectors
            ) source ON source.n = m.n %% %s
            """,
            (len(rows),),
        )
        conn.execute("ANALYZE memory_vectors")
    return len(rows), wall, cpu


def memory_mb(pid: int) -> tuple[float, float]:
    """The process's resident memory now and at its peak, in MB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def load_seconds(replica: harness.Replica) -> float | None:
    """The model's load time, as the replica logged it."""
    for line in replica.log_path.read_text(errors="replace").splitlines():
        if '"meaning ready"' in line:
            return float(json.loads(line).get("load_s", 0.0))
    return None


def wait_ready(replica: harness.Replica, meaning: bool) -> float:
    """Seconds from now until the replica's model is loaded and its backfill done (0 without one)."""
    started, deadline = time.perf_counter(), time.perf_counter() + READY_S
    while meaning and httpx.get(f"{replica.base}/readyz", timeout=5).json().get("meaning") != "ready":
        if time.perf_counter() > deadline:
            raise RuntimeError(f"the replica's model was not ready in {READY_S:g} s:\n{replica.log_tail()}")
        time.sleep(0.2)
    return time.perf_counter() - started


def first_search(replica: harness.Replica, team: harness.Team) -> float:
    """One search's latency right after start: the replica reads the space's vectors first."""
    started = time.perf_counter()
    answer = httpx.get(
        f"{replica.base}/v1/memories/search",
        params={"q": PARAPHRASES[0], "scope": list(harness.CHAIN)},
        headers=team.clients[0].headers,
        timeout=300,
    )
    answer.raise_for_status()
    return time.perf_counter() - started


def bench(args: argparse.Namespace, work: Path) -> int:
    name = f"hivelore_bench_meaning_{os.getpid()}"
    # The clients draw their searches from the harness's queries: the paraphrases are added to them.
    harness.QUERIES = (*harness.QUERIES, *PARAPHRASES)
    url = harness.create_database(name)
    runs: list[harness.Run] = []
    notes: list[str] = []
    try:
        team = harness.make_team(url, args.clients)
        plain = harness.start_replica(url, work)
        harness.log(f"loading {args.memories:,} memories…")
        loaded = harness.load("direct", plain, team, url, args.memories, args.seed)
        harness.stop_replica(plain)
        harness.log(f"computing {args.meaning_texts:,} vectors, copying them to the other rows…")
        real, wall, cpu = give_vectors(url, args.meaning_texts)
        notes.append(
            f"vectors: {real:,} computed in {wall:.1f} s ({cpu / real * 1000:.1f} ms CPU a text, batches of"
            f" {vectors.BATCH}); the other {loaded.memories - real:,} rows hold copies of them"
        )
        for meaning in (True, False):  # the model first: its backfill then has nothing to catch up
            mode = "meaning" if meaning else "lexical"
            started = time.perf_counter()
            replica = harness.start_replica(url, work, meaning=meaning)
            ready = time.perf_counter() - started + wait_ready(replica, meaning)
            cold = first_search(replica, team)
            for run, mix in (("search", (("search", 1),)), ("writes", (("write", 1),))):
                harness.log(f"{mode}: {run}, {args.clients} clients for {args.seconds:g} s…")
                done = harness.run_clients(
                    run, mix, [replica], team, loaded, args.clients, args.seconds, args.seed
                )  # fmt: skip
                runs.append(dataclasses.replace(done, name=f"{run} {mode}"))
            rss, peak = memory_mb(replica.process.pid)
            model = load_seconds(replica)
            notes.append(
                f"{mode}: ready {ready:.1f} s after start" + (f" (model loaded in {model:.2f} s)" if model else "")
                + f"; first search {cold * 1000:,.0f} ms; replica RSS {rss:,.0f} MB after the runs, peak {peak:,.0f} MB"
            )  # fmt: skip
            harness.stop_replica(replica)
    finally:
        harness.drop_database(name)
    print(
        f"hivelore team server, recall by meaning: {loaded.memories:,} memories, {args.clients} clients back to back,"
        f" {args.seconds:g} s a run, one replica; load average at the end {os.getloadavg()[0]:.1f}"
    )
    print(harness.table(runs))
    print()
    for note in notes:
        print(note)
    return 0
