"""Record classes without importing `typing`.

`typing.NamedTuple` would do, but importing `typing` costs a noticeable share of a hook's whole
start-up budget. `@record` builds the same kind of class (a named tuple with the annotated fields,
their defaults, and the class's own methods) from a plain class body.

Type checkers read a `@record` class as a frozen dataclass (`dataclass_transform`), so every
construction is checked. They do not see the named tuple underneath: copy a record with `replace`,
not `_replace`.

The idiom for a type that only checkers need, used across the package: `TYPE_CHECKING = False`,
then `if TYPE_CHECKING: from typing import …`. A checker treats the name as `typing.TYPE_CHECKING`
and reads the branch; at run time the branch never runs, so `typing` is never imported.
"""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar, dataclass_transform

    R = TypeVar("R")
else:

    def dataclass_transform(**_options: object) -> object:
        """`typing.dataclass_transform` at run time: only checkers read it."""
        return lambda decorator: decorator


@dataclass_transform(frozen_default=True)
def record(cls: type[R]) -> type[R]:
    """A named tuple class with `cls`'s annotated fields (in order, defaults trailing) and methods."""
    body = dict(cls.__dict__)
    fields = list(body.get("__annotations__", {}))
    defaults = [body.pop(name) for name in fields if name in body]
    # Checkers cannot follow a named tuple whose fields are known only at run time; they read the
    # dataclass_transform above instead.
    base = namedtuple(cls.__name__, fields, defaults=defaults, module=cls.__module__)  # type: ignore[misc]
    for name in ("__dict__", "__weakref__"):
        body.pop(name, None)
    body["__slots__"] = ()
    return type(cls.__name__, (base,), body)


def replace(rec: R, /, **changes: object) -> R:
    """A copy of the record `rec` with `changes` to its fields (the named tuple's `_replace`)."""
    named: Any = rec
    return named._replace(**changes)
