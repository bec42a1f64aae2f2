"""Hook cost inside a real agent: hivelore's hooks as Claude Code, Codex and Gemini CLI run them,
against a bare Python start-up measured in the same run.

It runs the real `claude -p`, `codex exec` and `gemini -p` (the CLIs pinned in tests/agents/clis.txt, installed
by scripts/install-agent-clis) against the scripted model of tests/agents/model_server.py, in a
temporary HOME, HIVELORE_HOME and git repository after `hivelore install --agent A`. Each session:
the model runs `./bin/migrate`, which fails (ECONNREFUSED 5432), then `true`, then ends. Each CLI
reports the hooks it runs, and that is the time taken here:

- Claude Code on its stream (`--output-format stream-json --verbose --include-hook-events`): a
  hook's time is the gap between the arrival of its hook_started and hook_response lines;
- Codex in its own log on stderr (RUST_LOG="warn,[codex.hooks.command]=trace": only what happens
  inside the span of each hook it runs): from the first of the hook's pipes Codex registers after
  the spawn to the last it deregisters at end of file (real_agents.codex_hook_times);
- Gemini CLI in its local telemetry file (`telemetry.target` "local", `telemetry.outfile`; nothing
  is sent anywhere): the `duration_ms` of each gemini_cli.hook_call record.

Between sessions, `python -c pass` runs three times (the unit of the × bare column). Then, with
`--floor`, as many sessions again with every hivelore hook command in the agent's hook file replaced by
`python -c pass`: what the agent reports for a hook that does nothing but start Python, per event (the
"… floor" rows): the part of a hook's time that is the agent's own and Python's, not hivelore's.

    .venv/bin/python benchmarks/bench_agents.py                      # 5 sessions each, hook server on
    .venv/bin/python benchmarks/bench_agents.py --runs 3 --hook-server off --agents claude,codex
    .venv/bin/python benchmarks/bench_agents.py --runs 10 --agents claude --floor
    .venv/bin/python benchmarks/bench_agents.py --runs 10 --mcp-ready     # Claude Code's MCP start-up

`--mcp-ready` measures, instead, how long Claude Code waits for hivelore's MCP server: its MCP command
becomes this script as a relay (`--relay LOG COMMAND…`) that spawns the command `hivelore install`
wrote and notes, from its own start, when the answer to Claude Code's tools/list passes through.

Exit status: 0 when every session ran; 1 when the CLIs are not installed (the reason is printed) or a session failed
(its output is printed).
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
from real_agents import (  # noqa: E402
    AGENTS,
    Agent,
    Codex,
    Session,
    Workspace,
    bare_python_ms,
    claude_hook_times,
    codex_hook_times,
    why_not_installed,
)

MIGRATE = "#!/bin/sh\necho 'Error: connect ECONNREFUSED 127.0.0.1:5432' >&2\nexit 1\n"
BARE = "python -c pass (bare)"
# Where `hivelore install --agent A` (project scope) writes each agent's hooks.
HOOK_FILES = {"claude": ".claude/settings.json", "codex": ".codex/hooks.json", "gemini": ".gemini/settings.json"}


def relay(log: str, command: list[str]) -> int:
    """Stand in for an MCP server: run `command`, pass stdin and stdout through, and append to `log`
    the seconds from this process's start to each answer to a tools/list."""
    import threading

    started = time.perf_counter()
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None
    listing: set[str] = set()

    def inbound() -> None:
        assert server.stdin is not None
        for line in sys.stdin.buffer:
            message = json.loads(line) if line.strip().startswith(b"{") else {}
            if message.get("method") == "tools/list":
                listing.add(json.dumps(message.get("id")))
            server.stdin.write(line)
            server.stdin.flush()
        server.stdin.close()

    threading.Thread(target=inbound, daemon=True).start()
    for line in server.stdout:
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
        message = json.loads(line) if line.strip().startswith(b"{") else {}
        if "result" in message and json.dumps(message.get("id")) in listing:
            with open(log, "a") as out:
                out.write(f"{time.perf_counter() - started:.4f}\n")
    return server.wait()


def mcp_ready(runs: int) -> int:
    """Claude Code sessions whose MCP command is the relay: spawn → tools/list answered, per session."""
    agent = AGENTS["claude"]
    temporary = tempfile.TemporaryDirectory(prefix="hivelore-bench-mcp-", ignore_cleanup_errors=True)
    with temporary as tmp, ModelServer() as model:
        ws, log, bare = make_workspace(Path(tmp)), Path(tmp) / "ready.log", []
        installed = ws.hivelore("dev-b", "install", "--agent", "claude", "--yes")
        if installed.returncode != 0:
            print(installed.stderr, file=sys.stderr)
            return 1
        agent.prepare(ws, model)
        config = ws.repo / ".mcp.json"
        servers = json.loads(config.read_text())
        server = servers["mcpServers"]["hivelore"]
        command = [server["command"], *server["args"]]
        server["command"], server["args"] = sys.executable, [__file__, "--relay", str(log), *command]
        config.write_text(json.dumps(servers))
        try:
            for run in range(runs):
                bare += [bare_python_ms(1) for _ in range(3)]
                session = agent.run(ws, model, "hello", [Say("Done.")])
                print(f"claude session {run + 1}/{runs}: {session.seconds:.1f} s", file=sys.stderr)
                if session.returncode != 0:
                    print(session.describe(), file=sys.stderr)
                    return 1
        finally:
            ws.hivelore("dev-b", "hook-server", "stop")
        ready = [float(x) * 1000 for x in log.read_text().split()] if log.exists() else []
    if len(ready) != runs:
        print(f"{len(ready)} of {runs} sessions had tools/list answered", file=sys.stderr)
        return 1
    print(f"Claude Code's MCP start-up, {runs} sessions, load average {os.getloadavg()[0]:.1f} at the end")
    print(f"{'what':<48} {'median ms':>10} {'min ms':>8}")
    print(f"{'python -c pass (bare)':<48} {statistics.median(bare):>10.1f} {min(bare):>8.1f}")
    print(f"{'spawn → tools/list answered (relay included)':<48} {statistics.median(ready):>10.1f} {min(ready):>8.1f}")
    return 0


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


def hook_times(agent: Agent, session: Session, telemetry: Path) -> list[tuple[str, float]]:
    """(event, milliseconds) of each hook the agent reported running in this session."""
    if agent.hivelore_name == "gemini":
        return gemini_hook_times(telemetry)
    if agent.hivelore_name == "codex":
        return codex_hook_times(session.stderr)
    return claude_hook_times(session)


def gemini_hook_times(telemetry: Path) -> list[tuple[str, float]]:
    """(event, milliseconds) of each hook_call record in Gemini CLI's telemetry file (a sequence of
    JSON objects, one per log record), which is then emptied for the next session."""
    text, decoder, at, times = telemetry.read_text(), json.JSONDecoder(), 0, []
    while (at := len(text) - len(text[at:].lstrip())) < len(text):
        record, at = decoder.raw_decode(text, at)
        attributes = record.get("attributes") or {}
        if attributes.get("event.name") == "gemini_cli.hook_call":
            times.append((attributes["hook_event_name"], float(attributes["duration_ms"])))
    telemetry.write_text("")
    return times


def enable_gemini_telemetry(ws: Workspace, telemetry: Path) -> None:
    settings_path = ws.home / ".gemini" / "settings.json"
    settings = json.loads(settings_path.read_text())
    settings["telemetry"] = {"enabled": True, "target": "local", "outfile": str(telemetry)}
    settings_path.write_text(json.dumps(settings))
    telemetry.write_text("")


def main() -> int:
    if sys.argv[1:2] == ["--relay"]:
        return relay(sys.argv[2], sys.argv[3:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="sessions per agent (default 5)")
    parser.add_argument("--agents", default="claude,codex,gemini",
                        help="comma-separated: claude, codex, gemini (default all three)")  # fmt: skip
    parser.add_argument("--mcp-ready", action="store_true",
                        help="measure Claude Code's wait for the MCP server instead of the hooks")  # fmt: skip
    parser.add_argument("--floor", action="store_true",
                        help="also run the sessions with each hook replaced by `python -c pass`")  # fmt: skip
    parser.add_argument("--hook-server", choices=("on", "off"), default="on",
                        help="HIVELORE_HOOK_SERVER for the hooks (default on, as users run them)")  # fmt: skip
    args = parser.parse_args()
    names = [name.strip() for name in args.agents.split(",") if name.strip()]
    if not names or any(name not in ("claude", "codex", "gemini") for name in names):
        print(f"--agents takes claude, codex and/or gemini, not {args.agents!r}.", file=sys.stderr)
        return 2
    reason = why_not_installed()
    if reason:
        print(reason, file=sys.stderr)
        return 1
    # As bench_core.py does: an editable install leaves compiling to the first import.
    compileall.compile_dir(str(Path(importlib.util.find_spec("hivelore").origin).parent), quiet=1)
    os.environ["HIVELORE_HOOK_SERVER"] = args.hook_server
    if args.mcp_ready:
        return mcp_ready(args.runs)
    samples: dict[str, dict[str, list[float]]] = {}
    for name in names:
        samples[name] = defaultdict(list)
        agent = Codex(trace_hooks=True) if name == "codex" else AGENTS[name]
        if not measure(agent, args.runs, samples[name], args.floor):
            return 1
    print_table(samples, args)
    return 0


def bare_hooks(ws: Workspace, agent: Agent) -> tuple[Path, str]:
    """Replace every hivelore hook command in the agent's hook file by `python -c pass`; the file and
    what it held, to put back."""
    from hivelore.agents.install import is_hook_command

    path = ws.repo / HOOK_FILES[agent.hivelore_name]
    held = path.read_text()

    def bare(value: object) -> object:
        if isinstance(value, dict):
            return {k: f"{sys.executable} -c pass" if is_hook_command(v) else bare(v) for k, v in value.items()}
        return [bare(item) for item in value] if isinstance(value, list) else value

    path.write_text(json.dumps(bare(json.loads(held))))
    return path, held


def measure(agent: Agent, runs: int, samples: dict[str, list[float]], floor: bool = False) -> bool:
    """Run `runs` sessions of the agent, adding each hook's time (and bare Python's) to `samples`;
    with `floor`, as many with each hook replaced by `python -c pass` (its rows: "EVENT floor").
    False when a session failed."""
    # The hook server logs its leave into the home as the folder is removed: what it leaves is left.
    temporary = tempfile.TemporaryDirectory(prefix="hivelore-bench-agents-", ignore_cleanup_errors=True)
    with temporary as tmp, ModelServer() as model:
        ws = make_workspace(Path(tmp))
        installed = ws.hivelore("dev-b", "install", "--agent", agent.hivelore_name, "--yes")
        if installed.returncode != 0:
            print(installed.stderr, file=sys.stderr)
            return False
        agent.prepare(ws, model)
        telemetry = Path(tmp) / "gemini-telemetry.log"
        if agent.hivelore_name == "gemini":
            enable_gemini_telemetry(ws, telemetry)
        script = [*agent.shell("./bin/migrate"), *agent.shell("true"), Say("Done.")]
        try:
            for run in range(runs):
                samples[BARE] += [bare_python_ms(1) for _ in range(3)]
                if not one_session(agent, ws, model, script, telemetry, samples, f"{run + 1}/{runs}"):
                    return False
            if floor:
                path, held = bare_hooks(ws, agent)
                for run in range(runs):
                    samples[BARE] += [bare_python_ms(1) for _ in range(3)]
                    if not one_session(agent, ws, model, script, telemetry, samples, f"floor {run + 1}/{runs}"):
                        return False
                path.write_text(held)
        finally:
            ws.hivelore("dev-b", "hook-server", "stop")
    return True


def one_session(
    agent: Agent, ws: Workspace, model: ModelServer, script: list, telemetry: Path,
    samples: dict[str, list[float]], label: str,
) -> bool:  # fmt: skip
    """One session; each hook's time added to `samples` (as "EVENT floor" in a floor session)."""
    session = agent.run(ws, model, "run the migrations", script)
    print(f"{agent.binary} session {label}: {session.seconds:.1f} s", file=sys.stderr)
    if session.returncode != 0:
        print(session.describe(), file=sys.stderr)
        return False
    times = hook_times(agent, session, telemetry)
    if not times:
        print(f"{agent.binary} reported no hook timing\n{session.describe()}", file=sys.stderr)
        return False
    suffix = " floor" if label.startswith("floor") else ""
    for name, ms in times:
        samples[name + suffix].append(ms)
    return True


def print_table(samples: dict[str, dict[str, list[float]]], args: argparse.Namespace) -> None:
    for name, rows in samples.items():
        version = subprocess.run([str(AGENTS[name].path), "--version"], capture_output=True, text=True).stdout.strip()
        bare = statistics.median(rows[BARE])
        load = os.getloadavg()[0]
        print(
            f"\nHooks inside {AGENTS[name].binary} {version}, {args.runs} sessions, hook server {args.hook_server}, "
            f"load average {load:.1f} at the end"
        )
        print(f"{'event':<22} {'runs':>5} {'median ms':>10} {'min ms':>8} {'× bare':>7}")
        for event, values in rows.items():
            median = statistics.median(values)
            print(f"{event:<22} {len(values):>5} {median:>10.1f} {min(values):>8.1f} {median / bare:>6.1f}×")


if __name__ == "__main__":
    sys.exit(main())
