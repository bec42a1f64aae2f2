"""`hivelore install` and `uninstall`, and the agents part of `doctor`: hivelore in the agents' configs."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from hivelore.agents.hookcheck import check_hook
from hivelore.agents.install import (
    HOOK_MODES,
    Change,
    Target,
    Wired,
    apply,
    default_entry,
    plan_install,
    plan_uninstall,
    prepare_mcp,
    setup_facts,
    wiring,
)
from hivelore.agents.trust import Finding, codex_hook_review, codex_project_trust, gemini_folder_trust
from hivelore.cli.output import reported_errors
from hivelore.hooks.catalog import AGENTS
from hivelore.memory.service import Hivelore

ProjectFlag = Annotated[bool, typer.Option("--project", help="Wire into this repository's files (the default in git).")]
GlobalFlag = Annotated[bool, typer.Option("--global", help="Wire into your home's files, for every project.")]
AgentOption = Annotated[
    str, typer.Option("--agent", help="Comma-separated: claude, codex, kiro, gemini, cursor, or all.")
]
HooksOption = Annotated[
    str | None, typer.Option("--hooks", help="all, read-only (only inject lessons) or none (MCP only); default all.")
]
YesFlag = Annotated[bool, typer.Option("--yes", "-y", help="Ask nothing; take the defaults.")]

SYMBOLS = {"create": "+", "update": "~", "unchanged": "=", "remove": "-", "skip": "!"}


def install(
    project: ProjectFlag = False,
    global_: GlobalFlag = False,
    agent: AgentOption = "all",
    hooks: HooksOption = None,
    yes: YesFlag = False,
) -> None:
    """Wire hivelore (MCP server, hooks, skills) into the agents; re-running changes nothing."""
    with reported_errors():
        service = Hivelore.open(allow_off=True)  # wiring and unwiring work where hivelore is off
        asking = _asking(yes)
        where = _where(project, global_, service, asking, "Install for this project or for your user (global)")
        if asking:
            _ask_token()
        if hooks is None:
            hooks = typer.prompt("Which hooks: all, read-only or none", default="all") if asking else "all"
        target = _target(where, agent, hooks, service)
        _print(apply(plan_install(target)))
    prepared = prepare_mcp(target.entry, service.settings.home)
    if prepared.ok:
        print(prepared.line)
    else:
        print(f"hivelore: {prepared.line}", file=sys.stderr)
    for fact in setup_facts(target, as_root=hasattr(os, "geteuid") and os.geteuid() == 0):
        print(fact)
    wired = ", ".join(target.agents)
    print(
        f"hivelore is wired into {wired} ({where}); `hivelore doctor` runs each hook once and says what each agent "
        "still needs (docs/hooks.md: non-interactive set-up)."
    )


def uninstall(
    project: ProjectFlag = False,
    global_: GlobalFlag = False,
    agent: AgentOption = "all",
    hooks: HooksOption = None,
    yes: YesFlag = False,
) -> None:
    """Remove exactly what `install` added; everything else in those files stays."""
    with reported_errors():
        service = Hivelore.open(allow_off=True)  # wiring and unwiring work where hivelore is off
        where = _where(project, global_, service, _asking(yes), "Remove from this project or from your user (global)")
        target = _target(where, agent, hooks or "all", service)
        changes = apply(plan_uninstall(target))
    _print(changes)
    if not any(c.action == "remove" for c in changes):
        print(f"nothing of hivelore's was wired into {', '.join(target.agents)} ({where}).")


def agents_report(service: Hivelore) -> list[dict[str, object]]:
    """For `doctor`: per place and agent, what of hivelore is wired, and whether each hook runs."""
    report: list[dict[str, object]] = []
    for where in ("project", "global"):
        target = _target(where, "all", "all", service)
        for wired in wiring(target):
            if wired.mcp_command is None and not wired.hook_commands and not wired.skills and not wired.problem:
                continue
            cwd = target.base if where == "project" else Path.cwd()
            checks = [check_hook(command, wired.agent, event, cwd) for event, command in wired.hook_commands]
            mcp = {"file": str(wired.mcp_file), "command": list(wired.mcp_command)} if wired.mcp_command else None
            report.append(
                {
                    "agent": wired.agent,
                    "where": where,
                    "problem": wired.problem,
                    "mcp": mcp,
                    "mcp_runs": _found(wired.mcp_command[0]) if wired.mcp_command else False,
                    "hooks_file": str(wired.hooks_file),
                    "hooks": [
                        {"event": c.event, "ok": c.ok, "ms": round(c.seconds * 1000), "detail": c.detail}
                        for c in checks
                    ],
                    "skills": [str(p) for p in wired.skills],
                    "agent_state": [{"ok": f.ok, "text": f.text} for f in _agent_state(target, wired, cwd, service)],
                }
            )
    return report


def _agent_state(target: Target, wired: Wired, cwd: Path, service: Hivelore) -> list[Finding]:
    """What the agent itself decided that keeps hivelore from running: an untrusted folder, unreviewed hooks."""
    if wired.agent == "gemini":
        return [gemini_folder_trust(cwd, target.home, os.environ)]
    if wired.agent != "codex":
        return []
    codex_home = target.codex_home or target.home / ".codex"  # where Codex keeps trust, for either install
    findings = []
    if target.where == "project":
        git = service.chain.git
        roots = tuple(dict.fromkeys([target.base, *([git.project_root] if git else [])]))
        findings.append(codex_project_trust(roots, codex_home))
    if wired.hook_commands:
        findings.append(codex_hook_review(wired.hooks_file, codex_home))
    return findings


def _found(program: str) -> bool:
    """Whether the agent can start `program`: a path to a file, or a bare name on PATH."""
    return Path(program).is_file() or shutil.which(program) is not None


def _asking(yes: bool) -> bool:
    """Whether install and uninstall may ask: never with --yes, and only a person at a terminal."""
    return not yes and sys.stdin.isatty() and sys.stdout.isatty()


def _where(project: bool, global_: bool, service: Hivelore, asking: bool, question: str) -> str:
    if project and global_:
        raise ValueError("--project and --global exclude each other: choose one.")
    if project or global_:
        return "project" if project else "global"
    default = "project" if service.chain.git else "global"
    if not asking:
        return default
    answer = typer.prompt(question, default=default)
    if answer not in ("project", "global"):
        raise ValueError(f"answer 'project' or 'global', not '{answer}'.")
    return answer


def _ask_token() -> None:
    question = "Team server token (leave blank for local memory on this machine)"
    token = typer.prompt(question, default="", show_default=False, hide_input=True)  # a secret: not echoed
    if token.strip():
        print(
            "hivelore: this version has no team server yet, so memory stays local on this machine; "
            "the token was not stored.",
            file=sys.stderr,
        )


def _target(where: str, agent: str, hooks: str, service: Hivelore) -> Target:
    named = (a.strip() for a in agent.split(",") if a.strip())
    agents = AGENTS if agent.strip() == "all" else tuple(dict.fromkeys(named))  # each agent once, in order
    if not agents:
        raise ValueError(f"--agent names no agent: choose from {', '.join(AGENTS)}, or all.")
    if hooks not in HOOK_MODES:
        raise ValueError(f"--hooks must be one of {', '.join(HOOK_MODES)}, not '{hooks}'.")
    project_root = service.chain.git.root if service.chain.git else Path.cwd()
    return Target(
        where=where,
        project_root=project_root,
        home=Path.home(),
        agents=agents,
        hooks=hooks,
        entry=default_entry(),
        hivelore_home=service.settings.home,
        codex_home=Path(os.environ["CODEX_HOME"]).expanduser() if os.environ.get("CODEX_HOME") else None,
    )


def _print(changes: list[Change]) -> None:
    for change in changes:
        print(f"{SYMBOLS.get(change.action, '?')} {change.action:<9} {change.path}  {change.summary}".rstrip())
