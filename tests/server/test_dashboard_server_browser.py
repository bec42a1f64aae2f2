"""The dashboard on the team server in a real browser: Playwright driving Debian's chromium (never a
downloaded browser) against a real `hivelore serve` on loopback. A member logs in with a token, searches,
archives and restores a memory; a viewer logs in and is offered no archive. Screenshots go under the
run's temporary folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browsing import chromium, needs_chromium, screenshots
from conftest import Server
from playwright.sync_api import Browser, Page
from test_dashboard_server import Team, team_fixture  # noqa: F401 -- the `team` fixture

pytestmark = needs_chromium


@pytest.fixture(scope="module", name="chromium")
def chromium_fixture() -> Iterator[Browser]:
    with chromium() as browser:
        yield browser


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return screenshots(tmp_path_factory, "team dashboard")


def signed_in(chromium: Browser, server: Server, token: str) -> Page:
    """A fresh browser context that logs in through the login page a page view sent it to."""
    page = chromium.new_context(base_url=server.url, viewport={"width": 1280, "height": 800}).new_page()
    page.goto("/dash/memories")
    page.wait_for_url("**/dash/login?*")
    page.fill("input[name=token]", token)
    page.click("form.login button[type=submit]")
    page.wait_for_url("**/dash/memories")
    return page


def _keys(page: Page) -> list[str]:
    return page.locator("table.memories tbody tr td:nth-child(2) a").all_inner_texts()


def test_a_member_logs_in_searches_archives_and_restores(
    chromium: Browser, server: Server, team: Team, shots: Path
) -> None:
    page = signed_in(chromium, server, team.member.token)
    dialogs: list[str] = []  # an alert() that ran would open one
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.screenshot(path=shots / "team-dashboard-memories.png", full_page=True)
    assert "xss-in-templates" in _keys(page) and page.locator("main script").count() == 0

    page.fill("input[name=q]", "postgres")
    page.click("form#filters button[type=submit]")
    page.wait_for_url("**/dash/memories?*q=postgres*")
    assert _keys(page) == ["tests-need-postgres"]

    page.click("text=tests-need-postgres")
    page.click("button:has-text('Archive')")
    page.wait_for_url("**done=archived*")
    assert f"archived {team.repo}::tests-need-postgres" in page.locator(".done").inner_text()
    page.goto("/dash/memories")
    assert "tests-need-postgres" not in _keys(page)

    page.goto("/dash/memories?archived=true")
    page.click("text=tests-need-postgres")
    page.click("button:has-text('Restore')")
    page.wait_for_url("**done=restored*")
    page.goto("/dash/memories")
    assert "tests-need-postgres" in _keys(page)
    assert dialogs == []


def test_a_viewer_is_offered_no_archive(chromium: Browser, server: Server, team: Team, shots: Path) -> None:
    page = signed_in(chromium, server, team.viewer.token)
    page.click("text=tests-need-postgres")
    page.screenshot(path=shots / "team-dashboard-viewer.png", full_page=True)

    assert page.locator("button:has-text('Archive')").count() == 0
    assert page.locator("button:has-text('Forget')").count() == 0
    assert "you are viewer" in page.locator(".refused").first.inner_text()
