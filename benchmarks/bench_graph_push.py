"""`hivelore graph push` of a large graph to a live team server: the first push of every file, a push
with nothing changed, and the re-push after one file was edited; then the server's first and next
answers from the pushed graph.

It creates a database of its own (hivelore_graphpush_<pid>) on the PostgreSQL at 127.0.0.1:5432,
migrates it, makes an organisation sharing repo::acme/checkout with one member (an hl_rw_ token),
and starts `hivelore serve` on loopback (bench_remote_hooks.py's). A HIVELORE_HOME in remote mode
and a checkout of synthetic Python code (`synth.code`, the generator bench_dashboard.py uses:
30,000 symbols by default) indexed with `hivelore graph index`. Each round, as real `hivelore`
processes:

    export (baseline)   `hivelore graph export`: the whole local graph read and printed, no network
    first push          every file sent (the server's rows of the repository deleted before it)
    unchanged push      the listing compared, nothing sent
    index one file      one module edited (a function appended) and `hivelore graph index FILE`, as an
                        edit hook does (not part of the push, which sends the graph as indexed)
    one-file push       that file sent

and then, on the server, `GET /v1/graph/blast-radius` once right after the push (the graph loaded
from PostgreSQL into SQLite) and again (the copy kept by the process). Medians over the rounds, and
each push's ratio to the baseline's median.

    python benchmarks/bench_graph_push.py            # 30,000 symbols, 3 rounds
    python benchmarks/bench_graph_push.py --small    # CI: 3,000 symbols, 1 round

The database and the server are removed at the end, on failure and on Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth  # noqa: E402 -- the sibling modules, found through the path set just above
from bench_remote_hooks import TeamServer, database, make_member  # noqa: E402

REPO = "acme/checkout"
EDITED = "src/payments/core/mod_000.py"
SYMBOL = "src/payments/core/mod_000.py::payments_core_mod_000_f3"


class Checkout:
    """A HIVELORE_HOME in remote mode and a checkout of synthetic code, its graph indexed."""

    def __init__(self, work: Path, endpoint: str, token: str, symbols: int) -> None:
        self.home, self.repo = work / "home", work / "checkout"
        self.home.mkdir(parents=True)
        (self.home / "config.json").write_text(json.dumps({"mode": "remote", "endpoint": endpoint}))
        self.repo.mkdir()
        for argv in (
            ["git", "init", "-q", "-b", "main"],
            ["git", "remote", "add", "origin", f"git@github.com:{REPO}.git"],
            ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-q",
             "--allow-empty", "-m", "bench"],
        ):  # fmt: skip
            subprocess.run(argv, cwd=self.repo, check=True, capture_output=True)
        self.cli("remote", "login", "--token", "-", stdin=token)
        self.stats = synth.code(self.repo, symbols)
        self.cli("graph", "index")

    def cli(self, *args: str, stdin: str = "") -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HIVELORE_")}
        env |= {"HIVELORE_HOME": str(self.home), "HIVELORE_HOOK_SERVER": "off"}
        done = subprocess.run(
            [sys.executable, "-m", "hivelore", *args], cwd=self.repo, env=env, input=stdin,
            capture_output=True, text=True, timeout=1800,
        )  # fmt: skip
        if done.returncode:
            raise SystemExit(f"hivelore {' '.join(args)} exited {done.returncode}: {done.stderr}")
        return done.stdout

    def push(self) -> tuple[float, dict]:
        started = time.perf_counter()
        answer = json.loads(self.cli("graph", "push", "--json"))
        return (time.perf_counter() - started) * 1000, answer


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def bench(symbols: int, rounds: int) -> None:
    with database("hivelore_graphpush") as url, tempfile.TemporaryDirectory(prefix="hivelore-graphpush-") as tmp:
        token = make_member(url)
        server = TeamServer(url, Path(tmp) / "server.log")
        try:
            endpoint = f"http://127.0.0.1:{server.port}"
            started = time.perf_counter()
            checkout = Checkout(Path(tmp), endpoint, token, symbols)
            made = time.perf_counter() - started
            print(
                f"{checkout.stats.symbols:,} symbols in {checkout.stats.files:,} files, written and indexed:"
                f" {made:.1f} s"
            )
            rows = _rounds(checkout, url, endpoint, token, rounds)
        finally:
            server.stop()
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; {rounds} round(s)")
    baseline = statistics.median(rows["export (baseline)"])
    for name, values in rows.items():
        median = statistics.median(values)
        ratio = f"   {median / baseline:5.2f}x baseline" if name.endswith("push") else ""
        print(f"  {name:<28} median {median:9.1f} ms   min {min(values):9.1f} ms{ratio}")


def _rounds(checkout: Checkout, url: str, endpoint: str, token: str, rounds: int) -> dict[str, list[float]]:
    rows: dict[str, list[float]] = {
        name: [] for name in ("export (baseline)", "first push", "unchanged push", "index one file", "one-file push",
                              "server blast radius, first", "server blast radius, next")
    }  # fmt: skip
    query = {"repo": REPO, "symbol": SYMBOL}
    with httpx.Client(base_url=endpoint, headers={"Authorization": f"Bearer {token}"}, timeout=600) as api:
        for n in range(rounds):
            with psycopg.connect(url, autocommit=True) as conn:
                for table in ("graph_calls", "graph_symbols", "graph_files"):
                    conn.execute(f"DELETE FROM {table}")  # noqa: S608 -- the tables' own names
            rows["export (baseline)"].append(timed(lambda: checkout.cli("graph", "export")))
            spent, first = checkout.push()
            rows["first push"].append(spent)
            spent, again = checkout.push()
            assert again["batches"] == 0, again
            rows["unchanged push"].append(spent)
            edited = checkout.repo / EDITED
            edited.write_text(edited.read_text() + f"\n\ndef bench_extra_{n}(value):\n    return value\n")
            rows["index one file"].append(timed(lambda: checkout.cli("graph", "index", EDITED)))
            spent, one = checkout.push()
            assert one["files"] == 1, one
            rows["one-file push"].append(spent)
            rows["server blast radius, first"].append(timed(lambda: api.get("/v1/graph/blast-radius", params=query)))
            rows["server blast radius, next"].append(timed(lambda: api.get("/v1/graph/blast-radius", params=query)))
            if n == 0:
                print(f"first push: {first['files']:,} files, {first['symbols']:,} symbols, {first['calls']:,} calls"
                      f" in {first['batches']} requests; held {first['held']}")  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--symbols", type=int, default=30_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--small", action="store_true", help="3,000 symbols, 1 round (CI)")
    args = parser.parse_args(argv)
    if args.small:
        args.symbols, args.rounds = 3_000, 1
    bench(args.symbols, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
