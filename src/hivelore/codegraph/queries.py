"""Walks over the call edges in SQLite: neighbours, breadth-first reach with the shortest path to
each symbol, shortest paths, and the PageRank/betweenness hot spots (rustworkx, imported only here).

A walk asks SQLite for a whole frontier at once (`IN (...)` on the indexed caller or callee
column), so N hops cost about N queries, however many symbols each hop reaches.
"""

from __future__ import annotations

import sqlite3

from hivelore.codegraph.store import chunks

_STEP = {
    "callees": "SELECT caller, callee, confidence FROM calls WHERE caller IN ({})",
    "callers": "SELECT callee, caller, confidence FROM calls WHERE callee IN ({})",
}


def step(conn: sqlite3.Connection, keys: list[int], direction: str, min_confidence: float = 0.0):
    """(from, to, confidence) for each edge leaving `keys` in `direction` ("callees" or "callers")."""
    query = _STEP[direction]
    for batch in chunks(keys):
        for row in conn.execute(query.format(",".join("?" * len(batch))), batch):
            if row[2] >= min_confidence:
                yield row


def reach(
    conn: sqlite3.Connection,
    start: int,
    hops: int,
    direction: str,
    min_confidence: float = 0.0,
    goal: int | None = None,
) -> dict[int, tuple[int, int]]:
    """Symbols within `hops` of `start`: key → (the key it was reached from, distance). Stops early
    once `goal` is reached."""
    found: dict[int, tuple[int, int]] = {start: (start, 0)}
    frontier = [start]
    for distance in range(1, hops + 1):
        nxt = []
        for source, target, _confidence in step(conn, frontier, direction, min_confidence):
            if target not in found:
                found[target] = (source, distance)
                nxt.append(target)
        if not nxt or (goal is not None and goal in found):
            break
        frontier = sorted(nxt)
    return found


def path_to(found: dict[int, tuple[int, int]], key: int) -> list[int]:
    """The walk's path from its start to `key`, start first."""
    path = [key]
    while found[path[-1]][1] > 0:
        path.append(found[path[-1]][0])
    return path[::-1]


def hotspots(conn: sqlite3.Connection, repo: str, limit: int) -> list[tuple[int, float, float]]:
    """(key, PageRank, betweenness) of the `limit` symbols with the highest PageRank. PageRank runs
    along call edges, so it ranks what much code depends on; betweenness (normalised) ranks the
    symbols many call chains pass through."""
    import rustworkx

    edges = conn.execute(
        "SELECT c.caller, c.callee FROM calls c JOIN symbols s ON s.key = c.caller WHERE s.repo = ?", (repo,)
    ).fetchall()
    if not edges:
        return []
    graph = rustworkx.PyDiGraph()
    keys = sorted({key for edge in edges for key in edge})
    nodes = dict(zip(keys, graph.add_nodes_from(keys), strict=True))
    graph.add_edges_from_no_data([(nodes[a], nodes[b]) for a, b in edges if a != b])
    ranks = rustworkx.pagerank(graph)
    between = rustworkx.digraph_betweenness_centrality(graph, normalized=True)
    ranked = sorted(nodes.items(), key=lambda item: (-ranks[item[1]], item[0]))[:limit]
    return [(key, ranks[index], between[index]) for key, index in ranked]
