"""What an organisation holds, and what its admins do to it: the list of its memories (paged, with
owner, scope and key), deleting them by address and by scope (search and mirrors forget them too),
and an audit line for every organisation action."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
from conftest import Account, Server, unique
from test_remote_cli import hivelore

SHOP = "repo::acme/shop"


def _write(api: httpx.Client, who: Account, scope: str, key: str, value: str) -> dict:
    answer = api.post("/v1/memories", headers=who.headers(), json={"scope": scope, "key": key, "value": value})
    assert answer.status_code == 200, answer.text
    return answer.json()


def _org(api: httpx.Client, owner: Account, *scopes: str) -> str:
    org = unique("shop")
    assert api.post("/v1/orgs", headers=owner.headers(), json={"name": org}).status_code == 201
    for scope in scopes:
        assert api.put(f"/v1/orgs/{org}/scopes/{scope}", headers=owner.headers()).status_code == 204
    return org


def _member(
    api: httpx.Client, make_user: Callable[..., Account], admin: Account, org: str, role: str
) -> tuple[Account, str]:
    """A new user invited by `admin` who accepts (the invitation names their email), and the email."""
    email = f"{unique('bob')}@example.com"
    who = make_user("bob", email=email)
    made = api.post(f"/v1/orgs/{org}/invitations", headers=admin.headers(), json={"invitee": email, "role": role})
    assert made.status_code == 201, made.text
    joined = api.post("/v1/invitations/accept", headers=who.headers(), json={"token": made.json()["token"]})
    assert joined.status_code == 200, joined.text
    return who, email


def test_an_admin_lists_what_the_org_holds_a_page_at_a_time_and_deletes_it_by_key_and_by_scope(
    api: httpx.Client, make_user: Callable[..., Account]
) -> None:
    alice = make_user("alice")
    org = _org(api, alice, SHOP, "project::shop")
    bob, _ = _member(api, make_user, alice, org, "member")
    _write(api, alice, SHOP, "build", "make all builds the shop")
    _write(api, bob, SHOP, "deploy", "make deploy ships the shop from main")
    _write(api, bob, "project::shop", "style", "the shop uses short functions")
    _write(api, bob, "global", "editor", "bob uses emacs")  # bob's personal space: not the org's

    pages, after = [], {}
    while True:
        page = api.get(f"/v1/orgs/{org}/memories", headers=alice.headers(), params={"limit": 2, **after})
        assert page.status_code == 200, page.text
        pages.append([(m["scope"], m["key"], m["owner"]) for m in page.json()["memories"]])
        if page.json()["next"] is None:
            break
        after = {"after_scope": page.json()["next"]["scope"], "after_key": page.json()["next"]["key"]}
    assert pages[0] == [("project::shop", "style", bob.name), (SHOP, "build", alice.name)]
    assert [row for rows in pages[1:] for row in rows] == [(SHOP, "deploy", bob.name)]
    refused = api.get(f"/v1/orgs/{org}/memories", headers=bob.headers())
    assert refused.status_code == 403 and "needs the role admin" in refused.json()["error"]

    since = api.get("/v1/memories/changes", headers=bob.headers()).json()["cursor"]
    one = api.delete(f"/v1/orgs/{org}/memories", headers=alice.headers(), params={"scope": SHOP, "key": "deploy"})
    assert one.status_code == 200 and one.json()["deleted"] == [f"{SHOP}::deploy"]
    again = api.delete(f"/v1/orgs/{org}/memories", headers=alice.headers(), params={"scope": SHOP, "key": "deploy"})
    assert again.status_code == 404 and "holds no memory" in again.json()["error"]
    whole = api.delete(f"/v1/orgs/{org}/memories", headers=alice.headers(), params={"scope": SHOP})
    assert whole.status_code == 200 and whole.json()["deleted"] == [f"{SHOP}::build"]

    searched = api.get("/v1/memories/search", headers=bob.headers(), params={"q": "make shop", "scope": SHOP})
    assert searched.json()["hits"] == []  # the search index forgot them
    listed = api.get(f"/v1/orgs/{org}/memories", headers=alice.headers()).json()["memories"]
    assert [(m["scope"], m["key"]) for m in listed] == [("project::shop", "style")]
    gone = api.get("/v1/memories/changes", headers=bob.headers(), params={"since": since}).json()["gone"]
    assert {(g["scope"], g["key"]) for g in gone} >= {(SHOP, "deploy"), (SHOP, "build")}  # mirrors drop them
    personal = api.get("/v1/memories/read", headers=bob.headers(), params={"scope": "global", "key": "editor"})
    assert personal.status_code == 200


def test_every_org_action_writes_an_audit_line_with_the_org(
    api: httpx.Client, make_user: Callable[..., Account]
) -> None:
    alice = make_user("alice")
    org = _org(api, alice)
    h = alice.headers()
    bob, invitee = _member(api, make_user, alice, org, "member")
    assert api.put(f"/v1/orgs/{org}/scopes/{SHOP}", headers=h).status_code == 204
    _write(api, bob, SHOP, "build", "make all builds the shop")
    assert api.put(f"/v1/orgs/{org}/members/{bob.name}", headers=h, json={"role": "viewer"}).status_code == 204
    assert api.put(f"/v1/orgs/{org}/switches/{SHOP}", headers=h).status_code == 204
    assert api.delete(f"/v1/orgs/{org}/switches/{SHOP}", headers=h).status_code == 204
    assert api.delete(f"/v1/orgs/{org}/memories", headers=h, params={"scope": SHOP, "key": "build"}).status_code == 200
    assert api.delete(f"/v1/orgs/{org}/scopes/{SHOP}", headers=h).status_code == 204
    assert api.delete(f"/v1/orgs/{org}/members/{bob.name}", headers=h).status_code == 204
    renamed = f"{org}-2"
    assert api.patch(f"/v1/orgs/{org}", headers=h, json={"name": renamed}).status_code == 200

    log = api.get(f"/v1/orgs/{renamed}/audit", headers=h)
    assert log.status_code == 200, log.text
    lines = [(line["actor"], line["org"], line["action"], line["target"]) for line in reversed(log.json()["lines"])]
    assert lines == [
        (alice.name, renamed, "invite", f"{invitee} as member"),
        (bob.name, renamed, "accept-invitation", f"{bob.name} as member"),
        (alice.name, renamed, "bind-scope", SHOP),
        (alice.name, renamed, "set-role", f"{bob.name} member -> viewer"),
        (alice.name, renamed, "switch-off", SHOP),
        (alice.name, renamed, "switch-on", SHOP),
        (alice.name, renamed, "org-forget", f"{SHOP}::build"),
        (alice.name, renamed, "unbind-scope", SHOP),
        (alice.name, renamed, "remove-member", f"{bob.name} (viewer)"),
        (alice.name, renamed, "rename", f"{org} -> {renamed}"),
    ]
    assert api.delete(f"/v1/orgs/{renamed}", headers=h).status_code == 204
    mine = api.get("/v1/me/audit", headers=h).json()["lines"][0]
    assert (mine["org"], mine["action"], mine["target"]) == (None, "delete-org", renamed)


def test_the_org_commands_list_switch_and_delete_what_the_org_holds(
    server: Server, api: httpx.Client, make_user: Callable[..., Account], tmp_path: Path
) -> None:
    alice = make_user("alice")
    org = _org(api, alice, SHOP)
    _write(api, alice, SHOP, "build", "make all builds the shop")
    _write(api, alice, SHOP, "deploy", "make deploy ships the shop from main")
    as_alice = {"HIVELORE_ENDPOINT": server.url, "HIVELORE_TOKEN": alice.token}

    def run(*args: str) -> str:
        done = hivelore(tmp_path / "h", tmp_path, "org", *args, **as_alice)
        assert done.returncode == 0, done.stderr
        return done.stdout

    listed = run("memories", org, "--limit", "1")  # a page of one: the command asks for the next itself
    assert [line.split()[:3] for line in listed.splitlines()] == [[f"{SHOP}::build", "lesson", alice.name]]
    assert [line.split()[0] for line in run("memories", org).splitlines()] == [f"{SHOP}::build", f"{SHOP}::deploy"]
    assert run("switch-off", org, SHOP).startswith(f"memory is off for {SHOP} in {org}")
    assert run("switches", org).startswith(f"{SHOP}  off since ")
    assert f"by {alice.name}" in run("switches", org)
    assert run("forget", org, "build", "--scope", SHOP) == f"deleted {SHOP}::build\n"
    whole = hivelore(tmp_path / "h", tmp_path, "org", "forget", org, "--scope", SHOP, **as_alice)
    assert whole.returncode == 2 and "add --yes" in whole.stderr
    assert run("forget", org, "--scope", SHOP, "--yes") == f"deleted {SHOP}::deploy\n"
    assert run("memories", org) == "(none)\n"
    actions = [line.split()[2] for line in run("audit", org).splitlines()]
    assert actions == ["org-forget", "org-forget", "switch-off", "bind-scope"]
