"""install / uninstall of hivelore into the agents' configuration files, in a fake home and project."""

from __future__ import annotations

import json
import re
import shlex
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest
import tomlkit
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hivelore.agents import install
from hivelore.agents.install import InstallError, Target, apply, plan_install, plan_uninstall, wiring
from hivelore.hooks.catalog import AGENTS, events_for

ENTRY = ("/opt/hive lore/bin/hivelore",)  # a space, so quoting is exercised everywhere
SKILL_NAMES = ("hivelore-memory", "hivelore-setup", "hivelore-groom")
SKILL_FOLDERS = {
    "claude": ".claude/skills",
    "codex": ".agents/skills",
    "kiro": ".kiro/skills",
    "gemini": ".gemini/skills",
    "cursor": ".cursor/skills",
}


@pytest.fixture(autouse=True)
def fake_home_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Belt and braces: even code that asked the environment for a home would land in tmp_path."""
    monkeypatch.setenv("HOME", str(tmp_path / "env-home"))


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def target(home: Path, root: Path, where: str = "project", agents=AGENTS, hooks: str = "all", entry=ENTRY) -> Target:
    return Target(where, root if where == "project" else None, home, tuple(agents), hooks, tuple(entry))


def snapshot(*roots: Path) -> dict[str, bytes | None]:
    """Every file (bytes) and folder (None) under the roots, except hivelore's own home."""
    found: dict[str, bytes | None] = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if ".hivelore" in path.relative_to(root).parts[:1]:
                continue
            found[str(path)] = path.read_bytes() if path.is_file() else None
    return found


def base_of(t: Target) -> Path:
    return t.project_root if t.where == "project" else t.home


def mcp_file(t: Target, agent: str) -> Path:
    base = base_of(t)
    return {
        "claude": base / ".mcp.json" if t.where == "project" else t.home / ".claude.json",
        "codex": base / ".codex/config.toml",
        "kiro": base / ".kiro/settings/mcp.json",
        "gemini": base / ".gemini/settings.json",
        "cursor": base / ".cursor/mcp.json",
    }[agent]


HOOK_FILES = {
    "claude": ".claude/settings.json",
    "codex": ".codex/hooks.json",
    "kiro": ".kiro/agents/hivelore.json",
    "gemini": ".gemini/settings.json",
    "cursor": ".cursor/hooks.json",
}


def hooks_file(t: Target, agent: str) -> Path:
    return base_of(t) / HOOK_FILES[agent]


def read_json(path: Path) -> dict:
    return json.loads(path.read_text())


def commands(t: Target, agent: str) -> dict[str, list[str]]:
    """wire event -> our hook commands in the agent's hooks file, read straight from the JSON."""
    found: dict[str, list[str]] = {}
    for event, items in read_json(hooks_file(t, agent)).get("hooks", {}).items():
        entries = [h for g in items for h in g["hooks"]] if agent in ("claude", "codex", "gemini") else items
        ours = [e["command"] for e in entries if install.is_hook_command(e["command"])]
        if ours:
            found[event] = ours
    return found


def mcp_entry(t: Target, agent: str) -> dict:
    path = mcp_file(t, agent)
    if agent == "codex":
        return tomlkit.parse(path.read_text())["mcp_servers"]["hivelore"].unwrap()
    return read_json(path)["mcpServers"]["hivelore"]


# --- a fresh install -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["project", "global"])
@pytest.mark.parametrize("agent", AGENTS)
def test_fresh_install_wires_mcp_hooks_and_skills(user_home: Path, project: Path, agent: str, where: str) -> None:
    t = target(user_home, project, where, agents=[agent])
    changes = apply(plan_install(t))

    assert {c.action for c in changes} == {"create"}
    server = mcp_entry(t, agent)
    assert (server["command"], server["args"]) == (ENTRY[0], ["mcp"])
    expected = {e: [install.hook_command(ENTRY, agent, e, False)] for e in events_for(agent, "all")}
    assert commands(t, agent) == expected
    for event, (command,) in expected.items():
        assert shlex.split(command) == [*ENTRY, "hook", "--agent", agent, "--event", event]
    for name in SKILL_NAMES:
        skill = base_of(t) / SKILL_FOLDERS[agent] / name / "SKILL.md"
        assert skill.read_bytes() == (install.SKILLS_SOURCE / name / "SKILL.md").read_bytes()
    assert (project / ".hivelore.json").exists() == (where == "project")


@pytest.mark.parametrize("where", ["project", "global"])
def test_reinstall_changes_nothing(user_home: Path, project: Path, where: str) -> None:
    t = target(user_home, project, where)
    apply(plan_install(t))
    before = snapshot(user_home, project)

    changes = apply(plan_install(t))

    assert {c.action for c in changes} == {"unchanged"}
    assert snapshot(user_home, project) == before


@pytest.mark.parametrize("where", ["project", "global"])
def test_uninstall_of_a_fresh_install_leaves_nothing(user_home: Path, project: Path, where: str) -> None:
    before = snapshot(user_home, project)
    t = target(user_home, project, where)
    apply(plan_install(t))

    changes = apply(plan_uninstall(t))

    assert {c.action for c in changes} == {"remove"}
    kept = {str(project / ".hivelore.json")} if where == "project" else set()
    assert set(snapshot(user_home, project)) - set(before) == kept
    assert not (user_home / ".hivelore" / "installed.json").exists()
    assert apply(plan_uninstall(t)) == []


def test_agent_formats_follow_each_agents_documentation(user_home: Path, project: Path) -> None:
    t = target(user_home, project)
    apply(plan_install(t))

    claude = read_json(project / ".claude/settings.json")["hooks"]["SessionStart"][0]["hooks"][0]
    assert claude["type"] == "command" and claude["timeout"] == 10  # seconds
    assert read_json(project / ".mcp.json")["mcpServers"]["hivelore"]["type"] == "stdio"
    codex = read_json(project / ".codex/hooks.json")["hooks"]
    assert codex["Stop"][0]["hooks"][0]["timeout"] == 10
    assert codex["SessionEnd"][0]["hooks"][0]["timeout"] == 3  # Codex clamps SessionEnd to 3 s
    gemini = read_json(project / ".gemini/settings.json")["hooks"]["BeforeTool"][0]["hooks"][0]
    assert gemini["timeout"] == 10_000 and gemini["name"] == "hivelore"  # milliseconds
    cursor = read_json(project / ".cursor/hooks.json")
    assert cursor["version"] == 1 and cursor["hooks"]["stop"][0]["timeout"] == 10
    kiro = read_json(project / ".kiro/agents/hivelore.json")
    assert kiro["name"] == "hivelore" and kiro["tools"] == ["*"] and kiro["includeMcpJson"] is True
    assert kiro["hooks"]["agentSpawn"][0]["timeout_ms"] == 10_000
    assert read_json(project / ".hivelore.json") == {"mode": "local"}


def test_global_claude_server_goes_to_claude_json(user_home: Path, project: Path) -> None:
    t = target(user_home, project, "global", agents=["claude"])
    apply(plan_install(t))
    assert "hivelore" in read_json(user_home / ".claude.json")["mcpServers"]
    assert (user_home / ".claude/settings.json").exists() and not (project / ".mcp.json").exists()


def test_global_codex_files_go_to_codex_home_when_it_is_set(user_home: Path, project: Path, tmp_path: Path) -> None:
    """Codex reads its global config from $CODEX_HOME (default ~/.codex); install and uninstall follow it."""
    codex_home = tmp_path / "codex-home"
    t = Target("global", None, user_home, ("codex",), "all", ENTRY, codex_home=codex_home)
    apply(plan_install(t))
    assert "hivelore" in tomllib.loads((codex_home / "config.toml").read_text())["mcp_servers"]
    assert "SessionStart" in read_json(codex_home / "hooks.json")["hooks"]
    assert not (user_home / ".codex").exists()

    apply(plan_uninstall(t))
    assert not (codex_home / "config.toml").exists() and not (codex_home / "hooks.json").exists()


def test_codex_passes_the_hivelore_environment_to_the_mcp_server(user_home: Path, project: Path) -> None:
    """Codex gives an MCP server only HOME, PATH and a few more of its variables, plus those `env_vars`
    names: without HIVELORE_HOME there, lessons written over MCP would land in ~/.hivelore."""
    t = target(user_home, project, agents=["codex"])
    apply(plan_install(t))
    assert mcp_entry(t, "codex")["env_vars"] == list(install.MCP_ENVIRONMENT)
    assert "HIVELORE_HOME" in install.MCP_ENVIRONMENT
    assert "env" not in mcp_entry(t, "codex")  # names only: no value of the user's is copied into the file


OLDER_CODEX_ENTRY = f"""model = "gpt-5"

[mcp_servers.hivelore]
command = "{ENTRY[0]}"
args = ["mcp"]
startup_timeout_sec = 20  # the user's own setting
"""


@pytest.mark.parametrize(
    ("their_names", "expected"),
    [
        ("", list(install.MCP_ENVIRONMENT)),
        ('env_vars = ["MY_PROXY", "HIVELORE_HOME"]\n', ["MY_PROXY", "HIVELORE_HOME", *install.MCP_ENVIRONMENT[1:]]),
        ('env_vars = [{ name = "MY_PROXY", source = "local" }]\n', [{"name": "MY_PROXY", "source": "local"},
                                                                      *install.MCP_ENVIRONMENT]),
    ],
)  # fmt: skip
def test_an_older_codex_entry_is_upgraded_in_place_keeping_the_users_settings(
    user_home: Path, project: Path, their_names: str, expected: list
) -> None:
    (project / ".codex").mkdir()
    (project / ".codex/config.toml").write_text(OLDER_CODEX_ENTRY + their_names)
    t = target(user_home, project, agents=["codex"])

    changes = {c.path.name: c for c in apply(plan_install(t))}

    assert (changes["config.toml"].action, changes["config.toml"].summary) == (
        "update",
        "updated MCP server 'hivelore'",
    )
    server = mcp_entry(t, "codex")
    assert server["env_vars"] == expected
    assert server["startup_timeout_sec"] == 20
    assert "# the user's own setting" in (project / ".codex/config.toml").read_text()
    assert {c.path.name: c.action for c in apply(plan_install(t))}["config.toml"] == "unchanged"

    apply(plan_uninstall(t))
    assert (project / ".codex/config.toml").read_text() == OLDER_CODEX_ENTRY + their_names  # as the user had it


def test_a_codex_entry_an_older_install_wrote_is_upgraded_and_uninstalled_whole(user_home: Path, project: Path) -> None:
    t = target(user_home, project, agents=["codex"])
    apply(plan_install(t))
    config = project / ".codex/config.toml"
    config.write_text(re.sub(r"env_vars = .*\n", "", config.read_text()))  # as an install before env_vars wrote it

    assert {c.path.name: c.action for c in apply(plan_install(t))}["config.toml"] == "update"
    assert mcp_entry(t, "codex")["env_vars"] == list(install.MCP_ENVIRONMENT)
    apply(plan_uninstall(t))
    assert not (project / ".codex").exists()


# Read by the hook path only (`hivelore hook` and its server), never by `hivelore mcp`.
HOOK_ONLY_VARIABLES = {"HIVELORE_HOOK_SERVER", "HIVELORE_HOOK_SERVER_IDLE", "HIVELORE_HOOK_MODEL", "HIVELORE_CAPTURE"}
SERVER_ONLY_VARIABLES = {"HIVELORE_DATABASE_URL"}  # read by `hivelore serve`, never by an agent's process
READ_FROM_ENVIRONMENT = re.compile(r"""(?:environ|env)(?:\.get\(|\[)\s*["'](HIVELORE_[A-Z_]+)["']""")


def test_every_hivelore_variable_the_server_reads_reaches_it_through_codex() -> None:
    """A new HIVELORE_* setting read anywhere in hivelore must be passed to Codex's MCP server too, or
    named here as read by hooks alone."""
    source = Path(install.__file__).parents[1]  # the whole package
    read = {m for path in source.rglob("*.py") for m in READ_FROM_ENVIRONMENT.findall(path.read_text())}
    assert {"HIVELORE_HOME", "HIVELORE_MODE", "HIVELORE_HOOK_SERVER"} <= read  # the scan finds what it must
    assert read - HOOK_ONLY_VARIABLES - SERVER_ONLY_VARIABLES == set(install.MCP_ENVIRONMENT)


def test_every_hivelore_variable_any_agent_process_reads_gets_through_gemini() -> None:
    """Gemini CLI under CI passes its hooks and MCP server only the names its allow-list holds: every
    variable either of them reads must be there (tests/agents/test_gemini_under_ci.py runs the CLI)."""
    source = Path(install.__file__).parents[1]
    read = {m for path in source.rglob("*.py") for m in READ_FROM_ENVIRONMENT.findall(path.read_text())}
    assert read - SERVER_ONLY_VARIABLES == set(install.GEMINI_ENVIRONMENT)


def test_gemini_allow_list_keeps_the_users_names_and_uninstall_takes_out_only_ours(
    user_home: Path, project: Path
) -> None:
    (project / ".gemini").mkdir()
    theirs = '{\n  "security": {"environmentVariableRedaction": {"allowed": ["MY_PROXY", "HIVELORE_HOME"]}}\n}\n'
    (project / ".gemini/settings.json").write_text(theirs)
    t = target(user_home, project, agents=["gemini"])

    changes = {c.path.name: c for c in apply(plan_install(t))}

    allowed = read_json(project / ".gemini/settings.json")["security"]["environmentVariableRedaction"]["allowed"]
    assert allowed == ["MY_PROXY", "HIVELORE_HOME", *install.GEMINI_ENVIRONMENT[1:]]
    assert "allowed HIVELORE_MODE," in changes["settings.json"].summary
    assert "env" not in mcp_entry(t, "gemini")  # names only: no value of the user's is copied into the file
    assert {c.path.name: c.action for c in apply(plan_install(t))}["settings.json"] == "unchanged"
    (project / ".gemini/settings.json").write_text((project / ".gemini/settings.json").read_text() + "\n")  # edited
    apply(plan_uninstall(t))
    kept = read_json(project / ".gemini/settings.json")
    assert kept == {"security": {"environmentVariableRedaction": {"allowed": ["MY_PROXY"]}}}


def test_a_gemini_allow_list_install_made_goes_with_uninstall(user_home: Path, project: Path) -> None:
    (project / ".gemini").mkdir()
    (project / ".gemini/settings.json").write_text('{"security": {"auth": {"selectedType": "gemini-api-key"}}}')
    t = target(user_home, project, agents=["gemini"])
    apply(plan_install(t))
    settings_file = project / ".gemini/settings.json"
    settings_file.write_text(settings_file.read_text().replace('"gemini-api-key"', '"oauth-personal"'))  # edited

    apply(plan_uninstall(t))

    assert read_json(settings_file) == {"security": {"auth": {"selectedType": "oauth-personal"}}}


def test_the_hook_launcher_next_to_the_entry_point_is_wired(user_home: Path, project: Path, tmp_path: Path) -> None:
    """`hivelore-hook` beside the `hivelore` script runs the hooks (it skips pip's wrapper); else `hivelore hook`."""
    bin_dir = tmp_path / "venv-bin"
    bin_dir.mkdir()
    (bin_dir / "hivelore").write_text("#!/bin/sh\n")
    entry = (str(bin_dir / "hivelore"),)
    plain = install.hook_command(entry, "claude", "Stop", False)
    assert plain == f"{bin_dir}/hivelore hook --agent claude --event Stop"
    (bin_dir / "hivelore-hook").write_text("#!/bin/sh\n")
    assert install.hook_command(entry, "claude", "Stop", True) == (
        f"{bin_dir}/hivelore-hook --agent claude --event Stop --read-only"
    )


# --- merging into files the user already has ---------------------------------------------------------------------

USER_HOOK = {"type": "command", "command": "~/bin/audit.sh", "timeout": 5}
OTHER_SERVER = {"command": "npx", "args": ["-y", "@acme/db-mcp"], "env": {"DB": "dev"}}
CODEX_TOML = """# my Codex settings: keep this comment
model = "gpt-5"  # the default model

[mcp_servers.db]
command = "npx"   # spacing kept too
args = ["-y", "@acme/db-mcp"]

[profiles.fast]
model = "o4-mini"
"""


def seed(base: Path) -> dict[Path, object]:
    """Pre-existing files with other servers and other hooks, in assorted formatting."""
    files: dict[Path, object] = {
        base / ".mcp.json": {"mcpServers": {"db": OTHER_SERVER}},
        base / ".claude/settings.json": {
            "permissions": {"allow": ["Bash(ls:*)"]},
            "hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [USER_HOOK]}],
                "SessionStart": [{"hooks": [USER_HOOK]}],
            },
        },
        base / ".codex/hooks.json": {"hooks": {"Stop": [{"hooks": [USER_HOOK]}]}},
        base / ".kiro/settings/mcp.json": {"mcpServers": {"db": OTHER_SERVER}},
        base / ".kiro/agents/dev.json": {"name": "dev", "hooks": {"stop": [{"command": "make lint"}]}},
        base / ".gemini/settings.json": {
            "theme": "GitHub",
            "mcpServers": {"db": OTHER_SERVER},
            "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [USER_HOOK]}]},
        },
        base / ".cursor/mcp.json": {"mcpServers": {"db": OTHER_SERVER}},
        base / ".cursor/hooks.json": {"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}]}},
    }
    for i, (path, data) in enumerate(files.items()):
        path.parent.mkdir(parents=True, exist_ok=True)
        indent = 4 if i % 2 else 2  # the file's own indent is kept
        path.write_text(json.dumps(data, indent=indent) + "\n")
    (base / ".codex/config.toml").write_text(CODEX_TOML)
    (base / ".hivelore.json").write_text('{"context_budget_chars": 3000}\n')
    return files


@pytest.mark.parametrize("where", ["project", "global"])
def test_install_merges_and_uninstall_restores_every_byte(user_home: Path, project: Path, where: str) -> None:
    t = target(user_home, project, where)
    seeded = seed(base_of(t))
    (user_home / ".claude.json").write_text(json.dumps({"numStartups": 3, "mcpServers": {"db": OTHER_SERVER}}))
    original = snapshot(user_home, project)

    apply(plan_install(t))

    for path, data in seeded.items():  # every key the user had is still there, with its value
        merged = read_json(path)
        for key, value in data.items():
            if key not in ("mcpServers", "hooks"):
                assert merged[key] == value
        assert merged.get("mcpServers", {}).get("db", OTHER_SERVER) == OTHER_SERVER
    settings = read_json(base_of(t) / ".claude/settings.json")["hooks"]
    assert settings["PreToolUse"][0] == {"matcher": "Bash", "hooks": [USER_HOOK]}
    assert settings["SessionStart"][0] == {"hooks": [USER_HOOK]}
    assert read_json(base_of(t) / ".kiro/agents/dev.json") == seeded[base_of(t) / ".kiro/agents/dev.json"]
    toml = (base_of(t) / ".codex/config.toml").read_text()
    assert toml.startswith(CODEX_TOML) and "[mcp_servers.hivelore]" in toml
    assert all(w.mcp_command == (ENTRY[0], "mcp") and w.hook_commands and w.problem is None for w in wiring(t))

    assert {c.action for c in apply(plan_install(t))} == {"unchanged"}
    apply(plan_uninstall(t))

    assert snapshot(user_home, project) == {**original, **_hivelore_json(project, where)}


def _hivelore_json(project: Path, where: str) -> dict[str, bytes]:
    """A project install adds "mode" to .hivelore.json and uninstall keeps it (a committed setting)."""
    if where != "project":
        return {}
    return {str(project / ".hivelore.json"): b'{"context_budget_chars": 3000, "mode": "local"}\n'}


def test_existing_mode_is_kept(user_home: Path, project: Path) -> None:
    (project / ".hivelore.json").write_text('{"mode": "team"}\n')
    apply(plan_install(target(user_home, project, agents=["cursor"])))
    assert (project / ".hivelore.json").read_text() == '{"mode": "team"}\n'


def test_a_file_the_user_had_survives_even_when_empty_again(user_home: Path, project: Path) -> None:
    (project / ".cursor").mkdir()
    (project / ".cursor/mcp.json").write_text("{}")
    (project / ".gemini").mkdir()
    tabbed = '{\n\t"mcpServers": {},\n\t"hooks": {\n\t\t"AfterTool": []\n\t}\n}\n'  # empty containers of the user's
    (project / ".gemini/settings.json").write_text(tabbed)
    original = snapshot(project)
    t = target(user_home, project, agents=["cursor", "gemini"])

    apply(plan_install(t))
    apply(plan_uninstall(t))

    assert snapshot(project) == {**original, str(project / ".hivelore.json"): b'{\n  "mode": "local"\n}\n'}


def test_uninstall_keeps_what_the_user_added_to_a_file_install_created(user_home: Path, project: Path) -> None:
    t = target(user_home, project, agents=["cursor"])
    apply(plan_install(t))
    data = read_json(project / ".cursor/mcp.json")
    data["mcpServers"]["db"] = OTHER_SERVER
    (project / ".cursor/mcp.json").write_text(json.dumps(data, indent=2) + "\n")

    apply(plan_uninstall(t))

    assert read_json(project / ".cursor/mcp.json") == {"mcpServers": {"db": OTHER_SERVER}}
    assert not (project / ".cursor/hooks.json").exists()


# --- hook modes --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_read_only_installs_only_the_reading_events(user_home: Path, project: Path, agent: str) -> None:
    t = target(user_home, project, agents=[agent], hooks="read-only")
    apply(plan_install(t))

    found = commands(t, agent)
    assert set(found) == set(events_for(agent, "read-only")) < set(events_for(agent, "all"))
    assert all(c.endswith(" --read-only") for cs in found.values() for c in cs)


@pytest.mark.parametrize("agent", AGENTS)
def test_hooks_none_installs_only_the_mcp_server(user_home: Path, project: Path, agent: str) -> None:
    t = target(user_home, project, agents=[agent], hooks="none")
    apply(plan_install(t))

    assert mcp_entry(t, agent)["command"] == ENTRY[0]
    hooks = hooks_file(t, agent)
    assert not hooks.exists() or "hooks" not in read_json(hooks)
    assert (base_of(t) / SKILL_FOLDERS[agent] / "hivelore-memory/SKILL.md").exists()


def test_hooks_none_after_all_takes_our_hooks_out_again(user_home: Path, project: Path) -> None:
    apply(plan_install(target(user_home, project, agents=["cursor", "claude"])))

    changes = apply(plan_install(target(user_home, project, agents=["cursor", "claude"], hooks="none")))

    removed = {c.path for c in changes if c.action == "remove"}
    assert removed == {project / ".cursor/hooks.json", project / ".claude/settings.json"}
    assert "hivelore" in read_json(project / ".cursor/mcp.json")["mcpServers"]


def test_reinstall_with_other_hooks_replaces_only_our_entries(user_home: Path, project: Path) -> None:
    seed(project)
    apply(plan_install(target(user_home, project, agents=["claude"])))

    changes = apply(plan_install(target(user_home, project, agents=["claude"], hooks="read-only")))

    settings = next(c for c in changes if c.path == project / ".claude/settings.json")
    assert settings.action == "update" and "removed hooks" in settings.summary
    hooks = read_json(project / ".claude/settings.json")["hooks"]
    assert set(commands(target(user_home, project), "claude")) == {"SessionStart", "UserPromptSubmit"}
    assert hooks["PreToolUse"] == [{"matcher": "Bash", "hooks": [USER_HOOK]}]
    assert hooks["SessionStart"][0] == {"hooks": [USER_HOOK]}


def test_a_moved_installation_is_replaced_in_place(user_home: Path, project: Path) -> None:
    apply(plan_install(target(user_home, project, agents=["cursor"], entry=("/old/venv/bin/hivelore",))))
    moved = target(user_home, project, agents=["cursor"], entry=("/usr/bin/python3", "-m", "hivelore"))

    changes = apply(plan_install(moved))

    assert {c.action for c in changes if c.path.name in ("mcp.json", "hooks.json")} == {"update"}
    expected = {e: [install.hook_command(moved.entry, "cursor", e, False)] for e in events_for("cursor", "all")}
    assert commands(moved, "cursor") == expected
    assert mcp_entry(moved, "cursor")["args"] == ["-m", "hivelore", "mcp"]


def test_a_hook_written_with_another_timeout_is_updated(user_home: Path, project: Path) -> None:
    """Installs before Codex's 3 s SessionEnd limit was known wrote 10 s: a re-install fixes that entry only."""
    t = target(user_home, project, agents=["codex"])
    apply(plan_install(t))
    hooks_file = project / ".codex/hooks.json"
    data = read_json(hooks_file)
    data["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] = 10
    hooks_file.write_text(json.dumps(data, indent=2) + "\n")

    changes = apply(plan_install(t))

    assert next(c for c in changes if c.path == hooks_file).summary == "updated hooks SessionEnd"
    assert read_json(hooks_file)["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] == 3


@pytest.mark.parametrize(
    ("where", "hooks", "expected"),
    [
        (
            "project",
            "all",
            [
                "claude: approve the MCP server once in `claude`; "
                "headless: claude -p PROMPT --dangerously-skip-permissions",
                "codex: trust the project and review the hooks once in `codex` (/hooks); "
                "`codex exec` needs --dangerously-bypass-hook-trust until then; SessionEnd is capped at 3 s",
                "kiro: hooks run in the 'hivelore' agent: kiro-cli chat --agent hivelore",
                "gemini: hooks and MCP run only in a trusted folder: trust it when gemini asks "
                "(or TRUST_FOLDER in ~/.gemini/trustedFolders.json)",
            ],
        ),
        (
            "global",
            "none",
            [
                "claude: headless: claude -p PROMPT --dangerously-skip-permissions",
                "gemini: hooks and MCP run only in a trusted folder: trust it when gemini asks "
                "(or TRUST_FOLDER in ~/.gemini/trustedFolders.json)",
            ],
        ),
    ],
)
def test_setup_facts_say_one_line_per_agent_that_needs_a_step(
    user_home: Path, project: Path, where: str, hooks: str, expected: list[str]
) -> None:
    assert install.setup_facts(target(user_home, project, where, hooks=hooks)) == expected


def test_setup_facts_tell_root_about_is_sandbox(user_home: Path, project: Path) -> None:
    (claude,) = install.setup_facts(target(user_home, project, agents=["claude"]), as_root=True)
    assert claude.endswith("--dangerously-skip-permissions with IS_SANDBOX=1 (as root)")
    assert install.setup_facts(target(user_home, project, agents=["cursor"])) == []


# --- errors: nothing is written anywhere -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("relative", "content", "unreadable"),
    [
        (".cursor/hooks.json", '{"version": 1, "hooks": {', True),
        (".claude/settings.json", "[1, 2]", True),
        (".gemini/settings.json", '{"mcpServers": ["not", "an", "object"]}', True),
        (".claude/settings.json", '{"hooks": {"Stop": {"hooks": []}}}', False),  # uninstall finds nothing of ours
        (".codex/config.toml", 'model = "gpt-5\n', True),
        (".codex/config.toml", "mcp_servers = 3\n", True),
    ],
)
def test_a_broken_file_stops_everything(
    user_home: Path, project: Path, relative: str, content: str, unreadable: bool
) -> None:
    seed(project)
    broken = project / relative
    broken.write_text(content)
    original = snapshot(user_home, project)

    with pytest.raises(InstallError) as error:
        plan_install(target(user_home, project))

    assert str(broken) in str(error.value)
    assert snapshot(user_home, project) == original
    if unreadable:
        with pytest.raises(InstallError, match=re.escape(str(broken))):
            plan_uninstall(target(user_home, project))


def test_apply_refuses_a_plan_made_stale_by_an_edit(user_home: Path, project: Path) -> None:
    seed(project)
    edits = plan_install(target(user_home, project))
    (project / ".mcp.json").write_text("{}\n")
    original = snapshot(user_home, project)

    with pytest.raises(InstallError, match=r"\.mcp\.json changed"):
        apply(edits)

    assert snapshot(user_home, project) == original


def test_a_bad_target_is_refused(user_home: Path, project: Path) -> None:
    with pytest.raises(InstallError, match="unknown agent"):
        target(user_home, project, agents=["vim"])
    with pytest.raises(InstallError, match="hooks must be"):
        target(user_home, project, hooks="some")
    with pytest.raises(InstallError, match="project folder"):
        Target("project", None, user_home, ("claude",), "all", ENTRY)


def test_doctor_wiring_reports_an_unreadable_file_instead_of_failing(user_home: Path, project: Path) -> None:
    t = target(user_home, project, agents=["claude", "cursor"])
    apply(plan_install(t))
    (project / ".cursor/hooks.json").write_text("{oops")

    claude, cursor = wiring(t)

    assert claude.problem is None and len(claude.hook_commands) == len(events_for("claude", "all"))
    assert claude.skills and claude.mcp_file == project / ".mcp.json"
    assert cursor.mcp_command == (ENTRY[0], "mcp") and cursor.problem and ".cursor/hooks.json" in cursor.problem


def test_a_symlinked_settings_file_stays_a_link(user_home: Path, project: Path, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "settings.json").write_text('{\n  "theme": "dark"\n}\n')
    (user_home / ".gemini").mkdir()
    (user_home / ".gemini/settings.json").symlink_to(dotfiles / "settings.json")
    t = target(user_home, project, "global", agents=["gemini"])

    apply(plan_install(t))

    assert (user_home / ".gemini/settings.json").is_symlink()
    assert "hivelore" in read_json(dotfiles / "settings.json")["mcpServers"]
    apply(plan_uninstall(t))
    assert (dotfiles / "settings.json").read_text() == '{\n  "theme": "dark"\n}\n'


def test_the_ledger_lives_in_the_given_hivelore_home(user_home: Path, project: Path, tmp_path: Path) -> None:
    t = Target("project", project, user_home, ("kiro",), "all", ENTRY, hivelore_home=tmp_path / "hl")
    apply(plan_install(t))
    assert (tmp_path / "hl/installed.json").exists() and not (user_home / ".hivelore").exists()
    apply(plan_uninstall(t))
    assert not (project / ".kiro").exists()


# --- the MCP server's prepared answers -------------------------------------------------------------------------


def test_prepare_mcp_keeps_the_whole_handshake_once(tmp_path: Path) -> None:
    """The real `hivelore mcp --prepare`, in its own process; a second install finds the answers ready."""
    from hivelore.mcp.stdio import prepared

    home = tmp_path / "hl"
    done = install.prepare_mcp(install.default_entry(), home)

    assert done.ok, done.line
    assert done.line.startswith("prepared the MCP server's handshake answers in ") and str(home) in done.line
    assert prepared(str(home))
    kept = (home / "mcp-answers.json").stat().st_mtime_ns
    again = install.prepare_mcp(install.default_entry(), home)
    assert again.ok and "are ready in" in again.line
    assert (home / "mcp-answers.json").stat().st_mtime_ns == kept


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ((sys.executable, "-c", "import sys; sys.exit('hivelore: the SDK cannot be imported')"), "cannot be imported"),
        (("/nonexistent/bin/hivelore",), "No such file"),
    ],
)
def test_prepare_mcp_that_cannot_run_is_one_warning(tmp_path: Path, entry: tuple[str, ...], reason: str) -> None:
    done = install.prepare_mcp(entry, tmp_path / "hl")

    assert not done.ok
    assert done.line.startswith("warning: could not prepare the MCP server's handshake answers (")
    assert reason in done.line and done.line.endswith("run `hivelore mcp --prepare`.")
    assert "\n" not in done.line
    assert not (tmp_path / "hl/mcp-answers.json").exists()


def test_the_prepared_answers_go_with_the_last_uninstall(user_home: Path, project: Path, tmp_path: Path) -> None:
    """The answers file install brought stays while anything install recorded in that hivelore home is
    still wired, and goes with the uninstall that takes out the last of it."""
    hl = tmp_path / "hl"
    in_project = Target("project", project, user_home, ("cursor",), "all", ENTRY, hivelore_home=hl)
    in_home = Target("global", None, user_home, ("cursor",), "all", ENTRY, hivelore_home=hl)
    apply(plan_install(in_project))
    apply(plan_install(in_home))
    (hl / "mcp-answers.json").write_text("{}")  # what prepare_mcp writes after install

    apply(plan_uninstall(in_project))
    assert (hl / "mcp-answers.json").exists()
    removed = apply(plan_uninstall(in_home))
    assert not (hl / "mcp-answers.json").exists()
    assert any(c.path == hl / "mcp-answers.json" and c.action == "remove" for c in removed)
    assert not (hl / "installed.json").exists()


def test_prepared_answers_that_were_there_before_install_stay(user_home: Path, project: Path, tmp_path: Path) -> None:
    hl = tmp_path / "hl"
    hl.mkdir()
    (hl / "mcp-answers.json").write_text("{}")  # an earlier `hivelore mcp` kept them
    t = Target("project", project, user_home, ("cursor",), "all", ENTRY, hivelore_home=hl)
    apply(plan_install(t))
    apply(plan_uninstall(t))
    assert (hl / "mcp-answers.json").read_text() == "{}"


# --- skills ----------------------------------------------------------------------------------------------------


def test_skills_have_frontmatter_and_teach_scopes_and_keys() -> None:
    for name in SKILL_NAMES:
        text = (install.SKILLS_SOURCE / name / "SKILL.md").read_text()
        _, front, body = text.split("---\n", 2)
        meta = yaml.safe_load(front)
        assert meta["name"] == name and len(meta["description"]) > 40
    memory = (install.SKILLS_SOURCE / "hivelore-memory/SKILL.md").read_text()
    for needle in ("branch::", "repo::", "project::", "global", "kebab-case", "memory_write", "memory_search"):
        assert needle in memory


def test_an_edited_skill_is_left_alone(user_home: Path, project: Path) -> None:
    t = target(user_home, project, agents=["claude"])
    apply(plan_install(t))
    edited = project / ".claude/skills/hivelore-groom/SKILL.md"
    edited.write_text("my own notes\n")

    assert [c.action for c in plan_install(t) if c.path == edited] == ["skip"]
    changes = apply(plan_uninstall(t))

    assert [c.action for c in changes if c.path == edited] == ["skip"]
    assert edited.read_text() == "my own notes\n"
    assert not (project / ".claude/skills/hivelore-memory").exists()


def test_an_outdated_skill_of_ours_is_updated(user_home: Path, project: Path) -> None:
    t = target(user_home, project, agents=["gemini"])
    apply(plan_install(t))
    skill = project / ".gemini/skills/hivelore-setup/SKILL.md"
    old = b"---\nname: hivelore-setup\ndescription: an older release\n---\n"
    skill.write_bytes(old)
    ledger = user_home / ".hivelore/installed.json"
    data = read_json(ledger)
    data["created"][str(skill)] = install._sha(old)  # as if an older hivelore had written it
    ledger.write_text(json.dumps(data))

    changes = apply(plan_install(t))

    assert [c.action for c in changes if c.path == skill] == ["update"]
    assert skill.read_bytes() == (install.SKILLS_SOURCE / "hivelore-setup/SKILL.md").read_bytes()


# --- commands ------------------------------------------------------------------------------------------------


def test_default_entry_is_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "venv bin"
    bin_dir.mkdir()
    python = bin_dir / "python"
    python.write_text("")
    monkeypatch.setattr(sys, "executable", str(python))
    assert install.default_entry() == (str(python), "-m", "hivelore")
    (bin_dir / "hivelore").write_text("")
    assert install.default_entry() == (str(bin_dir / "hivelore"),)
    assert Path(install.default_entry()[0]).is_absolute()


@pytest.mark.parametrize(
    ("command", "ours"),
    [
        ("'/opt/hive lore/bin/hivelore' hook --agent claude --event Stop", True),
        ("/opt/venv/bin/hivelore-hook --agent claude --event Stop", True),
        ("/opt/venv/bin/hivelore-hook --agent gemini --event AfterTool --read-only", True),
        ("/opt/venv/bin/hivelore-hook --event Stop", False),
        ("/usr/bin/python3 -m hivelore hook --agent kiro --event stop --read-only", True),
        ("C:/tools/hivelore.exe hook --agent cursor --event stop", True),
        ("~/bin/audit.sh", False),
        ("/usr/bin/other hook --agent claude --event Stop", False),
        ("hivelore write global::x 'hook --agent'", False),
        ("echo 'unbalanced", False),
    ],
)
def test_our_hook_commands_are_recognised(command: str, ours: bool) -> None:
    assert install.is_hook_command(command) is ours


# --- property: install then uninstall is the identity on the user's settings ---------------------------------------

json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
user_hooks = st.dictionaries(
    st.sampled_from(["PreToolUse", "Stop", "SessionStart", "Notification"]),
    st.lists(
        st.fixed_dictionaries(
            {"hooks": st.lists(st.fixed_dictionaries({"type": st.just("command"), "command": st.text(max_size=12)}))},
            optional={"matcher": st.text(max_size=5)},
        ),
        max_size=2,
    ),
    max_size=3,
)
settings_files = st.fixed_dictionaries(
    {},
    optional={
        "model": json_values,
        "env": st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=2),
        "hooks": user_hooks,
        "permissions": json_values,
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=settings_files, indent=st.sampled_from([2, 4, "\t"]), newline=st.booleans())
def test_install_then_uninstall_is_the_identity(tmp_path: Path, data: dict, indent: int | str, newline: bool) -> None:
    home = Path(tempfile.mkdtemp(dir=tmp_path))
    root = home / "project"
    (root / ".claude").mkdir(parents=True)
    settings_path = root / ".claude/settings.json"
    text = json.dumps(data, indent=indent, ensure_ascii=False) + ("\n" if newline else "")
    settings_path.write_text(text)
    t = Target("project", root, home, ("claude",), "all", ENTRY)

    apply(plan_install(t))
    apply(plan_uninstall(t))

    assert settings_path.read_text() == text
