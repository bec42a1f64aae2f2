"""The team server's task board and code map in a real browser: Playwright driving Debian's chromium
(never a downloaded browser) against a real `hivelore serve`, over the shop of
test_dashboard_server_team.py (three tasks of other developers, a pushed graph). Screenshots go under
the run's temporary folder (docs/images/ holds copies)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browsing import chromium, click_node, needs_chromium, screenshots
from conftest import Server
from playwright.sync_api import Browser, Page
from test_dashboard_server_team import (
    CHECKOUT,
    CURRENT_USER,
    FAILING,
    VALIDATE,
    Shop,
    shop_fixture,  # noqa: F401 -- the `shop` fixture
)

pytestmark = needs_chromium


@pytest.fixture(scope="module", name="browser")
def browser_fixture() -> Iterator[Browser]:
    with chromium() as browser:
        yield browser


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return screenshots(tmp_path_factory, "team server board and map")


def signed_in(browser: Browser, server: Server, token: str, wanted: str) -> Page:
    """A fresh browser context that asks for `wanted`, logs in where it is sent, and comes back to it."""
    page = browser.new_context(base_url=server.url, viewport={"width": 1400, "height": 900}).new_page()
    page.goto(wanted)
    page.wait_for_url("**/dash/login?*")
    page.fill("input[name=token]", token)
    page.click("form.login button[type=submit]")
    page.wait_for_url(f"**{wanted}")
    return page


def posting_forms(page: Page) -> list[str]:
    """Where the page's POST forms go, but for logging out: the actions it offers."""
    actions = page.locator("form[method=post]").evaluate_all("(forms) => forms.map((f) => f.action)")
    return [action for action in actions if not action.endswith("/dash/logout")]


def test_the_board_shows_another_developers_task_with_its_claims_and_failing_tests(
    browser: Browser, server: Server, shop: Shop, shots: Path
) -> None:
    page = signed_in(browser, server, shop.owner.token, f"/dash/tasks?repo={shop.repo}")
    dialogs: list[str] = []  # an alert() from a task's title would open one
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    card = page.locator(f"a.card[href='/dash/tasks/{shop.task}']")

    assert "speed up <b>checkout</b>" in card.locator(".title").inner_text()
    assert card.locator(".owner").inner_text() == "dev-b"
    assert card.locator(".counts").inner_text() == "1 claims · 1 failing attempts"
    page.screenshot(path=shots / "team-dashboard-tasks.png", full_page=True)

    card.click()
    page.wait_for_url(f"**/dash/tasks/{shop.task}")
    assert page.locator("ul.claims li").all_inner_texts()[0].startswith(f"{CHECKOUT} by dev-b")
    assert FAILING in page.locator("table.attempts").inner_text()
    assert page.locator("ul.decisions li.superseded del").inner_text() == "Totals are computed in cents"
    page.screenshot(path=shots / "team-dashboard-task.png", full_page=True)
    assert dialogs == []


def test_the_map_of_the_pushed_graph_opens_a_file_and_shows_a_blast_radius(
    browser: Browser, server: Server, shop: Shop, shots: Path
) -> None:
    page = signed_in(browser, server, shop.owner.token, f"/dash/codemap?repo={shop.repo}")
    page.wait_for_selector("#map[data-ready=true]")

    click_node(page, "f:shop/tokens.py")
    click_node(page, f"s:{VALIDATE}")
    page.wait_for_function("document.getElementById('answer').dataset.shown === 'blast'")

    assert page.locator("#answer h2").inner_text() == f"Blast radius of {VALIDATE}"
    assert page.locator("#answer li").all_inner_texts() == [f"{CURRENT_USER} 1 hop", f"{CHECKOUT} 2 hops"]
    assert page.evaluate("window.codemap.getElementById('f:shop/users.py').hasClass('reached')")
    page.wait_for_function("document.querySelectorAll('#hotspots button').length > 0")
    page.screenshot(path=shots / "team-dashboard-codemap.png", full_page=True)


def test_a_viewer_is_offered_no_action_on_the_board_a_task_or_the_map(
    browser: Browser, server: Server, shop: Shop
) -> None:
    page = signed_in(browser, server, shop.viewer.token, f"/dash/tasks?repo={shop.repo}")
    assert page.locator(f"a.card[href='/dash/tasks/{shop.task}']").count() == 1
    assert posting_forms(page) == []
    page.goto(f"/dash/tasks/{shop.task}")
    assert FAILING in page.locator("table.attempts").inner_text() and posting_forms(page) == []
    page.goto(f"/dash/codemap?repo={shop.repo}")
    page.wait_for_selector("#map[data-ready=true]")
    assert posting_forms(page) == []
    page.goto(f"/dash/memory?scope=repo::{shop.repo}&key=prefer-cents")
    assert posting_forms(page) == [] and "you are viewer" in page.locator(".refused").first.inner_text()
