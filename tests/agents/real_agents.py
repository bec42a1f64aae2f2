"""The real agent CLIs, as the end-to-end suite runs them: where they are installed, how each is
pointed at the scripted model (model_server.py) with nothing leaving the machine, and how its
non-interactive mode is started in a temporary HOME, HIVELORE_HOME and repository.

The CLIs are the npm packages pinned in clis.txt, installed by scripts/install-agent-clis into
~/.cache/hivelore-agents/<first 16 hex digits of the pin file's sha256> (HIVELORE_AGENT_CLIS
overrides the folder).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import NoReturn

import pytest
from model_server import Action, Call, ModelServer, Request

PINS = Path(__file__).with_name("clis.txt")
INSTALL_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "install-agent-clis"
RUN_TIMEOUT_S = 240  # one CLI session; a story is two, and a session takes 5-15 s when things work
# Codex's log filter (RUST_LOG, written to stderr by `codex exec`) that keeps only what happens inside its
# `codex.hooks.command` span, one span per hook it runs: see codex_hook_times.
CODEX_HOOK_TRACE = "warn,[codex.hooks.command]=trace"
_CODEX_HOOK_LINE = re.compile(
    r"^(?P<at>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z .*?codex\.hooks\.command\{(?P<span>[^}]*)\}: "
    r"mio::poll: (?P<what>registering|deregistering) event source"
)


def clis_folder() -> Path:
    override = os.environ.get("HIVELORE_AGENT_CLIS")
    if override:
        return Path(override)
    digest = hashlib.sha256(PINS.read_bytes()).hexdigest()[:16]
    return Path.home() / ".cache" / "hivelore-agents" / digest


REQUIRED = "HIVELORE_REQUIRE_AGENT_CLIS"


def missing(why: str) -> NoReturn:
    """Skip the test, saying why; fail it instead when HIVELORE_REQUIRE_AGENT_CLIS=1 (.ci/run sets it),
    so a CI run that lost the agent CLIs goes red rather than green with the agents left out."""
    if os.environ.get(REQUIRED) == "1":
        pytest.fail(f"{why} ({REQUIRED}=1: the real agents must run here; .ci/run takes HIVELORE_SKIP_AGENT_CLIS=1)")
    pytest.skip(why)


def require_clis(binary: Path) -> None:
    """Skip or fail (see missing) unless the pinned CLIs are installed, `binary` among them."""
    why = why_not_installed()
    if why is not None:
        missing(why)
    if not binary.exists():
        missing(f"{binary} is not installed: run scripts/install-agent-clis")


def why_not_installed() -> str | None:
    """None when the pinned CLIs are installed; else why not, for the skip message."""
    folder = clis_folder()
    if (folder / ".complete").exists():
        return None
    failed = folder / ".install-failed"
    if failed.exists():
        return f"the agent CLIs could not be installed: {failed.read_text().strip()}"
    return f"the agent CLIs pinned in {PINS.name} are not installed in {folder}: run {INSTALL_SCRIPT} (needs npm)"


@dataclass
class Workspace:
    """A temporary HOME, HIVELORE_HOME and git repository (origin git@github.com:acme/shop.git)."""

    home: Path
    hivelore_home: Path
    repo: Path

    def base_env(self, developer: str) -> dict[str, str]:
        """The environment every process of the story starts from: not the test runner's (no real API
        key, no real HOME leaks into an agent), only what a shell would have."""
        return {
            "PATH": os.environ["PATH"],
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "HOME": str(self.home),
            "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
            "HIVELORE_HOME": str(self.hivelore_home),
            "HIVELORE_DEVELOPER": developer,
            # As in the rest of the suite (tests/conftest.py): each hook answers in its own process.
            "HIVELORE_HOOK_SERVER": os.environ.get("HIVELORE_HOOK_SERVER", "off"),
        }

    def hivelore(self, developer: str, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        """The real `hivelore` command, as this developer, in the repository."""
        return subprocess.run(
            [sys.executable, "-m", "hivelore", *args], cwd=self.repo, env=self.base_env(developer),
            input=input, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    def claude_hook(self, developer: str, session: str, event: str, payload: dict) -> str:
        """One Claude Code hook event of another developer's agent, as tests/test_team_flow.py sends it."""
        body = {"cwd": str(self.repo), "hook_event_name": event, "session_id": session, **payload}
        done = self.hivelore(developer, "hook", "--agent", "claude", "--event", event, input=json.dumps(body))
        assert done.returncode == 0 and done.stderr == "", done.stderr
        return done.stdout


@dataclass
class Session:
    """One run of an agent CLI: what it printed (each stdout line with the time it arrived) and
    what it asked the model."""

    agent: str
    script: list[Action]
    requests: list[Request]
    outside: list[str]
    returncode: int
    lines: list[tuple[float, str]]
    stderr: str
    seconds: float

    @property
    def turns(self) -> list[Request]:
        """The requests of the agent's own loop, in order (side requests left out)."""
        return [r for r in self.requests if r.main]

    def after(self, action: Action | None) -> Request:
        """The first request the agent sent once the result of the script's `action` was in (None: the
        first request of the session): what the model was shown next."""
        done = 0 if action is None else self.script.index(action) + 1
        for request in self.turns:
            if request.tool_results >= done:
                return request
        what = "a request" if action is None else f"the result of {action}"
        raise AssertionError(f"{self.agent} never sent the model {what}\n{self.describe()}")

    def describe(self) -> str:
        """For an assertion message: how the run ended and what the agent printed."""
        out = "\n".join(line for _, line in self.lines)
        return (
            f"{self.agent} exited {self.returncode} after {self.seconds:.1f} s; "
            f"{len(self.turns)} turns, tools results per turn {[r.tool_results for r in self.turns]}\n"
            f"--- stdout (last 6000 chars)\n{out[-6000:]}\n--- stderr (last 3000 chars)\n{self.stderr[-3000:]}"
        )


@dataclass
class Agent:
    """How one agent CLI is configured, started and driven. `hivelore_name` is what
    `hivelore install --agent` calls it."""

    hivelore_name: str
    binary: str
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return clis_folder() / "node_modules" / ".bin" / self.binary

    def prepare(self, ws: Workspace, model: ModelServer) -> None:
        """The agent's own settings in the temporary HOME (credentials for the scripted model, trust,
        telemetry and update checks off)."""

    def command(self, ws: Workspace, prompt: str) -> list[str]:
        raise NotImplementedError

    def environment(self, ws: Workspace, model: ModelServer) -> dict[str, str]:
        return {
            **ws.base_env("dev-b"),
            # Anything that goes for the network beyond 127.0.0.1 goes to the scripted model, which
            # refuses it and logs it (ModelServer.outside).
            "HTTPS_PROXY": model.url, "https_proxy": model.url, "HTTP_PROXY": model.url, "http_proxy": model.url,
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
            **self.extra_env,
        }  # fmt: skip

    def shell(self, command: str) -> list[Call]:
        raise NotImplementedError

    def write_memory(self, arguments: dict) -> list[Call]:
        """The MCP call memory_write, with whatever the agent needs before it can make it."""
        return [Call("memory_write", arguments)]

    def edit(self, ws: Workspace, path: str, old: str, new: str) -> list[Call]:
        raise NotImplementedError

    def run(self, ws: Workspace, model: ModelServer, prompt: str, script: list[Action]) -> Session:
        """One non-interactive session of the real CLI in the repository, the model playing `script`."""
        model.play(script)
        started = time.monotonic()
        process = subprocess.Popen(
            self.command(ws, prompt), cwd=ws.repo, env=self.environment(ws, model), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
        lines: list[tuple[float, str]] = []
        errors: list[str] = []

        def read_stdout() -> None:
            lines.extend((time.monotonic(), line.rstrip("\n")) for line in process.stdout)

        def read_stderr() -> None:
            errors.append(process.stderr.read())

        readers = [threading.Thread(target=read_stdout), threading.Thread(target=read_stderr)]
        for reader in readers:
            reader.start()
        try:
            process.wait(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # the CLI's own group: its hooks and MCP server too
            process.wait()
        for reader in readers:
            reader.join(timeout=10)
        return Session(
            self.hivelore_name, script, list(model.requests), list(model.outside), process.returncode, lines,
            "".join(errors), time.monotonic() - started,
        )  # fmt: skip


class ClaudeCode(Agent):
    """`claude -p` (Claude Code), via ANTHROPIC_BASE_URL. Permissions are granted per tool with
    --allowedTools, which root may use (--dangerously-skip-permissions needs IS_SANDBOX=1 as root)."""

    def __init__(self) -> None:
        super().__init__("claude", "claude", {
            "ANTHROPIC_API_KEY": "sk-ant-scripted-model",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
        })  # fmt: skip

    def environment(self, ws: Workspace, model: ModelServer) -> dict[str, str]:
        return {**super().environment(ws, model), "ANTHROPIC_BASE_URL": model.url}

    def command(self, ws: Workspace, prompt: str) -> list[str]:
        return [
            str(self.path), "-p", prompt, "--output-format", "stream-json", "--verbose", "--include-hook-events",
            "--allowedTools", "Bash", "Read", "Edit", "ToolSearch", "mcp__hivelore",
        ]  # fmt: skip

    def shell(self, command: str) -> list[Call]:
        return [Call("Bash", {"command": command, "description": "run it"})]

    def write_memory(self, arguments: dict) -> list[Call]:
        # Claude Code defers MCP tools: their schemas reach the model once it asked ToolSearch for them.
        return [Call("ToolSearch", {"query": "select:mcp__hivelore__memory_write"}), Call("memory_write", arguments)]

    def edit(self, ws: Workspace, path: str, old: str, new: str) -> list[Call]:
        # Claude Code's Edit refuses a file the session has not read.
        target = str(ws.repo / path)
        return [
            Call("Read", {"file_path": target}),
            Call("Edit", {"file_path": target, "old_string": old, "new_string": new}),
        ]


def claude_hook_times(session: Session) -> list[tuple[str, float]]:
    """(event, milliseconds) for each hook Claude Code reported on its stream (--include-hook-events):
    from the arrival of its hook_started line to that of its hook_response."""
    started: dict[str, tuple[float, str]] = {}
    times = []
    for arrived, line in session.lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("subtype") == "hook_started":
            started[event["hook_id"]] = (arrived, event["hook_event"])
        elif event.get("subtype") == "hook_response" and event.get("hook_id") in started:
            began, name = started.pop(event["hook_id"])
            times.append((name, (arrived - began) * 1000))
    return times


def bare_python_ms(runs: int = 5) -> float:
    """The median start of a bare `python -c pass` here, now: what a hook's time is measured against."""
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append((time.perf_counter() - began) * 1000)
    return sorted(times)[runs // 2]


def codex_hook_times(log: str) -> list[tuple[str, float]]:
    """(event, milliseconds) for each hook Codex ran, in order, read from its log on stderr when run with
    RUST_LOG=CODEX_HOOK_TRACE. Codex (0.171) reports no hook timing in `codex exec --json`; its trace log
    has, inside the `codex.hooks.command{hook.event_name=…}` span of each hook it runs, the hook's pipes
    (stdin, stdout, stderr) being registered with its poller right after the spawn and deregistered
    once written (stdin) and at end of file (stdout, stderr). A hook's time is from the first
    registration to the last deregistration: the hook process's whole life as Codex sees it, minus
    the fork itself. Timestamps are Codex's own (microseconds)."""
    times: list[tuple[str, float]] = []
    open_spans: dict[str, tuple[datetime, int]] = {}  # span fields → (first registration, pipes still open)
    for line in log.splitlines():
        match = _CODEX_HOOK_LINE.match(line)
        if not match:
            continue
        at = datetime.fromisoformat(match["at"][:26])
        span = match["span"]
        began, pipes = open_spans.get(span, (at, 0))
        pipes += 1 if match["what"] == "registering" else -1
        if pipes > 0:
            open_spans[span] = (began, pipes)
            continue
        open_spans.pop(span, None)
        event = re.search(r'hook\.event_name="([^"]+)"', span)
        times.append((event[1] if event else "?", (at - began).total_seconds() * 1000))
    return times


class Codex(Agent):
    """`codex exec` (Codex CLI), via a model provider in $CODEX_HOME/config.toml with wire_api
    "responses". The project is trusted there (Codex reads a project's .codex/ only then), and
    --dangerously-bypass-hook-trust runs the project's hooks without the review `codex exec` cannot
    do. With `trace_hooks`, Codex logs its hooks' lives to stderr (codex_hook_times reads them)."""

    MODEL = "gpt-5.5"  # a model Codex knows (its bundled catalogue): it then offers the tools it would for real

    def __init__(self, trace_hooks: bool = False) -> None:
        trace = {"RUST_LOG": CODEX_HOOK_TRACE} if trace_hooks else {}
        super().__init__("codex", "codex", {"SCRIPTED_MODEL_KEY": "sk-scripted-model", **trace})

    def environment(self, ws: Workspace, model: ModelServer) -> dict[str, str]:
        return {**super().environment(ws, model), "CODEX_HOME": str(ws.home / ".codex")}

    def prepare(self, ws: Workspace, model: ModelServer) -> None:
        codex_home = ws.home / ".codex"
        codex_home.mkdir(exist_ok=True)
        (codex_home / "config.toml").write_text(
            f'model = "{self.MODEL}"\n'
            'model_provider = "scripted"\n'
            'approval_policy = "never"\n'
            'sandbox_mode = "danger-full-access"\n'
            "check_for_update_on_startup = false\n\n"
            "[analytics]\nenabled = false\n\n"
            # Plugins and apps sync a curated catalogue from github.com and chatgpt.com at start-up.
            "[features]\nplugins = false\nremote_plugin = false\napps = false\n\n"
            "[model_providers.scripted]\n"
            'name = "scripted"\n'
            f'base_url = "{model.url}/v1"\n'
            'wire_api = "responses"\n'
            'env_key = "SCRIPTED_MODEL_KEY"\n'
            "request_max_retries = 0\n"
            "stream_max_retries = 0\n\n"
            f"[projects.{json.dumps(str(ws.repo))}]\n"
            'trust_level = "trusted"\n'
        )

    def command(self, ws: Workspace, prompt: str) -> list[str]:
        return [str(self.path), "exec", "--json", "--dangerously-bypass-hook-trust", prompt]

    def shell(self, command: str) -> list[Call]:
        return [Call("exec_command", {"cmd": command})]

    def write_memory(self, arguments: dict) -> list[Call]:
        # Codex offers MCP tools in a deferred namespace (mcp__hivelore), loaded by its tool_search: the
        # model searches as told ("save it with memory_write"), without a limit, so it gets the 8 tools
        # Codex ranks first and can call memory_write only if it is one of them (test_codex_tool_search.py).
        return [Call("tool_search", {"query": "hivelore memory_write"}), Call("memory_write", arguments)]

    def edit(self, ws: Workspace, path: str, old: str, new: str) -> list[Call]:
        patch = f"*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch\n"
        return [Call("apply_patch", custom=patch)]


class GeminiCli(Agent):
    """`gemini -p` (Gemini CLI), via GOOGLE_GEMINI_BASE_URL with an API key. The repository is a
    trusted folder (~/.gemini/trustedFolders.json): Gemini CLI ignores a project's hooks and MCP
    servers in any other. The model is named, so no routing classifier runs first."""

    MODEL = "gemini-2.5-flash"

    def __init__(self) -> None:
        super().__init__("gemini", "gemini", {"GEMINI_API_KEY": "scripted-model-key"})

    def environment(self, ws: Workspace, model: ModelServer) -> dict[str, str]:
        return {**super().environment(ws, model), "GOOGLE_GEMINI_BASE_URL": model.url}

    def prepare(self, ws: Workspace, model: ModelServer) -> None:
        gemini_home = ws.home / ".gemini"
        gemini_home.mkdir(exist_ok=True)
        (gemini_home / "trustedFolders.json").write_text(json.dumps({str(ws.repo): "TRUST_FOLDER"}))
        settings = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        }
        (gemini_home / "settings.json").write_text(json.dumps(settings))

    def command(self, ws: Workspace, prompt: str) -> list[str]:
        return [
            str(self.path), "-p", prompt, "-m", self.MODEL, "--output-format", "stream-json", "--approval-mode", "yolo",
        ]  # fmt: skip

    def shell(self, command: str) -> list[Call]:
        return [Call("run_shell_command", {"command": command, "description": "run it"})]

    def edit(self, ws: Workspace, path: str, old: str, new: str) -> list[Call]:
        arguments = {"file_path": str(ws.repo / path), "old_string": old, "new_string": new, "instruction": "edit it"}
        return [Call("replace", arguments)]


AGENTS = {agent.hivelore_name: agent for agent in (ClaudeCode(), Codex(), GeminiCli())}
