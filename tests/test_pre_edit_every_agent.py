"""The pre-edit conflict warning, for the agents whose hook API gives it no way before the edit: Cursor
and Kiro CLI. Real hook processes (`hivelore hook`, as each agent runs it) in a temporary HIVELORE_HOME
and git repository, and the real `install`.

dev-a's Claude Code task "add JWT support" claims `validate_token`; dev-b's agent edits `checkout`, which
calls `current_user`, which calls `validate_token`.

Cursor: its preToolUse answer would have to decide a permission, so hivelore says nothing there; the
warning is held and the model gets it with the edit's result (postToolUse `additional_context`). Its
payloads are Cursor's common fields from the fixture (tests/fixtures/hook-payloads/cursor, documented
shape: no recorded Cursor capture exists) with the documented generic preToolUse/postToolUse fields.

Kiro CLI: only agentSpawn's and userPromptSubmit's stdout reaches the model; pre- and post-tool stdout
reaches nobody, and the only other channel, exit code 2, blocks the tool. Its recorded payloads
(kiro/payloads.json) are played to show that, and install gives hivelore's Kiro agent a prompt that has
the model call the MCP tool `code_history` before an edit instead.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import PAYLOADS, SHOP_FILES, aimed, claude_hook_as, cli_as, example, hook, make_shop

from hivelore.agents import install

CHECKOUT = "    return {'user': user, 'total': sum(cart)}"
VALIDATE = "    return token.split('.')[0]"
PATH = "checkout → current_user → validate_token"


@pytest.fixture
def shop(tmp_path: Path, home: Path) -> Path:
    """The shop, its graph indexed, with dev-a's task "add JWT support" claiming validate_token."""
    repo = make_shop(tmp_path / "shop", SHOP_FILES)
    indexed = cli_as(home, repo, "dev-a", "graph", "index")
    assert indexed.returncode == 0, indexed.stderr
    claude_hook_as(home, repo, "dev-a", "UserPromptSubmit", {"session_id": "a-1", "prompt": "add JWT support"})
    edit = {"file_path": str(repo / "shop/tokens.py"), "old_string": VALIDATE, "new_string": VALIDATE + "  # jwt"}
    claude_hook_as(home, repo, "dev-a", "PreToolUse", {"session_id": "a-1", "tool_name": "Edit", "tool_input": edit})
    return repo


def cursor_payload(repo: Path, event: str, **fields: object) -> dict:
    """Cursor's common fields (conversation_id, generation_id, model, cursor_version, workspace_roots …) from
    the fixture, for `event`."""
    common = example("cursor", "beforeSubmitPrompt", "prompt with attachment")
    for only_there in ("prompt", "attachments"):
        del common[only_there]
    found = aimed(common, repo, hook_event_name=event, **fields)
    assert isinstance(found, dict)
    return found


def test_cursor_hears_the_pre_edit_warning_with_the_edits_result(home: Path, shop: Path) -> None:
    prompt = cursor_payload(shop, "beforeSubmitPrompt", prompt="make checkout count the items", attachments=[])
    assert hook(home, shop, "cursor", "beforeSubmitPrompt", prompt, developer="dev-b") == ""
    call = {"tool_name": "Write", "tool_input": {"file_path": str(shop / "shop/orders.py"), "old_string": CHECKOUT}}
    call["tool_use_id"] = "toolu_cursor_1"

    before = hook(home, shop, "cursor", "preToolUse", cursor_payload(shop, "preToolUse", **call), developer="dev-b")

    assert before == ""  # no permission decided: Cursor's own approval stays as it is
    result = json.dumps({"success": True})
    after = cursor_payload(shop, "postToolUse", **call, tool_output=result)
    told = hook(home, shop, "cursor", "postToolUse", after, developer="dev-b")
    assert told.startswith("hivelore, before your edit of shop/orders.py:\n- ")
    assert PATH in told and "dev-a" in told and "add JWT support" in told
    again = hook(home, shop, "cursor", "postToolUse", after, developer="dev-b")
    assert PATH not in again  # given once


def _kiro(key: str) -> dict:
    return json.loads((PAYLOADS / "kiro" / "payloads.json").read_text())[key]


def test_kiro_cannot_hear_a_hook_around_an_edit_so_its_agent_is_told_to_ask_code_history(
    home: Path, shop: Path, tmp_path: Path
) -> None:
    call = _kiro("postToolUse_fs_write_str_replace")
    call["tool_input"].update(path=str(shop / "shop/orders.py"), old_str=CHECKOUT, new_str=CHECKOUT)
    pre = aimed({k: v for k, v in call.items() if k != "tool_response"}, shop, hook_event_name="preToolUse")
    post = aimed(call, shop)

    # Kiro prints nothing around the edit (its stdout there reaches nobody), yet the edit is claimed: other
    # developers' agents are warned about dev-b's Kiro edit.
    assert hook(home, shop, "kiro", "preToolUse", pre, developer="dev-b") == ""
    assert hook(home, shop, "kiro", "postToolUse", post, developer="dev-b") == ""
    seen_by_a = cli_as(home, shop, "dev-a", "context", "--file", "shop/orders.py")
    assert "being changed by dev-b" in seen_by_a.stdout, seen_by_a.stdout

    # What Kiro's model gets instead: its agent's prompt has it ask code_history, which names dev-a's task.
    user_home = tmp_path / "user-home"
    user_home.mkdir()
    target = install.Target("project", shop, user_home, ("kiro",), "all", ("hivelore",), home)
    install.apply(install.plan_install(target))
    agent = json.loads((shop / ".kiro/agents/hivelore.json").read_text())
    assert agent["prompt"] == install.KIRO_PROMPT and "code_history" in agent["prompt"]
    tokens = cli_as(home, shop, "dev-b", "context", "--file", "shop/tokens.py")
    assert 'being changed by dev-a (task 1: "add JWT support")' in tokens.stdout
    install.apply(install.plan_uninstall(target))
    assert not (shop / ".kiro/agents").exists()  # the prompt goes with the agent install made
