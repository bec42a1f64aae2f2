"""A repository's code graph on the team server (`/v1/graph…`): the push of `hivelore graph push`
(remote/graph.py) and the queries the dashboard and clients without a checkout ask — blast radius,
the call path between two symbols (or their nearest common caller), hot spots, symbol lookup.

Access is the team's (server/team.py): the organisation that shares `repo::OWNER/NAME`, viewers
read, members write; a token reads with `hl_rw_`/`hl_ro_`, writes with `hl_rw_`/`hl_wo_`, within its
scope allow-list. The listing of held file hashes is part of a push (a `hl_wo_` token pushes), so it
needs what a push needs. Each push request is a line of the organisation's audit log (`graph-push`):
its admins' listing of what the organisation holds (`GET /v1/orgs/{org}/team`) names the last pusher
from it, as the graph's rows are the repository's, not a person's. The queries load the stored graph
into a `codegraph.Graph` (server/postgres/graph.py) and ask it, and the code map (team/codemap.py),
what a machine asks its own.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from hivelore.codegraph.graph import Graph
from hivelore.codegraph.model import Symbol
from hivelore.errors import NotFound
from hivelore.server import auth
from hivelore.server import team as access
from hivelore.server.logs import request_id
from hivelore.server.postgres import audit, idempotency
from hivelore.server.postgres import graph as stored
from hivelore.server.routes.dependencies import Caller, Conn
from hivelore.team.codemap import CodeMap

router = APIRouter(prefix="/v1/graph", tags=["graph"])

MAX_FILES = 2_000  # per push request; a client sends batches under the body-size limit anyway
MAX_ROWS = 50_000  # symbols or calls of one file
MAX_HOPS = 6
Text = Annotated[str, Field(min_length=1, max_length=4_096)]
IdempotencyKey = Annotated[str | None, Header(description="a push retried with the same key is applied once")]


class SymbolIn(BaseModel):
    id: Text
    qualname: Text
    kind: Annotated[str, Field(max_length=32)]
    line: Annotated[int, Field(ge=0, le=2**31 - 1)]
    end_line: Annotated[int, Field(ge=0, le=2**31 - 1)]
    hash: Annotated[str, Field(max_length=128)]
    seq: Annotated[int, Field(ge=0, le=2**62, description="its order in the client's graph (graph.db's key)")]


class CallIn(BaseModel):
    caller: Text
    callee: Text
    confidence: Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


class FileIn(BaseModel):
    path: Text
    language: Annotated[str, Field(max_length=32)]
    hash: Annotated[str, Field(min_length=1, max_length=128, description="of the file's code and resolved calls")]
    parser: Annotated[str, Field(min_length=1, max_length=32)]
    symbols: list[SymbolIn] = Field(default_factory=list, max_length=MAX_ROWS)
    calls: list[CallIn] = Field(default_factory=list, max_length=MAX_ROWS)


class PushIn(BaseModel):
    repo: str
    files: list[FileIn] = Field(default_factory=list, max_length=MAX_FILES)
    removed: list[Text] = Field(default_factory=list, max_length=100_000)


Hops = Annotated[int, Query(ge=1, le=MAX_HOPS, description="call hops")]
Limit = Annotated[int, Query(ge=1, le=1_000)]


def _org(conn: Conn, who: auth.Caller, repo: str, role: str) -> int:
    return access.for_repo(conn, who, repo, role, None).org_id


def _loaded(conn: Conn, org_id: int, repo: str) -> Graph:
    graph = stored.load(conn, org_id, repo)
    if graph is None:
        raise NotFound(f"no code graph was pushed for {repo}: run `hivelore graph push` in a checkout of it")
    return graph


def _described(symbol: Symbol) -> dict[str, object]:
    return {
        "id": symbol.id, "file": symbol.file, "qualname": symbol.qualname, "kind": symbol.kind,
        "line": symbol.line, "end_line": symbol.end_line,
    }  # fmt: skip


@router.post("/push")
def push(
    body: PushIn, request: Request, who: Caller, conn: Conn, idempotency_key: IdempotencyKey = None
) -> JSONResponse:
    """Replace the rows of the files sent (each with its symbols and the calls from them) and drop
    the files removed; answers how much of the repository's graph the server now holds."""
    org_id = _org(conn, who, body.repo, access.WRITE)
    pushed = [
        stored.Pushed(
            f.path, f.language, f.hash, f.parser,
            [(s.id, s.qualname, s.kind, s.line, s.end_line, s.hash, s.seq) for s in f.symbols],
            [(c.caller, c.callee, c.confidence) for c in f.calls],
        )
        for f in body.files
    ]  # fmt: skip
    print_ = idempotency.fingerprint("POST", request.url.path, body.model_dump(mode="json"))

    def apply() -> dict[str, object]:
        with conn.transaction():
            held = stored.push(conn, org_id, body.repo, pushed, body.removed)
            target = stored.pushed_target(body.repo, held, len(pushed), len(body.removed))
            audit.record(conn, who.user_id, who.user, stored.PUSH_ACTION, target, request_id(request), org_id)
        return {"held": held.to_dict()}

    return JSONResponse(idempotency.once(conn, who.user_id, idempotency_key, print_, apply))


@router.get("/files")
def files(repo: str, who: Caller, conn: Conn) -> JSONResponse:
    """The files held for the repository (path → hash and parser version) and how much is held: what
    a push compares its files with (it needs a push's rights, as it is one's first step)."""
    org_id = _org(conn, who, repo, access.WRITE)
    held = stored.held(conn, org_id, repo).to_dict()
    return JSONResponse({"files": stored.files(conn, org_id, repo), "held": held})


@router.get("/symbols")
def symbols(repo: str, name: Annotated[str, Query(min_length=1)], who: Caller, conn: Conn) -> JSONResponse:
    """The present symbols an id, a qualified name (`Cart.total`) or a name (`total`) names."""
    with _loaded(conn, _org(conn, who, repo, access.READ), repo) as graph:
        found = graph.find(name)
    return JSONResponse({"symbols": [_described(s) for s in found]})


@router.get("/blast-radius")
def blast_radius(repo: str, symbol: str, who: Caller, conn: Conn, hops: Hops = 3) -> JSONResponse:
    """The callers within `hops` call hops of the symbol, nearest first, and the calls of the
    shortest chain from each down to it."""
    team = access.for_repo(conn, who, repo, access.READ, None)
    with _loaded(conn, team.org_id, repo) as graph:
        found = CodeMap(graph, team, repo).blast_radius(graph.resolve(symbol, stored.PUSH_AGAIN), hops)
    return JSONResponse({
        "symbol": found.symbol,
        "callers": [{"symbol": s, "distance": d} for s, d in found.reached],
        "calls": [list(call) for call in found.calls],
    })  # fmt: skip


@router.get("/path")
def path(repo: str, a: str, b: str, who: Caller, conn: Conn) -> JSONResponse:
    """How two symbols meet: `calls` (a chain a → … → b), `called by` (b → … → a), `common caller`
    (two chains from their nearest common caller) or `none`."""
    team = access.for_repo(conn, who, repo, access.READ, None)
    with _loaded(conn, team.org_id, repo) as graph:
        source, target = (graph.resolve(name, stored.PUSH_AGAIN) for name in (a, b))
        found = CodeMap(graph, team, repo).path(source, target)
    return JSONResponse({"kind": found.kind, "chains": found.chains})


@router.get("/hotspots")
def hotspots(repo: str, who: Caller, conn: Conn, limit: Limit = 20) -> JSONResponse:
    """The symbols most code depends on (PageRank along calls) with their betweenness."""
    org_id = _org(conn, who, repo, access.READ)
    with _loaded(conn, org_id, repo) as graph:
        kept = graph.store.meta("hotspots")
        found = graph.hotspots(limit)
        if graph.store.meta("hotspots") != kept:  # betweenness costs seconds at 30,000 symbols: once per push
            stored.remember(org_id, repo, graph)
    return JSONResponse({"hotspots": [{"symbol": s, "pagerank": p, "betweenness": b} for s, p, b in found]})
