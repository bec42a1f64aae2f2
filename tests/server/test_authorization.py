"""The authorisation matrix: every role (and a stranger to the org) × every token kind × every org
endpoint, with the status each cell must get, generated from one table.

A cell's expected status follows from two facts about the endpoint — the power its token needs
(`read`, `manage`) and the least role it needs — so the table below is the whole specification.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import httpx
import psycopg
import pytest
from conftest import unique

from hivelore.server import auth
from hivelore.server.postgres import accounts

KINDS = ("rw", "ro", "wo")
ROLES = (None, *auth.ROLES)  # None: a member of another org only


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str  # {org} is the org the caller is asked about
    power: str  # read | manage
    role: str
    success: int
    body: dict | None = None


ENDPOINTS = (
    Endpoint("GET", "/v1/orgs/{org}", "read", "viewer", 200),
    Endpoint("GET", "/v1/orgs/{org}/scopes", "read", "viewer", 200),
    Endpoint("PUT", "/v1/orgs/{org}/scopes/project::shop", "manage", "admin", 204),
    Endpoint("DELETE", "/v1/orgs/{org}/scopes/repo::acme/checkout", "manage", "admin", 204),
    Endpoint("POST", "/v1/orgs/{org}/invitations", "manage", "admin", 201, {"invitee": "new@example.com"}),
    Endpoint("PUT", "/v1/orgs/{org}/members/{bob}", "manage", "admin", 204, {"role": "viewer"}),
    Endpoint("DELETE", "/v1/orgs/{org}/members/{bob}", "manage", "admin", 204),
    Endpoint("PATCH", "/v1/orgs/{org}", "manage", "owner", 200, {"name": "{org}"}),
    Endpoint("DELETE", "/v1/orgs/{org}", "manage", "owner", 204),
)


def expected(endpoint: Endpoint, kind: str, role: str | None) -> int:
    if endpoint.power == "read" and kind == "wo":
        return 403
    if endpoint.power == "manage" and kind != "rw":
        return 403
    if role is None or auth.ROLES.index(role) < auth.ROLES.index(endpoint.role):
        return 403
    return endpoint.success


CELLS = [(e, k, r) for e in ENDPOINTS for k in KINDS for r in ROLES]


def _id(cell: tuple[Endpoint, str, str | None]) -> str:
    endpoint, kind, role = cell
    return f"{endpoint.method} {endpoint.path} {kind} {role or 'stranger'}"


@pytest.mark.parametrize("cell", CELLS, ids=[_id(c) for c in CELLS])
def test_each_cell_gets_its_status(
    cell: tuple[Endpoint, str, str | None], api: httpx.Client, db: psycopg.Connection, make_user: Callable
) -> None:
    endpoint, kind, role = cell
    owner, bob = make_user("owner"), make_user("bob")
    org = unique("org")
    accounts.create_org(db, org, owner.id)
    org_id, _ = accounts.role_in(db, org, owner.id)
    accounts.bind_scope(db, org_id, "repo::acme/checkout", owner.id)
    db.execute("INSERT INTO members (org_id, user_id, role) VALUES (%s, %s, 'member')", (org_id, bob.id))
    caller = make_user("caller", kind=kind)
    if role is not None:
        db.execute("INSERT INTO members (org_id, user_id, role) VALUES (%s, %s, %s)", (org_id, caller.id, role))
    else:
        accounts.create_org(db, unique("elsewhere"), caller.id)

    def filled(text: str) -> str:
        return text.replace("{org}", org).replace("{bob}", bob.name)

    body = {k: filled(v) for k, v in endpoint.body.items()} if endpoint.body else None
    response = api.request(endpoint.method, filled(endpoint.path), json=body, headers=caller.headers())
    assert response.status_code == expected(endpoint, kind, role), response.text
    if response.status_code == 403:
        assert response.json()["error"].endswith(".")
