"""`hivelore migrate --to remote`: this machine's memories copied to the team server (remote/migration.py).

A dry run unless `--yes`: it lists what would go where and what is skipped, and why.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from hivelore.cli.output import EXIT_BAD_INPUT, EXIT_FAILED, fail, print_json, print_warnings, reported_errors
from hivelore.errors import HiveloreError
from hivelore.memory.service import Hivelore

if TYPE_CHECKING:  # loaded when the command runs, not by every command's start
    from hivelore.remote import migration
    from hivelore.remote.tier import RemoteTier

out = Console(highlight=False, soft_wrap=True)


def migrate(
    to: Annotated[str, typer.Option("--to", help="Where to copy: remote (the team server this folder names).")],
    yes: Annotated[bool, typer.Option("--yes", help="Copy for real (without it: a dry run).")] = False,
    batch: Annotated[
        int | None, typer.Option(help="Records per request to the server (default and most: 500).")
    ] = None,
    per_minute: Annotated[
        float | None, typer.Option(help="Requests a minute at most (default 60; the server's limit is per token).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Copy this machine's memories (home and project tiers) to the team server: a dry run unless --yes.
    Archived and expired memories are skipped; a second run changes nothing."""
    if to != "remote":
        fail(f"migrate copies to the team server only: pass --to remote, not --to {to}", EXIT_BAD_INPUT)
    from hivelore.remote import migration

    with reported_errors():
        pace = migration.Pace.of(batch, per_minute)
        service = Hivelore.open()
        git = service.chain.git
        remote = migration.open_remote(
            str(service.settings.home), str(git.root) if git else None, os.environ, os.environ.get("HIVELORE_TOKEN")
        )
        try:
            plan = migration.plan(service.local, remote)
            print_warnings(service)
            if not yes:
                _show_plan(remote.replica.remote.endpoint.url, plan, as_json)
                return
            report = migration.migrate(plan.items, remote.replica.client, pace)
            _resync(remote)
        finally:
            remote.close()
    _show_report(remote.replica.remote.endpoint.url, plan, report, as_json)
    if report.stopped or report.refused:
        raise typer.Exit(EXIT_FAILED)


def _resync(remote: RemoteTier) -> None:
    """Bring the mirror up to what was copied, so reads show it at once; the next command would anyway."""
    with contextlib.suppress(HiveloreError):
        remote.replica.sync()


def _show_plan(endpoint: str, plan: migration.Plan, as_json: bool) -> None:
    if as_json:
        print_json(
            {
                "dry_run": True,
                "endpoint": endpoint,
                "plan": [
                    {"address": i.memory.address, "tier": i.tier, "space": i.space, "action": i.action}
                    for i in plan.items
                ],
                "skipped": [{"address": a, "why": why} for a, why in plan.skipped],
            }
        )
        return
    counts = plan.by_space()
    where = ", ".join(f"{n} to {space}" for space, n in counts.items()) or "nothing"
    unchanged = sum(1 for i in plan.items if i.action == "unchanged")
    out.print(f"dry run for {escape(endpoint)}: would copy {escape(where)}; {unchanged} already there unchanged")
    for item in plan.items:
        out.print(f"  {item.action:<9} {escape(item.memory.address)} ({item.tier}) → {escape(item.space)}")
    out.print(f"skipped {len(plan.skipped)}")
    for address, why in plan.skipped:
        out.print(f"  {escape(address)}: {escape(why)}")
    out.print("nothing was sent: run again with --yes to copy")


def _show_report(endpoint: str, plan: migration.Plan, report: migration.Report, as_json: bool) -> None:
    if as_json:
        print_json(
            {
                "dry_run": False,
                "endpoint": endpoint,
                "copied": report.copied,
                "unchanged": report.unchanged,
                "refused": [{"address": a, "why": why} for a, why in report.refused],
                "skipped": [{"address": a, "why": why} for a, why in plan.skipped],
                "not_copied": report.not_copied,
                "stopped": report.stopped,
                "requests": report.requests,
                "waited_s": report.waited_s,
            }
        )
        return
    out.print(
        f"copied {len(report.copied)} to {escape(endpoint)}, unchanged {len(report.unchanged)}, "
        f"refused {len(report.refused)}, skipped {len(plan.skipped)}, not copied {len(report.not_copied)} "
        f"({report.requests} request{'' if report.requests == 1 else 's'})"
    )
    if report.waited_s:
        out.print(f"waited {report.waited_s:.0f} s in all for the server's rate limit")
    for address, why in report.refused:
        out.print(f"  refused {escape(address)}: {escape(why)}")
    for address, why in plan.skipped:
        out.print(f"  skipped {escape(address)}: {escape(why)}")
    for address in report.not_copied:
        out.print(f"  not copied {escape(address)}")
    if report.stopped:
        again = "run migrate again once that is dealt with: what was copied stays unchanged"
        out.print(f"stopped: {escape(report.stopped)} {again}.")
