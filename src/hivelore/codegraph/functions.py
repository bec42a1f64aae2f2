"""Functions as values in one Python file: passed as arguments, held in variables, containers and
attributes, and called through them.

The parser records where a function goes (`apply(double, 3)`, `RULES = {"a": percent_off}`,
`self.hasher = hasher`, `@logged` passing the decorated function) and where a value is called
(`func(value)`, `RULES[kind](...)`, `self.hasher(text)`). At the end of the file each such call
becomes a call site of every function that can reach it, flow-insensitively: a parameter holds what
any call in the file passes it and its default. Values that cross files are not followed.
"""

from __future__ import annotations

from typing import NamedTuple

from hivelore.codegraph.model import Site

DEFINITION = "<def>"  # Site.receiver_type: the definition named, as a value (not through its decorators)
RESULT = "<result>"  # Site.receiver_type: the call calls what calling `receiver.name` returns
DECORATED = "<decorated>"  # Site.receiver_type: the functions decorated by `receiver.name` (its first parameter)
IDENTITY = "<arg>"  # Definition.returns: the function returns its first argument (a registering decorator)
ABSTRACT = "<abstract>"  # Definition.returns: the method only raises NotImplementedError (or is `...`)
# Callables of the standard library that call the function they are given, from the caller's frame
CALLS_ARGUMENT = {"map": 0, "filter": 0, "reduce": 0, "functools.reduce": 0}
CALLS_KEY = frozenset({"sorted", "min", "max", "sort", "heapq.nsmallest", "heapq.nlargest"})

DEF, ATTRIBUTE, PARAMETER = "def", "attr", "param"


class Held(NamedTuple):
    """A function a value may be. DEF: a name as written (`where`: the qualified names it may be
    nested in, innermost first); ATTRIBUTE: what attribute `name` of class `where[0]` holds;
    PARAMETER: what parameter `name` of function `where[0]` is given."""

    kind: str
    where: tuple[str, ...]
    name: str

    @staticmethod
    def definition(where: tuple[str, ...], name: str) -> Held:
        return Held(DEF, where, name)


class FunctionValues:
    def __init__(self) -> None:
        self.positional: dict[str, list[str]] = {}  # function qualname → positional parameters (no self)
        self.keywords: dict[str, set[str]] = {}
        self.given: dict[tuple[str, str], list[Held]] = {}  # (function, parameter) → what it is given
        self.attributes: dict[tuple[str, str], list[Held]] = {}  # (class, attribute or "attr[]") → held
        self.passed: list[tuple[tuple[str, ...], str, int | str, list[Held]]] = []
        self.calls: list[tuple[int, list[Held], int]] = []  # (caller index, what it calls, line)

    def parameters(self, qualname: str, positional: list[str], keyword_only: list) -> None:
        self.positional[qualname] = positional
        self.keywords[qualname] = set(positional) | {a.arg for a in keyword_only}

    def is_parameter(self, qualname: str, name: str) -> bool:
        return name in self.keywords.get(qualname, ())

    def hold_parameter(self, qualname: str, name: str, held: list[Held]) -> None:
        self.given.setdefault((qualname, name), []).extend(held)

    def hold_attribute(self, class_q: str, name: str, held: list[Held]) -> None:
        self.attributes.setdefault((class_q, name), []).extend(held)

    def holds_attribute(self, class_q: str, name: str) -> bool:
        return (class_q, name) in self.attributes

    def pass_to(self, where: tuple[str, ...], callee: str, slot: int | str, held: list[Held]) -> None:
        """A call of `callee` (as written, seen from `where`) gives `held` as argument `slot`."""
        self.passed.append((where, callee, slot, held))

    def call(self, caller: int, held: list[Held], line: int) -> None:
        self.calls.append((caller, held, line))

    def sites(self, qualnames: set[str]) -> list[Site]:
        """The call sites of the functions the calls through values reach, once the file is read."""
        for where, callee, slot, held in self.passed:
            function = _qualified(where, callee, qualnames)
            if function and function not in self.positional:  # a class: its constructor takes the arguments
                function = f"{function}.__init__"
            positional = self.positional.get(function, [])
            if isinstance(slot, int):
                name = positional[slot] if slot < len(positional) else ""
            else:
                name = slot if slot in self.keywords.get(function, ()) else ""
            if name:
                self.hold_parameter(function, name, held)
        found: dict[tuple[int, str, str, int], Site] = {}
        for caller, held, line in self.calls:
            for target in self._expand(held, qualnames, set()):
                receiver, _, name = target.rpartition(".")
                found.setdefault((caller, name, receiver, line), Site(caller, name, receiver, DEFINITION, line))
        return list(found.values())

    def _expand(self, held: list[Held], qualnames: set[str], seen: set[Held]) -> list[str]:
        """The names (qualified in the file when defined in it, else as written) `held` comes to."""
        found = []
        for item in held:
            if item in seen:
                continue
            seen.add(item)
            if item.kind == DEF:
                found.append(_qualified(item.where, item.name, qualnames) or item.name)
            elif item.kind == ATTRIBUTE:
                found += self._expand(self.attributes.get((item.where[0], item.name), []), qualnames, seen)
            else:
                found += self._expand(self.given.get((item.where[0], item.name), []), qualnames, seen)
        return found


def _qualified(where: tuple[str, ...], name: str, qualnames: set[str]) -> str:
    """The qualified name `name` has in the file seen from `where`, "" when the file defines none."""
    for prefix in where:
        if f"{prefix}.{name}" in qualnames:
            return f"{prefix}.{name}"
    return name if name in qualnames else ""
