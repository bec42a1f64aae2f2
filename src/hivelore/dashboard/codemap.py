"""The code map: a page and the JSON it opens on demand, over the team service's `CodeMap`.

The page (`/codemap`) shows the repository's top folders, the legend of who claims what, the
conflicts between tasks, and (without JavaScript too) a symbol's blast radius or the call path
between two symbols. The script (static/codemap.js, drawing with the vendored Cytoscape.js) asks for
one folder's children, one file's symbols, a blast radius, a path or the hot spots at a time
(`/codemap/*.json`), so a graph of 30,000 symbols is never sent or drawn whole.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse

from hivelore.dashboard.services import TeamView
from hivelore.errors import BadInput, HiveloreError, NotFound
from hivelore.team.codemap import Blast, CallPath, CodeMap, MapClaim, MapFile, MapFolder, TaskConflict

HOPS = 3  # a blast radius's default depth: the conflict check's
MAX_HOPS = 6
HOTSPOTS = 20
MAX_HOTSPOTS = 100
NOT_INDEXED = "the code graph of {repo} is not built yet: run `hivelore graph index` in the repository, then reload."

Page = Callable[..., HTMLResponse]  # routes.render_page: a rendered template with the CSRF cookie
Json = dict[str, object]


class Teams(Protocol):
    """What the map needs of a composition (routes.Services has it)."""

    def coordination(self, request: Request) -> AbstractContextManager[TeamView]: ...

    def repos(self, request: Request) -> list[str]: ...


class NotIndexed(HiveloreError):
    """The repository's code graph was never built (on the team server: never pushed)."""

    status, code = 409, "not_indexed"


def colour(developer: str) -> str:
    """The developer's colour, the same on every page and server: 24 hues × 2 lightnesses by a CRC of
    the name (two developers can share one; the legend names them)."""
    digest = zlib.crc32(developer.encode("utf-8"))
    return f"hsl({(digest % 24) * 15}, 70%, {42 if digest >> 8 & 1 else 58}%)"


def router(services: Teams, page: Page) -> APIRouter:
    """The map's page and its JSON, under the including router's prefix."""
    routes = APIRouter()
    routes.add_api_route("/codemap", _page(services, page), methods=["GET"], response_class=HTMLResponse)
    routes.add_api_route("/codemap/folder.json", _folder(services), methods=["GET"])
    routes.add_api_route("/codemap/file.json", _file(services), methods=["GET"])
    routes.add_api_route("/codemap/blast.json", _blast(services), methods=["GET"])
    routes.add_api_route("/codemap/path.json", _path(services), methods=["GET"])
    routes.add_api_route("/codemap/hotspots.json", _hotspots(services), methods=["GET"])
    return routes


def _answer(request: Request, services: Teams, work: Callable[[TeamView, CodeMap], Json]) -> JSONResponse:
    """`work`'s answer as JSON, or {"error": one sentence} with its status."""
    try:
        with services.coordination(request) as team:
            codemap = team.code_map()
            if not codemap.indexed():
                raise NotIndexed(NOT_INDEXED.format(repo=team.repo))
            return JSONResponse(work(team, codemap))
    except HiveloreError as exc:
        return JSONResponse({"error": exc.sentence()}, status_code=exc.status)


def whole_number(name: str, given: str, most: int) -> int:
    """`given` (a query's text) as a number from 1 to `most`, else a BadInput saying so: a query is
    text, so a word is the caller's mistake (400 with one sentence), not a schema's (422)."""
    value = int(given) if given.strip().isdigit() else 0
    if not 1 <= value <= most:
        raise BadInput(f"{name} must be a whole number from 1 to {most}, not '{given}'.")
    return value


def _hops(hops: str) -> int:
    return whole_number("hops", hops, MAX_HOPS)


def _folder(services: Teams) -> Callable[..., JSONResponse]:
    def answer(request: Request, path: str = "") -> JSONResponse:
        return _answer(request, services, lambda _team, codemap: folder_json(_known_folder(codemap, path)))

    return answer


def _known_folder(codemap: CodeMap, path: str) -> MapFolder:
    found = codemap.folder(path)
    if not found.children:
        raise NotFound(f"no folder {path or '/'} with code in the graph: pick one from the map.")
    return found


def _file(services: Teams) -> Callable[..., JSONResponse]:
    def answer(request: Request, path: str) -> JSONResponse:
        def work(_team: TeamView, codemap: CodeMap) -> Json:
            found = codemap.file(path)
            if not found.symbols:
                raise NotFound(f"no symbols in {path} in the graph: pick a file from the map.")
            return file_json(found)

        return _answer(request, services, work)

    return answer


def _blast(services: Teams) -> Callable[..., JSONResponse]:
    def answer(request: Request, symbol: str, hops: str = str(HOPS)) -> JSONResponse:
        def work(team: TeamView, codemap: CodeMap) -> Json:
            return blast_json(codemap.blast_radius(team.symbol(symbol), _hops(hops)))

        return _answer(request, services, work)

    return answer


def _path(services: Teams) -> Callable[..., JSONResponse]:
    def answer(request: Request, a: str, b: str) -> JSONResponse:
        return _answer(request, services, lambda team, codemap: path_json(codemap.path(team.symbol(a), team.symbol(b))))

    return answer


def _hotspots(services: Teams) -> Callable[..., JSONResponse]:
    def answer(request: Request, limit: str = str(HOTSPOTS)) -> JSONResponse:
        def work(_team: TeamView, codemap: CodeMap) -> Json:
            ranked = codemap.hotspots(whole_number("limit", limit, MAX_HOTSPOTS))
            return {"hotspots": [{"id": i, "pagerank": rank, "betweenness": b} for i, rank, b in ranked]}

        return _answer(request, services, work)

    return answer


# -- the JSON shapes ----------------------------------------------------------------------------------


def folder_json(found: MapFolder) -> Json:
    return {
        "path": found.path,
        "children": [
            {
                "path": child.path,
                "kind": child.kind,
                "files": child.files,
                "symbols": child.symbols,
                "claims": [_count(dev, n) for dev, n in sorted(found.claims.get(child.path, {}).items())],
            }
            for child in found.children
        ],
        "bundles": [{"source": b.source, "target": b.target, "calls": b.calls} for b in found.bundles],
    }


def _count(developer: str, claims: int) -> Json:
    return {"developer": developer, "colour": colour(developer), "claims": claims}


def _claim(claim: MapClaim) -> Json:
    return {"developer": claim.developer, "colour": colour(claim.developer), "task": claim.task, "title": claim.title}


def file_json(found: MapFile) -> Json:
    return {
        "path": found.path,
        "symbols": [
            {
                "id": s.id,
                "qualname": s.qualname,
                "kind": s.kind,
                "line": s.line,
                "parent": s.parent,
                "claims": [_claim(c) for c in found.claims.get(s.id, [])],
            }
            for s in found.symbols
        ],
        "file_claims": [_claim(c) for c in found.claims.get("", [])],
        "calls": [{"caller": c.caller, "callee": c.callee, "confidence": c.confidence} for c in found.calls],
    }


def blast_json(blast: Blast) -> Json:
    return {
        "symbol": blast.symbol,
        "reached": [{"id": caller, "hops": hops} for caller, hops in blast.reached],
        "calls": [list(call) for call in blast.calls],
    }


def path_json(path: CallPath) -> Json:
    return {"kind": path.kind, "chains": path.chains}


def conflict_json(found: TaskConflict) -> Json:
    conflict = found.conflict
    return {
        "tasks": [
            {"task": found.task.id, "title": found.task.title, "developer": found.developer,
             "colour": colour(found.developer), "symbol": conflict.symbol},
            {"task": conflict.intent.id, "title": conflict.intent.title, "developer": conflict.developer,
             "colour": colour(conflict.developer), "symbol": conflict.claimed},
        ],
        "path": list(conflict.path),
        "hops": conflict.distance,
    }  # fmt: skip


# -- the page -------------------------------------------------------------------------------------------


def _page(services: Teams, page: Page) -> Callable[..., HTMLResponse]:
    def show(request: Request, symbol: str = "", a: str = "", b: str = "", hops: str = str(HOPS)) -> HTMLResponse:
        values: dict[str, object] = {"active": "codemap", "symbol": symbol, "a": a, "b": b, "hops": hops}
        try:
            values["repos"] = services.repos(request)
            with services.coordination(request) as team:
                values["repo"] = team.repo
                codemap = team.code_map()
                if not codemap.indexed():
                    raise NotIndexed(NOT_INDEXED.format(repo=team.repo))
                values.update(_overview(codemap))
                values.update(_asked(team, codemap, symbol, a, b, hops))
        except NotIndexed as exc:  # what builds the graph: an index here, a push to the team server
            return page(request, "codemap.html", code=409, missing=exc.sentence(), **values)
        except HiveloreError as exc:  # team.db or graph.db unusable, no shared repository: its sentence says what to do
            return page(request, "problem.html", code=exc.status, message=exc.sentence())
        return page(request, "codemap.html", **values)

    return show


def _overview(codemap: CodeMap) -> dict[str, object]:
    claims = codemap.claims()
    counts: dict[str, int] = {}
    for claim in claims:
        counts[claim.developer] = counts.get(claim.developer, 0) + 1
    conflicts = [conflict_json(c) for c in codemap.conflicts()]
    root = folder_json(codemap.folder("", bundles=False))  # the script fetches the calls after the first paint
    legend = [{"developer": dev, "colour": colour(dev), "claims": n} for dev, n in sorted(counts.items())]
    return {"legend": legend, "conflicts": conflicts, "root": root, "data": {"root": root, "conflicts": conflicts}}


def _asked(team: TeamView, codemap: CodeMap, symbol: str, a: str, b: str, hops: str) -> dict[str, object]:
    """What the forms asked, answered on the page (the script draws the same on the map)."""
    try:
        if symbol:
            return {"blast": blast_json(codemap.blast_radius(team.symbol(symbol), _hops(hops)))}
        if a and b:
            return {"path": path_json(codemap.path(team.symbol(a), team.symbol(b)))}
        if a or b:
            raise BadInput("a path needs two symbols: give both, from and to.")
    except (BadInput, NotFound) as exc:
        return {"asked_problem": exc.sentence()}
    return {}
