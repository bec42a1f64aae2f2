"""The tree-sitter side: a grammar wheel loaded on first use, and the walk that turns a syntax tree
into definitions, call sites and imports. Each language (`javascript`, `golang`, `rust`, `java`)
subclasses `Walker` and says which nodes are definitions, calls, imports and typed variables.

A definition's hash is of its own subtree with comments left out, punctuation that formatters add
or move (commas, semicolons, brackets, quotes) left out, and nested definitions counted by name
only: named nodes by type, leaves by their text. As in Python, renaming a local variable changes it.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable

from hivelore.codegraph.model import Binding, Definition, ParsedFile, Site
from hivelore.records import replace

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from tree_sitter import Node

# language → (grammar wheel module, function returning the language pointer)
_GRAMMARS = {
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "javascript": ("tree_sitter_javascript", "language"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
}
_parsers: dict = {}
_PUNCTUATION = frozenset({",", ";", "(", ")", "[", "]", "{", "}", '"', "'", "`"})
UNKNOWN = "?"
VALUE = "=value"  # a receiver that is surely a value (Rust's `a.b()`): typed from the variables, else unknown


def parse_tree(language: str, source: bytes):
    """The syntax tree of `source`; the grammar is imported the first time a language is needed."""
    parser = _parsers.get(language)
    if parser is None:
        from tree_sitter import Language, Parser

        module_name, function = _GRAMMARS[language]
        parser = _parsers[language] = Parser(Language(getattr(importlib.import_module(module_name), function)()))
    return parser.parse(source)


class Scope:
    """Where the walk is: the enclosing definition, the qualified-name prefix for what is defined
    here, the class whose instance `self_name` names, and the variables bound here."""

    __slots__ = ("index", "prefix", "class_q", "self_name", "variables", "outer")

    def __init__(self, index: int, prefix: str, class_q: str, self_name: str, outer: Scope | None) -> None:
        self.index = index
        self.prefix = prefix
        self.class_q = class_q
        self.self_name = self_name
        self.variables: dict[str, str] = {}
        self.outer = outer

    def variable(self, name: str) -> str | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.variables:
                return scope.variables[name]
            scope = scope.outer
        return None


class Walker:
    """Walks one file's tree in source order; subclasses implement `enter`."""

    implicit_this = False  # Java: a bare name can be a field of the enclosing class

    def __init__(self, source: bytes, path: str, language: str) -> None:
        self.source = source
        self.path = path
        self.language = language
        self.definitions: list = []
        self.def_nodes: dict[int, tuple[int, Node]] = {}  # node id → (definition index, node)
        self.drafts: list[tuple[Scope, int, str, str, str | None, int, int]] = []
        self.bindings: list[Binding] = []
        self.class_attrs: dict[str, dict[str, str]] = {}

    # -- the walk ---------------------------------------------------------------------------------

    def run(self) -> ParsedFile:
        tree = parse_tree(self.language, self.source)
        stack = [(tree.root_node, Scope(-1, "", "", "", None))]
        while stack:
            node, scope = stack.pop()
            inner = self.enter(node, scope)
            if inner is not None:
                stack.extend((child, inner) for child in reversed(node.children))
        self._hash_definitions()
        return ParsedFile(self.path, self.language, self.definitions, self._sites(), self.bindings)

    # node type -> the method that handles it; each language's walker fills it in
    handlers: dict[str, Callable[..., Scope | None]] = {}  # noqa: RUF012 -- read-only, replaced per subclass

    def enter(self, node, scope: Scope) -> Scope | None:
        """Look at one node: record what it defines, calls, imports or binds; return the scope its
        children are walked in (None: do not walk them). Node types without a handler pass through."""
        handler = self.handlers.get(node.type)
        return handler(self, node, scope) if handler else scope

    # -- what the subclasses call -----------------------------------------------------------------

    def text(self, node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def define(
        self, node, name: str, kind: str, scope: Scope, *, bases=(), returns: str = "", arity: int = -1
    ) -> Scope:
        """A definition at `node`; returns the scope of its body."""
        qualname = scope.prefix + name
        index = len(self.definitions)
        line, end_line = node.start_point.row + 1, node.end_point.row + 1
        self.definitions.append(Definition(qualname, kind, line, end_line, "", tuple(bases), returns, arity))
        self.def_nodes[node.id] = (index, node)
        if kind in ("class", "interface"):
            self.class_attrs.setdefault(qualname, {})
            return Scope(index, qualname + ".", qualname, "", scope)
        return Scope(index, qualname + ".", scope.class_q, scope.self_name, scope)

    def call(
        self, scope: Scope, name: str, receiver: str, node, receiver_type: str | None = None, args: int = -1
    ) -> None:
        """A call of `name` on `receiver` ("" bare, "self", "super", dotted, "?" an unknown value);
        the receiver's type is worked out at the end of the file unless given."""
        if scope.self_name and receiver.split(".", 1)[0] == scope.self_name:  # Go's receiver variable
            receiver = "self" + receiver[len(scope.self_name) :]
        if scope.index >= 0 and name:
            self.drafts.append((scope, scope.index, name, receiver, receiver_type, node.start_point.row + 1, args))

    def bind(self, local: str, module: str, name: str, node, kind: str = "import") -> None:
        self.bindings.append(Binding(local, module, name, 0, node.start_point.row + 1, kind))

    def attribute(self, class_q: str, name: str, type_name: str) -> None:
        attrs = self.class_attrs.setdefault(class_q, {})
        known = attrs.get(name)
        attrs[name] = type_name if known in (None, type_name) else UNKNOWN

    @staticmethod
    def variable(scope: Scope, name: str, type_name: str) -> None:
        known = scope.variables.get(name)
        scope.variables[name] = type_name if known in (None, type_name) else UNKNOWN

    # -- the end of the file ------------------------------------------------------------------------

    def _sites(self) -> list[Site]:
        sites = []
        for scope, caller, name, receiver, given, line, args in self.drafts:
            receiver_type = given
            if receiver_type is None or receiver_type == VALUE:
                receiver_type = self._receiver_type(scope, name, receiver)
                if receiver_type is None:  # a bare call of a variable: nothing to follow
                    continue
                if given == VALUE and not receiver_type:
                    receiver_type = UNKNOWN
            sites.append(Site(caller, name, receiver, receiver_type, line, args))
        sites.sort(key=lambda site: (site.caller, site.line))
        return sites

    def _receiver_type(self, scope: Scope, name: str, receiver: str) -> str | None:
        if not receiver:
            return "" if scope.variable(name) is None else None
        if receiver in ("self", "super"):
            return ""
        if receiver == UNKNOWN:
            return UNKNOWN
        root, _, rest = receiver.partition(".")
        attrs = self.class_attrs.get(scope.class_q, {})
        if root == "self":
            if "." in rest:
                return UNKNOWN
            return attrs.get(rest, UNKNOWN)
        variable = scope.variable(root)
        if variable is None and self.implicit_this and root in attrs:
            variable = attrs[root]
        if variable is None:
            return ""
        return variable if not rest else UNKNOWN

    def _hash_definitions(self) -> None:
        names = {node_id: self.definitions[index].qualname for node_id, (index, _node) in self.def_nodes.items()}
        for node_id, (index, top) in self.def_nodes.items():
            tokens: list[str] = []
            stack = [top]
            while stack:
                node = stack.pop()
                if node.id != node_id and node.id in names:
                    tokens.append(f"<def {names[node.id]}>")
                    continue
                kind = node.type
                if "comment" in kind:
                    continue
                if node.child_count == 0:
                    if node.is_named:
                        tokens.append(kind + ":" + self.text(node))
                    elif kind not in _PUNCTUATION:
                        tokens.append(kind)
                    continue
                if node.is_named:
                    tokens.append(kind)
                stack.extend(reversed(node.children))
            digest = hashlib.blake2b("\x00".join(tokens).encode(), digest_size=8).hexdigest()
            self.definitions[index] = replace(self.definitions[index], hash=digest)


def strip_type(text: str) -> str:
    """The class a written type names: `*Cart`, `&mut Cart`, `List<Cart>` → the outer name, dotted."""
    text = text.strip()
    for prefix in ("&mut ", "&", "*", "[]", "mut "):
        while text.startswith(prefix):
            text = text[len(prefix) :].strip()
    for stop in ("<", "[", "(", " ", "|"):
        text = text.split(stop, 1)[0]
    return text.replace("::", ".") or UNKNOWN
