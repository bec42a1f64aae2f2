"""When the team's rows change: one LISTEN connection per replica, so that a held replica request
(`GET /v1/team/replica?wait=…`) looks again when something changed instead of every quarter second.

Migration 0019 has every statement that changes what a replica answer holds (intents, claims,
attempts and their symbols) send `NOTIFY hivelore_team`, whoever made it — a replica, another
replica, or someone at a `psql` prompt. PostgreSQL delivers it when the transaction commits, once
per transaction. A thread here listens on its own connection and wakes the waiting requests on the
serving loop. While that connection is down (PostgreSQL restarting), `listening` is False and the
requests go back to looking every quarter second; on reconnecting it wakes them all, because what
changed meanwhile was not told."""

from __future__ import annotations

import asyncio
import logging
import threading

import psycopg

from hivelore.server.postgres.pool import CONNECT_TIMEOUT_S

CHANNEL = "hivelore_team"
POLL_S = 1.0  # how often the listening thread checks that it should stop
RECONNECT_S = 1.0  # between attempts to listen again after the connection was lost

log = logging.getLogger("hivelore.server")


class TeamWatch:
    """Wakes this replica's held replica requests when the team's rows changed."""

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self.listening = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._changed = asyncio.Event()
        self._stopping = threading.Event()
        self._first_try = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Listen in a thread; return once the first attempt to listen succeeded or failed, so that a
        replica that says it is ready says truly whether it hears the changes."""
        self._loop = loop
        self._thread = threading.Thread(target=self._listen, name="hivelore-teamwatch", daemon=True)
        self._thread.start()
        self._first_try.wait(CONNECT_TIMEOUT_S + 1.0)

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=POLL_S + 1.0)

    def changed(self) -> asyncio.Event:
        """The event the next change sets: taken before a request reads the rows, so that a change made
        while it reads them is not missed."""
        return self._changed

    def _listen(self) -> None:
        lost = False  # the connection was lost: what changed meanwhile was not told
        while not self._stopping.is_set():
            try:
                with psycopg.connect(self.database_url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self._told(listening=True, wake=lost)
                    while not self._stopping.is_set():
                        for _ in conn.notifies(timeout=POLL_S):
                            self._told(listening=True, wake=True)
            except psycopg.Error as exc:
                if self.listening:
                    log.warning("team changes not heard", extra={"fields": {"error": _first_line(exc)}})
                lost = True
                self._told(listening=False, wake=True)
                self._stopping.wait(RECONNECT_S)

    def _told(self, listening: bool, wake: bool) -> None:
        """Whether this replica hears the changes now; `wake`: wake every waiting request (on the
        serving loop, which owns the event)."""
        self.listening = listening
        self._first_try.set()
        if wake and self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()


def _first_line(exc: Exception) -> str:
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__
