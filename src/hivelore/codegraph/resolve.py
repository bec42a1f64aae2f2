"""Call resolution: which symbols a call site in a definition's code reaches, with a confidence.

The confidences (docs/codegraph.md has the rules in full):

    1.0  exact: a definition in scope (nested, same file, same Go/Java package), an import
         (`from x import f`, `import x as y`, relative imports, ES imports, `require`, `use`, Go and
         Java imports, followed through re-exports), a method of `self`/`this`/`cls`/`super` found
         in the class or its bases within the repository, a module attribute (`mod.f`), a static
         call on a known class (`Cart.create`), and instantiation (the class and its constructor)
    0.9  as exact, but reached through a wildcard import (`from x import *`, `use super::*`)
    0.8  a method on a value whose class is known from an annotation, a typed declaration, an
         assignment from an instantiation (`c = Cart()`, `c = cls()`), or a function's declared
         return type; also on a module-level variable of known class seen from another module
         (`notify.BUS.publish()`, `from notify import BUS`)
    0.6  by name only, with exactly one candidate in the caller's directory
    0.5  by name only, with exactly one candidate in the repository (same language)
    0.3  by name only, with two or three candidates: one edge to each

A Python alias (`_round_half_up = _round`, a class-body `alias = method`) reaches what the name it
was assigned meant on that line, with the confidence the name itself has.

A name that is known but not in the repository (an import of another package, a builtin, a method
of a standard container on a value of unknown type) gives no edge; names with more than three
candidates give none either. Resolution only reads: a `Source` (the store) answers lookups.
"""

from __future__ import annotations

import os
import sys

from hivelore.codegraph.functions import ABSTRACT, DECORATED, DEFINITION, IDENTITY, RESULT
from hivelore.codegraph.languages import BUILTINS, COMMON_METHODS, CONSTRUCTOR, family_of
from hivelore.codegraph.model import ALIAS, VALUE
from hivelore.records import replace

EXACT, STAR, TYPED, SAME_DIR, UNIQUE, AMBIGUOUS = 1.0, 0.9, 0.8, 0.6, 0.5, 0.3
MAX_CANDIDATES = 3
_MAX_DEPTH = 6  # re-exports and base classes followed this deep
_JS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")


class Module:
    """A module, package or namespace: the files whose top-level definitions are its members.

    `base` is what submodules hang under (a Python package path, a Java package folder, a Rust
    module file); `prefix` is the qualified-name prefix of a Rust inline `mod` in `files`."""

    __slots__ = ("family", "files", "base", "prefix")

    def __init__(self, family: str, files: list[str], base: str = "", prefix: str = "") -> None:
        self.family, self.files, self.base, self.prefix = family, files, base, prefix


class Instance:
    """A Python module-level value of a class in the repository, reached as any value of known class
    is (TYPED): a variable (`BUS = EventBus()`), whose members are those of `classes`, or a method
    bound to one (`checked_call = _maker.checked_call`), which calling reaches (`calls`). Calling a
    variable, its `__call__`, is not followed."""

    __slots__ = ("classes", "calls")

    def __init__(self, classes: list, calls: list | None = None) -> None:
        self.classes = classes
        self.calls = calls or []


EXTERNAL = "external"  # known, and not in the repository


class Resolver:
    """Resolves call sites against one repository's symbols. Lookups are memoised: make a new
    resolver for each batch of changes."""

    def __init__(self, source) -> None:
        self.source = source
        self.files = set(source.files())
        self.dirs: dict[str, list[str]] = {}
        for path in sorted(self.files):
            self.dirs.setdefault(os.path.dirname(path), []).append(path)
        self._named: dict[str, list] = {}
        self._in_file: dict[str, dict[str, list]] = {}
        self._bindings: dict[str, list] = {}
        self._hierarchy: dict[int, list] = {}
        self._instances: dict[tuple[str, int, str], object] = {}
        self._bound: dict[str, dict[str, list]] = {}
        self._decorated: dict[int, list] = {}
        self._mros: dict[int, list] = {}
        self._combined: dict[int, list] = {}
        self._base_names: dict[str, dict[str, list]] = {}
        self._decorations: dict[int, list] = {}  # decorator's key → the functions it decorates
        self._python_modules: dict[str, list[str]] | None = None
        self._rust_modules: dict[tuple[str, tuple[str, ...]], str] | None = None

    # -- lookups, memoised ------------------------------------------------------------------------

    def named(self, name: str) -> list:
        rows = self._named.get(name)
        if rows is None:
            rows = self._named[name] = self.source.named(name)
        return rows

    def in_file(self, path: str) -> dict[str, list]:
        by_qualname = self._in_file.get(path)
        if by_qualname is None:
            by_qualname = self._in_file[path] = {}
            for row in self.source.in_file(path):
                by_qualname.setdefault(row.qualname, []).append(row)
        return by_qualname

    def bindings(self, path: str) -> list:
        rows = self._bindings.get(path)
        if rows is None:
            rows = self._bindings[path] = self.source.bindings(path)
        return rows

    def bound(self, path: str) -> dict[str, list]:
        """The file's bindings by local name ("*" for wildcards), each list in source order."""
        by_local = self._bound.get(path)
        if by_local is None:
            by_local = self._bound[path] = {}
            for binding in self.bindings(path):
                by_local.setdefault(binding.local, []).append(binding)
        return by_local

    # -- one call site ------------------------------------------------------------------------------

    def resolve(self, caller, site) -> dict[int, float]:
        """The symbols (keys) a call site reaches, each with its confidence."""
        found: dict[int, float] = {}
        for row, confidence in _overloads(self._resolve(caller, site), site.args):
            # calling a decorated function calls what its decorators made of it, unless the site is
            # the wrapper calling the function it was given
            for reached in [row] if site.receiver_type in (DEFINITION, DECORATED) else self.decorated(row):
                found[reached.key] = max(confidence, found.get(reached.key, 0.0))
        return found

    def _resolve(self, caller, site) -> list[tuple]:
        family = family_of(caller.file)
        name, receiver, receiver_type = site.name, site.receiver, site.receiver_type
        if receiver_type == DEFINITION:
            return self._definition(caller, site)
        if receiver_type == RESULT:
            return self._result(caller, site)
        if receiver_type == DECORATED:
            return self._decorated_by(caller, site)
        if not receiver:
            if family == "java":  # a bare name in Java is a method of the enclosing class first
                found = self._enclosing_members(caller, name)
                if found:  # a method, or a nested class (with its constructor)
                    return self.edges(found, EXACT)
            target, confidence = self.lookup(caller, name, line=site.line)
            if target is None:
                if name in BUILTINS.get(family, ()) or family in ("go", "java"):
                    return []
                return self._by_name(caller, name, methods=False)
            return self.edges(target, confidence)
        if receiver in ("self", "super"):
            cls = self.enclosing_class(caller)
            if cls is None:
                return []
            if name == "<new>":
                return self.edges([cls], EXACT)
            classes = self.hierarchy(cls)
            if name == "<init>":
                classes = classes[1:2] if receiver == "super" else classes[:1]
                return _edges(self.constructors(classes[0]) if classes else [], EXACT)
            if family != "python":
                return _edges(self._first_members(classes[1:] if receiver == "super" else classes, name), EXACT)
            if receiver == "super":
                return _edges(self._after_in_mro(cls, name), EXACT)
            return self._with_overrides(cls, name, self._first_members(classes, name))
        if receiver_type == "?":
            return self._by_name(caller, name, methods=True)
        if receiver_type:
            kind, classes = self.value_class(caller, receiver_type)
            if kind == "unknown":
                return self._by_name(caller, name, methods=True)
            found = [m for cls in classes for m in self._first_members(self.hierarchy(cls), name)]
            return _edges(found, TYPED)
        target, confidence = self.resolve_dotted(caller, receiver, site.line)
        if target is None or target == EXTERNAL:
            return []
        if isinstance(target, Instance):  # `notify.BUS.publish()`: a method of a value whose class is known
            confidence = min(confidence, TYPED)
        return self.edges(self.member(target, name), confidence)

    # -- Python functions as values (hivelore.codegraph.functions) ----------------------------------

    def _definition(self, caller, site) -> list[tuple]:
        """A function a value held (`apply(double)`, `RULES[kind]()`): named by its qualified name in
        the caller's file, or as written there. Never guessed by name."""
        qualname = f"{site.receiver}.{site.name}" if site.receiver else site.name
        rows = self.in_file(caller.file).get(qualname)
        if rows:
            return self.edges(rows, EXACT)
        if site.receiver:
            target, confidence = self.resolve_dotted(caller, site.receiver, site.line)
            return self.edges(self.member(target, site.name), confidence)
        return self.edges(*self.lookup(caller, site.name, line=site.line))

    def _result(self, caller, site) -> list[tuple]:
        """`with_tax(0.2)(10)`: the nested definitions the functions called return."""
        called = self._definition(caller, replace(site, receiver_type=DEFINITION))
        return [(row, confidence) for function, confidence in called for row in self._returns(function)]

    def _decorated_by(self, caller, site) -> list[tuple]:
        """`func(*args)` in a decorator `logged(func)` (or its wrapper): the functions of the
        repository decorated with `@logged`, in any file."""
        qualname = f"{site.receiver}.{site.name}" if site.receiver else site.name
        found = []
        for decorator in self.in_file(caller.file).get(qualname, []):
            known = self._decorations.get(decorator.key)
            if known is None:
                known = self._decorations[decorator.key] = self._decorated_with(decorator)
            found += known
        return _edges(found, EXACT)

    def _decorated_with(self, decorator) -> list:
        """What `decorator` is given: each function it decorates, or, under `@outer @inner`, the
        wrapper the decorators below it made of the function (`outer` is given `inner`'s wrapper)."""
        rows = []
        for row in self._by_base_name("decorated", decorator.name):  # those naming it, then those meaning it
            scope = replace(row, qualname=row.qualname.rpartition(".")[0])
            names = row.bases.split("\n")
            for position, name in enumerate(names):
                target, _ = self.resolve_dotted(scope, name) if not name.endswith("()") else (None, 0)
                if isinstance(target, list) and any(t.key == decorator.key for t in target):
                    given = [row]
                    for inner in reversed(names[position + 1 :]):
                        made = self._decorator(scope, inner)
                        given = made if made and made != IDENTITY else given
                    rows += given
                    break
        return rows

    def _returns(self, function) -> list:
        """The nested definition a Python function returns, when it says which (Definition.returns)."""
        if function.kind not in ("function", "method") or not function.returns or function.returns == IDENTITY:
            return []
        target, _ = self.resolve_dotted(function, function.returns)
        if not isinstance(target, list):
            return []
        return [row for row in _in_effect(target) if row.kind in ("function", "method")]

    def decorated(self, row) -> list:
        """What calling a Python function reaches once decorated (its bases hold its decorators,
        outermost first): the wrapper a decorator of the repository returns; the function itself
        when the decorators return it (`IDENTITY`), or are not the repository's or say nothing."""
        if not row.bases or row.kind not in ("function", "method") or family_of(row.file) != "python":
            return [row]
        known = self._decorated.get(row.key)
        if known is not None:
            return known
        self._decorated[row.key] = [row]  # while it resolves, so that a decorator decorating itself ends
        scope = replace(row, qualname=row.qualname.rpartition(".")[0])
        reached = [row]
        for decorator in row.bases.split("\n"):
            made = self._decorator(scope, decorator)
            if made != IDENTITY:
                reached = made or [row]
                break
        self._decorated[row.key] = reached
        return reached

    def _decorator(self, scope, decorator: str):
        """What a decorator returns for the function: IDENTITY, the wrappers, or [] when unknown."""
        target, _ = self.resolve_dotted(scope, decorator.removesuffix("()"))
        if not isinstance(target, list):
            return []
        functions = [r for r in _in_effect(target) if r.kind == "function"]
        if decorator.endswith("()"):  # `@rule("x")`: the decorator is what `rule` returns
            functions = [made for factory in functions for made in self._returns(factory)]
        if functions and all(f.returns == IDENTITY for f in functions):
            return IDENTITY
        return [made for f in functions for made in self._returns(f)]

    # -- Python's method resolution order and overrides ----------------------------------------------

    def _with_overrides(self, cls, name: str, found: list) -> list[tuple]:
        """`self.name()` in a Python class: the method it finds (EXACT), and the overrides of it in the
        repository's subclasses (TYPED: `self` may be one). A method that only raises
        NotImplementedError (ABSTRACT) is left out when an override exists."""
        overrides = []
        for method in self.named(name):
            owner = self.enclosing_class(method) if method.kind == "method" else None
            if owner is None or owner.key == cls.key or method in found or family_of(owner.file) != "python":
                continue
            if any(base.key == cls.key for base in self.hierarchy(owner)[1:]):
                overrides.append(method)
        if overrides:
            found = [m for m in found if m.returns != ABSTRACT]
        return _edges(found, EXACT) + _edges(overrides, TYPED)

    def _after_in_mro(self, cls, name: str) -> list:
        """`super().name()` in a Python class: the next definition after it in the method resolution
        order of the class and of each class of the repository that names it among several bases
        (`class D(B, C)` makes `super()` in B reach C)."""
        found: dict[int, object] = {}
        for sub in [cls, *self._combining(cls)]:
            order = self.mro(sub)
            at = next((i for i, c in enumerate(order) if c.key == cls.key), len(order))
            for method in self._first_members(order[at + 1 :], name):
                found[method.key] = method
        return list(found.values())

    def _combining(self, cls) -> list:
        """The classes that name `cls` among several bases and have it in their resolution order."""
        known = self._combined.get(cls.key)
        if known is None:
            rows = self._by_base_name("multiple_bases", cls.name)
            known = self._combined[cls.key] = [
                sub for sub in rows if sub.key != cls.key and any(c.key == cls.key for c in self.mro(sub))
            ]
        return known

    def _by_base_name(self, rows: str, name: str) -> list:
        """Python classes with several bases (rows "multiple_bases"), or decorated functions
        ("decorated"), one of whose bases (decorators) is called `name`. Read once per resolver."""
        index = self._base_names.get(rows)
        if index is None:
            index = self._base_names[rows] = {}
            for row in getattr(self.source, rows)():
                if family_of(row.file) == "python":
                    for base in {b.removesuffix("()").rpartition(".")[2] for b in row.bases.split("\n")}:
                        index.setdefault(base, []).append(row)
        return index.get(name, [])

    def mro(self, cls) -> list:
        """The C3 linearisation of a class over the bases the repository defines (breadth-first
        `hierarchy` when they have no consistent order)."""
        known = self._mros.get(cls.key)
        if known is not None:
            return known
        self._mros[cls.key] = [cls]  # while it is computed: a cycle ends
        bases = self._bases(cls)
        sequences = [list(self.mro(base)) for base in bases] + [list(bases)]
        order = [cls]
        while True:
            sequences = [s for s in sequences if s]
            if not sequences:
                break
            head = next(
                (s[0] for s in sequences if not any(s[0].key in {c.key for c in t[1:]} for t in sequences)), None
            )
            if head is None:
                order = self.hierarchy(cls)
                break
            order.append(head)
            sequences = [s[1:] if s[0].key == head.key else s for s in sequences]
        self._mros[cls.key] = order
        return order

    def edges(self, target, confidence: float) -> list[tuple]:
        """What calling `target` reaches: a function or method, or a class and its constructor."""
        if target is None or target == EXTERNAL:
            return []
        if isinstance(target, Instance):
            return _edges(_in_effect(target.calls), min(confidence, TYPED))
        if isinstance(target, Module):  # `const Cart = require("./cart"); new Cart()`
            return self.edges(self.member(target, "default"), confidence)
        found = []
        for row in _in_effect(target):
            found.append(row)
            if row.kind == "class":
                found.extend(self.constructors(row, inherited=True))
        return _edges(found, confidence)

    def constructors(self, cls, inherited: bool = False) -> list:
        family = family_of(cls.file)
        name = CONSTRUCTOR.get(family)
        if not name:
            return []
        if family == "java":  # named after the class, and not inherited
            return self.members(cls, cls.name)
        return self._first_members(self.hierarchy(cls) if inherited else [cls], name)

    # -- names in scope ---------------------------------------------------------------------------

    def lookup(self, caller, name: str, depth: int = 0, line: int = 0):
        """What a bare name means in the caller's code (at `line`, when known): (target, confidence),
        or (None, 0) when nothing in the repository or its imports defines it."""
        family = family_of(caller.file)
        symbols = self.in_file(caller.file)
        qualname = caller.qualname
        while qualname:  # the enclosing definitions, innermost first; a class body is not a scope
            rows = symbols.get(f"{qualname}.{name}")
            is_class = any(r.kind in ("class", "interface") for r in symbols.get(qualname, ()))
            if rows and (not is_class or family == "java"):
                return rows, EXACT
            qualname = qualname.rpartition(".")[0]
        rows = symbols.get(name)
        if rows:
            return rows, EXACT
        if family in ("go", "java"):  # the package is the folder
            rows = self._in_dir(os.path.dirname(caller.file), name, caller.file)
            if rows:
                return rows, EXACT
        bound = self.bound(caller.file)
        if name in bound:
            return self.resolve_binding(caller, self._binding_at(caller, bound[name], line), depth), EXACT
        for binding in reversed(bound.get("*", ())):
            module = self.module_for(caller, binding)
            if isinstance(module, Module):
                target = self.member(module, name, depth + 1)
                if target is not None and target != EXTERNAL:
                    return target, STAR
        return None, 0.0

    def _binding_at(self, caller, bindings: list, line: int):
        """Of the bindings of one name, the one the caller's code sees: its own Python import when it
        has one (an import between its first line and the call's is inside it, and shadows a
        module-level assignment of the name), else the file's last."""
        if line and family_of(caller.file) == "python":
            own = [b for b in bindings if caller.line <= b.line <= line]
            if own:
                return own[-1]
        return bindings[-1]

    def resolve_dotted(self, caller, text: str, line: int = 0):
        """What `a.b.c` names in the caller's code (at `line`, when known): (target, confidence)."""
        head, *rest = text.split(".")
        confidence = EXACT
        if head == "self":
            cls = self.enclosing_class(caller)
            target = [cls] if cls is not None else None
        elif head in ("crate", "$self", "$super") and family_of(caller.file) == "rust":
            target = self._rust_module(caller, [head])
        else:
            target, confidence = self.lookup(caller, head, line=line)
            if target is None and family_of(caller.file) == "rust":
                target = self._rust_module(caller, ["$self", head])  # a child module, `mod x;`
        for segment in rest:
            if target is None or target == EXTERNAL:
                break
            target = self.member(target, segment)
        return target, confidence

    def resolve_binding(self, caller, binding, depth: int = 0):
        if binding.kind == ALIAS:
            return self._aliased(caller.file, binding, depth)
        if binding.kind == VALUE:
            return self._instance(caller.file, binding)
        module = self.module_for(caller, binding)
        if module is None or module == EXTERNAL or not binding.name:
            return module
        return self.member(module, binding.name, depth + 1) or EXTERNAL

    def value_class(self, caller, receiver_type: str) -> tuple[str, list]:
        """The class of a value: ("class", rows), ("unknown", []) when nothing tells, ("external",
        []) when it is a type from outside the repository."""
        if receiver_type.endswith("()"):
            target, _ = self.resolve_dotted(caller, receiver_type[:-2])
            if isinstance(target, Module):
                target = self.member(target, "default")
            if target is None or isinstance(target, Instance):  # what a module-level value returns is not followed
                return "unknown", []
            if target == EXTERNAL:
                return "external", []
            rows = _in_effect(target)
            classes = [r for r in rows if r.kind in ("class", "interface")]
            if classes:
                return "class", classes
            returns = [(r, r.returns) for r in rows if r.returns and not r.returns.startswith("<")]
            if not returns:
                return "unknown", []
            target, _ = self.resolve_dotted(returns[0][0], returns[0][1])
        else:
            target, _ = self.resolve_dotted(caller, receiver_type)
        if isinstance(target, Module):  # `const Cart = require("./cart")`: the module's default export
            target = self.member(target, "default")
        if target is None or target == EXTERNAL or isinstance(target, Instance):
            return "external", []
        classes = [r for r in target if r.kind in ("class", "interface")]
        return ("class", classes) if classes else ("external", [])

    # -- Python names bound by assignment: aliases and module-level variables ----------------------

    def _aliased(self, path: str, binding, depth: int):
        """What `alias = other.attr` binds at module or class level: `other` as it was bound on that
        line, then its attributes; EXTERNAL (no edge) when that is a builtin or not known."""
        if depth > _MAX_DEPTH:
            return EXTERNAL
        head, *rest = binding.name.split(".")
        cls = binding.local.rpartition(".")[0]  # a class body sees its own names first, then the module's
        target = self._bound_before(path, f"{cls}.{head}", binding.line, depth) if cls else None
        if target is None:
            target = self._bound_before(path, head, binding.line, depth)
        for segment in rest:
            found = self.member(target, segment, depth + 1)
            # a method of a module-level value stays a value's method: reached as typed, not exact
            target = Instance([], found) if isinstance(target, Instance) and found else found
        return EXTERNAL if target is None else target

    def _bound_before(self, path: str, qualname: str, line: int, depth: int):
        """What a module- or class-level name means to the code at that level on `line`: the latest
        definition or binding above it. A later `def` of the same name has not run yet, unlike for the
        code of a function, which sees the last one (`lookup`)."""
        rows = [r for r in self.in_file(path).get(qualname, ()) if r.line < line]
        latest = max(rows, key=lambda r: r.line) if rows else None
        bindings = [b for b in self.bound(path).get(qualname, ()) if b.line < line]
        if bindings and (latest is None or bindings[-1].line > latest.line):
            return self.resolve_binding(FileScope(path), bindings[-1], depth + 1)
        return [latest] if latest is not None else None

    def _instance(self, path: str, binding):
        """A module-level variable: an Instance of its class, or EXTERNAL (as any name that is not a
        definition of the repository) when its class is not one. Memoised: many sites reach one."""
        key = (path, binding.line, binding.local)
        found = self._instances.get(key)
        if found is None:
            self._instances[key] = EXTERNAL  # while its type resolves, so that `a = b()`, `b = a()` ends
            kind, classes = self.value_class(FileScope(path), binding.name)
            found = self._instances[key] = Instance(classes) if kind == "class" else EXTERNAL
        return found

    def _class_alias(self, cls, qualname: str) -> list:
        """The definitions a class-body alias (`alias = method`, `qualname` "Cart.alias") names: the
        last one, as the class's methods see it."""
        if family_of(cls.file) != "python":
            return []
        aliases = self.bound(cls.file).get(qualname)
        target = self._aliased(cls.file, aliases[-1], 0) if aliases else None
        return target if isinstance(target, list) else []

    # -- members ------------------------------------------------------------------------------------

    def member(self, target, name: str, depth: int = 0):
        """`target.name`: a member of a class (own or inherited) or of a module."""
        if target is None or target == EXTERNAL or depth > _MAX_DEPTH:
            return target if target == EXTERNAL else None
        if isinstance(target, Module):
            return self._module_member(target, name, depth)
        if isinstance(target, Instance):
            classes = target.classes
        else:
            classes = [row for row in target if row.kind in ("class", "interface")]
        found = [m for cls in classes for m in self._first_members(self.hierarchy(cls), name)]
        return found or None

    def members(self, cls, name: str) -> list:
        """The members named `name` defined in the class itself."""
        qualname = f"{cls.qualname}.{name}"
        family = family_of(cls.file)
        rows = [r for r in self.named(name) if r.qualname == qualname]
        same_file = [r for r in rows if r.file == cls.file]
        if same_file or family not in ("go", "rust"):
            return same_file or self._class_alias(cls, qualname)
        if family == "go":  # methods may be declared in any file of the package
            return [r for r in rows if os.path.dirname(r.file) == os.path.dirname(cls.file)]
        return [r for r in rows if family_of(r.file) == "rust"]

    def _first_members(self, classes: list, name: str) -> list:
        for cls in classes:
            found = self.members(cls, name)
            if found:
                return found
        return []

    def hierarchy(self, cls) -> list:
        """The class and its bases within the repository, nearest first (breadth-first)."""
        known = self._hierarchy.get(cls.key)
        if known is not None:
            return known
        order: list = []
        seen, queue = {cls.key}, [cls]
        while queue and len(order) < 32:
            current = queue.pop(0)
            order.append(current)
            for row in self._bases(current):
                if row.key not in seen:
                    seen.add(row.key)
                    queue.append(row)
        self._hierarchy[cls.key] = order
        return order

    def _bases(self, cls) -> list:
        """The direct bases of a class that the repository defines, in the order written."""
        if cls.kind not in ("class", "interface") or not cls.bases:
            return []
        scope = replace(cls, qualname=cls.qualname.rpartition(".")[0])
        found = []
        for base in cls.bases.split("\n"):
            target, _ = self.resolve_dotted(scope, base)
            if target is None or target == EXTERNAL or isinstance(target, (Module, Instance)):
                continue
            found += [row for row in target if row.kind in ("class", "interface") and row.key != cls.key]
        return found

    def enclosing_class(self, caller):
        """The class whose instance `self` is in the caller's code."""
        qualname = caller.qualname.rpartition(".")[0]
        symbols = self.in_file(caller.file)
        while qualname:
            for row in symbols.get(qualname, []):
                if row.kind in ("class", "interface"):
                    return row
            if family_of(caller.file) in ("go", "rust") and "." not in qualname:
                # a method's type may be declared in another file (Go: of the same package)
                same_dir = os.path.dirname(caller.file)
                rows = [r for r in self.named(qualname) if r.kind in ("class", "interface") and r.qualname == qualname]
                rows.sort(key=lambda r: os.path.dirname(r.file) != same_dir)
                if rows and family_of(rows[0].file) == family_of(caller.file):
                    return rows[0]
            qualname = qualname.rpartition(".")[0]
        return None

    def _enclosing_members(self, caller, name: str) -> list:
        symbols = self.in_file(caller.file)
        qualname = caller.qualname.rpartition(".")[0]
        while qualname:
            for row in symbols.get(qualname, []):
                if row.kind in ("class", "interface"):
                    found = self._first_members(self.hierarchy(row), name)
                    if found:
                        return found
            qualname = qualname.rpartition(".")[0]
        return []

    def _in_dir(self, folder: str, name: str, exclude: str) -> list:
        return [
            r
            for r in self.named(name)
            if r.qualname == name and r.file != exclude and os.path.dirname(r.file) == folder
        ]

    # -- modules ------------------------------------------------------------------------------------

    def module_for(self, caller, binding):
        """The module a binding imports from: a Module, EXTERNAL, or None when it should be in the
        repository and is not."""
        family = family_of(caller.file)
        if family == "python":
            return self._python_module(caller.file, binding.module, binding.level)
        if family == "js":
            return self._js_module(caller.file, binding.module)
        if family == "go":
            return self._go_package(binding.module)
        if family == "rust":
            return self._rust_module(caller, binding.module.split(".") if binding.module else ["$self"])
        if family == "java":
            return self._java_path(binding.module)
        return None

    def _module_member(self, module: Module, name: str, depth: int):
        rows = [r for path in module.files for r in self.in_file(path).get(module.prefix + name, [])]
        if rows:
            return rows
        for path in module.files:  # re-exports: `from .orders import checkout` in a package's __init__
            for binding in reversed(self.bindings(path)):
                if binding.local == name:
                    scope = FileScope(path)
                    return self.resolve_binding(scope, binding, depth + 1)
        sub = self._submodule(module, name)
        if sub is not None:
            return sub
        for path in module.files:
            for binding in self.bindings(path):
                if binding.local == "*":
                    inner = self.module_for(FileScope(path), binding)
                    if isinstance(inner, Module) and depth < _MAX_DEPTH:
                        found = self._module_member(inner, name, depth + 1)
                        if found is not None:
                            return found
        return None

    def _submodule(self, module: Module, name: str):
        if module.family == "python":
            return self._python_base(f"{module.base}/{name}" if module.base else name)
        if module.family == "java":
            folder = f"{module.base}/{name}" if module.base else name
            return Module("java", self.dirs[folder], folder) if folder in self.dirs else None
        if module.family == "rust" and module.files:
            inline = [q for q in self.in_file(module.files[0]) if q.startswith(f"{module.prefix}{name}.")]
            if inline:
                return Module("rust", module.files, module.base, f"{module.prefix}{name}.")
            root, path = self._rust_location(module.files[0])
            path = path + tuple(p for p in module.prefix.split(".") if p)
            found = self._rust_index().get((root, path + (name,)))
            return Module("rust", [found], found) if found else None
        return None

    # Python: a module is a file (`a/b.py`), a package (`a/b/__init__.py`) or a namespace folder.

    def _python_base(self, base: str) -> Module | None:
        if not base:
            return Module("python", ["__init__.py"], "") if "__init__.py" in self.files else None
        if base + ".py" in self.files:
            return Module("python", [base + ".py"], base)
        if base + "/__init__.py" in self.files:
            return Module("python", [base + "/__init__.py"], base)
        if base in self.dirs or any(d.startswith(base + "/") for d in self.dirs):
            return Module("python", [], base)
        return None

    def _python_module(self, path: str, dotted: str, level: int):
        if level:
            folder = os.path.dirname(path)
            for _ in range(level - 1):
                folder = os.path.dirname(folder)
            base = "/".join(p for p in (folder, dotted.replace(".", "/")) if p)
            return self._python_base(base)
        bases = self._python_index().get(dotted, [])
        if not bases:
            return EXTERNAL
        here = os.path.dirname(path)
        if dotted.split(".")[0] in sys.stdlib_module_names and all(os.path.dirname(b) != here for b in bases):
            return EXTERNAL  # `import json` next to some other folder's json.py is the standard library's
        best = max(
            bases, key=lambda b: (len(os.path.commonpath([b, path])) if "/" in b and "/" in path else 0, -len(b))
        )
        return self._python_base(best)

    def _python_index(self) -> dict[str, list[str]]:
        """Dotted module name → module bases, under every root a module can be imported from: the
        repository root, `src/`, and the folder above its top-most package."""
        if self._python_modules is None:
            index: dict[str, set[str]] = {}
            packages = {os.path.dirname(p) for p in self.files if p.endswith("/__init__.py") or p == "__init__.py"}
            for path in self.files:
                if not path.endswith(".py"):
                    continue
                base = path[:-3]
                if base.endswith("/__init__") or base == "__init__":
                    base = base[: -len("/__init__")] if "/" in base else ""
                if not base:
                    continue
                roots = {"", "src"}
                top = os.path.dirname(base)
                while top and top in packages:
                    top = os.path.dirname(top)
                roots.add(top)
                for root in roots:
                    if root and not base.startswith(root + "/"):
                        continue
                    parts = (base[len(root) + 1 :] if root else base).split("/")
                    for end in range(1, len(parts) + 1):  # the module and each package above it
                        stem = "/".join(parts[:end])
                        index.setdefault(".".join(parts[:end]), set()).add(f"{root}/{stem}" if root else stem)
            if "__init__.py" in self.files:  # the repository is itself a package, named after its folder
                package = os.path.basename(self.source.repo)
                index[package] = {""}
                for dotted, bases in list(index.items()):
                    if dotted != package:
                        index.setdefault(f"{package}.{dotted}", set()).update(bases)
            self._python_modules = {k: sorted(v) for k, v in index.items()}
        return self._python_modules

    # JavaScript and TypeScript: relative specifiers only; a package name is someone else's code.

    def _js_module(self, path: str, spec: str):
        if not spec.startswith("."):
            return EXTERNAL
        joined = os.path.normpath(os.path.join(os.path.dirname(path), spec)).replace(os.sep, "/")
        stem = joined[: -len(os.path.splitext(joined)[1])] if joined.endswith((".js", ".jsx", ".mjs", ".cjs")) else ""
        candidates = [joined, *(joined + e for e in _JS_EXTENSIONS), *(f"{joined}/index{e}" for e in _JS_EXTENSIONS)]
        if stem:  # TypeScript imports "./x.js" for x.ts
            candidates.extend(stem + e for e in _JS_EXTENSIONS)
        for candidate in candidates:
            if candidate in self.files:
                return Module("js", [candidate], candidate)
        return None

    # Go: an import path ends with the package's folder (the module path in go.mod comes before it).

    def _go_package(self, import_path: str):
        segments = import_path.split("/")
        for start in range(len(segments)):
            folder = "/".join(segments[start:])
            if folder in self.dirs and any(p.endswith(".go") for p in self.dirs[folder]):
                return Module("go", [p for p in self.dirs[folder] if p.endswith(".go")], folder)
        return EXTERNAL

    # Java: a package is a folder ending with its dotted path; a class path continues into members.

    def _java_path(self, dotted: str):
        segments = dotted.split(".")
        for end in range(len(segments), 0, -1):
            suffix = "/".join(segments[:end])
            folders = [d for d in self.dirs if d == suffix or d.endswith("/" + suffix)]
            if folders:
                folder = min(folders, key=len)
                target = Module("java", [p for p in self.dirs[folder] if p.endswith(".java")], folder)
                for segment in segments[end:]:
                    target = self.member(target, segment)
                return target if target is not None else EXTERNAL
        return EXTERNAL

    # Rust: `crate` is the folder holding lib.rs/main.rs (`src`), `a/b.rs` or `a/b/mod.rs` is `a::b`.

    def _rust_location(self, path: str) -> tuple[str, tuple[str, ...]]:
        parts = path.split("/")
        if "src" in parts:
            at = len(parts) - 1 - parts[::-1].index("src")
            root, rest = "/".join(parts[: at + 1]), parts[at + 1 :]
        else:
            root, rest = "/".join(parts[:-1]), parts[-1:]
        rest[-1] = rest[-1][:-3] if rest[-1].endswith(".rs") else rest[-1]
        if rest[-1] in ("lib", "main", "mod"):
            rest = rest[:-1]
        return root, tuple(rest)

    def _rust_index(self) -> dict[tuple[str, tuple[str, ...]], str]:
        if self._rust_modules is None:
            index: dict[tuple[str, tuple[str, ...]], str] = {}
            for path in sorted(self.files):
                if path.endswith(".rs"):
                    index.setdefault(self._rust_location(path), path)
            self._rust_modules = index
        return self._rust_modules

    def _rust_module(self, caller, segments: list[str]):
        root, here = self._rust_location(caller.file)
        # the inline modules the caller sits in: leading qualname parts that are not definitions
        symbols = self.in_file(caller.file) if caller.qualname else {}
        inline: list[str] = []
        for part in caller.qualname.split(".")[:-1] if caller.qualname else []:
            if ".".join([*inline, part]) in symbols:
                break
            inline.append(part)
        head = segments[0]
        if head == "crate":
            path: tuple[str, ...] = ()
        elif head == "$self":
            path = here + tuple(inline)
        elif head == "$super":
            path = (here + tuple(inline))[:-1]
        else:  # a crate name: another crate, unless a module of this one is named so
            path = ()
            segments = ["crate", *segments]
        target = self._rust_module_at(root, path)
        for segment in segments[1:]:
            if target is None or target == EXTERNAL:
                break
            target = self.member(target, segment)
        if target is None and head not in ("crate", "$self", "$super"):
            return EXTERNAL
        return target

    def _rust_module_at(self, root: str, path: tuple[str, ...]):
        index = self._rust_index()
        for split in range(len(path), -1, -1):  # the longest file module, then inline modules in it
            found = index.get((root, path[:split]))
            if found:
                prefix = "".join(p + "." for p in path[split:])
                return Module("rust", [found], found, prefix)
        return None

    # -- by name only -------------------------------------------------------------------------------

    def _by_name(self, caller, name: str, methods: bool) -> list[tuple]:
        family = family_of(caller.file)
        if methods and name in COMMON_METHODS.get(family, ()):
            return []
        kinds = ("method",) if methods else ("function", "class")
        candidates = [r for r in self.named(name) if r.kind in kinds and family_of(r.file) == family]
        if not candidates:
            return []
        same_dir = [r for r in candidates if os.path.dirname(r.file) == os.path.dirname(caller.file)]
        if len(same_dir) == 1:
            return self.edges(same_dir, SAME_DIR) if not methods else _edges(same_dir, SAME_DIR)
        if len(candidates) == 1:
            return self.edges(candidates, UNIQUE) if not methods else _edges(candidates, UNIQUE)
        if len(candidates) <= MAX_CANDIDATES:
            return _edges(candidates, AMBIGUOUS)
        return []


class FileScope:
    """The module level of a file, as a caller: for resolving names of another file's imports."""

    __slots__ = ("file", "qualname")

    def __init__(self, path: str) -> None:
        self.file, self.qualname = path, ""


def _in_effect(rows: list) -> list:
    """Of several definitions of one qualified name in one file, the last: in Python and JavaScript
    it replaces the earlier ones. Java overloads (and anything else) all stay."""
    if len(rows) < 2 or family_of(rows[0].file) not in ("python", "js"):
        return rows
    last: dict[tuple[str, str], object] = {}
    for row in sorted(rows, key=lambda r: r.line):
        last[(row.file, row.qualname)] = row
    return list(last.values())


def _edges(rows, confidence: float) -> list[tuple]:
    return [(row, confidence) for row in rows or []]


def _overloads(found: list[tuple], args: int) -> list[tuple]:
    """Of overloads (one qualified name defined several times: Java), those taking `args` arguments,
    when the call's argument count is known and some overload matches it."""
    if args < 0 or len(found) < 2:
        return found
    groups: dict[tuple[str, str], list[tuple]] = {}
    for row, confidence in found:
        groups.setdefault((row.file, row.qualname), []).append((row, confidence))
    chosen: list[tuple] = []
    for group in groups.values():
        matching = [(row, c) for row, c in group if row.arity in (args, -1)] if len(group) > 1 else group
        chosen.extend(matching or group)
    return chosen
