"""The shop story, end to end: three developers' agents in one repository, through the real hook
command and the real CLI (as subprocesses, in a temporary HIVELORE_HOME and git repository).

dev-a's task "add JWT support" edits `validate_token`; dev-b's agent is about to edit `checkout`,
which calls `current_user`, which calls `validate_token`, and is warned with that path; dev-a's
first test run fails `test_refresh_session`; dev-c takes the task over the next morning and gets the
failed attempt, the claims and the decisions in one answer.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from harness import SHOP_FILES, claude_hook_as, cli_as, developer_env, make_shop
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

PYTEST_FAILURE = """\
.F                                                                       [100%]
=================================== FAILURES ===================================
_____________________________ test_refresh_session _____________________________

    def test_refresh_session():
>       assert refresh_session("old.jwt") != "old.jwt"
E       AssertionError: assert 'old.jwt' != 'old.jwt'

tests/test_tokens.py:9: AssertionError
=========================== short test summary info ============================
FAILED tests/test_tokens.py::test_refresh_session - AssertionError: assert 'old.jwt' != 'old.jwt'
1 failed, 1 passed in 0.04s
"""


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return make_shop(tmp_path / "shop", SHOP_FILES)


def edit(home: Path, repo: Path, developer: str, session: str, path: str, old: str) -> str:
    tool_input = {"file_path": str(repo / path), "old_string": old, "new_string": old + "  # changed"}
    payload = {"session_id": session, "tool_name": "Edit", "tool_input": tool_input}
    return claude_hook_as(home, repo, developer, "PreToolUse", payload)


def prompt(home: Path, repo: Path, developer: str, session: str, text: str) -> str:
    return claude_hook_as(home, repo, developer, "UserPromptSubmit", {"session_id": session, "prompt": text})


def test_the_shop_story(home: Path, shop: Path) -> None:
    indexed = cli_as(home, shop, "dev-a", "graph", "index")
    assert indexed.returncode == 0, indexed.stderr
    assert "symbols" in indexed.stdout

    # dev-a's agent starts on JWT support and edits validate_token: its task claims it.
    prompt(home, shop, "dev-a", "a-1", "add JWT support")
    assert edit(home, shop, "dev-a", "a-1", "shop/tokens.py", "    return token.split('.')[0]") == ""

    # dev-b's agent is about to change checkout, two calls away from validate_token.
    prompt(home, shop, "dev-b", "b-1", "speed up checkout")
    warning = edit(home, shop, "dev-b", "b-1", "shop/orders.py", "    return {'user': user, 'total': sum(cart)}")
    assert "heads-up (a warning, not a block)" in warning
    assert "checkout → current_user → validate_token" in warning
    assert "dev-a" in warning and "add JWT support" in warning
    # Shown once: the same edit again says nothing.
    assert edit(home, shop, "dev-b", "b-1", "shop/orders.py", "    return {'user': user, 'total': sum(cart)}") == ""
    # receipt shares no call path with validate_token (only a caller, daily, would): no warning.
    assert edit(home, shop, "dev-b", "b-1", "shop/orders.py", "    return f\"total: {order['total']}\"") == ""

    # dev-a's first test run fails test_refresh_session.
    failure = {
        "session_id": "a-1",
        "tool_name": "Bash",
        "tool_input": {"command": "pytest -q tests/test_tokens.py"},
        "error": f"Exit code 1\n{PYTEST_FAILURE}",
    }
    claude_hook_as(home, shop, "dev-a", "PostToolUseFailure", failure)
    decided = cli_as(
        home, shop, "dev-a", "task", "decide", "Tokens are JWTs signed with RS256", "--symbol", "validate_token"
    )
    assert decided.returncode == 0, decided.stderr

    # The next morning dev-c takes the task over and gets everything in one answer.
    board = json.loads(cli_as(home, shop, "dev-c", "task", "list", "--json").stdout)
    (task,) = [t for t in board if t["title"] == "add JWT support"]
    resumed = cli_as(home, shop, "dev-c", "task", "resume", str(task["id"]), "--json")
    assert resumed.returncode == 0, resumed.stderr
    answer = json.loads(resumed.stdout)

    assert answer["task"]["owner"] == "dev-c"
    assert answer["claims"] == ["shop/tokens.py::validate_token"]
    (attempt,) = answer["failed_attempts"]
    assert attempt["failed"] == ["tests/test_tokens.py::test_refresh_session"] and attempt["developer"] == "dev-a"
    assert [d["text"] for d in answer["decisions"]] == ["Tokens are JWTs signed with RS256"]


def test_graph_queries_answer_from_the_cli(home: Path, shop: Path) -> None:
    assert cli_as(home, shop, "dev-a", "graph", "index").returncode == 0

    radius = json.loads(cli_as(home, shop, "dev-a", "graph", "blast-radius", "validate_token", "--json").stdout)
    assert radius == [
        {"symbol": "shop/users.py::current_user", "distance": 1},
        {"symbol": "shop/orders.py::checkout", "distance": 2},
    ]
    path = json.loads(cli_as(home, shop, "dev-a", "graph", "path", "checkout", "validate_token", "--json").stdout)
    assert path == ["shop/orders.py::checkout", "shop/users.py::current_user", "shop/tokens.py::validate_token"]
    exported = json.loads(cli_as(home, shop, "dev-a", "graph", "export", "--json").stdout)
    assert {"symbols", "calls", "imports"} <= set(exported)
    assert {"caller": "shop/reports.py::daily", "callee": "shop/orders.py::receipt"} in [
        {k: c[k] for k in ("caller", "callee")} for c in exported["calls"]
    ]
    unknown = cli_as(home, shop, "dev-a", "graph", "blast-radius", "no_such_function")
    assert unknown.returncode == 1 and unknown.stderr.count("\n") == 1


def test_an_edit_after_a_change_reindexes_and_records_the_touched_symbols(home: Path, shop: Path) -> None:
    assert cli_as(home, shop, "dev-a", "graph", "index").returncode == 0
    prompt(home, shop, "dev-a", "a-1", "harden tokens")
    tokens = shop / "shop" / "tokens.py"
    tokens.write_text(tokens.read_text().replace("split('.')[0]", "split('.')[1]"))
    post = {
        "session_id": "a-1",
        "tool_name": "Edit",
        "tool_input": {"file_path": str(tokens), "old_string": "[0]", "new_string": "[1]"},
        "tool_response": {"filePath": str(tokens)},
    }
    claude_hook_as(home, shop, "dev-a", "PostToolUse", post)
    passing = {
        "session_id": "a-1",
        "tool_name": "Bash",
        "tool_input": {"command": "pytest -q"},
        "tool_response": {"stdout": "..   [100%]\n2 passed in 0.03s\n", "stderr": "", "interrupted": False},
    }
    claude_hook_as(home, shop, "dev-a", "PostToolUse", passing)

    why = json.loads(cli_as(home, shop, "dev-a", "graph", "why", "validate_token", "--json").stdout)
    assert [a["outcome"] for a in why["attempts"]] == ["passed"]
    assert why["people"] == ["dev-a"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_mcp_tools_answer_the_same_questions(home: Path, shop: Path) -> None:
    assert cli_as(home, shop, "dev-a", "graph", "index").returncode == 0
    prompt(home, shop, "dev-a", "a-1", "add JWT support")
    edit(home, shop, "dev-a", "a-1", "shop/tokens.py", "    return token.split('.')[0]")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "hivelore", "mcp"], cwd=str(shop), env=developer_env(home, "dev-b")
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        radius = (await session.call_tool("blast_radius", {"symbol": "validate_token"})).structured_content
        clash = (await session.call_tool("conflicts", {"symbols": ["checkout"]})).structured_content
        board = (await session.call_tool("task_board", {})).structured_content
        unknown = await session.call_tool("why", {"symbol": "no_such_function"})

    assert [c["symbol"] for c in radius["callers"]] == ["shop/users.py::current_user", "shop/orders.py::checkout"]
    (conflict,) = clash["conflicts"]
    assert conflict["path"] == [
        "shop/orders.py::checkout", "shop/users.py::current_user", "shop/tokens.py::validate_token"
    ]  # fmt: skip
    assert conflict["developer"] == "dev-a" and conflict["task"]["title"] == "add JWT support"
    assert [t["task"]["title"] for t in board["tasks"]] == ["add JWT support"]
    assert unknown.is_error


def test_a_repository_without_a_graph_gets_one_built_in_the_background(home: Path, shop: Path) -> None:
    prompt(home, shop, "dev-a", "a-1", "add JWT support")
    # No graph yet: the edit is not held up (nothing to check), and the index starts in the background.
    assert edit(home, shop, "dev-a", "a-1", "shop/tokens.py", "    return token.split('.')[0]") == ""

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        exported = json.loads(cli_as(home, shop, "dev-a", "graph", "export", "--json").stdout)
        if exported["symbols"] and not list(home.glob("graph-indexing-*")):
            break
        time.sleep(0.2)
    assert "shop/tokens.py::validate_token" in {s["id"] for s in exported["symbols"]}


def test_an_edit_brings_up_the_lessons_that_name_the_code_it_touches(home: Path, shop: Path) -> None:
    assert cli_as(home, shop, "dev-a", "graph", "index").returncode == 0
    lesson = "validate_token must reject expired JWTs: check exp before splitting, or refresh breaks"
    assert cli_as(home, shop, "dev-a", "write", "repo::acme/shop::token-expiry", lesson).returncode == 0
    other = cli_as(home, shop, "dev-a", "write", "repo::acme/shop::tokens-in-general", "tokens rotate daily")
    assert other.returncode == 0
    prompt(home, shop, "dev-a", "a-1", "add JWT support")

    told = edit(home, shop, "dev-a", "a-1", "shop/tokens.py", "    return token.split('.')[0]")

    assert "a lesson about this code: repo::acme/shop::token-expiry" in told
    assert "tokens-in-general" not in told  # it does not name validate_token
    assert edit(home, shop, "dev-a", "a-1", "shop/tokens.py", "    return token.split('.')[0]") == ""  # once


def test_graph_index_of_a_folder_reads_the_files_under_it_and_says_what_it_skipped(home: Path, shop: Path) -> None:
    indexed = cli_as(home, shop, "dev-a", "graph", "index", "shop")
    assert indexed.returncode == 0, indexed.stderr
    assert "5 files (5 parsed)" in indexed.stdout

    (shop / "notes").mkdir()
    (shop / "notes" / "todo.txt").write_text("nothing here is code\n")
    outside = shop.parent / "elsewhere.py"
    outside.write_text("def f():\n    return 1\n")
    refused = cli_as(home, shop, "dev-a", "graph", "index", "notes", str(outside))
    assert refused.returncode == 2
    assert "notes skipped: holds no source file the graph reads" in refused.stderr
    assert f"{outside} skipped: outside the repository" in refused.stderr
    assert refused.stderr.splitlines()[-1].startswith("hivelore: nothing was indexed: name source files or folders")


# --- the first edits in a fresh repository: the graph is still being built ------------------------------------------


def claims_of(home: Path, repo: Path, title: str) -> list[str]:
    """What the task named `title` claims, as team.db holds it (`task resume` would take the task over)."""
    from hivelore.team.store import SqliteTeam

    board = json.loads(cli_as(home, repo, "dev-c", "task", "list", "--json").stdout)
    (task,) = [t for t in board if t["title"] == title]
    with SqliteTeam.open(str(home)) as team:
        return sorted(claim.symbol for claim in team.claims(task["id"]))


def indexing_under_way(home: Path, repo: Path) -> Path:
    """The marker of a background index that has not finished (as the first edit's hook leaves it while
    `hivelore graph index` runs): the hooks see no graph and start no other indexer."""
    from hivelore.memory.service import Hivelore
    from hivelore.team.coordination import Coordination, indexing_marker

    coordination = Coordination.for_service(Hivelore.open(repo))
    marker = Path(indexing_marker(str(home), coordination.root))
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(coordination.root)
    return marker


FILE_LEVEL = "(file-level claim: the code graph was still being built)"


def test_the_first_edit_claims_its_file_and_the_graph_turns_it_into_symbols(home: Path, shop: Path) -> None:
    """No graph.db yet. dev-a's first edit claims shop/tokens.py at the line it replaces; dev-b's edit of the same
    file is warned, as a file-level claim; an edit of another file is not (without a graph no call path is
    known). When the index completes, the file claims become the symbols the edits touched, and dev-b's later
    edit of checkout gets the usual warning with the call path."""
    marker = indexing_under_way(home, shop)
    prompt(home, shop, "dev-a", "a-1", "add JWT support")
    assert edit(home, shop, "dev-a", "a-1", "shop/tokens.py", "    return token.split('.')[0]") == ""
    assert claims_of(home, shop, "add JWT support") == ["file:4:shop/tokens.py"]

    prompt(home, shop, "dev-b", "b-1", "reject empty tokens early")
    warning = edit(home, shop, "dev-b", "b-1", "shop/tokens.py", "    if not token:")

    assert warning == (
        'hivelore:\n- heads-up (a warning, not a block): dev-a\'s task 1: "add JWT support" is changing '
        f"shop/tokens.py {FILE_LEVEL}"
    )
    assert edit(home, shop, "dev-b", "b-1", "shop/orders.py", "    return {'user': user, 'total': sum(cart)}") == ""

    marker.unlink()
    indexed = cli_as(home, shop, "dev-a", "graph", "index")
    assert indexed.returncode == 0 and indexed.stderr == "", indexed.stderr

    assert claims_of(home, shop, "add JWT support") == ["shop/tokens.py::validate_token"]
    assert claims_of(home, shop, "reject empty tokens early") == [
        "shop/orders.py::checkout", "shop/tokens.py::validate_token",
    ]  # fmt: skip
    prompt(home, shop, "dev-b", "b-2", "speed up checkout")
    warning = edit(home, shop, "dev-b", "b-2", "shop/orders.py", "    user = current_user(request)")
    assert "checkout → current_user → validate_token: validate_token is being changed by dev-a" in warning
    assert FILE_LEVEL not in warning


def test_a_file_claim_left_when_the_graph_lands_warns_within_three_hops_until_its_session_upgrades_it(
    home: Path, shop: Path
) -> None:
    """The graph lands without converting dev-a's file claim (dev-a's hook claimed after the indexer had looked:
    here the graph is built directly, not by `graph index`). dev-b's edit of checkout, two calls from
    validate_token in the claimed file, is warned with the path and the file-level claim; dev-a's next edit
    converts its file claim into the symbol it touched."""
    from hivelore.codegraph import Graph
    from hivelore.memory.service import Hivelore
    from hivelore.team.coordination import Coordination

    marker = indexing_under_way(home, shop)
    prompt(home, shop, "dev-a", "a-1", "add JWT support")
    edit(home, shop, "dev-a", "a-1", "shop/tokens.py", "    return token.split('.')[0]")
    marker.unlink()
    root = Coordination.for_service(Hivelore.open(shop)).root
    with Graph.open(str(home), root) as graph:
        graph.index()

    prompt(home, shop, "dev-b", "b-1", "speed up checkout")
    warning = edit(home, shop, "dev-b", "b-1", "shop/orders.py", "    return {'user': user, 'total': sum(cart)}")

    assert warning == (
        "hivelore:\n- heads-up (a warning, not a block): checkout → current_user → validate_token: dev-a's task 1: "
        f'"add JWT support" is changing shop/tokens.py {FILE_LEVEL}'
    )
    assert claims_of(home, shop, "add JWT support") == ["file:4:shop/tokens.py"]
    assert edit(home, shop, "dev-a", "a-1", "shop/reports.py", "    return [receipt(o) for o in orders]") == ""
    assert claims_of(home, shop, "add JWT support") == ["shop/reports.py::daily", "shop/tokens.py::validate_token"]


def test_the_background_index_started_by_the_first_edit_upgrades_its_file_claim(home: Path, shop: Path) -> None:
    """Nothing prepared: the first edit claims its file and starts `hivelore graph index` in the background, which
    converts the claim into validate_token when it completes (its marker gone)."""
    from hivelore.memory.service import Hivelore
    from hivelore.team.coordination import Coordination, indexing_marker

    marker = Path(indexing_marker(str(home), Coordination.for_service(Hivelore.open(shop)).root))
    prompt(home, shop, "dev-a", "a-1", "add JWT support")
    edit(home, shop, "dev-a", "a-1", "shop/tokens.py", "    return token.split('.')[0]")
    deadline = time.monotonic() + 90
    while marker.exists() and time.monotonic() < deadline:
        time.sleep(0.2)

    assert not marker.exists(), "the background index did not finish in 90 s"
    assert claims_of(home, shop, "add JWT support") == ["shop/tokens.py::validate_token"]
