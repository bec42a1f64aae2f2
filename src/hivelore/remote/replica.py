"""The team server as this machine keeps it: the client, the mirror (remote/mirror.py) and the outbox
(remote/outbox.py), and the two moves between them and the server — `flush` sends what the outbox
holds, in order; `sync` brings the mirror up to the server's change feed.

Writes waiting one after another go in batches (`POST /v1/memories/batch`, up to BATCH of them and
BATCH_BYTES of JSON a request); an archive, a restore, a forget or a team change goes alone, in its
place, so nothing overtakes what was made before it. The server answers each write of a batch as it
would answer it alone: a refused one is set aside with its sentence and the writes after it are
applied — order only matters between changes of one memory, and a refused write changed nothing
there. A server older than the batch route (404 or 405 to it) gets the writes one by one, as does a
batch refused whole for any reason but the token (each write then gets its own verdict).

Who moves them: a command (`hivelore search`, `write`, MCP …) before it reads, within a budget of a
few seconds; and the resident hook server, in the background (hooks/server.py MIRROR_SYNC_S). A hook itself
never waits on the network: it reads the mirror as the last sync left it.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from urllib.parse import urlencode

from hivelore import errors, orgswitch
from hivelore.memory.model import Memory
from hivelore.remote import teamshare
from hivelore.remote.client import Client, Refused, error_of
from hivelore.remote.credentials import Remote
from hivelore.remote.mirror import Mirror, path_for
from hivelore.remote.outbox import Change, Outbox

FRESH_S = 2.0  # a mirror synced this recently is not synced again before a read
MAX_PAGES = 200  # of the change feed in one sync (1,000 changes each)
BATCH_PATH = "/v1/memories/batch"
BATCH = 100  # writes a batch: the most the server takes (server/routes/memories.py MAX_BATCH)
BATCH_BYTES = 900_000  # of JSON a batch: the server refuses a body over 1 MiB
NO_ROUTE = (404, 405)  # what a server older than a route answers to it
PATHS = {
    "write": "/v1/memories",
    "archive": "/v1/memories/archive",
    "restore": "/v1/memories/restore",
    "forget": "/v1/memories/forget",
}


LOGIN = "run `hivelore remote login`"


class Held(errors.Unavailable):
    """The server refused the connection, not the change (a token revoked or expired, a proxy's
    answer for the whole route): the change waits for the next flush, never set aside."""


@dataclass
class Flushed:
    sent: int = 0
    rejected: list[str] = field(default_factory=list)  # the server's sentences
    waiting: int = 0
    held: str | None = None  # why the rest waits: the server did not answer, or refused the token


class Replica:
    def __init__(self, home: str, remote: Remote, budget_s: float, client: Client | None = None) -> None:
        """`client`: one to reuse (its warm connection), when it is for this server and token; a
        client made here is closed with the replica."""
        if not remote.token:
            raise errors.BadInput(remote.withheld() or f"no token for the team server at {remote.endpoint}")
        self.remote = remote
        fits = client is not None and (client.endpoint.url, client.token) == (remote.endpoint.url, remote.token)
        self.owns_client = not fits
        self.client = client if client is not None and fits else Client(remote.endpoint, remote.token)
        self.client.timeout_s, self.client.retry_budget_s = max(budget_s, 0.5), budget_s
        path = path_for(home, remote.endpoint.url)
        self.mirror = Mirror.open(path)
        self.mirror.bind(remote.endpoint.url, hashlib.sha256(remote.token.encode()).hexdigest())
        self.outbox = Outbox(path.removesuffix(".db") + ".outbox")

    def close(self) -> None:
        self.mirror.close()
        if self.owns_client:
            self.client.close()

    @property
    def age_s(self) -> float | None:
        """Seconds since the server last answered a sync; None if it never has."""
        synced = self.mirror.synced
        return time.time() - synced if synced else None

    def stale(self) -> bool:
        age = self.age_s
        return age is None or age > FRESH_S

    def sync(self) -> int:
        """Bring the mirror up to the server's change feed, and keep the repositories the user's
        organisations switched off where the hook path looks (orgswitch.py); the number of changes
        applied."""
        applied = 0
        for _ in range(MAX_PAGES):
            page = self.client.get(f"/v1/memories/changes?{urlencode({'since': self.mirror.cursor})}")
            assert isinstance(page, dict)
            written = [(str(m["space"]), Memory.from_dict(m["memory"])) for m in page["memories"]]
            gone = [(str(g["space"]), str(g["scope"]), str(g["key"])) for g in page["gone"]]
            switches = [
                orgswitch.OrgSwitch(
                    str(s["org"]), str(s["scope"]), str(s["by"]), str(s["at"]), self.remote.endpoint.url, time.time()
                )
                for s in page.get("switched_off", [])  # a server older than the switches sends none
            ]
            self.mirror.apply(
                written,
                gone,
                int(page["cursor"]),
                list(page["spaces"]),
                dict(page["shared"]),
                [s.scope for s in switches],
            )
            orgswitch.save(orgswitch.path_for(self.mirror.path), switches)
            applied += len(written) + len(gone)
            if not page["more"]:
                break
        return applied

    def send(self, change: Change) -> dict[str, object]:
        """Send a change just queued, after the changes queued before it, and return the server's
        answer. A change never overtakes an older one: the older would land last and its value win.
        An older one the server refuses is set aside as `flush` does; one it does not answer stops
        here (raised), and `change` waits behind it."""
        older = [c for c in self.outbox.waiting() if c.name < change.name]
        for group in batches(older):
            self._settle_group(group)
        return self._deliver(change)

    def flush(self) -> Flushed:
        """Send what the outbox holds, oldest first, writes in batches. A refusal sets the change aside
        (waiting would not help); a server that does not answer stops the flush, the rest waits for the
        next one."""
        report = Flushed()
        for group in batches(self.outbox.waiting()):
            try:
                settled = self._settle_group(group)
            except (errors.Unavailable, errors.Busy) as exc:
                report.waiting = len(self.outbox.waiting())
                report.held = exc.sentence()
                break
            report.sent += settled.count(None)
            report.rejected += [refusal for refusal in settled if refusal is not None]
        return report

    def _settle_group(self, group: list[Change]) -> list[str | None]:
        """Settle the changes of one batch (or one change alone), in order: per change, None when the
        server took it, its sentence when it refused it. A server that does not answer, or refuses the
        token, is raised: the changes not settled wait."""
        if len(group) == 1 or self.client.lacks(BATCH_PATH):
            return [self._settle(change) for change in group]
        body = {"writes": [{"write": c.body, "idempotency_key": c.key} for c in group]}
        try:
            answer = self.client.post(BATCH_PATH, body, replayable=True)
        except (errors.Unavailable, errors.Busy):
            raise
        except errors.HiveloreError as exc:
            if isinstance(exc, Refused) and exc.about_token:  # a new login lets the changes through
                raise Held(f"the team server refused the token ({exc.sentence().rstrip('.')})", LOGIN) from None
            if isinstance(exc, errors.NotFound) or isinstance(exc, Refused) and exc.status in NO_ROUTE:
                self.client.missing(BATCH_PATH)  # a server older than the batch route
            return [self._settle(change) for change in group]
        assert isinstance(answer, dict)
        return [self._settled(change, result) for change, result in zip(group, answer["results"], strict=True)]

    def _settled(self, change: Change, result: dict[str, object]) -> str | None:
        """One write of a batch as the server answered it."""
        status, answer = result["status"], result.get("answer")
        assert isinstance(status, int)
        if status != 200:
            refusal = error_of(status, result)
            if isinstance(refusal, errors.Unavailable | errors.Busy):  # it waits, with those after it
                raise refusal
            return self._set_aside(change, refusal)
        assert isinstance(answer, dict)
        self._apply(change, answer)
        return None

    def _settle(self, change: Change) -> str | None:
        """Send a waiting change: None when the server took it; its sentence when it refused it (the
        change is set aside, never sent again). A server that does not answer, or refuses the token
        rather than the change, is raised: it waits."""
        try:
            self._deliver(change)
        except (errors.Unavailable, errors.Busy):
            raise
        except Refused as exc:
            if exc.about_token:  # a new login lets the change through
                raise Held(f"the team server refused the token ({exc.sentence().rstrip('.')})", LOGIN) from None
            return self._set_aside(change, exc)
        except errors.HiveloreError as exc:
            return self._set_aside(change, exc)
        return None

    def _set_aside(self, change: Change, exc: errors.HiveloreError) -> str:
        self.outbox.reject(change, exc.sentence())
        if change.op == teamshare.TEAM:  # the mirror holds memories only
            return exc.sentence()
        self.mirror.drop_pending(str(change.body["scope"]), str(change.body["key"]))
        self.mirror.resync()  # what the refused change replaced here comes back from the server
        return exc.sentence()

    def _deliver(self, change: Change) -> dict[str, object]:
        """Send one change (with its idempotency key) and put the server's answer in the mirror."""
        if change.op == teamshare.TEAM:
            delivered = teamshare.deliver(self.client, change)
            self.outbox.done(change)
            return delivered
        answer = self.client.post(PATHS[change.op], change.body, idempotency_key=change.key)
        assert isinstance(answer, dict)
        self._apply(change, answer)
        return answer

    def _apply(self, change: Change, answer: dict[str, object]) -> None:
        """The server took `change` and answered `answer`: the mirror holds what it holds now, and the
        outbox no longer the change."""
        scope, key = str(change.body["scope"]), str(change.body["key"])
        self.mirror.drop_pending(scope, key)
        if change.op == "forget":
            self.mirror.remove(str(answer["space"]), scope, key)
        else:
            memory = answer["memory"]
            assert isinstance(memory, dict)
            self.mirror.put(str(answer["space"]), Memory.from_dict(memory), pending=False)
        self.outbox.done(change)


def batches(changes: list[Change]) -> list[list[Change]]:
    """`changes` in order, cut into what goes in one request each: runs of writes, at most BATCH of
    them and BATCH_BYTES of JSON; every other change alone."""
    found: list[list[Change]] = []
    size = 0
    for change in changes:
        length = len(json.dumps(change.body)) + 64  # the envelope: its key and the field names
        last = found[-1] if found else None
        fits = last is not None and last[0].op == "write" and len(last) < BATCH and size + length <= BATCH_BYTES
        if change.op == "write" and fits:
            assert last is not None
            last.append(change)
            size += length
        else:
            found.append([change])
            size = length
    return found


def refresh_mirrors(
    home: str, budget_s: float, clients: dict[str, Client] | None = None, memories: bool = True, claims: bool = True
) -> list[str]:
    """Flush the outbox, sync the mirror (if `memories`) and refresh the replica of the team's claims
    and failures (if `claims`, remote/teamshare.py; the hook server keeps that one with `watch_team`
    instead) of every team server this home follows, with the token `hivelore remote login` kept for
    it; what went wrong, one sentence each. `clients`, per server, is kept by the caller across
    rounds: each round reuses the client (and its connection) the last one left there."""
    problems: list[str] = []
    for url, token, name in _followed(home):
        if not token:
            problems.append(_no_token(url or name))
            continue
        kept = clients.get(url) if clients is not None else None
        replica = Replica(home, _remote(url, token), budget_s, kept)
        if clients is not None and replica.owns_client:  # a new login: the old client is done with
            if kept is not None:
                kept.close()
            clients[url], replica.owns_client = replica.client, False
        try:
            problems += _refresh(replica, memories, claims)
        finally:
            replica.close()
    return problems


@dataclass
class Watch:
    """The hook server's long-lived request for one team server's shared team: its own client (a
    request may wait `wait_s` for a change, and must not hold up the outbox's) and the ETag of what
    the replica holds."""

    client: Client
    etag: str | None = None


def watch_team(home: str, budget_s: float, wait_s: float, watches: dict[str, Watch]) -> list[str]:
    """One round of keeping the replica of the team's claims and failures of every team server this
    home follows: each request answered as soon as something changed there, or after `wait_s` (split
    between the servers); what went wrong, one sentence each. `watches`, per server, is kept by the
    caller across rounds."""
    from hivelore.remote.client import Endpoint

    problems: list[str] = []
    followed = [(url, token, name) for url, token, name in _followed(home) if url and token]
    for url, token, name in followed:
        watch = watches.get(url)
        if watch is None or watch.client.token != token:  # first round, or a new login
            if watch is not None:
                watch.client.close()
            watch = watches[url] = Watch(Client(Endpoint(url), token, timeout_s=wait_s + budget_s))
        watch.client.retry_budget_s = budget_s
        try:
            path = os.path.join(home, "remote", name)
            with Mirror.open(path) as mirror:
                repos = teamshare.shared_repos(mirror.shared)
            replica = teamshare.TeamReplica.beside(path)
            found, watch.etag = teamshare.refresh_team(watch.client, replica, repos, watch.etag, wait_s / len(followed))
            problems += found
        except errors.HiveloreError as exc:
            watch.etag = None
            problems.append(exc.sentence())
    return problems


def _followed(home: str) -> list[tuple[str, str | None, str]]:
    """(server, the token kept for it, its mirror's file name) of each team server this home follows."""
    from hivelore.remote.client import Endpoint
    from hivelore.remote.credentials import kept_token

    folder = os.path.join(home, "remote")
    names = sorted(n for n in os.listdir(folder) if n.endswith(".db")) if os.path.isdir(folder) else []
    found = []
    for name in names:
        with Mirror.open(os.path.join(folder, name)) as mirror:
            url = mirror.meta("endpoint")
        found.append((url or "", kept_token(home, Endpoint(url)) if url else None, name))
    return found


def _no_token(server: str) -> str:
    # hooks never read HIVELORE_TOKEN: only the commands that have it sync this mirror
    return (
        f"{server}: no token kept for it (HIVELORE_TOKEN is not passed to hooks), so only commands"
        " sync it: run `hivelore remote login` to let the hook server keep it fresh"
    )


def _remote(url: str, token: str) -> Remote:
    from hivelore.remote.client import Endpoint

    return Remote(Endpoint(url), "mirror", token, "credentials", True)


def _refresh(replica: Replica, memories: bool, claims: bool) -> list[str]:
    try:
        flushed = replica.flush()
        if flushed.held:  # a sync would stop on the same refusal, or wait on the same silence
            return [*flushed.rejected, flushed.held]
        if memories:
            replica.sync()
        if not claims:
            return flushed.rejected
        kept = teamshare.TeamReplica.beside(replica.mirror.path)
        shared = teamshare.shared_repos(replica.mirror.shared)
        return flushed.rejected + teamshare.refresh_team(replica.client, kept, shared)[0]
    except errors.HiveloreError as exc:
        return [exc.sentence()]
