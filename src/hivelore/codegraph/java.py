"""Java files: classes, interfaces, enums and records (nested ones as `Outer.Inner`), methods and
constructors (`Cart.Cart`; overloads get "#2" ids), fields as attribute types; method calls,
`new`, `super(...)`/`this(...)`; imports (single, wildcard and static)."""

from __future__ import annotations

from hivelore.codegraph.model import ParsedFile
from hivelore.codegraph.treesitter import UNKNOWN, Scope, Walker, strip_type

_TYPES = {
    "class_declaration": "class",
    "enum_declaration": "class",
    "record_declaration": "class",
    "interface_declaration": "interface",
    "annotation_type_declaration": "interface",
}


def parse(source: bytes, path: str, language: str) -> ParsedFile:
    return _Java(source, path, language).run()


class _Java(Walker):
    implicit_this = True

    def _type(self, node, scope: Scope) -> Scope:
        bases = []
        for field in ("superclass", "interfaces"):
            clause = node.child_by_field_name(field)
            if clause is not None:
                bases.extend(self._type_names(clause))
        for clause in (c for c in node.named_children if c.type == "extends_interfaces"):
            bases.extend(self._type_names(clause))
        return self.define(node, self.text(node.child_by_field_name("name")), _TYPES[node.type], scope, bases=bases)

    def _type_names(self, node) -> list[str]:
        if node.type in ("type_identifier", "scoped_type_identifier", "generic_type"):
            return [strip_type(self.text(node))]
        return [name for child in node.named_children for name in self._type_names(child)]

    def _method(self, node, scope: Scope) -> Scope:
        type_node = node.child_by_field_name("type")
        returns = strip_type(self.text(type_node)) if type_node is not None else ""
        params = node.child_by_field_name("parameters")
        declared = params.named_children if params is not None else []
        arity = -1 if any(p.type == "spread_parameter" for p in declared) else len(declared)
        name = self.text(node.child_by_field_name("name"))
        inner = self.define(node, name, "method", scope, returns=returns, arity=arity)
        for param in declared:
            self._declare(param, inner)
        return inner

    def _declare(self, node, scope: Scope) -> Scope:
        """A parameter, a catch parameter or the variable of an enhanced for."""
        type_node, name = node.child_by_field_name("type"), node.child_by_field_name("name")
        if name is not None and type_node is not None:
            self.variable(scope, self.text(name), strip_type(self.text(type_node)))
        return scope

    def _locals(self, node, scope: Scope) -> Scope:
        type_node = node.child_by_field_name("type")
        written = strip_type(self.text(type_node)) if type_node is not None else UNKNOWN
        for declarator in node.children_by_field_name("declarator"):
            name, value = declarator.child_by_field_name("name"), declarator.child_by_field_name("value")
            type_name = self._value_type(value) if written == "var" and value is not None else written
            if node.type == "field_declaration":
                self.attribute(scope.class_q, self.text(name), type_name)
            else:
                self.variable(scope, self.text(name), type_name)
        return scope

    # -- calls ------------------------------------------------------------------------------------

    def _invocation(self, node, scope: Scope) -> Scope:
        name = self.text(node.child_by_field_name("name"))
        target, args = node.child_by_field_name("object"), _arguments(node)
        if target is None:
            self.call(scope, name, "", node, args=args)
        elif target.type in ("method_invocation", "object_creation_expression"):
            self.call(scope, name, "()", node, self._value_type(target), args=args)
        else:
            receiver = self._dotted(target)
            if receiver:
                self.call(scope, name, receiver, node, args=args)
            else:
                self.call(scope, name, UNKNOWN, node, UNKNOWN, args=args)
        return scope

    def _creation(self, node, scope: Scope) -> Scope:
        type_name = strip_type(self.text(node.child_by_field_name("type")))
        receiver, _, name = type_name.rpartition(".")
        self.call(scope, name, receiver, node, "" if receiver else None, args=_arguments(node))
        return scope

    def _explicit_constructor(self, node, scope: Scope) -> Scope:
        constructor = node.child_by_field_name("constructor")
        if constructor is not None:
            receiver = "super" if constructor.type == "super" else "self"
            self.call(scope, "<init>", receiver, node, args=_arguments(node))
        return scope

    def _value_type(self, node) -> str:
        if node.type == "object_creation_expression":
            return strip_type(self.text(node.child_by_field_name("type")))
        if node.type == "method_invocation":
            target = node.child_by_field_name("object")
            head = self._dotted(target) if target is not None else ""
            name = self.text(node.child_by_field_name("name"))
            if target is None or head:
                return f"{head}.{name}()" if head else f"{name}()"
        return UNKNOWN

    def _dotted(self, node) -> str:
        if node.type == "identifier":
            return self.text(node)
        if node.type in ("this", "super"):
            return "self" if node.type == "this" else "super"
        if node.type == "field_access":
            head = self._dotted(node.child_by_field_name("object"))
            return f"{head}.{self.text(node.child_by_field_name('field'))}" if head else ""
        return ""

    def _import(self, node, scope: Scope) -> None:
        path = next((c for c in node.named_children if c.type in ("scoped_identifier", "identifier")), None)
        if path is None:
            return None
        segments = self.text(path).split(".")
        if any(c.type == "asterisk" for c in node.named_children):
            self.bind("*", ".".join(segments), "", node)
        else:
            self.bind(segments[-1], ".".join(segments[:-1]), segments[-1], node)
        return None


def _arguments(node) -> int:
    arguments = node.child_by_field_name("arguments")
    return arguments.named_child_count if arguments is not None else -1


_HANDLERS = {
    **{kind: _Java._type for kind in _TYPES},
    "method_declaration": _Java._method,
    "constructor_declaration": _Java._method,
    "compact_constructor_declaration": _Java._method,
    "formal_parameter": _Java._declare,
    "catch_formal_parameter": _Java._declare,
    "enhanced_for_statement": _Java._declare,
    "local_variable_declaration": _Java._locals,
    "field_declaration": _Java._locals,
    "method_invocation": _Java._invocation,
    "object_creation_expression": _Java._creation,
    "explicit_constructor_invocation": _Java._explicit_constructor,
    "import_declaration": _Java._import,
}
_Java.handlers = _HANDLERS
