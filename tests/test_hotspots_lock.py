"""Keeping the hot spots in graph.db is a cache write: while another process holds graph.db's write
lock (a large index), the ranking is returned after a short wait and not kept — never after the
store's 30 s busy timeout — and the store's own timeout is back as it was."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from hivelore.codegraph import Graph
from hivelore.codegraph.graph import HOTSPOTS_KEEP_WAIT_MS

FILES = {"lib.py": "def core():\n    pass\n", "use.py": "from lib import core\n\n\ndef user():\n    core()\n"}


def test_hot_spots_do_not_wait_out_an_index_holding_the_write_lock(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for name, text in FILES.items():
        (repo / name).write_text(text)
    graph = Graph.open(str(tmp_path / "home"), str(repo))
    graph.index()
    waited_ms = graph.store.conn.execute("PRAGMA busy_timeout").fetchone()[0]
    indexer = sqlite3.connect(graph.store.path, isolation_level=None)
    indexer.execute("BEGIN IMMEDIATE")  # what an index does while it writes
    try:
        started = time.monotonic()
        ranked = graph.hotspots(2)
        took = time.monotonic() - started
    finally:
        indexer.execute("ROLLBACK")
        indexer.close()

    assert ranked[0][0] == "lib.py::core"
    assert took < 5 and waited_ms > 10 * HOTSPOTS_KEEP_WAIT_MS
    assert graph.store.meta("hotspots") is None  # not kept: the lock was held
    assert graph.store.conn.execute("PRAGMA busy_timeout").fetchone()[0] == waited_ms
    graph.hotspots(2)
    assert json.loads(graph.store.meta("hotspots") or "{}")["code"] == graph.store.code_digest()
    graph.close()
