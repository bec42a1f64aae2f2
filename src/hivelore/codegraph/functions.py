"""Functions as values in one Python file: passed as arguments, held in variables, containers and
attributes, and called through them.

The parser records where a function goes (`apply(double, 3)`, `RULES = {"a": percent_off}`,
`self.hasher = hasher`, `@logged` passing the decorated function) and where a value is called
(`func(value)`, `RULES[kind](...)`, `self.hasher(text)`). At the end of the file each such call
becomes a call site of every function that can reach it, flow-insensitively: a parameter holds what
any call in the file passes it and its default, the callee being named (`apply(f)`), held by a
variable or a parameter (`c = apply; c(f)`, `func(g)` where `func` holds `apply`) or a method of a
value of known class (`cart.each(f)`). The same calls give an unannotated parameter a type: the one
class every call of the file passes it (`process(Order())`), or none when they differ or one passes
a value of unknown type. Values that cross files are not followed.
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
# The type of an unannotated parameter, and of an attribute of `self`, until the whole file is read:
# `<param>func:name`, `<attr>Class:name`; the parser puts the concrete type (or "?") in their place
PARAMETER_TYPE, ATTRIBUTE_TYPE = "<param>", "<attr>"


def parameter_type(function: str, name: str) -> str:
    return f"{PARAMETER_TYPE}{function}:{name}"


def attribute_type(class_q: str, name: str) -> str:
    return f"{ATTRIBUTE_TYPE}{class_q}:{name}"


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
        # (callees, argument slot, the functions given, "" or "[]" when they are the argument's items)
        self.passed: list[tuple[list[Held], int | str, list[Held], str]] = []
        self.typed: list[tuple[list[Held], int | str, str]] = []  # (callees, argument slot, its type)
        self.types: dict[str, set[str]] = {}  # parameter_type(function, name) → the types passed to it
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

    def pass_to(self, callees: list[Held], slot: int | str, held: list[Held], items: bool = False) -> None:
        """A call of what `callees` may be gives `held` as argument `slot` (or as its items)."""
        self.passed.append((callees, slot, held, "[]" if items else ""))

    def pass_type(self, callees: list[Held], slot: int | str, value_type: str) -> None:
        """A call of what `callees` may be gives a value of `value_type` ("?" unknown) as argument `slot`."""
        self.typed.append((callees, slot, value_type))

    def call(self, caller: int, held: list[Held], line: int) -> None:
        self.calls.append((caller, held, line))

    def settle(self, qualnames: set[str]) -> None:
        """Give each parameter what the file's calls pass it, once the file is read: again until
        nothing changes, as a parameter holding a function can be the callee of another call."""
        fixed: dict[tuple[int, int | str], list[tuple[str, str]]] = {}  # callees named outright: one look-up
        moving = list(self.passed)
        for _round in range(_ROUNDS):
            before = sum(map(len, self.given.values()))
            for callees, slot, held, suffix in moving:
                for function, name in self._slots(callees, slot, qualnames, fixed):
                    known = self.given.setdefault((function, name + suffix), [])
                    known.extend(h for h in held if h not in known)
            moving = [entry for entry in moving if any(h.kind != DEF for h in entry[0])]
            if not moving or sum(map(len, self.given.values())) == before:
                break
        for callees, slot, value_type in self.typed:
            for function, name in self._slots(callees, slot, qualnames, fixed):
                self.types.setdefault(parameter_type(function, name), set()).add(value_type)

    def _slots(self, callees: list[Held], slot: int | str, qualnames: set[str], fixed: dict) -> list[tuple[str, str]]:
        """The (function, parameter) pairs an argument `slot` of a call of `callees` reaches; kept in
        `fixed` when `callees` only names definitions (what parameters hold does not change them)."""
        key = (id(callees), slot)
        if key in fixed:
            return fixed[key]
        found = []
        for function in self._expand(callees, qualnames, set()):
            if function not in self.positional:  # a class: its constructor takes the arguments
                function = f"{function}.__init__"
            positional = self.positional.get(function, [])
            if isinstance(slot, int):
                name = positional[slot] if slot < len(positional) else ""
            else:
                name = slot if slot in self.keywords.get(function, ()) else ""
            if name:
                found.append((function, name))
        if all(h.kind == DEF for h in callees):
            fixed[key] = found
        return found

    def sites(self, qualnames: set[str]) -> list[Site]:
        """The call sites of the functions the calls through values reach, once settled."""
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
                method = f"{item.where[0]}.{item.name}"
                kept = self.attributes.get((item.where[0], item.name))
                if kept is None and method in qualnames:  # `self.step = self.strip`: a bound method
                    found.append(method)
                else:
                    found += self._expand(kept or [], qualnames, seen)
            else:
                found += self._expand(self.given.get((item.where[0], item.name), []), qualnames, seen)
        return found


_ROUNDS = 8  # passes through parameters: as deep a chain of functions handed on as is followed


def _qualified(where: tuple[str, ...], name: str, qualnames: set[str]) -> str:
    """The qualified name `name` has in the file seen from `where`, "" when the file defines none."""
    for prefix in where:
        if f"{prefix}.{name}" in qualnames:
            return f"{prefix}.{name}"
    return name if name in qualnames else ""
