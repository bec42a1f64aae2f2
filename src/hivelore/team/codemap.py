"""The code map's questions, answered from the code graph and the team's claims: a folder or a file
with who is changing what in it, a symbol's blast radius, the call path between two symbols (or
their nearest common caller), the hot spots, and the tasks of different developers whose claims are
within `HOPS` call hops of each other (the pre-edit check's rule, applied to every pair of tasks).

`Coordination.code_map()` opens one; the dashboard's code map (dashboard/codemap.py) is its surface.
"""

from __future__ import annotations

from hivelore.records import record
from hivelore.team.model import HOPS, Conflict, Intent, claimed_file, file_claim, find_conflicts

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from hivelore.codegraph import Graph
    from hivelore.codegraph.filemap import Entry
    from hivelore.team.contract import TeamStore

PATH_HOPS = 12  # as Graph.shortest_path
COMMON_CALLER_HOPS = 6  # a caller further than this from either symbol says little about both


@record
class MapClaim:
    """A claim of an active task: a symbol id, or a file claim row (file set, symbol "")."""

    symbol: str
    file: str
    developer: str
    task: int
    title: str


@record
class MapFolder:
    path: str
    children: list  # [filemap.Entry]
    bundles: list  # [filemap.Bundle]
    claims: dict  # {child path: {developer: claims under it}}


@record
class MapFile:
    path: str
    symbols: list  # [filemap.FileSymbol]
    calls: list  # [filemap.Call]
    claims: dict  # {symbol id: [MapClaim]}; "" holds the claims of the whole file (made before the graph)


@record
class Blast:
    symbol: str
    reached: list  # [(caller id, call hops)], nearest first
    calls: list  # [(caller, callee)]: the shortest chain from each caller down to the symbol


@record
class CallPath:
    """How two symbols meet: "calls" (chains [a, …, b]), "called by" ([b, …, a]), "common caller"
    (two chains from the caller, to a and to b), or "none" (no chains)."""

    kind: str
    chains: list  # [[id, …]] in call order, caller first


@record
class TaskConflict:
    """`conflict.symbol`, claimed by `developer`'s `task`, is within HOPS of `conflict.claimed`,
    claimed by `conflict.developer`'s `conflict.intent`; `conflict.path` is the call chain between."""

    task: Intent
    developer: str
    conflict: Conflict


class CodeMap:
    """The map of the repository `repo` over its graph and the team store (both already open)."""

    def __init__(self, graph: Graph, team: TeamStore, repo: str) -> None:
        self.graph, self.team, self.repo = graph, team, repo

    def indexed(self) -> bool:
        return self.graph.is_indexed()

    def claims(self) -> list[MapClaim]:
        """Every claim of the repository's active tasks (idle ones left out, as the conflict check does)."""
        return [
            MapClaim("" if file_claim(symbol) else symbol, claimed_file(symbol), owner, intent.id, intent.title)
            for symbol, intent, owner in self.team.active_claims(self.repo)
        ]

    def folder(self, path: str = "", bundles: bool = True) -> MapFolder:
        """A folder's children and (with `bundles`) their call bundles, and how many claims each
        developer has under each child."""
        found = self.graph.folder(path, bundles)
        counts: dict[str, dict[str, int]] = {}
        for claim in self.claims():
            child = _holder(found.children, claim.file)
            if child is not None:
                mine = counts.setdefault(child, {})
                mine[claim.developer] = mine.get(claim.developer, 0) + 1
        return MapFolder(found.path, found.children, found.bundles, counts)

    def file(self, path: str) -> MapFile:
        """One file's symbols, the calls in and out of them, and the claims on them."""
        found = self.graph.file_map(path)
        ids = {symbol.id for symbol in found.symbols}
        claims: dict[str, list[MapClaim]] = {}
        for claim in self.claims():
            if claim.file == found.path and (claim.symbol in ids or not claim.symbol):
                claims.setdefault(claim.symbol, []).append(claim)
        return MapFile(found.path, found.symbols, found.calls, claims)

    def blast_radius(self, symbol_id: str, hops: int = HOPS) -> Blast:
        """The callers within `hops` of the symbol, and the call chains that reach it from them."""
        chains = self.graph.within(symbol_id, hops, "callers")
        reached = sorted(((caller, len(chain) - 1) for caller, chain in chains.items()), key=lambda r: (r[1], r[0]))
        calls = sorted({(a, b) for chain in chains.values() for a, b in zip(chain, chain[1:], strict=False)})
        return Blast(symbol_id, reached, calls)

    def path(self, a: str, b: str) -> CallPath:
        """The shortest call chain from a to b, else from b to a, else through their nearest common caller."""
        forward = self.graph.shortest_path(a, b, PATH_HOPS)
        if forward is not None:
            return CallPath("calls", [forward])
        backward = self.graph.shortest_path(b, a, PATH_HOPS)
        if backward is not None:
            return CallPath("called by", [backward])
        common = self.graph.common_caller(a, b, COMMON_CALLER_HOPS)
        return CallPath("common caller", list(common)) if common else CallPath("none", [])

    def hotspots(self, limit: int = 20) -> list[tuple[str, float, float]]:
        """(symbol, PageRank, betweenness) of the most depended-on symbols."""
        return self.graph.hotspots(limit)

    def conflicts(self, hops: int = HOPS) -> list[TaskConflict]:
        """Each pair of active tasks of different developers with claims within `hops` call hops of
        each other, once, by its shortest call chain; nearest first."""
        claims = self.team.active_claims(self.repo)
        tasks: dict[int, tuple[Intent, str]] = {intent.id: (intent, owner) for _s, intent, owner in claims}
        best: dict[tuple[int, int], TaskConflict] = {}
        for task_id, (intent, owner) in sorted(tasks.items()):
            mine = [symbol for symbol, other, _o in claims if other.id == task_id]
            symbols = [s for s in mine if file_claim(s) is None]
            files = [claimed_file(s) for s in mine if file_claim(s) is not None]
            others = [claim for claim in claims if claim[2] != owner]
            for conflict in find_conflicts(others, self.graph, symbols, hops, files):
                pair = (min(task_id, conflict.intent.id), max(task_id, conflict.intent.id))
                known = best.get(pair)
                if known is None or conflict.distance < known.conflict.distance:
                    best[pair] = TaskConflict(intent, owner, conflict)
        return sorted(best.values(), key=lambda c: (c.conflict.distance, c.task.id, c.conflict.intent.id))


def _holder(children: list[Entry], file_path: str) -> str | None:
    """The child (a folder, or the file itself) that holds `file_path`, if any does."""
    for child in children:
        if file_path == child.path or (child.kind == "folder" and file_path.startswith(f"{child.path}/")):
            return child.path
    return None
