"""What several test modules share: real git repositories, the shop story's code, running the real hook
command and the real CLI as a developer, the recorded hook payloads, and an MCP client session with the real
server. Test modules import from here, never from one another (conftest.py holds the fixtures).
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, NamedTuple

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult

from hivelore.hooks.catalog import kind_of
from hivelore.hooks.client import server_state

# --- git repositories ------------------------------------------------------------------------------------------------


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def make_repo(path: Path, origin: str | None = "git@github.com:acme/checkout.git", branch: str = "main") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", branch)
    git(path, "config", "user.email", "dev@example.com")
    git(path, "config", "user.name", "Dev")
    if origin:
        git(path, "remote", "add", "origin", origin)
    (path / "README.md").write_text("checkout\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "init")
    return path


def make_shop(path: Path, files: dict[str, str]) -> Path:
    """A repository with origin git@github.com:acme/shop.git holding `files` (path → text), committed."""
    repo = make_repo(path, origin="git@github.com:acme/shop.git")
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "shop")
    return repo


# The shop: checkout calls current_user calls validate_token; daily calls receipt.
SHOP_FILES = {
    "shop/__init__.py": "",
    "shop/tokens.py": (
        "def validate_token(token):\n"
        "    if not token:\n"
        "        raise ValueError('no token')\n"
        "    return token.split('.')[0]\n"
    ),
    "shop/users.py": (
        "from shop.tokens import validate_token\n\n\n"
        "def current_user(request):\n"
        "    return validate_token(request.headers['Authorization'])\n"
    ),
    "shop/orders.py": (
        "from shop.users import current_user\n\n\n"
        "def checkout(request, cart):\n"
        "    user = current_user(request)\n"
        "    return {'user': user, 'total': sum(cart)}\n\n\n"
        "def receipt(order):\n"
        "    return f\"total: {order['total']}\"\n"
    ),
    "shop/reports.py": (
        "from shop.orders import receipt\n\n\ndef daily(orders):\n    return [receipt(o) for o in orders]\n"
    ),
}


# --- the CLI and the hook as one of several developers --------------------------------------------------------------


def developer_env(home: Path, developer: str) -> dict[str, str]:
    return {**os.environ, "HIVELORE_HOME": str(home), "HIVELORE_DEVELOPER": developer}


def cli_as(home: Path, repo: Path, developer: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hivelore", *args], cwd=repo, env=developer_env(home, developer),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def claude_hook_as(home: Path, repo: Path, developer: str, event: str, payload: dict) -> str:
    """One Claude hook as the agent runs it; what the agent is told (additionalContext)."""
    result = subprocess.run(
        [sys.executable, "-m", "hivelore", "hook", "--agent", "claude", "--event", event],
        input=json.dumps({"cwd": str(repo), "hook_event_name": event, **payload}),
        cwd=repo, env=developer_env(home, developer), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0 and result.stderr == ""
    log = home / "logs" / "hooks.log"
    assert not log.exists(), log.read_text()
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"] if result.stdout else ""


# --- hook events as each agent sends them ----------------------------------------------------------------------------

PAYLOADS = Path(__file__).parent / "fixtures" / "hook-payloads"
FOLDERS = {"claude": "claude-code", "codex": "codex", "kiro": "kiro", "gemini": "gemini", "cursor": "cursor"}
JSON_AGENTS = {"claude", "codex", "gemini", "cursor"}  # Kiro takes plain text
CURSOR_FIELDS = {"additional_context", "user_message", "agent_message", "continue", "permission"}

REPO = "repo::acme/checkout"
KEY = "tests-need-local-postgres"
ADDRESS = f"{REPO}::{KEY}"
LESSON = (
    "pnpm test fails with ECONNREFUSED 127.0.0.1:5432 until the local postgres is up: "
    "run `docker compose up -d db` first."
)
ERROR = "Error: connect ECONNREFUSED 127.0.0.1:5432"
NUDGE = "no stored lesson matches"
SEEN = "you have hit something like this before"


class Hook(NamedTuple):
    returncode: int
    stdout: bytes
    stderr: bytes
    seconds: float


HOOK_SECONDS = 5.0  # generous: a hook takes a tenth of that; this only catches a hang


def hook_env(home: Path, developer: str = "", hook_server: str = "") -> dict[str, str]:
    """The test's environment with only HIVELORE_HOME, HIVELORE_HOOK_SERVER (the test's, unless `hook_server`
    says "on" or "off") and HIVELORE_HOOK_MODEL (see conftest.py) of hivelore's variables (an agent running
    these tests may have set HIVELORE_AGENT or HIVELORE_SESSION), and HIVELORE_DEVELOPER when a test plays
    several developers."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVELORE_")}
    server = hook_server or os.environ["HIVELORE_HOOK_SERVER"]
    env = {**env, "HIVELORE_HOME": str(home), "HIVELORE_HOOK_SERVER": server}
    env["HIVELORE_HOOK_MODEL"] = os.environ["HIVELORE_HOOK_MODEL"]
    return {**env, "HIVELORE_DEVELOPER": developer} if developer else env


def run_hook(home: Path, cwd: Path, args: list[str], stdin: bytes, developer: str = "", hook_server: str = "") -> Hook:
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "hivelore", "hook", *args],
        input=stdin,
        cwd=cwd,
        env=hook_env(home, developer, hook_server),
        capture_output=True,
        timeout=60,
    )
    return Hook(result.returncode, result.stdout, result.stderr, time.monotonic() - start)


def hook(home: Path, repo: Path, agent: str, event: str, payload: dict, *flags: str, developer: str = "") -> str:
    """Run one hook the way the agent does; check the universal contract; return what the agent is told."""
    args = ["--agent", agent, "--event", event, *flags]
    result = run_hook(home, repo, args, json.dumps(payload).encode(), developer)

    assert result.returncode == 0
    assert result.stderr == b""
    assert problems(agent, event, result.stdout) == []
    assert result.seconds < HOOK_SECONDS, f"{agent} {event} took {result.seconds:.1f} s"
    return said(agent, result.stdout)


def search(home: Path, repo: Path, *args: str, **environ: str) -> subprocess.CompletedProcess[str]:
    """`hivelore search ARGS` as a user runs it, with the hook server on unless `environ` says otherwise."""
    env = {**hook_env(home, hook_server="on"), **environ}
    command = [sys.executable, "-m", "hivelore", "search", *args]
    return subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=60)


def searches_answered(home: Path) -> int:
    """How many searches the hook server of `home` answered (by meaning)."""
    found = re.search(r", (\d+) search(?:es)? answered", server_state(str(home), {}))
    assert found, server_state(str(home), {})
    return int(found.group(1))


def problems(agent: str, event: str, stdout: bytes) -> list[str]:
    """What is wrong with a hook's stdout for this agent and wire event ([] when it is fine)."""
    if not stdout:
        return []
    try:
        out = stdout.decode("utf-8")
    except UnicodeDecodeError:
        return ["stdout is not UTF-8"]
    if kind_of(agent, event) == "other":
        return [f"printed {out[:100]!r} for an event hivelore does not hook"]
    if agent not in JSON_AGENTS:
        return [] if out.strip() and not out.lstrip().startswith("{") else [f"not plain text: {out[:100]!r}"]
    if not out.endswith("\n") or out.count("\n") != 1:
        return [f"not a single line: {out[:100]!r}"]
    try:
        body = json.loads(out)
    except ValueError:
        return [f"not JSON: {out[:100]!r}"]
    if not isinstance(body, dict):
        return [f"not a JSON object: {out[:100]!r}"]
    found = []
    if "decision" in body or body.get("continue", True) is not True or body.get("permission", "allow") != "allow":
        found.append(f"blocks or denies: {body}")
    if "hookSpecificOutput" in body:
        specific = body["hookSpecificOutput"]
        if not isinstance(specific, dict) or specific.get("hookEventName") != event:
            found.append(f"hookSpecificOutput is not for {event}: {specific}")
        elif not isinstance(specific.get("additionalContext"), str):
            found.append(f"additionalContext is not a string: {specific}")
    if "systemMessage" in body and not isinstance(body["systemMessage"], str):
        found.append(f"systemMessage is not a string: {body}")
    if agent == "cursor" and not set(body) <= CURSOR_FIELDS:
        found.append(f"fields Cursor does not read: {sorted(set(body) - CURSOR_FIELDS)}")
    return found


def said(agent: str, stdout: bytes) -> str:
    """The text the agent takes from a well-formed answer ("" for none)."""
    out = stdout.decode("utf-8")
    if agent not in JSON_AGENTS or not out:
        return out.rstrip("\n")
    body = json.loads(out)
    specific = body.get("hookSpecificOutput", {})
    texts = [specific.get("additionalContext"), body.get("systemMessage")]
    texts += [body.get(field) for field in ("additional_context", "user_message", "agent_message")]
    return next((text for text in texts if isinstance(text, str)), "")


def log_lines(home: Path) -> list[str]:
    path = home / "logs" / "hooks.log"
    return path.read_text().splitlines() if path.exists() else []


def example(agent: str, event: str, name: str) -> dict:
    """A fixture example's payload (a copy, so a test may change it)."""
    doc = json.loads((PAYLOADS / FOLDERS[agent] / f"{event}.json").read_text())
    return copy.deepcopy(next(e["payload"] for e in doc["examples"] if e["name"] == name))


def aimed(payload: object, repo: Path, **fields: Any) -> object:
    """The payload pointed at the temporary repo wherever it names a folder, with `fields` set on top."""
    if not isinstance(payload, dict):
        return payload
    payload = {**copy.deepcopy(payload), **fields}
    if "cwd" in payload:
        payload["cwd"] = str(repo)
    if "workspace_roots" in payload:
        payload["workspace_roots"] = [str(repo)]
    if isinstance(payload.get("hook_events"), list):  # Kiro's deferred postToolUse lists calls with their own cwd
        payload["hook_events"] = [aimed(call, repo) for call in payload["hook_events"]]
    return payload


def fixture_payloads(agent: str) -> list[tuple[str, str, object]]:
    """(label, wire event, payload) of every example and every raw capture for this agent's folder."""
    folder = PAYLOADS / FOLDERS[agent]
    cases = []
    for path in sorted(folder.glob("*.json")):
        doc = json.loads(path.read_text())
        if path.name == "payloads.json":  # Kiro's raw captures: {name: payload}, plus "_" notes
            cases += [(f"{path.name}:{k}", p["hook_event_name"], p) for k, p in doc.items() if not k.startswith("_")]
            continue
        for example_ in doc["examples"]:
            cases.append((f"{path.name}#{example_['name']}", doc["wire_event_name"], example_["payload"]))
    for path in sorted(folder.glob("*.ndjson")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                payload = json.loads(line)["_payload"]
                cases.append((f"{path.name}:{number}", payload["hook_event_name"], payload))
    return cases


def session_start(agent: str, repo: Path, session: str, source: str = "startup") -> tuple[str, dict]:
    named = {"claude": "startup with model", "codex": "source=startup", "gemini": "source=startup"}
    return "SessionStart", aimed(example(agent, "SessionStart", named[agent]), repo, session_id=session, source=source)


def failing_tests(agent: str, repo: Path, session: str, command: str = "pnpm test") -> tuple[str, dict]:
    """A shell call of `command` that failed with ERROR, as each agent reports it.

    Claude sends PostToolUseFailure with the error text; Codex sends PostToolUse with no exit code, only the
    formatted output ("Exit code: 1 …"); Gemini sends AfterTool with the exit code at the end of llmContent.
    """
    if agent == "claude":
        payload = example("claude", "PostToolUseFailure", "Bash non-zero exit")
        payload["tool_input"]["command"] = command
        payload["error"] = f"Exit code 1\n{ERROR}"
        return "PostToolUseFailure", aimed(payload, repo, session_id=session)
    if agent == "codex":
        payload = example("codex", "PostToolUse", "Bash (tool_response is a plain string)")
        payload["tool_input"]["command"] = command
        payload["tool_response"] = f"Exit code: 1\nWall time: 1.3 seconds\nOutput:\n{ERROR}\n"
        return "PostToolUse", aimed(payload, repo, session_id=session)
    payload = example("gemini", "AfterTool", "run_shell_command")
    payload["tool_input"]["command"] = command
    payload["tool_response"] = {
        "llmContent": f"Command: {command}\nStderr: {ERROR}\nExit Code: 1",
        "returnDisplay": ERROR,
    }
    return "AfterTool", aimed(payload, repo, session_id=session)


def claude_prompt(repo: Path, session: str, prompt: str) -> dict:
    return aimed(example("claude", "UserPromptSubmit", "plain prompt"), repo, session_id=session, prompt=prompt)


STARTUP = json.dumps({"session_id": "bad-1", "hook_event_name": "SessionStart", "source": "startup"}).encode()
BIG = json.dumps({"session_id": "bad-1", "tool_name": "Bash", "tool_response": "x" * (20 * 1024 * 1024)}).encode()
BAD_INPUT = {
    # id: (arguments after `hook`, stdin, what hooks.log says: a fragment of its one line, or None for no line)
    "empty stdin": (["--agent", "claude", "--event", "SessionStart"], b"", None),
    "garbage": (["--agent", "claude", "--event", "SessionStart"], b"garbage", "payload is not JSON"),
    "a JSON array": (["--agent", "claude", "--event", "UserPromptSubmit"], b'["why", "5432"]', "not an object"),
    "nested past the parser's depth": (["--agent", "codex", "--event", "SessionStart"], b"[" * 100_000, "not JSON"),
    "20 MB": (["--agent", "claude", "--event", "PostToolUse"], BIG, "payload over 16,777,216 bytes"),
    "invalid UTF-8": (["--agent", "gemini", "--event", "BeforeAgent"], b'{"prompt": "\xff\xfe 5432"}', "not JSON"),
    "agent vim": (["--agent", "vim", "--event", "SessionStart"], STARTUP, "--agent must be one of"),
    "no --event": (["--agent", "claude"], STARTUP, "--event is missing"),
    "unknown event": (["--agent", "claude", "--event", "BeforeEverything"], STARTUP, None),
}


# --- an MCP client of the real server -------------------------------------------------------------------------------

SESSION_TIMEOUT = 90  # seconds for a whole story; a hung server fails the test instead of the suite


@asynccontextmanager
async def mcp_session(home: Path, cwd: Path, stderr_log: Path) -> AsyncIterator[ClientSession]:
    """An initialized client session with `python -m hivelore mcp` running in `cwd`.

    The SDK merges `env` over a minimal default environment (PATH, HOME, ...), so HIVELORE_HOME is
    passed explicitly. The server's stderr goes to `stderr_log`, whose tail is printed on the way out
    (pytest shows it when a test fails).
    """
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hivelore", "mcp"],
        env={"HIVELORE_HOME": str(home)},
        cwd=cwd,
    )
    try:
        with stderr_log.open("w") as errlog, anyio.fail_after(SESSION_TIMEOUT):
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                yield session
    except BaseExceptionGroup as group:
        # The SDK's task groups wrap a failed assertion of the test body; show it as pytest would.
        raise _sole_exception(group) from None
    finally:
        if stderr_log.exists():
            tail = stderr_log.read_text(errors="replace").splitlines()[-60:]
            if tail:
                print("--- server stderr (tail) ---", *tail, sep="\n")


def _sole_exception(group: BaseExceptionGroup) -> BaseException:
    """The one exception inside nested single-member groups, or the group itself."""
    while isinstance(group, BaseExceptionGroup) and len(group.exceptions) == 1:
        group = group.exceptions[0]
    return group


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; return its structuredContent.

    `call_tool` itself checks structuredContent against the tool's outputSchema.
    """
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, f"{tool}({arguments}) failed: {text_of(result)}"
    assert result.structured_content is not None, f"{tool} returned no structuredContent"
    return result.structured_content


async def call_error(session: ClientSession, tool: str, **arguments: Any) -> str:
    """Call a tool that must fail; return the error text (the tool result's only text content)."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error, f"{tool}({arguments}) should have failed but returned {result.structured_content}"
    return text_of(result)


def text_of(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)
