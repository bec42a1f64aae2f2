"""`hivelore graph …` (the code graph and what the team did on it) and `hivelore task …` (the tasks)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from hivelore.cli.output import EXIT_BAD_INPUT, fail, print_json, reported_errors
from hivelore.memory.service import COMMAND_NETWORK_BUDGET_S, Hivelore
from hivelore.team.coordination import Coordination
from hivelore.team.model import Conflict, TeamUnavailable

graph_app = typer.Typer(help="The code graph: symbols, calls, and who is changing what.", no_args_is_help=True)
task_app = typer.Typer(help="Tasks (intents): claims, attempts, decisions, handoff and resume.", no_args_is_help=True)
out = Console(highlight=False, soft_wrap=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON.")]
Symbol = Annotated[str, typer.Argument(help="A symbol: its id (shop/orders.py::checkout), qualified name or name.")]


@contextlib.contextmanager
def coordination() -> Iterator[Coordination]:
    # The command's network budget: in remote mode tasks, handoffs, `who-knows` and `why` are the server's.
    with reported_errors():
        service = Hivelore.open(network_budget_s=COMMAND_NETWORK_BUDGET_S, token=os.environ.get("HIVELORE_TOKEN"))
        with Coordination.for_service(service) as found:
            yield found


@graph_app.command("index")
def index(
    paths: Annotated[
        list[str] | None, typer.Argument(help="Only these files or folders (default: the whole repository).")
    ] = None,
    marker: Annotated[str | None, typer.Option(hidden=True, help="A file to remove when done.")] = None,
) -> None:
    """Parse the repository (or the given files and folders) into the code graph."""
    try:
        with coordination() as c:
            stats = c.index([os.path.abspath(p) for p in paths] if paths else None)
            root = c.root
            try:  # the edits made while the graph was missing claimed files: now they claim symbols
                c.upgrade_file_claims()
            except TeamUnavailable as exc:
                print(f"hivelore: warning: file-level claims were left as they are: {exc}", file=sys.stderr)
    finally:
        if marker:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(marker)
    for path, why in stats.skipped:
        print(f"hivelore: warning: {path} skipped: {why}", file=sys.stderr)
    if paths and not stats.parsed and len(stats.skipped) == len(paths):
        fail("nothing was indexed: name source files or folders inside the repository, or none for all of it.",
             EXIT_BAD_INPUT)  # fmt: skip
    print(
        f"indexed {root}: {stats.files:,} files ({stats.parsed:,} parsed), {stats.symbols:,} symbols, "
        f"{stats.calls:,} calls in {stats.seconds:.2f} s"
    )


@graph_app.command("export")
def export(as_json: JsonFlag = True) -> None:  # noqa: ARG001 -- `--json` is accepted; JSON is the only form
    """The graph as JSON: symbols, calls (with confidence) and imports."""
    with coordination() as c:
        print_json(c.export())


@graph_app.command("blast-radius")
def blast_radius(
    symbol: Symbol, hops: Annotated[int, typer.Option(help="Call hops.")] = 3, as_json: JsonFlag = False
) -> None:
    """What calls SYMBOL within N hops, nearest first: what an edit of it may break."""
    with coordination() as c:
        found = c.blast_radius(c.symbol(symbol), hops=hops)
    if as_json:
        print_json([{"symbol": s, "distance": d} for s, d in found])
    else:
        for s, distance in found:
            print(f"{distance}  {s}")


@graph_app.command("path")
def shortest_path(source: Symbol, target: Symbol, as_json: JsonFlag = False) -> None:
    """The shortest call chain from SOURCE to TARGET."""
    with coordination() as c:
        found = c.shortest_path(c.symbol(source), c.symbol(target))
    if as_json:
        print_json(found)
    else:
        print(" → ".join(found) if found else f"{source} does not reach {target} through calls")


@graph_app.command("hotspots")
def hotspots(limit: Annotated[int, typer.Option(help="How many.")] = 20, as_json: JsonFlag = False) -> None:
    """The symbols at the centre of the call graph (PageRank, betweenness)."""
    with coordination() as c:
        found = c.hotspots(limit)
    if as_json:
        print_json([{"symbol": s, "pagerank": p, "betweenness": b} for s, p, b in found])
    else:
        for s, pagerank, betweenness in found:
            print(f"{pagerank:.4f}  {betweenness:.4f}  {s}")


@graph_app.command("conflicts")
def conflicts(
    symbols: Annotated[list[str], typer.Argument(help="Symbols you are about to edit.")], as_json: JsonFlag = False
) -> None:
    """Other developers' active tasks that claimed code within 3 call hops of SYMBOLS."""
    with coordination() as c:
        found = c.conflicts([c.symbol(s) for s in symbols])
    if as_json:
        print_json([_conflict(x) for x in found])
    elif not found:
        print("no conflicts")
    for conflict in found:
        print(conflict.describe())


@graph_app.command("who-knows")
def who_knows(symbol: Symbol, as_json: JsonFlag = False) -> None:
    """Developers ranked by their claims, attempts and decisions on SYMBOL and its neighbours."""
    with coordination() as c:
        found = c.who_knows(c.symbol(symbol))
    rows = [
        {"developer": e.developer, "score": round(e.score, 3), "claims": e.claims, "attempts": e.attempts,
         "decisions": e.decisions}
        for e in found
    ]  # fmt: skip
    if as_json:
        print_json(rows)
        return
    for row in rows:
        print(f"{row['score']:6.2f}  {row['developer']}  ({row['claims']} claims, {row['attempts']} attempts, "
              f"{row['decisions']} decisions)")  # fmt: skip


@graph_app.command("why")
def why(symbol: Symbol, as_json: JsonFlag = False) -> None:
    """SYMBOL's current decision, the ones it superseded, the attempts on it and the people."""
    with coordination() as c:
        found = c.why(c.symbol(symbol))
    answer = {
        "symbol": found.symbol,
        "current": [d.to_dict() for d in found.current],
        "superseded": [d.to_dict() for d in found.superseded],
        "attempts": [a.to_dict() for a in found.attempts],
        "people": found.people,
    }
    if as_json:
        print_json(answer)
        return
    out.print(f"[bold]{escape(found.symbol)}[/bold]  people: {escape(', '.join(found.people) or '-')}")
    for d in found.current:
        out.print(f"  decided: {escape(d.text)} [dim]({escape(d.developer)})[/dim]")
    for d in found.superseded:
        out.print(f"  [dim]superseded: {escape(d.text)} ({escape(d.developer)})[/dim]")
    for a in found.attempts:
        out.print(f"  attempt: {escape(a.command)} → {a.outcome} {escape(', '.join(a.failed))}")


@task_app.command("list")
def task_list(as_json: JsonFlag = False) -> None:
    """The task board of this repository: each task, its owner, claims, failed attempts, last note."""
    with coordination() as c:
        cards = c.task_board()
    if as_json:
        print_json([{**card.intent.to_dict(), "claims": card.claims, "failed": card.failed,
                     "last_note": card.last_note.text if card.last_note else None} for card in cards])  # fmt: skip
        return
    if not cards:
        print("no tasks yet: a session's first edit or test run starts one")
    for card in cards:
        intent = card.intent
        out.print(f"[bold]{intent.id}[/bold] [{intent.status}] {escape(intent.title)}  [dim]{escape(intent.owner)}, "
                  f"{card.claims} claims, {card.failed} failed attempts[/dim]")  # fmt: skip


@task_app.command("create")
def create(title: Annotated[str, typer.Argument(help="What the task is, e.g. 'add JWT support'.")]) -> None:
    """Start a task explicitly (a session's first edit or test run starts one from its first prompt)."""
    with coordination() as c:
        intent = c.create_task(title)
    print(f"task {intent.id}: {intent.title} ({intent.owner})")


@task_app.command("done")
def done(task_id: Annotated[int, typer.Argument(help="The task.")]) -> None:
    """Mark a task done: its claims no longer warn anyone."""
    with coordination() as c:
        c.done(task_id)
    print(f"task {task_id} done")


@task_app.command("handoff")
def handoff(
    task_id: Annotated[int, typer.Argument(help="The task.")],
    note: Annotated[str, typer.Argument(help="Where it stands and what to do next.")],
) -> None:
    """Leave a task for someone else, with a note."""
    with coordination() as c:
        c.handoff(task_id, note)
    print(f"task {task_id} handed off; `hivelore task resume {task_id}` takes it over")


@task_app.command("resume")
def resume(task_id: Annotated[int, typer.Argument(help="The task.")], as_json: JsonFlag = False) -> None:
    """Take a task over: its claims, failed attempts, active decisions and notes, in one answer."""
    with coordination() as c:
        found = c.resume(task_id)
    answer = {
        "task": found.intent.to_dict(),
        "claims": [cl.symbol for cl in found.claims],
        "failed_attempts": [a.to_dict() for a in found.failed],
        "decisions": [d.to_dict() for d in found.decisions],
        "notes": [{"kind": n.kind, "developer": n.developer, "text": n.text} for n in found.notes],
    }
    if as_json:
        print_json(answer)
        return
    out.print(f"[bold]task {found.intent.id}: {escape(found.intent.title)}[/bold] — now yours")
    for claim in found.claims:
        out.print(f"  claim: {escape(claim.symbol)}")
    for note in found.notes:
        out.print(f"  note: {escape(note.text)}")
    for a in found.failed:
        out.print(f"  failed: {escape(a.command)} → {escape(', '.join(a.failed) or a.outcome)} ({a.count}×)")
    for d in found.decisions:
        out.print(f"  decision: {escape(d.text)}")


@task_app.command("decide")
def decide(
    text: Annotated[str, typer.Argument(help="The decision.")],
    symbols: Annotated[list[str] | None, typer.Option("--symbol", help="Code it is about (repeatable).")] = None,
    task_id: Annotated[int | None, typer.Option("--task", help="The task it belongs to.")] = None,
) -> None:
    """Record a decision about code; a newer one on the same code supersedes it (history kept)."""
    with coordination() as c:
        found = c.decide(text, [c.symbol(s) for s in symbols or []], task_id)
    print(f"decision {found.id} recorded" + (f" on {', '.join(found.symbols)}" if found.symbols else ""))


def _conflict(conflict: Conflict) -> dict[str, object]:
    return {
        "symbol": conflict.symbol,
        "claimed": conflict.claimed,
        "path": list(conflict.path),
        "developer": conflict.developer,
        "task": conflict.intent.to_dict(),
    }
