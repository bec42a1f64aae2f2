"""The code map's page and JSON over real HTTP, against a real `hivelore dashboard` on the shop
(codemap_site.py): folders first, one file at a time, blast radius, call paths and the nearest common
caller, hot spots, claims by developer, the conflict between two tasks, escaping and bad input."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from browsing import served
from codemap_site import (
    SCRIPT_TITLE,
    ShopMap,
    shop_map_fixture,  # noqa: F401 -- the `shop_map` fixture
)
from fastapi import FastAPI
from harness import make_repo

from hivelore.codegraph import Graph
from hivelore.dashboard.codemap import colour
from hivelore.dashboard.routes import router
from hivelore.dashboard.services import LocalServices

VALIDATE = "shop/tokens.py::validate_token"
CHECKOUT = "shop/orders.py::checkout"
PLACE_ORDER = "shop/api.py::place_order"


def get(shop_map: ShopMap, endpoint: str, **params: object) -> httpx.Response:
    return httpx.get(f"{shop_map.url}/codemap/{endpoint}", params=params)


def test_the_root_opens_through_its_lone_folder_with_each_developers_claims(shop_map: ShopMap) -> None:
    root = get(shop_map, "folder.json").json()

    assert root["path"] == "shop"  # the repository holds only shop/: opened through to it
    files = {child["path"]: child for child in root["children"]}
    assert sorted(files) == [
        f"shop/{n}.py" for n in ("api", "auth", "emails", "encoding", "health", "orders", "tokens")
    ]
    assert files["shop/orders.py"]["symbols"] == 3
    assert files["shop/tokens.py"]["claims"] == [{"developer": "dev-a", "colour": colour("dev-a"), "claims": 1}]
    assert files["shop/orders.py"]["claims"] == [{"developer": "dev-b", "colour": colour("dev-b"), "claims": 1}]
    assert {"source": "shop/api.py", "target": "shop/orders.py", "calls": 1} in root["bundles"]
    assert get(shop_map, "folder.json", path="nowhere").status_code == 404


def test_a_file_gives_its_symbols_in_their_class_its_calls_and_their_claims(shop_map: ShopMap) -> None:
    found = get(shop_map, "file.json", path="shop/orders.py").json()

    symbols = {s["id"]: s for s in found["symbols"]}
    assert list(symbols) == ["shop/orders.py::Cart", "shop/orders.py::Cart.total", CHECKOUT]
    assert symbols["shop/orders.py::Cart.total"]["parent"] == "shop/orders.py::Cart"
    assert [c["developer"] for c in symbols[CHECKOUT]["claims"]] == ["dev-b"]
    assert symbols[CHECKOUT]["claims"][0]["title"] == "make checkout faster"
    calls = {(c["caller"], c["callee"]) for c in found["calls"]}
    assert {(PLACE_ORDER, CHECKOUT), (CHECKOUT, "shop/auth.py::current_user")} <= calls
    missing = get(shop_map, "file.json", path="shop/nothing.py")
    assert missing.status_code == 404 and missing.json() == {
        "error": "no symbols in shop/nothing.py in the graph: pick a file from the map."
    }


def test_the_blast_radius_of_a_symbol_named_as_the_cli_names_it(shop_map: ShopMap) -> None:
    blast = get(shop_map, "blast.json", symbol="validate_token").json()
    near = get(shop_map, "blast.json", symbol=VALIDATE, hops=1).json()

    assert blast["symbol"] == VALIDATE
    assert blast["reached"] == [
        {"id": "shop/auth.py::current_user", "hops": 1},
        {"id": CHECKOUT, "hops": 2},
        {"id": PLACE_ORDER, "hops": 3},
    ]
    assert [PLACE_ORDER, CHECKOUT] in blast["calls"] and ["shop/auth.py::current_user", VALIDATE] in blast["calls"]
    assert near["reached"] == [{"id": "shop/auth.py::current_user", "hops": 1}]


def test_a_path_either_way_or_through_the_nearest_common_caller(shop_map: ShopMap) -> None:
    def path(a: str, b: str) -> dict:
        return get(shop_map, "path.json", a=a, b=b).json()

    chain = [PLACE_ORDER, CHECKOUT, "shop/auth.py::current_user", VALIDATE, "shop/tokens.py::decode_jwt"]
    assert path("place_order", "decode_jwt") == {"kind": "calls", "chains": [chain]}
    assert path("decode_jwt", "place_order") == {"kind": "called by", "chains": [chain]}
    assert path("send_receipt", "checkout") == {
        "kind": "common caller",
        "chains": [[PLACE_ORDER, "shop/emails.py::send_receipt"], [PLACE_ORDER, CHECKOUT]],
    }
    assert path("ping", "checkout") == {"kind": "none", "chains": []}


def test_hot_spots_rank_what_the_code_depends_on(shop_map: ShopMap) -> None:
    ranked = get(shop_map, "hotspots.json", limit=3).json()["hotspots"]

    assert [h["id"] for h in ranked][:2] == ["shop/encoding.py::b64decode", "shop/tokens.py::decode_jwt"]
    assert ranked[0]["pagerank"] > ranked[1]["pagerank"] > 0 and ranked[1]["betweenness"] > 0


@pytest.mark.parametrize(
    ("path", "params", "status", "sentence"),
    [
        ("blast.json", {"symbol": "nope"}, 404, "no symbol 'nope' in the graph of"),
        ("blast.json", {"symbol": "checkout", "hops": 9}, 400, "hops must be a whole number from 1 to 6, not '9'."),
        ("blast.json", {"symbol": "checkout", "hops": "three"}, 400, "hops must be a whole number from 1 to 6"),
        ("hotspots.json", {"limit": 0}, 400, "limit must be a whole number from 1 to 100, not '0'."),
        ("hotspots.json", {"limit": "1e3"}, 400, "limit must be a whole number from 1 to 100, not '1e3'."),
        ("path.json", {"a": "ping", "b": "nope"}, 404, "no symbol 'nope'"),
    ],
)
def test_bad_input_is_one_sentence_of_json(
    shop_map: ShopMap, path: str, params: dict, status: int, sentence: str
) -> None:
    answer = get(shop_map, path, **params)

    assert answer.status_code == status
    assert list(answer.json()) == ["error"] and answer.json()["error"].startswith(sentence)


def test_the_page_shows_the_legend_and_the_conflict_with_every_text_escaped(shop_map: ShopMap) -> None:
    page = httpx.get(f"{shop_map.url}/codemap").text

    legend = re.findall(r'<li data-developer="([^"]+)"><span class="swatch" style="background: ([^"]+)">', page)
    assert legend == [("dev-a", colour("dev-a")), ("dev-b", colour("dev-b"))]
    assert (
        "&lt;script&gt;alert(&#39;claim&#39;)&lt;/script&gt; tokens (dev-a) ↔ #2 make checkout faster (dev-b)" in page
    )
    assert f"2 hops: {CHECKOUT} → shop/auth.py::current_user → {VALIDATE}" in page
    assert "<script>alert" not in page and SCRIPT_TITLE not in page
    assert "\\u003cscript\\u003ealert" in page  # the page's data carries the title as JSON escapes


def test_without_javascript_the_forms_answer_on_the_page(shop_map: ShopMap) -> None:
    blast = httpx.get(f"{shop_map.url}/codemap", params={"symbol": "validate_token"}).text
    path = httpx.get(f"{shop_map.url}/codemap", params={"a": "send_receipt", "b": "checkout"}).text
    wrong = httpx.get(f"{shop_map.url}/codemap", params={"symbol": "<b>nope</b>"})

    assert f'<li><code>{PLACE_ORDER}</code> <span class="meta">3 hops</span></li>' in blast
    assert "Nearest common caller" in path and f"<code>{PLACE_ORDER}</code> → <code>{CHECKOUT}</code>" in path
    assert wrong.status_code == 200 and "no symbol &#39;&lt;b&gt;nope&lt;/b&gt;&#39; in the graph" in wrong.text


def test_cytoscape_and_its_licence_are_served_from_the_package(shop_map: ShopMap) -> None:
    library = httpx.get(f"{shop_map.url}/static/vendor/cytoscape.min.js")
    licence = httpx.get(f"{shop_map.url}/static/vendor/cytoscape.LICENSE")

    assert library.status_code == 200 and library.headers["content-type"].startswith("text/javascript")
    assert "The Cytoscape Consortium" in library.text[:300]
    assert licence.status_code == 200 and "Permission is hereby granted" in licence.text
    assert httpx.get(f"{shop_map.url}/static/vendor/README.md").status_code == 404
    assert httpx.get(f"{shop_map.url}/static/../codemap.py").status_code == 404


@pytest.fixture
def unindexed(tmp_path: Path) -> Iterator[str]:
    """The one router mounted under /dashboard over a repository whose graph was never built."""
    repo, env = make_repo(tmp_path / "checkout"), {"HIVELORE_HOME": str(tmp_path / "home")}
    app = FastAPI()
    app.include_router(router(LocalServices(repo, env), base="/dashboard"))
    with served(app) as url:
        yield f"{url}/dashboard"


def test_a_repository_without_a_graph_says_how_to_build_it(unindexed: str) -> None:
    page = httpx.get(f"{unindexed}/codemap")
    answer = httpx.get(f"{unindexed}/codemap/folder.json")

    sentence = "the code graph of acme/checkout is not built yet: run `hivelore graph index` in the repository"
    assert page.status_code == 409 and sentence in page.text
    assert answer.status_code == 409 and answer.json()["error"].startswith(sentence)
    assert re.findall(r'href="(/[^"]*codemap)"', page.text) == ["/dashboard/codemap"]


def test_folders_open_one_level_at_a_time_with_the_calls_between_them(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "nested")
    for path, text in {
        "pkg/a/x.py": "from pkg.b.y import y\n\n\ndef x():\n    return y()\n",
        "pkg/b/y.py": "from pkg.b.sub.z import z\n\n\ndef y():\n    return z() + z()\n",
        "pkg/b/sub/z.py": "def z():\n    return 1\n",
    }.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    with Graph.open(str(tmp_path / "home"), str(repo)) as graph:
        graph.index()
        root, b = graph.folder(""), graph.folder("pkg/b")

    assert (root.path, [(c.path, c.kind, c.files, c.symbols) for c in root.children]) == (
        "pkg",
        [("pkg/a", "folder", 1, 1), ("pkg/b", "folder", 2, 2)],
    )
    assert [tuple(bundle) for bundle in root.bundles] == [("pkg/a", "pkg/b", 1)]  # y → z is inside pkg/b
    assert [c.path for c in b.children] == ["pkg/b/sub", "pkg/b/y.py"]
    assert sorted(tuple(bundle) for bundle in b.bundles) == [
        ("pkg/a/x.py", "pkg/b/y.py", 1),
        ("pkg/b/y.py", "pkg/b/sub", 1),
    ]
