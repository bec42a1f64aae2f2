"""The team store's rows as people's and organisations' data: each row names its author (migration
0013), a user's export holds theirs and their data deletion purges them, and an organisation's admins
count and delete a repository's team data — with the code graph pushed for it, which is the
organisation's, not the pusher's."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
import psycopg
from conftest import Account, Server, unique
from test_remote_cli import hivelore

from hivelore.server.postgres import accounts

TABLES = ("intents", "sessions", "claims", "changes", "attempts", "decisions", "notes")


def _org(db: psycopg.Connection, owner: Account, member: Account, repo: str) -> str:
    """An organisation of `owner` sharing `repo`, with `member` a member."""
    org = unique("team")
    accounts.create_org(db, org, owner.id)
    org_id, _ = accounts.role_in(db, org, owner.id)
    accounts.bind_scope(db, org_id, f"repo::{repo}", owner.id)
    email = db.execute("SELECT email FROM users WHERE id = %s", (member.id,)).fetchone()
    assert email is not None
    invitation = accounts.invite(db, org_id, org, email[0], "member", owner.id)
    accounts.accept(db, invitation.token, member.id)
    return org


def _work(api: httpx.Client, who: Account, repo: str, developer: str) -> int:
    """A task with a session, a claim, a change, a failed attempt, a change since, a decision and a note; its id."""
    post = lambda path, body: api.post(f"/v1/team{path}", headers=who.headers(), json=body)  # noqa: E731
    session = {"agent": "codex", "session_id": unique("s"), "developer": developer, "repo": repo}
    task = post("/sessions", {**session, "first_prompt": "fix the refresh"}).json()["id"]
    assert post(f"/intents/{task}/claims", {"symbols": ["auth.py::refresh"]}).status_code == 200
    run = {"runner": "pytest", "outcome": "failed", "failed": ["tests/test_auth.py::test_refresh"]}
    assert post(f"/intents/{task}/attempts", {"command": "pytest", "run": run}).status_code == 200
    # after the run, which takes the changes before it
    assert post(f"/intents/{task}/changes", {"symbols": ["auth.py::refresh"]}).status_code == 200
    decision = {"text": "refresh tokens rotate", "symbols": ["auth.py::refresh"], "intent_id": task}
    assert post("/decisions", {**decision, "developer": developer}).status_code == 200
    assert post(f"/intents/{task}/notes", {"text": "halfway", "developer": developer}).status_code == 200
    return int(task)


def _authored(db: psycopg.Connection, user_id: int) -> dict[str, int]:
    counts = {}
    for table in TABLES:
        row = db.execute(f"SELECT count(*) FROM team_{table} WHERE author = %s", (user_id,)).fetchone()
        counts[table] = row[0] if row else 0
    return counts


def test_every_team_write_names_the_caller_whatever_developer_the_client_says(
    api: httpx.Client, db: psycopg.Connection, make_user: Callable[..., Account]
) -> None:
    owner, member = make_user("ada"), make_user("bo", email=f"{unique('bo')}@example.com")
    repo = f"acme/{unique('shop')}"
    _org(db, owner, member, repo)
    _work(api, member, repo, developer="ada")  # a client may name anyone: the author is the token's

    assert _authored(db, member.id) == dict.fromkeys(TABLES, 1)
    assert _authored(db, owner.id) == dict.fromkeys(TABLES, 0)
    unset = db.execute("SELECT count(*) FROM team_intents WHERE repo = %s AND author IS NULL", (repo,)).fetchone()
    assert unset == (0,)


def test_the_export_holds_the_callers_team_rows_and_a_limited_token_those_of_its_repositories(
    api: httpx.Client, db: psycopg.Connection, make_user: Callable[..., Account]
) -> None:
    owner, member = make_user("cy"), make_user("di", email=f"{unique('di')}@example.com")
    repo, other = f"acme/{unique('shop')}", f"acme/{unique('cart')}"
    org = _org(db, owner, member, repo)
    org_id, _ = accounts.role_in(db, org, owner.id)
    accounts.bind_scope(db, org_id, f"repo::{other}", owner.id)
    task = _work(api, member, repo, "di")
    _work(api, member, other, "di")
    _work(api, owner, repo, "cy")  # the owner's rows are not the member's

    team = api.get("/v1/me/export", headers=member.headers()).json()["team"]
    assert {table: len(rows) for table, rows in team.items()} == {**dict.fromkeys(TABLES, 2), "warnings": 0}
    mine = next(i for i in team["intents"] if i["id"] == task)
    assert (mine["repo"], mine["title"], mine["owner"]) == (repo, "fix the refresh", "di")
    assert team["notes"][0]["text"] == "halfway" and team["claims"][0]["symbol"] == "auth.py::refresh"

    limited = accounts.create_token(db, member.id, "ro", scopes=[f"repo::{repo}"]).token
    seen = api.get("/v1/me/export", headers={"Authorization": f"Bearer {limited}"}).json()["team"]
    assert {row["repo"] for rows in seen.values() for row in rows} == {repo}
    lines = api.get("/v1/me/audit", headers=member.headers()).json()["lines"]
    assert [line["target"] for line in lines[:2]] == ["0 memories, 7 team rows", "0 memories, 14 team rows"]


def test_deleting_my_data_purges_my_team_rows_after_the_window_and_a_restore_keeps_them(
    api: httpx.Client, db: psycopg.Connection, make_user: Callable[..., Account]
) -> None:
    owner, member = make_user("ed"), make_user("flo", email=f"{unique('flo')}@example.com")
    repo = f"acme/{unique('shop')}"
    _org(db, owner, member, repo)
    _work(api, owner, repo, "ed")
    _work(api, member, repo, "flo")  # their decision supersedes ed's on auth.py::refresh
    current = lambda: [  # noqa: E731
        d["developer"]
        for d in api.get(
            "/v1/team/decisions", params={"repo": repo, "symbol": "auth.py::refresh"}, headers=owner.headers()
        ).json()["decisions"]
    ]
    assert current() == ["flo"]

    deleted = api.delete("/v1/me/data", headers=member.headers()).json()
    assert deleted["team_rows"] == 7
    assert _authored(db, member.id) == dict.fromkeys(TABLES, 1)  # not hidden: the team's work goes on
    assert api.post("/v1/me/data/restore", headers=member.headers()).status_code == 200
    assert api.delete("/v1/me/data", headers=member.headers()).json()["team_rows"] == 7
    db.execute("UPDATE erasures SET purge_after = now() - interval '1 second' WHERE user_id = %s", (member.id,))
    assert api.post("/v1/me/data/restore", headers=member.headers()).status_code == 404  # it purges first

    assert _authored(db, member.id) == dict.fromkeys(TABLES, 0)
    assert _authored(db, owner.id) == dict.fromkeys(TABLES, 1)
    assert current() == ["ed"]  # current again: what superseded it is gone


def test_an_admin_counts_and_deletes_a_repositorys_team_data_and_the_audit_log_says_so(
    api: httpx.Client, db: psycopg.Connection, make_user: Callable[..., Account]
) -> None:
    owner, member = make_user("gil"), make_user("hal", email=f"{unique('hal')}@example.com")
    repo, other = f"acme/{unique('shop')}", f"acme/{unique('cart')}"
    org = _org(db, owner, member, repo)
    org_id, _ = accounts.role_in(db, org, owner.id)
    accounts.bind_scope(db, org_id, f"repo::{other}", owner.id)
    _work(api, member, repo, "hal")
    _work(api, owner, repo, "gil")
    _work(api, owner, other, "gil")

    listed = api.get(f"/v1/orgs/{org}/team", headers=owner.headers()).json()
    counts = dict.fromkeys(("intents", "decisions", "attempts", "notes"), 2)
    assert listed == sorted(
        [{"repo": repo, **counts, "graph": None}, {"repo": other, **dict.fromkeys(counts, 1), "graph": None}], key=str
    )
    assert api.get(f"/v1/orgs/{org}/team", headers=member.headers()).status_code == 403

    gone = api.delete(f"/v1/orgs/{org}/team", params={"repo": repo}, headers=owner.headers())
    assert gone.json() == {"repo": repo, **counts, "graph": None}
    assert [r["repo"] for r in api.get(f"/v1/orgs/{org}/team", headers=owner.headers()).json()] == [other]
    for table in ("intents", "decisions"):
        left = db.execute(f"SELECT count(*) FROM team_{table} WHERE org_id = %s AND repo = %s", (org_id, repo))
        assert left.fetchone() == (0,)
    line = api.get(f"/v1/orgs/{org}/audit", headers=owner.headers()).json()["lines"][0]
    assert (line["action"], line["org"], line["target"]) == (
        "org-team-forget",
        org,
        f"repo::{repo} team (2 tasks, 2 decisions, 0 graph files)",
    )
    bad = api.delete(f"/v1/orgs/{org}/team", params={"repo": f"repo::{repo}"}, headers=owner.headers())
    assert bad.status_code == 400 and bad.json()["error"] == "name the repository as OWNER/NAME, like acme/shop."


def test_from_the_terminal_the_export_carries_team_rows_import_skips_and_an_admin_deletes_a_repos(
    api: httpx.Client, db: psycopg.Connection, make_user: Callable[..., Account], server: Server, tmp_path: Path
) -> None:
    owner, member = make_user("ivy"), make_user("jo", email=f"{unique('jo')}@example.com")
    repo = f"acme/{unique('shop')}"
    org = _org(db, owner, member, repo)
    _work(api, member, repo, "jo")
    written = api.post("/v1/memories", headers=member.headers(), json={"scope": "global", "key": "k", "value": "v"})
    assert written.status_code == 200, written.text
    as_member = {"HIVELORE_ENDPOINT": server.url, "HIVELORE_TOKEN": member.token}
    as_owner = {"HIVELORE_ENDPOINT": server.url, "HIVELORE_TOKEN": owner.token}

    out = tmp_path / "mine.jsonl"
    exported = hivelore(tmp_path / "h", tmp_path, "export", "--remote", "-o", str(out), **as_member)
    assert exported.stdout.strip() == f"exported 1 memories and 7 team rows to {out}", exported.stderr
    imported = hivelore(tmp_path / "fresh", tmp_path, "import", str(out), "--json")
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["team_rows_skipped"] == 7
    assert len(json.loads(imported.stdout)["written"]) == 1

    listed = hivelore(tmp_path / "h", tmp_path, "org", "team", org, **as_owner)
    assert listed.stdout.strip() == f"{repo}  1 tasks  1 decisions  1 attempts  1 notes", listed.stderr
    unconfirmed = hivelore(tmp_path / "h", tmp_path, "org", "team-forget", org, repo, **as_owner)
    assert unconfirmed.returncode != 0 and "add --yes" in unconfirmed.stderr
    forgot = hivelore(tmp_path / "h", tmp_path, "org", "team-forget", org, repo, "--yes", **as_owner)
    assert forgot.stdout.strip() == f"deleted {repo}'s team data in {org}: 1 tasks, 1 decisions", forgot.stderr
    assert hivelore(tmp_path / "h", tmp_path, "org", "team", org, **as_owner).stdout.strip() == "(none)"


def _push(api: httpx.Client, who: Account, repo: str, path: str) -> httpx.Response:
    """A push of one file with two symbols and a call between them."""
    symbols = [
        {
            "id": f"{path}::{name}",
            "qualname": name,
            "kind": "function",
            "line": n,
            "end_line": n,
            "hash": name,
            "seq": n,
        }
        for n, name in enumerate(("refresh", "rotate"), 1)
    ]
    calls = [{"caller": f"{path}::refresh", "callee": f"{path}::rotate", "confidence": 1.0}]
    file = {"path": path, "language": "python", "hash": unique("h"), "parser": "1", "symbols": symbols, "calls": calls}
    return api.post("/v1/graph/push", headers=who.headers(), json={"repo": repo, "files": [file], "removed": []})


def _graph_rows(db: psycopg.Connection, org_id: int, repo: str) -> list[int]:
    return [
        db.execute(f"SELECT count(*) FROM graph_{t} WHERE org_id = %s AND repo = %s", (org_id, repo)).fetchone()[0]
        for t in ("files", "symbols", "calls")
    ]


def test_the_pushed_graph_is_listed_and_forgotten_with_the_repository_and_outlives_its_pushers_data(
    api: httpx.Client, db: psycopg.Connection, make_user: Callable[..., Account], server: Server, tmp_path: Path
) -> None:
    owner, member = make_user("kim"), make_user("lou", email=f"{unique('lou')}@example.com")
    repo, other = f"acme/{unique('shop')}", f"acme/{unique('cart')}"
    org = _org(db, owner, member, repo)
    org_id, _ = accounts.role_in(db, org, owner.id)
    accounts.bind_scope(db, org_id, f"repo::{other}", owner.id)
    assert _push(api, owner, repo, "auth.py").status_code == 200
    assert _push(api, member, repo, "tokens.py").status_code == 200  # the last push: the member's
    assert _push(api, owner, other, "cart.py").status_code == 200
    _work(api, owner, other, "kim")

    listed = {r["repo"]: r for r in api.get(f"/v1/orgs/{org}/team", headers=owner.headers()).json()}
    assert sorted(listed) == sorted([repo, other])
    graph = listed[repo].pop("graph")
    assert listed[repo] == {"repo": repo, "intents": 0, "decisions": 0, "attempts": 0, "notes": 0}
    assert (graph["files"], graph["symbols"], graph["calls"], graph["pushed_by"]) == (2, 4, 2, member.name)
    assert listed[other]["intents"] == 1 and listed[other]["graph"]["pushed_by"] == owner.name
    as_owner = {"HIVELORE_ENDPOINT": server.url, "HIVELORE_TOKEN": owner.token}
    printed = hivelore(tmp_path / "h", tmp_path, "org", "team", org, **as_owner).stdout.splitlines()
    line = next(line for line in printed if line.startswith(repo))
    assert line.startswith(f"{repo}  0 tasks  0 decisions  0 attempts  0 notes  graph: 2 files, 4 symbols, pushed by")
    assert f"pushed by {member.name} at 20" in line
    pushes = [line for line in api.get("/v1/me/audit", headers=member.headers()).json()["lines"]]
    assert [(line["action"], line["org"]) for line in pushes] == [("graph-push", org)]
    assert pushes[0]["target"] == f"repo::{repo} graph (1 files sent, 0 removed; 2 held)"

    # The member's export and data deletion leave the graph: it is the repository's, not theirs.
    exported = api.get("/v1/me/export", headers=member.headers()).json()
    assert set(exported) == {"records", "team"} and set(exported["team"]) == {*TABLES, "warnings"}
    assert api.delete("/v1/me/data", headers=member.headers()).status_code == 200
    db.execute("UPDATE erasures SET purge_after = now() - interval '1 second' WHERE user_id = %s", (member.id,))
    assert api.post("/v1/me/data/restore", headers=member.headers()).status_code == 404  # it purges first
    assert _graph_rows(db, org_id, repo) == [2, 4, 2]

    forgot = hivelore(tmp_path / "h", tmp_path, "org", "team-forget", org, repo, "--yes", **as_owner)
    assert (
        forgot.stdout.strip() == f"deleted {repo}'s team data in {org}: 0 tasks, 0 decisions, its code graph (2 files)"
    )
    assert _graph_rows(db, org_id, repo) == [0, 0, 0]
    assert _graph_rows(db, org_id, other) == [1, 2, 1]
    assert [r["repo"] for r in api.get(f"/v1/orgs/{org}/team", headers=owner.headers()).json()] == [other]
    line = api.get(f"/v1/orgs/{org}/audit", headers=owner.headers()).json()["lines"][0]
    assert (line["action"], line["target"]) == (
        "org-team-forget",
        f"repo::{repo} team (0 tasks, 0 decisions, 2 graph files)",
    )
    asked = api.get("/v1/graph/hotspots", params={"repo": repo}, headers=owner.headers())
    assert asked.status_code == 404 and "no code graph was pushed" in asked.json()["error"]
