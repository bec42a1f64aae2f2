"""The team server's writes lose their private spans too: the memory service strips them before its
PostgreSQL tier sees the value, so no table (memories, the stored answers of idempotent requests, …)
holds the private text."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import psycopg
from conftest import Account, unique


def tables_holding(db: psycopg.Connection, text: str) -> list[str]:
    names = [r[0] for r in db.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")]
    return [
        n
        for n in names
        if db.execute(f'SELECT count(*) FROM "{n}" t WHERE t::text LIKE %s', (f"%{text}%",)).fetchone()[0]
    ]


def test_a_write_to_the_server_stores_no_private_span(
    api: httpx.Client, db: psycopg.Connection, make_user: Callable[..., Account]
) -> None:
    who = make_user("private")
    key = unique("db-port")
    body = {"scope": "project::scratch", "key": key, "value": "Postgres is on 5433 <private>pw SECRET-SERVER</private>"}
    written = api.post("/v1/memories", json=body, headers={**who.headers(), "Idempotency-Key": unique("k")})
    assert written.status_code == 200, written.text
    assert written.json()["memory"]["value"] == "Postgres is on 5433"
    assert tables_holding(db, "SECRET-SERVER") == []
    assert "memories" in tables_holding(db, key)  # the check can see a value that is there


def test_a_value_that_is_all_private_is_refused_by_the_server(
    api: httpx.Client, make_user: Callable[..., Account]
) -> None:
    who = make_user("private")
    body = {"scope": "project::scratch", "key": unique("k"), "value": "<private>SECRET-ALL</private>"}
    refused = api.post("/v1/memories", json=body, headers=who.headers())
    assert refused.status_code == 400 and "all private" in refused.text
