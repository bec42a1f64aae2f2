"""The authorisation matrix: every role (and a stranger to the org) × every token kind × every org,
memory and team endpoint, with the status each cell must get, generated from one table.

A cell's expected status follows from two facts about the endpoint — the power its token needs
(`read`, `manage`, `write`) and the least role it needs — so the tables below are the whole
specification. Two smaller tables add every endpoint without a live token (401), and a token
limited to some scopes (`LIMITED`). The memory endpoints add where the copy a cell acts on lives (the
caller's org, another org, someone's personal space), and check what the answer shows and what
changed, not only the status. Each world is made once for the module, so the file runs in seconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import psycopg
import pytest
from conftest import Server, unique

from hivelore.memory.model import Memory, now_iso
from hivelore.memory.scope import parse
from hivelore.server import auth
from hivelore.server.postgres import accounts, switches
from hivelore.server.postgres.tier import PostgresTier

KINDS = ("rw", "ro", "wo")
ROLES = (None, *auth.ROLES)  # None: a member of another org only


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str  # {org} is the org the caller is asked about; {bob} a member; {other} another token of the caller's
    power: str  # any | read | manage
    role: str  # the least role in {org} it needs; "": none
    success: int
    body: dict | None = None


ENDPOINTS = (
    Endpoint("GET", "/v1/me", "any", "", 200),
    Endpoint("GET", "/v1/me/export", "read", "", 200),
    Endpoint("GET", "/v1/me/audit", "read", "", 200),
    Endpoint("GET", "/v1/orgs/{org}/audit", "read", "admin", 200),
    Endpoint("DELETE", "/v1/me/data", "manage", "", 200),
    Endpoint("POST", "/v1/me/data/restore", "manage", "", 404),  # the caller deleted nothing
    Endpoint("POST", "/v1/orgs", "manage", "", 201, {"name": "{org}-n"}),
    Endpoint("GET", "/v1/orgs/{org}", "read", "viewer", 200),
    Endpoint("GET", "/v1/orgs/{org}/scopes", "read", "viewer", 200),
    Endpoint("PUT", "/v1/orgs/{org}/scopes/project::shop", "manage", "admin", 204),
    Endpoint("DELETE", "/v1/orgs/{org}/scopes/repo::acme/checkout", "manage", "admin", 204),
    Endpoint("POST", "/v1/orgs/{org}/invitations", "manage", "admin", 201, {"invitee": "new@example.com"}),
    Endpoint("POST", "/v1/invitations/accept", "manage", "", 200, {"token": "{invitation}"}),
    Endpoint("PUT", "/v1/orgs/{org}/members/{bob}", "manage", "admin", 204, {"role": "viewer"}),
    Endpoint("DELETE", "/v1/orgs/{org}/members/{bob}", "manage", "admin", 204),
    Endpoint("GET", "/v1/orgs/{org}/switches", "read", "viewer", 200),
    Endpoint("PUT", "/v1/orgs/{org}/switches/repo::acme/checkout", "manage", "admin", 204),
    Endpoint("DELETE", "/v1/orgs/{org}/switches/repo::acme/off", "manage", "admin", 204),
    Endpoint("GET", "/v1/orgs/{org}/memories", "read", "admin", 200),
    Endpoint("DELETE", "/v1/orgs/{org}/memories?scope=project::kept", "manage", "admin", 200),
    Endpoint("DELETE", "/v1/orgs/{org}/memories?scope=project::kept&key=k", "manage", "admin", 404),  # none held
    Endpoint("GET", "/v1/orgs/{org}/team", "read", "admin", 200),
    Endpoint("DELETE", "/v1/orgs/{org}/team?repo=acme/checkout", "manage", "admin", 200),
    Endpoint("PATCH", "/v1/orgs/{org}", "manage", "owner", 200, {"name": "{org}"}),
    Endpoint("DELETE", "/v1/orgs/{org}", "manage", "owner", 204),
    Endpoint("POST", "/v1/tokens", "manage", "", 201, {"kind": "ro"}),
    Endpoint("GET", "/v1/tokens", "manage", "", 200),
    Endpoint("DELETE", "/v1/tokens/{other}", "manage", "", 204),
    Endpoint("DELETE", "/v1/tokens/{self}", "any", "", 204),
)


def expected(endpoint: Endpoint, kind: str, role: str | None) -> int:
    if endpoint.power == "read" and kind == "wo":
        return 403
    if endpoint.power == "manage" and kind != "rw":
        return 403
    if endpoint.role and (role is None or auth.ROLES.index(role) < auth.ROLES.index(endpoint.role)):
        return 403
    return endpoint.success


CELLS = [(e, k, r) for e in ENDPOINTS for k in KINDS for r in ROLES]

# Without a live token every endpoint answers 401: none sent, one revoked, one expired.
DEAD = ("none", "revoked", "expired")
DEAD_CELLS = [(e, state) for e in ENDPOINTS for state in DEAD]

# An owner's hl_rw_ token limited to repo::acme/* (the org shares repo::acme/checkout): it binds and
# unbinds only scopes it admits, administers nothing else, makes no token broader than itself, and
# reaches no memory outside its scopes — whatever its owner's role.
LIMITED_TO = ["repo::acme/*"]
MEMORY = {"key": "k", "value": "the build needs make"}
LIMITED = (
    (Endpoint("GET", "/v1/me", "any", "", 200), 200),
    (Endpoint("GET", "/v1/me/export", "read", "", 200), 200),
    (Endpoint("GET", "/v1/me/audit", "read", "", 200), 200),
    (Endpoint("GET", "/v1/orgs/{org}/audit", "read", "", 200), 403),
    (Endpoint("DELETE", "/v1/me/data", "manage", "", 200), 403),
    (Endpoint("POST", "/v1/me/data/restore", "manage", "", 404), 403),
    (Endpoint("GET", "/v1/orgs/{org}", "read", "", 200), 200),
    (Endpoint("PUT", "/v1/orgs/{org}/scopes/repo::acme/cart", "manage", "", 204), 204),
    (Endpoint("DELETE", "/v1/orgs/{org}/scopes/repo::acme/checkout", "manage", "", 204), 204),
    (Endpoint("PUT", "/v1/orgs/{org}/scopes/project::shop", "manage", "", 204), 403),
    (Endpoint("GET", "/v1/orgs/{org}/switches", "read", "", 200), 200),
    (Endpoint("PUT", "/v1/orgs/{org}/switches/repo::acme/cart", "manage", "", 204), 204),
    (Endpoint("DELETE", "/v1/orgs/{org}/switches/repo::acme/off", "manage", "", 204), 204),
    (Endpoint("PUT", "/v1/orgs/{org}/switches/repo::other/app", "manage", "", 204), 403),
    (Endpoint("GET", "/v1/orgs/{org}/memories", "read", "", 200), 200),
    (Endpoint("GET", "/v1/orgs/{org}/memories?scope=project::kept", "read", "", 200), 403),
    (Endpoint("DELETE", "/v1/orgs/{org}/memories?scope=repo::acme/checkout", "manage", "", 200), 200),
    (Endpoint("DELETE", "/v1/orgs/{org}/memories?scope=project::kept", "manage", "", 200), 403),
    (Endpoint("DELETE", "/v1/orgs/{org}/scopes/project::kept", "manage", "", 204), 403),
    (Endpoint("GET", "/v1/orgs/{org}/team", "read", "", 200), 200),
    (Endpoint("DELETE", "/v1/orgs/{org}/team?repo=acme/checkout", "manage", "", 200), 200),
    (Endpoint("DELETE", "/v1/orgs/{org}/team?repo=other/app", "manage", "", 200), 403),
    *((e, 403) for e in ENDPOINTS if e.path in ("/v1/orgs", "/v1/invitations/accept")),
    *((e, 403) for e in ENDPOINTS if e.path == "/v1/orgs/{org}" and e.method != "GET"),
    *((e, 403) for e in ENDPOINTS if e.path == "/v1/orgs/{org}/invitations" or "/members/" in e.path),
    (Endpoint("POST", "/v1/tokens", "manage", "", 201, {"kind": "rw"}), 201),
    (Endpoint("POST", "/v1/tokens", "manage", "", 201, {"kind": "rw", "scopes": ["repo::acme/shop"]}), 201),
    (Endpoint("POST", "/v1/tokens", "manage", "", 201, {"kind": "rw", "scopes": ["repo::*/*"]}), 403),
    (Endpoint("POST", "/v1/tokens", "manage", "", 201, {"kind": "ro", "scopes": ["project::shop"]}), 403),
    (Endpoint("POST", "/v1/tokens", "manage", "", 201, {"kind": "ro", "expires_in_days": 1}), 201),
    (Endpoint("GET", "/v1/tokens", "manage", "", 200), 200),
    (Endpoint("DELETE", "/v1/tokens/{other}", "manage", "", 204), 403),
    (Endpoint("DELETE", "/v1/tokens/{self}", "any", "", 204), 204),
    (Endpoint("POST", "/v1/memories", "write", "", 200, {"scope": "branch::acme/checkout::main", **MEMORY}), 200),
    (Endpoint("POST", "/v1/memories", "write", "", 200, {"scope": "project::shop", **MEMORY}), 403),
    (Endpoint("GET", "/v1/memories/read?scope=project::shop&key=k", "read", "", 404), 403),
    (Endpoint("GET", "/v1/memories/read?scope=repo::acme/checkout&key=k", "read", "", 404), 404),
)
LIMITED_CELLS = [(e, status, r) for e, status in LIMITED for r in ("owner", None)]


def _id(cell: tuple[Endpoint, str, str | None]) -> str:
    endpoint, kind, role = cell
    return f"{endpoint.method} {endpoint.path} {kind} {role or 'stranger'}"


def _limited_id(cell: tuple[Endpoint, int, str | None]) -> str:
    endpoint, status, role = cell
    return f"{endpoint.method} {endpoint.path} {endpoint.body or ''} {role or 'stranger'} {status}"


@dataclass(frozen=True)
class OrgCell:
    org: str
    bob: str  # a member of the org, whom the member endpoints act on
    token: str  # the caller's
    token_id: int
    other: int  # the id of another token of the caller's
    invitation: str  # an invitation to the org for the caller's email


@pytest.fixture(scope="module")
def conn(database_url: str) -> Iterator[psycopg.Connection]:
    """One direct connection for the module's set-up and checks (the world is made once, not per cell)."""
    with psycopg.connect(database_url, autocommit=True) as connection:
        yield connection


def _user(conn: psycopg.Connection, prefix: str) -> accounts.User:
    name = unique(prefix)
    return accounts.add_user(conn, name, email=f"{name}@example.com")


def _org_cell(
    conn: psycopg.Connection, kind: str, role: str | None, scopes: list[str] | None = None, state: str = "live"
) -> OrgCell:
    """An org of the cell's own (an owner, bob a member, repo::acme/checkout and project::kept shared,
    memory switched off for repo::acme/off) and the caller with the cell's role in it, or a stranger
    who owns another org: a cell may rename or delete its org. The caller's token has `scopes`, and is
    `live`, `revoked` or `expired`."""
    owner, bob, caller = _user(conn, "owner"), _user(conn, "bob"), _user(conn, "caller")
    org = unique("org")
    accounts.create_org(conn, org, owner.id)
    org_id, _ = accounts.role_in(conn, org, owner.id)
    for scope in ("repo::acme/checkout", "project::kept"):
        accounts.bind_scope(conn, org_id, scope, owner.id)
    switches.switch_off(conn, org_id, "repo::acme/off", owner.id, owner.name)
    conn.execute("INSERT INTO members (org_id, user_id, role) VALUES (%s, %s, 'member')", (org_id, bob.id))
    if role is not None:
        conn.execute("INSERT INTO members (org_id, user_id, role) VALUES (%s, %s, %s)", (org_id, caller.id, role))
    else:
        accounts.create_org(conn, unique("elsewhere"), caller.id)
    made = accounts.create_token(conn, caller.id, kind, scopes=scopes)
    if state == "revoked":
        accounts.revoke_token(conn, caller.id, made.info.id)
    elif state == "expired":
        conn.execute("UPDATE tokens SET expires = now() - interval '1 second' WHERE id = %s", (made.info.id,))
    other = accounts.create_token(conn, caller.id, "ro").info.id
    invitation = accounts.invite(conn, org_id, org, f"{caller.name}@example.com", "viewer", owner.id).token
    return OrgCell(org, bob.name, made.token, made.info.id, other, invitation)


@pytest.fixture(scope="module")
def org_cells(conn: psycopg.Connection) -> list[OrgCell]:
    with conn.transaction():
        return [_org_cell(conn, kind, role) for _, kind, role in CELLS]


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=10) as api:
        yield api


def _ask(client: httpx.Client, endpoint: Endpoint, cell: OrgCell, token: bool = True) -> httpx.Response:
    def filled(text: str) -> str:
        for name, value in (("org", cell.org), ("bob", cell.bob), ("invitation", cell.invitation)):
            text = text.replace("{" + name + "}", value)
        return text.replace("{other}", str(cell.other)).replace("{self}", str(cell.token_id))

    body = {k: filled(v) if isinstance(v, str) else v for k, v in endpoint.body.items()} if endpoint.body else None
    headers = {"Authorization": f"Bearer {cell.token}"} if token else {}
    return client.request(endpoint.method, filled(endpoint.path), json=body, headers=headers)


@pytest.mark.parametrize("n", range(len(CELLS)), ids=[_id(c) for c in CELLS])
def test_each_cell_gets_its_status(n: int, org_cells: list[OrgCell], client: httpx.Client) -> None:
    endpoint, kind, role = CELLS[n]
    response = _ask(client, endpoint, org_cells[n])
    assert response.status_code == expected(endpoint, kind, role), response.text
    if response.status_code == 403:
        assert response.json()["error"].endswith(".")


@pytest.mark.parametrize("n", range(len(DEAD_CELLS)), ids=[f"{e.method} {e.path} {s}" for e, s in DEAD_CELLS])
def test_without_a_live_token_every_endpoint_answers_401(
    n: int, conn: psycopg.Connection, client: httpx.Client
) -> None:
    endpoint, state = DEAD_CELLS[n]
    cell = _org_cell(conn, "rw", "owner", state="live" if state == "none" else state)
    response = _ask(client, endpoint, cell, token=state != "none")
    assert response.status_code == 401, response.text
    assert response.json()["error"].endswith(".")
    assert conn.execute("SELECT count(*) FROM orgs WHERE name = %s", (cell.org,)).fetchone() == (1,)


@pytest.mark.parametrize("n", range(len(LIMITED_CELLS)), ids=[_limited_id(c) for c in LIMITED_CELLS])
def test_a_scope_limited_token_reaches_no_further_than_its_scopes(
    n: int, conn: psycopg.Connection, client: httpx.Client
) -> None:
    endpoint, status, role = LIMITED_CELLS[n]
    cell = _org_cell(conn, "rw", role, scopes=LIMITED_TO)
    if role is None and status != 403 and "/v1/orgs/{org}" in endpoint.path:
        status = 403  # a stranger to the org is refused there whatever the token
    response = _ask(client, endpoint, cell)
    assert response.status_code == status, response.text
    if status == 403:
        assert response.json()["error"].endswith(".")
    if endpoint.path == "/v1/tokens" and status == 201:
        assert endpoint.body is not None  # what was asked, or the maker's own allow-list
        assert response.json()["scopes"] == endpoint.body.get("scopes", LIMITED_TO)


# -- memories ----------------------------------------------------------------------------------
#
# The same matrix for `/v1/memories…`, with one more axis: where the copy a cell acts on lives.
# `own` is the org the caller holds the role in (for a stranger, an org they are not in), `other`
# an org the caller is not in, `personal` someone else's personal space. Each cell starts from its
# own copy (`seeded`) under its own scope, a branch of the repository the space shares, so no cell
# sees another's, and the whole world is made once for the module.

TARGETS = ("own", "other", "personal")
KEY = "seeded"
ADDRESS = {"scope": "{scope}", "key": KEY}


@dataclass(frozen=True)
class MemoryEndpoint:
    method: str
    path: str
    power: str  # read | write: what the token must allow
    # find: 404 unless the caller sees the copy · filter: 200, the copy listed iff the caller sees it ·
    # place: 200, in the org's space for a member or above of the org that shares the scope, else in
    # the caller's personal space · change: 404 unless the caller sees the copy, then `role` is needed
    effect: str
    role: str = "viewer"
    params: dict | None = None  # "{scope}" is the cell's scope
    body: dict | None = None
    listing: str = ""  # for a filter: the answer's field that lists the copies
    archived: bool = False  # the cell's copy starts archived


MEMORY_ENDPOINTS = (
    MemoryEndpoint("POST", "/v1/memories", "write", "place", body={"scope": "{scope}", "key": KEY, "value": "{value}"}),
    MemoryEndpoint("GET", "/v1/memories/read", "read", "find", params={"scope": "{scope}", "key": KEY}),
    MemoryEndpoint(
        "GET", "/v1/memories/search", "read", "filter", params={"q": "lesson", "scope": "{scope}"}, listing="hits"
    ),
    MemoryEndpoint("GET", "/v1/memories", "read", "filter", params={"scope": "{scope}"}, listing="memories"),
    MemoryEndpoint("GET", "/v1/memories/context", "read", "filter", params={"scope": "{scope}"}, listing="shown"),
    MemoryEndpoint("POST", "/v1/memories/archive", "write", "change", "member", body=ADDRESS),
    MemoryEndpoint("POST", "/v1/memories/restore", "write", "change", "member", body=ADDRESS, archived=True),
    MemoryEndpoint("POST", "/v1/memories/forget", "write", "change", "admin", body=ADDRESS),
    MemoryEndpoint(
        "POST",
        "/v1/memories/import",
        "write",
        "place",
        body={"records": [{"scope": "{scope}", "key": KEY, "value": "{value}"}]},
    ),
    MemoryEndpoint("GET", "/v1/memories/changes", "read", "filter", params={"since": 0}, listing="memories"),
    MemoryEndpoint(
        "POST",
        "/v1/memories/batch",
        "write",
        "place",
        body={"writes": [{"write": {"scope": "{scope}", "key": KEY, "value": "{value}"}, "idempotency_key": None}]},
    ),
)


def at_least(role: str | None, needed: str) -> bool:
    return role is not None and auth.ROLES.index(role) >= auth.ROLES.index(needed)


def expected_memory(endpoint: MemoryEndpoint, kind: str, role: str | None, target: str) -> tuple[int, str]:
    """The status, and what the answer shows: for a filter whether the copy is `seen`, for a placed
    write its space (`org` or `personal`)."""
    if endpoint.power == "read" and kind == "wo" or endpoint.power == "write" and kind == "ro":
        return 403, ""
    seen = target == "own" and role is not None
    if endpoint.effect == "place":
        return 200, "org" if seen and at_least(role, "member") else "personal"
    if endpoint.effect == "filter":
        return 200, "seen" if seen else "unseen"
    if not seen:
        return 404, ""  # a copy the caller cannot read is, to them, no copy at all
    if not at_least(role, endpoint.role):
        return 403, ""
    return 200, "org"


MEMORY_CELLS = [(e, k, r, t) for e in MEMORY_ENDPOINTS for k in KINDS for r in ROLES for t in TARGETS]


def _memory_id(cell: tuple[MemoryEndpoint, str, str | None, str]) -> str:
    endpoint, kind, role, target = cell
    return f"{endpoint.method} {endpoint.path} {kind} {role or 'stranger'} {target}"


@dataclass
class World:
    org: str  # the `own` org
    spaces: dict[str, str]  # target → the space its copies are in (`org:ID`, `user:ID`)
    repos: dict[str, str]  # target → the repository whose branches the cells use (shared by the org)
    callers: dict[tuple[str | None, str], tuple[int, str]]  # (role, kind) → (user id, token)

    def scope(self, n: int, target: str) -> str:
        return f"branch::{self.repos[target]}::c{n}"


@pytest.fixture(scope="module")
def world(conn: psycopg.Connection) -> World:
    """Org `own` with a caller of each role (and a stranger, who owns an org of their own), each with
    a token of each kind; org `other`; someone with a personal space; and every cell's copy.

    A caller's token serves the 33 cells of its role and kind (11 endpoints × 3 targets): well within
    the server's rate limit of 120 requests a minute."""

    def org(prefix: str, owner: int, repo: str) -> tuple[str, int]:
        name = unique(prefix)
        accounts.create_org(conn, name, owner)
        org_id, _ = accounts.role_in(conn, name, owner)
        accounts.bind_scope(conn, org_id, f"repo::{repo}", owner)
        return name, org_id

    repos = {target: f"{unique(target)}/app" for target in TARGETS}
    own, own_id = org("own", _user(conn, "owner").id, repos["own"])
    _, other_id = org("other", _user(conn, "owner").id, repos["other"])
    someone = _user(conn, "someone").id
    callers: dict[tuple[str | None, str], tuple[int, str]] = {}
    for role in ROLES:
        caller = _user(conn, role or "stranger").id
        if role is None:
            accounts.create_org(conn, unique("elsewhere"), caller)
        else:
            conn.execute("INSERT INTO members (org_id, user_id, role) VALUES (%s, %s, %s)", (own_id, caller, role))
        for kind in KINDS:
            callers[(role, kind)] = (caller, accounts.create_token(conn, caller, kind).token)
    spaces = {"own": f"org:{own_id}", "other": f"org:{other_id}", "personal": f"user:{someone}"}
    made = World(own, spaces, repos, callers)

    now = now_iso()
    for target, space in spaces.items():
        copies = [
            Memory(
                scope=parse(made.scope(n, target)),
                key=KEY,
                value=f"lesson of cell {n}",
                created=now,
                updated=now,
                archived_at=now if endpoint.archived else None,
            )
            for n, (endpoint, _, _, cell_target) in enumerate(MEMORY_CELLS)
            if cell_target == target
        ]
        PostgresTier(conn, {"seed": space}, []).store_batch("seed", copies, lambda new, old: new)
    return made


@pytest.mark.parametrize("n", range(len(MEMORY_CELLS)), ids=[_memory_id(c) for c in MEMORY_CELLS])
def test_each_memory_cell_gets_its_status(n: int, world: World, conn: psycopg.Connection, client: httpx.Client) -> None:
    endpoint, kind, role, target = MEMORY_CELLS[n]
    caller_id, token = world.callers[(role, kind)]
    scope, value = world.scope(n, target), f"lesson written by cell {n}"

    def filled(item: object) -> object:
        if isinstance(item, str):
            return item.replace("{scope}", scope).replace("{value}", value)
        if isinstance(item, list):
            return [filled(i) for i in item]
        if isinstance(item, dict):
            return {k: filled(v) for k, v in item.items()}
        return item

    response = client.request(
        endpoint.method,
        endpoint.path,
        params=filled(endpoint.params),
        json=filled(endpoint.body),
        headers={"Authorization": f"Bearer {token}"},
    )
    status, shows = expected_memory(endpoint, kind, role, target)
    assert response.status_code == status, response.text
    answer = response.json()
    if status != 200:
        assert answer["error"].endswith("."), answer
    org_space = f"org:{world.org}"
    if endpoint.effect == "filter" and status == 200:
        listed = [m for m in answer[endpoint.listing] if m["memory"]["scope"] == scope]
        assert [m["space"] for m in listed] == ([org_space] if shows == "seen" else []), answer
    elif endpoint.effect == "place":
        # Where the written value is now: the org's one row, or the caller's personal space (the
        # org's row then keeps the seeded value), or nowhere when refused.
        landed = conn.execute(
            "SELECT space FROM memories WHERE scope = %s AND key = %s AND record->>'value' = %s", (scope, KEY, value)
        ).fetchall()
        space = world.spaces["own"] if shows == "org" else f"user:{caller_id}"
        assert [row[0] for row in landed] == ([space] if status == 200 else [])
        if status == 200 and endpoint.path == "/v1/memories/batch":
            [result] = answer["results"]
            assert result["status"] == 200, result
            answer = result["answer"]
        if status == 200 and endpoint.path in ("/v1/memories", "/v1/memories/batch"):
            assert answer["space"] == (org_space if shows == "org" else "personal")
            assert bool(answer["notices"]) == (shows == "personal"), answer
    elif endpoint.effect == "change":
        # The cell's copy changed as asked, or not at all when refused.
        row = conn.execute(
            "SELECT archived FROM memories WHERE space = %s AND scope = %s AND key = %s",
            (world.spaces[target], scope, KEY),
        ).fetchone()
        action = endpoint.path.rsplit("/", 1)[1]
        done = {"archive": (True,), "restore": (False,), "forget": None}[action]
        assert row == (done if status == 200 else (endpoint.archived,))
        if status == 200:
            assert answer["space"] == org_space


# -- the team ----------------------------------------------------------------------------------
#
# The same matrix for `/v1/team…`. A repository's team is its organisation's, the one that shares
# `repo::…`: viewers read, members write, and a stranger to the org is refused (403) — or, for a task
# named by its id, told there is no such task (404). Warnings are the caller's own sessions', in no
# org. A refused write changes nothing of the org's team.

TEAM_SYMBOLS = ["shop/tokens.py::validate_token"]


@dataclass(frozen=True)
class TeamEndpoint:
    method: str
    path: str  # {repo}: the team's repository; {intent}: a task of its
    power: str  # read | write
    role: str  # viewer | member | "": none (the caller's own warnings)
    body: dict | None = None


TEAM_ENDPOINTS = (
    TeamEndpoint(
        "POST",
        "/v1/team/sessions",
        "write",
        "member",
        {"agent": "codex", "session_id": "s", "developer": "dev", "repo": "{repo}"},
    ),
    TeamEndpoint("GET", "/v1/team/sessions?agent=codex&session_id=s&repo={repo}", "read", "viewer"),
    TeamEndpoint(
        "POST", "/v1/team/intents", "write", "member", {"developer": "dev", "repo": "{repo}", "title": "a task"}
    ),
    TeamEndpoint("GET", "/v1/team/intents?repo={repo}", "read", "viewer"),
    TeamEndpoint("GET", "/v1/team/intents/{intent}", "read", "viewer"),
    TeamEndpoint("POST", "/v1/team/intents/{intent}/claims", "write", "member", {"symbols": TEAM_SYMBOLS}),
    TeamEndpoint("GET", "/v1/team/intents/{intent}/claims", "read", "viewer"),
    TeamEndpoint("GET", "/v1/team/claims?repo={repo}", "read", "viewer"),
    TeamEndpoint("GET", "/v1/team/replica?repo={repo}", "read", "viewer"),
    TeamEndpoint("GET", "/v1/team/file-claims?repo={repo}", "read", "viewer"),
    TeamEndpoint("POST", "/v1/team/file-claims", "write", "member", {"repo": "{repo}", "replaced": [], "claims": []}),
    TeamEndpoint("POST", "/v1/team/intents/{intent}/changes", "write", "member", {"symbols": TEAM_SYMBOLS}),
    TeamEndpoint(
        "POST",
        "/v1/team/intents/{intent}/attempts",
        "write",
        "member",
        {"command": "pytest", "run": {"runner": "pytest", "outcome": "failed", "failed": ["tests/t.py::test_x"]}},
    ),  # fmt: skip
    TeamEndpoint("GET", "/v1/team/intents/{intent}/attempts", "read", "viewer"),
    TeamEndpoint(
        "POST",
        "/v1/team/decisions",
        "write",
        "member",
        {"text": "RS256", "symbols": TEAM_SYMBOLS, "developer": "dev", "repo": "{repo}"},
    ),
    TeamEndpoint("GET", f"/v1/team/decisions?repo={{repo}}&symbol={TEAM_SYMBOLS[0]}", "read", "viewer"),
    TeamEndpoint("POST", "/v1/team/intents/{intent}/notes", "write", "member", {"text": "half done"}),
    TeamEndpoint("GET", "/v1/team/intents/{intent}/notes", "read", "viewer"),
    TeamEndpoint("POST", "/v1/team/intents/{intent}/handoff", "write", "member", {"text": "over to you"}),
    TeamEndpoint("POST", "/v1/team/intents/{intent}/resume", "write", "member", {"developer": "dev"}),
    TeamEndpoint("POST", "/v1/team/intents/{intent}/done", "write", "member", {}),
    TeamEndpoint("POST", "/v1/team/warnings", "write", "", {"agent": "codex", "session_id": "s", "key": "k"}),
    TeamEndpoint("GET", "/v1/team/warnings?agent=codex&session_id=s&key=k", "read", ""),
    TeamEndpoint("POST", "/v1/team/involvement", "read", "viewer", {"repo": "{repo}", "symbols": TEAM_SYMBOLS}),
    TeamEndpoint("GET", f"/v1/team/why?repo={{repo}}&symbol={TEAM_SYMBOLS[0]}", "read", "viewer"),
    TeamEndpoint("GET", f"/v1/team/history?repo={{repo}}&symbol={TEAM_SYMBOLS[0]}", "read", "viewer"),
    TeamEndpoint("GET", "/v1/team/board?repo={repo}", "read", "viewer"),
    # the repository's pushed code graph: listing the held files is a push's first step, so a push's right
    TeamEndpoint("POST", "/v1/graph/push", "write", "member", {"repo": "{repo}", "files": "{graph}"}),
    TeamEndpoint("GET", "/v1/graph/files?repo={repo}", "write", "member"),
    TeamEndpoint("GET", "/v1/graph/symbols?repo={repo}&name=validate_token", "read", "viewer"),
    TeamEndpoint("GET", f"/v1/graph/blast-radius?repo={{repo}}&symbol={TEAM_SYMBOLS[0]}&hops=2", "read", "viewer"),
    TeamEndpoint("GET", f"/v1/graph/path?repo={{repo}}&a=refresh&b={TEAM_SYMBOLS[0]}", "read", "viewer"),
    TeamEndpoint("GET", "/v1/graph/hotspots?repo={repo}", "read", "viewer"),
)
# The graph the team world's repository holds (pushed by its owner), and the file the push row sends again.
GRAPH_FILE = {
    "path": "shop/tokens.py", "language": "python", "hash": "h1", "parser": "3",
    "symbols": [
        {"id": TEAM_SYMBOLS[0], "qualname": "validate_token", "kind": "function", "line": 1, "end_line": 3,
         "hash": "s1", "seq": 1},
        {"id": "shop/tokens.py::refresh", "qualname": "refresh", "kind": "function", "line": 5, "end_line": 6,
         "hash": "s2", "seq": 2},
    ],
    "calls": [{"caller": "shop/tokens.py::refresh", "callee": TEAM_SYMBOLS[0], "confidence": 1.0}],
}  # fmt: skip


def expected_team(endpoint: TeamEndpoint, kind: str, role: str | None, admitted: bool = True) -> int:
    """The status of a cell; `admitted`: whether the token's scope allow-list admits the repository."""
    if endpoint.power == "read" and kind == "wo" or endpoint.power == "write" and kind == "ro":
        return 403
    if not endpoint.role:
        return 200
    if role is None or not admitted:
        return 404 if "{intent}" in endpoint.path else 403  # a task the caller cannot see is no task
    return 200 if at_least(role, endpoint.role) else 403


TEAM_CELLS = [(e, k, r) for e in TEAM_ENDPOINTS for k in KINDS for r in ROLES]
TEAM_LIMITED_CELLS = [(e, admitted) for e in TEAM_ENDPOINTS for admitted in (True, False)]


@dataclass
class TeamWorld:
    org_id: int
    repo: str
    intent: int
    callers: dict[tuple[str | None, str], tuple[int, str]]  # (role, kind) → (user id, token)
    limited: dict[bool, tuple[int, str]]  # an owner's hl_rw_ tokens: admitting the repository, or not


@pytest.fixture(scope="module")
def team_world(conn: psycopg.Connection) -> TeamWorld:
    """An org sharing a repository of its own, with a task in its team; a caller of each role (and a
    stranger) with a token of each kind, and an owner with two scope-limited tokens."""
    from hivelore.server.postgres.team import PostgresTeam

    owner, repo = _user(conn, "owner").id, f"{unique('team')}/app"
    org = unique("team")
    accounts.create_org(conn, org, owner)
    org_id, _ = accounts.role_in(conn, org, owner)
    accounts.bind_scope(conn, org_id, f"repo::{repo}", owner)
    intent = PostgresTeam(conn, org_id, owner).create_intent("dev", repo, "add JWT support").id
    _push_graph(conn, org_id, repo)
    callers: dict[tuple[str | None, str], tuple[int, str]] = {}
    for role in ROLES:
        caller = _user(conn, role or "stranger").id
        if role is not None:
            conn.execute("INSERT INTO members (org_id, user_id, role) VALUES (%s, %s, %s)", (org_id, caller, role))
        for kind in KINDS:
            callers[(role, kind)] = (caller, accounts.create_token(conn, caller, kind).token)
    limited = {
        admitted: (owner, accounts.create_token(conn, owner, "rw", scopes=[pattern]).token)
        for admitted, pattern in ((True, f"repo::{repo.split('/')[0]}/*"), (False, "repo::elsewhere/*"))
    }
    return TeamWorld(org_id, repo, intent, callers, limited)


def _push_graph(conn: psycopg.Connection, org_id: int, repo: str) -> None:
    from hivelore.server.postgres import graph

    f = GRAPH_FILE
    symbols = [tuple(s[k] for k in ("id", "qualname", "kind", "line", "end_line", "hash", "seq")) for s in f["symbols"]]
    calls = [(c["caller"], c["callee"], c["confidence"]) for c in f["calls"]]
    graph.push(conn, org_id, repo, [graph.Pushed(f["path"], f["language"], f["hash"], f["parser"], symbols, calls)], [])


def _team_rows(conn: psycopg.Connection, world: TeamWorld, user_id: int) -> tuple:
    """Everything of the org's team (and the caller's warnings), to see that a refusal changed nothing."""
    return conn.execute(
        """
        SELECT (SELECT json_agg(i ORDER BY i.id) FROM team_intents i WHERE org_id = %(org)s),
               (SELECT count(*) FROM team_claims c JOIN team_intents i ON i.id = c.intent_id WHERE org_id = %(org)s),
               (SELECT count(*) FROM team_changes c JOIN team_intents i ON i.id = c.intent_id WHERE org_id = %(org)s),
               (SELECT json_agg(a ORDER BY a.id) FROM team_attempts a JOIN team_intents i ON i.id = a.intent_id
                WHERE org_id = %(org)s),
               (SELECT count(*) FROM team_decisions WHERE org_id = %(org)s),
               (SELECT count(*) FROM team_notes n JOIN team_intents i ON i.id = n.intent_id WHERE org_id = %(org)s),
               (SELECT count(*) FROM team_sessions WHERE org_id = %(org)s),
               (SELECT count(*) FROM team_warnings WHERE user_id = %(user)s)
        """,
        {"org": world.org_id, "user": user_id},
    ).fetchone()


def _ask_team(
    client: httpx.Client, conn: psycopg.Connection, endpoint: TeamEndpoint, world: TeamWorld, caller: tuple[int, str]
) -> httpx.Response:
    def filled(item: object) -> object:
        if item == "{graph}":
            return [GRAPH_FILE]
        if isinstance(item, str):
            return item.replace("{repo}", world.repo).replace("{intent}", str(world.intent))
        if isinstance(item, dict):
            return {k: filled(v) for k, v in item.items()}
        return item

    user_id, token = caller
    before = _team_rows(conn, world, user_id)
    response = client.request(
        endpoint.method,
        str(filled(endpoint.path)),
        json=filled(endpoint.body),
        headers={"Authorization": f"Bearer {token}"},
    )
    if response.status_code != 200:
        assert response.json()["error"].endswith("."), response.text
        assert _team_rows(conn, world, user_id) == before
    return response


@pytest.mark.parametrize(
    "n", range(len(TEAM_CELLS)), ids=[f"{e.method} {e.path} {k} {r or 'stranger'}" for e, k, r in TEAM_CELLS]
)
def test_each_team_cell_gets_its_status(
    n: int, team_world: TeamWorld, conn: psycopg.Connection, client: httpx.Client
) -> None:
    endpoint, kind, role = TEAM_CELLS[n]
    response = _ask_team(client, conn, endpoint, team_world, team_world.callers[(role, kind)])
    assert response.status_code == expected_team(endpoint, kind, role), response.text


@pytest.mark.parametrize(
    "n",
    range(len(TEAM_LIMITED_CELLS)),
    ids=[f"{e.method} {e.path} {'admitted' if a else 'not admitted'}" for e, a in TEAM_LIMITED_CELLS],
)
def test_a_scope_limited_token_reaches_the_teams_of_its_repositories_only(
    n: int, team_world: TeamWorld, conn: psycopg.Connection, client: httpx.Client
) -> None:
    endpoint, admitted = TEAM_LIMITED_CELLS[n]
    response = _ask_team(client, conn, endpoint, team_world, team_world.limited[admitted])
    assert response.status_code == expected_team(endpoint, "rw", "owner", admitted), response.text
