"""`RemoteTier`: the team server's memories as a tier beside the local ones (memory/tier.py).

Reads come from the mirror, so they never wait on the network. A write is a change for the server:
kept in the outbox first, shown in the mirror as pending, then sent at once when the tier is
`online` (a command) — the server's answer, which ran the same rules again, replaces the pending
copy. When the server does not answer, or the tier is not online (a hook), the change waits in the
outbox and the warning says so; nothing is lost. A change the server refuses is an error, as a
refusal of the local tier would be.

Parts are the spaces the user reads (`org:NAME`, `personal`); `AUTO` lets the server choose from the
scope's sharing, as it does for any write.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from hivelore import errors
from hivelore.memory.model import Memory, epoch_from_iso
from hivelore.memory.scope import Level, Scope
from hivelore.memory.tier import Build, Candidate, Merge, Survey, Tier
from hivelore.remote.mirror import COLUMNS, VISIBLE, origin_of
from hivelore.remote.outbox import Change
from hivelore.remote.replica import Replica

AUTO = "server"
PERSONAL = "personal"
NO_BATCH = "an import goes to this machine's tiers: use --tier home or project, or `hivelore migrate --to remote`"
PROVENANCE_KEYS = ("agent", "session", "repo", "branch", "commit")
# A mirror read without asking the server (a hook) is said to be stale past this: five of the hook
# server's sync rounds (hooks/server.py MIRROR_SYNC_S) missed in a row.
STALE_S = 10.0


class RemoteTier(Tier):
    def __init__(self, replica: Replica, warnings: list[str], online: bool) -> None:
        self.replica, self.mirror, self.warnings, self.online = replica, replica.mirror, warnings, online
        spaces = self.mirror.spaces or [PERSONAL]
        self.parts = {space: origin_of(space) for space in spaces}
        if not online:
            self._tell_staleness()

    def _tell_staleness(self) -> None:
        """A read that does not ask the server (a hook) answers from the mirror as it is; when that
        is older than STALE_S, the warning says so (a hook's warnings go to its log)."""
        age = self.replica.age_s
        if age is not None and age <= STALE_S:
            return
        since = "has never been synced" if age is None else f"was last synced {age:.0f} s ago"
        self._warn(
            f"answered from the team server's mirror, which {since}, without waiting on the server"
            " (`hivelore remote status` says why it is not synced)"
        )

    # -- where a write goes ----------------------------------------------------------------------

    def sharing(self, scope: Scope) -> str | None:
        """The organisation space that shares `scope` (or, for a branch, its repository), if any."""
        return sharing_space(scope, self.mirror.shared)

    # -- reads -----------------------------------------------------------------------------------

    def _in(self, scopes: Sequence[str], prefix: str = "s") -> tuple[str, dict[str, object]]:
        params: dict[str, object] = {f"{prefix}{n}": scope for n, scope in enumerate(scopes)}
        return ", ".join(f":{name}" for name in params) or "''", params

    def copies(self, scopes: Sequence[str], keys: set[str]) -> list[Candidate]:
        scope_marks, params = self._in(scopes)
        key_marks, keyed = self._in(sorted(keys), "k")
        sql = f"SELECT {COLUMNS} FROM memories m WHERE m.scope IN ({scope_marks}) AND m.key IN ({key_marks})"
        return self.mirror.rows(sql, {**params, **keyed})

    def listed(self, scopes: Sequence[str], include_hidden: bool = False) -> list[Candidate]:
        marks, params = self._in(scopes)
        visible = "1" if include_hidden else VISIBLE
        return self.mirror.rows(f"SELECT {COLUMNS} FROM memories m WHERE m.scope IN ({marks}) AND {visible}", params)

    def match(self, scopes: Sequence[str], words: Sequence[str], limit: int) -> list[tuple[Candidate, float]]:
        return self.mirror.matching(scopes, words, limit)

    def survey(self, scopes: Sequence[str], per_scope: int) -> Survey:
        found: dict[tuple[str, str], Candidate] = {}
        for scope in scopes:
            for order in ("m.updated_ts DESC", "m.seen_count DESC"):
                sql = f"SELECT {COLUMNS} FROM memories m WHERE m.scope = :scope AND {VISIBLE} ORDER BY {order} LIMIT :n"
                for candidate in self.mirror.rows(sql, {"scope": scope, "n": per_scope}):
                    found[(candidate.origin, candidate.place)] = candidate
        marks, params = self._in(scopes)
        row = self.mirror.conn.execute(  # counted in SQL: a session start must not decode the whole mirror
            f"SELECT count(*) - count(DISTINCT m.key) FROM memories m WHERE m.scope IN ({marks}) AND {VISIBLE}",
            {"now": time.time(), **params},
        ).fetchone()
        return Survey(self.counts(scopes), list(found.values()), int(row[0]) if row else 0)

    def rivals(self, scopes: Sequence[str], of: Sequence[Candidate]) -> list[Candidate]:
        have = {(c.origin, c.place) for c in of}
        found = [c for c in self.copies(scopes, {c.key for c in of}) if c.memory.is_visible()]
        return [c for c in found if (c.origin, c.place) not in have]

    def fresh(self, candidate: Candidate) -> Candidate | None:
        space = candidate.origin.removeprefix("team:")
        sql = f"SELECT {COLUMNS} FROM memories m WHERE m.space = :space AND m.scope = :scope AND m.key = :key"
        found = self.mirror.rows(
            f"{sql} AND {VISIBLE}", {"space": space, "scope": candidate.scope, "key": candidate.key}
        )
        return found[0] if found else None

    def counts(self, scopes: Sequence[str]) -> dict[str, int]:
        marks, params = self._in(scopes)
        rows = self.mirror.conn.execute(
            f"SELECT m.scope, count(*) FROM memories m WHERE m.scope IN ({marks}) AND {VISIBLE} GROUP BY m.scope",
            {"now": time.time(), **params},
        ).fetchall()
        return {scope: int(n) for scope, n in rows}

    def generation(self) -> int:
        return self.mirror.generation()

    def scopes(self) -> set[str]:
        return {scope for (scope,) in self.mirror.conn.execute("SELECT DISTINCT scope FROM memories")}

    def everything(self, include_hidden: bool = False) -> Iterator[Memory]:
        return self.mirror.everything(include_hidden)

    # -- writes: changes for the server ----------------------------------------------------------

    def store(
        self, part: str, scope: Scope, key: str, build: Build, prefer: Candidate | None = None
    ) -> tuple[Path, Memory | None, Memory | None]:
        space = part if part != AUTO else (self.sharing(scope) or PERSONAL)
        here = [c for c in self.copies([str(scope)], {key}) if c.origin == origin_of(space)]
        existing = here[0].memory if here else None
        after = build(existing)
        if after is None:
            return Path(origin_of(space), f"{scope}/{key}"), existing, None
        op, body = _change(existing, after, None if part == AUTO else part)
        answer = self._queue(space, after, op, body)
        landed = str(answer["space"]) if answer is not None else space
        if op == "write" and not after.is_visible():
            # The server's write makes a memory visible: one kept hidden (archived, or already
            # expired) is archived next, in the space the write landed in.
            address: dict[str, object] = {"scope": str(scope), "key": key, "space": landed}
            answer = self._queue(landed, after, "archive", address)
        if answer is None:
            return Path(origin_of(landed), f"{scope}/{key}"), existing, after
        stored = Memory.from_dict(answer["memory"])  # type: ignore[arg-type]
        self.parts.setdefault(landed, origin_of(landed))  # a space the mirror had not heard of yet
        return Path(origin_of(landed), f"{scope}/{key}"), existing, stored

    def _queue(self, space: str, after: Memory, op: str, body: dict[str, object]) -> dict[str, object] | None:
        """Keep a change in the outbox, show `after` in the mirror as pending, and send it (`_send`)."""
        change = self.replica.outbox.add(op, body)
        self.mirror.put(space, after, pending=True)
        return self._send(change)

    def delete(self, candidate: Candidate, still: Callable[[Memory], bool]) -> bool:
        space = candidate.origin.removeprefix("team:")
        sql = f"SELECT {COLUMNS} FROM memories m WHERE m.space = :space AND m.scope = :scope AND m.key = :key"
        now = self.mirror.rows(sql, {"space": space, "scope": candidate.scope, "key": candidate.key})
        if not now or not still(now[0].memory):
            return False
        body: dict[str, object] = {"scope": candidate.scope, "key": candidate.key, "space": space}
        change = self.replica.outbox.add("forget", body)
        self.mirror.remove(space, candidate.scope, candidate.key)
        try:
            self._send(change)
        except errors.NotFound:  # gone from the server already, which the mirror had not heard yet
            return False
        return True

    def _send(self, change: Change) -> dict[str, object] | None:
        """The server's answer to a change just queued; None when it waits in the outbox (said in a
        warning). A refusal is raised, and the change is not sent again."""
        waiting = "the change waits in the outbox and is sent when the server answers (see `hivelore remote status`)"
        if not self.online:
            self._warn(f"the team server was not asked (a hook never waits on it): {waiting}")
            return None
        try:
            return self.replica.send(change)
        except (errors.Unavailable, errors.Busy) as exc:
            self._warn(f"{exc.sentence().rstrip('.')}: {waiting}")
            return None
        except errors.HiveloreError:
            self.replica.outbox.done(change)
            self.mirror.drop_pending(str(change.body["scope"]), str(change.body["key"]))
            self.mirror.resync()
            raise

    def _warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    def unwritable(self, part: str, memories: Sequence[Memory]) -> dict[str, ValueError]:
        """Every address: the team server takes no batch from a tier. A batch's `merge` runs where the
        memories are kept, and the server's import runs its own (it keeps `created`, derives `updated`
        and `seen_count`), so an import to the server is `migrate --to remote`'s. Said here, the
        service's import refuses the records before it writes anything, on this machine too."""
        return {memory.address: ValueError(NO_BATCH) for memory in memories}

    def store_batch(self, part: str, memories: Sequence[Memory], merge: Merge) -> tuple[list[str], list[str]]:
        raise errors.BadInput(NO_BATCH)

    def close(self) -> None:
        self.replica.close()


def sharing_space(scope: Scope, shared: dict[str, list[str]]) -> str | None:
    """Of `shared` (per organisation space, its scopes, as the mirror holds them), the space that
    shares `scope` or, for a branch, its repository; None when none does."""
    names = {str(scope)}
    if scope.level is Level.BRANCH:
        names.add("repo::" + str(scope).split("::")[1])
    return next((space for space, scopes in shared.items() if names & set(scopes)), None)


def _change(existing: Memory | None, after: Memory, space: str | None) -> tuple[str, dict[str, object]]:
    """The request that makes the server hold `after` where it held `existing`."""
    address: dict[str, object] = {"scope": str(after.scope), "key": after.key}
    if space is not None:
        address["space"] = space
    if existing is not None and existing.value == after.value:
        if after.archived_at and not existing.archived_at:
            return "archive", address
        if existing.archived_at and not after.archived_at or existing.is_expired() and not after.is_expired():
            return "restore", address
    ttl_days = None
    if after.expires_at:
        ttl_days = max((epoch_from_iso(after.expires_at) - time.time()) / 86400, 0.001)
    provenance = {k: v for k, v in after.provenance.items() if k in PROVENANCE_KEYS}
    return "write", {
        **address,
        "value": after.value,
        "tags": list(after.tags),
        "kind": after.kind,
        "state": after.state,
        "ttl_days": ttl_days,
        "provenance": provenance,
        "when": after.when,
        "cites": dict(after.cites),
    }
