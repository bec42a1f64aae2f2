"""Record classes without importing `typing`.

`typing.NamedTuple` would do, but importing `typing` costs a noticeable share of a hook's whole
start-up budget. `@record` builds the same kind of class (a named tuple with the annotated fields,
their defaults, and the class's own methods) from a plain class body.
"""

from __future__ import annotations

from collections import namedtuple


def record(cls: type) -> type:
    """A named tuple class with `cls`'s annotated fields (in order, defaults trailing) and methods."""
    body = dict(cls.__dict__)
    fields = list(body.get("__annotations__", {}))
    defaults = [body.pop(name) for name in fields if name in body]
    base = namedtuple(cls.__name__, fields, defaults=defaults, module=cls.__module__)
    for name in ("__dict__", "__weakref__"):
        body.pop(name, None)
    body["__slots__"] = ()
    return type(cls.__name__, (base,), body)
