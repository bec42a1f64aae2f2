"""This machine's copy of what the team server holds for the user: `HIVELORE_HOME/remote/<server>.db`.

Every read in remote mode reads here, so no read — a hook's least of all — waits on the network.
The mirror follows the server's change feed (`GET /v1/memories/changes`, see remote/replica.py) and
holds, per memory, the record the server sent and the space it is in (`org:NAME`, `personal`). A
write the outbox still holds appears here as `pending` until the server's answer replaces it.

The file is derived: when it cannot be used, it is deleted and filled again from the server.
Searches rank with SQLite FTS5 over the same columns, tokenizer and weights as the local index.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator, Sequence

from hivelore import orgswitch, sqlitedb
from hivelore.errors import Busy, Unavailable
from hivelore.memory.local.index import fts_query
from hivelore.memory.model import Memory, epoch_from_iso
from hivelore.memory.tier import Candidate

SCHEMA_VERSION = "1"
BUSY_TIMEOUT = 10.0
OR_WORDS = 4  # an any-word search looks for the rarest four words of a longer query, as the local index
SHORTLIST_FACTOR = 8
_BM25 = "bm25(memories_fts, 3.0, 1.0, 2.0)"  # the local index's weights: key, value, tags
VISIBLE = "m.archived = 0 AND (m.expires_ts IS NULL OR m.expires_ts > :now)"
COLUMNS = "m.space, m.scope, m.key, m.record"

_TABLES = (
    "CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE memories (
        id INTEGER PRIMARY KEY,
        space TEXT NOT NULL,
        scope TEXT NOT NULL,
        key TEXT NOT NULL,
        updated_ts REAL NOT NULL,
        seen_count INTEGER NOT NULL,
        expires_ts REAL,
        archived INTEGER NOT NULL,
        record TEXT NOT NULL,
        pending INTEGER NOT NULL DEFAULT 0,
        UNIQUE (space, scope, key)
    )""",
    "CREATE INDEX memories_scope ON memories (scope, key)",
    "CREATE INDEX memories_recent ON memories (scope, updated_ts)",
    "CREATE INDEX memories_seen ON memories (scope, seen_count)",
    """CREATE VIRTUAL TABLE memories_fts USING fts5(
        key, value, tags, tokenize = "unicode61 remove_diacritics 2", prefix = '3 4'
    )""",
    "INSERT INTO meta VALUES ('cursor', '0'), ('generation', '0'), ('synced', '0'), ('spaces', '[]'),"
    " ('shared', '{}'), ('token', ''), ('endpoint', '')",
)


class MirrorUnavailable(Unavailable):
    """The mirror cannot be used; it is derived, so it is made again from the server."""


class MirrorBusy(MirrorUnavailable, Busy):
    """Another hivelore process held the mirror's write lock for the whole busy timeout."""


_SCHEMA = sqlitedb.Schema(
    "schema", SCHEMA_VERSION, _TABLES, "a hivelore team mirror", MirrorUnavailable, MirrorBusy,
    "; it is deleted and filled again from the team server",
)  # fmt: skip


def origin_of(space: str) -> str:
    """The origin (memory/tier.py) of a space's copies: what precedence and messages name."""
    return f"team:{space}"


class Mirror(sqlitedb.Store):
    @classmethod
    def open(cls, path: str) -> Mirror:
        """Open the mirror, making a new one when the file cannot be used."""
        try:
            return cls(sqlitedb.connect(path, _SCHEMA, BUSY_TIMEOUT), path)
        except MirrorBusy:
            raise
        except MirrorUnavailable:
            sqlitedb.remove_database(path)
            return cls(sqlitedb.connect(path, _SCHEMA, BUSY_TIMEOUT), path)

    # -- what the server said last ---------------------------------------------------------------

    def meta(self, name: str) -> str:
        row = self.conn.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        return str(row[0]) if row else ""

    def _set(self, name: str, value: object) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (name, str(value)))

    @property
    def cursor(self) -> int:
        return int(self.meta("cursor") or 0)

    @property
    def synced(self) -> float:
        """When the server last answered a sync (seconds since the epoch; 0: never)."""
        return float(self.meta("synced") or 0)

    @property
    def spaces(self) -> list[str]:
        """The spaces the user reads (`org:NAME`, `personal`), the organisations' first."""
        return list(json.loads(self.meta("spaces") or "[]"))

    @property
    def shared(self) -> dict[str, list[str]]:
        """Per organisation space, the scopes it shares."""
        return dict(json.loads(self.meta("shared") or "{}"))

    def generation(self) -> int:
        return int(self.meta("generation") or 0)

    # -- changes ---------------------------------------------------------------------------------

    def bind(self, endpoint_url: str, token_digest: str) -> None:
        """Note the server and the token this mirror follows, forgetting everything when another
        user's token is in use (their spaces are not these)."""
        if self.meta("token") == token_digest and self.meta("endpoint") == endpoint_url:
            return
        with sqlitedb.Immediate(self.conn):
            if self.meta("token") != token_digest:
                orgswitch.save(orgswitch.path_for(self.path), [])  # the other user's organisations' switches
                self.conn.execute("DELETE FROM memories")
                self.conn.execute("DELETE FROM memories_fts")
                for name, value in (("cursor", 0), ("synced", 0), ("spaces", "[]"), ("shared", "{}")):
                    self._set(name, value)
                self._bump()
            self._set("token", token_digest)
            self._set("endpoint", endpoint_url)

    def apply(
        self,
        written: Iterable[tuple[str, Memory]],
        gone: Iterable[tuple[str, str, str]],
        cursor: int,
        spaces: Sequence[str],
        shared: dict[str, list[str]],
        switched_off: Sequence[str] = (),
    ) -> None:
        """One page of the change feed, in one transaction: rows written, rows deleted, the cursor, and
        the spaces the user reads now (anything in another space is dropped), and the repositories
        switched off for the user (their rows here, and their branches', are dropped: the server sends
        them again when the switch is turned back on)."""
        with sqlitedb.Immediate(self.conn):
            for space, memory in written:
                self._put(space, memory, pending=False)
            for space, scope, key in gone:
                self._remove(space, scope, key)
            for repo in switched_off:
                branches = f"branch::{repo.removeprefix('repo::')}::"
                covered = "scope = ? OR substr(scope, 1, ?) = ?"
                params = (repo, len(branches), branches)
                self.conn.execute(
                    f"DELETE FROM memories_fts WHERE rowid IN (SELECT id FROM memories WHERE {covered})", params
                )
                self.conn.execute(f"DELETE FROM memories WHERE {covered}", params)
            marks = ", ".join("?" for _ in spaces) or "''"
            for (row_id,) in self.conn.execute(f"SELECT id FROM memories WHERE space NOT IN ({marks})", list(spaces)):
                self.conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (row_id,))
            self.conn.execute(f"DELETE FROM memories WHERE space NOT IN ({marks})", list(spaces))
            self._set("cursor", cursor)
            self._set("synced", time.time())
            self._set("spaces", json.dumps(list(spaces)))
            self._set("shared", json.dumps(shared, sort_keys=True))
            self._bump()

    def put(self, space: str, memory: Memory, pending: bool) -> None:
        """One memory the server answered with (or, `pending`, one the outbox still holds).

        An answer older than the server's row held here is dropped: the hook server and a command
        can flush one outbox at once, and a late answer to the older change must not win."""
        with sqlitedb.Immediate(self.conn):
            if pending or not self._holds_newer(space, memory):
                self._put(space, memory, pending)
                self._bump()

    def remove(self, space: str, scope: str, key: str) -> None:
        with sqlitedb.Immediate(self.conn):
            self._remove(space, scope, key)
            self._bump()

    def resync(self) -> None:
        """Have the next sync send everything again."""
        self._set("cursor", 0)

    def drop_pending(self, scope: str, key: str) -> None:
        """Remove the copies of scope::key a queued change put here (the server's answer replaces them)."""
        with sqlitedb.Immediate(self.conn):
            for (space,) in self.conn.execute(
                "SELECT space FROM memories WHERE scope = ? AND key = ? AND pending = 1", (scope, key)
            ).fetchall():
                self._remove(space, scope, key)
            self._bump()

    def _bump(self) -> None:
        self.conn.execute("UPDATE meta SET value = value + 1 WHERE name = 'generation'")

    def _holds_newer(self, space: str, memory: Memory) -> bool:
        updated = epoch_from_iso(memory.updated) if memory.updated else 0.0
        row = self.conn.execute(
            "SELECT 1 FROM memories WHERE space = ? AND scope = ? AND key = ? AND pending = 0 AND updated_ts > ?",
            (space, str(memory.scope), memory.key, updated),
        ).fetchone()
        return row is not None

    def _put(self, space: str, memory: Memory, pending: bool) -> None:
        scope, key = str(memory.scope), memory.key
        self._remove(space, scope, key)
        cursor = self.conn.execute(
            "INSERT INTO memories (space, scope, key, updated_ts, seen_count, expires_ts, archived, record, pending)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                space,
                scope,
                key,
                epoch_from_iso(memory.updated) if memory.updated else 0.0,
                memory.seen_count,
                epoch_from_iso(memory.expires_at) if memory.expires_at else None,
                1 if memory.archived_at else 0,
                json.dumps(memory.to_dict(), ensure_ascii=False),
                1 if pending else 0,
            ),
        )
        self.conn.execute(
            "INSERT INTO memories_fts (rowid, key, value, tags) VALUES (?, ?, ?, ?)",
            (
                cursor.lastrowid,
                key.replace("-", " ").replace("_", " "),
                memory.value,
                " ".join(memory.tags),
            ),
        )

    def _remove(self, space: str, scope: str, key: str) -> None:
        row = self.conn.execute(
            "SELECT id FROM memories WHERE space = ? AND scope = ? AND key = ?", (space, scope, key)
        ).fetchone()
        if row:
            self.conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (row[0],))
            self.conn.execute("DELETE FROM memories WHERE id = ?", (row[0],))

    # -- reads -----------------------------------------------------------------------------------

    def pending(self) -> int:
        row = self.conn.execute("SELECT count(*) FROM memories WHERE pending = 1").fetchone()
        return int(row[0]) if row else 0

    def rows(self, sql: str, params: dict[str, object]) -> list[Candidate]:
        """Candidates of a query selecting `COLUMNS` from `memories m`; `:now` is bound here."""
        found = self.conn.execute(sql, {"now": time.time(), **params}).fetchall()
        return [_candidate(row) for row in found]

    def matching(self, scopes: Sequence[str], words: Sequence[str], limit: int) -> list[tuple[Candidate, float]]:
        """Visible copies holding every word (best bm25 first); if too few, any of the rarest words."""
        found = self._matching(scopes, fts_query(words, every_word=True), limit)
        if len(found) < limit and len(words) > 1:
            seen = {(c.origin, c.place) for c, _ in found}
            rarest = self._rarest(words)  # none, when no memory holds any of the words
            more = self._matching(scopes, fts_query(rarest, every_word=False), limit) if rarest else []
            found += [(c, r) for c, r in more if (c.origin, c.place) not in seen][: limit - len(found)]
        return found

    def _matching(self, scopes: Sequence[str], query: str, limit: int) -> list[tuple[Candidate, float]]:
        params = {f"s{n}": scope for n, scope in enumerate(scopes)}
        marks = ", ".join(f":s{n}" for n in range(len(scopes))) or "''"
        rows = self.conn.execute(
            f"SELECT {COLUMNS}, -{_BM25} FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid"
            f" WHERE memories_fts MATCH :q AND m.scope IN ({marks}) AND {VISIBLE}"
            f" ORDER BY {_BM25} LIMIT :limit",
            {"q": query, "limit": limit, "now": time.time(), **params},
        ).fetchall()
        return [(_candidate(row[:4]), float(row[4])) for row in rows]

    def _rarest(self, words: Sequence[str]) -> list[str]:
        if len(words) <= OR_WORDS:
            return list(words)
        self.conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.mirror_vocab USING fts5vocab(main, memories_fts, row)"
        )
        counts = {}
        for word in words:
            upper = word + ("\U0010ffff" if len(word) >= 4 else "\x00")
            sql = "SELECT coalesce(sum(doc), 0) FROM temp.mirror_vocab WHERE term >= ? AND term < ?"
            counts[word] = int(self.conn.execute(sql, (word, upper)).fetchone()[0])
        chosen = set(sorted((w for w in words if counts[w]), key=counts.__getitem__)[:OR_WORDS])
        return [w for w in words if w in chosen]

    def everything(self, include_hidden: bool) -> Iterator[Memory]:
        visible = "1" if include_hidden else VISIBLE
        sql = f"SELECT {COLUMNS} FROM memories m WHERE {visible} ORDER BY m.scope, m.key"
        return (c.memory for c in self.rows(sql, {}))


def _candidate(row: Sequence[object]) -> Candidate:
    space, scope, key, record = row
    return Candidate.of(Memory.from_dict(json.loads(str(record))), origin_of(str(space)), f"{scope}/{key}")


def path_for(home: str, endpoint_url: str) -> str:
    """The mirror of the server at `endpoint_url`: one file per server."""
    name = "".join(ch if ch.isalnum() or ch in ".-" else "_" for ch in endpoint_url.split("://", 1)[-1])
    return os.path.join(home, "remote", f"{name}.db")
