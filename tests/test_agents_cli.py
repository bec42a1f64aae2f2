"""`hivelore install`, `uninstall` and `doctor` end to end: the real commands as subprocesses, in a
temporary git repository, with a fake user home (HOME) and a temporary HIVELORE_HOME.

The library's merge rules are unit-tested in test_install.py; these tests pin what a user sees:
which files appear, what the command prints and asks, and that nothing else is touched.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import select
import shlex
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import NamedTuple

import pytest
import tomlkit
from harness import make_repo

from hivelore.hooks.catalog import events_for

SKILLS = ("hivelore-memory", "hivelore-setup", "hivelore-groom")
MCP_FILE = {
    "claude": ".mcp.json",
    "codex": ".codex/config.toml",
    "kiro": ".kiro/settings/mcp.json",
    "gemini": ".gemini/settings.json",
    "cursor": ".cursor/mcp.json",
}
HOOKS_FILE = {
    "claude": ".claude/settings.json",
    "codex": ".codex/hooks.json",
    "kiro": ".kiro/agents/hivelore.json",
    "gemini": ".gemini/settings.json",
    "cursor": ".cursor/hooks.json",
}
SKILLS_DIR = {
    "claude": ".claude/skills",
    "codex": ".agents/skills",
    "kiro": ".kiro/skills",
    "gemini": ".gemini/skills",
    "cursor": ".cursor/skills",
}
GROUPED = {"claude", "codex", "gemini"}  # event -> [{matcher?, hooks: [entry]}]; the others: event -> [entry]
# The reading events (session start, prompt): the only ones `--hooks read-only` wires.
READING = {
    "claude": ["SessionStart", "UserPromptSubmit"],
    "codex": ["SessionStart", "UserPromptSubmit"],
    "kiro": ["agentSpawn", "userPromptSubmit"],
    "gemini": ["SessionStart", "BeforeAgent"],
    "cursor": ["sessionStart", "beforeSubmitPrompt"],
}
QUESTIONS = ("this project or for your user", "Team server token", "Which hooks")


def expected_entry() -> list[str]:
    """What install must wire in: the console script next to this interpreter, or `python -m hivelore`."""
    script = Path(sys.executable).absolute().with_name("hivelore.exe" if os.name == "nt" else "hivelore")
    return [str(script)] if script.is_file() else [str(Path(sys.executable).absolute()), "-m", "hivelore"]


ENTRY = expected_entry()


def expected_hook_entry() -> list[str]:
    """What a hook runs: the `hivelore-hook` launcher installed next to the console script, else `<entry> hook`."""
    launcher = Path(ENTRY[0]).with_name("hivelore-hook")
    return [str(launcher)] if len(ENTRY) == 1 and launcher.is_file() else [*ENTRY, "hook"]


HOOK_ENTRY = expected_hook_entry()


def our_hook(agent: str, event: str, read_only: bool = False) -> str:
    return shlex.join([*HOOK_ENTRY, "--agent", agent, "--event", event, *(["--read-only"] if read_only else [])])


# --- the places a test runs in ------------------------------------------------------------------------------


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake `~`: HOME of every subprocess (and of this process, should anything ask)."""
    path = tmp_path / "user-home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    return path


@pytest.fixture
def env(home: Path, user_home: Path) -> dict[str, str]:
    environment = {**os.environ, "HOME": str(user_home), "HIVELORE_HOME": str(home)}
    environment.pop("HIVELORE_MODE", None)
    return environment


def hivelore(env: dict[str, str], cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """The real command without a terminal: stdin is a pipe, stdout and stderr are captured."""
    return subprocess.run(
        [sys.executable, "-m", "hivelore", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def install(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = hivelore(env, cwd, "install", *args)
    assert done.returncode == 0, done.stderr
    return done


class Answer(NamedTuple):
    question: str  # a fragment of the question: typed once this is on screen
    reply: str
    secret: bool = False  # typed once the terminal stops echoing (or after 5 s, to fail rather than hang)


def in_terminal(env: dict[str, str], cwd: Path, args: list[str], answers: list[Answer]) -> tuple[int, str]:
    """Run the command with a pseudo-terminal as stdin, stdout and stderr (what a user at a shell has) and
    type the answers; (exit status, everything the screen showed). The child gets a session of its own,
    so it can never read from the terminal running the tests."""
    import pty
    import termios

    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hivelore", *args],
        cwd=cwd,
        env=env,
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        start_new_session=True,
    )
    os.close(terminal)
    screen, seen_upto, asked_at, pending = b"", 0, 0.0, list(answers)
    started = last_output = time.monotonic()
    try:
        while True:
            now = time.monotonic()
            if now - started > 60 or (pending and now - last_output > 10):  # stuck on an unexpected question
                waiting = f"waiting for {pending[0].question!r}; " if pending else ""
                pytest.fail(f"no end: {waiting}the screen shows:\n{screen.decode(errors='replace')}")
            if select.select([controller], [], [], 0.05)[0]:
                try:
                    chunk = os.read(controller, 4096)
                except OSError:  # EIO: the command ended and closed the terminal
                    break
                if not chunk:
                    break
                screen, last_output = screen + chunk, time.monotonic()
            if pending and pending[0].question.encode() in screen[seen_upto:]:
                asked_at = asked_at or time.monotonic()
                echoing = termios.tcgetattr(controller)[3] & termios.ECHO
                if not pending[0].secret or not echoing or time.monotonic() - asked_at > 5:
                    os.write(controller, pending.pop(0).reply.encode() + b"\n")
                    seen_upto, asked_at = len(screen), 0.0
        status = proc.wait(timeout=10)
    finally:
        os.close(controller)
        if proc.poll() is None:
            proc.kill()
    return status, screen.decode(errors="replace").replace("\r\n", "\n")


def snapshot(*roots: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under the roots, git's own folder aside."""
    found: dict[str, bytes | None] = {}
    for root in roots:
        for path in sorted(root.rglob("*")) if root.exists() else []:
            if ".git" not in path.relative_to(root).parts:
                found[str(path)] = path.read_bytes() if path.is_file() else None
    return found


# --- reading the agents' files ------------------------------------------------------------------------------


def mcp_servers(path: Path) -> dict:
    if path.suffix == ".toml":
        return tomllib.loads(path.read_text())["mcp_servers"]
    return json.loads(path.read_text())["mcpServers"]


def hook_commands(path: Path, agent: str) -> dict[str, list[str]]:
    """event -> the command of each hook entry in that event, whoever put it there."""
    if not path.exists():
        return {}
    hooks = json.loads(path.read_text()).get("hooks", {})
    if agent in GROUPED:
        return {event: [h["command"] for group in groups for h in group["hooks"]] for event, groups in hooks.items()}
    return {event: [h["command"] for h in entries] for event, entries in hooks.items()}


def file_lines(stdout: str) -> list[str]:
    """The per-file lines of install/uninstall (`<symbol> <action> <path>  <summary>`), not the agents'
    set-up lines nor the closing one."""
    return [line for line in stdout.splitlines() if re.match(r"[-+~=!] (create|update|unchanged|remove|skip) ", line)]


def assert_one_line_error(done: subprocess.CompletedProcess[str], *naming: str) -> None:
    assert done.returncode == 2, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hivelore: "), done.stderr
    assert all(word in lines[0] for word in naming), lines[0]
    assert "Traceback" not in done.stderr


# --- 1. a project install, and the second run -----------------------------------------------------------------


def test_install_all_agents_into_a_project_then_rerun_changes_nothing(
    env: dict[str, str], repo: Path, user_home: Path, home: Path
) -> None:
    done = install(env, repo, "--project", "--agent", "all", "--yes")
    assert done.stderr == ""
    assert Path(ENTRY[0]).is_absolute()
    for agent in ("claude", "codex", "kiro", "gemini", "cursor"):
        server = mcp_servers(repo / MCP_FILE[agent])["hivelore"]
        assert [server["command"], *server["args"]] == [*ENTRY, "mcp"], agent
        assert hook_commands(repo / HOOKS_FILE[agent], agent) == {
            event: [our_hook(agent, event)] for event in events_for(agent, "all")
        }
        for skill in SKILLS:
            assert (repo / SKILLS_DIR[agent] / skill / "SKILL.md").is_file(), (agent, skill)
    assert json.loads((repo / ".mcp.json").read_text())["mcpServers"]["hivelore"]["type"] == "stdio"
    assert json.loads((repo / ".hivelore.json").read_text()) == {"mode": "local"}
    assert snapshot(user_home) == {}, "a project install writes nothing in the user's home"
    assert "HIVELORE_HOME" in mcp_servers(repo / MCP_FILE["codex"])["hivelore"]["env_vars"]
    # The first `hivelore mcp` answers the handshake from these at once (Codex waits 1 s for it).
    answers = home / "mcp-answers.json"
    assert f"prepared the MCP server's handshake answers in {answers}: its first start answers at once" in done.stdout
    assert len(json.loads(answers.read_text())["answers"]) == 5  # each protocol version the SDK speaks, both eras

    before = snapshot(repo, user_home, home)
    again = install(env, repo, "--project", "--agent", "all", "--yes")
    assert f"the MCP server's handshake answers are ready in {answers}" in again.stdout
    lines = file_lines(again.stdout)
    assert len(lines) == len(file_lines(done.stdout))
    assert all(line.startswith("= unchanged ") for line in lines), again.stdout
    assert snapshot(repo, user_home, home) == before


# --- 2. merge, never clobber; uninstall restores ---------------------------------------------------------------

THEIR_MCP = {"mcpServers": {"github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]}}}
THEIR_CLAUDE_SETTINGS = {
    "permissions": {"allow": ["Bash(npm run test:*)"]},
    "model": "opus",
    "hooks": {
        "PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "npx prettier --write ."}]}]
    },
}
THEIR_CODEX_CONFIG = """\
# Codex settings for this repository
model = "o3"  # the fast one

[mcp_servers.docs]
# the documentation server of the team
command = "npx"
args = ["-y", "docs-mcp"]
"""
THEIR_CURSOR_HOOKS = {"version": 1, "hooks": {"afterFileEdit": [{"command": "./hooks/format.sh"}]}}


def test_install_merges_into_the_users_files_and_uninstall_restores_every_byte(
    env: dict[str, str], repo: Path, user_home: Path, home: Path
) -> None:
    theirs = {
        ".mcp.json": json.dumps(THEIR_MCP, indent=2) + "\n",
        ".claude/settings.json": json.dumps(THEIR_CLAUDE_SETTINGS, indent=2) + "\n",
        ".codex/config.toml": THEIR_CODEX_CONFIG,
        ".cursor/hooks.json": json.dumps(THEIR_CURSOR_HOOKS, indent=2) + "\n",
    }
    for name, text in theirs.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    before = snapshot(repo, user_home, home)

    install(env, repo, "--project", "--agent", "claude,codex,cursor", "--yes")

    servers = mcp_servers(repo / ".mcp.json")
    assert servers["github"] == THEIR_MCP["mcpServers"]["github"] and "hivelore" in servers
    settings = json.loads((repo / ".claude/settings.json").read_text())
    assert settings["permissions"] == THEIR_CLAUDE_SETTINGS["permissions"] and settings["model"] == "opus"
    assert hook_commands(repo / ".claude/settings.json", "claude")["PostToolUse"] == [
        "npx prettier --write .",
        our_hook("claude", "PostToolUse"),
    ]
    codex = (repo / ".codex/config.toml").read_text()
    assert codex.startswith(THEIR_CODEX_CONFIG), "every byte of the user's TOML stays, ours is appended"
    assert set(tomllib.loads(codex)["mcp_servers"]) == {"docs", "hivelore"}
    cursor = hook_commands(repo / ".cursor/hooks.json", "cursor")
    assert cursor["afterFileEdit"] == ["./hooks/format.sh"] and cursor["stop"] == [our_hook("cursor", "stop")]
    assert json.loads((repo / ".cursor/hooks.json").read_text())["version"] == 1

    done = hivelore(env, repo, "uninstall", "--project", "--agent", "claude,codex,cursor", "--yes")
    assert done.returncode == 0, done.stderr

    after = snapshot(repo, user_home, home)
    kept = after.pop(str(repo / ".hivelore.json"))
    assert json.loads(kept) == {"mode": "local"}, ".hivelore.json stays: the team's committed setting"
    assert after == before, "the user's files are byte-identical again, everything install created is gone"


def test_uninstall_restores_a_hand_formatted_json_file(env: dict[str, str], repo: Path) -> None:
    docs_example = (
        '{\n  "version": 1,\n  "hooks": {\n    "afterFileEdit": [{ "command": "./hooks/format.sh" }]\n  }\n}\n'
    )
    (repo / ".cursor").mkdir()
    (repo / ".cursor/hooks.json").write_text(docs_example)
    install(env, repo, "--project", "--agent", "cursor", "--hooks", "read-only", "--yes")
    assert hivelore(env, repo, "uninstall", "--project", "--agent", "cursor", "--yes").returncode == 0
    assert (repo / ".cursor/hooks.json").read_text() == docs_example


# --- 3. which hooks -------------------------------------------------------------------------------------------


def test_read_only_hooks_wire_only_session_start_and_prompt_with_read_only_flag(
    env: dict[str, str], repo: Path
) -> None:
    install(env, repo, "--project", "--agent", "all", "--hooks", "read-only", "--yes")
    for agent, reading in READING.items():
        wired = hook_commands(repo / HOOKS_FILE[agent], agent)
        assert wired == {event: [our_hook(agent, event, read_only=True)] for event in reading}
        assert all(commands[0].endswith(" --read-only") for commands in wired.values())
        assert "hivelore" in mcp_servers(repo / MCP_FILE[agent])


def test_hooks_none_wires_the_mcp_server_only(env: dict[str, str], repo: Path) -> None:
    install(env, repo, "--project", "--agent", "all", "--hooks", "none", "--yes")
    for agent in READING:
        assert hook_commands(repo / HOOKS_FILE[agent], agent) == {}, agent
        server = mcp_servers(repo / MCP_FILE[agent])["hivelore"]
        assert [server["command"], *server["args"]] == [*ENTRY, "mcp"]
    assert not (repo / ".claude/settings.json").exists(), "no hooks: no Claude settings file to create"


# --- 4. global ------------------------------------------------------------------------------------------------


def test_global_install_writes_under_home_and_nothing_in_the_repo(
    env: dict[str, str], repo: Path, user_home: Path, home: Path
) -> None:
    in_repo = snapshot(repo)
    done = install(env, repo, "--global", "--agent", "all", "--yes")

    assert snapshot(repo) == in_repo
    assert not (repo / ".hivelore.json").exists()
    assert mcp_servers(user_home / ".claude.json")["hivelore"]["command"] == ENTRY[0]
    assert hook_commands(user_home / ".claude/settings.json", "claude")["SessionStart"] == [
        our_hook("claude", "SessionStart")
    ]
    assert mcp_servers(user_home / ".codex/config.toml")["hivelore"]["command"] == ENTRY[0]
    assert (user_home / ".agents/skills/hivelore-memory/SKILL.md").is_file()
    assert (user_home / ".kiro/agents/hivelore.json").is_file()
    written = [Path(line.split()[2]) for line in file_lines(done.stdout)]
    assert written and all(p.is_relative_to(user_home) or p == home / "installed.json" for p in written)


# --- 5. asking, or not ----------------------------------------------------------------------------------------


def test_without_a_terminal_it_asks_nothing_and_takes_the_defaults(env: dict[str, str], repo: Path) -> None:
    # Answers waiting on stdin would change the outcome if it read them.
    done = hivelore(env, repo, "install", "--agent", "claude", stdin="global\nhl_rw_x\nnone\n")

    assert done.returncode == 0, done.stderr
    assert not any(question in done.stdout + done.stderr for question in QUESTIONS)
    assert (repo / ".mcp.json").is_file(), "in a git repository the default is the project"
    assert hook_commands(repo / ".claude/settings.json", "claude") == {
        event: [our_hook("claude", event)] for event in events_for("claude", "all")
    }


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_in_a_terminal_it_asks_where_token_and_hooks_and_keeps_the_token_nowhere(
    env: dict[str, str], repo: Path, user_home: Path, home: Path
) -> None:
    token = "hl_rw_7f3a9c2e41d8b6a05e"
    status, screen = in_terminal(
        env,
        repo,
        ["install", "--agent", "claude"],
        [Answer(QUESTIONS[0], "project"), Answer(QUESTIONS[1], token, secret=True), Answer(QUESTIONS[2], "read-only")],
    )

    assert status == 0, screen
    positions = [screen.find(question) for question in QUESTIONS]
    assert -1 not in positions and positions == sorted(positions), screen
    assert "memory stays local" in screen
    assert token not in screen, "a secret typed at the prompt is not echoed"
    assert hook_commands(repo / ".claude/settings.json", "claude") == {
        event: [our_hook("claude", event, read_only=True)] for event in READING["claude"]
    }
    assert snapshot(user_home) == {}, "answered 'project': nothing in the home"
    files = snapshot(repo, user_home, home)
    assert files and not [path for path, data in files.items() if data and token.encode() in data]


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_uninstall_in_a_terminal_asks_where_to_remove_from(env: dict[str, str], repo: Path) -> None:
    install(env, repo, "--project", "--agent", "cursor", "--hooks", "none", "--yes")
    status, screen = in_terminal(
        env, repo, ["uninstall", "--agent", "cursor"], [Answer("Remove from this project", "")]
    )

    assert status == 0, screen
    assert "Install" not in screen
    assert not (repo / ".cursor").exists()


# --- 6. a broken file stops everything ------------------------------------------------------------------------


def test_a_malformed_config_stops_install_with_one_line_and_writes_nothing(
    env: dict[str, str], repo: Path, user_home: Path, home: Path
) -> None:
    (repo / ".claude").mkdir()
    (repo / ".claude/settings.json").write_text("{not json")
    before = snapshot(repo, user_home, home)

    done = hivelore(env, repo, "install", "--project", "--agent", "all", "--yes")

    assert_one_line_error(done, str(repo / ".claude/settings.json"), "not valid JSON")
    assert snapshot(repo, user_home, home) == before


# --- 8. refused arguments -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "naming"),
    [
        (["--agent", "vim"], "'vim'"),
        (["--agent", "claude,vim"], "'vim'"),
        (["--agent", ","], "no agent"),
        (["--hooks", "some"], "'some'"),
        (["--project", "--global"], "exclude each other"),
    ],
)
def test_a_bad_argument_is_refused_with_one_line_and_nothing_written(
    env: dict[str, str], repo: Path, user_home: Path, home: Path, args: list[str], naming: str
) -> None:
    before = snapshot(repo, user_home, home)
    done = hivelore(env, repo, "install", *args, "--yes")

    assert_one_line_error(done, naming)
    assert snapshot(repo, user_home, home) == before


def test_an_agent_named_twice_is_wired_once(env: dict[str, str], repo: Path) -> None:
    done = install(env, repo, "--project", "--agent", "cursor,cursor", "--hooks", "none", "--yes")

    assert done.stdout.count(str(repo / ".cursor/mcp.json")) == 1
    assert "wired into cursor (project)" in done.stdout


# --- 7. doctor ------------------------------------------------------------------------------------------------


def doctor_json(env: dict[str, str], repo: Path) -> list[dict]:
    done = hivelore(env, repo, "doctor", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["agents"]


def test_doctor_runs_each_wired_hook_once_and_reports_a_broken_one(env: dict[str, str], repo: Path, home: Path) -> None:
    install(env, repo, "--project", "--agent", "claude,kiro", "--yes")

    report = doctor_json(env, repo)
    assert [(a["agent"], a["where"]) for a in report] == [("claude", "project"), ("kiro", "project")]
    for agent in report:
        assert [h["event"] for h in agent["hooks"]] == list(events_for(agent["agent"], "all"))
        assert all(h["ok"] for h in agent["hooks"]), agent["hooks"]
        assert agent["mcp_runs"] is True and agent["mcp"]["command"] == [*ENTRY, "mcp"]
        assert agent["problem"] is None and len(agent["skills"]) == 3
    assert not list(home.rglob("events.db*")), "the sample payloads ran against a throw-away home"

    plain = hivelore(env, repo, "doctor")
    assert plain.returncode == 0, plain.stderr
    for agent in ("claude", "kiro"):
        assert f"{agent} (project)" in plain.stdout
        for event in events_for(agent, "all"):
            assert f"hook {event}: ok" in plain.stdout
    assert "FAILED" not in plain.stdout

    # By hand: one hook points at a program that is gone; one names the program bare, found on PATH as
    # the agent's shell would; the MCP server too.
    settings_file = repo / ".claude/settings.json"
    settings = json.loads(settings_file.read_text())
    settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"] = (
        "/nonexistent/hivelore hook --agent claude --event PreToolUse"
    )
    bare = [Path(ENTRY[0]).name, *ENTRY[1:]]
    settings["hooks"]["Stop"][0]["hooks"][0]["command"] = shlex.join(
        [*bare, "hook", "--agent", "claude", "--event", "Stop"]
    )
    settings_file.write_text(json.dumps(settings, indent=2) + "\n")
    servers = json.loads((repo / ".mcp.json").read_text())
    servers["mcpServers"]["hivelore"].update(command=bare[0], args=[*bare[1:], "mcp"])
    (repo / ".mcp.json").write_text(json.dumps(servers, indent=2) + "\n")
    on_path = {**env, "PATH": f"{Path(ENTRY[0]).parent}{os.pathsep}{env.get('PATH', '')}"}

    claude = doctor_json(on_path, repo)[0]
    hooks = {h["event"]: h for h in claude["hooks"]}
    assert hooks["PreToolUse"]["ok"] is False
    assert "/nonexistent/hivelore does not exist" in hooks["PreToolUse"]["detail"]
    assert hooks["Stop"]["ok"] is True, hooks["Stop"]
    assert all(h["ok"] for event, h in hooks.items() if event != "PreToolUse")
    assert claude["mcp_runs"] is True, "a bare MCP command on PATH runs"

    # The control: the same hook run by an agent does use the user's store, so the check above can fail.
    subprocess.run(
        shlex.split(our_hook("claude", "SessionStart")),
        input="{}",
        text=True,
        env=env,
        cwd=repo,
        capture_output=True,
        timeout=30,
    )
    assert list(home.glob("events.db*"))


def test_a_file_edited_after_install_keeps_the_edit_when_uninstall_takes_ours_out(
    env: dict[str, str], repo: Path
) -> None:
    hooks = repo / ".cursor/hooks.json"
    hooks.parent.mkdir()
    hooks.write_text('{"version": 1, "hooks": {"stop": [{ "command": "./mine.sh" }]}}\n')
    install(env, repo, "--project", "--agent", "cursor", "--yes")
    ledger = Path(env["HIVELORE_HOME"]) / "installed.json"
    assert ledger.stat().st_mode & 0o777 == 0o600  # it holds a copy of the user's file
    data = json.loads(hooks.read_text())
    data["hooks"]["stop"].append({"command": "./added-later.sh"})
    hooks.write_text(json.dumps(data, indent=2) + "\n")

    assert hivelore(env, repo, "uninstall", "--project", "--agent", "cursor", "--yes").returncode == 0

    left = json.loads(hooks.read_text())
    assert left["hooks"]["stop"] == [{"command": "./mine.sh"}, {"command": "./added-later.sh"}]
    assert "hivelore" not in hooks.read_text()


# --- what each agent still needs: install says it, doctor checks it ------------------------------------------


def agent_env(env: dict[str, str]) -> dict[str, str]:
    """`env` without the agents' own switches, so only the files under the fake home decide."""
    drop = ("GEMINI_", "CODEX_HOME", "IS_SANDBOX")
    return {k: v for k, v in env.items() if not k.startswith(drop)}


def findings(env: dict[str, str], repo: Path, agent: str) -> list[dict]:
    return next(a for a in doctor_json(env, repo) if a["agent"] == agent)["agent_state"]


def test_install_prints_one_set_up_line_per_agent_that_needs_one(env: dict[str, str], repo: Path) -> None:
    done = install(agent_env(env), repo, "--project", "--agent", "codex,gemini,cursor", "--yes")
    facts = [line for line in done.stdout.splitlines() if re.match(r"[a-z]+: ", line)]
    assert [line.split(":")[0] for line in facts] == ["codex", "gemini"]
    assert "--dangerously-bypass-hook-trust" in facts[0] and "SessionEnd is capped at 3 s" in facts[0]
    assert "trustedFolders.json" in facts[1]
    codex_hooks = json.loads((repo / ".codex/hooks.json").read_text())["hooks"]
    assert codex_hooks["SessionEnd"][0]["hooks"][0]["timeout"] == 3


def test_doctor_reads_geminis_trusted_folders(env: dict[str, str], repo: Path, user_home: Path) -> None:
    env = agent_env(env)
    install(env, repo, "--project", "--agent", "gemini", "--yes")
    rules = user_home / ".gemini/trustedFolders.json"

    (untrusted,) = findings(env, repo, "gemini")
    assert untrusted["ok"] is False
    assert f"{repo} is not trusted: gemini ignores its hooks and all MCP servers" in untrusted["text"]
    assert f'add "{repo}": "TRUST_FOLDER" to {rules}' in untrusted["text"]
    assert "is not trusted" in hivelore(env, repo, "doctor").stdout

    rules.parent.mkdir()
    rules.write_text(json.dumps({str(repo): "TRUST_FOLDER"}))
    assert findings(env, repo, "gemini")[0]["ok"] is True
    rules.write_text(json.dumps({str(repo / "README.md"): "TRUST_PARENT"}))  # trusts the rule's folder
    assert findings(env, repo, "gemini")[0]["ok"] is True
    rules.write_text(json.dumps({str(repo.parent): "TRUST_FOLDER", str(repo): "DO_NOT_TRUST"}))  # longest wins
    assert "DO_NOT_TRUST" in findings(env, repo, "gemini")[0]["text"]
    assert findings({**env, "GEMINI_CLI_TRUST_WORKSPACE": "true"}, repo, "gemini")[0]["ok"] is True
    rules.write_text("{ // a comment\n}")
    assert findings(env, repo, "gemini")[0]["ok"] is None  # Gemini strips comments; we say we cannot tell


def codex_identity(event: str, command: str, timeout: int) -> str:
    """The review hash Codex 0.171 keeps for a hook (pinned against the real CLI in test_agent_trust.py)."""
    identity = {
        "event_name": re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower(),
        "hooks": [{"async": False, "command": command, "timeout": timeout, "type": "command"}],
    }
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def test_doctor_says_whether_codex_trusts_the_project_and_reviewed_each_hook(
    env: dict[str, str], repo: Path, user_home: Path
) -> None:
    env = agent_env(env)
    install(env, repo, "--project", "--agent", "codex", "--yes")
    project, review = findings(env, repo, "codex")
    assert project["ok"] is False and f"{repo} is not trusted yet: Codex ignores its .codex/" in project["text"]
    assert review["ok"] is False and review["text"].startswith("codex: 7 of 7 hooks not reviewed")
    assert "--dangerously-bypass-hook-trust" in review["text"]

    # What Codex writes once the user trusted the folder and reviewed the hooks in its TUI.
    hooks_file = repo / ".codex/hooks.json"
    groups = json.loads(hooks_file.read_text())["hooks"]
    state = {
        f"{hooks_file}:{re.sub(r'(?<!^)(?=[A-Z])', '_', event).lower()}:0:0": {
            "trusted_hash": codex_identity(event, entries[0]["hooks"][0]["command"], 3 if event == "SessionEnd" else 10)
        }
        for event, entries in groups.items()
    }
    config = user_home / ".codex/config.toml"
    config.parent.mkdir()
    config.write_text(tomlkit.dumps({"projects": {str(repo): {"trust_level": "trusted"}}, "hooks": {"state": state}}))
    project, review = findings(env, repo, "codex")
    assert project["ok"] is True and review == {"ok": True, "text": "codex: all 7 hooks reviewed"}

    # A re-install that changes a hook (another timeout here) needs a new review of that hook only.
    groups["Stop"][0]["hooks"][0]["timeout"] = 20
    hooks_file.write_text(json.dumps({"hooks": groups}, indent=2) + "\n")
    review = findings(env, repo, "codex")[1]
    assert review["ok"] is False and review["text"].startswith("codex: 1 of 7 hooks changed since reviewed (stop)")


def test_a_clone_of_a_local_path_gets_a_project_scope_and_doctor_says_why(env: dict[str, str], tmp_path: Path) -> None:
    """`git clone /srv/git/widget.git`: the origin is a path, whose last folders are no OWNER/REPO."""
    bare = tmp_path / "srv/git/widget.git"
    make_repo(tmp_path / "seed", origin=None)
    subprocess.run(["git", "clone", "-q", "--bare", str(tmp_path / "seed"), str(bare)], check=True)
    subprocess.run(["git", "clone", "-q", str(bare), str(tmp_path / "work/widget")], check=True)
    clone = tmp_path / "work/widget"

    report = json.loads(hivelore(env, clone, "doctor", "--json").stdout)
    assert report["chain"] == ["project::widget", "global"]
    expected = f"origin {bare} is a local path: no repo scope; memories go to project::widget"
    assert report["chain_remark"] == expected
    assert expected in hivelore(env, clone, "doctor").stdout.replace("\n", "")

    # The failure nudge of a hook names the same scope, and a memory written there is found from the clone.
    payload = {
        "session_id": "s-local",
        "cwd": str(clone),
        "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash",
        "tool_input": {"command": "psql -h localhost widget"},
        "tool_use_id": "toolu_1",
        "error": "Exit code 2\npsql: error: connection to server at localhost, port 5432 failed: Connection refused",
    }
    hook = hivelore(env, clone, "hook", "--agent", "claude", "--event", "PostToolUseFailure", stdin=json.dumps(payload))
    assert "'project::widget'" in hook.stdout, hook.stdout
    wrote = hivelore(env, clone, "write", "project::widget::db-first", "start the db before psql")
    assert wrote.returncode == 0, wrote.stderr
    assert "db-first" in hivelore(env, clone, "list").stdout
