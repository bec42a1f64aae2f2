"""The dashboard on the team server (`/dash`), over HTTP against a real `hivelore serve` on loopback and
its PostgreSQL: a session from a token given once (cookie flags, logout, revocation), CSRF on every
action, a viewer who sees but cannot archive, a scope-limited token that lists only its scopes, a
lesson holding `<script>` shown as text. The task board and the code map: test_dashboard_server_team.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import psycopg
import pytest
from conftest import Account, Server, unique

from hivelore.server.postgres import accounts

SCRIPT_LESSON = "never paste <script>alert('x')</script> into a template unescaped"
COOKIE = "hivelore_session"


@dataclass
class Team:
    org: str
    repo: str
    member: Account  # the org's owner: may archive, restore, forget, commit
    viewer: Account
    limited: str  # a token of the member's limited to project::dash-other
    write_only: str


def _write(api: httpx.Client, who: Account, scope: str, key: str, value: str, **more: object) -> None:
    answer = api.post("/v1/memories", json={"scope": scope, "key": key, "value": value, **more}, headers=who.headers())
    assert answer.status_code == 200, answer.text


# A module-scoped fixture the browser test imports too (under this name pytest finds it as `team`).
@pytest.fixture(scope="module", name="team")
def team_fixture(database_url: str, server: Server) -> Team:
    """An org sharing a repository, with its owner and a viewer; in it a lesson holding <script>, a
    lesson to archive and a staged note; and the owner's personal lesson under another scope."""
    org, repo = unique("dash"), f"repo::{unique('dash')}/shop"
    with psycopg.connect(database_url, autocommit=True) as db:
        people = {}
        for role in ("member", "viewer"):
            user = accounts.add_user(db, unique(role))
            people[role] = Account(user.name, user.id, accounts.create_token(db, user.id, "rw").token)
        accounts.create_org(db, org, people["member"].id)
        org_id, _ = accounts.role_in(db, org, people["member"].id)
        viewer = (org_id, people["viewer"].id)
        db.execute("INSERT INTO members (org_id, user_id, role) VALUES (%s, %s, 'viewer')", viewer)
        accounts.bind_scope(db, org_id, repo, people["member"].id)
        limited = accounts.create_token(db, people["member"].id, "rw", scopes=["project::dash-other"]).token
        write_only = accounts.create_token(db, people["member"].id, "wo").token
    with httpx.Client(base_url=server.url, timeout=10) as api:
        _write(api, people["member"], repo, "xss-in-templates", SCRIPT_LESSON, tags=["web"])
        _write(api, people["member"], repo, "tests-need-postgres", "the checkout tests need a local postgres")
        _write(api, people["member"], repo, "prefer-uv", "use uv to install python packages", state="staged")
        _write(api, people["member"], "project::dash-other", "elsewhere", "a lesson of another project")
    return Team(org, repo, people["member"], people["viewer"], limited, write_only)


@pytest.fixture
def browser(server: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=10) as client:
        yield client


def log_in(browser: httpx.Client, token: str, **headers: str) -> httpx.Response:
    browser.get("/dash/login")  # the CSRF cookie
    form = {"token": token, "csrf": browser.cookies["hivelore_csrf"], "next": "/dash/memories"}
    return browser.post("/dash/login", data=form, headers=headers)


def act(browser: httpx.Client, action: str, scope: str, key: str, token: str | None = None) -> httpx.Response:
    csrf = browser.cookies["hivelore_csrf"] if token is None else token
    return browser.post(f"/dash/memory/{action}", data={"scope": scope, "key": key, "csrf": csrf})


def keys(page: str) -> list[str]:
    return re.findall(r"<td><a href=\"/dash/memory\?[^\"]+\">([^<]+)</a></td>", page)


def read(api: httpx.Client, who: Account, scope: str, key: str) -> httpx.Response:
    return api.get("/v1/memories/read", params={"scope": scope, "key": key}, headers=who.headers())


def test_the_pages_need_a_session_and_the_login_sets_its_cookie(browser: httpx.Client, team: Team) -> None:
    asked = browser.get("/dash/memories?q=postgres")
    posted = act(browser, "archive", team.repo, "tests-need-postgres", token="x")
    assert asked.status_code == 303
    assert asked.headers["location"] == "/dash/login?next=%2Fdash%2Fmemories%3Fq%3Dpostgres"
    assert posted.status_code == 303 and posted.headers["location"].startswith("/dash/login")
    assert browser.get("/dash/static/dashboard.css").status_code == 200  # the login page's style

    plain = log_in(browser, team.member.token)
    assert plain.status_code == 303 and plain.headers["location"] == "/dash/memories"
    cookie = plain.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/dash" in cookie and "Secure" not in cookie
    session = browser.cookies[COOKIE]
    assert team.member.token not in cookie and len(session) >= 43  # a random id, not the token
    page = browser.get("/dash/memories")
    assert page.status_code == 200 and team.member.name in page.text

    with httpx.Client(base_url=browser.base_url, timeout=10) as behind_tls:
        secure = log_in(behind_tls, team.member.token, **{"X-Forwarded-Proto": "https"})
    assert secure.status_code == 303 and "Secure" in secure.headers["set-cookie"]


def test_a_bad_token_a_write_only_one_or_a_login_without_its_csrf_token_opens_no_session(
    browser: httpx.Client, team: Team
) -> None:
    unknown = log_in(browser, "hl_rw_" + "x" * 43)
    garbage = log_in(browser, "password1")
    write_only = log_in(browser, team.write_only)
    forged = browser.post("/dash/login", data={"token": team.member.token, "csrf": "forged"})

    assert unknown.status_code == 401 and "this token is not known here" in unknown.text
    assert garbage.status_code == 401 and "that is not a hivelore token" in garbage.text
    assert write_only.status_code == 403 and "this token can only write" in write_only.text
    assert forged.status_code == 403 and "out of date or came from another site" in forged.text
    assert COOKIE not in browser.cookies


def test_the_lesson_holding_script_shows_as_text(browser: httpx.Client, team: Team) -> None:
    log_in(browser, team.member.token)
    listing = browser.get("/dash/memories").text
    one = browser.get("/dash/memory", params={"scope": team.repo, "key": "xss-in-templates"}).text

    assert keys(listing) == ["prefer-uv", "tests-need-postgres", "xss-in-templates", "elsewhere"]
    for page in (listing, one):
        assert "never paste &lt;script&gt;alert(" in page
        assert "<script>alert" not in page


def test_a_member_archives_restores_and_commits_through_the_service(
    browser: httpx.Client, api: httpx.Client, team: Team
) -> None:
    log_in(browser, team.member.token)
    forged = act(browser, "archive", team.repo, "tests-need-postgres", token="forged")
    assert forged.status_code == 403 and read(api, team.member, team.repo, "tests-need-postgres").status_code == 200

    archived = act(browser, "archive", team.repo, "tests-need-postgres")
    assert archived.status_code == 303 and "done=archived" in archived.headers["location"]
    assert read(api, team.member, team.repo, "tests-need-postgres").status_code == 404
    shown = browser.get(archived.headers["location"]).text
    assert 'action="/dash/memory/restore"' in shown and "org:" in shown
    restored = act(browser, "restore", team.repo, "tests-need-postgres")
    assert restored.status_code == 303 and read(api, team.member, team.repo, "tests-need-postgres").status_code == 200

    staged = browser.get("/dash/memory", params={"scope": team.repo, "key": "prefer-uv"}).text
    assert 'action="/dash/memory/commit"' in staged
    committed = act(browser, "commit", team.repo, "prefer-uv")
    assert committed.status_code == 303 and "done=committed" in committed.headers["location"]
    assert read(api, team.member, team.repo, "prefer-uv").json()["memory"]["state"] == "committed"
    again = act(browser, "commit", team.repo, "prefer-uv")
    assert again.status_code == 400 and "was not committed" in again.text


def test_a_viewer_sees_the_orgs_memories_but_is_neither_offered_nor_allowed_a_change(
    browser: httpx.Client, api: httpx.Client, team: Team
) -> None:
    log_in(browser, team.viewer.token)
    listing = browser.get("/dash/memories").text
    one = browser.get("/dash/memory", params={"scope": team.repo, "key": "tests-need-postgres"}).text
    refused = act(browser, "archive", team.repo, "tests-need-postgres")

    assert "tests-need-postgres" in keys(listing) and "elsewhere" not in keys(listing)  # not the owner's own
    assert "/dash/memory/archive" not in one and "/dash/memory/forget" not in one
    assert f"this needs the role member in {team.org}; you are viewer." in one
    assert refused.status_code == 403 and "you are viewer" in refused.text
    assert read(api, team.member, team.repo, "tests-need-postgres").status_code == 200


def test_a_scope_limited_token_lists_searches_and_shows_only_its_scopes(browser: httpx.Client, team: Team) -> None:
    log_in(browser, team.limited)
    listing = browser.get("/dash/memories").text
    searched = browser.get("/dash/memories", params={"q": "script template"}).text
    other = browser.get("/dash/memories", params={"scope": team.repo})
    one = browser.get("/dash/memory", params={"scope": team.repo, "key": "xss-in-templates"})
    archive = act(browser, "archive", team.repo, "tests-need-postgres")

    assert keys(listing) == ["elsewhere"] and team.repo not in listing  # not even in the scope picker
    assert keys(searched) == []
    for refused in (other, one, archive):
        assert refused.status_code == 403 and "this token is limited to the scopes project::dash-other" in refused.text


def test_logging_out_or_revoking_the_token_ends_the_session(
    browser: httpx.Client, api: httpx.Client, team: Team, database_url: str
) -> None:
    log_in(browser, team.member.token)
    session = browser.cookies[COOKIE]
    out = browser.post("/dash/logout", data={"csrf": browser.cookies["hivelore_csrf"]})
    assert out.status_code == 303 and out.headers["location"] == "/dash/login"
    browser.cookies.set(COOKIE, session, path="/dash")  # a copy of the cookie kept from before
    ended = browser.get("/dash/memories")
    assert ended.status_code == 303 and "ended=true" in ended.headers["location"]
    assert "your dashboard session has ended" in browser.get(ended.headers["location"]).text

    with psycopg.connect(database_url, autocommit=True) as db:
        made = accounts.create_token(db, team.member.id, "ro", name="dashboard")
    browser.cookies.clear()
    log_in(browser, made.token)
    page = browser.get("/dash/memory", params={"scope": team.repo, "key": "tests-need-postgres"})
    assert page.status_code == 200 and "/dash/memory/archive" not in page.text  # hl_ro_ only reads
    assert "this token can only read" in page.text
    assert api.delete(f"/v1/tokens/{made.info.id}", headers=team.member.headers()).status_code == 204
    assert browser.get("/dash/memories").status_code == 303
