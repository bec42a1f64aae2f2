"""The caller's own data on the team server: `hivelore export --remote` (GET /v1/me/export) and
what it holds, imported into a fresh home."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
import psycopg
from conftest import Account, Server, start_server, unique
from test_remote_cli import hivelore

from hivelore.server.postgres import accounts, audit


def _write(api: httpx.Client, who: Account, scope: str, key: str, value: str, **extra: object) -> dict:
    answer = api.post("/v1/memories", headers=who.headers(), json={"scope": scope, "key": key, "value": value, **extra})
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_export_holds_the_personal_space_and_what_the_caller_wrote_in_their_org(
    api: httpx.Client, make_user: Callable[..., Account]
) -> None:
    alice, bob = make_user("alice"), make_user("bob")
    org = unique("shop")
    assert api.post("/v1/orgs", headers=alice.headers(), json={"name": org}).status_code == 201
    assert api.put(f"/v1/orgs/{org}/scopes/repo::acme/shop", headers=alice.headers()).status_code == 204
    _write(api, alice, "global", "editor", "alice uses vim")
    assert _write(api, alice, "repo::acme/shop", "build", "make all")["space"] == f"org:{org}"
    _write(api, bob, "global", "editor", "bob uses emacs")  # bob's personal space: not alice's
    archived = _write(api, alice, "global", "old", "no longer true")
    assert api.post("/v1/memories/archive", headers=alice.headers(), json={"scope": "global", "key": "old"}).is_success

    exported = api.get("/v1/me/export", headers=alice.headers())
    assert exported.status_code == 200, exported.text
    assert [(r["scope"], r["key"], r["value"]) for r in exported.json()["records"]] == [
        ("global", "editor", "alice uses vim"),
        ("repo::acme/shop", "build", "make all"),
    ]
    hidden = api.get("/v1/me/export", headers=alice.headers(), params={"include_hidden": "true"}).json()["records"]
    assert [r["key"] for r in hidden if r["archived_at"]] == ["old"]
    assert archived["memory"]["key"] == "old"
    assert api.get("/v1/me/export", headers=bob.headers()).json()["records"][0]["value"] == "bob uses emacs"


def test_export_remote_imports_into_a_fresh_home_as_the_same_memories(
    server: Server, api: httpx.Client, make_user: Callable[..., Account], tmp_path: Path
) -> None:
    carol = make_user("carol")
    _write(api, carol, "global", "style", "short functions", tags=["code"], kind="decision")
    _write(api, carol, "repo::acme/web", "deploy", "run make deploy from main")
    as_carol = {"HIVELORE_ENDPOINT": server.url, "HIVELORE_TOKEN": carol.token}
    out = tmp_path / "carol.jsonl"

    done = hivelore(tmp_path / "h", tmp_path, "export", "--remote", "-o", str(out), **as_carol)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"exported 2 memories to {out}"
    fresh = tmp_path / "fresh"
    imported = hivelore(fresh, tmp_path, "import", str(out))
    assert imported.returncode == 0, imported.stderr
    again = hivelore(fresh, tmp_path, "export")
    mine = [json.loads(line) for line in out.read_text().splitlines()]
    local = [json.loads(line) for line in again.stdout.splitlines()]
    fields = ("scope", "key", "value", "tags", "kind", "created")
    assert len(mine) == 2
    assert sorted(({f: m[f] for f in fields} for m in local), key=str) == sorted(
        ({f: m[f] for f in fields} for m in mine), key=str
    )


def test_export_remote_without_a_server_says_so(tmp_path: Path) -> None:
    done = hivelore(tmp_path / "h", tmp_path, "export", "--remote")
    assert done.returncode != 0
    assert "no team server is named" in done.stderr


def test_an_export_is_in_the_callers_audit_log_and_an_org_admin_reads_the_orgs(
    api: httpx.Client, make_user: Callable[..., Account], db: psycopg.Connection
) -> None:
    erin, finn = make_user("erin"), make_user("finn")
    _write(api, erin, "global", "tabs", "spaces, four")
    exported = api.get("/v1/me/export", headers=erin.headers())
    rid = exported.headers["x-request-id"]

    lines = api.get("/v1/me/audit", headers=erin.headers()).json()["lines"]
    assert [(x["actor"], x["org"], x["action"], x["target"], x["request_id"]) for x in lines] == [
        (erin.name, None, "export", "1 memories, 0 team rows", rid)
    ]
    assert api.get("/v1/me/audit", headers=finn.headers()).json()["lines"] == []

    org = unique("team")
    assert api.post("/v1/orgs", headers=erin.headers(), json={"name": org}).status_code == 201
    org_id, _ = accounts.role_in(db, org, erin.id)
    audit.record(db, finn.id, finn.name, "memory-off", "repo::acme/x", "r-1", org_id)
    assert [x["actor"] for x in api.get(f"/v1/orgs/{org}/audit", headers=erin.headers()).json()["lines"]] == [finn.name]
    refused = api.get(f"/v1/orgs/{org}/audit", headers=finn.headers())
    assert refused.status_code == 403


def _keys(api: httpx.Client, who: Account) -> dict[str, list[str]]:
    """What the caller's reads show: list, search and the change feed (written, and gone)."""
    listed = api.get("/v1/memories", headers=who.headers()).json()["memories"]
    found = api.get("/v1/memories/search", headers=who.headers(), params={"q": "deploy"}).json()["hits"]
    feed = api.get("/v1/memories/changes", headers=who.headers()).json()
    return {
        "listed": sorted(m["memory"]["key"] for m in listed),
        "found": sorted(h["memory"]["key"] for h in found),
        "fed": sorted(m["memory"]["key"] for m in feed["memories"]),
        "gone": sorted(g["key"] for g in feed["gone"]),
    }


def test_deleted_data_is_hidden_at_once_restored_within_the_window_and_purged_after(
    server: Server, api: httpx.Client, make_user: Callable[..., Account], db: psycopg.Connection, tmp_path: Path
) -> None:
    gus = make_user("gus")
    _write(api, gus, "global", "deploy-a", "deploy with make")
    _write(api, gus, "global", "deploy-b", "deploy on fridays never")
    before = _keys(api, gus)
    assert before == {
        "listed": ["deploy-a", "deploy-b"],
        "found": ["deploy-a", "deploy-b"],
        "fed": before["fed"],
        "gone": [],
    }
    as_gus = {"HIVELORE_ENDPOINT": server.url, "HIVELORE_TOKEN": gus.token}

    unconfirmed = hivelore(tmp_path / "h", tmp_path, "remote", "delete-my-data", **as_gus)
    assert unconfirmed.returncode != 0 and "pass --yes" in unconfirmed.stderr
    deleted = hivelore(tmp_path / "h", tmp_path, "remote", "delete-my-data", "--yes", **as_gus)
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.startswith("hid 2 memories;")
    assert _keys(api, gus) == {"listed": [], "found": [], "fed": [], "gone": ["deploy-a", "deploy-b"]}
    assert api.get("/v1/me/export", headers=gus.headers()).json()["records"] == []

    restored = hivelore(tmp_path / "h", tmp_path, "remote", "restore-my-data", **as_gus)
    assert restored.stdout.strip() == "restored 2 memories", restored.stderr
    assert _keys(api, gus)["listed"] == ["deploy-a", "deploy-b"]
    assert _keys(api, gus)["found"] == ["deploy-a", "deploy-b"]
    again = hivelore(tmp_path / "h", tmp_path, "remote", "restore-my-data", **as_gus)
    assert again.returncode != 0 and "nothing was deleted" in again.stderr

    assert api.delete("/v1/me/data", headers=gus.headers()).json()["hidden"] == 2
    db.execute("UPDATE erasures SET purge_after = now() - interval '1 second' WHERE user_id = %s", (gus.id,))
    late = api.post("/v1/me/data/restore", headers=gus.headers())
    assert late.status_code == 404 and "recovery window has passed" in late.json()["error"]
    left = db.execute(
        "SELECT (SELECT count(*) FROM memories WHERE space = %(e)s),"
        " (SELECT count(*) FROM memory_docs WHERE space = %(e)s),"
        " (SELECT count(*) FROM memory_tombstones WHERE space = %(p)s)",
        {"e": f"erased:{gus.id}", "p": f"user:{gus.id}"},
    ).fetchone()
    assert left == (0, 0, 0)
    actions = [x["action"] for x in api.get("/v1/me/audit", headers=gus.headers()).json()["lines"]]
    assert actions == ["delete-data", "restore-data", "export", "delete-data"]  # newest first


def test_a_replica_purges_on_start_what_is_past_its_window_and_keeps_its_own_window(
    database_url: str, api: httpx.Client, make_user: Callable[..., Account], db: psycopg.Connection, tmp_path: Path
) -> None:
    hal = make_user("hal")
    _write(api, hal, "global", "secret-ish", "the staging password rotates monthly")
    assert api.delete("/v1/me/data", headers=hal.headers()).json()["hidden"] == 1
    db.execute("UPDATE erasures SET purge_after = now() - interval '1 second' WHERE user_id = %s", (hal.id,))

    replica = start_server(database_url, tmp_path / "replica.log", "--recovery-days", "0.5")
    try:
        assert db.execute("SELECT count(*) FROM memories WHERE space = %s", (f"erased:{hal.id}",)).fetchone() == (0,)
        _write(api, hal, "global", "again", "written after the purge")
        with httpx.Client(base_url=replica.url, timeout=10) as other:
            assert other.delete("/v1/me/data", headers=hal.headers()).json()["hidden"] == 1
    finally:
        replica.stop()
    row = db.execute(
        "SELECT extract(epoch FROM purge_after - deleted) / 3600 FROM erasures WHERE user_id = %s", (hal.id,)
    ).fetchone()
    assert row is not None and round(float(row[0])) == 12
