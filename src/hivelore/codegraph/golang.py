"""Go files: functions, methods (`Cart.Total` for `func (c *Cart) Total()`), struct types as
classes (embedded fields as their bases), interfaces with their method signatures; calls; imports."""

from __future__ import annotations

from hivelore.codegraph.model import ParsedFile
from hivelore.codegraph.treesitter import UNKNOWN, Scope, Walker, strip_type


def parse(source: bytes, path: str, language: str) -> ParsedFile:
    return _Go(source, path, language).run()


class _Go(Walker):
    def _function(self, node, scope: Scope) -> Scope:
        inner = self.define(
            node, self.text(node.child_by_field_name("name")), "function", scope, returns=self._result(node)
        )
        self._parameters(node.child_by_field_name("parameters"), inner)
        return inner

    def _method(self, node, scope: Scope) -> Scope:
        receiver = node.child_by_field_name("receiver")
        declarations = [p for p in receiver.named_children if p.type == "parameter_declaration"] if receiver else []
        if not declarations:
            return scope
        type_name = strip_type(self.text(declarations[0].child_by_field_name("type")))
        name_node = declarations[0].child_by_field_name("name")
        receiver_name = self.text(name_node) if name_node is not None else ""
        container = Scope(scope.index, type_name + ".", type_name, receiver_name, scope)
        name = self.text(node.child_by_field_name("name"))
        inner = self.define(node, name, "method", container, returns=self._result(node))
        self._parameters(node.child_by_field_name("parameters"), inner)
        return inner

    def _type(self, node, scope: Scope) -> Scope | None:
        name, body = node.child_by_field_name("name"), node.child_by_field_name("type")
        if name is None or body is None or body.type not in ("struct_type", "interface_type"):
            return None
        qualname = self.text(name)
        if body.type == "interface_type":
            inner = self.define(node, qualname, "interface", scope)
            for element in (e for e in body.named_children if e.type == "method_elem"):
                self.define(element, self.text(element.child_by_field_name("name")), "method", inner)
            return None
        bases = []
        for field in _descendants(body, "field_declaration"):
            type_node = field.child_by_field_name("type")
            if type_node is None:
                continue
            names = field.children_by_field_name("name")
            if not names:  # an embedded type: its methods are promoted, like a base class's
                bases.append(strip_type(self.text(type_node)))
            for field_name in names:
                self.attribute(qualname, self.text(field_name), strip_type(self.text(type_node)))
        self.define(node, qualname, "class", scope, bases=bases)
        return None

    def _result(self, node) -> str:
        result = node.child_by_field_name("result")
        if result is None or result.type == "parameter_list":
            return ""
        return strip_type(self.text(result))

    def _parameters(self, params, scope: Scope) -> None:
        if params is None:
            return
        for param in params.named_children:
            type_node = param.child_by_field_name("type")
            type_name = strip_type(self.text(type_node)) if type_node is not None else UNKNOWN
            for name in param.children_by_field_name("name"):
                self.variable(scope, self.text(name), type_name)

    # -- calls and variables ------------------------------------------------------------------------

    def _call(self, node, scope: Scope) -> Scope:
        function = node.child_by_field_name("function")
        if function is None:
            return scope
        if function.type == "identifier":
            self.call(scope, self.text(function), "", node)
        elif function.type == "selector_expression":
            operand = function.child_by_field_name("operand")
            receiver = self._dotted(operand)
            name = self.text(function.child_by_field_name("field"))
            if receiver:
                self.call(scope, name, receiver, node)
            elif operand.type == "call_expression":
                self.call(scope, name, "()", node, self._value_type(operand))
            else:
                self.call(scope, name, UNKNOWN, node, UNKNOWN)
        return scope

    def _short_var(self, node, scope: Scope) -> Scope:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        names = left.named_children if left is not None else []
        values = right.named_children if right is not None and right.type == "expression_list" else []
        for position, name in enumerate(names):
            value = values[position] if position < len(values) and len(values) == len(names) else None
            self.variable(scope, self.text(name), self._value_type(value) if value is not None else UNKNOWN)
        return scope

    def _var_spec(self, node, scope: Scope) -> Scope:
        type_node = node.child_by_field_name("type")
        value = node.child_by_field_name("value")
        if type_node is not None:
            type_name = strip_type(self.text(type_node))
        elif value is not None and value.named_child_count == 1:
            type_name = self._value_type(value.named_children[0])
        else:
            type_name = UNKNOWN
        for name in node.children_by_field_name("name"):
            self.variable(scope, self.text(name), type_name)
        return scope

    def _range(self, node, scope: Scope) -> Scope:
        left = node.child_by_field_name("left")
        for name in left.named_children if left is not None else []:
            if name.type == "identifier":
                self.variable(scope, self.text(name), UNKNOWN)
        return scope

    def _value_type(self, node) -> str:
        if node.type == "unary_expression":
            operand = node.child_by_field_name("operand")
            return self._value_type(operand) if operand is not None else UNKNOWN
        if node.type == "composite_literal":
            return strip_type(self.text(node.child_by_field_name("type")))
        if node.type == "call_expression":
            function = self._dotted(node.child_by_field_name("function"))
            return function + "()" if function else UNKNOWN
        return UNKNOWN

    def _dotted(self, node) -> str:
        if node.type in ("identifier", "package_identifier", "type_identifier", "field_identifier"):
            return self.text(node)
        if node.type == "selector_expression":
            head = self._dotted(node.child_by_field_name("operand"))
            return f"{head}.{self.text(node.child_by_field_name('field'))}" if head else ""
        return ""

    def _import(self, node, scope: Scope) -> None:
        path_node, name_node = node.child_by_field_name("path"), node.child_by_field_name("name")
        path = self.text(path_node).strip('"`')
        if name_node is None:
            parts = path.split("/")
            # `example.com/x/v2` is imported as `x`: a major-version suffix is not the package name
            local = parts[-2] if len(parts) > 1 and parts[-1][:1] == "v" and parts[-1][1:].isdigit() else parts[-1]
        else:
            local = self.text(name_node)
        if local == "_":
            return None
        self.bind("*" if local == "." else local, path, "", node)
        return None


def _descendants(node, kind: str):
    for child in node.named_children:
        if child.type == kind:
            yield child
        else:
            yield from _descendants(child, kind)


_HANDLERS = {
    "function_declaration": _Go._function,
    "method_declaration": _Go._method,
    "type_spec": _Go._type,
    "call_expression": _Go._call,
    "short_var_declaration": _Go._short_var,
    "var_spec": _Go._var_spec,
    "range_clause": _Go._range,
    "import_spec": _Go._import,
}
_Go.handlers = _HANDLERS
