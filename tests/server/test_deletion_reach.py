"""What a user's export and data deletion, and an organisation's delete by scope, reach on the team
server (issue 30): the warnings a user's sessions were shown are in their export and their purge; an
export leaves out what a switched-off repository holds, as every read does; an organisation's delete
of a repository's scope takes its branches with it."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import psycopg
from conftest import Account, unique

from hivelore.server.postgres import accounts, erasure


def _write(api: httpx.Client, who: Account, scope: str, key: str, value: str) -> dict:
    answer = api.post("/v1/memories", headers=who.headers(), json={"scope": scope, "key": key, "value": value})
    assert answer.status_code == 200, answer.text
    return answer.json()


def _warn(api: httpx.Client, who: Account, session_id: str, key: str) -> None:
    body = {"agent": "claude", "session_id": session_id, "key": key, "at": 1_765_000_000.0}
    answer = api.post("/v1/team/warnings", headers=who.headers(), json=body)
    assert answer.status_code == 200 and answer.json()["first"], answer.text


def _warnings(db: psycopg.Connection, user_id: int) -> int:
    row = db.execute("SELECT count(*) FROM team_warnings WHERE user_id = %s", (user_id,)).fetchone()
    return int(row[0]) if row else 0


def test_the_warnings_a_users_sessions_were_shown_are_in_their_export_and_their_purge(
    api: httpx.Client, db: psycopg.Connection, make_user: Callable[..., Account]
) -> None:
    ann, other = make_user("ann"), make_user("other")
    session = unique("s")
    _warn(api, ann, session, "auth.py::refresh|auth.py::refresh|12|bo")
    _warn(api, other, unique("s"), "cart.py::total|cart.py::total|3|cy")

    exported = api.get("/v1/me/export", headers=ann.headers()).json()["team"]
    assert exported["warnings"] == [
        {"agent": "claude", "session_id": session, "key": "auth.py::refresh|auth.py::refresh|12|bo",
         "ts": 1_765_000_000.0}
    ]  # fmt: skip
    limited = accounts.create_token(db, ann.id, "ro", scopes=["repo::acme/*"]).token
    narrow = api.get("/v1/me/export", headers={"Authorization": f"Bearer {limited}"}).json()["team"]
    assert narrow["warnings"] == []  # a warning is of no repository the allow-list admits

    assert api.delete("/v1/me/data", headers=ann.headers()).json()["team_rows"] == 1
    assert _warnings(db, ann.id) == 1  # kept through the window, as the team rows are
    db.execute("UPDATE erasures SET purge_after = now() - interval '1 second' WHERE user_id = %s", (ann.id,))
    assert ann.id in erasure.purge(db)
    assert _warnings(db, ann.id) == 0
    assert _warnings(db, other.id) == 1


def test_an_export_leaves_out_what_a_switched_off_repository_holds_and_its_branches(
    api: httpx.Client, make_user: Callable[..., Account]
) -> None:
    email = f"{unique('m')}@example.com"
    admin, member = make_user("admin"), make_user("member", email=email)
    org = unique("acme")
    repo, branch, other = f"repo::acme/{org}", f"branch::acme/{org}::main", f"repo::acme/{org}-web"
    assert api.post("/v1/orgs", headers=admin.headers(), json={"name": org}).status_code == 201
    assert api.put(f"/v1/orgs/{org}/scopes/{repo}", headers=admin.headers()).status_code == 204
    invitation = {"invitee": email, "role": "member"}
    invited = api.post(f"/v1/orgs/{org}/invitations", headers=admin.headers(), json=invitation).json()["token"]
    assert api.post("/v1/invitations/accept", headers=member.headers(), json={"token": invited}).status_code == 200
    assert _write(api, member, repo, "build", "make all")["space"] == f"org:{org}"
    assert _write(api, member, branch, "ci", "main runs the long suite")["space"] == f"org:{org}"
    _write(api, member, other, "deploy", "deploy the web app with make ship")  # personal: unshared scope
    _write(api, member, "global", "editor", "uses vim")

    def exported() -> list[tuple[str, str]]:
        answer = api.get("/v1/me/export", headers=member.headers(), params={"include_hidden": "true"})
        assert answer.status_code == 200, answer.text
        return [(r["scope"], r["key"]) for r in answer.json()["records"]]

    everything = [(branch, "ci"), ("global", "editor"), (repo, "build"), (other, "deploy")]
    assert sorted(exported()) == sorted(everything)
    assert api.put(f"/v1/orgs/{org}/switches/{repo}", headers=admin.headers()).status_code == 204
    assert sorted(exported()) == sorted([("global", "editor"), (other, "deploy")])
    assert api.delete(f"/v1/orgs/{org}/switches/{repo}", headers=admin.headers()).status_code == 204
    assert sorted(exported()) == sorted(everything)


def test_an_orgs_delete_of_a_repositorys_scope_takes_its_branches_and_no_other_repository(
    api: httpx.Client, make_user: Callable[..., Account]
) -> None:
    alice = make_user("alice")
    org = unique("shop")
    repo, sibling = f"acme/{org}", f"acme/{org}front"  # one name begins the other: only the first goes
    assert api.post("/v1/orgs", headers=alice.headers(), json={"name": org}).status_code == 201
    for name in (repo, sibling):
        assert api.put(f"/v1/orgs/{org}/scopes/repo::{name}", headers=alice.headers()).status_code == 204
    _write(api, alice, f"repo::{repo}", "build", "make all builds it")
    _write(api, alice, f"branch::{repo}::main", "ci", "main runs the long suite")
    _write(api, alice, f"branch::{repo}::feature/x", "wip", "feature x renames the cart")
    _write(api, alice, f"branch::{sibling}::main", "ci", "the storefront's main deploys itself")
    since = api.get("/v1/memories/changes", headers=alice.headers()).json()["cursor"]

    one_branch = api.delete(
        f"/v1/orgs/{org}/memories", headers=alice.headers(), params={"scope": f"branch::{repo}::feature/x"}
    )
    assert one_branch.json()["deleted"] == [f"branch::{repo}::feature/x::wip"]  # a branch alone: itself only
    whole = api.delete(f"/v1/orgs/{org}/memories", headers=alice.headers(), params={"scope": f"repo::{repo}"})
    assert whole.status_code == 200, whole.text
    assert sorted(whole.json()["deleted"]) == [f"branch::{repo}::main::ci", f"repo::{repo}::build"]

    left = api.get(f"/v1/orgs/{org}/memories", headers=alice.headers()).json()["memories"]
    assert [(m["scope"], m["key"]) for m in left] == [(f"branch::{sibling}::main", "ci")]
    gone = api.get("/v1/memories/changes", headers=alice.headers(), params={"since": since}).json()["gone"]
    assert {(g["scope"], g["key"]) for g in gone} == {
        (f"branch::{repo}::feature/x", "wip"), (f"repo::{repo}", "build"), (f"branch::{repo}::main", "ci")
    }  # fmt: skip
    lines = api.get(f"/v1/orgs/{org}/audit", headers=alice.headers()).json()["lines"]
    assert lines[0]["target"] == f"repo::{repo} (2 memories)"


def test_deleting_an_organisation_deletes_what_its_space_holds(
    api: httpx.Client, db: psycopg.Connection, make_user: Callable[..., Account]
) -> None:
    ida = make_user("ida")
    org = unique("shop")
    assert api.post("/v1/orgs", headers=ida.headers(), json={"name": org}).status_code == 201
    org_id, _ = accounts.role_in(db, org, ida.id)
    assert api.put(f"/v1/orgs/{org}/scopes/repo::acme/{org}", headers=ida.headers()).status_code == 204
    _write(api, ida, f"repo::acme/{org}", "build", "make all builds the shop")
    _write(api, ida, f"repo::acme/{org}", "deploy", "make ship deploys the shop")
    forgot = {"scope": f"repo::acme/{org}", "key": "deploy", "space": f"org:{org}"}
    assert api.post("/v1/memories/forget", headers=ida.headers(), json=forgot).status_code == 200  # a tombstone
    _write(api, ida, "global", "editor", "ida uses helix")  # her own: not the organisation's

    def held(space: str) -> dict[str, int]:
        counts = {}
        for table in ("memories", "memory_docs", "memory_tombstones", "memory_spaces", "memory_terms"):
            row = db.execute(f"SELECT count(*) FROM {table} WHERE space = %s", (space,)).fetchone()
            counts[table] = int(row[0]) if row else 0
        return counts

    assert held(f"org:{org_id}")["memories"] == 1 and held(f"org:{org_id}")["memory_tombstones"] == 1
    assert api.delete(f"/v1/orgs/{org}", headers=ida.headers()).status_code == 204
    assert held(f"org:{org_id}") == dict.fromkeys(held(f"org:{org_id}"), 0)
    assert held(f"user:{ida.id}")["memories"] == 1
