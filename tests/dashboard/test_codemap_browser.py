"""The code map in a real browser: Playwright driving Debian's chromium (never a downloaded browser)
against a real `hivelore dashboard` on the shop (codemap_site.py). Nodes are clicked where Cytoscape
drew them; the screenshot is written under the run's temporary folder (docs/images/ holds a copy)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browsing import chromium, click_node, needs_chromium, screenshots
from codemap_site import (
    ShopMap,
    shop_map_fixture,  # noqa: F401 -- the `shop_map` fixture
)
from playwright.sync_api import Page

VALIDATE = "shop/tokens.py::validate_token"
CHECKOUT = "shop/orders.py::checkout"
PLACE_ORDER = "shop/api.py::place_order"

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return screenshots(tmp_path_factory, "code map")


@pytest.fixture(scope="module")
def page(shop_map: ShopMap) -> Iterator[Page]:
    with chromium() as browser:
        context = browser.new_context(base_url=shop_map.url, viewport={"width": 1400, "height": 900})
        opened = context.new_page()
        dialogs: list[str] = []  # an alert() from a task's title would open one
        opened.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        opened.goto("/codemap")
        opened.wait_for_selector("#map[data-ready=true]")
        yield opened
        assert dialogs == []


def has_node(page: Page, node_id: str) -> bool:
    return page.evaluate("(id) => window.codemap.getElementById(id).length === 1", node_id)


def node_data(page: Page, node_id: str, field: str) -> object:
    return page.evaluate("([id, f]) => window.codemap.getElementById(id).data(f)", [node_id, field])


def has_class(page: Page, node_id: str, name: str) -> bool:
    return page.evaluate("([id, c]) => window.codemap.getElementById(id).hasClass(c)", [node_id, name])


def test_the_map_shows_files_first_with_claims_coloured_as_the_legend(page: Page) -> None:
    files = page.evaluate("window.codemap.nodes('.file').map((n) => n.data('path'))")
    swatch = page.locator("#legend li[data-developer=dev-a] .swatch").evaluate(
        "(e) => getComputedStyle(e).backgroundColor"
    )
    border = page.evaluate("window.codemap.getElementById('f:shop/tokens.py').style('border-color')")

    assert sorted(files) == [
        f"shop/{n}.py" for n in ("api", "auth", "emails", "encoding", "health", "orders", "tokens")
    ]
    assert page.evaluate("window.codemap.nodes('.symbol').length") == 0  # no file is open yet
    assert page.locator("#legend li").all_inner_texts() == ["dev-a 1 claim", "dev-b 1 claim"]
    assert border.replace(" ", "") == swatch.replace(" ", "")  # tokens.py has dev-a's claim, in dev-a's colour
    assert "<script>alert('claim')</script> tokens (dev-a)" in page.locator("#conflicts").inner_text()
    page.wait_for_function("document.querySelectorAll('#hotspots button').length > 0")
    assert page.locator("#hotspots button").first.inner_text() == "shop/encoding.py::b64decode"


def test_click_a_file_then_a_symbol_to_see_its_blast_radius(page: Page, shots: Path) -> None:
    click_node(page, "f:shop/tokens.py")
    page.wait_for_function("window.codemap.getElementById('s:shop/tokens.py::validate_token').length === 1")
    assert node_data(page, f"s:{VALIDATE}", "claims") == "dev-a (#1 <script>alert('claim')</script> tokens)"

    click_node(page, f"s:{VALIDATE}")
    page.wait_for_function("document.getElementById('answer').dataset.shown === 'blast'")

    assert page.locator("#answer h2").inner_text() == f"Blast radius of {VALIDATE}"
    assert page.locator("#answer li").all_inner_texts() == [
        "shop/auth.py::current_user 1 hop",
        f"{CHECKOUT} 2 hops",
        f"{PLACE_ORDER} 3 hops",
    ]
    assert has_class(page, f"s:{VALIDATE}", "selected")
    assert has_class(page, "f:shop/auth.py", "reached") and has_class(page, "f:shop/api.py", "reached")
    page.screenshot(path=shots / "dashboard-codemap-blast.png", full_page=True)


def test_find_a_path_through_the_nearest_common_caller(page: Page, shots: Path) -> None:
    page.fill("#path-form [name=a]", "send_receipt")
    page.fill("#path-form [name=b]", "checkout")
    page.click("#path-form button[type=submit]")
    page.wait_for_function("document.getElementById('answer').dataset.shown === 'path'")

    assert page.locator("#answer h2").inner_text() == "Nearest common caller"
    assert page.locator("#answer p.chain-path").all_inner_texts() == [
        f"{PLACE_ORDER} → shop/emails.py::send_receipt",
        f"{PLACE_ORDER} → {CHECKOUT}",
    ]
    for symbol in (PLACE_ORDER, "shop/emails.py::send_receipt", CHECKOUT):  # their files were opened to show them
        assert has_class(page, f"s:{symbol}", "on-path"), symbol
    drawn = page.evaluate("window.codemap.edges('.path').map((e) => [e.source().id(), e.target().id()])")
    assert sorted(drawn) == [
        [f"s:{PLACE_ORDER}", "s:shop/emails.py::send_receipt"],
        [f"s:{PLACE_ORDER}", f"s:{CHECKOUT}"],
    ]
    page.screenshot(path=shots / "dashboard-codemap.png", full_page=True)


def test_a_conflict_is_drawn_as_the_path_between_the_tasks(page: Page) -> None:
    page.click("#conflicts button[data-conflict='0']")
    page.wait_for_function("document.getElementById('answer').dataset.shown === 'path'")

    assert page.locator("#answer p.chain-path").inner_text() == f"{CHECKOUT} → shop/auth.py::current_user → {VALIDATE}"
    assert all(has_class(page, f"s:{s}", "on-path") for s in (CHECKOUT, "shop/auth.py::current_user", VALIDATE))
    assert not has_class(page, f"s:{PLACE_ORDER}", "on-path")  # the last path's marks are gone


LEAF_POSITIONS = (
    "Object.fromEntries(window.codemap.nodes().filter((n) => n.isChildless()).map((n) => [n.id(), n.position()]))"
)


def test_opening_a_file_moves_nothing_placed_and_a_second_click_closes_it(page: Page) -> None:
    before = page.evaluate(LEAF_POSITIONS)
    click_node(page, "f:shop/health.py")
    page.wait_for_function("window.codemap.getElementById('s:shop/health.py::ping').length === 1")
    after = page.evaluate(LEAF_POSITIONS)

    placed = [node for node in before if node != "f:shop/health.py"]
    assert placed and {n: after[n] for n in placed} == {n: before[n] for n in placed}

    # Its padding, not the symbol drawn at its centre: a click there closes the file.
    box = page.locator("#map").bounding_box()
    edge = page.evaluate(
        "window.codemap.getElementById('f:shop/health.py').renderedBoundingBox({ includeLabels: false })"
    )
    assert box is not None
    page.mouse.click(box["x"] + edge["x1"] + 3, box["y"] + edge["y1"] + 3)
    page.wait_for_function("window.codemap.getElementById('s:shop/health.py::ping').length === 0")

    assert node_data(page, "f:shop/health.py", "open") is False
    closed = page.evaluate(LEAF_POSITIONS)
    assert {n: closed[n] for n in placed} == {n: before[n] for n in placed}
