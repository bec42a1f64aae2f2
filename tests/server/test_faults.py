"""PostgreSQL restarted under a running server: every write the server acknowledged is there after, each
refusal while it was down is a 503 with a sentence and Retry-After, and the server recovers alone."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psycopg
import pytest
from conftest import Account, Server

CLUSTERS = Path("/etc/postgresql")


def restart_postgres() -> None:
    version = next(CLUSTERS.iterdir()).name
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"],
        check=True,
        capture_output=True,
        timeout=60,
    )


@pytest.mark.skipif(
    shutil.which("pg_ctlcluster") is None or not CLUSTERS.is_dir(),
    reason="restarting PostgreSQL needs pg_ctlcluster (Debian's postgresql-common) on this machine",
)
def test_a_postgres_restart_loses_no_acknowledged_write_and_the_server_recovers(
    unlimited: Server, make_user: Callable[..., Account], database_url: str
) -> None:
    user = make_user("steady")
    acknowledged: list[int] = []
    refusals: list[httpx.Response] = []
    failures: list[str] = []
    stop = threading.Event()

    def write_tokens() -> None:
        with httpx.Client(base_url=unlimited.url, timeout=15) as client:
            n = 0
            while not stop.is_set():
                n += 1
                try:
                    answer = client.post("/v1/tokens", json={"kind": "ro", "name": f"t{n}"}, headers=user.headers())
                except httpx.TransportError as exc:
                    failures.append(f"the server dropped a request: {exc!r}")
                    continue
                if answer.status_code == 201:
                    acknowledged.append(answer.json()["id"])
                elif answer.status_code in (429, 503):
                    refusals.append(answer)
                else:
                    failures.append(f"{answer.status_code}: {answer.text}")

    writer = threading.Thread(target=write_tokens)
    writer.start()
    time.sleep(1.0)
    restart_postgres()
    time.sleep(3.0)
    stop.set()
    writer.join(30)

    assert not failures, failures[:3]
    for refusal in refusals:
        assert refusal.status_code == 503 and refusal.headers["retry-after"] == "5"
        assert refusal.json()["error"] == "the database cannot be reached: try again in a moment."
    deadline = time.monotonic() + 20
    while httpx.get(f"{unlimited.url}/readyz", timeout=5).status_code != 200:
        assert time.monotonic() < deadline, "the server did not recover after PostgreSQL came back"
        time.sleep(0.2)
    with psycopg.connect(database_url, autocommit=True) as conn:
        stored = {row[0] for row in conn.execute("SELECT id FROM tokens WHERE user_id = %s", (user.id,))}
    assert len(acknowledged) > 10, "the load never ran"
    assert set(acknowledged) <= stored
    after = httpx.post(f"{unlimited.url}/v1/tokens", json={"kind": "ro"}, headers=user.headers(), timeout=10)
    assert after.status_code == 201
