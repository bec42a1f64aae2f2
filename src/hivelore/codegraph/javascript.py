"""TypeScript and JavaScript files: functions (declared, or arrow/function expressions bound to a
name), classes, methods, interfaces; calls and `new`; ES imports, re-exports and `require`."""

from __future__ import annotations

import os

from hivelore.codegraph.model import ParsedFile
from hivelore.codegraph.treesitter import UNKNOWN, Scope, Walker, strip_type

_FUNCTIONS = frozenset({"arrow_function", "function_expression", "function", "generator_function"})
_CLASSES = frozenset({"class_declaration", "abstract_class_declaration", "class"})


def parse(source: bytes, path: str, language: str) -> ParsedFile:
    return _JavaScript(source, path, language).run()


class _JavaScript(Walker):
    # -- definitions ------------------------------------------------------------------------------

    def _function(self, node, scope: Scope) -> Scope:
        name = node.child_by_field_name("name")
        if name is None:
            return scope
        inner = self.define(node, self.text(name), "function", scope, returns=self._returns(node))
        self._parameters(node, inner)
        return inner

    def _anonymous(self, node, scope: Scope) -> Scope:
        """A callback (`items.map(item => item.price())`): its code belongs to the enclosing
        definition, and so do its parameters, as variables of unknown type."""
        self._parameters(node, scope)
        return scope

    def _class(self, node, scope: Scope, name: str | None = None) -> Scope:
        name_node = node.child_by_field_name("name")
        if name is None and name_node is None:
            return scope
        bases: list[str] = []
        for heritage in (c for c in node.named_children if c.type == "class_heritage"):
            for clause in heritage.named_children:
                if clause.type == "extends_clause":
                    bases.extend(self._dotted(v) for v in clause.children_by_field_name("value"))
                elif clause.type != "implements_clause":
                    bases.append(self._dotted(clause))  # JavaScript: the expression itself
        kind = "interface" if node.type == "interface_declaration" else "class"
        return self.define(node, name or self.text(name_node), kind, scope, bases=[b for b in bases if b])

    def _method(self, node, scope: Scope) -> Scope | None:
        if node.parent is None or node.parent.type not in ("class_body", "interface_body", "object_type"):
            return scope  # a method of an object literal: its calls belong to the enclosing code
        name = self.text(node.child_by_field_name("name"))
        inner = self.define(node, name, "method", scope, returns=self._returns(node))
        self._parameters(node, inner, constructor=name == "constructor")
        return inner if node.type == "method_definition" else None

    def _field(self, node, scope: Scope) -> Scope:
        name_node = node.child_by_field_name("name") or node.child_by_field_name("property")
        value = node.child_by_field_name("value")
        if name_node is None:
            return scope
        name = self.text(name_node)
        if value is not None and value.type in _FUNCTIONS:
            inner = self.define(node, name, "method", scope, returns=self._returns(value))
            self._parameters(value, inner)
            return inner
        type_node = node.child_by_field_name("type")
        if type_node is not None:
            self.attribute(scope.class_q, name, strip_type(self.text(type_node).lstrip(":")))
        elif value is not None:
            self.attribute(scope.class_q, name, self._value_type(value))
        return scope

    def _declarator(self, node, scope: Scope) -> Scope:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is None:
            return scope
        if name.type != "identifier":  # destructuring: `const {a, b} = require("./x")`, or unknown values
            if value is not None and (module := self._required(value)):
                self._require_pattern(name, module)
                return scope
            for identifier in _identifiers(name):
                self.variable(scope, self.text(identifier), UNKNOWN)
            return scope
        local = self.text(name)
        if value is not None and value.type in _FUNCTIONS:
            inner = self.define(node, local, "function", scope, returns=self._returns(value))
            self._parameters(value, inner)
            return inner
        if value is not None and value.type in _CLASSES:
            return self._class(value, scope, name=local)
        required = self._required(value) if value is not None else None
        if required is not None:
            self.bind(local, required, "", node)
            return scope
        type_node = node.child_by_field_name("type")
        if type_node is not None:
            self.variable(scope, local, strip_type(self.text(type_node).lstrip(":")))
        else:
            self.variable(scope, local, self._value_type(value) if value is not None else UNKNOWN)
        return scope

    def _parameters(self, node, scope: Scope, constructor: bool = False) -> None:
        params = node.child_by_field_name("parameters")
        if params is None:
            single = node.child_by_field_name("parameter")  # `x => ...`
            if single is not None:
                self.variable(scope, self.text(single), UNKNOWN)
            return
        for param in params.named_children:
            pattern = param.child_by_field_name("pattern") or param.child_by_field_name("left") or param
            type_node = param.child_by_field_name("type")
            type_name = strip_type(self.text(type_node).lstrip(":")) if type_node is not None else UNKNOWN
            for identifier in _identifiers(pattern):
                self.variable(scope, self.text(identifier), type_name)
            # `constructor(private repo: Repo)` declares the attribute `this.repo`
            if constructor and any(c.type == "accessibility_modifier" for c in param.children):
                self.attribute(scope.class_q, self.text(pattern), type_name)

    def _returns(self, node) -> str:
        returns = node.child_by_field_name("return_type")
        return strip_type(self.text(returns).lstrip(":")) if returns is not None else ""

    # -- calls ------------------------------------------------------------------------------------

    def _call(self, node, scope: Scope) -> Scope:
        function = node.child_by_field_name("function")
        if function is None:
            return scope
        if function.type == "identifier":
            self.call(scope, self.text(function), "", node)
        elif function.type == "super":
            self.call(scope, "constructor", "super", node)
        elif function.type == "member_expression":
            receiver, receiver_type = self._receiver(function.child_by_field_name("object"))
            self.call(scope, self.text(function.child_by_field_name("property")), receiver, node, receiver_type)
        return scope

    def _new(self, node, scope: Scope) -> Scope:
        constructor = node.child_by_field_name("constructor")
        if constructor is not None and constructor.type == "identifier":
            self.call(scope, self.text(constructor), "", node)
        elif constructor is not None and constructor.type == "member_expression":
            receiver, receiver_type = self._receiver(constructor.child_by_field_name("object"))
            self.call(scope, self.text(constructor.child_by_field_name("property")), receiver, node, receiver_type)
        return scope

    def _receiver(self, node) -> tuple[str, str | None]:
        """The receiver as the resolver reads it, and its type when the expression itself tells."""
        if node.type == "this":
            return "self", None
        if node.type == "super":
            return "super", None
        if node.type in ("call_expression", "new_expression"):
            return "()", self._value_type(node)
        text = self._dotted(node)
        return (text, None) if text else (UNKNOWN, UNKNOWN)

    def _dotted(self, node) -> str:
        """`a.b.c` (with `this` as "self") for a chain of names; "" for any other expression."""
        if node.type in ("identifier", "type_identifier"):
            return self.text(node)
        if node.type == "this":
            return "self"
        if node.type == "member_expression":
            head = self._dotted(node.child_by_field_name("object"))
            return f"{head}.{self.text(node.child_by_field_name('property'))}" if head else ""
        return ""

    def _value_type(self, node) -> str:
        if node.type == "new_expression":
            constructor = node.child_by_field_name("constructor")
            return (self._dotted(constructor) if constructor is not None else "") or UNKNOWN
        if node.type == "call_expression":
            function = self._dotted(node.child_by_field_name("function"))
            return function + "()" if function else UNKNOWN
        if node.type in ("await_expression", "parenthesized_expression") and node.named_child_count:
            return self._value_type(node.named_children[0])
        return UNKNOWN

    # -- imports ------------------------------------------------------------------------------------

    def _import(self, node, scope: Scope) -> None:
        source = node.child_by_field_name("source")
        if source is None:
            return None
        module = _string(self, source)
        for clause in (c for c in node.named_children if c.type == "import_clause"):
            for part in clause.named_children:
                if part.type == "identifier":
                    self.bind(self.text(part), module, "default", node)
                elif part.type == "namespace_import":
                    self.bind(self.text(part.named_children[-1]), module, "", node)
                elif part.type == "named_imports":
                    for spec in (s for s in part.named_children if s.type == "import_specifier"):
                        name = self.text(spec.child_by_field_name("name"))
                        alias = spec.child_by_field_name("alias")
                        self.bind(self.text(alias) if alias is not None else name, module, name, node)
        return None

    def _export(self, node, scope: Scope) -> Scope | None:
        source = node.child_by_field_name("source")
        if source is not None:  # `export {a as b} from "./x"`, `export * from "./x"`
            module = _string(self, source)
            clauses = [c for c in node.named_children if c.type == "export_clause"]
            if not clauses:
                self.bind("*", module, "", node, kind="export")
            for clause in clauses:
                for spec in (s for s in clause.named_children if s.type == "export_specifier"):
                    name = self.text(spec.child_by_field_name("name"))
                    alias = spec.child_by_field_name("alias")
                    self.bind(self.text(alias) if alias is not None else name, module, name, node, kind="export")
            return None
        if any(child.type == "default" for child in node.children):
            # the default export is an alias, in this file, of the name it exports
            declaration = node.child_by_field_name("declaration") or node.child_by_field_name("value")
            name_node = None
            if declaration is not None:
                name_node = declaration.child_by_field_name("name") if declaration.type != "identifier" else declaration
            if name_node is not None:
                self.bind("default", "./" + os.path.basename(self.path), self.text(name_node), node, kind="export")
        return scope

    def _assignment(self, node, scope: Scope) -> Scope:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        target = self._dotted(left) if left is not None else ""
        if target == "module.exports" and right is not None and right.type == "identifier":
            self.bind("default", "./" + os.path.basename(self.path), self.text(right), node, kind="export")
        elif target.startswith("self.") and target.count(".") == 1 and right is not None and scope.class_q:
            self.attribute(scope.class_q, target[5:], self._value_type(right))
        return scope

    def _required(self, value) -> str | None:
        """The module of `require("./x")`, None for any other value."""
        if value.type != "call_expression":
            return None
        function, arguments = value.child_by_field_name("function"), value.child_by_field_name("arguments")
        if function is None or self.text(function) != "require" or arguments is None:
            return None
        strings = [a for a in arguments.named_children if a.type == "string"]
        return _string(self, strings[0]) if strings else None

    def _require_pattern(self, pattern, module: str) -> None:
        for child in pattern.named_children:
            if child.type == "shorthand_property_identifier_pattern":
                self.bind(self.text(child), module, self.text(child), pattern)
            elif child.type == "pair_pattern":
                key, value = child.child_by_field_name("key"), child.child_by_field_name("value")
                self.bind(self.text(value), module, self.text(key), pattern)


def _identifiers(node):
    if node.type in ("identifier", "shorthand_property_identifier_pattern"):
        yield node
        return
    for child in node.named_children:
        yield from _identifiers(child)


def _string(walker: Walker, node) -> str:
    return "".join(walker.text(c) for c in node.named_children if c.type == "string_fragment")


_HANDLERS = {
    "function_declaration": _JavaScript._function,
    "generator_function_declaration": _JavaScript._function,
    "function_signature": lambda self, node, scope: None,  # an overload's signature: no code
    "arrow_function": _JavaScript._anonymous,
    "function_expression": _JavaScript._anonymous,
    "function": _JavaScript._anonymous,
    "class_declaration": _JavaScript._class,
    "abstract_class_declaration": _JavaScript._class,
    "interface_declaration": _JavaScript._class,
    "method_definition": _JavaScript._method,
    "method_signature": _JavaScript._method,
    "abstract_method_signature": _JavaScript._method,
    "public_field_definition": _JavaScript._field,
    "field_definition": _JavaScript._field,
    "variable_declarator": _JavaScript._declarator,
    "call_expression": _JavaScript._call,
    "new_expression": _JavaScript._new,
    "import_statement": _JavaScript._import,
    "export_statement": _JavaScript._export,
    "assignment_expression": _JavaScript._assignment,
}
_JavaScript.handlers = _HANDLERS
