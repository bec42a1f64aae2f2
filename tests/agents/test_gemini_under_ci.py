"""Gemini CLI under a CI runner keeps hivelore's variables: the real CLI (clis.txt), with GITHUB_SHA set as
GitHub Actions sets it, starts its hook commands with only a few variables of its own environment
(PATH, HOME, LANG …) plus the names `security.environmentVariableRedaction.allowed` lists, which
`hivelore install` writes. Without HIVELORE_HOME the hooks would read ~/.hivelore, where no lesson is.

A lesson is in HIVELORE_HOME; one session's first request to the (scripted) model must carry it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import SHOP_FILES, make_shop
from model_server import ModelServer, Say
from real_agents import AGENTS, Workspace, require_clis

pytestmark = pytest.mark.agents

LESSON = (
    "./bin/migrate fails with Error: connect ECONNREFUSED 127.0.0.1:5432 when the local database is down; "
    "start it with docker compose up -d db, then run the migrations again."
)
# What a GitHub Actions runner sets (docs.github.com, "Default environment variables").
RUNNER = {"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567"}


def test_gemini_hooks_read_hivelore_home_under_a_ci_runner(tmp_path: Path) -> None:
    agent = AGENTS["gemini"]
    require_clis(agent.path)
    home = tmp_path / "home"
    home.mkdir()
    ws = Workspace(home=home, hivelore_home=tmp_path / "hivelore-home", repo=make_shop(tmp_path / "shop", SHOP_FILES))
    installed = ws.hivelore("dev-b", "install", "--agent", "gemini", "--yes")
    assert installed.returncode == 0, installed.stderr
    written = ws.hivelore("dev-b", "write", "repo::acme/shop::migrate-needs-local-postgres", LESSON, "--tags", "db")
    assert written.returncode == 0, written.stderr
    with ModelServer() as model:
        agent.prepare(ws, model)
        agent.extra_env.update(RUNNER)
        try:
            session = agent.run(ws, model, "run the migrations", [Say("Done.")])
        finally:
            for name in RUNNER:
                agent.extra_env.pop(name)
    assert session.outside == [], f"gemini tried to reach beyond 127.0.0.1: {session.outside}"
    assert LESSON in session.after(None).text, f"the first request lacks the lesson\n{session.describe()}"
    assert not (home / ".hivelore").exists(), "a hook wrote to ~/.hivelore: it did not get HIVELORE_HOME"
