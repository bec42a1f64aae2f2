"""`hivelore profile …`: the user's profile files, the promotions ledger, forget and compact."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from hivelore.cli.output import print_json, reported_errors
from hivelore.memory.service import Hivelore, NotFound

profile_app = typer.Typer(
    help="The user's profile: USER.md (preferences), MEMORY.md (project facts), SOUL.md (protected).",
    no_args_is_help=True,
)
out = Console(highlight=False, soft_wrap=True)

ProfileOption = Annotated[
    str | None, typer.Option("--profile", help="Profile id (default: HIVELORE_PROFILE, config, or 'default').")
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON.")]
ProtectedFlag = Annotated[bool, typer.Option("--include-protected", help="Also SOUL.md, which is protected.")]


@profile_app.command("read")
def read(
    name: Annotated[str, typer.Argument(help="USER.md, MEMORY.md or SOUL.md")],
    include_protected: ProtectedFlag = False,
    profile: ProfileOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Print one profile file."""
    with reported_errors():
        found = Hivelore.open().profile(profile)
        text = found.read(name, include_protected)
    if as_json:
        print_json({"profile": found.profile_id, "name": name, "text": text})
    else:
        print(text, end="" if text.endswith("\n") or not text else "\n")


@profile_app.command("search")
def search(
    query: Annotated[str, typer.Argument(help="Words that must all appear in a line.")],
    include_protected: ProtectedFlag = False,
    profile: ProfileOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Profile lines (and shared snippets) that contain every word of QUERY."""
    with reported_errors():
        found = Hivelore.open().profile(profile).search(query, include_protected)
    if as_json:
        print_json([{"file": file, "line": line} for file, line in found])
        return
    if not found:
        print(f"no profile line matches '{query}'")
    for file, line in found:
        out.print(f"[dim]{escape(file)}[/dim]  {escape(line)}")


@profile_app.command("forget")
def forget(
    text: Annotated[str, typer.Argument(help="The line, e.g. 'Prefer concise replies.' or 'I prefer concise replies'")],
    profile: ProfileOption = None,
) -> None:
    """Forget a promoted line: gone from its file, marked forgotten in the ledger; what was said
    before no longer counts toward promoting it again."""
    from hivelore.events.store import EventStore, EventStoreUnavailable
    from hivelore.profile.promotion import forget as forget_line

    with reported_errors():
        service = Hivelore.open()
        try:
            store = EventStore.open(str(service.settings.home))
        except EventStoreUnavailable as exc:
            print(f"hivelore: warning: {exc}; earlier sessions may still count toward promoting it.", file=sys.stderr)
            store = None
        try:
            forgotten = forget_line(store, service.profile(profile), text)
        finally:
            if store is not None:
                store.close()
        if not forgotten:
            raise NotFound(f"no profile line matches '{text}': see `hivelore profile promotions`.")
    for line in forgotten:
        print(f"forgot: {line}")


@profile_app.command("compact")
def compact(
    name: Annotated[str, typer.Argument(help="USER.md or MEMORY.md")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the diff, change nothing.")] = False,
    profile: ProfileOption = None,
) -> None:
    """Drop superseded, forgotten and duplicate lines (deterministic; a dated backup is made first)."""
    with reported_errors():
        result = Hivelore.open().profile(profile).compact(name, dry_run)
    if not result.changed:
        print(f"{name}: nothing to compact")
        return
    print(result.diff, end="" if result.diff.endswith("\n") else "\n")
    if result.applied:
        print(f"compacted {name}: {len(result.removed)} line(s) removed; backup at {result.backup}")
    else:
        print(f"dry run: {len(result.removed)} line(s) would be removed from {name}")


@profile_app.command("promotions")
def promotions(profile: ProfileOption = None, as_json: JsonFlag = False) -> None:
    """The ledger: every promoted line, its status, and the sessions that evidenced it."""
    with reported_errors():
        entries = Hivelore.open().profile(profile).promotions()
    if as_json:
        print_json(entries)
        return
    if not entries:
        print("no promotions yet: a preference said in three sessions becomes one")
    for entry in entries:
        sessions = ", ".join(entry["sessions"])
        out.print(
            f"[bold]{escape(entry['status'])}[/bold] {escape(entry['file'])}: {escape(entry['line'])}"
            f"  [dim]promoted {entry.get('promoted_at') or 'by hand'}; said in {escape(sessions) or '-'}[/dim]"
        )
