"""`GraphCode`: what a memory's cites are checked against (memory/citations.py), answered from
the code graph of one repository and the files of its work tree."""

from __future__ import annotations

import os
from collections.abc import Iterable

from hivelore.codegraph.graph import Graph
from hivelore.memory.citations import Code


class GraphCode(Code):
    """The code of the repository at `root` as `graph` (indexed) knows it; files are looked at on
    disk, so a file the graph does not read (`README.md`) can be cited too."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.root = graph.root

    @classmethod
    def open(cls, home: str, repo_root: str) -> GraphCode | None:
        """The code of `repo_root`, or None before its graph was ever indexed."""
        graph = Graph.existing(home, repo_root)
        return cls(graph) if graph is not None else None

    def close(self) -> None:
        self.graph.close()

    def resolve(self, name: str) -> tuple[str, str] | None:
        path = self._file(name)
        if path is not None:
            return path, self.graph.file_hash(path) or ""
        found = self.graph.find(name)
        if len(found) != 1:
            return None
        return found[0].id, found[0].hash

    def _file(self, name: str) -> str | None:
        """`name` as a repository-relative file path when it is a file of the work tree."""
        if "::" in name or os.path.isabs(name):
            return None
        relative = os.path.normpath(name).replace(os.sep, "/")
        if relative.startswith("../") or relative in ("..", ".") or relative.startswith(".git/"):
            return None
        return relative if os.path.isfile(os.path.join(self.root, relative)) else None

    def current(self, names: Iterable[str]) -> dict[str, str | None]:
        wanted = list(dict.fromkeys(names))
        symbols = [n for n in wanted if "::" in n]
        found: dict[str, str | None] = dict(self.graph.hashes(symbols)) if symbols else {}
        found.update({n: None for n in symbols if n not in found})  # never seen here: not this code
        for path in (n for n in wanted if "::" not in n):
            exists = os.path.isfile(os.path.join(self.root, path))
            found[path] = (self.graph.file_hash(path) or "") if exists else None
        return found
