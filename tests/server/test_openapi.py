"""Whatever a client sends that the published schema allows — and much it does not — the server
answers without a 5xx (schemathesis generates the requests from the schema; the live server's
/openapi.json is that schema)."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import schemathesis
from conftest import Account, Server
from hypothesis import HealthCheck, settings

from hivelore.server.app import Settings, create_app

EXAMPLES = 15


# The schema is needed when the tests are collected, before any server runs: the app builds it
# without touching the database.
SCHEMA = create_app(Settings(database_url="postgresql://unused@127.0.0.1/none")).openapi()
schema = schemathesis.openapi.from_dict(SCHEMA)


def test_the_live_server_publishes_the_schema_the_requests_come_from(unlimited: Server) -> None:
    assert httpx.get(f"{unlimited.url}/openapi.json").json() == SCHEMA


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_generated_request_gets_a_server_error(
    case: schemathesis.Case, unlimited: Server, make_user: Callable[..., Account]
) -> None:
    user = make_user("fuzz")
    response = case.call(base_url=unlimited.url, headers=user.headers(), timeout=10)
    assert response.status_code < 500, f"{case.method} {case.formatted_path}: {response.status_code} {response.text}"
    if response.status_code >= 400:
        assert set(response.json()) == {"error", "code", "request_id"}, response.text
