"""Python files through `ast`: definitions, call sites, imports, and the hash of each definition.

The hash is of the definition's own syntax tree as `ast` sees it: formatting, comments and the
docstring are not in the tree, line numbers are left out, and a nested function or class counts
only by its name (it has its own hash). Renaming a local variable does change the hash: names are
part of the tree, and telling a local from a global would need a scope analysis that is not worth
it for "has this code changed".
"""

from __future__ import annotations

import ast
import hashlib

from hivelore.codegraph.functions import (
    ABSTRACT,
    ATTRIBUTE,
    ATTRIBUTE_TYPE,
    CALLS_ARGUMENT,
    CALLS_KEY,
    DECORATED,
    IDENTITY,
    PARAMETER,
    PARAMETER_TYPE,
    RESULT,
    FunctionValues,
    Held,
    attribute_type,
    parameter_type,
)
from hivelore.codegraph.model import ALIAS, VALUE, Binding, Definition, ParsedFile, Site
from hivelore.records import replace

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from typing import Any

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_SKIP_FIELDS = frozenset({"type_comment", "kind", "ctx"})
_UNKNOWN = "?"
_SELF = "self"  # the type of `cls()` in a class method: an instance of the enclosing class
# The "type" of a module-level name bound to another name (`_round_half_up = _round`): it is not a
# value to guess about but a name, which resolution follows through the file's ALIAS binding.
_ANOTHER_NAME = ""


def parse(source: bytes, path: str) -> ParsedFile:
    """Parse one Python file (raises SyntaxError or ValueError when it does not parse)."""
    return _Parser(path).run(ast.parse(source, filename=path))


def dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a chain of names, None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def annotation(node: ast.AST | None) -> str:
    """The class an annotation names: `Cart`, `Optional[Cart]`, `Cart | None` and `"Cart"` → "Cart"."""
    if node is None:
        return _UNKNOWN
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return _UNKNOWN
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = annotation(node.left), annotation(node.right)
        return right if left == "None" else left
    if isinstance(node, ast.Subscript) and dotted(node.value) in ("Optional", "typing.Optional"):
        return annotation(node.slice)
    return dotted(node) or _UNKNOWN


def _value_type(node: ast.AST, scope: _Scope) -> str:
    """What an assignment tells about the variable: `Cart(...)` → "Cart()", `cls(...)` in a class
    method → "self", anything else unknown."""
    if isinstance(node, ast.Call):
        name = dotted(node.func)
        if name and name == scope.self_name:  # `cls()` instantiates the class, as a `cls(...)` call site does
            return _SELF
        if name:
            return name + "()"
    return _UNKNOWN


class _Scope:
    """A definition being parsed (or the module), with the variables its code binds."""

    __slots__ = ("index", "qualname", "kind", "class_q", "self_name", "variables", "functions", "outer")

    def __init__(self, index: int, qualname: str, kind: str, class_q: str, self_name: str, outer: _Scope | None):
        self.index = index
        self.qualname = qualname
        self.kind = kind
        self.class_q = class_q  # the class whose instance `self_name` is, "" outside methods
        self.self_name = self_name
        self.variables: dict[str, str] = {}  # name → type ("?" unknown)
        self.functions: dict[str, list[Held]] = {}  # name, or "name[]" for its items → the functions it holds
        # Names are looked up here, then in `outer`: a class body is not visible from its methods.
        self.outer = outer

    def variable(self, name: str) -> str | None:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.variables:
                return scope.variables[name]
            scope = scope.outer
        return None

    def owner(self, name: str) -> _Scope | None:
        """The scope whose variable `name` is, as `variable` finds it."""
        scope: _Scope | None = self
        while scope is not None and name not in scope.variables:
            scope = scope.outer
        return scope

    def prefixes(self) -> tuple[str, ...]:
        """The qualified names a name used here may be nested in, innermost first (class bodies
        are not scopes, except the one being run)."""
        found: list[str] = []
        scope: _Scope | None = self
        while scope is not None:
            if scope.qualname:
                found.append(scope.qualname)
            scope = scope.outer
        return tuple(found)


class _Parser:
    def __init__(self, path: str) -> None:
        self.path = path
        self.definitions: list[Definition] = []
        self.sites: list[Site] = []
        self.bindings: list[Binding] = []
        self.class_attrs: dict[str, dict[str, str]] = {}  # class qualname → attribute → type
        self.deferred: list[tuple[int, str, str, str, int]] = []  # calls on `self.attr`, typed at the end
        self.on_self: list[tuple[int, str, str, int]] = []  # `self.name()`: a method, or an attribute holding one
        self.protocols: list[Site] = []  # `for x in param`: kept once the parameter's type is known
        self.values = FunctionValues()

    def run(self, tree: ast.Module) -> ParsedFile:
        module = _Scope(-1, "", "module", "", "", None)
        code = self._scan(tree, module)
        for call, _line in code.calls:  # module-level code is no caller, but it passes functions
            self._passing(call, module)
        for node in code.nested:
            self._define(node, module)
        qualnames = {d.qualname for d in self.definitions}
        self.values.settle(qualnames)
        for attrs in self.class_attrs.values():
            for attr, attr_type in attrs.items():
                attrs[attr] = self._concrete(attr_type)
        for caller, name, receiver, class_q, line in self.deferred:
            attr_type = self.class_attrs.get(class_q, {}).get(receiver.split(".", 1)[1], _UNKNOWN)
            self.sites.append(Site(caller, name, receiver, attr_type, line))
        for caller, name, class_q, line in self.on_self:
            self._on_self(caller, name, class_q, line, qualnames)
        self.sites = [self._typed(site) for site in self.sites]
        self.sites.extend(site for site in map(self._typed, self.protocols) if site.receiver_type != _UNKNOWN)
        self.sites.extend(self.values.sites(qualnames))
        self.sites.sort(key=lambda site: (site.caller, site.line))
        return ParsedFile(self.path, "python", self.definitions, self.sites, self.bindings)

    def _concrete(self, value_type: str, seen: frozenset[str] = frozenset()) -> str:
        """The type a parameter's or an attribute's placeholder stands for, once the file is read:
        the one type the file's calls pass (or assign), "?" when they differ or nothing says."""
        if not value_type.startswith((PARAMETER_TYPE, ATTRIBUTE_TYPE)):
            return value_type
        if value_type in seen:
            return _UNKNOWN
        if value_type.startswith(ATTRIBUTE_TYPE):
            class_q, _, attr = value_type.removeprefix(ATTRIBUTE_TYPE).partition(":")
            return self._concrete(self.class_attrs.get(class_q, {}).get(attr, _UNKNOWN), seen | {value_type})
        passed = {self._concrete(t, seen | {value_type}) for t in self.values.types.get(value_type, ())}
        return passed.pop() if len(passed) == 1 else _UNKNOWN

    def _typed(self, site: Site) -> Site:
        concrete = self._concrete(site.receiver_type)
        return site if concrete == site.receiver_type else replace(site, receiver_type=concrete)

    # -- definitions ----------------------------------------------------------------------------

    def _define(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, parent: _Scope) -> None:
        qualname = f"{parent.qualname}.{node.name}" if parent.qualname else node.name
        index = len(self.definitions)
        self.definitions.append(_RESERVED)  # keeps source order (parent before children)
        outer = parent.outer if parent.kind == "class" else parent
        if isinstance(node, ast.ClassDef):
            kind = "class"
            scope = _Scope(index, qualname, kind, parent.class_q, parent.self_name, outer)
            self.class_attrs.setdefault(qualname, {})
        else:
            kind = "method" if parent.kind == "class" else "function"
            class_q, self_name = parent.class_q, parent.self_name
            if kind == "method":
                class_q, self_name = parent.qualname, _first_parameter(node)
            scope = _Scope(index, qualname, kind, class_q, self_name, outer)
            self._parameters(node, scope, parent)
        code = self._scan(node, scope)
        line = min([node.lineno] + [d.lineno for d in node.decorator_list])
        if isinstance(node, ast.ClassDef):
            bases = tuple(filter(None, (dotted(b.value if isinstance(b, ast.Subscript) else b) for b in node.bases)))
            self.definitions[index] = Definition(qualname, kind, line, node.end_lineno or line, code.digest, bases)
            for statement in node.body:  # class-level annotations and assignments are attribute types
                if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                    self.class_attrs[qualname][statement.target.id] = annotation(statement.annotation)
        else:
            returns = annotation(node.returns) if node.returns else _returned(node, code)
            if kind == "method" and _abstract(node):  # there to be overridden: calls on self reach the overrides
                returns = ABSTRACT
            # a function's bases are its decorators, outermost first: calling it calls what they return
            decorators = tuple(filter(None, map(_decorator, node.decorator_list)))
            definition = Definition(qualname, kind, line, node.end_lineno or line, code.digest, decorators, returns)
            self.definitions[index] = definition
        self._decorate(node, parent)
        for call, line in code.calls:
            self._site(call.func, scope, line)
            self._passing(call, scope)
            if isinstance(call.func, ast.Name) and call.args and call.func.id in _ITERATING:
                self._protocol(call.args[0], _ITERATING[call.func.id], scope, line)
        for child in code.nested:
            self._define(child, scope)

    def _decorate(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, parent: _Scope) -> None:
        """Decorators run in the enclosing code, when the definition runs: `@logged` calls `logged`
        with the function (the module's code is no symbol, so there it is no edge), `@rule("x")`
        calls `rule` and then what it returns."""
        decorated = [Held.definition((parent.qualname,) if parent.kind == "class" else parent.prefixes(), node.name)]
        for position, decorator in enumerate(node.decorator_list):
            if isinstance(decorator, ast.Call):
                if parent.index >= 0:
                    self._site(decorator.func, parent, decorator.lineno)
                    self._passing(decorator, parent)
                    self._result_site(decorator.func, parent, decorator.lineno)
                continue
            name = dotted(decorator)
            # the innermost decorator is given the function; an outer one what the next one returned,
            # which resolution follows (a DECORATED site) as it can cross files
            innermost = position == len(node.decorator_list) - 1
            if name and innermost and not parent.variable(name.split(".")[0]):
                self.values.pass_to([Held.definition(parent.prefixes(), name)], 0, decorated)
            if parent.index >= 0:
                self._site(decorator, parent, decorator.lineno)

    def _parameters(self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: _Scope, parent: _Scope) -> None:
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        for arg in [*positional, *args.kwonlyargs]:
            # unannotated: the type the file's calls pass it, known once the file is read
            untyped = parameter_type(scope.qualname, arg.arg) if arg.arg != scope.self_name else _UNKNOWN
            scope.variables[arg.arg] = annotation(arg.annotation) if arg.annotation else untyped
        for rest in (args.vararg, args.kwarg):
            if rest:
                scope.variables[rest.arg] = _UNKNOWN
        names = [a.arg for a in positional]
        self.values.parameters(scope.qualname, names[1:] if scope.self_name else names, args.kwonlyargs)
        with_defaults = [*positional[len(positional) - len(args.defaults) :], *args.kwonlyargs]
        defaults = zip(with_defaults, [*args.defaults, *args.kw_defaults], strict=True)
        for arg, default in defaults:  # `hasher=default_hasher`: evaluated where the function is defined
            held = self._held(default, parent) if default is not None else []
            if held:
                self.values.hold_parameter(scope.qualname, arg.arg, held)

    # -- one definition's own code ----------------------------------------------------------------

    def _scan(self, top: ast.AST, scope: _Scope) -> _Code:
        """Walk the code of `top`, not of the definitions nested in it nor its decorators (they run in
        the enclosing code): the nested definitions, the calls, the returned values and the hash; the
        variables and imports go to `scope` and self."""
        tokens: list[str] = []
        code = _Code()
        bound_elsewhere: set[str] = set()  # `global`/`nonlocal` names and nested definitions

        def visit(
            node: Any, calls: list
        ) -> None:  # any ast node, told apart by its exact type (faster than isinstance)
            kind = type(node)
            if kind in _DEF_TYPES and node is not top:
                tokens.append(f"<{kind.__name__} {node.name}>")
                code.nested.append(node)
                bound_elsewhere.add(node.name)
                return
            tokens.append(kind.__name__)
            if kind is ast.Call:
                calls.append((node, node.lineno))
            elif kind is ast.Return:
                code.returns.append(node.value)
            elif kind in _BINDERS:
                self._bind(node, scope, bound_elsewhere)
            for field, value in ast.iter_fields(node):
                if field in _SKIP_FIELDS:
                    continue
                into = [] if field == "decorator_list" and node is top else calls
                if type(value) is list:
                    tokens.append("[")
                    start = 1 if field == "body" and node is top and _has_docstring(value) else 0
                    for item in value[start:]:
                        if isinstance(item, ast.AST):
                            visit(item, into)
                        else:
                            tokens.append(repr(item))
                    tokens.append("]")
                elif isinstance(value, ast.AST):
                    visit(value, into)
                else:
                    tokens.append(repr(value))

        visit(top, code.calls)
        for name in bound_elsewhere:
            scope.variables.pop(name, None)
        code.digest = hashlib.blake2b("\x00".join(tokens).encode(), digest_size=8).hexdigest()
        return code

    def _bind(self, node: ast.AST, scope: _Scope, bound_elsewhere: set[str]) -> None:
        """Record what a binding statement tells: imports, variables and their types, attributes."""
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                module = alias.name if alias.asname else alias.name.split(".")[0]
                self.bindings.append(Binding(local, module, "", 0, node.lineno))
                bound_elsewhere.add(local)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                local = "*" if alias.name == "*" else alias.asname or alias.name
                name = "" if alias.name == "*" else alias.name
                self.bindings.append(Binding(local, node.module or "", name, node.level, node.lineno))
                bound_elsewhere.add(local)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound_elsewhere.update(node.names)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                self._assign(target, _value_type(node.value, scope), node.value, scope)
                self._hold(target, self._held(node.value, scope), self._items(node.value, scope), scope)
        elif isinstance(node, ast.AnnAssign):
            self._assign(node.target, annotation(node.annotation), node.value, scope)
            if node.value is not None:
                self._hold(node.target, self._held(node.value, scope), self._items(node.value, scope), scope)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            self._assign(node.target, _UNKNOWN, None, scope)
            if not isinstance(node, ast.AsyncFor):
                self._protocol(node.iter, _ITERATION, scope, getattr(node.iter, "lineno", 0))
            self._hold(node.target, self._items(node.iter, scope), [], scope)  # `for step in [strip, lower]`
        elif isinstance(node, ast.NamedExpr):
            self._assign(node.target, _value_type(node.value, scope), node.value, scope)
        elif isinstance(node, ast.AugAssign):
            self._assign(node.target, _UNKNOWN, None, scope)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._assign(node.optional_vars, _value_type(node.context_expr, scope), None, scope)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            scope.variables[node.name] = (dotted(node.type) if node.type is not None else None) or _UNKNOWN

    def _assign(self, target: ast.AST, value_type: str, value: ast.AST | None, scope: _Scope) -> None:
        if isinstance(target, ast.Name):
            if scope.kind in ("module", "class"):
                value_type = self._bind_shared_name(target, value_type, value, scope)
            known = scope.variables.get(target.id)
            scope.variables[target.id] = value_type if known in (None, value_type) else _UNKNOWN
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._assign(element, _UNKNOWN, None, scope)
        elif isinstance(target, ast.Starred):
            self._assign(target.value, _UNKNOWN, None, scope)
        elif isinstance(target, ast.Subscript):  # `counts["a"] = 1` calls `__setitem__`
            self._protocol(target.value, ("__setitem__",), scope, target.lineno)
        elif (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and scope.self_name
            and target.value.id == scope.self_name
        ):
            # `self.repo = Repo()` or `self.repo = repo` (a typed parameter): the attribute's type
            if value_type == _UNKNOWN and isinstance(value, ast.Name):
                value_type = scope.variable(value.id) or _UNKNOWN
            attrs = self.class_attrs.setdefault(scope.class_q, {})
            known = attrs.get(target.attr)
            attrs[target.attr] = value_type if known in (None, value_type) else _UNKNOWN

    def _bind_shared_name(self, target: ast.Name, value_type: str, value: ast.AST | None, scope: _Scope) -> str:
        """A module- or class-level name other code can reach (`mod.BUS`, `self.alias`): record what
        it is bound to as a binding of the file, and return the variable's type in this file."""
        aliased = dotted(value) if value is not None and value_type == _UNKNOWN else None
        if aliased:  # `_round_half_up = _round`; in a class body `alias = method`, reached as `self.alias()`
            local = f"{scope.qualname}.{target.id}" if scope.kind == "class" else target.id
            self.bindings.append(Binding(local, "", aliased, 0, target.lineno, ALIAS))
            # functions call a module-level alias by name; a class body's names are not seen by its methods
            return _ANOTHER_NAME if scope.kind == "module" else value_type
        if scope.kind == "module" and value_type != _UNKNOWN:  # `BUS = EventBus()`, `STOCK: Stock`
            self.bindings.append(Binding(target.id, "", value_type, 0, target.lineno, VALUE))
        return value_type

    # -- functions as values (hivelore.codegraph.functions) -----------------------------------------

    def _held(self, node: ast.AST, scope: _Scope) -> list[Held]:
        """The functions an expression may be: a name of the module or an import, a variable or
        parameter holding some, an item of a container holding some, or an attribute of `self`."""
        if isinstance(node, ast.Subscript):  # `RULES[kind]`, `self.handlers[event]`
            return self._items(node.value, scope)
        if isinstance(node, ast.Name):
            owner = scope.owner(node.id)
            if owner is None:
                return [] if node.id == scope.self_name else [Held.definition(scope.prefixes(), node.id)]
            if node.id in owner.functions:
                return list(owner.functions[node.id])
            if owner.kind in ("function", "method") and self.values.is_parameter(owner.qualname, node.id):
                return [Held(PARAMETER, (owner.qualname,), node.id)]
            return []
        text = dotted(node)
        if text is None:
            return []
        root, _, rest = text.partition(".")
        if scope.self_name and root == scope.self_name:
            return [Held(ATTRIBUTE, (scope.class_q,), rest)] if rest and "." not in rest else []
        kind = scope.variable(root)
        if not kind:
            return [Held.definition(scope.prefixes(), text)]
        if kind.endswith("()") and "." not in rest:  # `cart.total` with `cart = Cart()`: a bound method
            return [Held.definition(scope.prefixes(), f"{kind[:-2]}.{rest}")]
        return []

    def _items(self, node: ast.AST, scope: _Scope) -> list[Held]:
        """The functions the items of a container may be: a literal list, tuple, set or dict (its
        values), or a variable or attribute of `self` bound to one."""
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return [h for element in node.elts for h in self._held(element, scope)]
        if isinstance(node, ast.Dict):
            return [h for value in node.values for h in self._held(value, scope)]
        if isinstance(node, ast.Name):
            owner = scope.owner(node.id)
            if owner is None:
                return []
            if node.id + "[]" not in owner.functions and self.values.is_parameter(owner.qualname, node.id):
                return [Held(PARAMETER, (owner.qualname,), node.id + "[]")]  # what the calls' arguments hold
            return list(owner.functions.get(node.id + "[]", []))
        text = dotted(node)
        if text and scope.self_name and text.count(".") == 1 and text.startswith(scope.self_name + "."):
            return [Held(ATTRIBUTE, (scope.class_q,), text.partition(".")[2] + "[]")]
        return []

    def _hold(self, target: ast.AST, held: list[Held], items: list[Held], scope: _Scope) -> None:
        """Record what a variable or an attribute of `self` now holds, and what its items hold."""
        for key, found in ((0, held), (1, items)):
            if not found:
                continue
            if isinstance(target, ast.Name):
                scope.functions.setdefault(target.id + "[]" * key, []).extend(found)
            elif isinstance(target, ast.Attribute) and dotted(target) == f"{scope.self_name}.{target.attr}":
                self.values.hold_attribute(scope.class_q, target.attr + "[]" * key, found)

    def _passing(self, call: ast.Call, scope: _Scope) -> None:
        """The functions a call passes: to a function of the file (its parameters hold them), or to
        one of the standard library's that calls them (`sorted(key=f)`, `map(f, xs)`)."""
        name = dotted(call.func)
        if name is None or scope.variable(name.split(".")[0]):
            name = call.func.attr if isinstance(call.func, ast.Attribute) and call.func.attr == "sort" else None
        callees = self._held(call.func, scope)
        if name is None and not callees:
            return
        arguments: list[tuple[int | str, ast.AST]] = []
        for position, positional in enumerate(call.args):
            if isinstance(positional, ast.Starred):
                break
            arguments.append((position, positional))
        arguments += [(k.arg, k.value) for k in call.keywords if k.arg]
        for slot, argument in arguments:
            held = self._held(argument, scope)
            if name and (CALLS_ARGUMENT.get(name) == slot or (name in CALLS_KEY and slot == "key")):
                if held and scope.index >= 0:
                    self.values.call(scope.index, held, call.lineno)
                continue
            if callees:
                if held:
                    self.values.pass_to(callees, slot, held)
                items = self._items(argument, scope)
                if items:
                    self.values.pass_to(callees, slot, items, items=True)
                self.values.pass_type(callees, slot, self._argument_type(argument, scope))

    def _argument_type(self, node: ast.AST, scope: _Scope) -> str:
        """The type of a value given as an argument, as a parameter receiving it would have it."""
        if isinstance(node, ast.Name):
            found = scope.variable(node.id)
            return found if found and found != _SELF else _UNKNOWN
        text = dotted(node)
        if text and scope.self_name and text.count(".") == 1 and text.startswith(scope.self_name + "."):
            return attribute_type(scope.class_q, text.partition(".")[2])
        value_type = _value_type(node, scope)
        return value_type if value_type != _SELF else _UNKNOWN

    def _protocol(self, value: ast.AST, methods: tuple[str, ...], scope: _Scope, line: int) -> None:
        """`for x in Countdown(3)`, `len(bag)`: the special methods the loop or builtin calls, on a
        value whose class is known (an unknown one could be any container)."""
        if scope.index < 0:
            return
        if isinstance(value, ast.Call):
            receiver, value_type = "()", _value_type(value, scope)
        elif isinstance(value, ast.Name):
            receiver, value_type = value.id, scope.variable(value.id) or ""
        else:
            return
        if value_type and value_type != _UNKNOWN:
            into = self.protocols if value_type.startswith(PARAMETER_TYPE) else self.sites
            for method in methods:
                into.append(Site(scope.index, method, receiver, value_type, line))

    def _result_site(self, func: ast.AST, scope: _Scope, line: int) -> None:
        """`with_tax(0.2)(10)`: a call of what calling a function returns."""
        name = dotted(func)
        if name is None or scope.index < 0 or scope.variable(name.split(".")[0]):
            return
        receiver, _, last = name.rpartition(".")
        self.sites.append(Site(scope.index, last, receiver, RESULT, line))

    def _on_self(self, caller: int, name: str, class_q: str, line: int, qualnames: set[str]) -> None:
        """`self.name()`: the class's method, else the function its attribute holds (`self.hasher =
        hasher`) or was made by a call (`self.emit = make_logger()`), else a method from a base."""
        attr_type = self.class_attrs.get(class_q, {}).get(name, "")
        if f"{class_q}.{name}" in qualnames:
            self.sites.append(Site(caller, name, "self", "", line))
        elif self.values.holds_attribute(class_q, name):
            self.values.call(caller, [Held(ATTRIBUTE, (class_q,), name)], line)
        elif any(self.values.holds_attribute(sub, name) for sub in self._subclasses(class_q)):
            # `self.child()` in a base whose subclasses set `self.child = self.func2`: self may be one
            held = [Held(ATTRIBUTE, (sub,), name) for sub in self._subclasses(class_q)]
            self.values.call(caller, [h for h in held if self.values.holds_attribute(h.where[0], name)], line)
        elif attr_type.endswith("()") and attr_type != _SELF:
            receiver, _, last = attr_type[:-2].rpartition(".")
            self.sites.append(Site(caller, last, receiver, RESULT, line))
        else:
            self.sites.append(Site(caller, name, "self", "", line))

    def _subclasses(self, class_q: str) -> list[str]:
        """The classes of the file that name `class_q` among their bases, and theirs, and so on
        (`class Foo(Foo)`, which extends an imported namesake, and cycles end)."""
        found: list[str] = []
        todo = [class_q]
        while todo:
            base = todo.pop()
            names = {base, base.rpartition(".")[2]}
            for definition in self.definitions:
                if definition.kind != "class" or definition.qualname in found or definition.qualname == class_q:
                    continue
                if names & set(definition.bases):
                    found.append(definition.qualname)
                    todo.append(definition.qualname)
        return found

    # -- calls ------------------------------------------------------------------------------------

    def _site(self, func: ast.AST, scope: _Scope, line: int) -> None:
        caller = scope.index
        if isinstance(func, ast.Name):
            if scope.self_name and func.id == scope.self_name:  # `cls(...)` in a class method
                self.sites.append(Site(caller, "<new>", "self", "", line))
            elif not scope.variable(func.id):  # a name of the module, an import or an alias
                self.sites.append(Site(caller, func.id, "", "", line))
            else:  # a variable: the functions it holds, or what the call it was bound to returned
                self._call_variable(func.id, scope, line)
            return
        if isinstance(func, ast.Subscript):  # `RULES[kind](...)`
            self.values.call(caller, self._items(func.value, scope), line)
            return
        if isinstance(func, ast.Call):
            self._result_site(func.func, scope, line)
            return
        if not isinstance(func, ast.Attribute):
            return
        value, name = func.value, func.attr
        if isinstance(value, ast.Call):
            if isinstance(value.func, ast.Name) and value.func.id == "super":
                self.sites.append(Site(caller, name, "super", "", line))
            else:
                self.sites.append(Site(caller, name, "()", _value_type(value, scope), line))
            return
        text = dotted(value)
        if text is None:  # `x[0].f()`, `"".join()`: a value we know nothing about
            self.sites.append(Site(caller, name, "?", _UNKNOWN, line))
            return
        root, _, rest = text.partition(".")
        if scope.self_name and root == scope.self_name:
            if not rest:
                self.on_self.append((caller, name, scope.class_q, line))
            elif "." not in rest:
                self.deferred.append((caller, name, "self." + rest, scope.class_q, line))
            else:
                self.sites.append(Site(caller, name, "self." + rest, _UNKNOWN, line))
            return
        variable = scope.variable(root)
        if not variable:  # a module, a class, a global, or an alias of one of them
            self.sites.append(Site(caller, name, text, "", line))
        else:
            self.sites.append(Site(caller, name, text, variable if not rest else _UNKNOWN, line))

    def _call_variable(self, name: str, scope: _Scope, line: int) -> None:
        held = self._held(ast.Name(name), scope)
        if held:
            self.values.call(scope.index, held, line)
            for item in held:  # a decorator calling the function it was given, which may be in another file
                if item.kind == PARAMETER and (self.values.positional.get(item.where[0]) or [""])[0] == item.name:
                    receiver, _, function = item.where[0].rpartition(".")
                    self.sites.append(Site(scope.index, function, receiver, DECORATED, line))
            return
        kind = scope.variable(name) or ""
        if kind.endswith("()") and kind != _SELF:  # `tick = counter(); tick()`
            receiver, _, last = kind[:-2].rpartition(".")
            self.sites.append(Site(scope.index, last, receiver, RESULT, line))


class _Code:
    """What `_Parser._scan` finds in one definition's own code."""

    __slots__ = ("nested", "calls", "returns", "digest")

    def __init__(self) -> None:
        self.nested: list = []  # the definitions nested in it
        self.calls: list[tuple[ast.Call, int]] = []
        self.returns: list[ast.AST | None] = []  # the values of its `return` statements
        self.digest = ""


def _returned(node: ast.FunctionDef | ast.AsyncFunctionDef, code: _Code) -> str:
    """What a function without a declared result type returns, when every `return` says the same
    name: one of its nested definitions (a closure, a decorator's wrapper), or IDENTITY for its first
    parameter (a decorator that registers the function and returns it); "" otherwise."""
    names = {value.id if isinstance(value, ast.Name) else "" for value in code.returns}
    if len(names) != 1 or "" in names:
        return ""
    (name,) = names
    if name in {n.name for n in code.nested if not isinstance(n, ast.ClassDef)}:
        return name
    positional = [*node.args.posonlyargs, *node.args.args]
    return IDENTITY if positional and positional[0].arg == name else ""


def _abstract(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A method that only says it must be overridden: `raise NotImplementedError`, `...`, or
    `@abstractmethod`."""
    if any((dotted(d) or "").endswith("abstractmethod") for d in node.decorator_list):
        return True
    body = node.body[1:] if _has_docstring(node.body) else node.body
    if len(body) != 1:
        return False
    statement = body[0]
    if isinstance(statement, ast.Raise) and statement.exc is not None:
        exc = statement.exc.func if isinstance(statement.exc, ast.Call) else statement.exc
        return dotted(exc) == "NotImplementedError"
    return (
        isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) and statement.value.value is ...
    )


def _decorator(node: ast.AST) -> str:
    """A decorator as Definition.bases holds it: `logged`, `mod.cached`, or `rule()` for a call."""
    if isinstance(node, ast.Call):
        name = dotted(node.func)
        return name + "()" if name else ""
    return dotted(node) or ""


_DEF_TYPES = frozenset(_DEFS)
_ITERATION = ("__iter__", "__next__")  # a `for` loop's: `__next__` is found when `__iter__` returns self
# builtins that iterate their first argument, or measure it
_ITERATING: dict[str, tuple[str, ...]] = {
    **{name: _ITERATION for name in ("list", "tuple", "set", "frozenset", "sorted", "sum", "enumerate")},
    "len": ("__len__",),
}
_RESERVED = Definition("", "", 0, 0, "")  # a definition's place, until its nested ones are walked
_BINDERS = frozenset(
    {
        ast.Import,
        ast.ImportFrom,
        ast.Global,
        ast.Nonlocal,
        ast.Assign,
        ast.AnnAssign,
        ast.NamedExpr,
        ast.For,
        ast.AsyncFor,
        ast.comprehension,
        ast.AugAssign,
        ast.withitem,
        ast.ExceptHandler,
    }
)


def _has_docstring(body: list) -> bool:
    first = body[0] if body else None
    return isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)


def _first_parameter(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The name `self` (or `cls`) has in a method; "" for a static method."""
    if any(dotted(d) == "staticmethod" for d in node.decorator_list):
        return ""
    positional = [*node.args.posonlyargs, *node.args.args]
    return positional[0].arg if positional else ""
