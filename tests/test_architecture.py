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

FOUNDATION = {"errors", "records", "atomicfile", "confined", "folderlock", "sqlitedb", "gitrepo", "home", "config"}
SURFACES = ("cli", "mcp", "hooks", "server", "dashboard")
# The pydantic shapes the JSON surfaces share: part of the surfaces' layer, below none of them.
SHAPES = "schemas"
# What a hook process imports: the surface itself and everything it calls at module level.
HOOK_PATH = ("hooks", "events", "memory", "profile", "team")
HEAVY = {"typer", "rich", "click", "pydantic", "mcp", "mcp_types", "fastapi", "uvicorn", "psycopg", "yaml"}


@dataclass(frozen=True)
class Module:
    name: str  # dotted, without the leading "hivelore."
    imports: frozenset[str]  # dotted names imported at module level, absolute
    anywhere: frozenset[str]  # dotted names imported anywhere in the module, in functions too

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


def _imports(statements: list[ast.stmt] | list[ast.AST]) -> frozenset[str]:
    names: set[str] = set()
    for node in statements:
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
        tree = ast.parse(path.read_text())
        found.append(Module(name or "__init__", _imports(_module_level(tree.body)), _imports(list(ast.walk(tree)))))
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


def _package(name: str) -> str:
    return name.rpartition(".")[0]


@pytest.mark.parametrize("module", MODULES, ids=_ids)
def test_no_two_modules_import_each_other(module: Module) -> None:
    """Not even from inside a function: what two modules both need belongs in a third (as `hooks.wire`
    and `hooks.log` hold what `hooks.client` and `hooks.command` share). A package and its own
    modules are one unit."""
    names = {m.name: m for m in MODULES}
    both = {
        other.name
        for imported in module.anywhere
        if (other := names.get(imported.removeprefix("hivelore."))) is not None
        and other is not module
        and f"hivelore.{module.name}" in other.anywhere
        and module.name != _package(other.name)
        and other.name != _package(module.name)
    }
    assert not both, f"{module.name} and {sorted(both)} import each other"


STORES = ("hivelore.team.store", "hivelore.codegraph.store", "hivelore.memory.local", "hivelore.sqlitedb")
EVENTS_STORE = "hivelore.events.store"
EVENTS_STORE_USERS = ("hooks", "cli.profile")


def _source(module: Module) -> ast.Module:
    path = PACKAGE.joinpath(*module.name.split("."))
    return ast.parse((path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).read_text())


@pytest.mark.parametrize("module", [m for m in MODULES if m.under(*SURFACES)], ids=_ids)
def test_the_surfaces_call_the_services_and_never_a_store(module: Module) -> None:
    """A surface calls memory.service.Hivelore, team.coordination.Coordination and profile, and prints
    what they answer: it imports no store — anywhere in the module, as this is about what it depends
    on, not when it loads — and reaches into no Coordination's `.team` or `.graph`.

    events.db is the exception, for hooks/ and cli/profile.py only: it has one implementation, on
    this machine (the hooks' own bookkeeping), so they open `hivelore.events.store` directly."""
    tree = _source(module)
    forbidden = STORES if module.under(*EVENTS_STORE_USERS) else (*STORES, EVENTS_STORE)
    imported = {n for n in module.anywhere if any(n == s or n.startswith(s + ".") for s in forbidden)}
    reached = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in ("team", "graph")}
    assert not imported, f"{module.name} imports {sorted(imported)}: call a service instead"
    assert not reached, f"{module.name} reaches through a service into its .{', .'.join(sorted(reached))}"


BACKENDS = ("sqlite3", "hivelore.sqlitedb", "hivelore.memory.local", "hivelore.events", "hivelore.team")


def test_ranking_imports_no_backend() -> None:
    recall = next(m for m in MODULES if m.name == "memory.recall")
    backends = {n for n in recall.imports if any(n == b or n.startswith(b + ".") for b in BACKENDS)}
    assert not backends, f"memory.recall imports {sorted(backends)}"
