"""The real agent CLIs drive hivelore: Claude Code, Codex and Gemini CLI from npm (clis.txt), each
pointed at the scripted model on 127.0.0.1 (model_server.py), in a temporary HOME, HIVELORE_HOME and
repository, after `hivelore install --agent X`.

Session 1: the model runs `./bin/migrate`, which fails with "Error: connect ECONNREFUSED
127.0.0.1:5432"; the next request to the model carries hivelore's nudge naming the scope; the model
calls memory_write through the CLI's own MCP client; the lesson is in HIVELORE_HOME.
Session 2 (a new process), the next morning, after dev-a's agent claimed validate_token for "add
JWT support": the first request carries the lesson; the same failure brings "you have hit something
like this before" with the lesson; editing checkout (which calls current_user, which calls
validate_token) brings the conflict warning with the call path.

Kiro and Cursor have no CLI to install: their hooks are tested on recorded payloads. Without the
CLIs (scripts/install-agent-clis installs them; .ci/run runs it) this module is skipped, saying why.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import SHOP_FILES, make_shop
from model_server import ModelServer, Say
from real_agents import AGENTS, Agent, Workspace, require_clis

pytestmark = pytest.mark.agents

MIGRATE = "#!/bin/sh\necho 'Error: connect ECONNREFUSED 127.0.0.1:5432' >&2\nexit 1\n"
SCOPE = "repo::acme/shop"
KEY = "migrate-needs-local-postgres"
LESSON = (
    "./bin/migrate fails with Error: connect ECONNREFUSED 127.0.0.1:5432 when the local database is down; "
    "start it with docker compose up -d db, then run the migrations again."
)
CHECKOUT_OLD = "    return {'user': user, 'total': sum(cart)}"
CHECKOUT_NEW = "    return {'user': user, 'total': sum(cart), 'items': len(cart)}"


@pytest.fixture
def model() -> ModelServer:
    with ModelServer() as server:
        yield server


@pytest.fixture(params=sorted(AGENTS))
def agent(request: pytest.FixtureRequest) -> Agent:
    chosen = AGENTS[request.param]
    require_clis(chosen.path)
    return chosen


@pytest.fixture
def workspace(tmp_path: Path, agent: Agent, model: ModelServer) -> Workspace:
    """The shop repository with a failing ./bin/migrate, its code graph indexed, hivelore installed
    for the agent (a project install, as `hivelore install` does inside a repository)."""
    home = tmp_path / "home"
    home.mkdir()
    repo = make_shop(tmp_path / "shop", {**SHOP_FILES, "bin/migrate": MIGRATE})
    (repo / "bin" / "migrate").chmod(0o755)
    ws = Workspace(home=home, hivelore_home=tmp_path / "hivelore-home", repo=repo)
    installed = ws.hivelore("dev-b", "install", "--agent", agent.hivelore_name, "--yes")
    assert installed.returncode == 0, installed.stderr
    indexed = ws.hivelore("dev-a", "graph", "index")
    assert indexed.returncode == 0, indexed.stderr
    agent.prepare(ws, model)
    return ws


def claim_validate_token(ws: Workspace) -> None:
    """dev-a's agent starts "add JWT support" and edits validate_token: its task claims it."""
    ws.claude_hook("dev-a", "a-1", "UserPromptSubmit", {"prompt": "add JWT support"})
    old = "    return token.split('.')[0]"
    edit = {"file_path": str(ws.repo / "shop/tokens.py"), "old_string": old, "new_string": old + "  # jwt"}
    ws.claude_hook("dev-a", "a-1", "PreToolUse", {"tool_name": "Edit", "tool_input": edit})


def test_a_failure_becomes_a_lesson_that_the_next_session_gets(
    agent: Agent, workspace: Workspace, model: ModelServer
) -> None:
    ws = workspace

    # Session 1: the migration fails; hivelore nudges; the model writes the lesson over MCP.
    migrate = agent.shell("./bin/migrate")
    write = agent.write_memory({"scope": SCOPE, "key": KEY, "value": LESSON, "tags": ["db"]})
    first = agent.run(ws, model, "run the migrations", [*migrate, *write, Say("Saved the lesson.")])
    assert first.outside == [], f"{agent.binary} tried to reach beyond 127.0.0.1: {first.outside}"
    told = first.after(migrate[-1]).text
    assert "no stored lesson matches" in told, f"no nudge after the failed ./bin/migrate\n{first.describe()}"
    assert f"memory_write into scope '{SCOPE}'" in told
    assert "no stored lesson matches" not in first.turns[0].text  # it came with the failure
    saved = ws.hivelore("dev-b", "read", f"{SCOPE}::{KEY}", "--json")
    assert saved.returncode == 0, f"the lesson is not in HIVELORE_HOME: {saved.stderr}\n{first.describe()}"
    lesson = json.loads(saved.stdout)
    assert lesson["value"] == LESSON and lesson["provenance"]["agent"] == "mcp"  # written over MCP

    # Session 2, a new process: dev-a's task has claimed validate_token meanwhile.
    claim_validate_token(ws)
    edit = agent.edit(ws, "shop/orders.py", CHECKOUT_OLD, CHECKOUT_NEW)
    prompt = "run the migrations, then make checkout count the items"
    second = agent.run(ws, model, prompt, [*migrate, *edit, Say("Done.")])
    assert second.outside == [], f"{agent.binary} tried to reach beyond 127.0.0.1: {second.outside}"
    assert LESSON in second.after(None).text, f"the first request lacks the lesson\n{second.describe()}"
    recalled = second.after(migrate[-1]).text
    assert "hivelore: you have hit something like this before" in recalled, (
        f"the same failure did not recall the lesson\n{second.describe()}"
    )
    assert KEY in recalled
    warned = second.after(edit[-1]).text
    assert "checkout → current_user → validate_token" in warned, (
        f"the model was not warned about dev-a's claim after editing checkout\n{second.describe()}"
    )
    assert "dev-a" in warned and "add JWT support" in warned
    assert CHECKOUT_NEW in (ws.repo / "shop/orders.py").read_text()
