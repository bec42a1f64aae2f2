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

from hivelore.codegraph.model import ALIAS, VALUE, Binding, Definition, ParsedFile, Site

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

    __slots__ = ("index", "qualname", "kind", "class_q", "self_name", "variables", "outer")

    def __init__(self, index: int, qualname: str, kind: str, class_q: str, self_name: str, outer: _Scope | None):
        self.index = index
        self.qualname = qualname
        self.kind = kind
        self.class_q = class_q  # the class whose instance `self_name` is, "" outside methods
        self.self_name = self_name
        self.variables: dict[str, str] = {}  # name → type ("?" unknown)
        # Names are looked up here, then in `outer`: a class body is not visible from its methods.
        self.outer = outer

    def variable(self, name: str) -> str | None:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.variables:
                return scope.variables[name]
            scope = scope.outer
        return None


class _Parser:
    def __init__(self, path: str) -> None:
        self.path = path
        self.definitions: list[Definition] = []
        self.sites: list[Site] = []
        self.bindings: list[Binding] = []
        self.class_attrs: dict[str, dict[str, str]] = {}  # class qualname → attribute → type
        self.deferred: list[tuple[int, str, str, str, int]] = []  # calls on `self.attr`, typed at the end

    def run(self, tree: ast.Module) -> ParsedFile:
        module = _Scope(-1, "", "module", "", "", None)
        nested, _calls, _digest = self._scan(tree, module)
        for node in nested:
            self._define(node, module)
        for caller, name, receiver, class_q, line in self.deferred:
            attr_type = self.class_attrs.get(class_q, {}).get(receiver.split(".", 1)[1], _UNKNOWN)
            self.sites.append(Site(caller, name, receiver, attr_type, line))
        self.sites.sort(key=lambda site: (site.caller, site.line))
        return ParsedFile(self.path, "python", self.definitions, self.sites, self.bindings)

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
            self._parameters(node.args, scope)
        nested, calls, digest = self._scan(node, scope)
        line = min([node.lineno] + [d.lineno for d in node.decorator_list])
        if isinstance(node, ast.ClassDef):
            bases = tuple(filter(None, (dotted(b.value if isinstance(b, ast.Subscript) else b) for b in node.bases)))
            self.definitions[index] = Definition(qualname, kind, line, node.end_lineno or line, digest, bases)
            for statement in node.body:  # class-level annotations and assignments are attribute types
                if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                    self.class_attrs[qualname][statement.target.id] = annotation(statement.annotation)
        else:
            returns = annotation(node.returns) if node.returns else ""
            definition = Definition(qualname, kind, line, node.end_lineno or line, digest, (), returns)
            self.definitions[index] = definition
        for decorator in node.decorator_list:  # `@cached` is a call of `cached`, by the decorated code
            if not isinstance(decorator, ast.Call):
                calls.append((decorator, decorator.lineno))
        for func, line in calls:
            self._site(func, scope, line)
        for child in nested:
            self._define(child, scope)

    def _parameters(self, args: ast.arguments, scope: _Scope) -> None:
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            scope.variables[arg.arg] = annotation(arg.annotation) if arg.annotation else _UNKNOWN
        for rest in (args.vararg, args.kwarg):
            if rest:
                scope.variables[rest.arg] = _UNKNOWN

    # -- one definition's own code ----------------------------------------------------------------

    def _scan(self, top: ast.AST, scope: _Scope) -> tuple[list, list, str]:
        """Walk the code of `top`, not of the definitions nested in it: the nested definitions, the
        calls (func expression, line) and the hash; the variables and imports go to `scope` and self."""
        tokens: list[str] = []
        nested: list[ast.AST] = []
        calls: list[tuple[ast.AST, int]] = []
        bound_elsewhere: set[str] = set()  # `global`/`nonlocal` names and nested definitions

        def visit(node: Any) -> None:  # any ast node, told apart by its exact type (faster than isinstance)
            kind = type(node)
            if kind in _DEF_TYPES and node is not top:
                tokens.append(f"<{kind.__name__} {node.name}>")
                nested.append(node)
                bound_elsewhere.add(node.name)
                return
            tokens.append(kind.__name__)
            if kind is ast.Call:
                calls.append((node.func, node.lineno))
            elif kind in _BINDERS:
                self._bind(node, scope, bound_elsewhere)
            for field, value in ast.iter_fields(node):
                if field in _SKIP_FIELDS:
                    continue
                if type(value) is list:
                    tokens.append("[")
                    start = 1 if field == "body" and node is top and _has_docstring(value) else 0
                    for item in value[start:]:
                        if isinstance(item, ast.AST):
                            visit(item)
                        else:
                            tokens.append(repr(item))
                    tokens.append("]")
                elif isinstance(value, ast.AST):
                    visit(value)
                else:
                    tokens.append(repr(value))

        visit(top)
        for name in bound_elsewhere:
            scope.variables.pop(name, None)
        return nested, calls, hashlib.blake2b("\x00".join(tokens).encode(), digest_size=8).hexdigest()

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
        elif isinstance(node, ast.AnnAssign):
            self._assign(node.target, annotation(node.annotation), node.value, scope)
        elif isinstance(node, ast.NamedExpr):
            self._assign(node.target, _value_type(node.value, scope), node.value, scope)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension, ast.AugAssign)):
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

    # -- calls ------------------------------------------------------------------------------------

    def _site(self, func: ast.AST, scope: _Scope, line: int) -> None:
        caller = scope.index
        if isinstance(func, ast.Name):
            if scope.self_name and func.id == scope.self_name:  # `cls(...)` in a class method
                self.sites.append(Site(caller, "<new>", "self", "", line))
            elif not scope.variable(func.id):  # calling a variable is not a call we can follow, an alias is
                self.sites.append(Site(caller, func.id, "", "", line))
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
                self.sites.append(Site(caller, name, "self", "", line))
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


_DEF_TYPES = frozenset(_DEFS)
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
