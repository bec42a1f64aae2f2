"""`hivelore search`'s wall time by where it is answered: `python benchmarks/bench_warm_search.py [--count N]`.

On a synthetic store of N memories (synth.py) in a temporary home, with every vector computed once
beforehand, it times whole `hivelore search` processes, the modes interleaved round by round so that
a shared machine's load falls on each alike (each round another query), and prints each mode's median:

- BM25 alone: no hook server (`HIVELORE_HOOK_SERVER=off`), today's plain search;
- `--meaning`, cold: the model loaded in the command's own process;
- the warm hook server: a plain search, answered by a server that has loaded the model (BM25 and meaning);
- `--lexical` beside that server: BM25 in the command's own process.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import synth

import hivelore as hivelore_package
from hivelore.hooks.client import server_state, start_server, stop_server

# One per round, each mode asked the same: a warm process caches a query's vector, and a user's next
# search is another question.
QUERIES = (
    "the test suite cannot reach the database", "node runs out of memory while building", "flaky end to end checks",
    "payment sandbox refuses too many calls", "migrations missing after a rebase", "tax service crashes on null",
    "container stopped before the integration run", "lint fails on generated files", "slow login page on mobile",
    "webhook signature does not verify", "refund job keeps retrying", "the cache serves stale prices",
    "docker compose cannot find the image", "a port is already taken on startup", "timezone bug in the reports",
    "the queue worker hangs at shutdown", "secrets missing in the ci pipeline", "type errors after upgrading",
    "locale breaks number parsing", "the inventory sync drops items",
)  # fmt: skip
LOAD_WAIT_S = 120.0


def hivelore(repo: Path, env: dict[str, str], *args: str) -> float:
    """Milliseconds of one `hivelore ARGS` process."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "hivelore", *args], cwd=repo, env=env, check=True, capture_output=True)
    return (time.perf_counter() - start) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=3000, help="memories in the store (default 3000)")
    parser.add_argument(
        "--rounds", type=int, default=15, help=f"searches per mode (default 15, at most {len(QUERIES)})"
    )
    args = parser.parse_args()
    if not 1 <= args.rounds <= len(QUERIES):
        parser.error(f"--rounds must be from 1 to {len(QUERIES)}: each round asks another query")
    # As pip leaves an installed package: with PYTHONDONTWRITEBYTECODE set (some machines and CI images),
    # an editable install would compile hivelore from source in every timed process.
    compileall.compile_dir(Path(hivelore_package.__file__).parent, quiet=1)
    with tempfile.TemporaryDirectory(prefix="hivelore-warm-search-") as folder:
        home, repo = Path(folder) / "home", Path(folder) / "checkout"
        synth.generate(home, args.count)
        repo.mkdir()
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
        subprocess.run(["git", "remote", "add", "origin", "git@github.com:acme/checkout.git"], cwd=repo, check=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("HIVELORE_")}
        env.update(HIVELORE_HOME=str(home), HIVELORE_HOOK_MODEL="on", HIVELORE_HOOK_SERVER="on")
        off = {**env, "HIVELORE_HOOK_SERVER": "off"}
        hivelore(repo, off, "index", "rebuild")
        filled = hivelore(repo, off, "search", "--meaning", QUERIES[0])
        print(f"{args.count:,} memories; every vector computed in {filled:,.0f} ms")
        modes = {
            "BM25 alone (no server)": (off, []),
            "--meaning, cold (no server)": (off, ["--meaning"]),
            "warm hook server (plain search)": (env, []),
            "--lexical beside the warm server": (env, ["--lexical"]),
        }
        os.environ.update(env)  # the server starts with these
        start_server(str(home))
        try:
            deadline = time.monotonic() + LOAD_WAIT_S
            while not server_state(str(home), env).endswith("recall by meaning"):
                if time.monotonic() > deadline:
                    raise SystemExit(f"the model was not loaded: {server_state(str(home), env)}")
                time.sleep(0.5)
            times: dict[str, list[float]] = {name: [] for name in modes}
            for query in QUERIES[: args.rounds]:
                for name, (mode_env, flags) in modes.items():
                    times[name].append(hivelore(repo, mode_env, "search", *flags, query))
            print(server_state(str(home), env))
        finally:
            stop_server(str(home))
    for name, ms in times.items():
        print(f"{name:34} median {statistics.median(ms):5.0f} ms  (min {min(ms):.0f}, max {max(ms):.0f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
