"""Timings of `hivelore dashboard`'s memory view and code map on a synthetic store (benchmarks/synth.py).

For each size, in a fresh temporary folder: a git repository `checkout` (origin
git@github.com:acme/checkout.git, branch main), a HIVELORE_HOME filled by `synth.generate`, the index
built (`hivelore index rebuild`), and a real `hivelore dashboard` on a free loopback port. Then, in
rounds that interleave the pages so machine noise hits all of them alike, it times a whole HTTP
request (httpx, a kept connection) of:

    /memories                     the folder's chain, first 200 rows
    /memories?q=ECONNREFUSED 5432 a search, ranked by the service
    /memories?kind=fact           a filter
    /memories?archived=true       archived and expired ones
    /tasks                        the task board (empty here)

and, when Debian's chromium is installed, the memory view's first contentful paint and
domContentLoaded from the browser's own timings (Playwright, Navigation Timing), median of the runs.

The checkout also gets a synthetic Python code base of half as many symbols as memories
(`synth.code`: 30,000 symbols beside 60,000 memories, the issue's pair), indexed with `hivelore graph
index`, and three developers' tasks claiming ten symbols each. The code map is timed the same way:

    /codemap                      the page: top folders, legend, conflicts between the tasks
    /codemap/folder.json          the calls between the top folders (what the page fetches next)
    /codemap/file.json            one file's symbols and calls
    /codemap/blast.json           a symbol's callers within 3 hops
    /codemap/path.json            the call path between two symbols (or their nearest common caller)
    /codemap/hotspots.json        PageRank and betweenness over the whole graph

and in chromium: first contentful paint, the top folders drawn ("codemap-nodes"), the map drawn
with its calls ("codemap-drawn") and the hot spots listed ("codemap-hotspots"), from the page's
performance marks; each navigation waits for the last of them. It prints medians and minimums,
the memory view's first paint against the issue's 300 ms at 60,000 memories and the code map's
against 1 s at 30,000 symbols; it never fails on a figure.

With `--server`, the same code graph is also pushed (`remote.graph.push`, what `hivelore graph push`
sends) to a real `hivelore serve` over a database of the run's own on the local PostgreSQL (dropped at
the end), for an organisation sharing `repo::acme/checkout`, and the team server's code map
(`/dash/codemap`, after logging in with the member's token) is timed in chromium the same way: its
first paint, and its marks, which include rebuilding the pushed graph in memory when the process
has not cached it.

    python benchmarks/bench_dashboard.py                        # 6,000 and 60,000 memories, 7 runs
    python benchmarks/bench_dashboard.py --sizes 600 --runs 2   # a quick run (.ci/run)
    python benchmarks/bench_dashboard.py --sizes 60000 --runs 5 --server
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth  # noqa: E402 -- the sibling module, found through the path set just above

PAGES = {
    "/memories": {},
    "/memories?q=…": {"q": "ECONNREFUSED 5432"},
    "/memories?kind=fact": {"kind": "fact"},
    "/memories?archived=true": {"archived": "true"},
    "/tasks": None,
}
PAINT_TARGET_MS = 300.0
TARGET_SIZE = 60_000
MAP_PAINT_TARGET_MS = 1_000.0
MAP_TARGET_SYMBOLS = 30_000
DEVELOPERS = ("dev-a", "dev-b", "dev-c")
CLAIMS_PER_TASK = 10
# The paint entry may be queued after `load`: wait for it through a buffered observer.
FIRST_PAINT = """new Promise((done) => new PerformanceObserver((list) => {
  const entry = list.getEntries().find((e) => e.name === "first-contentful-paint");
  if (entry) done(entry.startTime);
}).observe({type: "paint", buffered: true}))"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _repo(path: Path) -> None:
    path.mkdir(parents=True)
    for argv in (
        ["git", "init", "-q", "-b", "main", str(path)],
        ["git", "-C", str(path), "remote", "add", "origin", "git@github.com:acme/checkout.git"],
        ["git", "-C", str(path), "-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
         "commit", "-q", "--allow-empty", "-m", "bench"],
    ):  # fmt: skip
        subprocess.run(argv, check=True, capture_output=True)


def _start(repo: Path, env: dict[str, str], log: Path) -> tuple[str, subprocess.Popen[bytes]]:
    port = _free_port()
    with log.open("ab") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "hivelore", "dashboard", "--port", str(port)], cwd=repo, env=env,
            stdout=sink, stderr=sink,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{url}/tasks", timeout=2).status_code == 200:
                return url, process
        except httpx.TransportError:
            time.sleep(0.1)
    process.terminate()
    raise SystemExit(f"the dashboard did not start:\n{log.read_text()}")


def _http(url: str, runs: int, pages: dict[str, dict | None] = PAGES) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {name: [] for name in pages}
    with httpx.Client(base_url=url, timeout=600) as client:
        client.get(next(iter(pages)).split("?")[0])  # warm: the first request opens the stores
        for _ in range(runs):
            for name, params in pages.items():
                path = name.split("?")[0]
                started = time.perf_counter()
                answer = client.get(path, params=params)
                timings[name].append((time.perf_counter() - started) * 1000)
                if answer.status_code != 200:
                    raise SystemExit(f"{name} answered {answer.status_code}: {answer.text[:300]}")
    return timings


def _browser(
    url: str, runs: int, path: str = "/memories", marks: tuple[str, ...] = (), token: str = ""
) -> dict[str, list[float]] | None:
    """Navigation Timing of `path`, and the start time of each performance mark the page sets (waited
    for); with `token`, after logging in to the team server's dashboard with it."""
    chromium = shutil.which("chromium")
    if chromium is None:
        return None
    from playwright.sync_api import sync_playwright

    found: dict[str, list[float]] = {"first contentful paint": [], "domContentLoaded": [], **{m: [] for m in marks}}
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page()
        page.set_default_timeout(600_000)
        if token:
            page.goto(f"{url}/dash/login")
            page.fill("input[name=token]", token)
            page.click("form.login button[type=submit]")
            page.wait_for_url("**/dash/memories")
        page.goto(f"{url}{path}")  # warm
        for _ in range(runs):
            page.goto(f"{url}{path}", wait_until="load")
            paint = page.evaluate(FIRST_PAINT)
            loaded = page.evaluate("performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
            found["first contentful paint"].append(float(paint))
            found["domContentLoaded"].append(float(loaded))
            for mark in marks:
                page.wait_for_function("(m) => performance.getEntriesByName(m).length > 0", arg=mark)
                found[mark].append(float(page.evaluate("(m) => performance.getEntriesByName(m)[0].startTime", mark)))
        browser.close()
    return found


def _row(name: str, values: list[float]) -> str:
    return f"  {name:<28} median {statistics.median(values):8.1f} ms   min {min(values):8.1f} ms"


def _code(repo: Path, env: dict[str, str], symbols: int, seed: int) -> dict[str, dict | None]:
    """Write and index the synthetic code, claim some of it for three developers' tasks; the code
    map's requests to time, on symbols of that code."""
    from hivelore.team.store import SqliteTeam

    started = time.perf_counter()
    stats = synth.code(repo, symbols, seed)
    subprocess.run([sys.executable, "-m", "hivelore", "graph", "index"], cwd=repo, env=env, check=True,
                   capture_output=True)  # fmt: skip
    print(f"{stats.symbols:,} symbols in {stats.files:,} files, {stats.calls:,} calls written and indexed"
          f" in {time.perf_counter() - started:.1f} s")  # fmt: skip
    service, layer, module = "payments", "core", "mod_000"
    file = f"src/{service}/{layer}/{module}.py"
    symbol = f"{file}::{service}_{layer}_{module}_f3"
    rng = random.Random(seed)
    files = sorted(str(p.relative_to(repo)) for p in (repo / "src").rglob("mod_*.py"))
    with SqliteTeam.open(env["HIVELORE_HOME"]) as team:
        for developer in DEVELOPERS:
            task = team.create_intent(developer, "acme/checkout", f"{developer}'s change")
            picked = rng.sample(files, CLAIMS_PER_TASK)
            team.claim(task.id, [f"{p}::{p.split('/')[1]}_{p.split('/')[2]}_{Path(p).stem}_f1" for p in picked])
    return {
        "/codemap": {},
        "/codemap/folder.json": {"path": "src"},
        "/codemap/file.json": {"path": file},
        "/codemap/blast.json": {"symbol": symbol},
        "/codemap/path.json": {"a": f"src/{service}/api/{module}.py::{service}_api_{module}_f7", "b": symbol},
        "/codemap/hotspots.json": {"limit": "20"},
    }


def _verdict(label: str, value: float, target: float, size: int, at: int, unit: str) -> None:
    if size < at:  # a target is for the size: a smaller store's figure is no verdict
        print(f"  {label} {value:.0f} ms (the {target:.0f} ms target is for {at:,} {unit})")
        return
    verdict = "PASS" if value < target else "MISS"
    print(f"  {label} {value:.0f} ms against the target {target:.0f} ms at {at:,} {unit}: {verdict}")


def _server_map(repo: Path, env: dict[str, str], runs: int, work: Path) -> dict[str, list[float]] | None:
    """The team server's code map of the pushed graph of `repo`, timed in chromium."""
    import psycopg
    from bench_remote_hooks import TeamServer, database

    from hivelore.codegraph import Graph
    from hivelore.remote.client import Client, Endpoint
    from hivelore.remote.graph import push
    from hivelore.server.postgres import accounts, migrate

    with database("hivelore_dashboard") as url:
        with psycopg.connect(url, autocommit=True) as conn:
            migrate.migrate(conn)
            user = accounts.add_user(conn, "dev")
            accounts.create_org(conn, "acme", user.id)
            org_id, _ = accounts.role_in(conn, "acme", user.id)
            accounts.bind_scope(conn, org_id, "repo::acme/checkout", user.id)
            token = accounts.create_token(conn, user.id, "rw", name="bench").token
        server = TeamServer(url, work / "serve.log")
        try:
            site = f"http://127.0.0.1:{server.port}"
            started = time.perf_counter()
            with Graph.open(env["HIVELORE_HOME"], str(repo)) as graph:
                sent = push(Client(Endpoint(site), token, timeout_s=120.0), graph, "acme/checkout")
            print(f"pushed {sent.files:,} files, {sent.symbols:,} symbols, {sent.calls:,} calls to the team server"
                  f" in {time.perf_counter() - started:.1f} s")  # fmt: skip
            return _browser(site, runs, "/dash/codemap?repo=acme/checkout", MARKS, token)
        finally:
            server.stop()


MARKS = ("codemap-nodes", "codemap-drawn", "codemap-hotspots")


def bench(size: int, runs: int, seed: int, server: bool = False) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=f"hivelore-bench-dashboard-{size}-"))
    process = None
    try:
        home, repo = tmp / "home", tmp / "checkout"
        _repo(repo)
        stats = synth.generate(home, size, seed)
        chain = sum(stats.per_scope[s] for s in synth.CHAIN)
        env = {k: v for k, v in os.environ.items() if not k.startswith("HIVELORE_")}
        env.update(HIVELORE_HOME=str(home), HIVELORE_HOOK_SERVER="off")
        subprocess.run([sys.executable, "-m", "hivelore", "index", "rebuild"], cwd=repo, env=env, check=True,
                       capture_output=True)  # fmt: skip
        symbols = size // 2
        map_pages = _code(repo, env, symbols, seed)
        url, process = _start(repo, env, tmp / "dashboard.log")
        print(f"{size:,} memories ({chain:,} in the chain), {runs} runs; whole HTTP requests:")
        for name, values in _http(url, runs).items():
            print(_row(name, values))
        print(f"the code map at {symbols:,} symbols, {runs} runs; whole HTTP requests:")
        for name, values in _http(url, runs, map_pages).items():
            print(_row(name, values))
        painted = _browser(url, runs)
        # Each navigation waits for the hot spots too: their betweenness holds the GIL (rustworkx), so one
        # still being computed for the last page would stall the server under the next one.
        mapped = _browser(url, runs, "/codemap", MARKS)
        if painted is None or mapped is None:
            print("  (chromium is not installed: no browser timings)")
            return
        on_server = _server_map(repo, env, runs, tmp) if server else None
        print("  the memory view in chromium (Navigation Timing, from navigation start):")
        for name, values in painted.items():
            print(_row(name, values))
        print("  the code map in chromium (Navigation Timing and the page's marks, from navigation start):")
        for name, values in mapped.items():
            print(_row(name, values))
        paint = statistics.median(painted["first contentful paint"])
        _verdict("memory view first paint", paint, PAINT_TARGET_MS, size, TARGET_SIZE, "memories")
        paint = statistics.median(mapped["first contentful paint"])
        _verdict("code map first paint", paint, MAP_PAINT_TARGET_MS, symbols, MAP_TARGET_SYMBOLS, "symbols")
        if on_server is not None:
            print("  the team server's code map of the pushed graph in chromium (from navigation start):")
            for name, values in on_server.items():
                print(_row(name, values))
            paint = statistics.median(on_server["first contentful paint"])
            _verdict("team server's code map first paint", paint, MAP_PAINT_TARGET_MS, symbols, MAP_TARGET_SYMBOLS,
                     "symbols")  # fmt: skip
    finally:
        if process is not None:
            process.terminate()
            process.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[6_000, 60_000], help="store sizes")
    parser.add_argument("--runs", type=int, default=7, help="timed runs of each page (default 7)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the synthetic store (default 1)")
    parser.add_argument(
        "--server", action="store_true", help="also the team server's code map (needs PostgreSQL on 127.0.0.1:5432)"
    )
    args = parser.parse_args(argv)
    for size in args.sizes:
        bench(size, args.runs, args.seed, args.server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
