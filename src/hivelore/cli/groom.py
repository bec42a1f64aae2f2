"""`hivelore lint`, `dedupe`, `stats` and `diff`: grooming a vault (memory/grooming.py)."""

from __future__ import annotations

import os
import time
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from hivelore.cli.output import EXIT_FAILED, fail, print_json, print_warnings, reported_errors
from hivelore.memory import grooming
from hivelore.memory.service import COMMAND_NETWORK_BUDGET_S, Hivelore

out = Console(highlight=False, soft_wrap=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON.")]
ScopesOption = Annotated[
    list[str] | None, typer.Option("--scope", help="Only this scope (repeatable); default: the folder's chain.")
]
EverywhereFlag = Annotated[bool, typer.Option("--all", help="Every scope in the vault, not just this chain.")]


def _service() -> Hivelore:
    return Hivelore.open(network_budget_s=COMMAND_NETWORK_BUDGET_S, token=os.environ.get("HIVELORE_TOKEN"))


def _scopes(service: Hivelore, scopes: list[str] | None, everywhere: bool) -> list[str] | None:
    return service.scopes_in_vault() if everywhere else scopes


def lint(scopes: ScopesOption = None, everywhere: EverywhereFlag = False, as_json: JsonFlag = False) -> None:
    """List stale (citing code that changed or is gone), near-duplicate, malformed and volatile-key
    memories; exit 1 when there is any."""
    with reported_errors():
        service = _service()
        found = grooming.lint(service, _scopes(service, scopes, everywhere))
        print_warnings(service)
    if as_json:
        print_json(
            {
                "scopes": found.scopes,
                "memories": found.memories,
                "counts": found.counts(),
                "problems": [p.to_dict() for p in found.problems],
            }
        )
    else:
        for problem in found.problems:
            out.print(f"{problem.kind:<14} {escape(problem.address)}: {escape(problem.detail)}")
        summary = ", ".join(f"{n} {kind}" for kind, n in found.counts().items() if n) or "no problems"
        out.print(f"{found.memories} memories in {escape(' → '.join(found.scopes))}: {summary}")
    if found.problems:
        raise typer.Exit(EXIT_FAILED)


def dedupe(
    scopes: ScopesOption = None,
    everywhere: EverywhereFlag = False,
    yes: Annotated[bool, typer.Option("--yes", help="Merge for real (without it: a dry run).")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Merge near-duplicates within each scope: the keeper gets every text, tag and cite, the others
    are archived (not deleted). A dry run unless --yes."""
    with reported_errors():
        service = _service()
        done = grooming.dedupe(service, _scopes(service, scopes, everywhere), apply=yes)
        print_warnings(service)
    if as_json:
        print_json(
            {
                "dry_run": not yes,
                "merges": [m.to_dict() for m in done.merges],
                "refused": [{**m.to_dict(), "reason": why} for m, why in done.refused],
            }
        )
    else:
        verb = "merged" if yes else "would merge"
        for merge in done.merges:
            others = ", ".join(m.address for m in merge.others)
            out.print(f"{verb} {escape(others)} into {escape(merge.keeper.address)} (archiving the others)")
        for merge, why in done.refused:
            out.print(f"not merged into {escape(merge.keeper.address)}: {escape(why)}")
        if not done.merges and not done.refused:
            out.print("no near-duplicates to merge")
        elif not yes:
            out.print("dry run: nothing changed; run again with --yes to merge")
    if done.refused:
        fail(f"{len(done.refused)} merges could not be made; see why above.", EXIT_FAILED)


def stats(scopes: ScopesOption = None, everywhere: EverywhereFlag = False, as_json: JsonFlag = False) -> None:
    """Counts of the memories by scope, kind, tier and state; how many are stale or expire soon."""
    with reported_errors():
        service = _service()
        counted = grooming.stats(service, _scopes(service, scopes, everywhere))
        print_warnings(service)
    if as_json:
        print_json(counted)
        return
    hidden, stale, expiring = counted["hidden"], counted["stale"], counted["expiring_within_days"]
    assert isinstance(hidden, dict) and isinstance(stale, dict) and isinstance(expiring, dict)
    out.print(f"{counted['visible']} visible memories ({hidden['archived']} archived, {hidden['expired']} expired)")
    for part in ("by_scope", "by_kind", "by_tier", "by_state"):
        tally = counted[part]
        assert isinstance(tally, dict)
        out.print(f"{part.replace('_', ' ')}: " + escape(", ".join(f"{name} {n}" for name, n in tally.items())))
    out.print(f"citing code: {counted['citing_code']} ({', '.join(f'{n} {verdict}' for verdict, n in stale.items())})")
    out.print(f"expiring within {expiring['days']} days: {expiring['count']}")


def diff(
    a: Annotated[str | None, typer.Argument(help="A scope, e.g. repo::acme/shop.")] = None,
    b: Annotated[str | None, typer.Argument(help="Another scope, e.g. branch::acme/shop::main.")] = None,
    remote: Annotated[bool, typer.Option("--remote", help="This machine's memories against the server's.")] = False,
    show_same: Annotated[bool, typer.Option("--same", help="Also list the keys that agree.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """The keys of two scopes side by side (only in A, only in B, differing, the same), or with
    --remote this machine's copies of the chain against the team server's."""
    with reported_errors():
        if remote == (a is not None):
            raise ValueError("give two scopes (`hivelore diff A B`) or --remote, not both or neither.")
        if a is not None and b is None:
            raise ValueError("give a second scope to compare with: `hivelore diff A B`.")
        service = _service()
        if remote:
            _diff_remote(service, show_same, as_json)
            return
        assert a is not None and b is not None
        found = grooming.diff_scopes(service, a, b)
        print_warnings(service)
    shown = [d for d in found if show_same or d.mark != "same"]
    if as_json:
        counts = {mark: sum(d.mark == mark for d in found) for mark in grooming.DIFF_MARKS}
        print_json({"a": service.scopes_for([a])[0], "b": service.scopes_for([b])[0], "counts": counts,
                    "keys": [d.to_dict() for d in shown]})  # fmt: skip
        return
    for entry in shown:
        texts = [m for m in (entry.a, entry.b) if m is not None]
        out.print(f"{entry.mark:<8} {escape(entry.key)}")
        for side, memory in zip(("a", "b"), (entry.a, entry.b), strict=True):
            if memory is not None and (entry.mark != "same" or side == "a") and texts:
                out.print(f"    {side}: {escape(' '.join(memory.value.split())[:100])}")
    same = sum(d.mark == "same" for d in found)
    out.print(f"{len(found)} keys: {len(found) - same} differ or are on one side only, {same} the same")


def _diff_remote(service: Hivelore, show_same: bool, as_json: bool) -> None:
    if service.settings.mode != "remote":
        out.print("remote mode is not configured here, so there is no team server to compare with (docs/server.md).")
        return
    remote = service.remote
    if remote is None:
        fail(f"the team server cannot be read: {service.remote_problem}.", EXIT_FAILED)
    from hivelore.remote import sides

    pairs = sides.compare(service.local, remote, service.scopes)
    state = sides.mirror_state(remote, time.time())
    print_warnings(service)
    shown = [p for p in pairs if show_same or p.mark != "both"]
    if as_json:
        print_json({"remote": state, "keys": [{"scope": p.scope, "key": p.key, "mark": p.mark} for p in shown]})
        return
    for pair in shown:
        out.print(f"{pair.mark:<11} {escape(pair.scope)}::{escape(pair.key)}")
    out.print(f"{len(pairs)} keys, {sum(p.mark == 'both' for p in pairs)} the same here and on the server")
