"""`hivelore mcp` end to end: a real MCP client (the official SDK) talks to the real server over stdio.

Each test starts one server subprocess (`python -m hivelore mcp`: seconds until the SDK has loaded, the
handshake at once when its answers are prepared) in the `repo` fixture's checkout and plays a whole
story through it, so the scope chain is
branch::acme/checkout::main → repo::acme/checkout → project::checkout → global.
The tests of section 4 also speak raw JSON-RPC lines, to compare the server's bytes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from harness import (
    SESSION_TIMEOUT,
    SHOP_FILES,
    call,
    call_error,
    claude_hook_as,
    cli_as,
    developer_env,
    make_shop,
    mcp_session,
    text_of,
)
from hypothesis import given
from hypothesis import strategies as st
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from hivelore.mcp import answers, stdio
from hivelore.memory.scope import GRAMMAR

pytestmark = pytest.mark.anyio

CLI = Callable[..., subprocess.CompletedProcess[str]]

CHAIN = ["branch::acme/checkout::main", "repo::acme/checkout", "project::checkout", "global"]
TOOLS = {
    "memory_write",
    "memory_read",
    "memory_search",
    "memory_list",
    "memory_forget",
    "memory_archive",
    "memory_restore",
    "memory_commit",
    "memory_scopes",
    "memory_tree",
    "memory_lint",
    "memory_stats",
}
PROFILE_TOOLS = {"profile_read", "profile_search"}
GRAPH_TOOLS = {
    "blast_radius",
    "shortest_path",
    "hotspots",
    "conflicts",
    "who_knows",
    "why",
    "task_board",
    "code_history",
}
REMOTE_TOOLS = {"remote_status", "org_scopes"}  # tokens and organisations are administered on the CLI only
READ_ONLY_TOOLS = {
    "memory_read", "memory_search", "memory_list", "memory_scopes", "memory_tree", "memory_lint", "memory_stats",
    *PROFILE_TOOLS, *GRAPH_TOOLS,
    *REMOTE_TOOLS,
}  # fmt: skip
DESTRUCTIVE_TOOLS = {"memory_forget", "memory_archive"}

REPO = "repo::acme/checkout"
KEY = "tests-need-local-postgres"
LESSON = (
    "Integration tests fail with ECONNREFUSED 127.0.0.1:5432 (ECONNREFUSED 5432) until the local "
    "postgres is up: run `docker compose up -d db` first."
)
GLOBAL_LESSON = "ECONNREFUSED 5432 usually means postgres is not running: start it before the tests."
# Assembled at run time so no secret scanner mistakes this file for a leak: "ghp_" + 36 alphanumerics.
FAKE_GITHUB_TOKEN = "ghp_" + "aB3dE6" * 6


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def run_cli(cli: CLI, *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI, in a worker thread so the MCP session's event loop keeps running."""
    return await anyio.to_thread.run_sync(partial(cli, *args))


def memory_files(home: Path) -> list[Path]:
    return sorted(home.rglob("*.md")) if home.exists() else []


# -- 1. what the server offers ------------------------------------------------------------------------------


async def test_server_lists_its_tools_with_output_schemas_and_honest_annotations(
    home: Path, repo: Path, tmp_path: Path
) -> None:
    """The server introduces itself as hivelore, with instructions, and lists exactly its tools: nine for
    memories, two that read the user's profile, eight that query the code graph and the team's tasks, two
    that say whether a team server is used and which scopes its organisations share.

    Every name is a plain snake_case identifier (some clients reject anything else), every tool declares
    an outputSchema (its results are structured), the reading tools are marked read-only and the
    two that lose data (forget, archive) are marked destructive, so a client can auto-approve the former
    and ask before the latter.
    """
    async with mcp_session(home, repo, tmp_path / "server.log") as session:
        assert session.server_info is not None and session.server_info.name == "hivelore"
        assert session.instructions and "memory_write" in session.instructions
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}

    assert set(tools) == TOOLS | PROFILE_TOOLS | GRAPH_TOOLS | REMOTE_TOOLS
    for name, tool in tools.items():
        assert re.fullmatch(r"[a-z][a-z0-9_]*", name), name
        assert tool.description, f"{name} has no description"
        assert tool.output_schema and tool.output_schema.get("type") == "object", f"{name} has no outputSchema"
        assert tool.output_schema.get("properties"), name
        assert tool.annotations is not None, f"{name} has no annotations"

    for name in READ_ONLY_TOOLS:
        assert tools[name].annotations.read_only_hint is True, name
        assert tools[name].annotations.destructive_hint is not True, name
    for name in DESTRUCTIVE_TOOLS:
        assert tools[name].annotations.destructive_hint is True, name
        assert tools[name].annotations.read_only_hint is not True, name
    for name in (TOOLS | PROFILE_TOOLS | GRAPH_TOOLS | REMOTE_TOOLS) - READ_ONLY_TOOLS:
        assert tools[name].annotations.read_only_hint is not True, f"{name} changes the store"

    write_input = tools["memory_write"].input_schema
    assert set(write_input["required"]) == {"scope", "key", "value"}
    assert {"tags", "kind", "ttl_days"} <= set(write_input["properties"])
    assert set(tools["memory_scopes"].input_schema.get("required", [])) == set()
    # What makes a lesson findable in other words (benchmarks/bench_recall.py measures both): the agent
    # searches with the words the problem would show, and writes two or three symptoms with a lesson.
    assert "the likely error message, tool, command" in " ".join(tools["memory_search"].description.split())
    # The symptoms' guidance is in the argument's schema (Codex's tool_search does not index it there).
    when = write_input["properties"]["when"]["description"]
    assert "Give two or three, each worded differently" in " ".join(when.split())


# -- 2. a lesson's life, shared with the CLI ----------------------------------------------------------------


async def test_a_lesson_written_over_mcp_lives_in_the_same_store_as_the_cli(
    home: Path, repo: Path, cli: CLI, tmp_path: Path
) -> None:
    """An agent records that the tests need a local postgres, finds it again, and the user sees it too.

    Writing returns the stored memory and the Markdown file it lives in; writing the same key again
    updates it (created False, seen_count 2). Search without scopes covers the folder's whole chain.
    A global copy of the key written with the CLI is readable over MCP and is shadowed by the repo copy.
    Archiving hides the repo copy (the global one surfaces), restoring brings it back, forgetting
    deletes its file, after which reading it is an error.
    """
    async with mcp_session(home, repo, tmp_path / "server.log") as session:
        # The first write creates the file under HIVELORE_HOME and says so.
        first = await call(
            session, "memory_write", scope=REPO, key=KEY, value=LESSON, tags=["postgres", "tests", "docker"]
        )
        assert first["created"] is True
        assert first["tier"] == "home"
        path = Path(first["path"])
        assert path == home / "repo" / "acme" / "checkout" / f"{KEY}.md"
        assert path.is_file()
        memory = first["memory"]
        assert (memory["scope"], memory["key"], memory["value"]) == (REPO, KEY, LESSON)
        assert memory["kind"] == "lesson"
        assert memory["tags"] == ["postgres", "tests", "docker"]
        assert memory["seen_count"] == 1
        assert memory["provenance"]["agent"] == "mcp"
        assert memory["provenance"]["repo"] == "acme/checkout"
        assert memory["provenance"]["branch"] == "main"

        # The structured result and the text content carry the same JSON.
        raw = await session.call_tool("memory_read", {"scope": REPO, "key": KEY})
        assert json.loads(text_of(raw)) == raw.structured_content

        # Writing the same key again is an update of the same file, not a second memory.
        second = await call(session, "memory_write", scope=REPO, key=KEY, value=LESSON, tags=["postgres"])
        assert second["created"] is False
        assert second["memory"]["seen_count"] == 2
        assert second["memory"]["created"] == memory["created"]
        assert second["memory"]["tags"] == ["postgres"]
        assert Path(second["path"]) == path
        assert memory_files(home) == [path]

        # MCP → CLI: the user's `hivelore read` sees what the agent wrote.
        shown = await run_cli(cli, "read", f"{REPO}::{KEY}", "--json")
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout) | {"updated": None} == second["memory"] | {"updated": None}

        # CLI → MCP: a global copy of the same key, written with the CLI, is read over MCP.
        written = await run_cli(cli, "write", f"global::{KEY}", GLOBAL_LESSON, "--tags", "postgres")
        assert written.returncode == 0, written.stderr
        global_copy = await call(session, "memory_read", scope="global", key=KEY)
        assert global_copy["value"] == GLOBAL_LESSON
        assert global_copy["provenance"]["agent"] == "cli"

        # Search with no scopes: the folder's chain, and one hit per key (the narrowest copy wins).
        found = await call(session, "memory_search", query="ECONNREFUSED 5432")
        assert found["scopes"] == CHAIN
        hits = [(hit["memory"]["scope"], hit["memory"]["key"]) for hit in found["hits"]]
        assert hits == [(REPO, KEY)]
        assert found["hits"][0]["memory"]["value"] == LESSON
        assert found["hits"][0]["score"] > 0

        # Search within given scopes only: there the global copy is the hit.
        in_global = await call(session, "memory_search", query="ECONNREFUSED 5432", scopes=["global"])
        assert [(h["memory"]["scope"], h["memory"]["value"]) for h in in_global["hits"]] == [("global", GLOBAL_LESSON)]

        # Read: the memory in full.
        read = await call(session, "memory_read", scope=REPO, key=KEY)
        assert read == second["memory"]

        # List: grouped by scope, narrowest first, only scopes that hold something.
        listed = await call(session, "memory_list")
        assert [(g["scope"], [m["key"] for m in g["memories"]]) for g in listed["groups"]] == [
            (REPO, [KEY]),
            ("global", [KEY]),
        ]

        # Tree: the repo copy wins, the global copy is shadowed.
        tree = await call(session, "memory_tree")
        assert tree["scopes"] == CHAIN
        assert [entry["key"] for entry in tree["keys"]] == [KEY]
        entry = tree["keys"][0]
        assert entry["winner"]["scope"] == REPO
        assert [(m["scope"], m["value"]) for m in entry["shadowed"]] == [("global", GLOBAL_LESSON)]

        # Scopes: the chain, narrowest first, and how many memories each scope holds.
        scopes = await call(session, "memory_scopes")
        assert scopes["chain"] == CHAIN
        assert scopes["counts"] == {REPO: 1, "global": 1}

        # Lint and stats: what `hivelore lint` and `stats --json` say, for the same chain.
        linted = await call(session, "memory_lint")
        assert (linted["scopes"], linted["memories"]) == (CHAIN, 2)
        assert set(linted["counts"]) == {"stale", "near-duplicate", "malformed", "volatile-key"}
        assert linted["counts"]["stale"] == linted["counts"]["malformed"] == linted["counts"]["volatile-key"] == 0
        counted = await call(session, "memory_stats")
        assert (counted["visible"], counted["by_scope"], counted["citing_code"]) == (2, {REPO: 1, "global": 1}, 0)

        # Archive hides the repo copy from every read; the global copy is no longer shadowed.
        archived = await call(session, "memory_archive", scope=REPO, key=KEY)
        assert archived["archived_at"]
        assert path.is_file(), "archiving keeps the file"
        after_archive = await call(session, "memory_search", query="ECONNREFUSED 5432")
        assert [(h["memory"]["scope"], h["memory"]["key"]) for h in after_archive["hits"]] == [("global", KEY)]
        await call_error(session, "memory_read", scope=REPO, key=KEY)
        hidden = await call(session, "memory_list", scopes=[REPO], include_hidden=True)
        assert [m["archived_at"] is not None for g in hidden["groups"] for m in g["memories"]] == [True]

        # Restore brings it back, winner again.
        restored = await call(session, "memory_restore", scope=REPO, key=KEY)
        assert restored["archived_at"] is None
        after_restore = await call(session, "memory_search", query="ECONNREFUSED 5432")
        assert [(h["memory"]["scope"], h["memory"]["key"]) for h in after_restore["hits"]] == [(REPO, KEY)]

        # Forget deletes the file for good; reading it is then an error, over MCP and in the CLI.
        forgotten = await call(session, "memory_forget", scope=REPO, key=KEY)
        assert forgotten == {"forgotten": f"{REPO}::{KEY}", "path": str(path)}
        assert not path.exists()
        await call_error(session, "memory_read", scope=REPO, key=KEY)
        gone = await run_cli(cli, "read", f"{REPO}::{KEY}")
        assert gone.returncode == 1
        assert (await call(session, "memory_read", scope="global", key=KEY))["value"] == GLOBAL_LESSON


# -- 3. refusals ------------------------------------------------------------------------------------------


async def test_bad_input_comes_back_as_a_one_line_tool_error_and_writes_nothing(
    home: Path, repo: Path, cli: CLI, tmp_path: Path
) -> None:
    """Mistakes are tool results with isError, not protocol errors or crashes, and nothing reaches disk.

    - a scope with one colon gets the scope grammar and a "did you mean";
    - a value holding a GitHub token names the guard rule (secret.github_token) and never echoes the token;
    - an empty key, and reading a key that was never written, say what is wrong.
    The session stays usable after each of them.
    """
    async with mcp_session(home, repo, tmp_path / "server.log") as session:
        bad_scope = await call_error(session, "memory_write", scope="branch:acme/widget", key=KEY, value=LESSON)
        secret = await call_error(
            session,
            "memory_write",
            scope=REPO,
            key="ci-github-auth",
            value=f"CI pushes tags with the bot token {FAKE_GITHUB_TOKEN}; rotate it yearly.",
        )
        empty_key = await call_error(session, "memory_write", scope=REPO, key="", value=LESSON)
        unknown = await call_error(session, "memory_read", scope=REPO, key="never-written")

        # Nothing was written by any of them: no memory file, and the CLI lists nothing.
        assert memory_files(home) == []
        listed = await run_cli(cli, "list", "--json")
        assert listed.returncode == 0, listed.stderr
        assert json.loads(listed.stdout) == {}
        # The token is nowhere under HIVELORE_HOME, not even in the index.
        leaked = [p for p in home.rglob("*") if p.is_file() and FAKE_GITHUB_TOKEN.encode() in p.read_bytes()]
        assert leaked == []
        assert FAKE_GITHUB_TOKEN not in secret

        # The session still works after the errors.
        scopes = await call(session, "memory_scopes")
        assert scopes == {"chain": CHAIN, "counts": {}}

    # Every message is one line and says what is wrong and how to fix it.
    for message in (bad_scope, secret, empty_key, unknown):
        assert "\n" not in message.strip(), message
    assert "'branch:acme/widget' is not a valid scope" in bad_scope
    assert GRAMMAR in bad_scope
    assert "did you mean 'branch::acme/widget::BRANCH'" in bad_scope
    assert "secret.github_token" in secret
    assert "GitHub token" in secret
    assert "key is empty" in empty_key
    assert f"no memory {REPO}::never-written" in unknown


async def test_a_file_skipped_as_unreadable_is_named_in_the_answer(
    home: Path, repo: Path, cli: CLI, tmp_path: Path
) -> None:
    """The CLI prints "skipped <file>" on stderr; an agent over MCP sees it in the answer's warnings, so a
    lesson it cannot find is not silently missing."""
    assert (await run_cli(cli, "write", f"{REPO}::{KEY}", LESSON)).returncode == 0
    broken = home / "repo" / "acme" / "checkout" / "broken-notes.md"
    broken.write_text("---\nscope: repo::acme/checkout\nkey: [broken-notes\n---\nthe db needs docker\n")

    async with mcp_session(home, repo, tmp_path / "server.log") as session:
        found = await call(session, "memory_search", query="postgres")
        listed = await call(session, "memory_list")

    assert [hit["memory"]["key"] for hit in found["hits"]] == [KEY]
    for answer in (found, listed):
        assert any(str(broken) in w and "not valid YAML" in w for w in answer["warnings"]), answer["warnings"]


async def test_a_write_through_a_link_in_the_project_tier_is_a_one_line_tool_error(
    home: Path, repo: Path, tmp_path: Path
) -> None:
    """A committed `.hivelore/repo/acme/checkout -> elsewhere` (see tests/test_files_on_disk.py for the CLI):
    memory_write refuses it in one line naming the link, and nothing is written there."""
    outside = tmp_path / "outside"
    outside.mkdir()
    link = repo / ".hivelore" / "repo" / "acme" / "checkout"
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)
    async with mcp_session(home, repo, tmp_path / "server.log") as session:
        message = await call_error(session, "memory_write", scope=REPO, key=KEY, value=LESSON)
    assert "\n" not in message.strip(), message
    assert f"{link} is a symbolic link" in message
    assert list(outside.iterdir()) == []


# -- 4. start-up: the handshake at once, no call refused ------------------------------------------------------


def raw_session(home: Path, cwd: Path, lines: list[dict[str, Any]], answers: int) -> tuple[dict[int, str], str]:
    """Run `python -m hivelore mcp`, write `lines` (JSON-RPC messages) and close stdin; return the raw
    lines the server wrote, by request id (the SDK may answer out of order), and its stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "hivelore", "mcp"],
        cwd=cwd,
        env={**os.environ, "HIVELORE_HOME": str(home)},
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=SESSION_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    written = done.stdout.splitlines(keepends=True)
    assert len(written) == answers, f"expected {answers} answers, got: {done.stdout[:1000]}"
    return {json.loads(line)["id"]: line for line in written}, done.stderr


CONNECTING = ("tools/list", "prompts/list", "resources/list", "resources/templates/list", "ping")


def handshake(version: str = "2025-06-18") -> list[dict[str, Any]]:
    """What a client sends while connecting: initialize, then the lists and a ping (ids 2 to 6)."""
    hello = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *({"jsonrpc": "2.0", "id": n, "method": method} for n, method in enumerate(CONNECTING, start=2)),
    ]


def prepare(home: Path, cli: CLI) -> dict[str, Any]:
    prepared = cli("mcp", "--prepare")
    assert prepared.returncode == 0, prepared.stderr
    return json.loads((home / answers.FILENAME).read_text())


async def test_a_call_sent_right_after_initialize_is_answered_and_written(
    home: Path, repo: Path, cli: CLI, tmp_path: Path
) -> None:
    """With the answers prepared, the handshake is answered before the SDK has loaded; the agent's
    memory_write, sent the moment initialize returns, waits for the SDK instead of being refused,
    and the lesson is on disk."""
    prepare(home, cli)
    async with mcp_session(home, repo, tmp_path / "server.log") as session:
        written = await call(session, "memory_write", scope=REPO, key=KEY, value=LESSON)
        assert session.server_info is not None and session.server_info.name == "hivelore"
    assert Path(written["path"]).is_file()
    assert Path(written["path"]) == home / "repo" / "acme" / "checkout" / f"{KEY}.md"


def test_prepared_answers_are_byte_for_byte_the_sdks(home: Path, repo: Path, cli: CLI) -> None:
    """`hivelore mcp --prepare` keeps, for every protocol version the SDK negotiates, the SDK's own
    answers to initialize, tools/list, the prompt and resource lists and ping; a server started with
    them writes exactly the lines the SDK writes without them."""
    from_sdk, stderr = raw_session(home, repo, handshake(), answers=6)
    assert stderr == ""
    (home / answers.FILENAME).unlink()  # the first start kept them: start again from none

    book = prepare(home, cli)
    eras = {version: set(by_method) for version, by_method in book["answers"].items()}
    handshake_era = {"initialize", *CONNECTING}
    modern = {"server/discover", *CONNECTING} - {"ping"}
    listen = 'subscriptions/listen {"promptsListChanged":true,"resourcesListChanged":true,"toolsListChanged":true}'
    assert eras == {**dict.fromkeys(("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"), handshake_era),
                    "2026-07-28": {*modern, listen}}  # fmt: skip

    prepared, stderr = raw_session(home, repo, handshake(), answers=6)
    assert prepared == from_sdk
    assert stderr == ""
    assert json.loads(prepared[2])["result"]["tools"][0]["name"] == "memory_write"


def test_a_prepared_answer_the_sdk_contradicts_is_corrected_and_a_stale_book_ignored(
    home: Path, repo: Path, cli: CLI
) -> None:
    """The prepared answer is what the client gets before the SDK has loaded; the SDK's own answer is
    still compared with it. A wrong one is reported on stderr and replaced for the next start.
    A book made for other code (another fingerprint) is never used."""
    from_sdk, _ = raw_session(home, repo, handshake(), answers=6)
    path = home / answers.FILENAME
    book = json.loads(path.read_text())
    listed = book["answers"]["2025-06-18"]["tools/list"]
    book["answers"]["2025-06-18"]["tools/list"] = listed.replace("Write a lesson", "Write a LESSON")
    path.write_text(json.dumps(book))

    tampered, stderr = raw_session(home, repo, handshake(), answers=6)
    assert "Write a LESSON" in tampered[2], "the prepared answer is the one sent before the SDK runs"
    assert "the prepared answer to tools/list (2025-06-18) differed from the SDK's" in stderr
    assert json.loads(path.read_text())["answers"]["2025-06-18"]["tools/list"] == listed

    corrected, stderr = raw_session(home, repo, handshake(), answers=6)
    assert corrected == from_sdk and stderr == ""

    book = json.loads(path.read_text())
    book["fingerprint"] = "made by another version"
    book["answers"]["2025-06-18"]["tools/list"] = listed.replace("Write a lesson", "Write a LESSON")
    path.write_text(json.dumps(book))
    stale, stderr = raw_session(home, repo, handshake(), answers=6)
    assert stale == from_sdk and stderr == ""
    assert json.loads(path.read_text())["fingerprint"] == answers.fingerprint()


CLAUDE_ENVELOPE = {  # the `_meta` of every request Claude Code 2.1.332 sends, as captured (shortened)
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
}


def modern_handshake() -> list[dict[str, Any]]:
    """What Claude Code 2.1.332 sends while connecting (2026 era): server/discover, then the lists,
    each in its envelope (ids 1 to 4)."""
    methods = ("server/discover", "prompts/list", "resources/list", "tools/list")
    return [
        {"jsonrpc": "2.0", "id": n, "method": method, "params": {"_meta": CLAUDE_ENVELOPE}}
        for n, method in enumerate(methods, start=1)
    ]


def test_a_2026_client_is_answered_from_the_book_before_the_sdk_loads(home: Path, repo: Path, cli: CLI) -> None:
    """Claude Code 2.1.332 (and the SDK's own client) connect in the 2026 era: server/discover and
    enveloped lists, no initialize. Those wait for no SDK (0.7-1.5 s on a loaded machine): the
    prepared answers are the SDK's byte for byte, a tampered one is what is sent and is then
    corrected, and the call that follows is served in that era."""
    from_sdk, stderr = raw_session(home, repo, modern_handshake(), answers=4)
    assert stderr == ""
    prepare(home, cli)
    prepared, stderr = raw_session(home, repo, modern_handshake(), answers=4)
    assert prepared == from_sdk and stderr == ""

    path = home / answers.FILENAME
    book = json.loads(path.read_text())
    listed = book["answers"]["2026-07-28"]["tools/list"]
    book["answers"]["2026-07-28"]["tools/list"] = listed.replace("Write a lesson", "Write a LESSON")
    path.write_text(json.dumps(book))
    arguments = {"scope": REPO, "key": KEY, "value": LESSON}
    write = {"name": "memory_write", "arguments": arguments, "_meta": CLAUDE_ENVELOPE}
    lines = [*modern_handshake(), {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": write}]
    written, stderr = raw_session(home, repo, lines, answers=5)
    assert "Write a LESSON" in written[4], "the 2026 tools/list waited for the SDK"
    assert "the prepared answer to tools/list (2026-07-28) differed from the SDK's" in stderr
    assert json.loads(path.read_text())["answers"]["2026-07-28"]["tools/list"] == listed
    assert json.loads(written[5])["result"]["isError"] is False, written[5]
    assert (home / "repo" / "acme" / "checkout" / f"{KEY}.md").is_file()


LISTEN = {  # Claude Code 2.1.332's listen, sent right after its probe; its lists wait for the acknowledgment
    "jsonrpc": "2.0", "id": "listen:0", "method": "subscriptions/listen",
    "params": {"_meta": CLAUDE_ENVELOPE,
               "notifications": {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}},
}  # fmt: skip


def listen_session(home: Path, repo: Path) -> tuple[str, str]:
    """Claude Code's probe and listen to `hivelore mcp`: (the acknowledgment line it wrote, its stderr)."""
    probe = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": CLAUDE_ENVELOPE}}
    done = subprocess.run(
        [sys.executable, "-m", "hivelore", "mcp"], cwd=repo, env={**os.environ, "HIVELORE_HOME": str(home)},
        input="".join(json.dumps(line) + "\n" for line in (probe, LISTEN)), capture_output=True, text=True,
        timeout=SESSION_TIMEOUT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    acknowledged = [line for line in done.stdout.splitlines(keepends=True) if "subscriptions/acknowledged" in line]
    assert len(acknowledged) == 1, done.stdout[:2000]
    return acknowledged[0], done.stderr


def test_claude_codes_listen_is_acknowledged_from_the_book(home: Path, repo: Path, cli: CLI) -> None:
    """Claude Code 2.1.332 sends its lists only once the server acknowledged its `subscriptions/listen`
    (a notification, not a response): an acknowledgment that waited for the SDK put Claude Code's
    tools/list at 0.8 s after the spawn however well the rest was prepared. The prepared one is the
    SDK's byte for byte; a tampered one is what is sent, reported and corrected."""
    from_sdk, stderr = listen_session(home, repo)
    assert stderr == ""
    (home / answers.FILENAME).unlink()
    prepare(home, cli)
    prepared, stderr = listen_session(home, repo)
    assert (prepared, stderr) == (from_sdk, "")

    path = home / answers.FILENAME
    book = json.loads(path.read_text())
    key = next(k for k in book["answers"]["2026-07-28"] if k.startswith("subscriptions/listen"))
    granted = book["answers"]["2026-07-28"][key]
    book["answers"]["2026-07-28"][key] = granted.replace('"toolsListChanged":true', '"toolsListChanged":false')
    path.write_text(json.dumps(book))
    tampered, stderr = listen_session(home, repo)
    assert '"toolsListChanged":false' in tampered, "the acknowledgment waited for the SDK"
    assert f"the prepared answer to {key} (2026-07-28) differed from the SDK's" in stderr
    assert json.loads(path.read_text())["answers"]["2026-07-28"][key] == granted


def test_a_probe_given_up_for_initialize_before_the_sdk_ran_does_not_decide_the_era(
    home: Path, repo: Path, cli: CLI
) -> None:
    """Claude Code 2.1 first probes with a 2026 `server/discover`; when the SDK is still loading it times
    out and falls back to `initialize` on the same process. The stale probe must not reach the SDK first:
    it would serve the 2026 era and refuse the handshake's calls ("params._meta is missing the required
    envelope key(s)"). The probe gets no answer; the handshake and the call that follows do."""
    prepare(home, cli)
    probe = {"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": CLAUDE_ENVELOPE}}
    write = {"name": "memory_write", "arguments": {"scope": REPO, "key": KEY, "value": LESSON}}
    call_write = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": write}
    answered, stderr = raw_session(home, repo, [probe, *handshake(), call_write], answers=8)
    assert "supportedVersions" in json.loads(answered[0])["result"], "the book answers the probe, whoever waits"
    assert "differed" not in stderr
    assert "error" not in json.loads(answered[1]), answered[1]
    result = json.loads(answered[7])["result"]
    assert not result.get("isError"), result
    assert (home / "repo" / "acme" / "checkout" / f"{KEY}.md").is_file()


CODEX_TOOLS_LIST = {"_meta": {"progressToken": 0}}  # the params of Codex 0.171's tools/list, as captured


@pytest.mark.parametrize(
    ("params", "from_book"),
    [
        (None, True),
        ({}, True),
        (CODEX_TOOLS_LIST, True),
        ({"_meta": {}}, True),
        ({"cursor": "2"}, False),  # another page
        ({**CODEX_TOOLS_LIST, "cursor": "2"}, False),
        ({"_meta": 0}, False),
        ([], False),
    ],
)
def test_a_connecting_request_with_only_its_meta_is_answered_from_the_book(
    tmp_path: Path, params: object, from_book: bool
) -> None:
    """A request's `_meta` (a progress token) changes none of the connecting answers, so the book
    answers it: Codex 0.171 sends tools/list with one, and fixes its session's tools 1 s after
    the spawn, so an answer that waits for the SDK (0.6-3 s) loses hivelore's tools for the session."""
    book = answers.Book(str(tmp_path / answers.FILENAME), answers.fingerprint(), {
        "2025-06-18": {"initialize": '{"from":"book"}', "tools/list": '{"tools":["from book"]}'},
    })  # fmt: skip
    sent: list[bytes] = []
    front = stdio.Front(book, sent.append)
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "codex", "version": "1"}}
    front.receive(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}))
    listing: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    if params is not None:
        listing["params"] = params
    front.receive(json.dumps(listing))
    expected = [b'{"jsonrpc":"2.0","id":0,"result":{"from":"book"}}\n']
    if from_book:
        expected.append(b'{"jsonrpc":"2.0","id":1,"result":{"tools":["from book"]}}\n')
    assert sent == expected


def test_codex_tools_list_is_answered_before_the_sdk_loads(home: Path, repo: Path, cli: CLI) -> None:
    """Codex's own tools/list (with `_meta`) gets the prepared answer, not one that waits for the
    SDK: a book whose tools/list was altered is what the client gets, and the SDK's answer then
    corrects the book."""
    prepare(home, cli)
    path = home / answers.FILENAME
    book = json.loads(path.read_text())
    listed = book["answers"]["2025-06-18"]["tools/list"]
    book["answers"]["2025-06-18"]["tools/list"] = listed.replace("Write a lesson", "Write a LESSON")
    path.write_text(json.dumps(book))
    lines = handshake()
    lines[2] = {**lines[2], "params": CODEX_TOOLS_LIST}
    written, stderr = raw_session(home, repo, lines, answers=6)
    assert "Write a LESSON" in written[2], "Codex's tools/list waited for the SDK"
    assert "the prepared answer to tools/list (2025-06-18) differed from the SDK's" in stderr


def test_a_client_that_closes_stdin_after_its_call_still_gets_the_answer(home: Path, repo: Path, cli: CLI) -> None:
    """A client that writes its call and closes stdin at once (a script piping into the server) gets
    the answer and the lesson is written: the SDK drops requests in flight at end of file, so the
    server holds the SDK's stdin open until every request is answered."""
    prepare(home, cli)
    write = {"name": "memory_write", "arguments": {"scope": REPO, "key": KEY, "value": LESSON}}
    lines = [*handshake(), {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": write}]
    written, stderr = raw_session(home, repo, lines, answers=7)
    assert json.loads(written[7])["result"]["isError"] is False, written[7]
    assert (home / "repo" / "acme" / "checkout" / f"{KEY}.md").is_file()
    assert stderr == ""


PLAIN_IDS = st.one_of(st.integers(-(10**15) + 1, 10**15 - 1), st.from_regex(r"[A-Za-z0-9_.:-]{1,64}", fullmatch=True))


@given(
    request_id=PLAIN_IDS,
    result=st.dictionaries(st.text(), st.one_of(st.text(), st.integers(), st.booleans(), st.none()), max_size=4),
)
def test_a_response_line_gives_back_its_result_and_only_for_its_id(request_id: int | str, result: dict) -> None:
    """The book keeps the result text cut out of the SDK's line and sends it back around another id."""
    rid = answers.id_text(request_id)
    assert rid is not None
    text = json.dumps(result, separators=(",", ":"))
    line = answers.response_line(rid, text)
    assert json.loads(line) == {"jsonrpc": "2.0", "id": request_id, "result": result}
    assert answers.result_of(line, rid) == text
    assert answers.result_of(line, answers.id_text(f"{request_id}x")) is None


def test_ids_whose_echo_is_uncertain_are_never_answered_from_the_book() -> None:
    for odd in (1.5, True, None, "with space", "é", "x" * 65, [1], 10**16):
        assert answers.id_text(odd) is None, odd


@pytest.mark.parametrize(
    "text",
    [
        "not JSON",
        "[]",
        '{"fingerprint": "FP", "answers": []}',
        '{"fingerprint": "FP", "answers": {"2025-06-18": {"ping": 1}}}',
    ],
)
def test_a_book_that_cannot_be_used_is_an_empty_one(tmp_path: Path, text: str) -> None:
    """A damaged answers file costs a slow start, never a wrong answer or a crash."""
    (tmp_path / answers.FILENAME).write_text(text.replace("FP", answers.fingerprint()))
    assert answers.Book.load(str(tmp_path)).answers == {}


def test_a_bare_hivelore_mcp_starts_without_the_cli_framework(home: Path, repo: Path) -> None:
    """`hivelore mcp` is what every agent starts: it goes straight to the stdio server, without typer's
    and the CLI's start-up before the handshake."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "hivelore", "mcp"],
        cwd=repo, env={**os.environ, "HIVELORE_HOME": str(home)}, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]
    assert done.returncode == 0, done.stderr[-2000:]
    assert "hivelore.mcp.stdio" in imported
    assert not {"typer", "hivelore.cli.app"} & set(imported)


# -- 5. the history of some code, as `context --file/--symbol` tells it -----------------------------------------

TOKEN_LESSON = "validate_token must reject expired JWTs: check exp before splitting, or refresh breaks"


def dev_a_claims_validate_token_and_decides(home: Path, shop: Path) -> None:
    """dev-a's agent is about to edit validate_token (its task claims it); dev-a decides on RS256 and
    writes a lesson that names it."""
    assert cli_as(home, shop, "dev-a", "graph", "index").returncode == 0
    claude_hook_as(home, shop, "dev-a", "UserPromptSubmit", {"session_id": "a-1", "prompt": "add JWT support"})
    tool_input = {"file_path": str(shop / "shop" / "tokens.py"), "old_string": "[0]", "new_string": "[1]"}
    claude_hook_as(
        home, shop, "dev-a", "PreToolUse", {"session_id": "a-1", "tool_name": "Edit", "tool_input": tool_input}
    )
    decided = cli_as(
        home, shop, "dev-a", "task", "decide", "Tokens are JWTs signed with RS256", "--symbol", "validate_token"
    )
    assert decided.returncode == 0, decided.stderr
    assert cli_as(home, shop, "dev-a", "write", "repo::acme/shop::token-expiry", TOKEN_LESSON).returncode == 0


async def test_code_history_answers_what_context_with_a_file_prints(home: Path, tmp_path: Path) -> None:
    """dev-b asks over MCP what happened to shop/tokens.py (by file, and by symbol name) before touching
    it: dev-a's decision, dev-a's task that claimed validate_token, and the lesson that names it — the
    same history the CLI's `context --file shop/tokens.py --json` carries. A name of no symbol is a tool
    error."""
    shop = make_shop(tmp_path / "shop", SHOP_FILES)
    dev_a_claims_validate_token_and_decides(home, shop)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "hivelore", "mcp"], cwd=str(shop), env=developer_env(home, "dev-b")
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        by_file = await call(session, "code_history", files=["shop/tokens.py"])
        by_name = await call(session, "code_history", symbols=["validate_token"])
        unknown = await call_error(session, "code_history", symbols=["no_such_function"])
    printed = json.loads(cli_as(home, shop, "dev-b", "context", "--file", "shop/tokens.py", "--json").stdout)["code"]

    assert by_file["asked"] == ["shop/tokens.py"] and by_file["symbols"] == ["shop/tokens.py::validate_token"]
    (history,) = by_file["history"]
    assert history["symbol"] == "shop/tokens.py::validate_token" and history["failed"] == []
    assert [d["text"] for d in history["decisions"]] == ["Tokens are JWTs signed with RS256"]
    assert [(t["owner"], t["title"], t["status"]) for t in history["claimed_by"]] == [
        ("dev-a", "add JWT support", "active")
    ]
    assert [m["key"] for m in by_file["lessons"]] == ["token-expiry"] and by_file["problem"] is None
    assert by_name["asked"] == ["shop/tokens.py::validate_token"]
    assert {k: v for k, v in by_name.items() if k != "asked"} == {k: v for k, v in by_file.items() if k != "asked"}
    assert [by_file[k] for k in ("asked", "symbols", "problem")] == [
        printed[k] for k in ("asked", "symbols", "problem")
    ]
    assert [d["id"] for d in history["decisions"]] == [d["id"] for d in printed["history"][0]["decisions"]]
    assert by_file["lessons"] == printed["lessons"]
    assert "no symbol 'no_such_function'" in unknown


async def test_code_history_without_a_graph_says_so(home: Path, tmp_path: Path) -> None:
    shop = make_shop(tmp_path / "shop", SHOP_FILES)

    async with mcp_session(home, shop, tmp_path / "server.log") as session:
        found = await call(session, "code_history", files=["shop/tokens.py"])

    assert found == {
        "asked": ["shop/tokens.py"], "symbols": [], "history": [], "lessons": [],
        "problem": "no code graph for this repository yet: run `hivelore graph index`",
    }  # fmt: skip
