"""The code graph: functions, methods and classes of a repository, the calls between them, imports.

    from hivelore.codegraph import Graph

    graph = Graph.open(home, repo_root)       # home/graph.db; several repositories may share it
    graph.is_indexed()                         # -> whether a full index of this repository has completed
    graph.index()                              # -> IndexStats(files, parsed, symbols, calls, seconds, skipped, touched)
    graph.reindex_file("shop/orders.py")       # -> ids of the symbols whose hash changed, new or gone
    graph.symbols_at("shop/orders.py", 10, 14) # -> ids overlapping those lines, innermost first
    graph.symbols_in("shop/orders.py")         # -> ids in source order
    graph.symbol("shop/orders.py::checkout")   # -> Symbol(id, file, qualname, kind, line, end_line, hash, present)
    graph.find("Cart.total")                   # -> [Symbol] by id, qualified name or name
    graph.callees(id) / graph.callers(id)      # -> [(id, confidence)]
    graph.blast_radius(id, hops=3)             # -> [(caller id, distance)]
    graph.within(id, 3, "callers")             # -> {id: call path, caller first} ("callers" or "callees")
    graph.shortest_path(a, b)                  # -> [a, ..., b] along calls from a to b, or None
    graph.hotspots(20)                         # -> [(id, pagerank, betweenness)]
    graph.export()                             # -> {"symbols": [...], "calls": [...], "imports": [...]}

A symbol id is `<repo-relative file>::<qualified name>`, with `#2`, `#3`, … for a second and later
definition of the same qualified name in one file (in source order): `shop/orders.py::checkout`,
`shop/orders.py::checkout#2`, `shop/orders.py::Cart.total`. Ids do not depend on the checkout's
path, so worktrees of one repository name the same code alike. Symbols are never deleted: one whose
definition disappeared stays with `present = False` and comes back under the same id.

Opening a graph and the queries that the pre-edit hook needs (`symbols_at`, `within`) import only
sqlite3 and this package's light modules; parsers, tree-sitter grammars and rustworkx are imported
when indexing or ranking needs them. docs/codegraph.md has the rules (ids, hashes, resolution and
confidences) and the measured precision, recall and timings.
"""

from hivelore.codegraph.graph import Graph
from hivelore.codegraph.model import IndexStats, Symbol

__all__ = ["Graph", "IndexStats", "Symbol"]
