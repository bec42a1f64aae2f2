"""`hivelore graph …`: the code graph and who is changing what on it. `graph index` runs on the hook path (a
hook starts it in the background), so this module reads nothing a hook does not pass on; the commands
that ask the team server (`task …`, `graph who-knows`, `graph why`, `graph push`) are in cli/tasks.py."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Annotated

import typer
from rich.console import Console

from hivelore.cli.output import EXIT_BAD_INPUT, fail, print_json, reported_errors
from hivelore.memory.service import Hivelore
from hivelore.team.coordination import Coordination
from hivelore.team.model import Conflict, TeamUnavailable

graph_app = typer.Typer(help="The code graph: symbols, calls, and who is changing what.", no_args_is_help=True)
out = Console(highlight=False, soft_wrap=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON.")]
Symbol = Annotated[str, typer.Argument(help="A symbol: its id (shop/orders.py::checkout), qualified name or name.")]


@contextlib.contextmanager
def coordination() -> Iterator[Coordination]:
    with reported_errors(), Coordination.for_service(Hivelore.open()) as found:
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


def _conflict(conflict: Conflict) -> dict[str, object]:
    return {
        "symbol": conflict.symbol,
        "claimed": conflict.claimed,
        "path": list(conflict.path),
        "developer": conflict.developer,
        "task": conflict.intent.to_dict(),
    }
