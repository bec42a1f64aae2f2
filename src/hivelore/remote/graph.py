"""`hivelore graph push`'s client: this checkout's code graph sent to the team server
(`/v1/graph`, server/routes/graph.py), incrementally by file.

Each file of the local graph is described by what the server keeps of it: its present symbols
(with graph.db's key, so the server's walks break ties in the same order), the calls whose caller
is in it (the callee by id, wherever it is) and a hash of all that with the file's contents hash and
the parser's version. The server lists the hashes it holds; only the files whose hash differs are
sent, with the paths it holds that the checkout no longer has. A file whose code did not change but
whose calls resolve elsewhere now (a callee added or removed in another file) has a new hash too, so
the server's calls stay the local graph's.

Files go in batches under `BATCH_BYTES` of JSON, each with its own Idempotency-Key: a batch whose
answer was lost is sent again and applied once; one that a server with a lower body limit refuses as
too large goes again in halves. Standard library only, like the rest of remote/.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from urllib.parse import urlencode

from hivelore.codegraph.store import PARSER_VERSION
from hivelore.records import record
from hivelore.remote.client import Client, Refused

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hivelore.codegraph.graph import Graph
    from hivelore.codegraph.model import IndexStats
    from hivelore.team.coordination import Coordination

PREFIX = "/v1/graph"
# Half the server's default body limit (server/limits.py MAX_BODY_BYTES, 1 MiB): room for a file
# larger than the rest of its batch, and for a server whose limit was lowered a little.
BATCH_BYTES = 512 * 1024


@record
class Push:
    """What a push sent (files, their symbols and calls, paths removed, requests) and what the server
    holds after it (`held`: files, symbols, calls)."""

    files: int
    symbols: int
    calls: int
    removed: int
    batches: int
    held: dict

    def to_dict(self) -> dict[str, object]:
        return {
            "files": self.files, "symbols": self.symbols, "calls": self.calls, "removed": self.removed,
            "batches": self.batches, "held": self.held,
        }  # fmt: skip


def described(graph: Graph) -> dict[str, dict]:
    """Every file of the local graph as a push sends it: path → {path, language, hash, parser,
    symbols, calls}."""
    conn, repo = graph.store.conn, graph.root
    files: dict[str, dict] = {
        path: {"path": path, "language": language, "source": digest, "symbols": [], "calls": []}
        for path, language, digest in conn.execute("SELECT path, language, hash FROM files WHERE repo = ?", (repo,))
    }
    for key, symbol_id, path, qualname, kind, line, end_line, code in conn.execute(
        "SELECT key, id, file, qualname, kind, line, end_line, hash FROM symbols WHERE repo = ? AND present = 1"
        " ORDER BY key",
        (repo,),
    ):
        if path in files:
            files[path]["symbols"].append(
                {"id": symbol_id, "qualname": qualname, "kind": kind, "line": line, "end_line": end_line,
                 "hash": code, "seq": key}
            )  # fmt: skip
    for path, caller, callee, confidence in conn.execute(
        "SELECT a.file, a.id, b.id, c.confidence FROM calls c JOIN symbols a ON a.key = c.caller"
        " JOIN symbols b ON b.key = c.callee WHERE a.repo = ? ORDER BY a.id, b.id",
        (repo,),
    ):
        if path in files:
            files[path]["calls"].append({"caller": caller, "callee": callee, "confidence": confidence})
    return {path: _sealed(found) for path, found in files.items()}


def _sealed(found: dict) -> dict:
    """The file with its push hash: of its contents' hash, the parser, its symbols and its calls."""
    source = found.pop("source")
    text = json.dumps([source, PARSER_VERSION, found["symbols"], found["calls"]], sort_keys=True)
    return {**found, "hash": hashlib.blake2b(text.encode(), digest_size=16).hexdigest(), "parser": PARSER_VERSION}


def held(client: Client, repo: str) -> dict:
    """The server's listing for the repository: {"files": {path: {hash, parser}}, "held": counts}."""
    answer = client.get(f"{PREFIX}/files?{urlencode({'repo': repo})}")
    return answer if isinstance(answer, dict) else {"files": {}, "held": {}}


def batches(files: list[dict], removed: list[str], limit: int = BATCH_BYTES) -> list[dict]:
    """Request bodies of at most about `limit` bytes (a file larger than that goes alone), the removed
    paths with the first."""
    found: list[dict] = [{"files": [], "removed": removed}]
    size = len(json.dumps(removed))
    for item in files:
        cost = len(json.dumps(item)) + 2
        if found[-1]["files"] and size + cost > limit:
            found.append({"files": [], "removed": []})
            size = 0
        found[-1]["files"].append(item)
        size += cost
    return found


def push_checkout(client: Client, checkout: Coordination) -> tuple[IndexStats | None, Push]:
    """Push the checkout's graph as indexed (the edit hooks keep it current; `hivelore graph index`
    brings it up to date), indexing it first when it never was; the index's figures then."""
    stats = None if checkout.graph.is_indexed() else checkout.index(None)
    return stats, push(client, checkout.graph, checkout.repo)


def push(client: Client, graph: Graph, repo: str, limit: int = BATCH_BYTES) -> Push:
    """Send what the server lacks of this graph for `repo`; nothing when it holds all of it."""
    listing = held(client, repo)
    theirs: dict = listing.get("files", {})
    mine = described(graph)
    changed = [
        item
        for path, item in sorted(mine.items())
        if theirs.get(path, {}).get("hash") != item["hash"] or theirs[path].get("parser") != item["parser"]
    ]
    removed = sorted(path for path in theirs if path not in mine)
    if not changed and not removed:
        return Push(0, 0, 0, 0, 0, dict(listing.get("held", {})))
    run, sent = secrets.token_hex(8), 0
    answer: object = None
    bodies = batches(changed, removed, limit)
    while bodies:
        body = bodies.pop(0)
        try:
            answer = client.post(f"{PREFIX}/push", {"repo": repo, **body}, idempotency_key=f"graph-push:{run}:{sent}")
        except Refused as exc:
            if exc.code != "too_large" or len(body["files"]) < 2:
                raise
            bodies[:0] = halves(body)  # a server whose body limit is lower than ours: send less at once
            continue
        sent += 1
    now = answer.get("held", {}) if isinstance(answer, dict) else {}
    symbols = sum(len(item["symbols"]) for item in changed)
    calls = sum(len(item["calls"]) for item in changed)
    return Push(len(changed), symbols, calls, len(removed), sent, dict(now))


def halves(body: dict) -> list[dict]:
    """A batch's files in two bodies, the removed paths with the first."""
    middle = len(body["files"]) // 2
    return [
        {"files": body["files"][:middle], "removed": body["removed"]},
        {"files": body["files"][middle:], "removed": []},
    ]
