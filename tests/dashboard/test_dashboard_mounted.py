"""The one router in another composition: mounted under a path, as the team server will mount it, its
links, forms and redirects stay under that path. Served by uvicorn on a loopback port in a thread."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from browsing import served
from fastapi import FastAPI
from harness import make_repo

from hivelore.dashboard.routes import router
from hivelore.dashboard.services import LocalServices
from hivelore.memory.service import Hivelore


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[str]:
    repo, env = make_repo(tmp_path / "checkout"), {"HIVELORE_HOME": str(tmp_path / "home")}
    service = Hivelore.open(cwd=repo, env=env)
    service.write("global", "mounted-lesson", "the pages follow their mount point")
    service.close()
    app = FastAPI()
    app.include_router(router(LocalServices(repo, env), base="/dashboard"))
    with served(app) as url:
        yield url


def test_links_forms_and_redirects_stay_under_the_mount_point(mounted: str) -> None:
    with httpx.Client(base_url=mounted) as browser:
        home = browser.get("/dashboard/")
        page = browser.get("/dashboard/memories").text
        archived = browser.post(
            "/dashboard/memory/archive",
            data={"scope": "global", "key": "mounted-lesson", "csrf": browser.cookies["hivelore_csrf"]},
        )
        shown = browser.get(archived.headers["location"]).text

    assert home.status_code == 303 and home.headers["location"] == "/dashboard/memories"
    links = re.findall(r'(?:href|src|action)="([^"]+)"', page)
    assert links and all(link.startswith("/dashboard/") for link in links), links
    assert archived.headers["location"].startswith("/dashboard/memory?")
    assert 'action="/dashboard/memory/restore"' in shown
