"""Whatever a client sends that the published schema allows — and much it does not — the server
answers without a 5xx (schemathesis generates the requests from the schema; the live server's
/openapi.json is that schema)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest
import schemathesis
from conftest import Account, Server, start_server
from hypothesis import HealthCheck, settings

from hivelore.server.app import Settings, create_app

EXAMPLES = 15


@pytest.fixture(scope="module")
def fuzzed(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A replica of its own, with a rate limit the generated requests do not reach."""
    running = start_server(
        database_url, tmp_path_factory.mktemp("fuzzed") / "server.log", "--requests-per-minute", "1000000"
    )
    yield running
    running.stop()


# The schema is needed when the tests are collected, before any server runs: the app builds it
# without touching the database.
SCHEMA = create_app(Settings(database_url="postgresql://unused@127.0.0.1/none")).openapi()
schema = schemathesis.openapi.from_dict(SCHEMA)


def test_the_live_server_publishes_the_schema_the_requests_come_from(fuzzed: Server) -> None:
    assert httpx.get(f"{fuzzed.url}/openapi.json").json() == SCHEMA


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_generated_request_gets_a_server_error(
    case: schemathesis.Case, fuzzed: Server, make_user: Callable[..., Account]
) -> None:
    user = make_user("fuzz")
    response = case.call(base_url=fuzzed.url, headers=user.headers(), timeout=10)
    assert response.status_code < 500, f"{case.method} {case.formatted_path}: {response.status_code} {response.text}"
    if response.status_code >= 400:
        assert set(response.json()) == {"error", "request_id"}, response.text
