"""The dashboard's pages and actions over real HTTP, against a real `hivelore dashboard` process
(dashboard_site.py): what each view shows, that search ranks as the CLI does, that every action needs the
CSRF token, and that memory text is escaped."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
from dashboard_site import (
    SCRIPT_LESSON,
    Dashboard,
    dashboard_fixture,  # noqa: F401 -- the `dashboard` fixture
    ok,
)
from harness import cli_as

ADDRESS_RE = re.compile(r'href="/memory\?scope=([^&"]+)&amp;key=([^"]+)"')


def keys(page: str) -> list[str]:
    return [key for _, key in ADDRESS_RE.findall(page)]


def test_the_memories_view_lists_the_chain_and_escapes_every_text(dashboard: Dashboard) -> None:
    page = httpx.get(f"{dashboard.url}/memories").text

    # the repo scope first, then global; by key within a scope
    assert keys(page) == ["tests-need-postgres", "xss-in-templates", "prefer-uv", "rotate-keys"]
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    assert "<script>alert" not in page


def test_search_ranks_as_the_cli_does(dashboard: Dashboard) -> None:
    cli = json.loads(cli_as(dashboard.home, dashboard.repo, "dev-a", "search", "postgres tests", "--json").stdout)
    page = httpx.get(f"{dashboard.url}/memories", params={"q": "postgres tests"}).text

    assert keys(page) == [hit["key"] for hit in cli] != []


def test_filters_by_kind_tag_state_tier_expiring_and_archived(dashboard: Dashboard) -> None:
    def shown(**params: str) -> list[str]:
        return keys(httpx.get(f"{dashboard.url}/memories", params=params).text)

    assert shown(kind="fact") == ["tests-need-postgres"]
    assert shown(tag="web") == ["xss-in-templates"]
    assert shown(state="staged") == ["prefer-uv"]
    assert shown(tier="project") == []
    assert shown(tier="home") == ["tests-need-postgres", "xss-in-templates", "prefer-uv", "rotate-keys"]
    assert shown(expiring="true") == ["rotate-keys"]
    assert shown(archived="true") == ["old-cache-rule"]
    assert shown(scope="global") == ["prefer-uv", "rotate-keys"]


def test_a_page_past_the_last_is_empty_and_a_negative_one_is_refused(dashboard: Dashboard) -> None:
    past = httpx.get(f"{dashboard.url}/memories", params={"page": "3"})
    negative = httpx.get(f"{dashboard.url}/memories", params={"page": "-1"})

    assert past.status_code == 200 and keys(past.text) == [] and 'rel="prev"' in past.text
    assert negative.status_code == 400 and "pages count from 0" in negative.text


def test_a_bad_scope_is_one_sentence_on_the_page(dashboard: Dashboard) -> None:
    answer = httpx.get(f"{dashboard.url}/memories", params={"scope": "nonsense::"})

    assert answer.status_code == 400
    assert 'class="problem"' in answer.text


def test_one_memory_in_full_with_its_file_and_provenance(dashboard: Dashboard) -> None:
    params = {"scope": "repo::acme/shop", "key": "xss-in-templates"}
    page = httpx.get(f"{dashboard.url}/memory", params=params).text

    path = dashboard.home / "repo" / "acme" / "shop"
    assert str(next(path.rglob("xss-in-templates.md"))) in page
    assert "<dt>agent</dt><dd>cli</dd>" in page
    assert SCRIPT_LESSON.replace("<", "&lt;").replace(">", "&gt;").replace("'", "&#39;") in page
    assert httpx.get(f"{dashboard.url}/memory", params={**params, "key": "nope"}).status_code == 404


def test_an_action_without_the_token_changes_nothing(dashboard: Dashboard) -> None:
    form = {"scope": "repo::acme/shop", "key": "tests-need-postgres"}
    with httpx.Client(base_url=dashboard.url) as browser:
        browser.get("/memories")  # the browser has its cookie, but the other site's form cannot know it
        refused = browser.post("/memory/archive", data={**form, "csrf": "guessed"})
        no_token = browser.post("/memory/archive", data=form)
    forged = httpx.post(f"{dashboard.url}/memory/forget", data={**form, "csrf": "x"}, cookies={"hivelore_csrf": "y"})

    assert refused.status_code == no_token.status_code == forged.status_code == 403
    assert "tests-need-postgres" in keys(httpx.get(f"{dashboard.url}/memories").text)


def test_archive_and_restore_go_through_the_service(dashboard: Dashboard) -> None:
    form = {"scope": "global", "key": "prefer-uv", "tier": "home"}
    with httpx.Client(base_url=dashboard.url) as browser:
        browser.get("/memories")
        token = browser.cookies["hivelore_csrf"]
        archived = browser.post("/memory/archive", data={**form, "csrf": token})
        hidden = cli_as(dashboard.home, dashboard.repo, "dev-a", "read", "global::prefer-uv")
        restored = browser.post("/memory/restore", data={**form, "csrf": token})
        again = browser.post("/memory/restore", data={**form, "csrf": token})

    assert archived.status_code == 303 and "archived" in archived.headers["location"]
    assert hidden.returncode != 0
    assert restored.status_code == 303
    assert read_json(dashboard, "global::prefer-uv")["archived_at"] is None
    assert again.status_code == 400 and "not archived or expired" in again.text


def read_json(dashboard: Dashboard, address: str) -> dict:
    return json.loads(ok(cli_as(dashboard.home, dashboard.repo, "dev-a", "read", address, "--json")))


def test_the_task_board_by_status_and_owner(dashboard: Dashboard) -> None:
    board = httpx.get(f"{dashboard.url}/tasks").text
    mine = httpx.get(f"{dashboard.url}/tasks", params={"owner": "dev-b"}).text

    assert "add JWT support" in board and "dev-a" in board
    assert "speed up &lt;b&gt;checkout&lt;/b&gt;" in board
    assert "1 claims · 1 failing attempts" in board
    assert "add JWT support" not in mine and "speed up" in mine


def test_a_task_shows_its_claims_attempts_decisions_and_handoff(dashboard: Dashboard) -> None:
    page = httpx.get(f"{dashboard.url}/tasks/{dashboard.task_id}").text

    assert "shop/tokens.py::validate_token" in page
    assert "tests/test_tokens.py::test_refresh_session" in page
    assert '<li class="current">Tokens are JWTs signed with RS256' in page
    assert '<li class="superseded"><del>Tokens are opaque ids</del>' in page
    assert "refresh_session still fails: see the attempt" in page
    assert httpx.get(f"{dashboard.url}/tasks/99999").status_code == 404


def test_only_loopback_names_are_answered(dashboard: Dashboard) -> None:
    """A page that rebinds its own name to 127.0.0.1 reaches the port, but not the pages."""
    assert httpx.get(f"{dashboard.url}/memories", headers={"Host": "attacker.example"}).status_code == 400


def test_a_taken_port_is_one_sentence(dashboard: Dashboard) -> None:
    port = dashboard.url.rsplit(":", 1)[1]
    done = subprocess.run(
        [sys.executable, "-m", "hivelore", "dashboard", "--port", port],
        cwd=dashboard.repo, capture_output=True, text=True, timeout=60,
    )  # fmt: skip

    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [
        f"hivelore: port {port} on 127.0.0.1 is taken: pick another with --port."
    ]


def test_without_the_extra_the_command_says_what_to_install(tmp_path: Path) -> None:
    """jinja2 made unimportable in the child, as if `hivelore[dashboard]` were not installed."""
    code = (
        "import sys; sys.modules['jinja2'] = None; sys.argv = ['hivelore', 'dashboard']\n"
        "from hivelore.cli import run; run()"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)

    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "hivelore: the dashboard needs the dashboard extra (jinja2 is missing): pip install 'hivelore[dashboard]'"
    ]


def test_forget_deletes_the_file_through_the_service(dashboard: Dashboard) -> None:
    ok(cli_as(dashboard.home, dashboard.repo, "dev-a", "write", "global::to-forget", "a lesson about nothing"))
    (path,) = dashboard.home.glob("global/to-forget.md")
    with httpx.Client(base_url=dashboard.url) as browser:
        browser.get("/memories")
        forgot = browser.post(
            "/memory/forget", data={"scope": "global", "key": "to-forget", "csrf": browser.cookies["hivelore_csrf"]}
        )
        listed = browser.get(forgot.headers["location"]).text

    assert forgot.status_code == 303
    assert not path.exists()
    assert "forgot global::to-forget" in listed and "to-forget" not in keys(listed)
