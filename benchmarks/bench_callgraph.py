"""The Python call graph against PyCG's micro-benchmark: precision and recall per category.

PyCG (github.com/vitsalis/PyCG) ships `micro-benchmark/snippets/<category>/<case>/`: a few Python
files per case and `callgraph.json`, the expected call graph in PyCG's format (each caller's
qualified name, such as `main.func` or `pkg.mod.A.f`, mapped to the list of its callees). This
script indexes each case folder with hivelore's code graph, names each of its call edges the way
PyCG does and compares them with `callgraph.json`, read as it is.

    git --git-dir=<PyCG's git dir> archive HEAD micro-benchmark | tar -x -C /tmp/pycg
    python benchmarks/bench_callgraph.py /tmp/pycg/micro-benchmark
    python benchmarks/bench_callgraph.py /tmp/pycg/micro-benchmark --misses    # each wrong and missed edge

Naming: a symbol `pkg/mod.py::A.f` is `pkg.mod.A.f`, `pkg/__init__.py::f` is `pkg.f`, and `f#2` is
`f`. An edge to a class (hivelore's instantiation edge, beside the one to the constructor that runs)
has no counterpart in PyCG's graph, whose nodes are functions and modules, and is left out.

What is compared: PyCG names code at module level as a caller (`main`); hivelore's graph has no
symbol for it (its calls are not edges), so the expected edges whose caller is a module are set aside
and counted in their own column. Every other expected edge counts, those to builtins (`<builtin>.len`),
to other packages (`ext.f`) and from or to lambdas (`main.<lambda1>`) included, and every edge of the
graph counts. Precision is correct / found, recall correct / expected, summed over the cases of a
category. The exit status is 0 unless the folder is not PyCG's micro-benchmark.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hivelore.codegraph import Graph

Edge = tuple[str, str]


@dataclass
class Case:
    category: str
    name: str
    expected: set[Edge]  # the expected edges whose caller is a function, a method or a lambda
    module_level: set[Edge]  # the expected edges whose caller is a module: set aside
    found: set[Edge]

    @property
    def correct(self) -> set[Edge]:
        return self.found & self.expected


@dataclass
class Tally:
    cases: int = 0
    expected: int = 0
    found: int = 0
    correct: int = 0
    module_level: int = 0
    names: list[str] = field(default_factory=list)

    def add(self, case: Case) -> None:
        self.cases += 1
        self.expected += len(case.expected)
        self.found += len(case.found)
        self.correct += len(case.correct)
        self.module_level += len(case.module_level)


def modules(case: Path) -> set[str]:
    """The module names of a case's files, as PyCG writes them (`main`, `pkg`, `pkg.mod`)."""
    return {module_name(str(path.relative_to(case))) for path in case.rglob("*.py")}


def module_name(relative_file: str) -> str:
    dotted = relative_file.removesuffix(".py").replace("/", ".")
    return "" if dotted == "__init__" else dotted.removesuffix(".__init__")


def pycg_name(symbol_id: str) -> str:
    """`pkg/mod.py::A.f#2` → `pkg.mod.A.f`."""
    file, _, qualname = symbol_id.partition("::")
    module = module_name(file)
    qualname = qualname.split("#")[0]
    return f"{module}.{qualname}" if module else qualname


def graph_edges(case: Path, home: Path) -> set[Edge]:
    with Graph.open(str(home), str(case)) as graph:
        graph.index()
        exported = graph.export()
    kinds = {s["id"]: s["kind"] for s in exported["symbols"]}
    return {
        (pycg_name(c["caller"]), pycg_name(c["callee"])) for c in exported["calls"] if kinds[c["callee"]] != "class"
    }


def read_case(folder: Path, home: Path) -> Case:
    expected_graph = json.loads((folder / "callgraph.json").read_text())
    edges = {(caller, callee) for caller, callees in expected_graph.items() for callee in callees}
    names = modules(folder)
    module_level = {edge for edge in edges if edge[0] in names}
    found = graph_edges(folder, home)
    return Case(folder.parent.name, folder.name, edges - module_level, module_level, found)


def ratio(part: int, whole: int) -> str:
    return f"{part / whole:.3f}" if whole else "–"


def table(cases: list[Case]) -> None:
    tallies: dict[str, Tally] = {}
    total = Tally()
    for case in cases:
        tallies.setdefault(case.category, Tally()).add(case)
        total.add(case)
    print("| category | cases | expected | found | correct | precision | recall | module-level, set aside |")
    print("|---|---|---|---|---|---|---|---|")
    for category, t in sorted(tallies.items()):
        print(
            f"| {category} | {t.cases} | {t.expected} | {t.found} | {t.correct} | {ratio(t.correct, t.found)}"
            f" | {ratio(t.correct, t.expected)} | {t.module_level} |"
        )
    print(
        f"| **all** | {total.cases} | {total.expected} | {total.found} | {total.correct}"
        f" | **{ratio(total.correct, total.found)}** | **{ratio(total.correct, total.expected)}**"
        f" | {total.module_level} |"
    )
    whole = total.expected + total.module_level
    print(
        f"\nWith the module-level edges counted as missed: recall {total.correct}/{whole}"
        f" = {ratio(total.correct, whole)}."
    )


def misses(cases: list[Case]) -> None:
    for case in cases:
        wrong, missed = sorted(case.found - case.expected), sorted(case.expected - case.found)
        if wrong or missed:
            print(f"\n{case.category}/{case.name}")
            for caller, callee in wrong:
                print(f"  wrong   {caller} → {callee}")
            for caller, callee in missed:
                print(f"  missed  {caller} → {callee}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("micro_benchmark", nargs="?", help="PyCG's micro-benchmark folder (holds snippets/)")
    parser.add_argument("--misses", action="store_true", help="list each wrong and missed edge, per case")
    args = parser.parse_args()
    if not args.micro_benchmark:
        sys.exit("bench_callgraph: give the path of PyCG's micro-benchmark folder (see this script's docstring).")
    root = Path(args.micro_benchmark)
    folders = sorted(path.parent for path in root.glob("snippets/*/*/callgraph.json"))
    if not folders:
        sys.exit(
            f"bench_callgraph: {root} holds no snippets/<category>/<case>/callgraph.json: not PyCG's micro-benchmark."
        )
    with tempfile.TemporaryDirectory() as scratch:
        cases = [read_case(folder, Path(scratch) / str(n)) for n, folder in enumerate(folders)]
    print(f"# the Python call graph against PyCG's micro-benchmark ({root})\n")
    table(cases)
    if args.misses:
        misses(cases)


if __name__ == "__main__":
    main()
