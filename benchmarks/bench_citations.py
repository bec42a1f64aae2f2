"""What checking cited code costs the prompt hook: the same store and prompt, with and without cites.

In a fresh temporary folder: a git repository `checkout` (origin git@github.com:acme/checkout.git)
holding a module of 200 functions, its code graph (`hivelore graph index`), and two homes filled by
`synth.generate` with the same memories, plus five lessons the prompt finds. In the home "plain"
those lessons cite nothing; in the home "citing" each cites two functions (`--cites`), one of them
`ledger_step_0`, which is then changed and re-indexed, so the hook's answer marks every lesson "code
changed since" (checked in the output). Then, in interleaved rounds, it times whole processes:

    python -c pass                               the bare interpreter
    hook: prompt, plain / citing                 with the resident hook server (the usual path)
    hook: prompt, plain / citing, no server      answered in the hook's own process

and prints the median and minimum of each, each median as a multiple of bare Python, and the
ratio citing / plain: what the staleness check adds. Whole processes on a busy machine are noisy,
so it also times, in this process, what the hook does with the prompt (`Hivelore.related`, a
fresh service each call, as the hook server opens one per event) in each home: the same ratio
without the process start-up around it. A hook that answers nothing (an error it
logged, say) is not the workload measured: it is left out of the figures and listed at the end.

    python benchmarks/bench_citations.py                     # 6,000 memories, 15 rounds
    python benchmarks/bench_citations.py --size 600 --runs 5 # a quick run
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
from pathlib import Path

import synth

ORIGIN = "git@github.com:acme/checkout.git"
SCOPE = "repo::acme/checkout"
# Its rarest words (ledgerq, drain) are in the five lessons only, so they are the hits in both homes.
PROMPT = "the ledgerq fixture hangs on the queue drain again, what was the fix?"
LESSONS = 5
FUNCTIONS = 200


def _function(n: int, body: str = "value + {n}") -> str:
    return f"def ledger_step_{n}(value):\n    return {body.format(n=n)}\n\n\n"


class Bench:
    def __init__(self, tmp: Path, size: int) -> None:
        self.repo = tmp / "checkout"
        self.size = size
        bin_dir = Path(sys.executable).parent
        self.hivelore = str(bin_dir / "hivelore")
        launcher = bin_dir / "hivelore-hook"
        self.hook = [str(launcher)] if launcher.is_file() else [self.hivelore, "hook"]
        self.homes = {"plain": tmp / "home-plain", "citing": tmp / "home-citing"}
        self.base_env = {k: v for k, v in os.environ.items() if not k.startswith("HIVELORE_")}

    def env(self, home: str, server: bool = True) -> dict[str, str]:
        found = {**self.base_env, "HIVELORE_HOME": str(self.homes[home])}
        return found if server else {**found, "HIVELORE_HOOK_SERVER": "off"}

    def run(self, argv: list[str], env: dict[str, str], stdin: str | None = None) -> str:
        proc = subprocess.run(argv, cwd=self.repo, env=env, input=stdin, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"`{' '.join(argv)}` exited {proc.returncode}: {proc.stderr.strip()}")
        return proc.stdout

    def setup(self) -> None:
        git = ["git", "-C", str(self.repo)]
        self.repo.mkdir()
        subprocess.run(["git", "init", "-q", "-b", "main", str(self.repo)], check=True)
        subprocess.run([*git, "remote", "add", "origin", ORIGIN], check=True)
        (self.repo / "ledger.py").write_text("".join(_function(n) for n in range(FUNCTIONS)))
        ident = ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-c", "commit.gpgsign=false"]
        subprocess.run([*git, "add", "."], check=True)
        subprocess.run([*git, *ident, "commit", "-q", "-m", "bench"], check=True)
        for name, home in self.homes.items():
            synth.generate(home, self.size)
            env = self.env(name)
            self.run([self.hivelore, "index", "rebuild"], env)
            self.run([self.hivelore, "graph", "index"], env)
            for n in range(LESSONS):
                value = f"the ledgerq fixture hangs on its queue (case {n}): drain the queue before the teardown"
                cites = ["--cites", "ledger_step_0", "--cites", f"ledger_step_{n + 100}"] if name == "citing" else []
                self.run([self.hivelore, "write", f"{SCOPE}::ledger-queue-{n}", value, *cites], env)
        (self.repo / "ledger.py").write_text(
            "".join(_function(n, "value - {n}" if n == 0 else "value + {n}") for n in range(FUNCTIONS))
        )
        for name in self.homes:
            self.run([self.hivelore, "graph", "index"], self.env(name))

    def prompt(self, home: str, server: bool, session: str) -> tuple[float, str]:
        payload = {
            "session_id": session,
            "cwd": str(self.repo),
            "transcript_path": "/dev/null",
            "hook_event_name": "UserPromptSubmit",
            "prompt": PROMPT,
        }
        argv = [*self.hook, "--agent", "claude", "--event", "UserPromptSubmit"]
        started = time.perf_counter()
        out = self.run(argv, self.env(home, server), json.dumps(payload))
        return time.perf_counter() - started, out


def in_process(bench: Bench, home: str, calls: int) -> list[float]:
    """Seconds of `Hivelore.related(PROMPT)` in `home`, each with a fresh service (closed after)."""
    from hivelore.memory.service import Hivelore

    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        service = Hivelore.open(cwd=bench.repo, env=bench.env(home))
        hits = service.related(PROMPT)
        service.close()
        samples.append(time.perf_counter() - started)
        if not hits:
            raise SystemExit(f"related() found nothing in the {home} home")
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=6000, help="memories in each home (default 6,000)")
    parser.add_argument("--runs", type=int, default=15, help="interleaved rounds (default 15)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hivelore-bench-cites-") as tmp:
        bench = Bench(Path(tmp), args.size)
        bench.setup()
        rows: dict[str, list[float]] = {}
        silent: list[str] = []
        said = ""
        # The rows with the hook server first, then those without: a home's events.db used by its
        # server and by hook processes in turn answered "disk I/O error" now and then (see the end).
        plan = [(server, round_no) for server in (True, False) for round_no in range(-1, args.runs)]
        for server, round_no in plan:  # round -1 warms caches (and starts both hook servers)
            if not server and round_no == -1:
                for home in bench.homes:
                    stop = [bench.hivelore, "hook-server", "stop"]
                    subprocess.run(stop, env=bench.env(home), capture_output=True, check=False)
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            samples = {"python -c pass (bare)": time.perf_counter() - started}
            for home in bench.homes:
                label = f"hook: prompt, {home}{'' if server else ', no server'}"
                session = f"bench-{round_no}-{home}-{'server' if server else 'alone'}"
                seconds, out = bench.prompt(home, server, session)
                if not out:  # not the workload measured: left out of the figures, and counted
                    silent.append(f"{label}, round {round_no}")
                    continue
                samples[label] = seconds
                if home == "citing" and server:
                    said = out
            if round_no >= 0:
                for label, seconds in samples.items():
                    rows.setdefault(label, []).append(seconds)
        inside: dict[str, list[float]] = {home: [] for home in bench.homes}
        for home in bench.homes:
            in_process(bench, home, 3)  # warm: imports, the code graph's module, OS caches
        for _ in range(args.runs):  # interleaved, as the processes are
            for home in bench.homes:
                inside[home] += in_process(bench, home, 5)
        stop = [bench.hivelore, "hook-server", "stop"]
        for home in bench.homes:
            subprocess.run(stop, env=bench.env(home), capture_output=True, check=False)
            log = bench.homes[home] / "logs" / "hooks.log"
            errors = [line for line in (log.read_text().splitlines() if log.exists() else []) if "Error" in line]
            silent += [f"{home}'s hooks.log: {line}" for line in errors]
    text = json.loads(said)["hookSpecificOutput"]["additionalContext"] if said else ""
    marked = "code changed since" in text
    bare = statistics.median(rows["python -c pass (bare)"])
    print(f"{args.size:,} memories, {args.runs} rounds; the citing home's answer marks a lesson: {marked}")
    print(f"{'':38} {'median ms':>10} {'min ms':>8} {'× bare':>7}")
    for label, samples in rows.items():
        median = statistics.median(samples)
        print(f"{label:38} {median * 1000:10.1f} {min(samples) * 1000:8.1f} {median / bare:7.2f}")
    for server in ("", ", no server"):
        plain = statistics.median(rows[f"hook: prompt, plain{server}"])
        citing = statistics.median(rows[f"hook: prompt, citing{server}"])
        print(f"citing / plain{server or ', hook server'}: {citing / plain:.3f}")
    plain_in, citing_in = (statistics.median(inside[home]) for home in ("plain", "citing"))
    print(f"in process, Hivelore.related(prompt), {len(inside['plain'])} calls each: plain {plain_in * 1000:.2f} ms,")
    print(f"  citing {citing_in * 1000:.2f} ms (median); citing / plain: {citing_in / plain_in:.3f}")
    if silent:
        print(f"hook answers left out as silent (the warm-up round -1 included): {len(silent)}")
        print("\n".join(f"  {line}" for line in silent))
    return 0 if marked else 1


if __name__ == "__main__":
    sys.exit(main())
