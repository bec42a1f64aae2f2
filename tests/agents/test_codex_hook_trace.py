"""Codex's hook timings, as benchmarks/bench_agents.py reads them: Codex 0.171 reports none in `codex
exec --json`, so they come from its own log (RUST_LOG=CODEX_HOOK_TRACE on stderr), one
`codex.hooks.command` span per hook it runs (real_agents.codex_hook_times).

The first test reads a log the real Codex 0.171.0 wrote in the story's first session
(tests/fixtures/hook-payloads/codex/hook-trace-0.171.log); the second runs the real CLI, so that a
Codex that stops logging its hooks this way fails here rather than leaving the benchmark empty.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import SHOP_FILES, make_shop
from model_server import ModelServer, Say
from real_agents import Codex, Workspace, codex_hook_times, require_clis

TRACE = Path(__file__).parents[1] / "fixtures" / "hook-payloads" / "codex" / "hook-trace-0.171.log"
MIGRATE = "#!/bin/sh\necho 'Error: connect ECONNREFUSED 127.0.0.1:5432' >&2\nexit 1\n"
SESSION_EVENTS = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"]


def test_each_hook_codex_ran_is_timed_from_its_spans_pipes() -> None:
    times = codex_hook_times(TRACE.read_text())
    assert [event for event, _ in times] == SESSION_EVENTS
    # SessionStart: pipes registered at 09.909362, the last deregistered at 10.032774.
    assert times[0] == ("SessionStart", pytest.approx(123.412))
    assert all(0 < ms < 1000 for _, ms in times)


def test_lines_outside_a_hook_span_and_an_unfinished_hook_give_nothing() -> None:
    span = 'codex.hooks.command{hook.event_name="Stop" hook.timeout_sec=10}'
    log = "\n".join([
        "WARNING: proceeding, even though we could not create PATH aliases",
        "2026-12-02T20:04:09.900000Z TRACE session_loop: mio::poll: registering event source with poller",
        f"2026-12-02T20:04:09.909362Z TRACE run_turn:{span}: mio::poll: registering event source with poller",
        f"2026-12-02T20:04:09.909842Z TRACE run_turn:{span}: mio::poll: registering event source with poller",
        f"2026-12-02T20:04:09.917498Z TRACE run_turn:{span}: mio::poll: deregistering event source from poller",
    ])  # fmt: skip
    assert codex_hook_times(log) == []
    closed = log + f"\n2026-12-02T20:04:09.959362Z TRACE run_turn:{span}: mio::poll: deregistering event source"
    assert codex_hook_times(closed) == [("Stop", pytest.approx(50.0))]


@pytest.mark.agents
def test_the_real_codex_logs_the_life_of_each_hook(tmp_path: Path) -> None:
    codex = Codex(trace_hooks=True)
    require_clis(codex.path)
    home = tmp_path / "home"
    home.mkdir()
    repo = make_shop(tmp_path / "shop", {**SHOP_FILES, "bin/migrate": MIGRATE})
    (repo / "bin" / "migrate").chmod(0o755)
    ws = Workspace(home=home, hivelore_home=tmp_path / "hivelore-home", repo=repo)
    installed = ws.hivelore("dev-b", "install", "--agent", "codex", "--yes")
    assert installed.returncode == 0, installed.stderr
    with ModelServer() as model:
        codex.prepare(ws, model)
        session = codex.run(ws, model, "run the migrations", [*codex.shell("./bin/migrate"), Say("Done.")])
    assert session.returncode == 0, session.describe()
    times = codex_hook_times(session.stderr)
    assert [event for event, _ in times] == SESSION_EVENTS, session.describe()
    assert all(0 < ms < 10_000 for _, ms in times)
