"""How the fast commands (`search`, `context`) read their arguments: by themselves, instead of with
typer or argparse. Importing typer and rich costs several times a bare Python start-up, and argparse
alone (with the gettext, locale and shutil it pulls in) a large share of one (see benchmarks/).
"""

from __future__ import annotations

from collections.abc import Sequence

from hivelore.cli.output import EXIT_BAD_INPUT, fail


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
