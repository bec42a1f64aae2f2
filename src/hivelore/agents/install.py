"""Wire hivelore into the agents' configuration files, and take it out again.

API (the `install`, `uninstall` and `doctor` commands call exactly this)::

    target = Target(where="project", project_root=repo, home=Path.home(), agents=("claude", "codex"),
                    hooks="all", entry=default_entry(), hivelore_home=settings.home)
    edits = plan_install(target)      # or plan_uninstall(target): reads files, writes nothing
    changes = apply(edits)            # one Change(path, action, summary) per planned file
    wired = wiring(target)            # for doctor: per agent, our MCP command, hook commands, skills

`plan_install`/`plan_uninstall` raise `InstallError` (a ValueError whose message is one sentence
naming the file) when a file cannot be read or merged: nothing is written then, anywhere. `apply`
first checks that no planned file changed on disk since it was planned, then writes each file
atomically (temp file in the same folder, fsync, rename; a symlinked file is written through its
link). A file whose content would not change is not written and is reported "unchanged"; an
edited skill is reported "skip". `hook_command` renders one hook command line, `is_hook_command`
recognises ours (doctor can run each command of `Wired.hook_commands` once).

What goes where (`<base>` is the project root for `where="project"`, the home for "global"):

| agent  | MCP server `hivelore`                       | hooks                            | skills           |
|--------|---------------------------------------------|----------------------------------|------------------|
| claude | `.mcp.json` / `~/.claude.json` `mcpServers` | `.claude/settings.json`          | `.claude/skills` |
| codex  | `.codex/config.toml` `[mcp_servers]`        | `.codex/hooks.json`              | `.agents/skills` |
| kiro   | `.kiro/settings/mcp.json` `mcpServers`      | agent `.kiro/agents/hivelore.json` | `.kiro/skills` |
| gemini | `.gemini/settings.json` `mcpServers`        | the same file, `hooks`           | `.gemini/skills` |
| cursor | `.cursor/mcp.json` `mcpServers`             | `.cursor/hooks.json`             | `.cursor/skills` |

Every path is under `<base>` except the global Claude `~/.claude.json`. A project install also
writes `.hivelore.json` with `{"mode": "local"}` (only the key `mode`, only when absent). Commands
are absolute (`default_entry`): the MCP server runs `<entry> mcp`, a hook runs
`<entry> hook --agent A --event E [--read-only]`. JSON files keep their key order, indent, line
ends and final newline; Codex's TOML keeps every byte (tomlkit), our table is appended at its end.

Codex's MCP entry also names the `HIVELORE_*` variables Codex must pass to the server
(`env_vars`, `MCP_ENVIRONMENT`); Gemini's settings name those its hooks and MCP server read in
`security.environmentVariableRedaction.allowed` (`GEMINI_ENVIRONMENT`: under CI it passes no other);
Kiro's `hivelore` agent gets a `prompt` that has the model ask `code_history` before an edit
(`KIRO_PROMPT`: no Kiro hook can tell it then). After the files, the CLI calls `prepare_mcp`, which keeps the MCP
server's handshake answers in `<hivelore home>/mcp-answers.json` so its first start is fast.

Install sets the desired state: re-running it with other `hooks` replaces our hook entries (ours
are recognised by their command: a `hivelore` program followed by `hook --agent`, whatever its
path, so a moved installation is cleaned up too), and never touches any other entry.

Uninstall removes exactly what install added: our MCP entry, our hook entries, the objects and
lists install had to create for them once empty, our skills unless edited since (left, reported
"skip"), and the files and folders install created once they hold nothing else. What install
created is recorded in `<hivelore home>/installed.json` (the ledger), so a file, object or list the
user had before is never deleted, even when it is empty again; without the ledger (say, on a
teammate's machine) uninstall removes our entries and unedited skills only. For a file the user had,
the ledger also keeps its bytes from before install: while the file still holds exactly what install
left there, uninstall puts those bytes back (formatting and all); once someone edited it, uninstall
takes out our entries and keeps the rest. The ledger is written readable by its owner only. `.hivelore.json`
always stays: it is the committable project setting that teammates share, and it holds no secret.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import re
import shlex
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from hivelore import atomicfile
from hivelore.errors import BadInput
from hivelore.hooks.catalog import AGENTS, events_for
from hivelore.mcp.answers import FILENAME as ANSWERS_FILE
from hivelore.records import record, replace

SERVER = "hivelore"
SKILLS = ("hivelore-memory", "hivelore-setup", "hivelore-groom")
SKILLS_SOURCE = Path(__file__).parent / "skills"
HOOK_MODES = ("all", "read-only", "none")
LEDGER = "installed.json"
# Hooks only read the SQLite index and queue anything slow (DESIGN.md); 10 s is generous and keeps a
# wedged hook from stalling the agent for the default minute or more.
HOOK_TIMEOUT_S = 10
# Codex 0.171 cuts any SessionEnd hook's timeout to 3 s ("clamping SessionEnd hook timeout to 3s", a
# warning in `hooks/list`): we write what it honours, so the file says what happens.
CODEX_SESSION_END_TIMEOUT_S = 3
# Codex starts an MCP server with only a fixed few variables of its own environment (HOME, PATH, LANG,
# TERM, TMPDIR …: DEFAULT_ENV_VARS in codex-rs/rmcp-client/src/utils.rs), plus each variable its
# `env_vars` names, when set. These are the ones `hivelore mcp` reads; without HIVELORE_HOME its
# lessons would land in ~/.hivelore. Names only: the values stay in the user's environment.
MCP_ENVIRONMENT = (
    "HIVELORE_HOME",
    "HIVELORE_MODE",
    "HIVELORE_REMOTE_WRITES",
    "HIVELORE_PROFILE",
    "HIVELORE_DEVELOPER",
    "HIVELORE_AGENT",
    "HIVELORE_SESSION",
    "HIVELORE_ENDPOINT",
    "HIVELORE_TOKEN",
)
CODEX_ENV_VARS = "env_vars"
# Kiro CLI shows a hook's stdout to nobody but at agentSpawn and userPromptSubmit; before a tool only exit code 2
# (which blocks the tool) reaches the model (kiro.dev/docs/cli/hooks, "Hook output"). So the pre-edit check cannot
# warn Kiro's model: the agent's prompt has it ask the MCP tool `code_history` instead, before it edits.
KIRO_PROMPT = (
    "Before you edit a file, call the hivelore MCP tool code_history with the files you are about to change: "
    "it says what failed on that code before, what was decided, and which other developers' tasks are "
    "changing it. Take that into account; it is not a rule."
)
# What Gemini CLI must let through to hivelore's hooks and MCP server (see `_gemini`): the MCP server's
# variables and those only the hook path reads.
GEMINI_ENVIRONMENT = (
    *MCP_ENVIRONMENT,
    "HIVELORE_CAPTURE",
    "HIVELORE_HOOK_SERVER",
    "HIVELORE_HOOK_SERVER_IDLE",
    "HIVELORE_HOOK_MODEL",
)


class InstallError(BadInput):
    """A configuration file that cannot be read or merged, or a target that makes no sense."""


@dataclass(frozen=True)
class Target:
    """Where to install: `where` is "project" or "global"; `home` is the user's home folder (the
    agents' global files live there); `hivelore_home` holds the ledger (default `<home>/.hivelore`,
    the CLI passes the HIVELORE_HOME in force); `codex_home` is Codex's global folder (default
    `<home>/.codex`, the CLI passes CODEX_HOME when it is set, as Codex itself reads it)."""

    where: str
    project_root: Path | None
    home: Path
    agents: tuple[str, ...]
    hooks: str
    entry: tuple[str, ...]
    hivelore_home: Path | None = None
    codex_home: Path | None = None

    def __post_init__(self) -> None:
        if self.where not in ("project", "global"):
            raise InstallError(f"where must be 'project' or 'global', not {self.where!r}.")
        if self.where == "project" and (self.project_root is None or not self.project_root.is_dir()):
            raise InstallError(f"a project install needs an existing project folder, not {self.project_root}.")
        unknown = [a for a in self.agents if a not in AGENTS]
        if unknown:
            raise InstallError(f"unknown agent {unknown[0]!r}: choose from {', '.join(AGENTS)}.")
        if self.hooks not in HOOK_MODES:
            raise InstallError(f"hooks must be one of {', '.join(HOOK_MODES)}, not {self.hooks!r}.")
        if not self.entry:
            raise InstallError("the hivelore command to wire in is empty.")

    @property
    def base(self) -> Path:
        return self.project_root if self.where == "project" and self.project_root else self.home

    @property
    def ledger_path(self) -> Path:
        return (self.hivelore_home or self.home / ".hivelore") / LEDGER


@record
class Change:
    path: Path
    action: str  # create | update | unchanged | remove | skip
    summary: str


@record
class FileEdit:
    """One planned file: its bytes now (`before`, None: absent) and after (`after`, None: delete)."""

    path: Path
    action: str
    summary: str
    before: bytes | None
    after: bytes | None
    new_dirs: tuple[Path, ...] = ()  # folders `apply` creates first (they did not exist when planned)
    old_dirs: tuple[Path, ...] = ()  # folders install created that `apply` removes last, once empty
    private: bool = False  # written readable by its owner only (the ledger holds copies of config files)

    @property
    def change(self) -> Change:
        return Change(self.path, self.action, self.summary)


@record
class Wired:
    """What of hivelore one agent has: the MCP command line (None: no `hivelore` server), our hook
    commands per wire event, our skills found, and a file that could not be read (`problem`)."""

    agent: str
    mcp_file: Path
    mcp_command: tuple[str, ...] | None
    hooks_file: Path
    hook_commands: tuple[tuple[str, str], ...]
    skills: tuple[Path, ...]
    problem: str | None = None


def default_entry() -> tuple[str, ...]:
    """The absolute command that runs this hivelore: the console script next to the interpreter, or
    the interpreter with `-m hivelore`. The interpreter path is not resolved: a virtual
    environment's python is a symlink whose target lies outside the environment."""
    python = Path(sys.executable).absolute()
    script = python.with_name("hivelore.exe" if os.name == "nt" else "hivelore")
    return (str(script),) if script.is_file() else (str(python), "-m", "hivelore")


def hook_command(entry: tuple[str, ...], agent: str, event: str, read_only: bool) -> str:
    """`<entry> hook --agent A --event E`, or the same through the `hivelore-hook` launcher when it
    is installed next to the `hivelore` entry point (it skips pip's wrapper, a quarter of a hook's
    time: see scripts/hivelore-hook)."""
    launcher = _hook_launcher(entry)
    words = [launcher] if launcher else [*entry, "hook"]
    words += ["--agent", agent, "--event", event]
    return shlex.join([*words, "--read-only"] if read_only else words)


def _hook_launcher(entry: tuple[str, ...]) -> str | None:
    if len(entry) != 1 or Path(entry[0]).name not in ("hivelore", "hivelore.exe"):
        return None
    launcher = Path(entry[0]).with_name("hivelore-hook")
    return str(launcher) if launcher.is_file() else None


def is_hook_command(command: object) -> bool:
    """Whether a hook command is one of ours: a `hivelore` program (or `-m hivelore`), then
    `hook --agent A --event E`, or `hivelore-hook --agent A --event E`. Any install location counts,
    so stale entries are found too."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if len(words) >= 5 and Path(words[0]).name == "hivelore-hook" and words[1] == "--agent" and words[3] == "--event":
        return True
    for i in range(1, len(words) - 4):
        if words[i : i + 2] == ["hook", "--agent"] and words[i + 3] == "--event":
            program = words[:i]
            if Path(program[-1]).name in ("hivelore", "hivelore.exe") or program[-2:] == ["-m", "hivelore"]:
                return True
    return False


# --- the JSON parts: one job each, applied to a parsed file ---------------------------------------------


@dataclass
class _Ctx:
    """The file being merged, and which of its containers ("mcpServers", "hooks", "hooks/<event>")
    install created: uninstall removes exactly those once empty, never an empty one the user had."""

    path: Path
    made: set[str]

    def child(self, parent: dict[str, Any], key: str, name: str, kind: type, create: bool) -> Any:
        value = parent.get(key)
        if value is None and create:
            value = parent[key] = kind()
            self.made.add(name)
        if value is not None and not isinstance(value, kind):
            wanted = "an object" if kind is dict else "a list"
            raise InstallError(
                f"{self.path}: '{name}' must be {wanted}, not {type(value).__name__}: fix it and run again."
            )
        return value

    def prune(self, parent: dict[str, Any], key: str, name: str) -> None:
        """Called after removing our entries from parent[key]: drop it if now empty and ours."""
        if not parent[key] and name in self.made:
            del parent[key]
            self.made.discard(name)


@dataclass(frozen=True)
class _Mcp:
    """The `hivelore` entry of an `mcpServers` object."""

    server: dict[str, Any]
    key: str = "mcpServers"

    def install(self, doc: dict[str, Any], ctx: _Ctx) -> list[str]:
        servers = ctx.child(doc, self.key, self.key, dict, create=True)
        current = servers.get(SERVER)
        if isinstance(current, dict):
            if all(current.get(k) == v for k, v in self.server.items()):
                return []
            current.update(copy.deepcopy(self.server))  # keeps what the user added, like env
            return [f"updated MCP server '{SERVER}'"]
        servers[SERVER] = copy.deepcopy(self.server)
        return [f"added MCP server '{SERVER}'"]

    def uninstall(self, doc: dict[str, Any], ctx: _Ctx) -> list[str]:
        servers = ctx.child(doc, self.key, self.key, dict, create=False)
        if not servers or SERVER not in servers:
            return []
        del servers[SERVER]
        ctx.prune(doc, self.key, self.key)
        return [f"removed MCP server '{SERVER}'"]

    def found(self, doc: dict[str, Any]) -> tuple[str, ...] | None:
        servers = doc.get(self.key)
        current = servers.get(SERVER) if isinstance(servers, dict) else None
        return _command_line(current.get("command"), current.get("args")) if isinstance(current, dict) else None


def _command_line(command: object, args: object) -> tuple[str, ...] | None:
    if not isinstance(command, str):
        return None
    return (command, *(str(a) for a in args)) if isinstance(args, list) else (command,)


@dataclass(frozen=True)
class _Hooks:
    """Our entries in a `hooks` object: event -> list of entries (`grouped=False`, Cursor and Kiro)
    or event -> list of `{matcher?, hooks: [entries]}` groups (Claude Code, Codex, Gemini CLI)."""

    entries: dict[str, dict[str, Any]]  # wire event -> the entry we want there
    grouped: bool

    def install(self, doc: dict[str, Any], ctx: _Ctx) -> list[str]:
        if not self.entries:
            return self.uninstall(doc, ctx)
        hooks = ctx.child(doc, "hooks", "hooks", dict, create=True)
        removed = [event for event in list(hooks) if event not in self.entries and self._strip(hooks, event, ctx)]
        outcome: dict[str, list[str]] = {"added": [], "updated": []}
        for event, entry in self.entries.items():
            status = self._ensure(hooks, event, entry, ctx)
            if status:
                outcome[status].append(event)
        phrases = [f"{verb} hooks {', '.join(events)}" for verb, events in outcome.items() if events]
        return phrases + ([f"removed hooks {', '.join(removed)}"] if removed else [])

    def uninstall(self, doc: dict[str, Any], ctx: _Ctx) -> list[str]:
        hooks = ctx.child(doc, "hooks", "hooks", dict, create=False)
        if not hooks:
            return []
        removed = [event for event in list(hooks) if self._strip(hooks, event, ctx)]
        if removed:
            ctx.prune(doc, "hooks", "hooks")
        return [f"removed hooks {', '.join(removed)}"] if removed else []

    def found(self, doc: dict[str, Any]) -> list[tuple[str, str]]:
        hooks = doc.get("hooks")
        if not isinstance(hooks, dict):
            return []
        return [(event, entry["command"]) for event in hooks for _, entry in self._ours(hooks[event])]

    def _ours(self, items: object) -> Iterator[tuple[list[Any], dict[str, Any]]]:
        """(the list holding it, entry) for each of our entries in one event's list."""
        if not isinstance(items, list):
            return
        lists = [g["hooks"] for g in items if isinstance(g, dict) and isinstance(g.get("hooks"), list)]
        for holder in lists if self.grouped else [items]:
            for entry in holder:
                if isinstance(entry, dict) and is_hook_command(entry.get("command")):
                    yield holder, entry

    def _ensure(self, hooks: dict[str, Any], event: str, entry: dict[str, Any], ctx: _Ctx) -> str | None:
        items = ctx.child(hooks, event, f"hooks/{event}", list, create=True)
        mine = list(self._ours(items))
        if not mine:
            items.append({"hooks": [dict(entry)]} if self.grouped else dict(entry))
            return "added"
        holder, first = mine[0]
        same = all(first.get(key) == value for key, value in entry.items())
        if not same:  # a stale path, other flags or another timeout: replace it where it stands
            holder[next(i for i, e in enumerate(holder) if e is first)] = dict(entry)
        self._drop(hooks, event, [e for _, e in mine[1:]], ctx)
        return None if same and len(mine) == 1 else "updated"

    def _strip(self, hooks: dict[str, Any], event: str, ctx: _Ctx) -> bool:
        mine = [e for _, e in self._ours(hooks[event])]
        self._drop(hooks, event, mine, ctx)
        return bool(mine)

    def _drop(self, hooks: dict[str, Any], event: str, doomed: list[dict[str, Any]], ctx: _Ctx) -> None:
        """Remove these entries, the groups only they filled, and the event list if we made it."""
        if not doomed:
            return
        items = hooks[event]
        for holder, entry in list(self._ours(items)):
            if any(entry is d for d in doomed):
                holder.remove(entry)
                if self.grouped and not holder:
                    items[:] = [g for g in items if not (isinstance(g, dict) and g.get("hooks") is holder)]
        ctx.prune(hooks, event, f"hooks/{event}")


@dataclass(frozen=True)
class _Mode:
    """`.hivelore.json`: the mode is set to local only when the file does not choose one."""

    def install(self, doc: dict[str, Any], ctx: _Ctx) -> list[str]:
        if "mode" in doc:
            return []
        doc["mode"] = "local"
        return ['set "mode": "local"']

    def uninstall(self, doc: dict[str, Any], ctx: _Ctx) -> list[str]:
        return []


@dataclass(frozen=True)
class _AllowedEnv:
    """Variable names in Gemini CLI's `security.environmentVariableRedaction.allowed`: the variables it
    passes to hook commands and MCP servers whatever its redaction drops (see `_gemini`). Only names
    hivelore alone reads are ours to add and to take out again; the user's names stay."""

    names: tuple[str, ...]
    path: tuple[str, ...] = ("security", "environmentVariableRedaction", "allowed")

    def install(self, doc: dict[str, Any], ctx: _Ctx) -> list[str]:
        parent = doc
        for depth, key in enumerate(self.path[:-1]):
            parent = ctx.child(parent, key, self._name(depth), dict, create=True)
        allowed = ctx.child(parent, self.path[-1], self._name(len(self.path) - 1), list, create=True)
        missing = [name for name in self.names if name not in allowed]
        allowed.extend(missing)
        return [f"allowed {', '.join(missing)} through Gemini's environment redaction"] if missing else []

    def uninstall(self, doc: dict[str, Any], ctx: _Ctx) -> list[str]:
        chain: list[dict[str, Any]] = [doc]  # the objects holding each key of `path`
        for depth, key in enumerate(self.path[:-1]):
            value = ctx.child(chain[-1], key, self._name(depth), dict, create=False)
            if not value:
                return []
            chain.append(value)
        allowed = ctx.child(chain[-1], self.path[-1], self._name(len(chain) - 1), list, create=False)
        ours = [name for name in allowed or () if name in self.names]
        if not ours:
            return []
        allowed[:] = [name for name in allowed if name not in self.names]
        for depth in reversed(range(len(self.path))):  # the containers install made, once empty
            ctx.prune(chain[depth], self.path[depth], self._name(depth))
        return [f"removed {', '.join(ours)} from Gemini's environment redaction allow-list"]

    def _name(self, depth: int) -> str:
        return "/".join(self.path[: depth + 1])


@dataclass(frozen=True)
class _Setting:
    """A top-level key of a file that is ours alone (Kiro's `hivelore` agent): set when absent (one the user
    set stays), taken out by uninstall while it holds what install wrote."""

    key: str
    value: str

    def install(self, doc: dict[str, Any], ctx: _Ctx) -> list[str]:
        if self.key in doc:
            return []
        doc[self.key] = self.value
        return [f"set {self.key!r}"]

    def uninstall(self, doc: dict[str, Any], ctx: _Ctx) -> list[str]:
        if doc.get(self.key) != self.value:
            return []
        del doc[self.key]
        return [f"removed {self.key!r}"]


_Part = _Mcp | _Hooks | _Mode | _AllowedEnv | _Setting


@dataclass(frozen=True)
class _File:
    """A configuration file we merge into: what it holds when we create it, and our parts of it."""

    path: Path
    parts: tuple[_Part, ...]
    skeleton: dict[str, Any] = field(default_factory=dict)
    toml_server: dict[str, Any] | None = None  # Codex config.toml: merged with tomlkit instead
    removable: bool = True  # uninstall may touch it (never `.hivelore.json`)


# --- per agent: files, formats and the documentation each decision rests on --------------------------------


def _entries(target: Target, agent: str, make: Callable[[str], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    read_only = target.hooks == "read-only"
    return {e: make(hook_command(target.entry, agent, e, read_only)) for e in events_for(agent, target.hooks)}


def _server(target: Target, **extra: Any) -> dict[str, Any]:
    return {**extra, "command": target.entry[0], "args": [*target.entry[1:], "mcp"]}


def _claude_style(command: str) -> dict[str, Any]:
    return {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}


def _claude(target: Target) -> tuple[list[_File], Path]:
    # Claude Code (code.claude.com/docs/en/mcp, /settings, /hooks): project servers in `.mcp.json`
    # ({"mcpServers": {name: {"type": "stdio", "command", "args"}}}, approved once by the user), user
    # servers in `~/.claude.json` top-level "mcpServers"; hooks in `.claude/settings.json` as
    # {"hooks": {Event: [{"matcher"?, "hooks": [{"type": "command", "command", "timeout" (s)}]}]}};
    # no matcher = every tool / every session source. Skills: `.claude/skills/<name>/SKILL.md`.
    base, project = target.base, target.where == "project"
    mcp = base / ".mcp.json" if project else target.home / ".claude.json"
    hooks = _Hooks(_entries(target, "claude", _claude_style), True)
    files = [
        _File(mcp, (_Mcp(_server(target, type="stdio")),)),
        _File(base / ".claude/settings.json", (hooks,)),
    ]
    return files, base / ".claude/skills"


def _codex(target: Target) -> tuple[list[_File], Path]:
    # Codex (developers.openai.com/codex/config-reference, /codex/hooks, /codex/skills): MCP servers are
    # `[mcp_servers.<name>]` command/args tables in `~/.codex/config.toml`, or `<repo>/.codex/config.toml`
    # for a trusted project. Hooks are read from `hooks.json` next to each config layer, in Claude Code's
    # shape (timeout in seconds); we use hooks.json rather than an inline [hooks] table so the user's
    # TOML keeps only the one line group we own. Skills: `.agents/skills` (repo) and `~/.agents/skills`.
    # Codex runs a hook only once the user reviewed it (trust is kept per hook in the user's config.toml,
    # see agents/trust.py) and clamps SessionEnd to 3 s; `setup_facts` says so after install.
    base, project = target.base, target.where == "project"
    folder = base / ".codex" if project else target.codex_home or base / ".codex"
    entries = _entries(target, "codex", _claude_style)
    if "SessionEnd" in entries:
        entries["SessionEnd"] = {**entries["SessionEnd"], "timeout": CODEX_SESSION_END_TIMEOUT_S}
    files = [
        _File(folder / "config.toml", (), toml_server=_server(target, **{CODEX_ENV_VARS: list(MCP_ENVIRONMENT)})),
        _File(folder / "hooks.json", (_Hooks(entries, True),)),
    ]
    return files, base / ".agents/skills"


def _kiro(target: Target) -> tuple[list[_File], Path]:
    # Kiro CLI (kiro.dev/docs/cli/mcp, /cli/hooks, /cli/custom-agents/configuration-reference, /cli/skills):
    # MCP servers in `.kiro/settings/mcp.json` / `~/.kiro/settings/mcp.json` ({"mcpServers": ...}). Hooks
    # exist only in an agent configuration, {"hooks": {"agentSpawn": [{"command", "timeout_ms"}], ...}},
    # and the built-in default agent cannot be edited: we add our own agent `hivelore`, a full-tool agent
    # (an agent without "tools" has none) that includes mcp.json and the skills folders.
    # Skills: `.kiro/skills/<name>/SKILL.md` and `~/.kiro/skills`.
    base = target.base
    hooks = _Hooks(_entries(target, "kiro", lambda c: {"command": c, "timeout_ms": HOOK_TIMEOUT_S * 1000}), False)
    agent = {
        "name": SERVER,
        "description": "Kiro's tools with hivelore memory: lessons at start and after failures.",
        "tools": ["*"],
        "includeMcpJson": True,
        "resources": ["skill://.kiro/skills/**/SKILL.md", "skill://~/.kiro/skills/**/SKILL.md"],
    }
    parts: tuple[_Part, ...] = (hooks, _Setting("prompt", KIRO_PROMPT)) if target.hooks != "none" else (hooks,)
    files = [
        _File(base / ".kiro/settings/mcp.json", (_Mcp(_server(target)),)),
        _File(base / f".kiro/agents/{SERVER}.json", parts, skeleton=agent),
    ]
    return files, base / ".kiro/skills"


def _gemini(target: Target) -> tuple[list[_File], Path]:
    # Gemini CLI (geminicli.com/docs/reference/configuration, /docs/hooks/reference, /docs/cli/skills):
    # one settings.json per layer (`.gemini/settings.json`, `~/.gemini/settings.json`) holds "mcpServers"
    # and "hooks" ({Event: [{"matcher"?, "hooks": [{"type": "command", "command", "name", "timeout" (ms)}]}]}).
    # Skills: `.gemini/skills/<name>/SKILL.md` and `~/.gemini/skills`.
    # Gemini CLI starts hook commands and MCP servers in a filtered environment: under GitHub Actions
    # (GITHUB_SHA set, or SURFACE=Github) only a fixed few variables (PATH, HOME, LANG, TMPDIR, USER …) and
    # the names in `security.environmentVariableRedaction.allowed` pass; MCP servers always lose names
    # with TOKEN, KEY, AUTH … (packages/core/src/services/environmentSanitization.ts, hooks/hookRunner.ts,
    # tools/mcp-client.ts). Without HIVELORE_HOME its hooks would write to ~/.hivelore, so install names
    # the variables hivelore reads there: names only, the values stay in the user's environment.
    base = target.base

    def entry(command: str) -> dict[str, Any]:
        return {"type": "command", "command": command, "name": SERVER, "timeout": HOOK_TIMEOUT_S * 1000}

    parts = (_Mcp(_server(target)), _Hooks(_entries(target, "gemini", entry), True), _AllowedEnv(GEMINI_ENVIRONMENT))
    return [_File(base / ".gemini/settings.json", parts)], base / ".gemini/skills"


def _cursor(target: Target) -> tuple[list[_File], Path]:
    # Cursor (cursor.com/docs/context/mcp, /docs/agent/hooks, /docs/context/skills): `.cursor/mcp.json` and
    # `~/.cursor/mcp.json` ({"mcpServers": ...}); `.cursor/hooks.json` and `~/.cursor/hooks.json` as
    # {"version": 1, "hooks": {event: [{"command", "timeout" (s)}]}}. Skills: `.cursor/skills`, `~/.cursor/skills`.
    base = target.base
    hooks = _Hooks(_entries(target, "cursor", lambda c: {"command": c, "timeout": HOOK_TIMEOUT_S}), False)
    files = [
        _File(base / ".cursor/mcp.json", (_Mcp(_server(target)),)),
        _File(base / ".cursor/hooks.json", (hooks,), skeleton={"version": 1}),
    ]
    return files, base / ".cursor/skills"


def setup_facts(target: Target, as_root: bool = False) -> list[str]:
    """What each agent of the target still needs outside its files before hivelore runs there, and how
    it runs with nobody at the keyboard: at most one line per agent (docs/hooks.md has the recipes).
    `as_root`: Claude Code refuses to skip permission prompts for root unless IS_SANDBOX=1."""
    project, hooks = target.where == "project", target.hooks != "none"
    facts = {
        "claude": _claude_fact(project, as_root),
        "codex": _codex_fact(project, hooks),
        "kiro": f"hooks run in the '{SERVER}' agent: kiro-cli chat --agent {SERVER}" if hooks else "",
        "gemini": "hooks and MCP run only in a trusted folder: trust it when gemini asks "
        "(or TRUST_FOLDER in ~/.gemini/trustedFolders.json)",
    }
    return [f"{agent}: {facts[agent]}" for agent in target.agents if facts.get(agent)]


def _claude_fact(project: bool, as_root: bool) -> str:
    approve = "approve the MCP server once in `claude`; " if project else ""  # a user-scope server needs none
    root = " with IS_SANDBOX=1 (as root)" if as_root else ""
    return f"{approve}headless: claude -p PROMPT --dangerously-skip-permissions{root}"


def _codex_fact(project: bool, hooks: bool) -> str:
    if not hooks:
        return "trust the project (Codex ignores its .codex/ until then)" if project else ""
    review = "review the hooks once in `codex` (/hooks)"
    return (
        (f"trust the project and {review}" if project else review)
        + "; `codex exec` needs --dangerously-bypass-hook-trust until then"
        + f"; SessionEnd is capped at {CODEX_SESSION_END_TIMEOUT_S} s"
    )


_LAYOUTS: dict[str, Callable[[Target], tuple[list[_File], Path]]] = {
    "claude": _claude,
    "codex": _codex,
    "kiro": _kiro,
    "gemini": _gemini,
    "cursor": _cursor,
}


# --- reading and rendering -------------------------------------------------------------------------------


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InstallError(f"cannot read {path} ({exc.strerror}): fix its permissions and run again.") from exc


def _text(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InstallError(f"{path} is not UTF-8 text: fix or move it away, then run again.") from exc


def _parse_json(path: Path, text: str) -> dict[str, Any]:
    if not text.strip():
        return {}  # an empty file (`touch settings.json`) is an empty object to every agent we know
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InstallError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}): "
            "fix or move it away, then run again; nothing was changed."
        ) from exc
    if not isinstance(data, dict):
        raise InstallError(f"{path} must hold a JSON object, not {type(data).__name__}: nothing was changed.")
    return data


def _render_json(data: dict[str, Any], like: str | None) -> str:
    """indent=2 and a final newline for a new file; an existing file keeps its indent, its line ends
    and whether it ends with a newline, so removing what we added restores its bytes."""
    match = re.search(r"\n([ \t]+)\S", like or "")
    stripped = (like or "").strip()
    if stripped and "\n" not in stripped and not re.fullmatch(r"\{\s*\}", stripped):
        # a machine-written one-line file stays one line (`{}` grows like a new file)
        separators = (", ", ": ") if '": ' in stripped else (",", ":")
        text = json.dumps(data, separators=separators, ensure_ascii=False)
    else:
        text = json.dumps(data, indent=match.group(1) if match else 2, ensure_ascii=False)
    if like is None or like.endswith("\n") or not like.strip():
        text += "\n"
    return text.replace("\n", "\r\n") if like and "\r\n" in like else text


def _parse_toml(path: Path, text: str) -> tomlkit.TOMLDocument:
    try:
        return tomlkit.parse(text)
    except TOMLKitError as exc:
        raise InstallError(f"{path} is not valid TOML ({exc}): fix or move it away, then run again.") from exc


def _toml_servers(path: Path, doc: tomlkit.TOMLDocument) -> Any:
    servers = doc.get("mcp_servers")
    if servers is not None and not hasattr(servers, "keys"):
        raise InstallError(f"{path}: 'mcp_servers' must be a table: fix it and run again.")
    return servers


def _toml_install(path: Path, text: str, server: dict[str, Any]) -> tuple[str, list[str]]:
    doc = _parse_toml(path, text)
    servers = _toml_servers(path, doc)
    current = servers.get(SERVER) if servers is not None else None
    if current is not None and hasattr(current, "keys"):
        stale = [key for key, value in server.items() if not _toml_holds(current, key, value)]
        if not stale:
            return text, []
        for key in stale:
            _toml_put(current, key, server[key])  # in place: the table keeps its position, comments and other keys
        return tomlkit.dumps(doc), [f"updated MCP server '{SERVER}'"]
    # A new table goes at the end as text, after one blank line: every byte of the user's file stays,
    # and uninstall can take exactly this tail off again.
    block = f"[mcp_servers.{SERVER}]\n" + "".join(f"{k} = {tomlkit.item(v).as_string()}\n" for k, v in server.items())
    head = text if not text or text.endswith("\n") else text + "\n"
    appended = head + ("\n" if head else "") + block
    try:
        tomlkit.parse(appended)
    except TOMLKitError:
        if not isinstance(servers, tomlkit.items.InlineTable):
            raise InstallError(
                f"cannot add [mcp_servers.{SERVER}] to {path}: fix its mcp_servers and run again."
            ) from None
        servers[SERVER] = tomlkit.inline_table()  # `mcp_servers = {...}` can only grow inline
        servers[SERVER].update(server)
        appended = tomlkit.dumps(doc)
    return appended, [f"added MCP server '{SERVER}'"]


def _toml_holds(table: Any, key: str, value: Any) -> bool:
    """Whether our server table already holds `value` at `key`; `env_vars` holds ours when it names
    them all, whatever else the user added."""
    current = table.get(key)
    if key == CODEX_ENV_VARS and isinstance(current, list):
        return set(value) <= _env_var_names(current)
    return current == value


def _toml_put(table: Any, key: str, value: Any) -> None:
    current = table.get(key)
    if key == CODEX_ENV_VARS and isinstance(current, list):
        named = _env_var_names(current)
        current.extend(name for name in value if name not in named)  # the user's own names stay
    else:
        table[key] = value


def _env_var_names(entries: list[Any]) -> set[str]:
    """The names in a Codex `env_vars` list: plain names, or `{name = …, source = …}` tables."""
    return {str(e) if isinstance(e, str) else str(e.get("name")) for e in entries if isinstance(e, str | dict)}


def _toml_uninstall(path: Path, text: str) -> tuple[str, list[str]]:
    doc = _parse_toml(path, text)
    servers = _toml_servers(path, doc)
    if servers is None or SERVER not in servers:
        return text, []
    del servers[SERVER]
    if not servers and getattr(servers, "is_super_table", lambda: False)():
        del doc["mcp_servers"]  # an implicit [mcp_servers] that only our table defined
    out = tomlkit.dumps(doc)
    if text.startswith(out) and out.endswith("\n\n"):
        out = out[:-1]  # we cut the tail install appended: drop the blank line it put before it
    return out, [f"removed MCP server '{SERVER}'"]


def _toml_found(doc: tomlkit.TOMLDocument) -> tuple[str, ...] | None:
    servers: Any = doc.get("mcp_servers")  # a hand-edited file: any TOML value
    current: Any = servers.get(SERVER) if hasattr(servers, "keys") else None
    if not hasattr(current, "keys"):
        return None
    return _command_line(current.get("command"), list(current.get("args", [])))


# --- planning ----------------------------------------------------------------------------------------------


class _Ledger:
    """What install created: path -> "" for a file or folder, `path#container` -> "" for an object or
    list it added inside a file, and a skill file's path -> the sha256 of the bytes it wrote. And,
    for a file the user had, its bytes before install and the sha256 of what install left there
    (`originals`): while the file still holds exactly that, uninstall gives the user's bytes back
    as they were, formatting and all (the ledger is written readable by its owner only)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.before = _read(path)
        data = _parse_json(path, _text(path, self.before)) if self.before is not None else {}
        created, originals = data.get("created", {}), data.get("originals", {})
        if not isinstance(created, dict) or not isinstance(originals, dict):
            raise InstallError(f"{path}: 'created' and 'originals' must be JSON objects: fix or delete it.")
        self.created: dict[str, str] = {str(k): str(v) for k, v in created.items()}
        self.originals: dict[str, dict[str, str]] = {
            str(k): v for k, v in originals.items() if isinstance(v, dict) and {"text", "installed"} <= set(v)
        }

    def remember_original(self, path: Path, before: bytes, after: bytes) -> None:
        """Install changed a file the user had: keep its first bytes, and what install left there."""
        kept = self.originals.get(str(path))
        text = kept["text"] if kept else before.decode("utf-8", "surrogateescape")
        self.originals[str(path)] = {"text": text, "installed": _sha(after)}

    def original(self, path: Path, now: bytes | None) -> bytes | None:
        """The user's bytes from before install, if the file still holds exactly what install left."""
        kept = self.originals.pop(str(path), None)
        if kept is None or now is None or _sha(now) != kept["installed"]:
            return None
        return kept["text"].encode("utf-8", "surrogateescape")

    def has(self, path: Path) -> bool:
        return str(path) in self.created

    def containers(self, path: Path) -> set[str]:
        prefix = f"{path}#"
        return {key.removeprefix(prefix) for key in self.created if key.startswith(prefix)}

    def set_containers(self, path: Path, names: set[str]) -> None:
        for name in self.containers(path) - names:
            del self.created[f"{path}#{name}"]
        self.created.update({f"{path}#{name}": "" for name in names})

    def forget(self, path: Path) -> None:
        """Drop a file and the containers recorded inside it."""
        self.created.pop(str(path), None)
        self.set_containers(path, set())

    def edit(self) -> FileEdit | None:
        record = {"created": dict(sorted(self.created.items())), "originals": dict(sorted(self.originals.items()))}
        after = _render_json(record, None).encode() if self.created or self.originals else None
        if self.before is None and after is None:
            return None
        summary = "the record of what hivelore install created"
        edit = _file_edit(self.path, self.before, after, summary, _missing_dirs(self.path))
        return replace(edit, private=True)


def _missing_dirs(path: Path) -> tuple[Path, ...]:
    """The folders above `path` that do not exist yet, outermost first."""
    missing = [p for p in path.parents if not p.exists()]
    return tuple(reversed(missing))


def _action(before: bytes | None, after: bytes | None) -> str:
    if before == after:
        return "unchanged"
    return "create" if before is None else "remove" if after is None else "update"


def _file_edit(
    path: Path, before: bytes | None, after: bytes | None, summary: str, new_dirs: tuple[Path, ...] = ()
) -> FileEdit:
    action = _action(before, after)
    return FileEdit(
        path,
        action,
        summary if action != "unchanged" else "nothing to change",
        before,
        after,
        new_dirs if action == "create" else (),
    )


def _merge(spec: _File, installing: bool, ledger: _Ledger) -> tuple[bytes | None, bytes | None, list[str], bool]:
    """(before, after, phrases, holds-only-its-skeleton) for one configuration file."""
    before = _read(spec.path)
    text = _text(spec.path, before) if before is not None else None
    if spec.toml_server is not None:
        base = text or ""
        out, phrases = (
            _toml_install(spec.path, base, spec.toml_server) if installing else _toml_uninstall(spec.path, base)
        )
        return before, out.encode() if phrases else before, phrases, not out.strip()
    doc = _parse_json(spec.path, text) if text is not None else copy.deepcopy(spec.skeleton)
    ctx = _Ctx(spec.path, ledger.containers(spec.path))
    phrases = [p for part in spec.parts for p in (part.install if installing else part.uninstall)(doc, ctx)]
    ledger.set_containers(spec.path, ctx.made)
    after = _render_json(doc, text).encode() if phrases else before
    return before, after, phrases, doc == spec.skeleton


def _plan_file(spec: _File, installing: bool, ledger: _Ledger) -> FileEdit | None:
    before, after, phrases, empty = _merge(spec, installing, ledger)
    if before is None and not phrases:
        if not installing:
            ledger.forget(spec.path)  # deleted by hand: nothing left to remember
        return None  # nothing of ours to put there, nothing to take away
    if installing and before is None and spec.removable:
        ledger.created[str(spec.path)] = ""
    if empty and before is not None and ledger.has(spec.path):
        after = None  # a file we created that holds nothing of anyone else now (also `install --hooks none`)
        ledger.forget(spec.path)
    elif installing and before is not None and after is not None and after != before and not ledger.has(spec.path):
        ledger.remember_original(spec.path, before, after)
    elif not installing and before is not None:
        after = ledger.original(spec.path, before) or after
    summary = "; ".join(phrases) or "nothing but what install had put there"
    return _file_edit(spec.path, before, after, summary, _missing_dirs(spec.path))


def _skill_bytes(name: str) -> bytes:
    return (SKILLS_SOURCE / name / "SKILL.md").read_bytes()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _plan_skill(path: Path, ours: bytes, installing: bool, ledger: _Ledger) -> FileEdit | None:
    before = _read(path)
    recorded = ledger.created.get(str(path))
    pristine = before is not None and (before == ours or _sha(before) == recorded)
    if installing and before is not None and not pristine:
        return FileEdit(path, "skip", "edited since install, or not ours: left as it is", before, before)
    if not installing and before is not None and not pristine:
        return FileEdit(path, "skip", "edited since install: left in place", before, before)
    if not installing:
        ledger.created.pop(str(path), None)
        return _file_edit(path, before, None, "removed skill") if before is not None else None
    if before != ours:
        ledger.created[str(path)] = _sha(ours)
    return _file_edit(path, before, ours, "installed skill", _missing_dirs(path))


def _specs(target: Target) -> tuple[list[_File], list[Path]]:
    files: list[_File] = []
    skill_dirs: list[Path] = []
    for agent in target.agents:
        agent_files, skills = _LAYOUTS[agent](target)
        files += agent_files
        skill_dirs.append(skills)
    return files, skill_dirs


def _plan(target: Target, installing: bool) -> list[FileEdit]:
    ledger = _Ledger(target.ledger_path)
    files, skill_dirs = _specs(target)
    if installing and target.where == "project":
        files.append(_File(target.base / ".hivelore.json", (_Mode(),), removable=False))
    edits = [_plan_file(spec, installing, ledger) for spec in files]
    skills = {folder / name / "SKILL.md": _skill_bytes(name) for folder in skill_dirs for name in SKILLS}
    edits += [_plan_skill(path, ours, installing, ledger) for path, ours in skills.items()]
    planned = [e for e in edits if e is not None]
    for edit in planned:
        ledger.created.update({str(d): "" for d in edit.new_dirs})
    planned = _with_old_dirs(planned, ledger)
    planned += _plan_answers(target.ledger_path.with_name(ANSWERS_FILE), installing, ledger)
    ledger_edit = ledger.edit()
    return planned + ([ledger_edit] if ledger_edit else [])


def _plan_answers(path: Path, installing: bool, ledger: _Ledger) -> list[FileEdit]:
    """The MCP server's prepared answers (`prepare_mcp` writes them after install): recorded when
    install is what brings them, removed by the uninstall that takes out the last thing install had
    recorded in this hivelore home (another agent or place still wired keeps them)."""
    if installing:
        if not path.exists():
            ledger.created.setdefault(str(path), "")
        return []
    if set(ledger.created) != {str(path)}:
        return []
    ledger.forget(path)
    before = _read(path)
    return [_file_edit(path, before, None, "removed the MCP server's prepared answers")] if before is not None else []


def _with_old_dirs(edits: list[FileEdit], ledger: _Ledger) -> list[FileEdit]:
    """Attach to each removed file the folders install created above it that will then be empty."""
    gone = {e.path for e in edits if e.action == "remove"}
    skill_dirs = {p.parent for p in gone if p.name == "SKILL.md" and p.parent.name in SKILLS}  # ours by name
    candidates = {p for path in gone for p in path.parents if ledger.has(p)} | skill_dirs
    for folder in sorted(candidates, key=lambda p: -len(p.parts)):
        if folder.is_dir() and all(child in gone for child in folder.iterdir()):
            gone.add(folder)
            ledger.created.pop(str(folder), None)
    return [
        replace(edit, old_dirs=tuple(p for p in edit.path.parents if p in gone)) if edit.action == "remove" else edit
        for edit in edits
    ]


def plan_install(target: Target) -> list[FileEdit]:
    """Everything install would write, computed in memory from the files as they are now."""
    return _plan(target, installing=True)


def plan_uninstall(target: Target) -> list[FileEdit]:
    """Everything uninstall would write or delete, computed in memory."""
    return _plan(target, installing=False)


# --- applying ----------------------------------------------------------------------------------------------


def _write_atomic(path: Path, data: bytes, private: bool = False) -> None:
    real = path.resolve() if path.is_symlink() else path  # keep a dotfile manager's link a link
    try:
        mode = stat.S_IMODE(real.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    atomicfile.replace(real, data, permissions=0o600 if private else mode)


def apply(edits: list[FileEdit]) -> list[Change]:
    """Write the plan: check every file is still as planned, create folders, write or delete each
    file atomically, then remove the folders install had created and that are now empty."""
    for edit in edits:
        if _read(edit.path) != edit.before:
            raise InstallError(f"{edit.path} changed since it was planned: run the command again; nothing was written.")
    for folder in sorted({d for e in edits for d in e.new_dirs}, key=lambda p: len(p.parts)):
        folder.mkdir(exist_ok=True)
    for edit in edits:
        if edit.after is None and edit.before is not None:
            edit.path.unlink()
        elif edit.after is not None and edit.after != edit.before:
            _write_atomic(edit.path, edit.after, edit.private)
    for folder in sorted({d for e in edits for d in e.old_dirs}, key=lambda p: -len(p.parts)):
        with contextlib.suppress(OSError):  # something new appeared in it since planning: it stays
            folder.rmdir()
    return [edit.change for edit in edits]


# --- the MCP server's first start --------------------------------------------------------------------------

PREPARE_TIMEOUT_S = 120


@record
class Prepared:
    """What `prepare_mcp` did: `ok` False when it could not (install goes on; `line` says why)."""

    ok: bool
    line: str


def prepare_mcp(entry: tuple[str, ...], hivelore_home: Path) -> Prepared:
    """Keep the SDK's handshake answers in `hivelore_home` (`<entry> mcp --prepare`), so the first
    `hivelore mcp` an agent starts answers `initialize` and `tools/list` at once: Codex waits 1 s for
    an optional MCP server and leaves its tools out of the session otherwise. It runs in its own
    process (it puts pipes in place of fd 0 and 1 while the SDK serves them), and not at all when the
    answers there are complete already."""
    answers = hivelore_home / ANSWERS_FILE
    try:
        from hivelore.mcp.stdio import prepared

        if prepared(str(hivelore_home)):
            return Prepared(True, f"the MCP server's handshake answers are ready in {answers}")
    except ImportError:  # a broken SDK shows itself, in its own words, in the run below
        pass
    command = [*entry, "mcp", "--prepare"]
    env = {**os.environ, "HIVELORE_HOME": str(hivelore_home)}
    try:
        done = subprocess.run(
            command, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=PREPARE_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Prepared(False, _not_prepared(str(exc)))
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return Prepared(False, _not_prepared(said))
    return Prepared(True, f"prepared the MCP server's handshake answers in {answers}: its first start answers at once")


def _not_prepared(reason: str) -> str:
    return (
        f"warning: could not prepare the MCP server's handshake answers ({reason}); its first start may be too "
        "slow for Codex: run `hivelore mcp --prepare`."
    )


# --- doctor ------------------------------------------------------------------------------------------------


def _wired(target: Target, agent: str) -> Wired:
    files, skills_dir = _LAYOUTS[agent](target)
    mcp_spec = next(f for f in files if f.toml_server is not None or any(isinstance(p, _Mcp) for p in f.parts))
    hooks_spec = next(f for f in files if any(isinstance(p, _Hooks) for p in f.parts))
    skills = tuple(p for name in SKILLS if (p := skills_dir / name / "SKILL.md").is_file())
    mcp_command: tuple[str, ...] | None = None
    hooks: list[tuple[str, str]] = []
    try:
        mcp_command = _mcp_found(mcp_spec)
        hook_part = next(p for p in hooks_spec.parts if isinstance(p, _Hooks))
        data = _read(hooks_spec.path)
        hooks = hook_part.found(_parse_json(hooks_spec.path, _text(hooks_spec.path, data))) if data else []
    except InstallError as exc:
        return Wired(agent, mcp_spec.path, mcp_command, hooks_spec.path, (), skills, str(exc))
    return Wired(agent, mcp_spec.path, mcp_command, hooks_spec.path, tuple(hooks), skills)


def _mcp_found(spec: _File) -> tuple[str, ...] | None:
    data = _read(spec.path)
    if data is None:
        return None
    text = _text(spec.path, data)
    if spec.toml_server is not None:
        return _toml_found(_parse_toml(spec.path, text))
    part = next(p for p in spec.parts if isinstance(p, _Mcp))
    return part.found(_parse_json(spec.path, text))


def wiring(target: Target) -> list[Wired]:
    """Per agent of the target, which MCP entry, hook commands and skills of hivelore are in place."""
    return [_wired(target, agent) for agent in target.agents]
