"""A repository's code graph as clients pushed it (migration 0014_graph.sql), per organisation and
repository: what `hivelore graph push` writes, and `load`, which gives the stored graph back as a
read-only `codegraph.Graph` so that the server answers blast radius, paths and hot spots with the
same code a machine runs on its own graph.db.

`load` copies the stored rows into an in-memory SQLite graph of graph.db's schema. Building one of
30,000 symbols costs about a second, so each process keeps the last few, serialised, under a digest
of the stored files' hashes: a request whose digest matches gets its own copy (a memcpy), and one
whose digest changed (another replica took a push) builds anew. Nothing else is kept: replicas stay
stateless. Symbols are numbered in the order of the pushing client's graph.db keys, so walks and
rankings break ties as they do on that client.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

import psycopg
from psycopg.pq import TransactionStatus

from hivelore.codegraph.graph import Graph
from hivelore.errors import BadInput
from hivelore.records import record

PUSH_AGAIN = "check the name, or push the graph again (`hivelore graph push` in a checkout of it)"
PUSH_ACTION = "graph-push"  # a push's line in the organisation's audit log
CACHED_GRAPHS = 8  # per process: serialised graphs of the repositories asked about last


@record
class Pushed:
    """One file of a push: its rows replace the file's. `symbols`: (id, qualname, kind, line,
    end_line, hash, seq); `calls`: (caller id in this file, callee id, confidence)."""

    path: str
    language: str
    hash: str
    parser: str
    symbols: list
    calls: list


@record
class Held:
    files: int
    symbols: int
    calls: int

    def to_dict(self) -> dict[str, int]:
        return {"files": self.files, "symbols": self.symbols, "calls": self.calls}


@record
class Summary:
    """A repository's pushed graph as its organisation's admins see it: how much is held, when a
    push last changed it and who made that push (the newest `graph-push` line of the audit log;
    None when the log has none, as for a push made before pushes were audited)."""

    repo: str
    files: int
    symbols: int
    calls: int
    pushed_at: datetime
    pushed_by: str | None


class _Cache:
    """(org, repo) → (digest, serialised graph), the most recently used kept."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.kept: OrderedDict[tuple[int, str], tuple[str, bytes]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: tuple[int, str], digest: str) -> bytes | None:
        with self.lock:
            found = self.kept.get(key)
            if found is None or found[0] != digest:
                return None
            self.kept.move_to_end(key)
            return found[1]

    def keep(self, key: tuple[int, str], digest: str, data: bytes) -> None:
        with self.lock:
            self.kept[key] = (digest, data)
            self.kept.move_to_end(key)
            while len(self.kept) > self.size:
                self.kept.popitem(last=False)


_CACHE = _Cache(CACHED_GRAPHS)


# -- reading ----------------------------------------------------------------------------------------


def files(conn: psycopg.Connection, org_id: int, repo: str) -> dict[str, dict[str, str]]:
    """path → {"hash", "parser"} of the files held for the repository."""
    rows = conn.execute(
        "SELECT path, hash, parser FROM graph_files WHERE org_id = %s AND repo = %s", (org_id, repo)
    ).fetchall()
    return {path: {"hash": digest, "parser": parser} for path, digest, parser in rows}


def held(conn: psycopg.Connection, org_id: int, repo: str) -> Held:
    """How much of the repository's graph the server holds. Calls are counted as stored: one whose
    callee is not held (between two batches of a push) is left out of the queries only. Counting
    them with a join was planned as a nested loop over tables not yet analysed: seconds at 3,000."""
    row = conn.execute(
        """
        SELECT (SELECT count(*) FROM graph_files WHERE org_id = %(org)s AND repo = %(repo)s),
               (SELECT count(*) FROM graph_symbols WHERE org_id = %(org)s AND repo = %(repo)s),
               (SELECT count(*) FROM graph_calls WHERE org_id = %(org)s AND repo = %(repo)s)
        """,
        {"org": org_id, "repo": repo},
    ).fetchone()
    assert row is not None  # scalar subqueries always give one row
    return Held(*row)


def summaries(conn: psycopg.Connection, org_id: int, repo: str | None = None) -> list[Summary]:
    """The organisation's pushed graphs (or the one of `repo`), by repository."""
    rows = conn.execute(
        """
        SELECT f.repo, f.files,
            (SELECT count(*) FROM graph_symbols s WHERE s.org_id = %(org)s AND s.repo = f.repo),
            (SELECT count(*) FROM graph_calls c WHERE c.org_id = %(org)s AND c.repo = f.repo),
            f.pushed,
            (SELECT a.actor FROM audit_log a WHERE a.org_id = %(org)s AND a.action = %(action)s
                AND starts_with(a.target, 'repo::' || f.repo || ' ') ORDER BY a.id DESC LIMIT 1)
        FROM (
            SELECT repo, count(*) AS files, max(pushed) AS pushed FROM graph_files
            WHERE org_id = %(org)s AND (%(repo)s::text IS NULL OR repo = %(repo)s) GROUP BY repo
        ) f ORDER BY f.repo
        """,
        {"org": org_id, "repo": repo, "action": PUSH_ACTION},
    ).fetchall()
    return [Summary(*row) for row in rows]


def digest(conn: psycopg.Connection, org_id: int, repo: str) -> str | None:
    """A digest of every held file's path, hash and parser; None when nothing was pushed."""
    row = conn.execute(
        "SELECT md5(string_agg(path || ' ' || hash || ' ' || parser, E'\\n' ORDER BY path))"
        " FROM graph_files WHERE org_id = %s AND repo = %s",
        (org_id, repo),
    ).fetchone()
    return row[0] if row else None


def load(conn: psycopg.Connection, org_id: int, repo: str) -> Graph | None:
    """The graph pushed for `repo` in organisation `org_id`, as a `codegraph.Graph` of its own
    (close it when done; nothing it does reaches PostgreSQL), or None when nothing was pushed."""
    with _snapshot(conn):
        code = digest(conn, org_id, repo)
        if code is None:
            return None
        data = _CACHE.get((org_id, repo), code)
        if data is None:
            data = _build(conn, org_id, repo)
            _CACHE.keep((org_id, repo), code, data)
    return _graph(data, repo)


def remember(org_id: int, repo: str, graph: Graph) -> None:
    """Keep what a query kept in `graph` (its hot spots) for the next copies of the same code."""
    code = graph.store.meta("pushed")
    if code is not None:
        _CACHE.keep((org_id, repo), code, graph.store.conn.serialize())


@contextmanager
def _snapshot(conn: psycopg.Connection) -> Iterator[None]:
    """One snapshot for the digest and the rows it stands for (a push may commit in between)."""
    if conn.info.transaction_status != TransactionStatus.IDLE:
        yield
        return
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield


def _build(conn: psycopg.Connection, org_id: int, repo: str) -> bytes:
    with Graph.in_memory(repo) as graph:
        sqlite = graph.store.conn
        where = (org_id, repo)
        with graph.store.transaction():
            sqlite.executemany(
                "INSERT INTO files VALUES (?, ?, ?, 0, 0, ?)",
                ((repo, *row) for row in conn.execute(
                    "SELECT path, language, hash FROM graph_files WHERE org_id = %s AND repo = %s", where
                )),
            )  # fmt: skip
            sqlite.executemany(
                "INSERT INTO symbols (repo, id, file, qualname, name, kind, line, end_line, hash, bases, returns,"
                " arity, present) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '', '', -1, 1)",
                ((repo, *row) for row in conn.execute(
                    "SELECT id, file, qualname, name, kind, line, end_line, hash FROM graph_symbols"
                    " WHERE org_id = %s AND repo = %s ORDER BY seq, id",
                    where,
                )),
            )  # fmt: skip
            keys = dict(sqlite.execute("SELECT id, key FROM symbols"))
            rows = conn.execute(
                "SELECT caller, callee, confidence FROM graph_calls WHERE org_id = %s AND repo = %s", where
            )
            sqlite.executemany(
                "INSERT INTO calls VALUES (?, ?, ?)",
                ((keys[a], keys[b], c) for a, b, c in rows if a in keys and b in keys),
            )
            graph.store.set_meta("pushed", digest(conn, org_id, repo) or "")
        return sqlite.serialize()


def _graph(data: bytes, repo: str) -> Graph:
    graph = Graph.in_memory(repo)
    graph.store.conn.deserialize(data)
    return graph


# -- writing ----------------------------------------------------------------------------------------


def push(conn: psycopg.Connection, org_id: int, repo: str, pushed: list[Pushed], removed: list[str]) -> Held:
    """Replace the rows of the pushed files, drop those of the removed ones; what is held now."""
    for item in pushed:
        _check(item)
    paths = [item.path for item in pushed] + list(removed)
    where = {"org": org_id, "repo": repo, "paths": paths}
    with conn.transaction(), conn.cursor() as cursor:
        # two pushes of one repository at once would both find a file missing, then both insert it
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"graph:{org_id}:{repo}",))
        cursor.execute(
            "DELETE FROM graph_calls WHERE org_id = %(org)s AND repo = %(repo)s AND caller_file = ANY(%(paths)s)",
            where,
        )
        cursor.execute(
            "DELETE FROM graph_symbols WHERE org_id = %(org)s AND repo = %(repo)s AND file = ANY(%(paths)s)", where
        )
        cursor.execute(
            "DELETE FROM graph_files WHERE org_id = %(org)s AND repo = %(repo)s AND path = ANY(%(paths)s)", where
        )
        cursor.executemany(
            "INSERT INTO graph_files (org_id, repo, path, language, hash, parser) VALUES (%s, %s, %s, %s, %s, %s)",
            [(org_id, repo, p.path, p.language, p.hash, p.parser) for p in pushed],
        )
        cursor.executemany(
            "INSERT INTO graph_symbols (org_id, repo, id, file, qualname, name, kind, line, end_line, hash, seq)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [
                (org_id, repo, symbol_id, p.path, qualname, qualname.rpartition(".")[2], kind, line, end, code, seq)
                for p in pushed
                for symbol_id, qualname, kind, line, end, code, seq in p.symbols
            ],
        )
        cursor.executemany(
            "INSERT INTO graph_calls (org_id, repo, caller_file, caller, callee, confidence)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            [(org_id, repo, p.path, a, b, c) for p in pushed for a, b, c in p.calls],
        )
    return held(conn, org_id, repo)


def pushed_target(repo: str, held_now: Held, sent: int, removed: int) -> str:
    """A push's audit line target: `summaries` finds a repository's last pusher by its first word."""
    return f"repo::{repo} graph ({sent} files sent, {removed} removed; {held_now.files} held)"


def forget(conn: psycopg.Connection, org_id: int, repo: str) -> Held:
    """Delete the organisation's whole pushed graph of `repo`; what there was."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"graph:{org_id}:{repo}",))
        there = held(conn, org_id, repo)
        for table in ("graph_calls", "graph_symbols", "graph_files"):
            conn.execute(f"DELETE FROM {table} WHERE org_id = %s AND repo = %s", (org_id, repo))
    return there


def _check(item: Pushed) -> None:
    ids = {symbol[0] for symbol in item.symbols}
    prefix = f"{item.path}::"
    if len(ids) != len(item.symbols) or any(not symbol_id.startswith(prefix) for symbol_id in ids):
        raise BadInput(f"the symbols sent for {item.path} are not all distinct ids of that file (`{prefix}…`)")
    callers = {caller for caller, _callee, _c in item.calls}
    if not callers <= ids:
        raise BadInput(f"the calls sent for {item.path} name callers that are not its symbols: send each file's own")
    if len({(a, b) for a, b, _c in item.calls}) != len(item.calls):
        raise BadInput(f"the calls sent for {item.path} name one call twice: send each (caller, callee) once")
