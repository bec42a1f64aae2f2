"""The commands an agent runs on every session or failure: `search` and `context`, with their own
argument parser (cli/arguments.py), never typer's.

`search` asks this home's hook server first: when it holds the model, it answers by BM25 and
meaning (cli/search.py, the same code this process runs otherwise) and this process imports no
store at all.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence

from hivelore.cli.arguments import Command
from hivelore.cli.output import print_json, print_warnings, reported_errors
from hivelore.cli.search import SEARCH, answer_search, lexical

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from hivelore.memory.service import Hivelore
    from hivelore.memory.vectors import Semantic


CONTEXT = Command(
    "context",
    "Print the block an agent gets at session start for this folder.",
    {
        "--budget": ("int", "character budget (default 2000)"),
        "--file": ("texts", "after the lessons, the history of this file's code (repeatable)"),
        "--symbol": ("texts", "after the lessons, the history of this symbol: id, qualified name or name (repeatable)"),
        "--json": ("flag", "print JSON"),
    },
)


def search(argv: Sequence[str]) -> int:
    """`hivelore search`: answered by this home's hook server when it holds the model (BM25 and meaning,
    at no cost of loading it), else here, by BM25 alone or, with `--meaning`, with the model loaded
    here."""
    args = SEARCH.parse(argv)
    if args["meaning"] and args["lexical"]:
        SEARCH.refuse("--meaning and --lexical cannot go together: give one")
    if not (args["meaning"] or args["lexical"]):
        from hivelore.hooks.client import warm_search

        answered = warm_search(list(argv), os.environ)
        if answered is not None:
            code, out, err = answered
            sys.stdout.write(out)
            sys.stderr.write(err)
            return code
    with contextlib.ExitStack() as loaded:

        def load(service: Hivelore) -> Semantic:
            return loaded.enter_context(contextlib.closing(_semantic(service)))

        return answer_search(args, load if args["meaning"] else lexical, os.environ.get("HIVELORE_TOKEN"))


def _semantic(service: Hivelore) -> Semantic:
    """The model for `--meaning`. Asked for, not assumed: a command is a cold process, so loading the
    model (about a second) and embedding what has no vector yet would land on every search; the
    MCP server, which stays up, uses it whenever the extra is installed."""
    from hivelore.memory import vectors

    if not vectors.installed():
        raise ValueError("--meaning needs the semantic extra: pip install 'hivelore[semantic]'")
    return vectors.Semantic(service.settings.home / vectors.VECTORS_FILE)


def context(argv: Sequence[str]) -> int:
    args = CONTEXT.parse(argv)
    budget = args["budget"]
    with reported_errors():
        if budget is not None and budget <= 0:
            raise ValueError("--budget must be a positive number of characters.")
        from hivelore.memory.service import COMMAND_NETWORK_BUDGET_S, Hivelore

        service = Hivelore.open(network_budget_s=COMMAND_NETWORK_BUDGET_S, token=os.environ.get("HIVELORE_TOKEN"))
        code = None
        if args["file"] or args["symbol"]:  # only then: the code graph and team.db cost the plain context nothing
            from hivelore.cli import code_history

            code = code_history.gather(service, args["file"], args["symbol"])
        selection = service.context(budget)
        print_warnings(service)
    if args["json"]:
        answer = {
            "scopes": service.scopes,
            "total": selection.total,
            "shown": [r.row.memory.to_dict() for r in selection.shown],
            "left_out": selection.left_out,
            "shadowed": selection.shadowed,
            "near_duplicates": selection.duplicates,
            "text": service.render_context(selection),
        }
        print_json(answer if code is None else {**answer, "code": code.to_json()})
    else:
        print(service.render_context(selection))
        if code is not None:
            print(f"\n{code_history.render(code, service.settings.context_line_chars)}")
    return 0


COMMANDS = {"search": search, "context": context}
