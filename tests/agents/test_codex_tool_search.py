"""Codex (0.171) never offers an MCP tool up front: every one is deferred, and the model loads it with
Codex's `tool_search`, a BM25 search over each tool's name, title, description and argument names that
returns 8 tools unless the model asks for more. A model told "save it with memory_write" searches for
that name, in a few wordings, without a limit; if memory_write is not among the 8, it cannot call it
and the lesson is lost. This runs the real CLI after `hivelore install --agent codex`, the model
searching as it would, and checks what each search loaded.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import SHOP_FILES, make_shop
from model_server import Call, ModelServer, Say
from real_agents import Codex, Workspace, require_clis

pytestmark = pytest.mark.agents

# What a model writes into tool_search after hivelore's nudge ("save it with memory_write into scope
# 'repo::acme/shop'"), the skill's table or the server's instructions ("write a lesson (memory_write)").
# Not the qualified name mcp__hivelore__memory_write: Codex 0.171's search finds no tool by such a name.
QUERIES = [
    "memory_write",
    "hivelore memory_write",
    "hivelore memory write",
    "write a lesson",
    "save a lesson to memory",
    "remember this fix",
]


def test_each_search_a_model_makes_for_memory_write_loads_it(tmp_path: Path) -> None:
    codex = Codex()
    require_clis(codex.path)
    home = tmp_path / "home"
    home.mkdir()
    ws = Workspace(home=home, hivelore_home=tmp_path / "hivelore-home", repo=make_shop(tmp_path / "shop", SHOP_FILES))
    installed = ws.hivelore("dev-b", "install", "--agent", "codex", "--yes")
    assert installed.returncode == 0, installed.stderr
    with ModelServer() as model:
        codex.prepare(ws, model)
        searches = [Call("tool_search", {"query": query}) for query in QUERIES]
        session = codex.run(ws, model, "keep a lesson", [*searches, Say("Done.")])
    assert session.returncode == 0, session.describe()
    last = session.turns[-1].body["input"]
    found = {
        item["call_id"]: [tool["name"] for space in item["tools"] for tool in space.get("tools", [space])]
        for item in last
        if isinstance(item, dict) and item.get("type") == "tool_search_output"
    }
    calls = [item["call_id"] for item in last if isinstance(item, dict) and item.get("type") == "tool_search_call"]
    assert len(calls) == len(QUERIES), session.describe()
    missed = {query: found.get(call, []) for query, call in zip(QUERIES, calls, strict=True)}
    missed = {query: tools for query, tools in missed.items() if "memory_write" not in tools}
    assert missed == {}, f"these searches did not load memory_write (query: the 8 tools loaded instead): {missed}"
