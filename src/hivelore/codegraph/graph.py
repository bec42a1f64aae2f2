"""`Graph`: the code graph of one repository, kept in HOME/graph.db — indexing and the queries."""

from __future__ import annotations

import json
import os
import sqlite3
import time

from hivelore.codegraph import filemap, queries
from hivelore.codegraph.model import ALIAS, VALUE, IndexStats, Symbol
from hivelore.codegraph.store import PARSER_VERSION, FileChange, GraphBusy, GraphUnavailable, Store, chunks, discard
from hivelore.errors import BadInput, NotFound
from hivelore.home import private_file, private_folder

HOTSPOTS_KEPT = 200  # hot spots kept in graph.db; a longer list is computed each time
HOTSPOTS_KEEP_WAIT_MS = 100  # how long keeping them waits for another process's write lock
MAX_FILE_BYTES = 1_000_000  # larger files are generated or vendored code, not worth a parse
AMBIGUOUS_SHOWN = 5  # candidates a name of several symbols lists

_SYMBOL = "id, file, qualname, kind, line, end_line, hash, present"


class Graph:
    """The graph of the repository at `root` (an absolute, resolved path) in one graph.db."""

    def __init__(self, store: Store, root: str, max_file_bytes: int = MAX_FILE_BYTES) -> None:
        self.store = store
        self.root = root
        self.max_file_bytes = max_file_bytes

    @classmethod
    def open(
        cls, home: str, repo_root: str, *, max_file_bytes: int = MAX_FILE_BYTES, discard_unusable: bool = False
    ) -> Graph:
        """The graph of `repo_root` in `home`/graph.db (created on first use; nothing is indexed). A
        graph.db that cannot be used raises GraphUnavailable, or with `discard_unusable` (what
        `hivelore graph index` does: the graphs are derived from the code) is removed and started anew."""
        private_folder(home)
        path = os.path.join(home, "graph.db")
        private_file(path)  # before SQLite makes it with the umask's mode (its -wal and -shm copy it)
        root = os.path.realpath(repo_root)
        try:
            return cls(Store.open(path, root), root, max_file_bytes)
        except GraphUnavailable as exc:
            if not discard_unusable or isinstance(exc, GraphBusy):  # a busy file is in use, not damaged
                raise
        discard(path)
        private_file(path)
        return cls(Store.open(path, root), root, max_file_bytes)

    @classmethod
    def in_memory(cls, repo: str) -> Graph:
        """An empty graph of `repo` in memory, taken as indexed: the team server fills one with the
        whole graph a client pushed (server/postgres/graph.py)."""
        store = Store.in_memory(repo)
        store.set_meta("parser", PARSER_VERSION)
        return cls(store, repo)

    @classmethod
    def existing(cls, home: str, repo_root: str) -> Graph | None:
        """The graph of `repo_root` when graph.db exists and has indexed it, else None: what a read
        asks, which must never make a graph.db nor wait for an index."""
        if not os.path.isfile(os.path.join(home, "graph.db")):
            return None
        graph = cls.open(home, repo_root)
        if graph.is_indexed():
            return graph
        graph.close()
        return None

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Graph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- indexing -----------------------------------------------------------------------------------

    def is_indexed(self) -> bool:
        """Whether a full `index()` of this repository has completed at least once (indexing only
        some files does not count: their graph would miss the calls from everywhere else)."""
        return self.store.meta("parser") is not None

    def index(self, paths: list[str] | None = None) -> IndexStats:
        """Bring the graph up to date with the files: all of the repository (files whose size and
        mtime did not change are not read again), or only `paths` (each re-read; a path that no
        longer exists marks its symbols absent)."""
        started = time.perf_counter()
        parsed, skipped, touched = self._update(paths)
        files, symbols, calls = self.store.counts()
        return IndexStats(files, parsed, symbols, calls, time.perf_counter() - started, skipped, touched)

    def reindex_file(self, path: str) -> list[str]:
        """Re-read one file (after an edit); the ids of the symbols it touched: new, gone, or whose
        hash changed. A formatting-only change touches nothing."""
        return self._update([path])[2]

    def _update(self, paths: list[str] | None) -> tuple[int, list, list[str]]:
        """Re-read what changed; (files parsed, files skipped with why, touched ids)."""
        import hashlib

        from hivelore.codegraph.sources import parse_source, source_files

        store = self.store
        known = store.stamps()
        full = paths is None
        reparse_all = full and store.meta("parser") != PARSER_VERSION
        skipped: list[tuple[str, str]]
        if paths is None:
            wanted = dict(source_files(self.root))
            removed, skipped = [path for path in known if path not in wanted], []
        else:
            wanted, removed, skipped = self._named_files(paths, known)
        parsed, stamps = [], []
        for relative, language in wanted.items():
            absolute = os.path.join(self.root, relative)
            try:
                stat = os.stat(absolute)
                stamp = known.get(relative)
                if full and not reparse_all and stamp and stamp[:2] == (stat.st_mtime_ns, stat.st_size):
                    continue
                if stat.st_size > self.max_file_bytes:
                    skipped.append((relative, f"larger than {self.max_file_bytes} bytes"))
                    continue
                with open(absolute, "rb") as handle:
                    source = handle.read()
            except OSError as exc:
                skipped.append((relative, str(exc)))
                continue
            digest = hashlib.blake2b(source, digest_size=16).hexdigest()
            stamps.append((relative, language, stat.st_mtime_ns, stat.st_size, digest))
            if stamp and stamp[2] == digest and not reparse_all:
                continue  # touched, not changed (a checkout, a save without edits)
            try:
                parsed.append(parse_source(relative, language, source))
            except Exception as exc:  # a syntax error, or a construct a walker does not expect: one file lost
                stamps.pop()  # keep its last good symbols; try again next time
                skipped.append((relative, f"does not parse: {type(exc).__name__}: {exc}"))
        touched: list[str] = []
        with store.transaction():
            for row in stamps:
                store.stamp(*row)
            changes = [store.write_file(p) for p in parsed] + [store.remove_file(p) for p in removed]
            for change in changes:
                touched.extend(change.touched)
            if parsed or removed:
                self._resolve(changes, everything=full, files=[p.path for p in parsed])
            if full:
                store.set_meta("parser", PARSER_VERSION)
        return len(parsed), skipped, touched

    def _named_files(self, paths: list[str], known: dict) -> tuple[dict[str, str], list[str], list[tuple[str, str]]]:
        """(files to read → language, files gone, paths skipped with why) for the paths a caller named:
        files, or folders (each stands for the source files under it)."""
        from hivelore.codegraph.languages import language_of
        from hivelore.codegraph.sources import skipped_folder

        wanted: dict[str, str] = {}
        removed: list[str] = []
        skipped: list[tuple[str, str]] = []
        for path in paths:
            relative = self.relative(path)
            absolute = os.path.join(self.root, relative)
            language = language_of(relative)
            if relative == ".." or relative.startswith("../"):
                skipped.append((path, f"outside the repository {self.root}"))
            elif os.path.isdir(absolute):
                found = self._folder_files(relative)
                if not found:
                    skipped.append((relative, "holds no source file the graph reads"))
                wanted.update(found)
                prefix = "" if relative == "." else f"{relative}/"
                removed += [old for old in known if old.startswith(prefix) and old not in found]
            elif language is None or skipped_folder(relative):
                skipped.append((relative, "not a source file the graph reads (or in a skipped folder)"))
            elif os.path.isfile(absolute):
                wanted[relative] = language
            elif relative in known:
                removed.append(relative)
        return wanted, removed, skipped

    def _folder_files(self, relative: str) -> dict[str, str]:
        """The source files under one folder of the repository, as the whole-repository walk sees them."""
        from hivelore.codegraph.sources import skipped_folder, source_files

        if relative == ".":
            return dict(source_files(self.root))
        if skipped_folder(f"{relative}/x"):
            return {}
        return {f"{relative}/{path}": language for path, language in source_files(os.path.join(self.root, relative))}

    def _resolve(self, changes: list[FileChange], everything: bool, files: list[str]) -> None:
        from hivelore.codegraph.model import Site
        from hivelore.codegraph.resolve import FileScope, Module, Resolver

        store = self.store
        resolver = Resolver(store)
        if everything:
            callers = None
            files = store.files()
        else:
            callers = set()
            names: set[str] = set()
            for change in changes:
                callers |= change.callers
                names |= change.names
            callers |= store.callers_of(names)
        edges: dict[tuple[int, int], float] = {}
        for caller, (name, receiver, receiver_type, line, args) in store.sites(callers):
            site = Site(caller.key, name, receiver, receiver_type, line, args)
            for callee, confidence in resolver.resolve(caller, site).items():
                if edges.get((caller.key, callee), 0.0) < confidence:
                    edges[(caller.key, callee)] = confidence
        store.replace_calls(callers, [(a, b, c) for (a, b), c in edges.items()])
        targets = []
        for path in files:
            scope = FileScope(path)
            for binding in store.bindings(path):
                module = resolver.module_for(scope, binding)
                if isinstance(module, Module):
                    targets.append((module.base or "/".join(module.files[:1]), path, binding.line, binding.local))
        store.set_import_targets(targets)

    # -- symbols ------------------------------------------------------------------------------------

    def relative(self, path: str) -> str:
        """A path as the graph names files: relative to the repository root, with "/"."""
        if os.path.isabs(path):
            path = os.path.relpath(os.path.realpath(path), self.root)
        return os.path.normpath(path).replace(os.sep, "/")

    def symbols_at(self, path: str, line_start: int, line_end: int) -> list[str]:
        """Ids of the present symbols whose lines overlap `line_start..line_end`, innermost first
        (an edit inside a method gives the method, then its class)."""
        rows = self.store.conn.execute(
            "SELECT id FROM symbols WHERE repo = ? AND file = ? AND present = 1 AND line <= ? AND end_line >= ?"
            " ORDER BY end_line - line, line",
            (self.root, self.relative(path), line_end, line_start),
        )
        return [symbol_id for (symbol_id,) in rows]

    def symbols_in(self, path: str) -> list[str]:
        """Ids of the present symbols of a file, in source order."""
        rows = self.store.conn.execute(
            "SELECT id FROM symbols WHERE repo = ? AND file = ? AND present = 1 ORDER BY line, key",
            (self.root, self.relative(path)),
        )
        return [symbol_id for (symbol_id,) in rows]

    def symbol(self, symbol_id: str) -> Symbol | None:
        """A symbol by id, present or not (None if the graph never saw it)."""
        row = self.store.conn.execute(
            f"SELECT {_SYMBOL} FROM symbols WHERE repo = ? AND id = ?", (self.root, symbol_id)
        ).fetchone()
        return _symbol(row) if row else None

    def hashes(self, symbol_ids: list[str]) -> dict[str, str | None]:
        """Per id the graph has seen, its hash now, or None when its definition disappeared."""
        found: dict[str, str | None] = {}
        for batch in chunks(symbol_ids):
            query = f"SELECT id, hash, present FROM symbols WHERE repo = ? AND id IN ({','.join('?' * len(batch))})"
            rows = self.store.conn.execute(query, [self.root, *batch])
            found.update((i, h if present else None) for i, h, present in rows)
        return found

    def file_hash(self, path: str) -> str | None:
        """The hash of a source file's contents as last indexed, None for a file the graph does not hold."""
        row = self.store.conn.execute(
            "SELECT hash FROM files WHERE repo = ? AND path = ?", (self.root, self.relative(path))
        ).fetchone()
        return row[0] if row else None

    def find(self, name: str) -> list[Symbol]:
        """Present symbols by id, qualified name (`Cart.total`) or plain name (`total`)."""
        if "::" in name:
            found = self.symbol(name)
            return [found] if found and found.present else []
        rows = self.store.conn.execute(
            f"SELECT {_SYMBOL} FROM symbols WHERE repo = ? AND present = 1 AND (qualname = ? OR name = ?)"
            " ORDER BY file, line",
            (self.root, name, name),
        )
        return [_symbol(row) for row in rows]

    def resolve(self, name: str, hint: str = "check the name") -> str:
        """The id of the one symbol `name` names, the rule of every surface that takes a symbol: a
        full id (`path::qualname`) the graph has seen, present or gone from the code since (its
        attempts and decisions outlive it), or a qualified name (`Cart.total`) or plain name
        (`total`) of exactly one present symbol. NotFound when none, ending with the caller's
        `hint` (what to do in its setting); BadInput when several, naming up to five."""
        if "::" in name and self.symbol(name) is not None:
            return name
        found = self.find(name)
        if not found:
            raise NotFound(f"no symbol '{name}' in the graph of {self.root}: {hint}.")
        if len(found) > 1:
            ids = ", ".join(s.id for s in found[:AMBIGUOUS_SHOWN]) + (", …" if len(found) > AMBIGUOUS_SHOWN else "")
            raise BadInput(f"'{name}' names {len(found)} symbols ({ids}): give the id of one.")
        return found[0].id

    # -- calls --------------------------------------------------------------------------------------

    def callees(self, symbol_id: str, min_confidence: float = 0.0) -> list[tuple[str, float]]:
        """What the symbol calls: (id, confidence), most confident first."""
        return self._neighbours(symbol_id, "callees", min_confidence)

    def callers(self, symbol_id: str, min_confidence: float = 0.0) -> list[tuple[str, float]]:
        """What calls the symbol: (id, confidence), most confident first."""
        return self._neighbours(symbol_id, "callers", min_confidence)

    def _neighbours(self, symbol_id: str, direction: str, min_confidence: float) -> list[tuple[str, float]]:
        key = self._key(symbol_id)
        if key is None:
            return []
        edges = list(queries.step(self.store.conn, [key], direction, min_confidence))
        ids = self._ids([target for _source, target, _c in edges])
        return sorted(((ids[target], c) for _source, target, c in edges), key=lambda item: (-item[1], item[0]))

    def blast_radius(self, symbol_id: str, hops: int = 3, min_confidence: float = 0.0) -> list[tuple[str, int]]:
        """The callers within `hops` call hops, with their distance, nearest first."""
        key = self._key(symbol_id)
        if key is None:
            return []
        found = queries.reach(self.store.conn, key, hops, "callers", min_confidence)
        ids = self._ids([k for k in found if k != key])
        return sorted(((ids[k], distance) for k, (_parent, distance) in found.items() if k != key), key=_by_distance)

    def within(
        self, symbol_id: str, hops: int, direction: str = "callers", min_confidence: float = 0.0
    ) -> dict[str, list[str]]:
        """The symbols within `hops` hops in one direction ("callers" or "callees"), each with the
        shortest call path between it and `symbol_id`, written in call order (caller first): for
        callers `[caller, …, symbol_id]`, for callees `[symbol_id, …, callee]`."""
        if direction not in ("callers", "callees"):
            raise ValueError(f"direction must be 'callers' or 'callees', not {direction!r}")
        key = self._key(symbol_id)
        if key is None:
            return {}
        found = queries.reach(self.store.conn, key, hops, direction, min_confidence)
        ids = self._ids(list(found))
        paths = {}
        for target in found:
            if target == key:
                continue
            path = [ids[k] for k in queries.path_to(found, target)]
            paths[ids[target]] = path[::-1] if direction == "callers" else path
        return paths

    def shortest_path(self, a: str, b: str, max_hops: int = 12) -> list[str] | None:
        """The shortest chain of calls from `a` to `b` (a calls …, which calls b), ids from a to b;
        None when `a` does not reach `b` within `max_hops`. For the other way round, swap them."""
        start, goal = self._key(a), self._key(b)
        if start is None or goal is None:
            return None
        if start == goal:
            return [a]
        found = queries.reach(self.store.conn, start, max_hops, "callees", goal=goal)
        if goal not in found:
            return None
        path = queries.path_to(found, goal)
        ids = self._ids(path)
        return [ids[k] for k in path]

    def common_caller(self, a: str, b: str, max_hops: int = 6) -> tuple[list[str], list[str]] | None:
        """The nearest symbol that reaches both `a` and `b` by calls (fewest hops to both, then by id),
        as its two call chains `[caller, …, a]` and `[caller, …, b]`; None when none does within
        `max_hops` of each."""
        to_a, to_b = self.within(a, max_hops, "callers"), self.within(b, max_hops, "callers")
        shared = to_a.keys() & to_b.keys()
        if not shared:
            return None
        best = min(shared, key=lambda caller: (len(to_a[caller]) + len(to_b[caller]), caller))
        return to_a[best], to_b[best]

    def folder(self, path: str = "", bundles: bool = True) -> filemap.Folder:
        """A folder's children with their symbol counts and the call bundles between them (filemap.py)."""
        return filemap.folder(self, path, bundles)

    def file_map(self, path: str) -> filemap.FileMap:
        """One file's present symbols and every call in or out of them (filemap.py)."""
        return filemap.file(self, self.relative(path))

    def hotspots(self, limit: int = 20) -> list[tuple[str, float, float]]:
        """(id, PageRank, betweenness) of the most depended-on symbols, highest PageRank first.

        Betweenness is O(symbols × calls) and holds the interpreter while it runs (seconds at 30,000
        symbols), so the top HOTSPOTS_KEPT are kept in graph.db under the code they were computed on
        (every file's hash and the parser version) and computed again only when that code changed."""
        code = self.store.code_digest()
        kept = json.loads(self.store.meta("hotspots") or "{}")
        if kept.get("code") == code and (limit <= len(kept["ranked"]) or kept["complete"]):
            ranked = [(key, rank, between) for key, rank, between in kept["ranked"][:limit]]
        else:
            wanted = max(limit, HOTSPOTS_KEPT)
            ranked = queries.hotspots(self.store.conn, self.root, wanted)
            self._keep_hotspots({"code": code, "ranked": ranked, "complete": len(ranked) < wanted})
            ranked = ranked[:limit]
        ids = self._ids([key for key, _rank, _between in ranked])
        return [(ids[key], rank, between) for key, rank, between in ranked]

    def _keep_hotspots(self, kept: dict) -> None:
        # A cache, not a record: while another process holds graph.db's write lock (a large index),
        # waiting the store's busy timeout for it would hold up the caller, who already has the
        # answer; after a short wait they are not kept and the next call computes them again.
        conn = self.store.conn
        waited_ms = conn.execute("PRAGMA busy_timeout").fetchone()[0]
        conn.execute(f"PRAGMA busy_timeout = {HOTSPOTS_KEEP_WAIT_MS}")
        try:
            with self.store.transaction():
                self.store.set_meta("hotspots", json.dumps(kept))
        except sqlite3.OperationalError:
            return
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(waited_ms)}")

    def export(self) -> dict:
        """The whole graph as JSON-ready data: present symbols, calls between them, imports."""
        conn, repo = self.store.conn, (self.root,)
        symbols = [
            {"id": i, "file": f, "qualname": q, "kind": k, "line": n}
            for i, f, q, k, n in conn.execute(
                "SELECT id, file, qualname, kind, line FROM symbols WHERE repo = ? AND present = 1"
                " ORDER BY file, line, key",
                repo,
            )
        ]
        calls = [
            {"caller": a, "callee": b, "confidence": c}
            for a, b, c in conn.execute(
                "SELECT caller, callee, confidence FROM call_edges WHERE repo = ? ORDER BY caller, callee", repo
            )
        ]
        imports = [
            {
                "file": f,
                "line": n,
                "module": "." * level + m,
                "name": name,
                "alias": local,
                "kind": kind,
                "target": t or None,
            }
            # Python aliases and module-level variables share the table, to be resolved as imports are; not imports
            for f, n, m, name, level, local, kind, t in conn.execute(
                "SELECT file, line, module, name, level, local, kind, target FROM imports"
                " WHERE repo = ? AND kind NOT IN (?, ?) ORDER BY file, line, local",
                (*repo, ALIAS, VALUE),
            )
        ]
        return {"symbols": symbols, "calls": calls, "imports": imports}

    # -- ids and keys ---------------------------------------------------------------------------------

    def _key(self, symbol_id: str) -> int | None:
        row = self.store.conn.execute(
            "SELECT key FROM symbols WHERE repo = ? AND id = ? AND present = 1", (self.root, symbol_id)
        ).fetchone()
        return row[0] if row else None

    def _ids(self, keys: list[int]) -> dict[int, str]:
        ids: dict[int, str] = {}
        for batch in chunks(keys):
            query = f"SELECT key, id FROM symbols WHERE key IN ({','.join('?' * len(batch))})"
            ids.update(self.store.conn.execute(query, batch))
        return ids


def _symbol(row: tuple) -> Symbol:
    symbol_id, file, qualname, kind, line, end_line, digest, present = row
    return Symbol(symbol_id, file, qualname, kind, line, end_line, digest, bool(present))


def _by_distance(item: tuple[str, int]) -> tuple[int, str]:
    return item[1], item[0]
