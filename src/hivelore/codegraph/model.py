"""The records of the code graph: what a parser returns for one file, and what the graph returns."""

from __future__ import annotations

from hivelore.records import record


@record
class Symbol:
    """A function, method, class or interface of the repository, present now or once."""

    id: str  # "shop/orders.py::Cart.total", "#2" appended for a second definition of the same name
    file: str  # repo-relative, with "/"
    qualname: str  # "Cart.total"
    kind: str  # "function", "method", "class" or "interface"
    line: int  # first line, decorators included (1-based)
    end_line: int
    hash: str  # of the normalised syntax tree of its own code (nested definitions count by name only)
    present: bool  # False once its definition disappeared; the row stays so history can name it


@record
class IndexStats:
    files: int  # source files of the repository in the graph
    parsed: int  # files (re)parsed by this call
    symbols: int  # present symbols
    calls: int  # call edges
    seconds: float
    skipped: list  # [(path, reason)] files that were too large or did not parse
    touched: list  # ids of the symbols that are new, changed (hash) or gone


# -- what a parser returns --------------------------------------------------------------------


@record
class Definition:
    qualname: str
    kind: str
    line: int
    end_line: int
    hash: str
    # classes: the base classes (and interfaces, embedded types) as written, dotted; Python functions:
    # their decorators, outermost first, as written (`logged`, `mod.cached`, `rule()` for a call)
    bases: tuple = ()
    # functions: the declared result type, dotted, when there is one; else, in Python, the nested
    # definition every `return` gives, or functions.IDENTITY / functions.ABSTRACT
    returns: str = ""
    arity: int = -1  # the number of parameters, where overloads need it (Java); -1 unknown or variadic


@record
class Site:
    """One call in the code of a definition.

    `receiver` is "" for a bare call `f()`, "self" for a call on the instance (`self.`, `this.`,
    `cls.`, Go's receiver, Rust's `self` and `Self::`), "super" for the base class, otherwise the
    dotted text before the name (`orders`, `shop.orders`, `Cart`, `self.repo`; Rust's `::` as ".").
    `receiver_type` says what the receiver is when it is a value: "" when it is not (resolve the
    receiver as a name), "?" when its type is unknown, a dotted type ("Cart"), a call whose
    result it is ("Cart()", "new_cart()"), or "self" for an instance of the caller's own class
    (Python's `c = cls()` in a class method)."""

    caller: int  # index of the calling definition in ParsedFile.definitions
    name: str
    receiver: str = ""
    receiver_type: str = ""
    line: int = 0
    args: int = -1  # the number of arguments, where overloads need it (Java); -1 unknown


ALIAS = "alias"  # Binding.kind of a Python name assigned another name: `_round_half_up = _round`
VALUE = "value"  # Binding.kind of a Python module-level variable of known type: `BUS = EventBus()`


@record
class Binding:
    """A name an import (or a re-export) binds in a file, or a Python module- or class-level name
    bound by an assignment, which other code reaches through the file as it reaches an import.

    `module` is the module as written ("shop.orders", "./orders", "crate::a" → "crate.a",
    "example.com/shop/tokens", "com.shop"); `name` the member imported from it, "" when the
    module itself is bound; `local` is "*" for a wildcard import. For ALIAS, `local` is the name
    ("Cart.alias" in a class body), `name` the dotted name assigned to it and `module` is ""; for
    VALUE, `name` is the variable's type as a Site's `receiver_type` writes it ("EventBus()")."""

    local: str
    module: str
    name: str = ""
    level: int = 0  # Python relative imports: the number of leading dots
    line: int = 0
    kind: str = "import"  # "import", "export" for a re-export or a default-export alias, ALIAS or VALUE


@record
class ParsedFile:
    path: str
    language: str
    definitions: list
    sites: list
    bindings: list
