"""The dashboard in a real browser: Playwright driving Debian's chromium (/usr/bin/chromium, never a
downloaded browser) against a real `hivelore dashboard` (dashboard_site.py). Each view is loaded and
screenshotted under the run's temporary folder (docs/images/ holds copies of these)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browsing import chromium, needs_chromium, screenshots
from dashboard_site import (
    SCRIPT_LESSON,
    Dashboard,
    dashboard_fixture,  # noqa: F401 -- the `dashboard` fixture
)
from playwright.sync_api import Page

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return screenshots(tmp_path_factory, "dashboard")


@pytest.fixture(scope="module")
def page(dashboard: Dashboard) -> Iterator[Page]:
    with chromium() as browser:
        context = browser.new_context(base_url=dashboard.url, viewport={"width": 1280, "height": 800})
        yield context.new_page()


def _keys(page: Page) -> list[str]:
    return page.locator("table.memories tbody tr td:nth-child(2) a").all_inner_texts()


def test_the_memories_view_shows_the_script_lesson_as_text(page: Page, shots: Path) -> None:
    dialogs: list[str] = []  # an alert() that ran would open one
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto("/memories")
    page.screenshot(path=shots / "dashboard-memories.png", full_page=True)

    assert _keys(page) == ["tests-need-postgres", "xss-in-templates", "prefer-uv", "rotate-keys"]
    assert SCRIPT_LESSON[:40] in page.locator("td.text").nth(1).inner_text()
    assert page.locator("main script").count() == 0  # the lesson's <script> is no element
    assert dialogs == []


def test_search_and_filters(page: Page, shots: Path) -> None:
    page.goto("/memories")
    page.fill("input[name=q]", "postgres")
    page.click("form#filters button[type=submit]")
    page.wait_for_url("**/memories?*q=postgres*")
    assert _keys(page) == ["tests-need-postgres"]

    page.goto("/memories")
    page.select_option("select[name=kind]", "lesson")  # the script submits the filter on change
    page.wait_for_url("**kind=lesson*")
    assert _keys(page) == ["xss-in-templates", "prefer-uv", "rotate-keys"]
    page.check("input[name=archived]")
    page.wait_for_url("**archived=true*")
    assert _keys(page) == ["old-cache-rule"]
    page.screenshot(path=shots / "dashboard-archived.png", full_page=True)


def test_archive_and_restore_a_memory(page: Page, shots: Path) -> None:
    page.goto("/memories")
    page.click("text=tests-need-postgres")
    page.screenshot(path=shots / "dashboard-memory.png", full_page=True)
    assert "tests-need-postgres.md" in page.locator("dd code").inner_text()

    page.click("button:has-text('Archive')")
    page.wait_for_url("**done=archived*")
    assert "archived repo::acme/shop::tests-need-postgres" in page.locator(".done").inner_text()
    page.goto("/memories")
    assert "tests-need-postgres" not in _keys(page)

    page.goto("/memories?archived=true")
    page.click("text=tests-need-postgres")
    page.click("button:has-text('Restore')")
    page.wait_for_url("**done=restored*")
    page.goto("/memories")
    assert "tests-need-postgres" in _keys(page)


def test_the_task_board_and_a_task(page: Page, dashboard: Dashboard, shots: Path) -> None:
    page.goto("/tasks")
    page.screenshot(path=shots / "dashboard-tasks.png", full_page=True)
    active = page.locator("[data-status=active] .card .title").all_inner_texts()
    handed_off = page.locator("[data-status=handed_off] .card .title").all_inner_texts()
    assert [t.split(" ", 1)[1] for t in active] == ["speed up <b>checkout</b>"]  # the title's markup is text
    assert [t.split(" ", 1)[1] for t in handed_off] == ["add JWT support"]

    page.click("text=add JWT support")
    page.wait_for_url(f"**/tasks/{dashboard.task_id}")
    page.screenshot(path=shots / "dashboard-task.png", full_page=True)
    assert "tests/test_tokens.py::test_refresh_session" in page.locator("table.attempts").inner_text()
    assert page.locator("li.superseded del").inner_text() == "Tokens are opaque ids"
