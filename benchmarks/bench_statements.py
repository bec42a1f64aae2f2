"""The statements a write sends to PostgreSQL, counted: `bench_server.py --statements`.

pg_stat_statements would count them, but it must be in `shared_preload_libraries`, which takes a
restart of PostgreSQL (a shared server here). So the benchmark's database alone gets
`log_statement = 'all'`, a replica of its own is started (the setting reaches new connections
only), writes are sent one after another between two marker statements, and PostgreSQL's log lines
of that database between the markers are counted: every statement the replica sent, BEGIN and
COMMIT included, each once (a statement's parameters are DETAIL lines, not counted).

Statements are not round trips: the replica pipelines some (postgres/idempotency.py); the log
cannot tell them apart, the count of each kind printed beside the total can.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg

LOG = Path("/var/log/postgresql/postgresql-15-main.log")  # Debian's: logging_collector is off here
WRITES = 100  # writes counted (half new keys, half updates, as the writes run)
IMPORTS = 4  # import requests counted, of bench_server.BATCH_RECORDS records each
_LINE = re.compile(r"^\S+ \S+ \S+ \[\d+\] (?P<who>\S+@\S+) LOG:  (?:statement|execute [^:]+): (?P<sql>.*)$")


@dataclass(frozen=True)
class Counted:
    what: str  # what was sent
    requests: int
    records: int  # writes the requests carried
    kinds: Counter[str]  # statements by their first words

    @property
    def statements(self) -> int:
        return sum(self.kinds.values())


def kind_of(sql: str) -> str:
    """A statement's first words, with what a WITH writes or a SELECT calls: enough to tell them apart."""
    words = re.sub(r"\s+", " ", sql).strip()
    if words.upper().startswith("WITH"):
        verbs = re.findall(r"\b(INSERT INTO \w+|UPDATE (?!SET)\w+|DELETE FROM \w+)", words)
        return "WITH " + ", ".join(dict.fromkeys(verbs)) if verbs else words[:60]
    return words[:60]


def statements_between(log: Path, database: str, start: str, stop: str) -> Counter[str]:
    """The statements the log shows of `database` between the lines holding `start` and `stop` (a
    statement of several lines goes on in lines that begin with a tab)."""
    kinds: Counter[str] = Counter()
    counting, sql = False, None
    with log.open(errors="replace") as lines:
        for line in lines:
            if sql is not None and line.startswith("\t"):
                sql += " " + line.strip()
                continue
            if sql is not None:
                kinds[kind_of(sql)] += 1
                sql = None
            found = _LINE.match(line)
            if found is None or not found["who"].endswith(f"@{database}"):
                continue
            if start in line:
                counting = True
            elif stop in line:
                return kinds
            elif counting:
                sql = found["sql"]
    raise RuntimeError(f"{log} does not hold both markers of the statement count")


def mark(url: str, text: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"SELECT '{text}'")


def counted(url: str, database: str, what: str, send: Callable[[], None], requests: int, records: int) -> Counted:
    """The statements of `database` while `send()` runs (no other client of it may run meanwhile)."""
    start, stop = f"hivelore-count-start-{uuid.uuid4()}", f"hivelore-count-stop-{uuid.uuid4()}"
    mark(url, start)
    send()
    mark(url, stop)
    return Counted(what, requests, records, statements_between(LOG, database, start, stop))


def logging_all(admin_url: str, database: str, on: bool) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if on:
            conn.execute(f"ALTER DATABASE \"{database}\" SET log_statement = 'all'")
        else:
            conn.execute(f'ALTER DATABASE "{database}" RESET log_statement')


def report(counts: list[Counted]) -> None:
    print(f"statements sent to PostgreSQL (log_statement = 'all' on the benchmark's database, {LOG}):")
    for c in counts:
        per = c.statements / c.records
        print(f"  {c.what}: {c.statements:,} statements for {c.records:,} writes = {per:.2f} a write")
        for kind, n in c.kinds.most_common():
            print(f"    {n / c.records:6.2f}  {kind}")
