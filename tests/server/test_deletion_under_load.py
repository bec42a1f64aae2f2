"""Deletions while writers write into the space they delete (issue 30), against a real team server
on loopback: an account's deletion leaves nothing of the account, a data deletion and its restore
leave every row once and the counters true, and no writer gets a 5xx — a write that finds its
account gone gets a 409 (or, sent after, a 401)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
import psycopg
from conftest import Account, Server, unique
from test_account_deletion import LEFT, left_of

from hivelore.server.postgres import accounts

WRITERS = 6
KEYS = 8  # per writer, rewritten in turn: a restore meets new writes at its rows' addresses
WARM_WRITES = 30  # written before the deletion starts, so that it meets a space in use


@dataclass
class Writers:
    """Threads writing memories (and a team writer claiming symbols) as `who` until stopped; what each
    request answered, with when it started and ended."""

    url: str
    who: Account
    task: int | None = None
    answers: list[tuple[float, float, int, str, str]] = field(default_factory=list)  # ..., what, answer
    stop: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> None:
        for n in range(WRITERS):
            self.threads.append(threading.Thread(target=self._write, args=(n,)))
        if self.task is not None:
            self.threads.append(threading.Thread(target=self._claim))
        for thread in self.threads:
            thread.start()

    def _send(self, client: httpx.Client, path: str, body: dict, what: str) -> None:
        began = time.monotonic()
        answer = client.post(path, json=body)
        self.answers.append((began, time.monotonic(), answer.status_code, what, answer.text))

    def _write(self, n: int) -> None:
        with httpx.Client(base_url=self.url, headers=self.who.headers(), timeout=30) as client:
            i = 0
            while not self.stop.is_set():
                body = {"scope": "global", "key": f"w{n}-{i % KEYS}", "value": f"writer {n} wrote deploy note {i}"}
                self._send(client, "/v1/memories", body, str(body["key"]))
                i += 1

    def _claim(self) -> None:
        with httpx.Client(base_url=self.url, headers=self.who.headers(), timeout=30) as client:
            i = 0
            while not self.stop.is_set():
                self._send(client, f"/v1/team/intents/{self.task}/claims", {"symbols": [f"cart.py::f{i}"]}, "claim")
                i += 1

    def wait_for(self, written: int) -> None:
        deadline = time.monotonic() + 30
        while sum(1 for a in self.answers if a[2] == 200) < written:
            assert time.monotonic() < deadline, f"the writers wrote too little: {self.statuses()}"
            time.sleep(0.01)

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(30)

    def statuses(self, claims: bool | None = None) -> dict[int, int]:
        """How many requests got each status: the claims' (True), the memory writes' (False), all (None)."""
        counts: dict[int, int] = {}
        for _, _, status, what, _ in self.answers:
            if claims is None or claims == (what == "claim"):
                counts[status] = counts.get(status, 0) + 1
        return counts

    def failed(self) -> list[str]:
        return [text for _, _, status, _, text in self.answers if status >= 500]

    def written(self) -> set[str]:
        """The keys a write of which was answered 200."""
        return {what for _, _, status, what, _ in self.answers if status == 200 and what != "claim"}

    def overlapping(self, began: float, ended: float) -> int:
        """How many requests were under way while [began, ended] ran."""
        return sum(1 for start, end, _, _, _ in self.answers if start < ended and end > began)


def _task(api: httpx.Client, db: psycopg.Connection, who: Account, owner: Account) -> int:
    """A task of `who`'s in an organisation of `owner`'s, for the team writer to claim symbols in."""
    org = unique("acme")
    repo = f"acme/{org}"
    accounts.create_org(db, org, owner.id)
    org_id, _ = accounts.role_in(db, org, owner.id)
    db.execute("INSERT INTO members (org_id, user_id, role) VALUES (%s, %s, 'member')", (org_id, who.id))
    accounts.bind_scope(db, org_id, f"repo::{repo}", owner.id)
    session = {"agent": "claude", "session_id": unique("s"), "developer": who.name, "repo": repo}
    made = api.post("/v1/team/sessions", headers=who.headers(), json={**session, "first_prompt": "fix the cart"})
    assert made.status_code == 200, made.text
    return int(made.json()["id"])


def test_an_account_deleted_while_its_writers_write_leaves_nothing_and_no_writer_gets_a_5xx(
    unlimited: Server, db: psycopg.Connection, make_user: Callable[..., Account]
) -> None:
    gil, owner = make_user("gil"), make_user("owner")
    with httpx.Client(base_url=unlimited.url, timeout=30) as api:
        writers = Writers(unlimited.url, gil, task=_task(api, db, gil, owner))
        writers.start()
        try:
            writers.wait_for(WARM_WRITES)
            began = time.monotonic()
            gone = api.delete("/v1/me", headers=gil.headers())
            ended = time.monotonic()
            time.sleep(0.3)  # the writers go on against the deleted account
        finally:
            writers.finish()
    assert gone.status_code == 200, gone.text
    assert writers.failed() == []
    assert set(writers.statuses(claims=False)) <= {200, 401, 409}, writers.statuses()
    assert set(writers.statuses(claims=True)) <= {200, 401, 404, 409}, writers.statuses()  # 404: its task is gone
    assert writers.overlapping(began, ended) >= WRITERS  # the deletion met writes under way
    assert writers.statuses().get(401, 0) > 0  # and the writers kept writing after it
    assert left_of(db, gil) == dict.fromkeys(LEFT, 0)


def _consistent(db: psycopg.Connection, space: str) -> tuple[int, int, int]:
    """The space's rows, the rows its counters say, and how many terms its term counts have wrong
    (a term's rows held against a count over its documents)."""
    rows = db.execute("SELECT count(*), coalesce(sum(tokens), 0) FROM memories WHERE space = %s", (space,)).fetchone()
    counted = db.execute(
        "SELECT coalesce(sum(rows), 0), coalesce(sum(tokens), 0) FROM memory_spaces WHERE space = %s", (space,)
    ).fetchone()
    terms = db.execute(
        """
        WITH held AS (
            SELECT term, sum(rows) AS n FROM memory_terms WHERE space = %(space)s GROUP BY term HAVING sum(rows) <> 0
        ), actual AS (
            SELECT t.term, count(*) AS n FROM memory_docs d, memory_terms_of(d.doc) t(term)
            WHERE d.space = %(space)s GROUP BY t.term
        ) SELECT count(*) FROM ((TABLE held EXCEPT TABLE actual) UNION ALL (TABLE actual EXCEPT TABLE held)) wrong
        """,
        {"space": space},
    ).fetchone()
    assert rows is not None and counted is not None and terms is not None
    assert (int(counted[0]), int(counted[1])) == (int(rows[0]), int(rows[1])), space
    return int(rows[0]), int(counted[0]), int(terms[0])


def test_a_data_deletion_and_its_restore_while_writers_write_keep_every_row_once_and_no_writer_gets_a_5xx(
    unlimited: Server, db: psycopg.Connection, make_user: Callable[..., Account]
) -> None:
    hal = make_user("hal")
    deletions = []
    with httpx.Client(base_url=unlimited.url, timeout=30) as api:
        writers = Writers(unlimited.url, hal)
        writers.start()
        try:
            writers.wait_for(WARM_WRITES)
            for _ in range(3):
                deletions.append(api.delete("/v1/me/data", headers=hal.headers()))
                time.sleep(0.05)
                deletions.append(api.post("/v1/me/data/restore", headers=hal.headers()))
                time.sleep(0.05)
        finally:
            writers.finish()
    assert [d.status_code for d in deletions] == [200] * 6, [d.text for d in deletions if d.status_code != 200]
    assert writers.failed() == []
    assert set(writers.statuses()) == {200}, writers.statuses()
    personal, _, wrong_terms = _consistent(db, f"user:{hal.id}")
    assert (personal, wrong_terms) == (len(writers.written()), 0)  # each address once, back from each deletion
    assert _consistent(db, f"erased:{hal.id}")[0] == 0
