"""What this machine shares of the team model with the team server in remote mode: the team's
changes, queued in the outbox (remote/outbox.py) as changes of the kind `team`, and the replica of
the team's active claims that the pre-edit check reads. Neither waits on the network: a hook queues
and reads files; the resident hook server sends and refreshes them in the background.

A queued change names the session (agent, session id, developer, repository, the task's title), not
a task id: the task's id on this machine's team.db is not the server's. Sent, it is the session's task
on the server (`POST /v1/team/sessions`, made on the first call) and then the change on it, each
request with an idempotency key of its own taken from the change's, at the time the hook saw it: a
change replayed after a lost answer is applied once, and a claim queued while the server was away
happened when it was made.

The replica is two JSON files beside the mirror, both from one answer of `GET /v1/team/replica`:
`HIVELORE_HOME/remote/<server>.claims.json`, per repository the server's active claims, whose
modification time is when the server last answered (or said nothing changed); and
`<server>.failures.json`, per repository its failed attempts of the last 30 days (the latest 200),
each with its task's title and the passing attempt that resolved it. The hook server asks with the
ETag of what it holds and the server holds the request until something changes (a long poll,
`watch_team` in remote/replica.py). The repositories are those the mirror says an organisation of
the user shares (`repo::OWNER/NAME`).

Standard library only: the hook path imports it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from hivelore import atomicfile, errors
from hivelore.home import FILE_MODE
from hivelore.remote.client import Client
from hivelore.remote.outbox import Change, Outbox
from hivelore.team import wire
from hivelore.team.model import Intent, SharedFailure
from hivelore.team.testruns import TestRun

TEAM = "team"  # the outbox's change kind
KINDS = ("claim", "change", "attempt", "progress")
REPO_SCOPE = "repo::"

Claims = list[tuple[str, Intent, str]]  # (symbol, intent, developer), as TeamStore.active_claims


@dataclass(frozen=True)
class Session:
    """Who a queued change is by: the session and its task as this machine knows them."""

    agent: str
    session_id: str
    developer: str
    repo: str
    title: str


def queue(outbox: Outbox, session: Session, kind: str, **fields: object) -> Change:
    """Keep a team change in the outbox (on disk, synced) for the hook server to send."""
    if kind not in KINDS:
        raise ValueError(f"{kind!r} is not a team change: give one of {', '.join(KINDS)}.")
    body: dict[str, object] = {
        "kind": kind,
        "agent": session.agent,
        "session_id": session.session_id,
        "developer": session.developer,
        "repo": session.repo,
        "title": session.title,
        "at": time.time(),
        **fields,
    }
    return outbox.add(TEAM, body)


@dataclass(frozen=True)
class SharedTeam:
    """One repository's team on the team server, as a hook sees it: the outbox its changes wait in
    and the replica of its active claims and recent failures."""

    outbox: Outbox
    claims: ClaimsReplica
    failures: FailuresReplica
    repo: str

    @classmethod
    def of(
        cls, outbox: Outbox, mirror_path: str, shared: dict[str, list[str]], synced: float, repo: str
    ) -> SharedTeam | None:
        """The repository's shared team, or None when no organisation of the user shares it (a
        mirror never synced yet does not know: its changes are queued, the server decides)."""
        if synced and repo not in shared_repos(shared):
            return None
        return cls(outbox, ClaimsReplica.beside(mirror_path), FailuresReplica.beside(mirror_path), repo)

    def queue(self, session: Session, kind: str, **fields: object) -> Change:
        return queue(self.outbox, session, kind, **fields)

    def others_claims(self, developer: str) -> tuple[Claims, float | None]:
        """The replica's claims of tasks other developers own, and when the server answered them."""
        claims, synced = self.claims.read(self.repo)
        return [c for c in claims if c[2] != developer], synced

    def others_failures(self, developer: str) -> list[SharedFailure]:
        """The replica's recent failed attempts of other developers, latest first."""
        return [f for f in self.failures.read(self.repo) if f.attempt.developer != developer]


def deliver(client: Client, change: Change) -> dict[str, object]:
    """Send one queued team change: the session's task, then the change on it. The server's answer:
    the task's id there."""
    from hivelore.remote.team import RemoteTeam

    body = change.body
    team = RemoteTeam(client, clock=lambda: float(str(body["at"])), idempotency_key=change.key)
    developer = str(body["developer"])
    intent = team.intent_for_session(
        str(body["agent"]), str(body["session_id"]), developer, str(body["repo"]), str(body["title"])
    )
    kind = body["kind"]
    if kind == "claim":
        team.claim(intent.id, _strings(body["symbols"]))
    elif kind == "change":
        team.record_change(intent.id, _strings(body["symbols"]))
    elif kind == "attempt":
        run = body["run"]
        assert isinstance(run, dict)
        failed, errors_ = _strings(run.get("failed", [])), _strings(run.get("errors", []))
        test_run = TestRun(
            str(run["runner"]), str(run["outcome"]), failed, errors_, run.get("passed"), run.get("skipped")
        )
        team.record_attempt(intent.id, str(body["command"]), test_run)
    elif kind == "progress":
        team.note(intent.id, str(body["text"]), "progress", developer)
    else:
        raise errors.BadInput(f"a queued team change of the unknown kind {kind!r}: it was set aside.")
    return {"intent": intent.id}


def describe(change: Change) -> str:
    """How `hivelore remote status` names a queued team change."""
    return f"team {change.body.get('kind')} {change.body.get('repo')} ({change.body.get('agent')})"


def _strings(value: object) -> tuple[str, ...]:
    return tuple(str(item) for item in value) if isinstance(value, list | tuple) else ()


def shared_repos(shared: dict[str, list[str]]) -> list[str]:
    """The repositories (`OWNER/NAME`) whose team the user's organisations share, by the mirror."""
    found = {s.removeprefix(REPO_SCOPE) for scopes in shared.values() for s in scopes if s.startswith(REPO_SCOPE)}
    return sorted(found)


class ClaimsReplica:
    """The file of the team's active claims per repository, as the server last answered; the file's
    modification time is when it answered. An answer that changed nothing only touches the file: the
    hook server asks twice a second, and a claim is rarer than that."""

    def __init__(self, path: str) -> None:
        self.path = path

    @classmethod
    def beside(cls, mirror_path: str) -> ClaimsReplica:
        return cls(mirror_path.removesuffix(".db") + ".claims.json")

    def _load(self) -> tuple[bytes, float | None]:
        try:
            with open(self.path, "rb") as handle:
                return handle.read(), os.fstat(handle.fileno()).st_mtime
        except OSError:
            return b"", None  # none yet: the hook server has not answered

    def read(self, repo: str) -> tuple[Claims, float | None]:
        """The repository's active claims and when the server answered them (None: never)."""
        data, synced = self._load()
        try:
            found = json.loads(data).get(repo) if data else None
        except ValueError:
            return [], None  # unreadable: the next refresh writes it whole
        if not isinstance(found, list):
            return [], None
        return [(str(c["symbol"]), wire.intent(c["intent"]), str(c["developer"])) for c in found], synced

    def write(self, answers: dict[str, Claims], synced: float) -> None:
        """The repositories' claims as the server answered them at `synced`; the others are dropped."""
        data = {
            repo: [{"symbol": s, "intent": wire.encode(i), "developer": d} for s, i, d in claims]
            for repo, claims in answers.items()
        }
        encoded = json.dumps(data, ensure_ascii=False, sort_keys=True).encode()
        if self._load()[0] != encoded:
            atomicfile.replace(self.path, encoded, permissions=FILE_MODE)
        os.utime(self.path, (synced, synced))


class FailuresReplica:
    """The file of the team's recent failed attempts per repository (with what resolved them), as the
    server last answered: what a pre-edit check and a failing test run hear of a teammate's failure."""

    def __init__(self, path: str) -> None:
        self.path = path

    @classmethod
    def beside(cls, mirror_path: str) -> FailuresReplica:
        return cls(mirror_path.removesuffix(".db") + ".failures.json")

    def read(self, repo: str) -> list[SharedFailure]:
        """The repository's failed attempts, latest first ([] when none were kept)."""
        try:
            with open(self.path, "rb") as handle:
                found = json.loads(handle.read()).get(repo)
            return [wire.shared_failure(f) for f in found] if isinstance(found, list) else []
        except (OSError, ValueError, KeyError, TypeError):
            return []  # none yet, or unreadable: the next answer writes it whole

    def write(self, answers: dict[str, list]) -> None:
        """The repositories' failures as the server answered them (JSON-ready); the others are dropped."""
        encoded = json.dumps(answers, ensure_ascii=False, sort_keys=True).encode()
        try:
            with open(self.path, "rb") as handle:
                if handle.read() == encoded:
                    return
        except OSError:
            pass
        atomicfile.replace(self.path, encoded, permissions=FILE_MODE)


@dataclass(frozen=True)
class TeamReplica:
    """What the hook server keeps of the shared repositories' team beside a mirror: their claims and
    their recent failures, refreshed together by one request."""

    claims: ClaimsReplica
    failures: FailuresReplica

    @classmethod
    def beside(cls, mirror_path: str) -> TeamReplica:
        return cls(ClaimsReplica.beside(mirror_path), FailuresReplica.beside(mirror_path))


def refresh_team(
    client: Client, replica: TeamReplica, repos: Sequence[str], etag: str | None = None, wait_s: float = 0.0
) -> tuple[list[str], str | None]:
    """Ask the server for the repositories' claims and recent failures (`GET /v1/team/replica`, one
    request) and keep them; what went wrong (one sentence each) and the answer's ETag. With the ETag
    of what the replica holds, the server answers as soon as something changed, else after `wait_s`
    with nothing (304): the replica is then as fresh as that answer."""
    if not repos:
        replica.claims.write({}, time.time())
        replica.failures.write({})
        return [], None
    path = "/v1/team/replica?" + urlencode([*(("repo", r) for r in repos), ("wait", wait_s), ("at", time.time())])
    try:
        answer, etag = client.get_if_changed(path, etag if wait_s > 0 or etag else None)
    except errors.Unavailable:
        raise
    except (errors.HiveloreError, ValueError) as exc:  # the one repository asked is refused
        replica.claims.write({}, time.time())
        replica.failures.write({})
        return [f"the team's claims in {repos[0]}: {exc}"], None
    if answer is None:  # not modified: the replica is as fresh as this answer
        try:
            os.utime(replica.claims.path, None)
        except OSError:
            return [], None  # the file went: the next request, without an ETag, writes it whole
        return [], etag
    assert isinstance(answer, dict)
    refused = dict(answer.get("refused", {}))
    claims: dict[str, Claims] = {repo: [] for repo in repos if repo not in refused}
    for c in answer["claims"]:
        found = wire.intent(c["intent"])
        claims.setdefault(found.repo, []).append((str(c["symbol"]), found, str(c["developer"])))
    replica.failures.write({repo: f for repo, f in dict(answer["failures"]).items() if repo in claims})
    replica.claims.write(claims, time.time())
    return [f"the team's claims in {repo}: {why}" for repo, why in sorted(refused.items())], etag
