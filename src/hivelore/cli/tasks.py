"""`hivelore task …` (the tasks), `hivelore graph who-knows` and `graph why`: the team's records; and
`graph push`, which sends this checkout's code graph to the team server. In
remote mode, for a repository an organisation of yours shares, they are the team server's, asked within
the command's network budget (team/coordination.py `Coordination.tasks`); apart from cli/graph.py,
whose `graph index` runs on the hook path, where no token is read."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Annotated

import typer
from rich.markup import escape

from hivelore.cli.graph import JsonFlag, Symbol, graph_app, out
from hivelore.cli.output import EXIT_BAD_INPUT, fail, print_json, reported_errors
from hivelore.memory.service import COMMAND_NETWORK_BUDGET_S, Hivelore
from hivelore.team.coordination import Coordination

task_app = typer.Typer(help="Tasks (intents): claims, attempts, decisions, handoff and resume.", no_args_is_help=True)


@contextlib.contextmanager
def coordination() -> Iterator[Coordination]:
    with reported_errors():
        service = Hivelore.open(network_budget_s=COMMAND_NETWORK_BUDGET_S, token=os.environ.get("HIVELORE_TOKEN"))
        with Coordination.for_service(service) as found:
            yield found


@graph_app.command("push")
def push(as_json: JsonFlag = False) -> None:
    """Send this checkout's code graph, as indexed, to the team server (remote mode): only what it lacks."""
    from hivelore.remote import graph as remote_graph

    with reported_errors():
        service = Hivelore.open(network_budget_s=COMMAND_NETWORK_BUDGET_S, token=os.environ.get("HIVELORE_TOKEN"))
        if service.settings.mode != "remote":
            fail('graph push sends the graph to the team server: set "mode": "remote" and its endpoint in'
                 " config.json first (docs/server.md, remote mode).", EXIT_BAD_INPUT)  # fmt: skip
        remote = service.remote
        if remote is None:
            problem = (service.remote_problem or "remote mode names no team server").rstrip(".")
            fail(f"the team server cannot be used: {problem}.", EXIT_BAD_INPUT)
        with Coordination.for_service(service) as c:
            stats, sent = remote_graph.push_checkout(remote.replica.client, c)
            repo = c.repo
    held = sent.held
    if as_json:
        print_json({"repo": repo, "indexed": stats.files if stats else None, **sent.to_dict()})
        return
    if stats is not None:
        print(f"indexed {stats.files:,} files first ({stats.symbols:,} symbols, {stats.calls:,} calls)")
    if not sent.batches:
        print(f"nothing to send: the server holds this graph of {repo}", end="")
    else:
        print(
            f"sent {sent.files:,} files ({sent.symbols:,} symbols, {sent.calls:,} calls), {sent.removed:,} removed,"
            f" in {sent.batches} requests; the server holds {repo}",
            end="",
        )
    print(f": {held.get('files', 0):,} files, {held.get('symbols', 0):,} symbols, {held.get('calls', 0):,} calls")


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
