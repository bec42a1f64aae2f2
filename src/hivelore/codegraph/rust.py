"""Rust files: functions, methods of `impl` blocks (`Cart.total`, also for `impl Trait for Cart`),
structs and enums as classes, traits as interfaces (with their methods), inline `mod` blocks as a
qualified-name prefix; calls, including those inside macro arguments; `use` declarations."""

from __future__ import annotations

from hivelore.codegraph.model import ParsedFile
from hivelore.codegraph.treesitter import UNKNOWN, VALUE, Scope, Walker, strip_type


def parse(source: bytes, path: str, language: str) -> ParsedFile:
    return _Rust(source, path, language).run()


class _Rust(Walker):
    # -- definitions ------------------------------------------------------------------------------

    def _function(self, node, scope: Scope) -> Scope | None:
        kind = "method" if scope.class_q and scope.prefix == scope.class_q + "." else "function"
        returns = node.child_by_field_name("return_type")
        result = strip_type(self.text(returns)) if returns is not None else ""
        if result == "Self":
            result = scope.class_q
        inner = self.define(node, self.text(node.child_by_field_name("name")), kind, scope, returns=result)
        params = node.child_by_field_name("parameters")
        for param in params.named_children if params is not None else []:
            pattern, type_node = param.child_by_field_name("pattern"), param.child_by_field_name("type")
            if pattern is not None and pattern.type == "identifier":
                type_name = strip_type(self.text(type_node)) if type_node is not None else UNKNOWN
                self.variable(inner, self.text(pattern), scope.class_q if type_name == "Self" else type_name)
        return inner if node.type == "function_item" else None

    def _impl(self, node, scope: Scope) -> Scope:
        type_name = strip_type(self.text(node.child_by_field_name("type")))
        class_q = scope.prefix + type_name
        return Scope(scope.index, class_q + ".", class_q, "", scope)

    def _type(self, node, scope: Scope) -> Scope | None:
        name = self.text(node.child_by_field_name("name"))
        if node.type == "trait_item":
            return self.define(node, name, "interface", scope)
        inner = self.define(node, name, "class", scope)
        body = node.child_by_field_name("body")
        for field in body.named_children if body is not None else []:
            field_name, type_node = field.child_by_field_name("name"), field.child_by_field_name("type")
            if field.type == "field_declaration" and field_name is not None and type_node is not None:
                self.attribute(inner.class_q, self.text(field_name), strip_type(self.text(type_node)))
        return None

    def _module(self, node, scope: Scope) -> Scope | None:
        if node.child_by_field_name("body") is None:
            return None  # `mod x;`: the module is another file
        return Scope(scope.index, scope.prefix + self.text(node.child_by_field_name("name")) + ".", "", "", scope)

    # -- calls and variables ------------------------------------------------------------------------

    def _call(self, node, scope: Scope) -> Scope:
        function = node.child_by_field_name("function")
        if function is not None and function.type == "generic_function":
            function = function.child_by_field_name("function")
        if function is None:
            return scope
        if function.type == "identifier":
            self.call(scope, self.text(function), "", node)
        elif function.type == "scoped_identifier":
            path = function.child_by_field_name("path")
            receiver = self._path(path) if path is not None else ""
            self.call(scope, self.text(function.child_by_field_name("name")), receiver, node, "" if receiver else None)
        elif function.type == "field_expression":
            value = function.child_by_field_name("value")
            name = self.text(function.child_by_field_name("field"))
            receiver = self._dotted(value)
            if receiver:
                self.call(scope, name, receiver, node, VALUE)
            elif value.type == "call_expression":
                self.call(scope, name, "()", node, self._value_type(value))
            else:
                self.call(scope, name, UNKNOWN, node, UNKNOWN)
        return scope

    def _macro(self, node, scope: Scope) -> Scope | None:
        """Macro arguments are a token tree, not expressions: `name(`, `a.name(` and `A::name(` in it
        are read as calls."""
        for tree in (c for c in node.named_children if c.type == "token_tree"):
            self._token_calls(tree, scope)
        return None

    def _token_calls(self, tree, scope: Scope) -> None:
        tokens = tree.children
        for position, token in enumerate(tokens):
            if token.type == "token_tree":
                if position > 0 and tokens[position - 1].type == "identifier" and self.text(token).startswith("("):
                    name_token = tokens[position - 1]
                    before = tokens[position - 2] if position > 1 else None
                    receiver = ""
                    if before is not None and before.type in (".", "::") and position > 2:
                        receiver = self.text(tokens[position - 3])
                        if before.type == "::":
                            receiver = _segment(receiver)
                    path = before is not None and before.type == "::"
                    self.call(scope, self.text(name_token), receiver, name_token, "" if path else VALUE)
                self._token_calls(token, scope)

    def _let(self, node, scope: Scope) -> Scope:
        pattern = node.child_by_field_name("pattern")
        if pattern is not None and pattern.type == "mut_pattern" and pattern.named_child_count == 1:
            pattern = pattern.named_children[0]  # `let mut cart = ...`
        if pattern is None or pattern.type != "identifier":
            for identifier in _identifiers(pattern) if pattern is not None else []:
                self.variable(scope, self.text(identifier), UNKNOWN)
            return scope
        type_node, value = node.child_by_field_name("type"), node.child_by_field_name("value")
        if type_node is not None:
            type_name = strip_type(self.text(type_node))
        else:
            type_name = self._value_type(value) if value is not None else UNKNOWN
        self.variable(scope, self.text(pattern), scope.class_q if type_name == "Self" else type_name)
        return scope

    def _bindings(self, node, scope: Scope) -> Scope:
        """Names bound by a pattern (`for x in`, `Some(u) =>`, `if let`) or closure parameters: values
        of unknown type."""
        pattern = node.child_by_field_name("pattern") or node.child_by_field_name("parameters")
        for identifier in _identifiers(pattern) if pattern is not None else []:
            self.variable(scope, self.text(identifier), UNKNOWN)
        return scope

    def _value_type(self, node) -> str:
        if (
            node.type in ("reference_expression", "try_expression", "parenthesized_expression")
            and node.named_child_count
        ):
            return self._value_type(node.named_children[-1])
        if node.type == "struct_expression":
            return strip_type(self.text(node.child_by_field_name("name")))
        if node.type == "call_expression":
            function = node.child_by_field_name("function")
            if function is not None and function.type in ("identifier", "scoped_identifier"):
                return self._path(function) + "()"
        return UNKNOWN

    def _path(self, node) -> str:
        """A path as a dotted receiver: `Self` is the own type ("self"); the module keywords `self`
        and `super` become "$self" and "$super", so they are not read as the instance or base class."""
        return ".".join(_segment(s) for s in self.text(node).split("<", 1)[0].split("::"))

    def _segments(self, node) -> list[str]:
        return [_segment(s) for s in self.text(node).split("::")]

    def _dotted(self, node) -> str:
        if node.type in ("identifier", "self"):
            return self.text(node)
        if node.type == "field_expression":
            head = self._dotted(node.child_by_field_name("value"))
            return f"{head}.{self.text(node.child_by_field_name('field'))}" if head else ""
        return ""

    # -- use ------------------------------------------------------------------------------------

    def _use(self, node, scope: Scope) -> None:
        argument = node.child_by_field_name("argument")
        if argument is not None:
            for segments, local in self._uses(argument, []):
                if local == "*":
                    self.bind("*", ".".join(segments), "", node)
                elif len(segments) > 1 and segments[-1] == "$self":  # `use a::b::{self}` binds `b`
                    self.bind(segments[-2] if local == "self" else local, ".".join(segments[:-2]), segments[-2], node)
                elif segments:
                    self.bind(local, ".".join(segments[:-1]), segments[-1], node)
        return None

    def _uses(self, node, prefix: list[str]):
        """(path segments, local name) for each name a use tree binds ("*" for a glob)."""
        kind = node.type
        if kind in ("identifier", "crate", "self", "super", "scoped_identifier"):
            segments = prefix + self._segments(node)
            yield segments, self.text(node).rsplit("::", 1)[-1]
        elif kind == "use_as_clause":
            segments = prefix + self._segments(node.child_by_field_name("path"))
            yield segments, self.text(node.child_by_field_name("alias"))
        elif kind == "use_wildcard":
            path = node.named_children
            yield prefix + (self._segments(path[0]) if path else []), "*"
        elif kind == "scoped_use_list":
            path = node.child_by_field_name("path")
            inner = prefix + (self._segments(path) if path is not None else [])
            yield from self._uses(node.child_by_field_name("list"), inner)
        elif kind == "use_list":
            for child in node.named_children:
                yield from self._uses(child, prefix)


def _segment(segment: str) -> str:
    return {"Self": "self", "self": "$self", "super": "$super"}.get(segment, segment)


def _identifiers(node):
    """The names a pattern binds (not the `Some` of `Some(x)`, the type of a tuple-struct pattern)."""
    if node.type == "identifier":
        yield node
        return
    for position, child in enumerate(node.named_children):
        if node.field_name_for_named_child(position) != "type":
            yield from _identifiers(child)


_HANDLERS = {
    "function_item": _Rust._function,
    "function_signature_item": _Rust._function,
    "impl_item": _Rust._impl,
    "struct_item": _Rust._type,
    "enum_item": _Rust._type,
    "union_item": _Rust._type,
    "trait_item": _Rust._type,
    "mod_item": _Rust._module,
    "call_expression": _Rust._call,
    "macro_invocation": _Rust._macro,
    "let_declaration": _Rust._let,
    "for_expression": _Rust._bindings,
    "match_arm": _Rust._bindings,
    "let_condition": _Rust._bindings,
    "closure_expression": _Rust._bindings,
    "use_declaration": _Rust._use,
}
_Rust.handlers = _HANDLERS
