"""A user deletes their own account on the team server (`DELETE /v1/me`, `hivelore remote
delete-my-account --yes`): their tokens, personal space (deleted copies too), memberships, team rows
and warnings, and their own audit lines go at once, in one transaction; an organisation they are the
last owner of refuses it, and then nothing is deleted."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from conftest import Account, Server, unique
from test_remote_cli import hivelore

from hivelore.server.postgres import accounts, sessions

# What of a user may be left anywhere: each query counts their rows in one table.
LEFT = {
    "users": "SELECT count(*) FROM users WHERE id = %(id)s",
    "tokens": "SELECT count(*) FROM tokens WHERE user_id = %(id)s",
    "dashboard_sessions": "SELECT count(*) FROM dashboard_sessions s JOIN tokens t ON t.id = s.token_id"
    " WHERE t.user_id = %(id)s",
    "members": "SELECT count(*) FROM members WHERE user_id = %(id)s",
    "memories": "SELECT count(*) FROM memories WHERE space IN (%(personal)s, %(erased)s) OR owner = %(id)s",
    "memory_docs": "SELECT count(*) FROM memory_docs WHERE space IN (%(personal)s, %(erased)s)",
    "memory_tombstones": "SELECT count(*) FROM memory_tombstones WHERE space IN (%(personal)s, %(erased)s)",
    "memory_spaces": "SELECT count(*) FROM memory_spaces WHERE space IN (%(personal)s, %(erased)s)",
    "memory_terms": "SELECT count(*) FROM memory_terms WHERE space IN (%(personal)s, %(erased)s)",
    "memory_quota_counts": "SELECT count(*) FROM memory_quota_counts WHERE owner = %(id)s",
    "erasures": "SELECT count(*) FROM erasures WHERE user_id = %(id)s",
    "idempotent_requests": "SELECT count(*) FROM idempotent_requests WHERE user_id = %(id)s",
    "team_intents": "SELECT count(*) FROM team_intents WHERE author = %(id)s OR owner = %(name)s",
    "team_claims": "SELECT count(*) FROM team_claims WHERE author = %(id)s OR developer = %(name)s",
    "team_warnings": "SELECT count(*) FROM team_warnings WHERE user_id = %(id)s",
    "own audit lines": "SELECT count(*) FROM audit_log WHERE org_id IS NULL AND (user_id = %(id)s OR actor = %(name)s)",
}


def left_of(db: psycopg.Connection, who: Account) -> dict[str, int]:
    params = {"id": who.id, "name": who.name, "personal": f"user:{who.id}", "erased": f"erased:{who.id}"}
    counts = {}
    for table, query in LEFT.items():
        row = db.execute(query, params).fetchone()
        counts[table] = int(row[0]) if row else 0
    return counts


def _write(api: httpx.Client, who: Account, scope: str, key: str, value: str, **headers: str) -> dict:
    answer = api.post(
        "/v1/memories", headers={**who.headers(), **headers}, json={"scope": scope, "key": key, "value": value}
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def _org(db: psycopg.Connection, owner: Account, member: Account, repo: str) -> tuple[int, str]:
    org = unique("acme")
    accounts.create_org(db, org, owner.id)
    org_id, _ = accounts.role_in(db, org, owner.id)
    db.execute("INSERT INTO members (org_id, user_id, role) VALUES (%s, %s, 'member')", (org_id, member.id))
    accounts.bind_scope(db, org_id, f"repo::{repo}", owner.id)
    return org_id, org


def _everything_of(api: httpx.Client, db: psycopg.Connection, bob: Account, repo: str) -> None:
    """Bob's data of every kind: personal rows, deleted copies, a row rewritten after its deletion
    (a tombstone and an erased copy), an org row, a team task with a claim, a warning, an idempotent
    write, a second token with a dashboard session, and his own audit lines."""
    _write(api, bob, "global", "editor", "bob uses emacs")
    _write(api, bob, "repo::acme/private", "deploy", "deploy the private tool with make ship")
    assert api.delete("/v1/me/data", headers=bob.headers()).status_code == 200
    _write(api, bob, "global", "editor", "bob uses emacs with evil mode", **{"Idempotency-Key": unique("k")})
    assert _write(api, bob, f"repo::{repo}", "build", "make all builds the shop")["space"].startswith("org:")
    post = lambda path, body: api.post(f"/v1/team{path}", headers=bob.headers(), json=body)  # noqa: E731
    session = {"agent": "claude", "session_id": unique("s"), "developer": bob.name, "repo": repo}
    task = post("/sessions", {**session, "first_prompt": "fix the refresh"}).json()["id"]
    assert post(f"/intents/{task}/claims", {"symbols": ["auth.py::refresh"]}).status_code == 200
    warning = {"agent": "claude", "session_id": session["session_id"], "key": "k|1", "at": 1_765_000_000.0}
    assert post("/warnings", warning).status_code == 200
    second = accounts.create_token(db, bob.id, "ro")
    sessions.open_session(db, second.info.id)
    assert api.get("/v1/me/export", headers=bob.headers()).status_code == 200  # an audit line of his own


def test_deleting_my_account_leaves_nothing_of_me_and_my_org_keeps_what_i_wrote_there(
    api: httpx.Client, db: psycopg.Connection, make_user: Callable[..., Account]
) -> None:
    alice, bob = make_user("alice"), make_user("bob")
    repo = f"acme/{unique('shop')}"
    org_id, org = _org(db, alice, bob, repo)
    _everything_of(api, db, bob, repo)
    assert all(left_of(db, bob)[t] for t in ("memories", "memory_tombstones", "team_claims", "team_warnings"))

    gone = api.delete("/v1/me", headers=bob.headers())
    assert gone.status_code == 200, gone.text
    assert gone.json() == {"user": bob.name, "memories": 3, "team_rows": 4, "tokens": 2, "orgs": [org]}
    assert left_of(db, bob) == dict.fromkeys(LEFT, 0)

    refused = api.get("/v1/me", headers=bob.headers())
    assert refused.status_code == 401
    held = api.get(f"/v1/orgs/{org}/memories", headers=alice.headers()).json()["memories"]
    assert [(m["key"], m["owner"]) for m in held] == [("build", None)]  # the organisation's, nobody's now
    lines = api.get(f"/v1/orgs/{org}/audit", headers=alice.headers()).json()["lines"]
    assert (lines[0]["actor"], lines[0]["action"], lines[0]["target"]) == (
        bob.name,
        "delete-account",
        f"{bob.name} (member)",
    )
    assert accounts.members(db, org_id)[0].user == alice.name


def test_the_last_owner_of_an_organisation_is_told_what_to_do_and_nothing_is_deleted(
    server: Server, api: httpx.Client, db: psycopg.Connection, make_user: Callable[..., Account], tmp_path: Path
) -> None:
    carol, dan = make_user("carol"), make_user("dan")
    org_id, org = _org(db, carol, dan, f"acme/{unique('shop')}")
    _write(api, carol, "global", "style", "short functions")
    before = left_of(db, carol)
    as_carol = {"HIVELORE_ENDPOINT": server.url, "HIVELORE_TOKEN": carol.token}

    unconfirmed = hivelore(tmp_path / "h", tmp_path, "remote", "delete-my-account", **as_carol)
    assert unconfirmed.returncode != 0 and "pass --yes to do it" in unconfirmed.stderr
    refused = hivelore(tmp_path / "h", tmp_path, "remote", "delete-my-account", "--yes", **as_carol)
    assert refused.returncode != 0
    assert refused.stderr.strip() == (
        f"hivelore: you are the last owner of {org}: make another member owner (`hivelore org role {org} USER owner`)"
        f" or delete the organisation (`hivelore org delete {org} --yes`) first; nothing was deleted."
    )
    assert api.delete("/v1/me", headers=carol.headers()).status_code == 409
    assert left_of(db, carol) == before
    assert api.get("/v1/memories/read", headers=carol.headers(), params={"scope": "global", "key": "style"}).is_success

    assert api.put(f"/v1/orgs/{org}/members/{dan.name}", headers=carol.headers(), json={"role": "owner"}).is_success
    done = hivelore(tmp_path / "h", tmp_path, "remote", "delete-my-account", "--yes", **as_carol)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"deleted the account {carol.name}: 1 memories, 0 team rows, 1 tokens; left {org};"
        " `hivelore remote logout` forgets its token here"
    )
    assert left_of(db, carol) == dict.fromkeys(LEFT, 0)
    assert [(m.user, m.role) for m in accounts.members(db, org_id)] == [(dan.name, "owner")]


@pytest.fixture
def failing_user_delete(db: psycopg.Connection) -> Iterator[Callable[[int], None]]:
    """A trigger that fails the deletion of one user's row: the last statement of an account's deletion."""
    made: list[str] = []

    def arm(user_id: int) -> None:
        name = f"fail_delete_{user_id}"
        db.execute(
            f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            f" IF OLD.id = {user_id} THEN RAISE EXCEPTION 'the disk is full' USING ERRCODE = 'disk_full'; END IF;"
            " RETURN OLD; END $$"
        )
        db.execute(f"CREATE TRIGGER {name} BEFORE DELETE ON users FOR EACH ROW EXECUTE FUNCTION {name}()")
        made.append(name)

    yield arm
    for name in made:
        db.execute(f"DROP TRIGGER {name} ON users")
        db.execute(f"DROP FUNCTION {name}()")


def test_an_account_deletion_that_fails_at_its_last_step_deletes_nothing(
    api: httpx.Client,
    db: psycopg.Connection,
    make_user: Callable[..., Account],
    failing_user_delete: Callable[[int], None],
) -> None:
    erin, finn = make_user("erin"), make_user("finn")
    repo = f"acme/{unique('shop')}"
    _org(db, finn, erin, repo)
    _everything_of(api, db, erin, repo)
    before = left_of(db, erin)
    failing_user_delete(erin.id)

    failed = api.delete("/v1/me", headers=erin.headers())
    assert failed.status_code == 503, failed.text  # PostgreSQL's disk_full: an OperationalError
    assert left_of(db, erin) == before
    assert api.get("/v1/me", headers=erin.headers()).status_code == 200
