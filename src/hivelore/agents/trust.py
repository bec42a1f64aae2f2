"""What the agents themselves decided about a folder, read from their own files, for `doctor`.

Wiring hivelore into an agent's files is not enough where the agent asks its user first:

- Gemini CLI (0.61) loads no project hooks and no MCP server at all, not even the user's, in a folder it
  does not trust. Its verdict: `GEMINI_RESTRICTED_MODE=true` or `GEMINI_CLI_TRUST_WORKSPACE=false`
  distrust, `GEMINI_CLI_TRUST_WORKSPACE=true` trusts; `security.folderTrust.enabled: false` in the
  user's settings turns the check off; else the rules of `trustedFolders.json`
  (`$GEMINI_CLI_TRUSTED_FOLDERS_PATH`, or `.gemini/` under `$GEMINI_CLI_HOME` or the home), a JSON
  object of path -> TRUST_FOLDER | TRUST_PARENT (the rule's parent folder) | DO_NOT_TRUST, where the
  longest rule path that contains the folder wins and no rule means untrusted.
- Codex (0.171) reads a project's `.codex/` only once `[projects."<root>"] trust_level = "trusted"`
  is in the user's `config.toml`, and runs a hook only once its user reviewed it: the review is kept
  in that file as `[hooks.state."<hooks.json path>:<event>:<group>:<handler>"] trusted_hash`, the
  sha256 of the hook's identity (event, handler type, command, timeout as Codex clamps it, async) as
  compact JSON with sorted keys; a hook whose identity changed since is asked about again.

Each check returns a `Finding` whose `ok` is True, False, or None when the files cannot tell.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hivelore.agents.install import CODEX_SESSION_END_TIMEOUT_S, is_hook_command
from hivelore.records import record

GEMINI_TRUST = ("TRUST_FOLDER", "TRUST_PARENT", "DO_NOT_TRUST")
CODEX_DEFAULT_TIMEOUT_S = 600  # what Codex uses for a hook without a timeout
_CODEX_HASHED = {"type", "command", "timeout", "async"}  # handler keys whose identity we can compute


@record
class Finding:
    ok: bool | None  # None: the agent's files do not tell
    text: str


def gemini_folder_trust(folder: Path, home: Path, environ: Mapping[str, str]) -> Finding:
    """Whether Gemini CLI trusts `folder` (and so loads hooks and MCP servers there)."""
    if environ.get("GEMINI_RESTRICTED_MODE") == "true" or environ.get("GEMINI_CLI_TRUST_WORKSPACE") == "false":
        return Finding(False, "gemini: GEMINI_RESTRICTED_MODE or GEMINI_CLI_TRUST_WORKSPACE distrusts every folder")
    if environ.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return Finding(True, "gemini: trusted by GEMINI_CLI_TRUST_WORKSPACE=true")
    gemini_dir = Path(environ.get("GEMINI_CLI_HOME") or home) / ".gemini"
    if _gemini_trust_check_off(gemini_dir / "settings.json"):
        return Finding(True, f"gemini: folder trust is off in {gemini_dir / 'settings.json'}")
    rules_file = Path(environ.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH") or gemini_dir / "trustedFolders.json")
    try:
        rules = _gemini_rules(rules_file)
    except ValueError as exc:
        return Finding(None, f"gemini: cannot tell whether {folder} is trusted: {exc}")
    level = _longest_rule(rules, folder)
    fix = f'trust it when gemini asks, or add "{folder}": "TRUST_FOLDER" to {rules_file}'
    if level is None:
        return Finding(False, f"gemini: {folder} is not trusted: gemini ignores its hooks and all MCP servers; {fix}")
    if level == "DO_NOT_TRUST":
        return Finding(False, f"gemini: {folder} is DO_NOT_TRUST in {rules_file}: no hooks, no MCP servers there")
    return Finding(True, f"gemini: {folder} is trusted ({level} in {rules_file})")


def _gemini_trust_check_off(settings: Path) -> bool:
    try:
        data = json.loads(settings.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False  # Gemini's default: the check is on
    security = data.get("security") if isinstance(data, dict) else None
    folder_trust = security.get("folderTrust") if isinstance(security, dict) else None
    return isinstance(folder_trust, dict) and folder_trust.get("enabled") is False


def _gemini_rules(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ValueError(f"{path} is unreadable ({exc.strerror})") from exc
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not plain JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return {str(k): v for k, v in data.items() if v in GEMINI_TRUST}


def _longest_rule(rules: dict[str, str], folder: Path) -> str | None:
    target = Path(os.path.realpath(folder))
    best, best_len = None, -1
    for rule, level in rules.items():
        base = Path(rule).parent if level == "TRUST_PARENT" else Path(rule)
        if target.is_relative_to(Path(os.path.realpath(base))) and len(rule) > best_len:
            best, best_len = level, len(rule)
    return best


def codex_project_trust(roots: tuple[Path, ...], codex_home: Path) -> Finding:
    """Whether Codex trusts the project at any of `roots` (its work tree, the main work tree), and so
    reads the project's `.codex/config.toml` and `.codex/hooks.json`."""
    config = codex_home / "config.toml"
    try:
        projects = _table(_codex_config(config), "projects")
    except ValueError as exc:
        return Finding(None, f"codex: cannot tell whether the project is trusted: {exc}")
    levels = [projects[str(r)].get("trust_level") for r in roots if isinstance(projects.get(str(r)), dict)]
    if "trusted" in levels:
        return Finding(True, f"codex: the project is trusted ({config})")
    state = "marked untrusted" if levels else "not trusted yet"
    return Finding(
        False,
        f"codex: {roots[0]} is {state}: Codex ignores its .codex/ (MCP server and hooks); "
        f'trust it when `codex` asks there, or set [projects."{roots[0]}"] trust_level = "trusted" in {config}',
    )


def codex_hook_review(hooks_file: Path, codex_home: Path) -> Finding:
    """Whether the user reviewed (trusted) each of our hooks in `hooks_file` as it is now."""
    config = codex_home / "config.toml"
    try:
        states = _table(_codex_config(config), "hooks", "state")
        ours = _codex_hooks(hooks_file)
    except ValueError as exc:
        return Finding(None, f"codex: cannot tell whether the hooks were reviewed: {exc}")
    verdicts = [_review_state(states.get(key), identity) for key, identity in ours]
    if not ours:
        return Finding(None, f"codex: no hivelore hook in {hooks_file}")
    if None in verdicts:
        unknown = "an entry has keys hivelore did not write"
        return Finding(None, f"codex: cannot tell whether the hooks were reviewed ({unknown}): open /hooks in `codex`")
    pending = [key.rsplit(":", 3)[1] for (key, _), verdict in zip(ours, verdicts, strict=True) if verdict != "reviewed"]
    if not pending:
        return Finding(True, f"codex: all {len(ours)} hooks reviewed")
    why = " or ".join(_WHY[v] for v in ("unreviewed", "changed", "disabled") if v in verdicts)
    return Finding(
        False,
        f"codex: {len(pending)} of {len(ours)} hooks {why} ({', '.join(pending)}): Codex skips them; "
        "review them in `codex` (/hooks), or run `codex exec --dangerously-bypass-hook-trust`",
    )


_WHY = {"unreviewed": "not reviewed", "changed": "changed since reviewed", "disabled": "disabled"}


def _review_state(state: object, identity: str | None) -> str | None:
    if identity is None:
        return None
    if not isinstance(state, dict):
        return "unreviewed"
    if state.get("enabled") is False:
        return "disabled"
    trusted = state.get("trusted_hash")
    if trusted is None:
        return "unreviewed"
    return "reviewed" if trusted == identity else "changed"


def _table(data: object, *keys: str) -> dict[str, Any]:
    """data[k1][k2]…, or {} where a level is missing or not a table (Codex ignores such entries too)."""
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _codex_config(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ValueError(f"{path} is unreadable ({exc.strerror})") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not valid TOML ({exc})") from exc


def _codex_hooks(hooks_file: Path) -> list[tuple[str, str | None]]:
    """(Codex's key, identity hash or None) for each of our hooks in a Codex hooks.json."""
    try:
        data = json.loads(hooks_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise ValueError(f"{hooks_file} cannot be read as JSON") from exc
    found = []
    for event, groups in _table(data, "hooks").items():
        for g, group in enumerate(groups if isinstance(groups, list) else []):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for h, handler in enumerate(handlers if isinstance(handlers, list) else []):
                if isinstance(handler, dict) and is_hook_command(handler.get("command")):
                    key = f"{hooks_file}:{_snake(event)}:{g}:{h}"
                    found.append((key, _identity(event, group, handler)))
    return found


def _identity(event: str, group: dict[str, Any], handler: dict[str, Any]) -> str | None:
    """The hash Codex keeps for a reviewed hook, or None for a shape we did not write (a matcher,
    a status message…), whose identity we would only guess."""
    if "matcher" in group or set(handler) - _CODEX_HASHED or handler.get("type") != "command":
        return None
    timeout = handler.get("timeout", CODEX_DEFAULT_TIMEOUT_S)
    if not isinstance(timeout, int) or isinstance(timeout, bool):
        return None
    timeout = max(timeout, 1)
    if event == "SessionEnd":
        timeout = min(timeout, CODEX_SESSION_END_TIMEOUT_S)
    is_async = bool(handler.get("async", False))
    normal = {"type": "command", "command": handler["command"], "timeout": timeout, "async": is_async}
    identity = {"event_name": _snake(event), "hooks": [normal]}
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()
