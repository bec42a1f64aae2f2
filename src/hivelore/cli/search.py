"""`hivelore search` once its arguments are read: what the command and the hook server both run
(`answer_search`), so that a search answered by the server prints what the command prints. Nothing
here reads the environment's HIVELORE_TOKEN, which the hook server is never given: the command
passes it.
"""

from __future__ import annotations

from hivelore.cli.arguments import Command
from hivelore.cli.output import print_json, print_warnings, reported_errors

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from collections.abc import Callable

    from hivelore.memory.service import Hivelore, Pool
    from hivelore.memory.vectors import Semantic

    Ranker = Callable[[Hivelore], Semantic | None]

SEARCH = Command(
    "search",
    "Search memories of this folder's scope chain, best first.",
    {
        "--scope": ("texts", "search only this scope (repeatable); default: the folder's whole chain"),
        "--limit": ("int", "at most this many hits (default 10)"),
        "--meaning": ("flag", "also by meaning, loading the model here (the semantic extra; about a second)"),
        "--lexical": ("flag", "by words alone (BM25), even when the hook server could answer by meaning"),
        "--json": ("flag", "print JSON"),
    },
    positional="query",
)


def answer_search(args: dict, ranker: Ranker, token: str | None, pool: Pool | None = None) -> int:
    """`hivelore search` once its arguments are parsed, ranking by meaning too with what `ranker` gives
    for the service (None: BM25 alone), reading the team server with `token` in remote mode: the
    command and the hook server both answer through this, so an answer by either prints the same.
    `pool`: the SQLite connections the hook server keeps between its answers."""
    from hivelore.memory.service import COMMAND_NETWORK_BUDGET_S, Hivelore

    query, scopes, limit = args["query"], args["scope"] or None, args["limit"]
    with reported_errors():
        service = Hivelore.open(network_budget_s=COMMAND_NETWORK_BUDGET_S, token=token, pool=pool)
        try:
            service.semantic = ranker(service)
            hits = service.search(query, scopes, limit)
            print_warnings(service)
        finally:
            service.close()
    if args["json"]:
        print_json(
            [
                {**h.row.memory.to_dict(), "score": round(h.score, 4), "path": str(h.row.path), "stale": h.note}
                for h in hits
            ]
        )
    elif not hits:
        print(f"no memories match '{query}' in {' → '.join(service.scopes_for(scopes))}")
    else:
        for hit in hits:
            memory = hit.row.memory
            tags = f"  #{' #'.join(memory.tags)}" if memory.tags else ""
            stale = f"  [{hit.note}]" if hit.note else ""
            print(f"{memory.address}  [{memory.kind}] score {hit.score:.2f}{tags}{stale}")
            print(f"    {' '.join(memory.value.split())}")
    return 0


def lexical(service: Hivelore) -> None:
    """The ranker of a search by BM25 alone."""
    return None
