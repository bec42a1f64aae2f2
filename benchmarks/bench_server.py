"""Load benchmark of the team server (`hivelore serve`) on the PostgreSQL at 127.0.0.1:5432.

It creates a database of its own (hivelore_bench_<pid>), migrates it, makes an organisation `acme`
that shares repo::acme/checkout and project::checkout, one loader and one member per client, each
with an hl_rw_ token, and starts `hivelore serve` replicas as subprocesses on loopback. It loads N
synthetic memories (synth.py, the store bench_core.py uses) into the organisation's shared space,
plus a small scope for the list operation: through PostgresTier.store_batch on direct connections,
or with `--load http` through `POST /v1/memories/import` (every record through the guard and the
quota; much slower for 100,000 memories of one owner). Then, with one replica and with two on the same database
(clients spread over both ports, no load balancer), C clients (threads, each with its own
keep-alive httpx.Client and token) run for a fixed time:

    mixed    search (a chain of 4 scopes, realistic queries) 50%, list (one small scope) 20%,
             write 30% (half new keys, half updates of loaded keys, each with an Idempotency-Key)
    writes   writes only, to report writes/s
    batched  the same writes as records of POST /v1/memories/import, BATCH_RECORDS a request (what
             `migrate --to remote` sends), from at most BATCH_SENDERS clients a replica: records/s,
             labelled as such
    writebatch  the same writes through POST /v1/memories/batch (write semantics, an idempotency key
             each), BATCH_RECORDS a request, from at most BATCH_SENDERS clients a replica: writes/s
    outbox   real outboxes (remote/replica.py) replayed at once, one write a request and batched,
             alternating in the same run (bench_outbox.py): median writes/s, CPU a write, the ratio
    paced    the mixed run, each client one operation every PACE_MS (its latency counted from when
             it was due, so a queue shows)
    agents   a team as it works: AGENTS clients (--agents), each searching every 2 to 5 s and writing
             once a minute, at phases of their own; p50 and p99 per operation, counted from when due

and it prints per operation the count, throughput, p50 and p99 and the errors by status, the CPU
the client, the replicas, PostgreSQL (the backends of the benchmark's database) and anything else
used, and the issue's targets beside the figures (search p99 < 50 ms at 50 concurrent clients;
>= 500 writes/s). Targets are printed, never asserted.

Last (`hooks`), the client's side: bench_remote_hooks.measure times real hooks in remote mode with a
team server up, slow (+200 ms an answer) and down, against bare Python, and its table is printed.

    python benchmarks/bench_server.py                  # 100,000 memories, 50 clients, 20 s per run
    python benchmarks/bench_server.py --small          # CI: 2,000 memories, 5 clients, 3 s per run
    python benchmarks/bench_server.py --no-meaning     # replicas without the model (BM25 alone)
    python benchmarks/bench_server.py --meaning        # recall by meaning: with and without the model

The replicas run as `hivelore serve` does by default, with the model (recall by meaning): after the
load, --meaning-texts rows get vectors computed by the server's model code and the others copies
(bench_meaning.give_vectors), and each replica's memory and model load time are printed at the end.

The database and the servers are removed at the end, on failure and on Ctrl-C. Exit status 0 when
every run ran (targets missed included), 1 when the set-up or a server failed.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from importlib import metadata
from pathlib import Path

import bench_outbox
import bench_remote_hooks
import bench_statements
import httpx
import psycopg
import synth

from hivelore.memory.model import Memory
from hivelore.memory.scope import parse
from hivelore.records import replace
from hivelore.server.postgres import accounts, migrate
from hivelore.server.postgres.tier import PostgresTier

ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
ORG = "acme"
SHARED = ("repo::acme/checkout", "project::checkout")  # what the org binds; branches of the repo follow
CHAIN = synth.CHAIN  # narrowest first: what a client in acme/checkout on main searches
WRITE_SCOPE = "repo::acme/checkout"
# A release branch with a few dozen lessons: `list` reads one scope, bounded, as a client listing a
# branch does (a list of repo::acme/checkout would send 60% of the store in one answer).
LIST_SCOPE = "branch::acme/checkout::release-2026-12"
LIST_SIZE = 40
IMPORT_BATCH = 500  # records per import request: the route's maximum
LOAD_STREAMS = 2  # batches loaded at once
LOAD_WAYS = {"direct": "through PostgresTier.store_batch", "http": "through POST /v1/memories/import"}
MIX = (("search", 50), ("list", 20), ("write", 30))  # per cent of a mixed run's operations
OPS = ("healthz", "search", "list", "write", "import", "batch")  # the order of the table's rows
# In run order:
RUNS = ("floor", "mixed", "search", "writes", "batched", "writebatch", "outbox", "paced", "agents", "hooks")
BATCH_RECORDS = 50  # records per import request of the batched run, writes per batch of the writebatch run
OUTBOX_WRITES = 200  # writes queued in each outbox of the outbox run (60 with --small)
BATCH_SENDERS = 10  # clients of the batched run per replica: a replica's connections (server/app.py's pool_size)
# A paced client's period: an agent's memory operations come from its hooks and tools, a few per
# turn, and a turn (a model call and a tool run) takes seconds; one operation every 2 s per agent is
# a busy agent, and 50 of them offer 25 operations a second.
PACE_MS = 2000.0
SMALL_PACE_MS = 250.0  # --small: runs of 3 s still give each client a dozen operations
# The agents run: a team's agents as they work, each searching once a prompt or tool call (every 2 to
# 5 s, uniformly) and writing a lesson about once a minute, at phases of their own.
AGENTS = 200
AGENT_SEARCH_S = (2.0, 5.0)
AGENT_WRITE_S = 60.0
SMALL_AGENTS, SMALL_AGENT_SEARCH_S, SMALL_AGENT_WRITE_S = 10, (0.2, 0.5), 1.5  # --small: runs of 3 s
QUERIES = (
    "ECONNREFUSED 5432",
    "pnpm test fails",
    "lockfile outdated install",
    "OOMKilled exit code 137",
    "playwright click timeout",
    "alembic multiple heads",
    "refunds webhook retries",
    "docker compose db",
    "migrations not applied test database",
    "why does pnpm test fail with ECONNREFUSED 5432?",
    "the checkout e2e tests fail again with ECONNREFUSED on postgres, how do I start the db for them?",
    "certificate verify failed proxy",
)
TARGET_SEARCH_P99_MS = 50.0  # at 50 concurrent clients
TARGET_CLIENTS = 50
TARGET_WRITES_S = 500.0
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
CORES_NOTE = "this machine: 2 shared cores; client, replicas and PostgreSQL all run on them"


def log(message: str) -> None:
    print(f"[server bench] {message}", file=sys.stderr, flush=True)


# -- the database and the servers ------------------------------------------------------------


@dataclass
class Account:
    name: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@dataclass
class Team:
    loader: Account
    clients: list[Account]
    loader_id: int
    org_id: int
    database: str  # its name: whose backends' CPU counts


# The settings docs/server.md asks of a deployment, applied to the benchmark's database (new
# connections take them): no parallel workers, which on a server answering many searches at once
# spend two more processes' CPU on one query (a pasted prompt's any-word shortlist: 3 × 103 ms in a
# parallel scan, against 88–132 ms in one bitmap scan, at 100,000 memories).
DEPLOYMENT_SETTINGS = {"max_parallel_workers_per_gather": "0"}


def create_database(name: str, settings: dict[str, str] = DEPLOYMENT_SETTINGS) -> str:
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
        for setting, value in settings.items():
            conn.execute(f'ALTER DATABASE "{name}" SET {setting} = {value}')
    return f"postgresql://postgres@127.0.0.1:5432/{name}"


def drop_database(name: str) -> None:
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def make_team(url: str, clients: int) -> Team:
    """The schema, the org with its shared scopes, a loader (owner) and `clients` members, each with
    a token of their own: a team's agents each send their own token, so no rate-limit row is shared."""
    with psycopg.connect(url, autocommit=True) as conn:
        migrate.migrate(conn)
        owner = accounts.add_user(conn, "loader")
        accounts.create_org(conn, ORG, owner.id)
        org_id, _ = accounts.role_in(conn, ORG, owner.id)
        for scope in SHARED:
            accounts.bind_scope(conn, org_id, scope, owner.id)
        loader = Account("loader", accounts.create_token(conn, owner.id, "rw", name="bench").token)
        members = []
        for n in range(clients):
            user = accounts.add_user(conn, f"dev{n:03d}")
            conn.execute("INSERT INTO members (org_id, user_id, role) VALUES (%s, %s, 'member')", (org_id, user.id))
            members.append(Account(user.name, accounts.create_token(conn, user.id, "rw", name="bench").token))
    return Team(loader, members, owner.id, org_id, psycopg.conninfo.conninfo_to_dict(url)["dbname"])


@dataclass
class Replica:
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self, lines: int = 20) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_replica(url: str, logs: Path, meaning: bool = False) -> Replica:
    """A replica, with the model or (`meaning` false) --no-meaning: the load runs on one without, as
    it gives no row a vector, and the runs on replicas with the model once every row has one."""
    port = free_port()
    log_path = logs / f"serve-{port}.log"
    argv = [
        sys.executable, "-m", "hivelore", "serve", "--db", url, "--port", str(port),
        "--requests-per-minute", "100000000", "--active-memories", "1000000",
        "--meaning" if meaning else "--no-meaning",
    ]  # fmt: skip
    with log_path.open("wb") as out:
        # A session of its own: Ctrl-C in the terminal reaches this script, which stops it in order.
        process = subprocess.Popen(argv, stdout=out, stderr=out, stdin=subprocess.DEVNULL, start_new_session=True)
    replica = Replica(port, process, log_path)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"hivelore serve on port {port} exited ({process.returncode}):\n{replica.log_tail()}")
        try:
            if httpx.get(f"{replica.base}/readyz", timeout=1.0).status_code == 200:
                return replica
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    stop_replica(replica)
    raise RuntimeError(f"hivelore serve on port {port} was not ready in {READY_TIMEOUT_S:g} s:\n{replica.log_tail()}")


def start_ready(url: str, logs: Path, meaning: bool) -> Replica:
    """A replica, once its model is loaded and its backfill done when it has one."""
    import bench_meaning  # it uses this module's harness

    replica = start_replica(url, logs, meaning)
    bench_meaning.wait_ready(replica, meaning)
    return replica


def with_vectors(url: str, loaded: Loaded, real: int) -> str:
    """Every row a vector (bench_meaning.give_vectors: `real` of them computed, copies for the rest)."""
    import bench_meaning

    log(f"computing {min(real, loaded.memories):,} vectors, copying them to the other rows…")
    computed, wall, cpu = bench_meaning.give_vectors(url, real)
    return (
        f"vectors: {computed:,} computed in {wall:.1f} s ({cpu / computed * 1000:.1f} ms CPU a text); the other"
        f" {loaded.memories - computed:,} rows hold copies of them (a search's cost depends on how many, not which)"
    )


def replica_memory(replica: Replica) -> str:
    import bench_meaning

    rss, peak = bench_meaning.memory_mb(replica.process.pid)
    model = bench_meaning.load_seconds(replica)
    loaded = f", its model loaded in {model:.2f} s" if model else ", no model"
    return f"replica on port {replica.port}: RSS {rss:,.0f} MB after the runs, peak {peak:,.0f} MB{loaded}"


def stop_replica(replica: Replica) -> None:
    if replica.process.poll() is None:
        replica.process.terminate()
        try:
            replica.process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            replica.process.kill()
            replica.process.wait()


# -- the load ----------------------------------------------------------------------------------


@dataclass
class Loaded:
    memories: int
    seconds: float
    written: int
    rejected: list[str]
    update_keys: list[str]  # visible keys of WRITE_SCOPE, for the writes that update
    values: list[str]  # lessons the writes send


def analyze(url: str) -> None:
    """What autovacuum would do, which this machine's PostgreSQL has turned off (autovacuum = off, the
    CI's setting): fresh statistics, which also make every connection plan its prepared statements
    again. A plan cached while the table was empty looks a key up by (space, scope) and then scans that
    scope's rows, so without this every write gets slower as the table grows."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")


def load(how: str, replica: Replica, team: Team, url: str, count: int, seed: int) -> Loaded:
    """The synthetic store, plus the list scope's few lessons (other lessons of the same generator,
    on the release branch), into the org's shared space; batches of IMPORT_BATCH, LOAD_STREAMS at once."""
    stats = synth.StoreStats(count=count, seconds=0.0)
    memories = list(synth.memories(count, stats, seed))
    spare = synth.StoreStats(count=LIST_SIZE, seconds=0.0)
    memories += [
        replace(m, scope=parse(LIST_SCOPE), key=f"release-{m.key}") for m in synth.memories(LIST_SIZE, spare, seed + 1)
    ]
    batches = [memories[i : i + IMPORT_BATCH] for i in range(0, len(memories), IMPORT_BATCH)]
    written, rejected = 0, []
    connections: list[psycopg.Connection] = []
    send = _sender(how, replica, team, url, connections)
    started = time.perf_counter()
    analyzed_at = 0
    pool = ThreadPoolExecutor(LOAD_STREAMS)
    try:
        for n, (done, refused) in enumerate(pool.map(send, batches), start=1):
            written += done
            rejected += refused
            if written >= 2 * analyzed_at:  # each time the table doubled
                analyze(url)
                analyzed_at = written
            if n % 20 == 0:
                log(f"loaded {min(n * IMPORT_BATCH, len(memories)):,} of {len(memories):,}")
    finally:
        # On Ctrl-C, do not wait for the batches in flight: stopping the server ends them.
        pool.shutdown(wait=False, cancel_futures=True)
        for conn in connections:
            conn.close()
    analyze(url)
    seconds = time.perf_counter() - started
    values = [m.value for m in synth.memories(500, synth.StoreStats(count=500, seconds=0.0), seed + 2)]
    return Loaded(len(memories), seconds, written, rejected, stats.keys.get(WRITE_SCOPE, []), values)


def _sender(
    how: str, replica: Replica, team: Team, url: str, connections: list[psycopg.Connection]
) -> Callable[[list[Memory]], tuple[int, list[str]]]:
    """What loads one batch: (rows written, records rejected). The direct way's connections, one a
    thread, are added to `connections`."""
    if how == "http":

        def post(batch: list[Memory]) -> tuple[int, list[str]]:
            """POST /v1/memories/import: every record through the guard and the quota; the server keeps
            `created` and sets `updated` to now."""
            with httpx.Client(base_url=replica.base, headers=team.loader.headers, timeout=600.0) as client:
                body = {"records": [m.to_dict() for m in batch], "space": f"org:{ORG}"}
                answer = client.post("/v1/memories/import", json=body)
            if answer.status_code != 200:
                raise RuntimeError(f"an import batch answered {answer.status_code}: {answer.text[:500]}")
            report = answer.json()
            return len(report["written"]), report["rejected"]

        return post
    local = threading.local()

    def store(batch: list[Memory]) -> tuple[int, list[str]]:
        """PostgresTier.store_batch on a connection of this thread: the rows an import writes, with
        the synthetic `updated` and `seen_count` kept, and no guard or quota (synth's lessons pass
        the guard; the benchmark's quota is unlimited)."""
        if not hasattr(local, "tier"):
            conn = psycopg.connect(url, autocommit=True)
            connections.append(conn)
            local.tier = PostgresTier(conn, {ORG: f"org:{team.org_id}"}, [], owner=team.loader_id)
        written, _ = local.tier.store_batch(ORG, batch, lambda new, old: new)
        return len(written), []

    return store


# -- the clients -------------------------------------------------------------------------------


@dataclass
class Sample:
    op: str
    seconds: float
    status: str  # the HTTP status, or the transport error's class
    records: int = 1  # the writes a request carried (an import's records)


@dataclass
class Usage:
    """CPU seconds used during a run: this process (the clients), the replicas, PostgreSQL's
    processes working for the benchmark (`_postgres_cpu`), and the whole machine."""

    client: float
    replicas: float
    postgres: float
    busy: float  # every core's non-idle time
    wall: float


def _ticks(stat_line: str) -> float:
    fields = stat_line.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _process_cpu(pid: int) -> float:
    try:
        return _ticks(Path(f"/proc/{pid}/stat").read_text())
    except OSError:
        return 0.0


def _postgres_cpu(database: str) -> dict[int, float]:
    """CPU seconds so far of each backend of the benchmark's database. Other databases' backends
    (other jobs on a shared server) are left out, and so are the server's WAL writer, checkpointer and
    background writer, which work for every database at once."""
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        pids = conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", (database,)).fetchall()
    return {pid: _process_cpu(pid) for (pid,) in pids}


def _postgres_used(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds between two readings; a backend that started in between counts from zero."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


def _machine_busy() -> float:
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return (sum(values[:8]) - idle) / os.sysconf("SC_CLK_TCK")


@contextmanager
def measured(replicas: Sequence[Replica], database: str) -> Iterator[list[Usage]]:
    """Yield a list that holds one Usage once the block ends."""

    def now() -> tuple[float, float, float, float]:
        replica_cpu = sum(_process_cpu(r.process.pid) for r in replicas)
        return time.process_time(), replica_cpu, _machine_busy(), time.perf_counter()

    out: list[Usage] = []
    postgres = _postgres_cpu(database)
    before = now()
    yield out
    after = now()
    used = _postgres_used(postgres, _postgres_cpu(database))
    client, replica_cpu, busy, wall = (b - a for a, b in zip(before, after, strict=True))
    out.append(Usage(client, replica_cpu, used, busy, wall))


@dataclass
class Run:
    name: str
    replicas: int
    clients: int
    seconds: float
    samples: list[Sample]
    usage: Usage
    load: float  # the machine's 1-minute load average when the run started
    pace_ms: float | None = None  # a paced run's period per client; None: back to back
    agents: Agents | None = None  # the agents run's schedule


@dataclass(frozen=True)
class Agents:
    """The agents run's schedule: each client searches every `search_s` seconds (drawn uniformly
    between the two) and writes every `write_s`, the first of each at a random phase."""

    search_s: tuple[float, float]
    write_s: float

    def label(self) -> str:
        low, high = self.search_s
        return f"agents (search every {low:g}–{high:g} s, write every {self.write_s:g} s)"


class Client:
    """One team member's agent: its own token and keep-alive connection to one replica."""

    def __init__(self, n: int, account: Account, replica: Replica, loaded: Loaded, seed: int) -> None:
        self.n, self.loaded = n, loaded
        self.http = httpx.Client(base_url=replica.base, headers=account.headers, timeout=30.0)
        self.rng = random.Random(seed * 1000 + n)
        self.written = 0
        self.samples: list[Sample] = []

    def timed(self, op: str, request: httpx.Request, due: float | None = None) -> None:
        """Send one request; its latency counts from `due` (a paced client's scheduled time) when given,
        so a request sent late because the one before was slow is not measured as fast."""
        started = time.perf_counter() if due is None else due
        try:
            answer = self.http.send(request)
            answer.read()
            status = str(answer.status_code)
        except httpx.HTTPError as exc:
            status = type(exc).__name__
        records = BATCH_RECORDS if op in ("import", "batch") else 1
        self.samples.append(Sample(op, time.perf_counter() - started, status, records))

    def search(self) -> httpx.Request:
        return self.http.build_request(
            "GET", "/v1/memories/search", params={"q": self.rng.choice(QUERIES), "scope": list(CHAIN)}
        )

    def list(self) -> httpx.Request:
        return self.http.build_request("GET", "/v1/memories", params={"scope": LIST_SCOPE})

    def lesson(self, run: str) -> dict[str, object]:
        """A write's fields: half new keys, half updates of loaded keys."""
        self.written += 1
        if self.rng.random() < 0.5 and self.loaded.update_keys:
            key = self.rng.choice(self.loaded.update_keys)  # an upsert: a loaded lesson seen again
        else:
            key = f"bench-{run}-{self.n}-{self.written}"
        return {
            "scope": WRITE_SCOPE,
            "key": key,
            "value": self.rng.choice(self.loaded.values),
            "tags": ["bench"],
            "provenance": {"agent": "claude-code", "session": f"bench-{self.n}", "repo": "acme/checkout"},
        }

    def write(self, run: str) -> httpx.Request:
        # Sent as a client's outbox sends a write: with a key that makes a retry land once.
        headers = {"Idempotency-Key": str(uuid.uuid4())}
        return self.http.build_request("POST", "/v1/memories", json=self.lesson(run), headers=headers)

    def batch(self, run: str) -> httpx.Request:
        """BATCH_RECORDS writes in one import request (distinct keys: one record a key a request)."""
        records: dict[str, dict[str, object]] = {}
        while len(records) < BATCH_RECORDS:
            lesson = self.lesson(run)
            records[str(lesson["key"])] = lesson
        body = {"records": list(records.values()), "space": f"org:{ORG}"}
        headers = {"Idempotency-Key": str(uuid.uuid4())}
        return self.http.build_request("POST", "/v1/memories/import", json=body, headers=headers)

    def write_batch(self, run: str) -> httpx.Request:
        """BATCH_RECORDS writes in one POST /v1/memories/batch, each with its idempotency key, as an
        outbox sends them."""
        writes = [{"write": self.lesson(run), "idempotency_key": str(uuid.uuid4())} for _ in range(BATCH_RECORDS)]
        return self.http.build_request("POST", "/v1/memories/batch", json={"writes": writes})

    def loop(self, run: str, mix: Sequence[tuple[str, int]], start: Start, pace_s: float | None) -> None:
        """Operations of `mix` until the time is up: back to back, or one every `pace_s` seconds (each
        client at its own phase), latency counted from the time it was due."""
        ops, weights = [op for op, _ in mix], [w for _, w in mix]
        start.wait()
        due = start.began + self.rng.random() * pace_s if pace_s else None
        while True:
            if due is None:
                if time.perf_counter() >= start.stop:
                    return
            else:
                if due >= start.stop:
                    return
                time.sleep(max(0.0, due - time.perf_counter()))
            op = self.rng.choices(ops, weights)[0]
            if op == "search":
                self.timed(op, self.search(), due)
            elif op == "list":
                self.timed(op, self.list(), due)
            elif op == "write":
                self.timed(op, self.write(run), due)
            elif op == "import":
                self.timed(op, self.batch(run), due)
            elif op == "batch":
                self.timed(op, self.write_batch(run), due)
            else:
                self.timed(op, self.http.build_request("GET", "/healthz"), due)
            if due is not None and pace_s is not None:
                due += pace_s

    def agent_loop(self, run: str, start: Start, agents: Agents) -> None:
        """As an agent works: a search every `agents.search_s`, a write every `agents.write_s`, each
        latency counted from when it was due, until the time is up."""
        start.wait()
        next_search = start.began + self.rng.uniform(0.0, agents.search_s[1])
        next_write = start.began + self.rng.uniform(0.0, agents.write_s)
        while (due := min(next_search, next_write)) < start.stop:
            time.sleep(max(0.0, due - time.perf_counter()))
            if due == next_search:
                self.timed("search", self.search(), due)
                next_search += self.rng.uniform(*agents.search_s)
            else:
                self.timed("write", self.write(run), due)
                next_write += agents.write_s


class Start:
    """Releases every client at once, and says when they stop."""

    def __init__(self, parties: int, seconds: float) -> None:
        self.seconds, self.began, self.stop = seconds, 0.0, 0.0
        self.barrier = threading.Barrier(parties, action=self._go)

    def _go(self) -> None:
        self.began = time.perf_counter()
        self.stop = self.began + self.seconds

    def wait(self) -> None:
        self.barrier.wait()


def run_clients(
    name: str,
    mix: Sequence[tuple[str, int]],
    replicas: Sequence[Replica],
    team: Team,
    loaded: Loaded,
    clients: int,
    seconds: float,
    seed: int,
    pace_ms: float | None = None,
    agents: Agents | None = None,
) -> Run:
    """`clients` threads, spread over the replicas' ports, each running `mix` until the time is up,
    back to back or (with `pace_ms`) one operation every `pace_ms`, or (with `agents`) on its schedule."""
    load_average = os.getloadavg()[0]
    tag = f"{name}-{len(replicas)}"
    workers = [Client(n, team.clients[n], replicas[n % len(replicas)], loaded, seed) for n in range(clients)]
    start = Start(clients + 1, seconds)
    try:
        for worker in workers:  # each keep-alive connection is open before the clock starts
            worker.http.get("/healthz").raise_for_status()
        pace_s = pace_ms / 1000 if pace_ms else None
        threads = [
            threading.Thread(target=w.agent_loop, args=(tag, start, agents), daemon=True)
            if agents
            else threading.Thread(target=w.loop, args=(tag, mix, start, pace_s), daemon=True)
            for w in workers
        ]
        for thread in threads:
            thread.start()
        with measured(replicas, team.database) as usage:
            start.wait()
            for thread in threads:
                while thread.is_alive():  # a join with a timeout lets Ctrl-C through
                    thread.join(0.5)
    except BaseException:
        # Interrupted: each client stops after the request it is in, which stopping the servers ends.
        start.stop = 0.0
        raise
    for worker in workers:
        worker.http.close()
    samples = [s for w in workers for s in w.samples]
    return Run(name, len(replicas), clients, usage[0].wall, samples, usage[0], load_average, pace_ms, agents)


def count_statements(url: str, team: Team, loaded: Loaded, work: Path) -> list[bench_statements.Counted]:
    """The statements a write sends, and a record of an import, counted in PostgreSQL's log on a
    replica of its own (bench_statements.py), one request at a time; the database's logging is
    reset after."""
    bench_statements.logging_all(ADMIN_URL, team.database, on=True)
    replica = None
    try:
        replica = start_replica(url, work)
        client = Client(0, team.clients[0], replica, loaded, seed=0)
        client.timed("write", client.write("warm"))  # the pool's first connection and its statements' plans

        def writes() -> None:
            for _ in range(bench_statements.WRITES):
                client.timed("write", client.write("count"))

        def imports() -> None:
            for _ in range(bench_statements.IMPORTS):
                client.timed("import", client.batch("count"))

        written = bench_statements.WRITES
        imported = bench_statements.IMPORTS * BATCH_RECORDS
        import_what = f"POST /v1/memories/import ({BATCH_RECORDS} records a request)"
        counts = [
            bench_statements.counted(url, team.database, "POST /v1/memories", writes, written, written),
            bench_statements.counted(url, team.database, import_what, imports, bench_statements.IMPORTS, imported),
        ]
        failed = [s for s in client.samples if not s.status.startswith("2")]
        if failed:
            raise RuntimeError(f"{len(failed)} of the counted requests failed: {failed[0].status}")
        return counts
    finally:
        if replica is not None:
            stop_replica(replica)
        bench_statements.logging_all(ADMIN_URL, team.database, on=False)


# -- the report --------------------------------------------------------------------------------


def percentile(ordered: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) of sorted values, nearest rank."""
    rank = max(1, round(q / 100 * len(ordered) + 0.5))
    return ordered[min(rank, len(ordered)) - 1]


def _target(run: Run, op: str, ok: list[float], throughput: float) -> str:
    if op == "search":
        p99 = percentile(ok, 99) * 1000
        verdict = "meets" if p99 < TARGET_SEARCH_P99_MS else "misses"
        at = "" if run.clients == TARGET_CLIENTS else f", set at {TARGET_CLIENTS} clients"
        return f"p99 < {TARGET_SEARCH_P99_MS:g} ms: {verdict}{at}"
    if op == "write" and run.name == "writes":
        verdict = "meets" if throughput >= TARGET_WRITES_S else "misses"
        return f">= {TARGET_WRITES_S:g} writes/s: {verdict}"
    if op in ("import", "batch"):
        records = throughput * BATCH_RECORDS
        verdict = "meets" if records >= TARGET_WRITES_S else "misses"
        how = "imported" if op == "import" else "written"
        return f"{records:,.0f} writes/s {how} ({BATCH_RECORDS} a request): >= {TARGET_WRITES_S:g} {verdict}"
    return ""


def table(runs: Sequence[Run]) -> str:
    header = ("replicas", "run", "operation", "count", "ops/s", "p50 ms", "p99 ms", "errors", "target")
    rows = []
    for run in runs:
        for op in sorted({s.op for s in run.samples}, key=OPS.index):
            mine = [s for s in run.samples if s.op == op]
            ok = sorted(s.seconds for s in mine if s.status.startswith("2"))
            errors = Counter(s.status for s in mine if not s.status.startswith("2"))
            throughput = len(ok) / run.seconds
            rows.append(
                (
                    str(run.replicas),
                    run_label(run),
                    op,
                    f"{len(mine):,}",
                    f"{throughput:,.0f}",
                    f"{percentile(ok, 50) * 1000:,.1f}" if ok else "-",
                    f"{percentile(ok, 99) * 1000:,.1f}" if ok else "-",
                    ", ".join(f"{n} × {status}" for status, n in sorted(errors.items())) or "0",
                    _target(run, op, ok, throughput) if ok else "",
                )
            )
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    right = {0, 3, 4, 5, 6}

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *map(line, rows)])


def run_label(run: Run) -> str:
    if run.agents is not None:
        return f"{run.clients} {run.agents.label()}"
    return run.name if run.pace_ms is None else f"{run.name} {run.pace_ms:g} ms"


def closed_loop(run: Run) -> bool:
    return run.pace_ms is None and run.agents is None


def usage_line(run: Run) -> str:
    u, n = run.usage, len(run.samples)
    per_request = f"{u.client / n * 1000:.2f} ms a request" if n else "-"
    others = u.busy - u.client - u.replicas - u.postgres  # other jobs on the machine
    pace = "" if run.pace_ms is None else f" (one every {run.pace_ms:g} ms a client)"
    what = run_label(run) if run.agents else run.name + pace
    return (
        f"{run.replicas} replica{'s' if run.replicas > 1 else ''}, {what}: {n / u.wall:,.0f} requests/s in"
        f" all; load average at the start {run.load:.1f}; CPU (cores busy): client {u.client / u.wall:.2f}"
        f" ({per_request}), replicas {u.replicas / u.wall:.2f}, PostgreSQL {u.postgres / u.wall:.2f}, anything else"
        f" {max(0.0, others) / u.wall:.2f}; whole machine {u.busy / u.wall:.2f} of {os.cpu_count()}"
    )


def floor_line(run: Run) -> str:
    """Little's law for a closed-loop run (no pause between requests): C clients always have C
    requests in the system, so the mean latency is C / throughput. When the cores are the
    bottleneck, the throughput is at most cores / (CPU a request), so the mean latency is at least
    C × (CPU a request) / cores: what no tuning of the waits can beat, only less CPU a request."""
    u, n = run.usage, len(run.samples)
    if not n:
        return f"{run.replicas} replica(s), {run.name}: no requests"
    mean = sum(s.seconds for s in run.samples) / n * 1000
    demand = (u.client + u.replicas + u.postgres) / n * 1000  # ms of CPU a request, every part of it
    cores = os.cpu_count() or 1
    return (
        f"{run.replicas} replica(s), {run.name}: mean latency {mean:,.1f} ms, C / throughput ="
        f" {run.clients} / {n / u.wall:,.0f} per s = {run.clients / (n / u.wall) * 1000:,.1f} ms;"
        f" CPU a request {demand:.2f} ms (client {u.client / n * 1000:.2f}, replicas {u.replicas / n * 1000:.2f},"
        f" PostgreSQL {u.postgres / n * 1000:.2f}) → on {cores} cores at least"
        f" {run.clients} × {demand:.2f} / {cores} = {run.clients * demand / cores:,.1f} ms" + _per_record(run)
    )


def _per_record(run: Run) -> str:
    """A batched run's CPU a write (a record), and the writes a second it allows on these cores."""
    u, records = run.usage, sum(s.records for s in run.samples if s.status.startswith("2"))
    if all(s.records == 1 for s in run.samples) or not records:
        return ""
    demand = (u.client + u.replicas + u.postgres) / records * 1000
    cores = os.cpu_count() or 1
    return (
        f"; a write (one of {BATCH_RECORDS} records) {demand:.2f} ms (client {u.client / records * 1000:.2f},"
        f" replicas {u.replicas / records * 1000:.2f}, PostgreSQL {u.postgres / records * 1000:.2f})"
        f" → at most {cores * 1000 / demand:,.0f} writes/s on {cores} cores"
    )


# -- main --------------------------------------------------------------------------------------


def bench(args: argparse.Namespace, work: Path) -> int:
    name = f"hivelore_bench_{os.getpid()}"
    started_load = os.getloadavg()[0]
    replicas: list[Replica] = []
    notes: list[str] = []
    created = False
    try:
        url = create_database(name, {} if args.postgres_defaults else DEPLOYMENT_SETTINGS)
        created = True
        log(f"database {name}; {args.clients} client accounts")
        team = make_team(url, max(args.clients, args.agents if "agents" in args.runs else 0))
        replicas.append(start_replica(url, work))
        log(f"loading {args.memories:,} memories ({LOAD_WAYS[args.load]})…")
        loaded = load(args.load, replicas[0], team, url, args.memories, args.seed)
        log(f"loaded in {loaded.seconds:.1f} s")
        if args.meaning_on:
            # As the server ships: with the model. The rows get vectors first, or the replicas would
            # spend the runs computing them; then the loading replica gives way to one with the model.
            stop_replica(replicas.pop())
            notes.append(with_vectors(url, loaded, args.meaning_texts))
            replicas.append(start_ready(url, work, meaning=True))

        statements = count_statements(url, team, loaded, work) if args.statements else []
        runs = []
        outbox_reports: list[tuple[list[bench_outbox.Round], int, int]] = []
        outbox_writes = 60 if args.small else OUTBOX_WRITES
        if "floor" in args.runs:
            # The floor: the same clients against a route that does nothing, back to back.
            log(f"1 replica, floor (GET /healthz): {args.clients} clients for {args.seconds:g} s…")
            runs.append(
                run_clients("floor", (("healthz", 1),), replicas, team, loaded, args.clients, args.seconds, args.seed)
            )
        for count in (1, 2):
            while len(replicas) < count:
                replicas.append(start_ready(url, work, meaning=args.meaning_on))
            for run_name, mix, pace in (
                ("mixed", MIX, None),
                ("search", (("search", 1),), None),
                ("writes", (("write", 1),), None),
                ("batched", (("import", 1),), None),
                ("writebatch", (("batch", 1),), None),
                ("paced", MIX, args.pace_ms),
            ):
                if run_name not in args.runs:
                    continue
                # Batches of 50 from every client at once queue past the replicas' 5 s wait for a connection
                # (503): as many senders as the replicas have connections, as outboxes that send in turn.
                batches = run_name in ("batched", "writebatch")
                clients = min(args.clients, BATCH_SENDERS * count) if batches else args.clients
                log(f"{count} replica(s), {run_name}: {clients} clients for {args.seconds:g} s…")
                runs.append(run_clients(run_name, mix, replicas, team, loaded, clients, args.seconds, args.seed, pace))
            if "agents" in args.runs:
                schedule = args.schedule
                log(f"{count} replica(s), {args.agents} {schedule.label()} for {args.seconds:g} s…")
                agents = run_clients(
                    "agents", MIX, replicas, team, loaded, args.agents, args.seconds, args.seed, agents=schedule
                )
                runs.append(agents)
            if "outbox" in args.runs:
                senders = min(args.clients, BATCH_SENDERS * count)
                replayed = bench_outbox.replay(replicas, team, loaded, senders, outbox_writes, work, args.seed)
                outbox_reports.append((replayed, count, senders))
        notes += [replica_memory(replica) for replica in replicas]
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*), pg_size_pretty(pg_database_size(current_database())) FROM memories"
            ).fetchone()
        end = f"{row[0]:,} memories (the runs' writes included), database {row[1]}" if row else "?"
    finally:
        for replica in replicas:
            stop_replica(replica)
        if created:
            drop_database(name)
            log(f"dropped {name}")

    report(args, loaded, runs, end, started_load)
    print()
    for note in notes:
        print(note)
    if statements:
        print()
        bench_statements.report(statements)
    for replayed, count, senders in outbox_reports:
        print()
        bench_outbox.report(replayed, count, senders, outbox_writes)
    if "hooks" in args.runs:
        # The client's side: hooks in remote mode with a team server up, slow and down (its own server).
        rounds, lessons = (5, 30) if args.small else (20, 500)
        log(f"hooks: {rounds} rounds per condition, {lessons} lessons…")
        print()
        bench_remote_hooks.report(bench_remote_hooks.measure(rounds, lessons, work / "hooks"))
    return 0


def settings_text() -> str:
    return ", ".join(f"{k} = {v}" for k, v in DEPLOYMENT_SETTINGS.items())


def report(args: argparse.Namespace, loaded: Loaded, runs: Sequence[Run], end: str, started_load: float) -> None:
    try:
        version = metadata.version("hivelore")
    except metadata.PackageNotFoundError:
        version = "unknown"
    print(f"hivelore {version} team server load benchmark · {datetime.now().astimezone():%Y-%m-%d %H:%M %Z}")
    with psycopg.connect(ADMIN_URL) as conn:
        server_version = conn.execute("SHOW server_version").fetchone()
    print(
        f"python {platform.python_version()} · {platform.platform()} · {os.cpu_count()} CPUs"
        f" ({CORES_NOTE}) · PostgreSQL {server_version[0] if server_version else '?'} at 127.0.0.1:5432,"
        f" the database {'with its defaults' if args.postgres_defaults else f'set {settings_text()} (docs/server.md)'};"
        f" replicas {'with the model (recall by meaning)' if args.meaning_on else 'without the model (--no-meaning)'}"
    )
    print(
        f"{args.clients} clients (threads, keep-alive httpx, a token each) for {args.seconds:g} s per run, back to"
        f" back except `paced` (one operation every {args.pace_ms:g} ms a client,"
        f" {args.clients / args.pace_ms * 1000:,.0f} offered a second, its latency counted from when it was due)"
        f" and `agents` ({args.agents} clients, {args.schedule.label()}, latency from when due);"
        f" seed {args.seed}; load average at the"
        f" start {started_load:.1f}, at the end {os.getloadavg()[0]:.1f}"
    )
    print(
        f"load: {loaded.memories:,} memories ({args.memories:,} synthetic + {LIST_SIZE} in {LIST_SCOPE}) into"
        f" org:{ORG} {LOAD_WAYS[args.load]}, {IMPORT_BATCH} a batch, {LOAD_STREAMS} batches at once:"
        f" {loaded.seconds:.1f} s ({loaded.memories / loaded.seconds:,.0f} memories/s); written {loaded.written:,},"
        f" rejected {len(loaded.rejected):,}"
    )
    for rejected in loaded.rejected[:3]:
        print(f"  rejected: {rejected}")
    print(f"at the end: {end}")
    print()
    print(table(runs))
    print()
    for run in runs:
        print(usage_line(run))
    print()
    print("the floor of closed-loop runs (Little's law; `floor` is GET /healthz, the least a request costs here):")
    for run in runs:
        if closed_loop(run):
            print(floor_line(run))
    print()
    print(
        f"targets (issue 13, on {CORES_NOTE}): search p99 < {TARGET_SEARCH_P99_MS:g} ms at {TARGET_CLIENTS}"
        f" concurrent clients; >= {TARGET_WRITES_S:g} writes/s. Printed, not asserted."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=100_000, help="memories loaded (default 100,000)")
    parser.add_argument(
        "--clients", type=int, default=TARGET_CLIENTS, help=f"concurrent clients (default {TARGET_CLIENTS})"
    )
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds per run (default 20)")
    parser.add_argument(
        "--seed", type=int, default=1, help="seed of the synthetic memories and the clients (default 1)"
    )
    parser.add_argument(
        "--load",
        choices=sorted(LOAD_WAYS),
        default="direct",
        help="how the memories are loaded: PostgresTier.store_batch on direct connections (default), or"
        " POST /v1/memories/import (guard and quota on every record; slow from ~10,000 memories of one owner)",
    )
    parser.add_argument(
        "--pace-ms",
        type=float,
        default=None,
        help=f"the paced run's period per client, in ms (default {PACE_MS:g}; {SMALL_PACE_MS:g} with --small)",
    )
    parser.add_argument(
        "--agents",
        type=int,
        default=None,
        help=f"clients of the agents run (default {AGENTS}; {SMALL_AGENTS} with --small), each searching every"
        f" {AGENT_SEARCH_S[0]:g}–{AGENT_SEARCH_S[1]:g} s and writing every {AGENT_WRITE_S:g} s",
    )
    parser.add_argument(
        "--runs",
        default=",".join(RUNS),
        help=f"the runs to make, comma-separated (default all: {','.join(RUNS)}); e.g. --runs floor,writes",
    )
    parser.add_argument(
        "--statements",
        action="store_true",
        help="first count the statements a write and an import send to PostgreSQL, in its log (bench_statements.py)",
    )
    parser.add_argument(
        "--postgres-defaults",
        action="store_true",
        help="leave PostgreSQL's own settings on the benchmark's database instead of docs/server.md's"
        f" ({settings_text()})",
    )
    parser.add_argument("--small", action="store_true", help="the CI size: 2,000 memories, 5 clients, 3 s per run")
    parser.add_argument(
        "--no-meaning",
        action="store_true",
        help="replicas without the model (BM25 alone); by default they run with it, as `hivelore serve` does",
    )
    parser.add_argument(
        "--meaning",
        action="store_true",
        help="measure recall by meaning instead (benchmarks/bench_meaning.py): search and writes with and"
        " without the model side by side, its load time and the replicas' memory",
    )
    parser.add_argument(
        "--meaning-texts",
        type=int,
        default=None,
        help="the rows whose vectors are computed; the others get copies (default 2,000; 200 with --small)",
    )
    args = parser.parse_args(argv)
    args.meaning_on = not args.no_meaning
    if args.meaning_texts is None:
        args.meaning_texts = 200 if args.small else 2000
    args.runs = [name.strip() for name in args.runs.split(",") if name.strip()]
    unknown = [name for name in args.runs if name not in RUNS]
    if unknown or not args.runs:
        parser.error(f"--runs takes names among {', '.join(RUNS)}, not {', '.join(unknown) or 'none'}")
    if args.small:
        args.memories, args.clients, args.seconds = 2000, 5, 3.0
    if args.pace_ms is None:
        args.pace_ms = SMALL_PACE_MS if args.small else PACE_MS
    if args.agents is None:
        args.agents = SMALL_AGENTS if args.small else AGENTS
    args.schedule = (
        Agents(SMALL_AGENT_SEARCH_S, SMALL_AGENT_WRITE_S) if args.small else Agents(AGENT_SEARCH_S, AGENT_WRITE_S)
    )
    if min(args.memories, args.clients, args.seconds, args.pace_ms, args.agents) <= 0:
        parser.error("--memories, --clients, --seconds, --pace-ms and --agents must be positive")
    # SIGTERM (a CI runner giving up) unwinds like Ctrl-C: the servers stop and the database is dropped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="hivelore-bench-server-") as work:
        try:
            if args.meaning:
                import bench_meaning  # it uses this module's harness

                return bench_meaning.bench(args, Path(work))
            return bench(args, Path(work))
        except RuntimeError as exc:
            print(f"FAILED: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("interrupted: the servers were stopped and the database dropped", file=sys.stderr)
            return 130


if __name__ == "__main__":
    raise SystemExit(main())
