"""The typer application: every command except the fast ones is defined here."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from hivelore import __version__
from hivelore.cli import agents, fast
from hivelore.cli.dashboard import dashboard
from hivelore.cli.graph import graph_app
from hivelore.cli.groom import dedupe, diff, lint, stats
from hivelore.cli.migrate import migrate
from hivelore.cli.output import EXIT_BAD_INPUT, EXIT_FAILED, fail, print_json, print_warnings, reported_errors
from hivelore.cli.profile import profile_app
from hivelore.cli.remote import exported, org_app, remote_app, token_app
from hivelore.cli.serve import serve
from hivelore.cli.tasks import task_app
from hivelore.config import Settings
from hivelore.home import home_path
from hivelore.hooks.client import server_state, stop_server
from hivelore.memory.model import Memory, looks_like_address, parse_address
from hivelore.memory.service import ALREADY_COMMITTED, COMMAND_NETWORK_BUDGET_S, Hivelore
from hivelore.memory.transfer import ImportRecord

if TYPE_CHECKING:  # the remote modules load only in remote mode
    from hivelore.remote import sides
    from hivelore.remote.tier import RemoteTier

app = typer.Typer(
    name="hivelore",
    help="Memory for AI coding agents: lessons as plain Markdown files, indexed in SQLite.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
index_app = typer.Typer(help="The SQLite index (derived from the files; safe to rebuild).", no_args_is_help=True)
app.add_typer(index_app, name="index")
app.add_typer(profile_app, name="profile")
app.add_typer(graph_app, name="graph")
app.add_typer(task_app, name="task")
hook_server_app = typer.Typer(
    help="The resident process that answers hook events for this HIVELORE_HOME (see docs/hooks.md).",
    no_args_is_help=True,
)
app.add_typer(hook_server_app, name="hook-server")
app.command(name="serve")(serve)
app.command(name="dashboard")(dashboard)
app.command(name="migrate")(migrate)
app.command(name="lint")(lint)
app.command(name="dedupe")(dedupe)
app.command(name="stats")(stats)
app.command(name="diff")(diff)
app.add_typer(remote_app, name="remote")
app.add_typer(org_app, name="org")
app.add_typer(token_app, name="token")

out = Console(highlight=False, soft_wrap=True)
TierOption = Annotated[
    str | None, typer.Option(help="home or project: the copy in that tier (default: project tier first).")
]

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON.")]
ScopesOption = Annotated[
    list[str] | None, typer.Option("--scope", help="Only this scope (repeatable); default: the folder's chain.")
]

_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def _service(allow_off: bool = False) -> Hivelore:
    return Hivelore.open(
        network_budget_s=COMMAND_NETWORK_BUDGET_S, token=os.environ.get("HIVELORE_TOKEN"), allow_off=allow_off
    )


def _show(memory: Memory) -> None:
    out.print(f"[bold]{escape(memory.address)}[/bold]  [dim]{memory.kind}, {memory.state}[/dim]")
    out.print(escape(memory.value))
    details = [f"seen {memory.seen_count}×", f"updated {memory.updated}"]
    if memory.tags:
        details.append("tags " + ", ".join(memory.tags))
    if memory.expires_at:
        details.append(f"expires {memory.expires_at}")
    if memory.archived_at:
        details.append(f"archived {memory.archived_at}")
    out.print(f"[dim]{escape(' · '.join(details))}[/dim]")


@app.callback(invoke_without_command=True)
def _root(version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False) -> None:
    if version:
        print(f"hivelore {__version__}")
        raise typer.Exit()


def _address(address: str) -> tuple[str, str]:
    scope, key = parse_address(address)
    return str(scope), key


@app.command()
def write(
    address: Annotated[str, typer.Argument(help="SCOPE::KEY, e.g. repo::acme/checkout::tests-need-local-postgres")],
    value: Annotated[str, typer.Argument(help="What was learned; '-' reads it from stdin.")],
    tags: Annotated[str, typer.Option(help="Comma-separated tags.")] = "",
    kind: Annotated[str | None, typer.Option(help="lesson, fact, decision or note (default lesson).")] = None,
    ttl_days: Annotated[float | None, typer.Option(help="Hide it after this many days.")] = None,
    staged: Annotated[bool, typer.Option("--staged", help="Stage it instead of committing it.")] = False,
    tier: Annotated[str | None, typer.Option(help="home or project (default: project tier if it exists).")] = None,
    cites: Annotated[
        list[str] | None,
        typer.Option("--cites", help="A symbol (id, qualified name or name) or file it is about (repeatable)."),
    ] = None,
    when: Annotated[
        str | None,
        typer.Option(
            help="The symptoms in plain words, as someone hitting this would put it: two or three, each worded"
            " differently, separated by ';'. Searched too."
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Write a memory (a re-write of the same key updates it and bumps seen_count). A lesson or a
    decision also cites the symbols and files its text names, so reads can tell when they change."""
    with reported_errors():
        scope, key = _address(address)
        text = sys.stdin.read() if value == "-" else value
        service = _service()
        result = service.write(
            scope,
            key,
            text,
            tags=[t for t in tags.split(",") if t.strip()],
            kind=kind,
            ttl_days=ttl_days,
            state="staged" if staged else "committed",
            tier=tier,
            cites=cites or [],
            when=when,
        )
        print_warnings(service)
    if as_json:
        print_json(
            {**result.memory.to_dict(), "path": str(result.path), "tier": result.tier, "created": result.created}
        )
        return
    verb = "wrote" if result.created else f"updated (seen {result.memory.seen_count}×)"
    revived = " — it was archived or expired and is visible again" if result.revived else ""
    out.print(f"{verb} {escape(result.memory.address)} → {escape(str(result.path))}{revived}")
    if result.memory.cites:
        out.print(f"cites {escape(', '.join(result.memory.cites))}")


@app.command()
def read(
    address: Annotated[str, typer.Argument(help="SCOPE::KEY, or a bare KEY resolved along the folder's chain.")],
    as_json: JsonFlag = False,
) -> None:
    """Print one memory in full."""
    with reported_errors():
        service = _service()
        # A bare key (which may itself contain "::") resolves along the folder's chain.
        memory = service.read(*_address(address)) if looks_like_address(address) else service.resolve(address)
        print_warnings(service)
    if as_json:
        print_json(memory.to_dict())
    else:
        _show(memory)


@app.command(name="list")
def list_(
    scopes: ScopesOption = None,
    everywhere: Annotated[bool, typer.Option("--all", help="Every scope in the vault, not just this chain.")] = False,
    include_hidden: Annotated[bool, typer.Option("--include-hidden", help="Also archived and expired.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """List memories grouped by scope, narrowest first; in remote mode, this machine's and the team
    server's side by side."""
    started = time.time()
    with reported_errors():
        service = _service()
        chosen = service.scopes_in_vault() if everywhere else scopes
        if service.remote is not None:
            _list_sides(
                service,
                service.remote,
                service.scopes_for(chosen) if chosen or not everywhere else [],
                include_hidden,
                started,
                as_json,
            )
            return
        grouped = service.list(chosen, include_hidden=include_hidden) if chosen or not everywhere else {}
        print_warnings(service)
    if as_json:
        print_json({scope: [m.to_dict() for m in memories] for scope, memories in grouped.items()})
        return
    if not grouped:
        out.print(f"no memories in {escape(' → '.join(scopes or service.scopes))}")
    for scope, memories in grouped.items():
        out.print(f"[bold]{escape(scope)}[/bold] ({len(memories)})")
        for m in memories:
            out.print(f"  {escape(m.key)}{_hidden(m)}: {escape(_line(m.value))}")


def _hidden(memory: Memory) -> str:
    return " [dim](archived)[/dim]" if memory.archived_at else " [dim](expired)[/dim]" if memory.is_expired() else ""


def _line(value: str) -> str:
    return " ".join(value.split())[:100]


def _list_sides(
    service: Hivelore, remote: RemoteTier, chosen: list[str], include_hidden: bool, started: float, as_json: bool
) -> None:
    """Remote mode: each key with its copies here and on the team server, marked local-only,
    remote-only, both (the same text) or differs; and as of when the server's side is."""
    from hivelore.remote import sides

    pairs = sides.compare(service.local, remote, chosen, include_hidden)
    state = sides.mirror_state(remote, started)
    print_warnings(service)
    grouped: dict[str, list[sides.Pair]] = {}
    for pair in pairs:
        grouped.setdefault(pair.scope, []).append(pair)
    if as_json:
        print_json({"remote": state, "scopes": {s: [_pair_json(p) for p in ps] for s, ps in grouped.items()}})
        return
    out.print(_freshness(state))
    if not grouped:
        out.print(f"no memories in {escape(' → '.join(chosen))}")
    for scope, found in grouped.items():
        out.print(f"[bold]{escape(scope)}[/bold] ({len(found)})")
        for pair in found:
            out.print(f"  [bold]{pair.mark:<11}[/bold] {escape(pair.key)}")
            for side, copies in (("local", pair.local), ("remote", pair.remote)):
                for where, m in copies:
                    out.print(f"      {side} {escape(where)}{_hidden(m)}: {escape(_line(m.value))}")


def _freshness(state: dict[str, Any]) -> str:
    if state["live"]:
        when = f"live (synced {state['synced_seconds_ago']:.0f} s ago)"
    elif state["synced_at"]:
        when = f"not answering: its side is as of {state['synced_at']} ({state['synced_seconds_ago']:.0f} s ago)"
    else:
        when = "not answering, and never synced: its side is empty here"
    waiting = f"; {state['outbox_waiting']} changes wait in the outbox" if state["outbox_waiting"] else ""
    return f"team server {escape(state['endpoint'])}: {escape(when)}{waiting}"


def _pair_json(pair: sides.Pair) -> dict[str, object]:
    return {
        "key": pair.key,
        "mark": pair.mark,
        "local": [{"tier": where, "memory": m.to_dict()} for where, m in pair.local],
        "remote": [{"space": where, "memory": m.to_dict()} for where, m in pair.remote],
    }


@app.command()
def tree(scopes: ScopesOption = None, as_json: JsonFlag = False) -> None:
    """Per key, the copy that wins (narrowest scope) and the copies it shadows."""
    with reported_errors():
        service = _service()
        entries = service.tree(scopes)
        print_warnings(service)
    if as_json:
        print_json(
            {
                "scopes": service.scopes_for(scopes),
                "keys": [
                    {"key": e.key, "winner": e.winner.to_dict(), "shadowed": [m.to_dict() for m in e.shadowed]}
                    for e in entries
                ],
            }
        )
        return
    out.print(" → ".join(escape(s) for s in service.scopes_for(scopes)))
    for entry in entries:
        out.print(f"{escape(entry.key)}")
        out.print(f"  [green]✓ {escape(str(entry.winner.scope))}[/green]: {escape(entry.winner.value[:80])}")
        for shadow in entry.shadowed:
            out.print(f"  [dim]  shadowed: {escape(str(shadow.scope))}: {escape(shadow.value[:80])}[/dim]")


@app.command()
def forget(
    address: Annotated[str | None, typer.Argument(help="SCOPE::KEY: the memory to delete.")] = None,
    session: Annotated[
        str | None, typer.Option(help="Instead: remove what hooks captured from this session (any agent's).")
    ] = None,
    before: Annotated[
        str | None, typer.Option(help="Instead: remove what hooks captured before this date (UTC), e.g. 2026-11-30.")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="With --session/--before: count, remove nothing.")] = False,
    tier: TierOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Delete a memory's file; or, with --session or --before, what hooks captured (prompts, failures,
    staged notes, profile evidence, claims), leaving memories written on purpose."""
    if address is None and session is None and before is None:
        fail("name what to forget: a memory (SCOPE::KEY), --session ID or --before DATE.", EXIT_BAD_INPUT)
    if address is not None and (session is not None or before is not None):
        fail(
            "forget either a memory (SCOPE::KEY) or what a session captured (--session/--before), not both.",
            EXIT_BAD_INPUT,
        )
    if address is None:
        if tier is not None:
            fail("--tier picks the copy of a memory (SCOPE::KEY); --session/--before cover both tiers.", EXIT_BAD_INPUT)
        _forget_captured(session, before, dry_run, as_json)
        return
    if dry_run:
        fail("--dry-run goes with --session or --before; forgetting one memory has no dry run.", EXIT_BAD_INPUT)
    with reported_errors():
        service = _service(allow_off=True)
        path = service.forget(*_address(address), tier=tier)
        print_warnings(service)
    if as_json:
        print_json({"forgotten": address, "path": str(path)})
    else:
        out.print(f"forgot {escape(address)} (deleted {escape(str(path))})")


def _forget_captured(session: str | None, before: str | None, dry_run: bool, as_json: bool) -> None:
    from hivelore.events.captured import forget_captured, parse_before

    with reported_errors():
        cutoff = parse_before(before) if before is not None else None
        service = _service(allow_off=True)
        found = forget_captured(service, session, cutoff, dry_run)
        print_warnings(service)
    if as_json:
        print_json(
            {"session": session, "before": before, "dry_run": dry_run, "counts": found.counts, "notes": found.notes}
        )
        return
    what = f"in session {session}" if session is not None else f"before {before}"
    verb = "would remove" if dry_run else "removed"
    kinds = ", ".join(f"{count} {kind}" for kind, count in found.counts.items() if count)
    out.print(f"{verb} what hooks captured {escape(what)}: {escape(kinds) if kinds else 'nothing was there'}")
    for note in found.notes:
        out.print(f"  [dim]staged note {escape(note)}[/dim]")


@app.command()
def archive(
    address: Annotated[str, typer.Argument(help="SCOPE::KEY")], tier: TierOption = None, as_json: JsonFlag = False
) -> None:
    """Hide a memory from reads; the file stays until purged."""
    with reported_errors():
        service = _service()
        memory = service.archive(*_address(address), tier=tier)
        print_warnings(service)
    if as_json:
        print_json(memory.to_dict())
    else:
        out.print(f"archived {escape(memory.address)}")


@app.command()
def restore(
    address: Annotated[str, typer.Argument(help="SCOPE::KEY")], tier: TierOption = None, as_json: JsonFlag = False
) -> None:
    """Make an archived or expired memory visible again."""
    with reported_errors():
        service = _service()
        memory = service.restore(*_address(address), tier=tier)
        print_warnings(service)
    if as_json:
        print_json(memory.to_dict())
    else:
        out.print(f"restored {escape(memory.address)}")


@app.command()
def commit(
    addresses: Annotated[
        list[str] | None, typer.Argument(help="SCOPE::KEY (repeatable); none: every staged memory of the chain.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Turn staged memories (such as a session's notes) committed; report what was not, and why."""
    with reported_errors():
        parsed = [_address(a) for a in addresses or []]  # all parsed before any is committed
        service = _service()
        report = service.commit(parsed)
        print_warnings(service)
    if as_json:
        print_json(
            {
                "committed": [m.address for m in report.committed],
                "not_committed": [{"address": n.address, "reason": n.reason} for n in report.not_committed],
            }
        )
    else:
        if not report.committed and not report.not_committed:
            out.print("nothing staged to commit")
        for memory in report.committed:
            out.print(f"committed {escape(memory.address)}")
        for refused in report.not_committed:
            out.print(f"not committed {escape(refused.address)}: {escape(refused.reason)}")
    missed = [n for n in report.not_committed if n.reason != ALREADY_COMMITTED]
    if missed:  # part of what was asked did not happen: a script must learn it
        fail(f"{len(missed)} of the memories asked for {'was' if len(missed) == 1 else 'were'} not committed; "
             "see why above.", EXIT_FAILED)  # fmt: skip


@app.command()
def purge(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list what would be deleted.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Delete the files of archived and expired memories in this folder's chain."""
    with reported_errors():
        gone = _service().purge(dry_run=dry_run)
    if as_json:
        print_json({"dry_run": dry_run, "purged": [m.address for m in gone]})
        return
    verb = "would delete" if dry_run else "deleted"
    out.print(f"{verb} {len(gone)} archived or expired memories")
    for memory in gone:
        out.print(f"  {escape(memory.address)}")


def _jsonl_records(path: Path) -> tuple[list[ImportRecord], list[str], int]:
    """The records of a JSONL file, a reason for each line that cannot be one, and how many lines
    were team rows (`export --remote`'s `{"team": …}` lines: the team server's, not memories)."""
    records, unreadable, team_rows = [], [], 0
    handle = sys.stdin if str(path) == "-" else path.open(encoding="utf-8")
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            source = f"{path}:{number}"
            try:
                data = json.loads(line)
                if isinstance(data, dict) and "team" in data:
                    team_rows += 1
                    continue
                records.append(ImportRecord.from_json(data, source))
            except ValueError as exc:  # JSONDecodeError is a ValueError too
                unreadable.append(str(exc) if str(exc).startswith(source) else f"{source}: not valid JSON ({exc})")
    return records, unreadable, team_rows


def _lorekit_records(root: Path) -> tuple[list[ImportRecord], list[str]]:
    from hivelore.memory.imports.common import Skip
    from hivelore.memory.imports.lorekit import records

    found = list(records(root.expanduser()))
    kept = [item for item in found if isinstance(item, ImportRecord)]
    return kept, [f"{item.source}: {item.reason}" for item in found if isinstance(item, Skip)]


def _print_mapping(records: list[ImportRecord], addresses: list[str], repo_scope: str) -> None:
    """Where each memory goes (scope, kind) and where it came from: what a dry run is for."""
    if repo_scope:  # LoreKit's lessons name their own scopes
        out.print(f"[dim]this repository's files go to {escape(repo_scope)}; the user's own to global[/dim]")
    by_address = {f"{r.scope}::{r.key}": r for r in records}
    lines = [
        f"  {escape(address)}  [dim]{found.kind} ← {escape(found.source)}[/dim]"
        for address in addresses
        if (found := by_address.get(address)) is not None
    ]
    if lines:  # one print: rich's per-call cost was most of a large dry run's listing time
        out.print("\n".join(lines))


@app.command(name="import")
def import_(
    file: Annotated[
        Path | None,
        typer.Argument(
            help="A JSONL file (one memory per line) or '-' for stdin; with --from, the file or folder to read "
            "instead of that tool's usual places."
        ),
    ] = None,
    from_source: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="Import another tool's memory: claude-code, codex, basic-memory, claude-mem, kiro or lorekit.",
        ),
    ] = None,
    from_lorekit: Annotated[Path | None, typer.Option(help="Import a LoreKit store, e.g. ~/.lorekit.")] = None,
    skip_invalid: Annotated[bool, typer.Option(help="Import the valid records and list the rejected.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Validate only and list what goes where; write nothing.")
    ] = False,
    tier: Annotated[str | None, typer.Option(help="home or project.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Import memories; every record passes the same checks as a write. One bad record: nothing written."""
    with reported_errors():
        if from_source is not None and from_lorekit is not None:
            fail("give either --from SOURCE or --from-lorekit DIR, not both.", EXIT_BAD_INPUT)
        if from_source is None and (file is None) == (from_lorekit is None):
            fail("give a JSONL file, --from SOURCE [PATH] or --from-lorekit DIR.", EXIT_BAD_INPUT)
        service = _service()
        repo_scope, team_rows = "", 0
        if from_source is not None:
            from hivelore.memory.imports import collect
            from hivelore.memory.imports.common import place_for

            place = place_for(service.chain, Path.cwd(), Path.home())
            repo_scope = "" if from_source == "lorekit" else place.repo_scope
            records, unreadable = collect(from_source, file, place)
        elif from_lorekit is not None:
            records, unreadable = _lorekit_records(from_lorekit)
        else:
            records, unreadable, team_rows = _jsonl_records(file)  # type: ignore[arg-type]
        report = service.import_records(
            records, skip_invalid=skip_invalid, dry_run=dry_run, tier=tier, unreadable=unreadable
        )
    if as_json:
        print_json(
            {"dry_run": dry_run, "written": report.written, "unchanged": report.unchanged, "rejected": report.rejected}
            | ({"records": _records_shown(records)} if from_source is not None else {})
            | ({"team_rows_skipped": team_rows} if team_rows else {})
        )
    else:
        verb = "would write" if dry_run else "wrote"
        out.print(f"{verb} {len(report.written)}, unchanged {len(report.unchanged)}, rejected {len(report.rejected)}")
        if from_source is not None:
            _print_mapping(records, report.written, repo_scope)
        if team_rows:
            out.print(f"skipped {team_rows} team rows (the team server's tasks and claims: import reads memories)")
        for reason in report.rejected:
            print(f"  rejected {reason}", file=sys.stderr)
    if report.rejected and not skip_invalid:
        nothing = "nothing would be imported" if dry_run else "nothing was imported"
        fail(f"{nothing} because of the rejected records above: fix them or pass --skip-invalid.", EXIT_BAD_INPUT)


def _records_shown(records: list[ImportRecord]) -> list[dict[str, str]]:
    return [{"address": f"{r.scope}::{r.key}", "kind": r.kind, "source": r.source, **r.provenance} for r in records]


@app.command()
def export(
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")] = None,
    include_hidden: Annotated[bool, typer.Option("--include-hidden", help="Also archived and expired.")] = False,
    remote: Annotated[
        bool, typer.Option("--remote", help="Export what you own on the team server instead of this machine.")
    ] = False,
) -> None:
    """Print every memory as JSONL (the format `import` reads)."""
    with reported_errors():
        team: list[dict[str, object]] = []
        if remote:
            records, team = exported(include_hidden)
            lines = [json.dumps(record, ensure_ascii=False) + "\n" for record in [*records, *team]]
        else:
            service = _service()
            lines = [json.dumps(m.to_dict(), ensure_ascii=False) + "\n" for m in service.export(include_hidden)]
            print_warnings(service)
        if output is not None and output.is_dir():
            raise ValueError(f"{output} is a folder: give a file name for the export.")
        if output is None:
            sys.stdout.writelines(lines)
        else:
            tmp = output.with_name(f".{output.name}.tmp")
            tmp.write_text("".join(lines), encoding="utf-8")
            tmp.replace(output)
            rows = f" and {len(team)} team rows" if team else ""
            out.print(f"exported {len(lines) - len(team)} memories{rows} to {escape(str(output))}")


@app.command()
def scopes(as_json: JsonFlag = False) -> None:
    """This folder's scope chain, and every scope that holds memories."""
    with reported_errors():
        service = _service()
        counts = service.scope_counts()
    if as_json:
        print_json({"chain": service.scopes, "scopes": counts})
        return
    out.print("chain: " + " → ".join(escape(s) for s in service.scopes))
    for scope, count in counts.items():
        out.print(f"  {escape(scope)}: {count}")


@app.command(context_settings=_PASS_THROUGH, add_help_option=False)
def search(ctx: typer.Context) -> None:
    """Search memories of this folder's scope chain, best first (see `hivelore search --help`)."""
    raise typer.Exit(fast.search(ctx.args))


@app.command(context_settings=_PASS_THROUGH, add_help_option=False)
def context(ctx: typer.Context) -> None:
    """The block an agent gets at session start: budgeted, with what was left out."""
    raise typer.Exit(fast.context(ctx.args))


@index_app.command("status")
def index_status(as_json: JsonFlag = False) -> None:
    """Health of the index: rows, integrity, skipped files."""
    with reported_errors():
        status = _service().index_status()
    if as_json:
        print_json(status)
        return
    for name, value in status.items():
        if name == "skipped_files" and isinstance(value, list):
            out.print(f"skipped_files: {len(value)}")
            for line in value:
                out.print(f"  {escape(line)}")
        else:
            out.print(f"{name}: {escape(str(value))}")


@index_app.command("rebuild")
def index_rebuild(as_json: JsonFlag = False) -> None:
    """Re-read every memory file into a fresh index."""
    with reported_errors():
        stats = _service().rebuild_index()
    if as_json:
        print_json(
            {
                "files": stats.files,
                "indexed": stats.indexed,
                "seconds": round(stats.seconds, 3),
                "swept": {"temp_files": stats.swept.files, "bytes": stats.swept.bytes},
                "skipped": [f"{s.path}: {s.reason}" for s in stats.skipped],
            }
        )
        return
    out.print(f"indexed {stats.indexed:,} of {stats.files:,} files in {stats.seconds:.2f} s")
    if stats.swept.files:
        out.print(f"removed {stats.swept.files:,} temp files ({stats.swept.bytes:,} bytes) left by killed writers")
    for skip in stats.skipped:
        print(f"hivelore: warning: {skip.reason}", file=sys.stderr)


@index_app.command("path")
def index_path() -> None:
    """Print where the index lives."""
    with reported_errors():
        print(_service().index_path)


@app.command()
def doctor(as_json: JsonFlag = False) -> None:
    """The resolved mode and what decided it, the store paths, the index's health, and per agent what
    is wired (each hook command is run once with a sample payload); in remote mode, the mirror of the
    team server: as of when, whether the server answered, what waits in the outbox; and the replica
    of the team's claims the pre-edit check reads, as of when."""
    started = time.time()
    with reported_errors():
        service = _service(allow_off=True)
        git = service.chain.git
        swept = _sweep(service)  # before the index's refresh, which sweeps the folders it lists on its own
        report: dict[str, Any] = {  # JSON: each part its own shape
            "version": __version__,
            "mode": service.settings.mode,
            "mode_decided_by": service.settings.mode_source,
            "off": service.settings.off_message() if service.settings.off else None,
            "home": str(service.settings.home),
            "home_decided_by": "HIVELORE_HOME" if "HIVELORE_HOME" in os.environ else "default (~/.hivelore)",
            "project_tier": str(service.project.root) if service.project else None,
            "config_files": [str(p) for p in service.settings.config_files],
            "settings": _settings_report(service.settings),
            "chain": service.scopes,
            "chain_remark": service.chain.remark,
            "git": {"root": str(git.root), "origin": git.remote_url, "branch": git.branch, "commit": git.commit}
            if git
            else None,
            "index": service.index_status(),
            "swept": swept,
            "hook_server": server_state(str(service.settings.home), os.environ),
            "team_server": _team_server_report(service),
            "remote_mirror": _mirror_report(service, started),
            "team_claims": _team_claims_report(service),
            "agents": agents.agents_report(service),
        }
    if as_json:
        print_json(report)
        return
    for name, value in report.items():
        if name == "agents":
            _print_agents(report["agents"])
        elif name in ("chain_remark", "off"):
            if value:
                out.print(f"  [yellow]{escape(value)}[/yellow]")
        elif name == "settings":
            out.print("[bold]settings[/bold]")
            for key, setting in value.items():
                out.print(f"  {key}: {escape(str(setting['value']))}  [dim]set by {escape(setting['set_by'])}[/dim]")
        elif isinstance(value, dict):
            out.print(f"[bold]{name}[/bold]")
            for sub, subvalue in value.items():
                out.print(f"  {sub}: {escape(str(subvalue))}")
        else:
            out.print(f"[bold]{name}[/bold]: {escape(str(value))}")


def _team_server_report(service: Hivelore) -> dict[str, object] | str:
    """Which team server this folder names, what decided it, where the token comes from, and (when a
    repository names a server the user has not approved) why the token is withheld."""
    from hivelore.remote import credentials

    git = service.chain.git
    found = credentials.resolve(
        str(service.settings.home), str(git.root) if git else None, os.environ, token=os.environ.get("HIVELORE_TOKEN")
    )
    if found is None:
        return "none named (see docs/server.md)"
    report: dict[str, object] = {
        "endpoint": found.endpoint.url,
        "decided_by": found.endpoint_source,
        "token": found.token_source,
    }
    if found.withheld():
        report["withheld"] = found.withheld()
    return report


def _mirror_report(service: Hivelore, started: float) -> dict[str, object] | str:
    from hivelore.remote import sides

    if service.settings.mode != "remote":
        return "none (local mode)"
    remote = service.remote
    if remote is None:
        return {"problem": service.remote_problem}
    return sides.mirror_state(remote, started)


def _team_claims_report(service: Hivelore) -> dict[str, object] | str:
    """In remote mode, the replica of the team's claims the pre-edit check reads, and its age."""
    if service.settings.mode != "remote" or service.remote is None:
        return "none (local mode)" if service.settings.mode != "remote" else "none (the team server cannot be used)"
    from hivelore.team.coordination import Coordination

    with Coordination.for_service(service) as coordination:
        return coordination.shared_state()


def _sweep(service: Hivelore) -> dict[str, int]:
    """Remove the temp files writers killed mid-write left in the tiers and the profile (only hivelore's own
    names, only older than a minute), and say how many and how large."""
    swept = service.sweep()
    files, size = service.profile().sweep()
    return {"temp_files": swept.files + files, "bytes": swept.bytes + size}


def _settings_report(settings: Settings) -> dict[str, dict[str, object]]:
    """Each setting's value and the file or variable that set it (a repository may only narrow limits)."""
    return {key: {"value": getattr(settings, key), "set_by": source} for key, source in settings.decided_by}


def _print_agents(found: list[dict]) -> None:
    out.print("[bold]agents[/bold]" + ("" if found else ": none wired (run `hivelore install`)"))
    for entry in found:
        problem = f"  [red]{escape(entry['problem'])}[/red]" if entry["problem"] else ""
        out.print(f"  [bold]{entry['agent']}[/bold] ({entry['where']}){problem}")
        mcp = entry["mcp"]
        if mcp:
            runs = "[green]ok[/green]" if entry["mcp_runs"] else "[red]command missing[/red]"
            out.print(f"    mcp: {escape(' '.join(mcp['command']))} ({escape(mcp['file'])}) {runs}")
        for hook in entry["hooks"]:
            state = "[green]ok[/green]" if hook["ok"] else "[red]FAILED[/red]"
            out.print(f"    hook {hook['event']}: {state} {hook['ms']} ms, {escape(hook['detail'])}")
        if entry["skills"]:
            out.print(f"    skills: {len(entry['skills'])}")
        for finding in entry["agent_state"]:
            colour = {True: "green", False: "red"}.get(finding["ok"], "yellow")
            out.print(f"    [{colour}]{escape(finding['text'])}[/{colour}]")


@hook_server_app.command("status")
def hook_server_status() -> None:
    """Whether a hook server runs for this HIVELORE_HOME, since when, and how many events it answered."""
    print(server_state(home_path(os.environ), os.environ))


@hook_server_app.command("stop")
def hook_server_stop() -> None:
    """Stop the hook server of this HIVELORE_HOME (the next hook event starts a new one)."""
    print("stopped" if stop_server(home_path(os.environ)) else "no hook server was running")


app.command()(agents.install)
app.command()(agents.uninstall)


@app.command()
def mcp(
    prepare: Annotated[
        bool,
        typer.Option("--prepare", help="Keep the SDK's handshake answers for a fast first start, then exit."),
    ] = False,
) -> None:
    """Run the MCP server on stdio."""
    from hivelore.mcp import stdio

    if prepare:
        import os

        from hivelore.home import home_path

        versions = stdio.prepare(home_path(os.environ))
        print(f"prepared the MCP handshake for protocol versions {', '.join(versions)}")
        return
    stdio.main()
