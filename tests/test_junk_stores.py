"""Every store file replaced by junk: every CLI command and every MCP tool still answers in one plain
sentence — or works, when it does not need that store — and never with a traceback.

The stores are the files of docs/config.md: index.db, events.db, team.db, graph.db and a profile's
promotions.json. Each is overwritten with the same junk bytes in a home where a lesson, a task and
an indexed code graph exist, so that whatever a command opens first, the damaged file is in its way.

The CLI commands are enumerated from the typer app, so a new command fails this test until it has
arguments in ARGS. They run in-process through `hivelore.cli.main` (the console script's own entry:
the same argument parsing and error table as a subprocess, at a fraction of the cost); a few
representative ones also run as real subprocesses. The MCP tools are enumerated from the server's
tool list and called through the official client over stdio, one server per damaged store.
"""

from __future__ import annotations

import copy
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
import typer
from harness import SHOP_FILES, aimed, fixture_payloads, hook, make_shop
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from hivelore.cli import main
from hivelore.cli.app import app

JUNK = b"this is not what hivelore wrote here\n" * 200
STORES = {
    "index.db": "index.db",
    "events.db": "events.db",
    "team.db": "team.db",
    "graph.db": "graph.db",
    "promotions.json": "profiles/default/promotions.json",
}
ADDRESS = "repo::acme/shop::tests-need-local-postgres"
SYMBOL = "checkout"

# The minimal valid arguments of every command (a few run twice, to reach a second code path).
ARGS: dict[str, list[list[str]]] = {
    "write": [["write", ADDRESS, "run docker compose up -d db first"]],
    "read": [["read", ADDRESS]],
    "list": [["list"]],
    "tree": [["tree"]],
    "forget": [["forget", ADDRESS]],
    "archive": [["archive", ADDRESS]],
    "restore": [["restore", ADDRESS]],
    "commit": [["commit", ADDRESS], ["commit"]],
    "purge": [["purge", "--dry-run"]],
    "import": [["import", "{jsonl}"]],
    "export": [["export"]],
    "scopes": [["scopes"]],
    "search": [["search", "postgres"]],
    "context": [["context"], ["context", "--file", "shop/orders.py", "--symbol", SYMBOL]],
    "index status": [["index", "status"]],
    "index rebuild": [["index", "rebuild"]],
    "index path": [["index", "path"]],
    "doctor": [["doctor", "--json"]],
    "profile read": [["profile", "read", "USER.md"]],
    "profile search": [["profile", "search", "concise"]],
    "profile forget": [["profile", "forget", "Prefer concise replies."]],
    "profile compact": [["profile", "compact", "USER.md", "--dry-run"]],
    "profile promotions": [["profile", "promotions"]],
    "graph index": [["graph", "index"]],
    "graph export": [["graph", "export"]],
    "graph push": [["graph", "push"]],
    "graph blast-radius": [["graph", "blast-radius", SYMBOL]],
    "graph path": [["graph", "path", SYMBOL, SYMBOL]],
    "graph hotspots": [["graph", "hotspots"]],
    "graph conflicts": [["graph", "conflicts", SYMBOL]],
    "graph who-knows": [["graph", "who-knows", SYMBOL]],
    "graph why": [["graph", "why", SYMBOL]],
    "task list": [["task", "list"]],
    "task create": [["task", "create", "add JWT support"]],
    "task done": [["task", "done", "1"]],
    "task handoff": [["task", "handoff", "1", "tests pass, docs left"]],
    "task resume": [["task", "resume", "1"]],
    "task decide": [["task", "decide", "orders stay synchronous", "--symbol", SYMBOL]],
    "hook-server status": [["hook-server", "status"]],
    "hook-server stop": [["hook-server", "stop"]],
    "install": [["install", "--project", "--agent", "claude", "--yes"]],
    "uninstall": [["uninstall", "--project", "--agent", "claude", "--yes"]],
    "migrate": [["migrate", "--to", "remote"]],
    "lint": [["lint"]],
    "dedupe": [["dedupe"], ["dedupe", "--yes"]],
    "stats": [["stats"]],
    "diff": [["diff", "repo::acme/shop", "global"], ["diff", "--remote"]],
}
# Commands this test does not run in-process, and why.
NOT_HERE = {
    "mcp": "it is the MCP server, which test_every_mcp_tool_on_a_junk_store drives with a real client",
    "serve": "it is the team server, on PostgreSQL: tests/server/ runs it",
    "dashboard": "it is a web server until stopped: tests/dashboard/ runs it over the same stores",
    **dict.fromkeys(
        [
            *(
                f"remote {c}"
                for c in (
                    "status",
                    "trust",
                    "untrust",
                    "login",
                    "logout",
                    "delete-my-data",
                    "restore-my-data",
                    "delete-my-account",
                )
            ),
            *(f"org {c}" for c in ("create", "list", "show", "invite", "join", "role", "remove", "share", "unshare")),
            *(f"org {c}" for c in ("rename", "delete")),
            *(f"token {c}" for c in ("create", "list", "revoke")),
        ],
        "it opens none of these stores, only the team server: tests/server/test_remote_cli.py runs it against one",
    ),
    **dict.fromkeys(
        [f"org {c}" for c in ("switch-off", "switch-on", "switches", "memories", "forget", "audit")],
        "it opens none of these stores, only the team server: tests/server/test_org_switch.py and"
        " test_org_data.py run it against one",
    ),
    **dict.fromkeys(
        ["org team", "org team-forget"],
        "it opens none of these stores, only the team server: tests/server/test_team_data.py runs it against one",
    ),
}

# Run as real subprocesses too, with the exit code each must end with: a damaged graph.db or team.db
# is an error with its repair; the index falls back to reading the files (with a warning), and
# `profile forget` goes on without events.db (with a warning).
SUBPROCESS = [
    ("graph.db", ["graph", "hotspots"], 1),
    ("team.db", ["task", "list"], 1),
    ("index.db", ["search", "postgres"], 0),
    ("events.db", ["profile", "forget", "Prefer concise replies."], 1),
    ("promotions.json", ["profile", "promotions"], 1),
]


def command_names(group: object, prefix: str = "") -> Iterator[str]:
    """Every command of a click group, subcommands as "GROUP NAME" (typer vendors its own click, so a
    group is recognised by its `commands`)."""
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from command_names(command, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}"


def test_every_command_has_arguments_here() -> None:
    commands = set(command_names(typer.main.get_command(app)))
    assert commands == set(ARGS) | set(NOT_HERE)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(live, saved): in `live`, a home with a lesson, a task with a claim and a decision, an indexed
    code graph and a profile, and the repository they are about; `saved` is a copy of it. Built once:
    each test gets `live` back as saved (the same paths, as graph.db keys a graph by its folder)."""
    base = tmp_path_factory.mktemp("junk")
    live, saved = base / "live", base / "saved"
    repo = make_shop(live / "shop", SHOP_FILES)
    env = {**os.environ, "HIVELORE_HOME": str(live / "home"), "HIVELORE_DEVELOPER": "alice"}
    for argv in (
        ["write", ADDRESS, "pnpm test needs the local postgres: run docker compose up -d db first"],
        ["graph", "index"],
        ["task", "create", "speed up checkout"],
        ["task", "decide", "checkout stays synchronous", "--symbol", SYMBOL],
        ["profile", "promotions"],
    ):
        done = subprocess.run([sys.executable, "-m", "hivelore", *argv], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr
    (live / "home" / "profiles" / "default").mkdir(parents=True, exist_ok=True)
    (live / "home" / "profiles" / "default" / "promotions.json").write_text('{"entries": []}\n')
    shutil.copytree(live, saved, symlinks=True)
    return live, saved


@pytest.fixture
def home(prepared: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    """The prepared home, as it was saved (for in-process calls, HIVELORE_HOME points at it)."""
    live, saved = prepared
    shutil.rmtree(live)
    shutil.copytree(saved, live, symlinks=True)
    monkeypatch.setenv("HIVELORE_HOME", str(live / "home"))
    monkeypatch.delenv("HIVELORE_MODE", raising=False)
    return live / "home"


@pytest.fixture
def shop(home: Path) -> Path:
    return home.parent / "shop"


def spoil(home: Path, store: str) -> None:
    path = home / STORES[store]
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("-wal", "-shm"):  # sqlite would otherwise read the pages its log still holds
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    path.write_bytes(JUNK)


def run_in_process(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> tuple[int, str, str]:
    """`hivelore ARGV` through the console script's entry: its exit code, stdout and stderr. Any
    exception other than SystemExit is what a user would have seen as a traceback: it is returned as
    stderr's last line, as Python would print it."""
    monkeypatch.setattr(sys, "argv", ["hivelore", *argv])
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    capsys.readouterr()
    crash = ""
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception as exc:  # noqa: BLE001 -- the point: name the command that let one through
        code, crash = 1, f"Traceback (most recent call last): ...\n{type(exc).__name__}: {exc}\n"
    captured = capsys.readouterr()
    return code, captured.out, captured.err + crash


def problem(argv: list[str], code: int, stdout: str, stderr: str) -> str | None:
    """What is wrong with how `hivelore ARGV` ended, or None: no traceback anywhere, and a failure
    is one line on stderr, "hivelore: " and a sentence (warnings aside)."""
    shown = f"`hivelore {' '.join(argv)}` exited {code}: {stderr.strip()}"
    if "Traceback" in stdout + stderr:
        return shown
    errors = [line for line in stderr.splitlines() if not line.startswith("hivelore: warning: ")]
    if code != 0 and (len(errors) != 1 or not errors[0].startswith("hivelore: ") or not errors[0].endswith(".")):
        return shown
    return None


@pytest.mark.parametrize("store", list(STORES))
def test_every_command_on_a_junk_store(
    store: str, home: Path, shop: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    jsonl = tmp_path / "one.jsonl"
    jsonl.write_text(json.dumps({"scope": "repo::acme/shop", "key": "imported", "value": "an imported lesson"}) + "\n")
    monkeypatch.chdir(shop)
    monkeypatch.setenv("HIVELORE_DEVELOPER", "bob")
    problems = []
    for variants in ARGS.values():
        for template in variants:
            spoil(home, store)  # again each time: `index rebuild` and `graph index` repair what they rebuild
            argv = [arg.replace("{jsonl}", str(jsonl)) for arg in template]
            problems.append(problem(argv, *run_in_process(argv, monkeypatch, capsys)))
    found = [p for p in problems if p]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(("store", "argv", "code"), SUBPROCESS, ids=[f"{s}:{' '.join(a)}" for s, a, _ in SUBPROCESS])
def test_representative_commands_on_a_junk_store_as_subprocesses(
    store: str, argv: list[str], code: int, home: Path, shop: Path
) -> None:
    spoil(home, store)
    env = {**os.environ, "HIVELORE_HOME": str(home), "HIVELORE_DEVELOPER": "bob"}
    done = subprocess.run([sys.executable, "-m", "hivelore", *argv], cwd=shop, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert problem(argv, done.returncode, done.stdout, done.stderr) is None
    assert done.returncode == code, done.stderr
    if code:
        assert STORES[store].split("/")[-1] in done.stderr, done.stderr


def test_the_repair_a_junk_graph_db_names_works(home: Path, shop: Path) -> None:
    env = {**os.environ, "HIVELORE_HOME": str(home)}

    def hivelore(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "hivelore", *argv], cwd=shop, env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip

    spoil(home, "graph.db")
    damaged = hivelore("graph", "hotspots")
    assert damaged.returncode == 1
    assert damaged.stderr.endswith(": run `hivelore graph index` to rebuild it (the graph is derived from the code).\n")
    assert hivelore("graph", "index").returncode == 0
    hotspots = hivelore("graph", "hotspots", "--json")
    assert hotspots.returncode == 0, hotspots.stderr
    assert "shop/orders.py::checkout" in {h["symbol"] for h in json.loads(hotspots.stdout)}


# -- MCP --------------------------------------------------------------------------------------------

TOOL_ARGS: dict[str, dict[str, object]] = {
    "memory_write": {"scope": "repo::acme/shop", "key": "k", "value": "run docker compose up -d db first"},
    "memory_read": {"scope": "repo::acme/shop", "key": "tests-need-local-postgres"},
    "memory_search": {"query": "postgres"},
    "memory_list": {},
    "memory_forget": {"scope": "repo::acme/shop", "key": "tests-need-local-postgres"},
    "memory_archive": {"scope": "repo::acme/shop", "key": "tests-need-local-postgres"},
    "memory_restore": {"scope": "repo::acme/shop", "key": "tests-need-local-postgres"},
    "memory_commit": {"addresses": ["repo::acme/shop::tests-need-local-postgres"]},
    "memory_scopes": {},
    "memory_tree": {},
    "memory_lint": {},
    "memory_stats": {},
    "profile_read": {"name": "USER.md"},
    "profile_search": {"query": "concise"},
    "blast_radius": {"symbol": SYMBOL},
    "shortest_path": {"source": SYMBOL, "target": SYMBOL},
    "hotspots": {},
    "conflicts": {"symbols": [SYMBOL]},
    "who_knows": {"symbol": SYMBOL},
    "why": {"symbol": SYMBOL},
    "task_board": {},
    "code_history": {"files": ["shop/tokens.py"], "symbols": [SYMBOL]},
    "remote_status": {},
    "org_scopes": {},
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.parametrize("store", list(STORES))
async def test_every_mcp_tool_on_a_junk_store(store: str, home: Path, shop: Path, tmp_path: Path) -> None:
    spoil(home, store)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hivelore", "mcp"],
        env={"HIVELORE_HOME": str(home), "HIVELORE_DEVELOPER": "bob"},
        cwd=shop,
    )
    log = tmp_path / "server.log"
    answers: dict[str, tuple[bool, str]] = {}
    with log.open("w") as errlog, anyio.fail_after(120):
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {tool.name for tool in (await session.list_tools()).tools}
            assert tools == set(TOOL_ARGS)
            for name, arguments in TOOL_ARGS.items():
                result = await session.call_tool(name, arguments)
                text = "\n".join(getattr(block, "text", "") for block in result.content)
                answers[name] = (result.is_error, text)
                spoil(home, store)
    assert "Traceback" not in log.read_text(errors="replace")
    for name, (is_error, text) in answers.items():
        if is_error:  # the SDK puts "Error executing tool NAME: " before our sentence, and nothing after it on a crash
            assert text.startswith(f"Error executing tool {name}: "), f"{name} crashed: {text}"
            assert "\n" not in text and "Traceback" not in text, f"{name}: {text}"


# -- hooks ------------------------------------------------------------------------------------------

HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop")


@pytest.mark.parametrize("store", list(STORES))
def test_hooks_on_a_junk_store_exit_0_and_say_nothing_on_stderr(store: str, home: Path, shop: Path) -> None:
    """Claude Code's recorded examples of the events that open the stores, each aimed at the shop:
    `hook()` checks exit 0, an empty stderr and a well-formed answer (or none)."""
    spoil(home, store)
    ran = set()
    for label, event, payload in fixture_payloads("claude"):
        if event in HOOK_EVENTS and "#" in label:  # the documented examples, not the raw captures
            hook(home, shop, "claude", event, aimed(copy.deepcopy(payload), shop, session_id="junk"))
            ran.add(event)
            spoil(home, store)
    assert ran == set(HOOK_EVENTS)
