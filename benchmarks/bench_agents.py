"""Hook cost inside a real agent: hivelore's hooks as Claude Code runs them, against a bare Python
start-up measured in the same run.

It runs the real `claude -p` (the CLI pinned in tests/agents/clis.txt, installed by
scripts/install-agent-clis) against the scripted model of tests/agents/model_server.py, in a
temporary HOME, HIVELORE_HOME and git repository after `hivelore install --agent claude`. Each
session: the model runs `./bin/migrate`, which fails (ECONNREFUSED 5432), then `true`, then ends.
Claude Code reports every hook it runs on its stream (`--output-format stream-json --verbose
--include-hook-events`: hook_started, hook_response); a hook's time is the gap between the two
lines' arrival. Between sessions, `python -c pass` runs three times (the unit of the × bare column).

    .venv/bin/python benchmarks/bench_agents.py                      # 5 sessions, hook server on
    .venv/bin/python benchmarks/bench_agents.py --runs 3 --hook-server off

Codex and Gemini CLI report no hook timings in their non-interactive output, so only Claude Code
is measured. Exit status: 0 when every session ran; 1 when the CLI is not installed (the reason is
printed) or a session failed (its output is printed).
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

AGENT_TESTS = Path(__file__).resolve().parents[1] / "tests" / "agents"
sys.path.insert(0, str(AGENT_TESTS))

from model_server import ModelServer, Say  # noqa: E402 -- the suite's own modules, from its folder
from real_agents import AGENTS, Session, Workspace, why_not_installed  # noqa: E402

MIGRATE = "#!/bin/sh\necho 'Error: connect ECONNREFUSED 127.0.0.1:5432' >&2\nexit 1\n"
BARE = "python -c pass (bare)"


def make_workspace(root: Path) -> Workspace:
    home, repo = root / "home", root / "shop"
    home.mkdir()
    (repo / "bin").mkdir(parents=True)
    (repo / "bin" / "migrate").write_text(MIGRATE)
    (repo / "bin" / "migrate").chmod(0o755)
    for args in (
        ["init", "-q", "-b", "main"], ["config", "user.email", "dev@example.com"], ["config", "user.name", "Dev"],
        ["remote", "add", "origin", "git@github.com:acme/shop.git"], ["add", "."], ["commit", "-q", "-m", "init"],
    ):  # fmt: skip
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return Workspace(home=home, hivelore_home=root / "hivelore-home", repo=repo)


def hook_times(session: Session) -> list[tuple[str, float]]:
    """(event, milliseconds) for each hook Claude Code reported starting and answering."""
    started: dict[str, tuple[float, str]] = {}
    times = []
    for arrived, line in session.lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("subtype") == "hook_started":
            started[event["hook_id"]] = (arrived, event["hook_event"])
        elif event.get("subtype") == "hook_response" and event.get("hook_id") in started:
            began, name = started.pop(event["hook_id"])
            times.append((name, (arrived - began) * 1000))
    return times


def bare_python_ms() -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return (time.perf_counter() - began) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="Claude Code sessions (default 5)")
    parser.add_argument("--hook-server", choices=("on", "off"), default="on",
                        help="HIVELORE_HOOK_SERVER for the hooks (default on, as users run them)")  # fmt: skip
    args = parser.parse_args()
    reason = why_not_installed()
    if reason:
        print(reason, file=sys.stderr)
        return 1
    # As bench_core.py does: an editable install leaves compiling to the first import.
    compileall.compile_dir(str(Path(importlib.util.find_spec("hivelore").origin).parent), quiet=1)
    os.environ["HIVELORE_HOOK_SERVER"] = args.hook_server
    claude = AGENTS["claude"]
    samples: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="hivelore-bench-agents-") as tmp, ModelServer() as model:
        ws = make_workspace(Path(tmp))
        installed = ws.hivelore("dev-b", "install", "--agent", "claude", "--yes")
        if installed.returncode != 0:
            print(installed.stderr, file=sys.stderr)
            return 1
        claude.prepare(ws, model)
        script = [*claude.shell("./bin/migrate"), *claude.shell("true"), Say("Done.")]
        try:
            for run in range(args.runs):
                samples[BARE] += [bare_python_ms() for _ in range(3)]
                session = claude.run(ws, model, "run the migrations", script)
                print(f"session {run + 1}/{args.runs}: {session.seconds:.1f} s", file=sys.stderr)
                if session.returncode != 0:
                    print(session.describe(), file=sys.stderr)
                    return 1
                for name, ms in hook_times(session):
                    samples[name].append(ms)
        finally:
            ws.hivelore("dev-b", "hook-server", "stop")
    print_table(samples, args)
    return 0


def print_table(samples: dict[str, list[float]], args: argparse.Namespace) -> None:
    version = subprocess.run([str(AGENTS["claude"].path), "--version"], capture_output=True, text=True).stdout.strip()
    bare = statistics.median(samples[BARE])
    print(f"Hooks inside {version}, {args.runs} sessions, hook server {args.hook_server}")
    print(f"{'event':<22} {'runs':>5} {'median ms':>10} {'min ms':>8} {'× bare':>7}")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:<22} {len(values):>5} {median:>10.1f} {min(values):>8.1f} {median / bare:>6.1f}×")


if __name__ == "__main__":
    sys.exit(main())
