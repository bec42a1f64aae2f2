"""The commands an agent runs on every session or failure: `search` and `context`.

They parse their own arguments with argparse instead of typer, because importing typer and
rich alone costs several times a bare Python start-up (see benchmarks/).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NoReturn

from hivelore.cli.output import print_json, print_warnings, reported_errors
from hivelore.service import Hivelore


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, like every other hivelore error, instead of argparse's usage block.
        self.exit(2, f"hivelore: {message} (see `{self.prog} --help`)\n")


def _parser(prog: str, description: str) -> argparse.ArgumentParser:
    return _Parser(prog=f"hivelore {prog}", description=description)


def search(argv: Sequence[str]) -> int:
    parser = _parser("search", "Search memories of this folder's scope chain, best first.")
    parser.add_argument("query", help="words to look for")
    parser.add_argument(
        "--scope",
        action="append",
        dest="scopes",
        metavar="SCOPE",
        help="search only this scope (repeatable); default: the folder's whole chain",
    )
    parser.add_argument("--limit", type=int, default=None, help="at most this many hits (default 10)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    with reported_errors():
        service = Hivelore.open()
        hits = service.search(args.query, args.scopes, args.limit)
        print_warnings(service)
    if args.json:
        print_json([{**h.row.memory.to_dict(), "score": round(h.score, 4), "path": str(h.row.path)} for h in hits])
    elif not hits:
        print(f"no memories match '{args.query}' in {' → '.join(service.scopes_for(args.scopes))}")
    else:
        for hit in hits:
            memory = hit.row.memory
            tags = f"  #{' #'.join(memory.tags)}" if memory.tags else ""
            print(f"{memory.address}  [{memory.kind}] score {hit.score:.2f}{tags}")
            print(f"    {' '.join(memory.value.split())}")
    return 0


def context(argv: Sequence[str]) -> int:
    parser = _parser("context", "Print the block an agent gets at session start for this folder.")
    parser.add_argument("--budget", type=int, default=None, help="character budget (default 2000)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    with reported_errors():
        if args.budget is not None and args.budget <= 0:
            raise ValueError("--budget must be a positive number of characters.")
        service = Hivelore.open()
        selection = service.context(args.budget)
        print_warnings(service)
    if args.json:
        print_json(
            {
                "scopes": service.scopes,
                "total": selection.total,
                "shown": [r.row.memory.to_dict() for r in selection.shown],
                "left_out": selection.left_out,
                "shadowed": selection.shadowed,
                "near_duplicates": selection.duplicates,
                "text": service.render_context(selection),
            }
        )
    else:
        print(service.render_context(selection))
    return 0


COMMANDS = {"search": search, "context": context}
