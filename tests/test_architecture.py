"""The layers, pinned by reading the imports of every module under src/hivelore (docs/architecture.md).

Only module-level imports count: an import inside a function is paid when the function runs, which
is how the hook path and the fast commands keep heavy libraries out of their start-up. An import
under `if TYPE_CHECKING:` is never executed and does not count either.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "hivelore"

FOUNDATION = {"errors", "records", "atomicfile", "confined", "sqlitedb", "gitrepo", "home", "config"}
SURFACES = ("cli", "mcp", "hooks")
# The pydantic shapes the JSON surfaces share: part of the surfaces' layer, below none of them.
SHAPES = "schemas"
# What a hook process imports: the surface itself and everything it calls at module level.
HOOK_PATH = ("hooks", "events", "memory", "profile", "team")
HEAVY = {"typer", "rich", "click", "pydantic", "mcp", "mcp_types", "fastapi", "uvicorn", "psycopg", "yaml"}


@dataclass(frozen=True)
class Module:
    name: str  # dotted, without the leading "hivelore."
    imports: frozenset[str]  # dotted names imported at module level, absolute

    def under(self, *packages: str) -> bool:
        return any(self.name == p or self.name.startswith(p + ".") for p in packages)


def _is_type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def _module_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements run on import: the body, and the branches of a module-level if/try."""
    statements: list[ast.stmt] = []
    for node in body:
        statements.append(node)
        if isinstance(node, ast.If) and not _is_type_checking(node.test):
            statements += _module_level(node.body) + _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            statements += _module_level(node.body)
            for handler in node.handlers:
                statements += _module_level(handler.body)
    return statements


def _imports(tree: ast.Module) -> frozenset[str]:
    names: set[str] = set()
    for node in _module_level(tree.body):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return frozenset(names)


def _modules() -> list[Module]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found.append(Module(name or "__init__", _imports(ast.parse(path.read_text()))))
    return found


MODULES = _modules()


def _top(name: str) -> str:
    return name.split(".")[0]


def _ids(module: Module) -> str:
    return module.name


def test_the_walk_sees_the_packages() -> None:
    names = {m.name for m in MODULES}
    assert {"memory.service", "memory.local.index", "team.coordination", "events.store", "hooks.client"} <= names
    assert "hivelore.memory.service" in next(m for m in MODULES if m.name == "cli.app").imports


@pytest.mark.parametrize("module", [m for m in MODULES if m.name in FOUNDATION], ids=_ids)
def test_the_foundation_imports_only_the_standard_library_and_itself(module: Module) -> None:
    outside = {
        name
        for name in module.imports
        if not (_top(name) in sys.stdlib_module_names or name == "hivelore" or name.startswith("hivelore."))
    }
    above = {
        name
        for name in module.imports
        if name.startswith("hivelore.") and name.split(".")[1] not in FOUNDATION | {"__version__"}
    }
    assert not outside, f"{module.name} imports {sorted(outside)}"
    assert not above, f"{module.name} imports from above the foundation: {sorted(above)}"


@pytest.mark.parametrize("module", [m for m in MODULES if m.under(*HOOK_PATH)], ids=_ids)
def test_the_hook_path_imports_only_the_standard_library(module: Module) -> None:
    outside = {n for n in module.imports if _top(n) not in sys.stdlib_module_names and _top(n) != "hivelore"}
    assert not outside, f"{module.name} imports {sorted(outside)} at module level"
    assert "typing" not in module.imports, f"{module.name} imports typing (see records.py for the idiom)"


@pytest.mark.parametrize("module", [m for m in MODULES if not m.under(*SURFACES, SHAPES)], ids=_ids)
def test_nothing_below_the_surfaces_imports_a_surface_library(module: Module) -> None:
    heavy = {n for n in module.imports if _top(n) in HEAVY}
    assert not heavy, f"{module.name} imports {sorted(heavy)} at module level"
    assert f"hivelore.{SHAPES}" not in module.imports, f"{module.name} imports the JSON shapes"
