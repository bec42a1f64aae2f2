"""`PostgresTier`: memories kept in PostgreSQL, passing the same tier contract as the local tier
(tests/test_tier_contract.py), so the memory service's rules run over it unchanged.

A tier's parts are spaces: an organisation's shared one (`org:<id>`) and a user's own (`user:<id>`).
Each row holds the memory's whole record (`Memory.to_dict`, as export writes it) and the columns
reads filter and rank on.

A search asks PostgreSQL for the matches (a GIN-indexed `tsvector` of the tokens SQLite FTS5 would
make, prefix matches from four characters as the local index's), and scores them with FTS5's own
bm25 (memory/bm25.py) over the spaces read: the same query gives the same relevance, so the same
order, as on one machine. PostgreSQL's `ts_rank_cd` only picks which matches are scored when there
are more than the shortlist holds.

A write takes a transaction-scoped advisory lock on its address: N writers of one key give one row
and N counted updates, as the vault's lock does for files. A write that makes a row visible
(new, or revived) counts against its owner's quota; an update of a visible row does not.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg

from hivelore.memory import bm25
from hivelore.memory.model import Memory, epoch_from_iso
from hivelore.memory.scope import Scope
from hivelore.memory.tier import Build, Candidate, Merge, Survey, Tier
from hivelore.server.limits import QuotaExceeded

MAX_POSITION = 16383  # PostgreSQL keeps a token's positions up to this
SHORTLIST_FACTOR = 8  # matches scored per wanted hit, as the local index's shortlist
OR_WORDS = 4  # an any-word search looks for the rarest four words of a longer query, as locally
SETTLED_S = 10  # a change this old was committed by a transaction that has ended (see `changes`)
SPACE_SHARDS = 16  # rows of counters per space: writers on different connections rarely share one
_COLUMNS = "space, scope, key, record"
_VISIBLE = "NOT archived AND (expires_ts IS NULL OR expires_ts > %(now)s)"

Columns = tuple[list[str], list[str], list[str]]


@dataclass(frozen=True)
class Changes:
    written: list[tuple[str, Memory, int]]  # (space, the memory as it is now, its change number)
    gone: list[tuple[str, str, str]]  # (space, scope, key) of deleted rows
    cursor: int  # the change number to ask from next
    more: bool  # whether another page is waiting


def columns_of(memory: Memory) -> Columns:
    return bm25.columns(memory.key, memory.value, memory.tags)


def document(columns: Columns) -> str:
    """A tsvector literal of a row's tokens, each at its position (a column's first token one past
    the last one's of the column before, so a phrase never spans two columns)."""
    entries, position = [], 0
    for column in columns:
        position += 1
        for token in column:
            position += 1
            entries.append(f"'{token}':{min(position, MAX_POSITION)}")
    return " ".join(entries)


def phrase_query(phrase: bm25.Phrase) -> str:
    """A tsquery literal for one query word as FTS5 reads `"word"*` (tokens hold no quote)."""
    last = len(phrase.parts) - 1
    return " <-> ".join(
        f"'{part}'" + (":*" if n == last and phrase.prefix else "") for n, part in enumerate(phrase.parts)
    )


class PostgresTier(Tier):
    def __init__(
        self,
        conn: psycopg.Connection,
        parts: dict[str, str],
        warnings: list[str],
        owner: int | None = None,
        quota: int | None = None,
    ) -> None:
        """`conn` in autocommit mode; `parts` maps a part's name to its space, the winning part first.
        A row this tier creates belongs to `owner`, who may have `quota` visible rows at most."""
        self.conn, self.parts, self.warnings = conn, parts, warnings
        self.owner, self.quota = owner, quota

    # -- reads --------------------------------------------------------------------------------

    def _spaces(self) -> list[str]:
        return list(self.parts.values())

    def _where(self, scopes: Sequence[str]) -> dict[str, object]:
        return {"spaces": self._spaces(), "scopes": list(scopes), "now": time.time()}

    def _candidates(self, sql: str, params: dict[str, object]) -> list[Candidate]:
        rows = self.conn.execute(sql, {"spaces": self._spaces(), "now": time.time(), **params})
        return [Candidate.of(Memory.from_dict(record), space, f"{scope}/{key}") for space, scope, key, record in rows]

    def copies(self, scopes: Sequence[str], keys: set[str]) -> list[Candidate]:
        return self._candidates(
            f"SELECT {_COLUMNS} FROM memories"
            " WHERE space = ANY(%(spaces)s) AND scope = ANY(%(scopes)s) AND key = ANY(%(keys)s)",
            {"scopes": list(scopes), "keys": sorted(keys)},
        )

    def listed(self, scopes: Sequence[str], include_hidden: bool = False) -> list[Candidate]:
        visible = "TRUE" if include_hidden else _VISIBLE
        return self._candidates(
            f"SELECT {_COLUMNS} FROM memories WHERE space = ANY(%(spaces)s) AND scope = ANY(%(scopes)s) AND {visible}",
            {"scopes": list(scopes)},
        )

    def match(self, scopes: Sequence[str], words: Sequence[str], limit: int) -> list[tuple[Candidate, float]]:
        """Every word first; if that finds too few, any of the rarest words (as the local tier)."""
        phrases = [p for p in map(bm25.Phrase.of, words) if p.parts]
        found = self._scored(scopes, phrases, " & ", limit)
        if len(found) < limit and len(phrases) > 1:
            seen = {(c.origin, c.place) for c, _ in found}
            more = self._scored(scopes, self._rarest(phrases), " | ", limit)
            found += [(c, r) for c, r in more if (c.origin, c.place) not in seen][: limit - len(found)]
        return found

    def _scored(
        self, scopes: Sequence[str], phrases: Sequence[bm25.Phrase], join: str, limit: int
    ) -> list[tuple[Candidate, float]]:
        """The best `limit` visible matches of the phrases (all of them, or any), by FTS5's bm25."""
        if not phrases:
            return []
        query = join.join(f"({phrase_query(p)})" for p in phrases)
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM memories"
            f" WHERE space = ANY(%(spaces)s) AND scope = ANY(%(scopes)s) AND {_VISIBLE}"
            " AND doc @@ %(query)s::tsquery ORDER BY ts_rank_cd(doc, %(query)s::tsquery) DESC LIMIT %(n)s",
            {**self._where(scopes), "query": query, "n": limit * SHORTLIST_FACTOR},
        ).fetchall()
        if not rows:
            return []
        corpus = self._corpus(phrases)
        scored = []
        for space, scope, key, record in rows:
            memory = Memory.from_dict(record)
            relevance = bm25.score(phrases, columns_of(memory), corpus)
            scored.append((Candidate.of(memory, space, f"{scope}/{key}"), relevance))
        scored.sort(key=lambda pair: -pair[1])
        return scored[:limit]

    def _holding(self, phrases: Sequence[bm25.Phrase]) -> list[int]:
        """Per phrase, the rows of the tier's spaces (every scope, hidden ones too) that hold it."""
        counts = ", ".join(f"count(*) FILTER (WHERE doc @@ %(q{n})s::tsquery)" for n in range(len(phrases)))
        params: dict[str, object] = {f"q{n}": phrase_query(p) for n, p in enumerate(phrases)}
        row = self.conn.execute(
            f"SELECT {counts} FROM memories WHERE space = ANY(%(spaces)s)", {"spaces": self._spaces(), **params}
        ).fetchone()
        return [int(n) for n in row] if row else [0] * len(phrases)

    def _corpus(self, phrases: Sequence[bm25.Phrase]) -> bm25.Corpus:
        row = self.conn.execute(
            "SELECT coalesce(sum(rows), 0), coalesce(sum(tokens), 0) FROM memory_spaces WHERE space = ANY(%s)",
            (self._spaces(),),
        ).fetchone()
        rows, tokens = (int(row[0]), int(row[1])) if row else (0, 0)
        return bm25.Corpus(rows, tokens, tuple(self._holding(phrases)))

    def _rarest(self, phrases: Sequence[bm25.Phrase]) -> list[bm25.Phrase]:
        if len(phrases) <= OR_WORDS:
            return list(phrases)
        holding = self._holding(phrases)
        held = sorted((n for n in range(len(phrases)) if holding[n]), key=holding.__getitem__)
        chosen = set(held[:OR_WORDS])
        return [p for n, p in enumerate(phrases) if n in chosen]

    def survey(self, scopes: Sequence[str], per_scope: int) -> Survey:
        candidates = self._candidates(
            f"""
            SELECT {_COLUMNS} FROM (
                SELECT *, row_number() OVER (PARTITION BY scope ORDER BY updated_ts DESC) AS recent,
                          row_number() OVER (PARTITION BY scope ORDER BY seen_count DESC) AS seen
                FROM memories WHERE space = ANY(%(spaces)s) AND scope = ANY(%(scopes)s) AND {_VISIBLE}
            ) ranked WHERE recent <= %(per_scope)s OR seen <= %(per_scope)s
            """,
            {"scopes": list(scopes), "per_scope": per_scope},
        )
        row = self.conn.execute(
            f"SELECT count(*) - count(DISTINCT key) FROM memories"
            f" WHERE space = ANY(%(spaces)s) AND scope = ANY(%(scopes)s) AND {_VISIBLE}",
            self._where(scopes),
        ).fetchone()
        return Survey(self.counts(scopes), candidates, int(row[0]) if row else 0)

    def rivals(self, scopes: Sequence[str], of: Sequence[Candidate]) -> list[Candidate]:
        have = {(c.origin, c.place) for c in of}
        found = self._candidates(
            f"SELECT {_COLUMNS} FROM memories"
            f" WHERE space = ANY(%(spaces)s) AND scope = ANY(%(scopes)s) AND key = ANY(%(keys)s) AND {_VISIBLE}",
            {"scopes": list(scopes), "keys": sorted({c.key for c in of})},
        )
        return [c for c in found if (c.origin, c.place) not in have]

    def fresh(self, candidate: Candidate) -> Candidate | None:
        found = self._candidates(
            f"SELECT {_COLUMNS} FROM memories"
            f" WHERE space = %(space)s AND scope = %(scope)s AND key = %(key)s AND {_VISIBLE}",
            {"space": candidate.origin, "scope": candidate.scope, "key": candidate.key},
        )
        return found[0] if found else None

    def counts(self, scopes: Sequence[str]) -> dict[str, int]:
        rows = self.conn.execute(
            f"SELECT scope, count(*) FROM memories"
            f" WHERE space = ANY(%(spaces)s) AND scope = ANY(%(scopes)s) AND {_VISIBLE} GROUP BY scope",
            self._where(scopes),
        )
        return {scope: int(n) for scope, n in rows}

    def generation(self) -> int:
        row = self.conn.execute(
            "SELECT coalesce(sum(generation), 0) FROM memory_spaces WHERE space = ANY(%s)",
            (self._spaces(),),
        ).fetchone()
        return int(row[0]) if row else 0

    def scopes(self) -> set[str]:
        rows = self.conn.execute("SELECT DISTINCT scope FROM memories WHERE space = ANY(%s)", (self._spaces(),))
        return {scope for (scope,) in rows}

    def everything(self, include_hidden: bool = False) -> Iterator[Memory]:
        visible = "TRUE" if include_hidden else _VISIBLE
        rows = self.conn.execute(
            f"SELECT record FROM memories WHERE space = ANY(%(spaces)s) AND {visible} ORDER BY scope, key",
            {"spaces": self._spaces(), "now": time.time()},
        )
        return (Memory.from_dict(record) for (record,) in rows)

    def changes(self, since: int, limit: int, settled_s: float = SETTLED_S) -> Changes:
        """What changed in the tier's spaces after change number `since`, oldest first (at most
        `limit` changes).

        Change numbers are taken when a write starts, so a slow transaction may commit a lower number
        after a higher one was read. The cursor therefore only moves past changes older than
        `settled_s`, which every transaction has finished by; younger ones are sent again next time (a
        mirror applies them as upserts, so that costs nothing but bytes)."""
        rows = self.conn.execute(
            """
            SELECT * FROM (
                SELECT seq, space, scope, key, record, changed < clock_timestamp() - %(settled)s * interval '1 second'
                FROM memories WHERE space = ANY(%(spaces)s) AND seq > %(since)s
                UNION ALL
                SELECT seq, space, scope, key, NULL, changed < clock_timestamp() - %(settled)s * interval '1 second'
                FROM memory_tombstones WHERE space = ANY(%(spaces)s) AND seq > %(since)s
            ) c ORDER BY seq LIMIT %(limit)s
            """,
            {"spaces": self._spaces(), "since": since, "limit": limit, "settled": settled_s},
        ).fetchall()
        cursor = since
        for seq, *_, settled in rows:
            if not settled:
                break
            cursor = seq
        written = [(space, Memory.from_dict(record), seq) for seq, space, _, _, record, _ in rows if record is not None]
        gone = [(space, scope, key) for seq, space, scope, key, record, _ in rows if record is None]
        return Changes(written, gone, cursor, more=len(rows) == limit and cursor == rows[-1][0])

    # -- writes -------------------------------------------------------------------------------

    def _lock(self, space: str, scope: str, key: str) -> Memory | None:
        """Inside a transaction: hold scope::key of `space` until it ends; what is there now."""
        self.conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{space}\n{scope}::{key}",))
        row = self.conn.execute(
            "SELECT record FROM memories WHERE space = %s AND scope = %s AND key = %s", (space, scope, key)
        ).fetchone()
        return Memory.from_dict(row[0]) if row else None

    def _put(self, space: str, memory: Memory, before: Memory | None) -> None:
        columns = columns_of(memory)
        tokens = sum(len(column) for column in columns)
        self.conn.execute(
            """
            INSERT INTO memories (space, scope, key, record, archived, expires_ts, updated_ts, seen_count, body, doc,
                                  owner, tokens)
            VALUES (%(space)s, %(scope)s, %(key)s, %(record)s, %(archived)s, %(expires)s, %(updated)s, %(seen)s,
                    %(body)s, %(doc)s::tsvector, %(owner)s, %(tokens)s)
            ON CONFLICT (space, scope, key) DO UPDATE SET
                record = excluded.record, archived = excluded.archived, expires_ts = excluded.expires_ts,
                updated_ts = excluded.updated_ts, seen_count = excluded.seen_count, body = excluded.body,
                doc = excluded.doc, tokens = excluded.tokens, seq = nextval('memory_changes'),
                changed = clock_timestamp()
            """,
            {
                "space": space,
                "scope": str(memory.scope),
                "key": memory.key,
                "record": json.dumps(memory.to_dict()),
                "archived": memory.archived_at is not None,
                "expires": epoch_from_iso(memory.expires_at) if memory.expires_at else None,
                "updated": epoch_from_iso(memory.updated) if memory.updated else 0.0,
                "seen": memory.seen_count,
                "body": " ".join(" ".join(column) for column in columns),
                "doc": document(columns),
                "owner": self.owner,
                "tokens": tokens,
            },
        )
        self.conn.execute(
            "DELETE FROM memory_tombstones WHERE space = %s AND scope = %s AND key = %s",
            (space, str(memory.scope), memory.key),
        )
        old = sum(len(column) for column in columns_of(before)) if before else 0
        self._changed(space, rows=0 if before else 1, tokens=tokens - old)

    def _changed(self, space: str, rows: int, tokens: int) -> None:
        """Count a change of `space` in its counters' row of this connection's shard: the row stays
        locked until the transaction commits, so with one row per space every write to a space
        waited for the one before it (migration 0004). Readers add up the shards."""
        self.conn.execute(
            "INSERT INTO memory_spaces (space, shard, generation, rows, tokens)"
            " VALUES (%(space)s, pg_backend_pid() %% %(shards)s, 1, %(rows)s, %(tokens)s)"
            " ON CONFLICT (space, shard) DO UPDATE SET generation = memory_spaces.generation + 1,"
            " rows = memory_spaces.rows + %(rows)s, tokens = memory_spaces.tokens + %(tokens)s",
            {"space": space, "shards": SPACE_SHARDS, "rows": rows, "tokens": tokens},
        )

    def _check_quota(self, before: Memory | None, after: Memory) -> None:
        """Refuse a write that would give the owner more visible rows than the quota allows."""
        if self.quota is None or self.owner is None or not after.is_visible():
            return
        if before is not None and before.is_visible():
            return
        self.conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"quota\n{self.owner}",))
        row = self.conn.execute(
            f"SELECT count(*) FROM memories WHERE owner = %(owner)s AND {_VISIBLE}",
            {"owner": self.owner, "now": time.time()},
        ).fetchone()
        if row and int(row[0]) >= self.quota:
            raise QuotaExceeded(
                f"your account holds {int(row[0]):,} active memories, the most it may hold ({self.quota:,}):"
                " archive or forget some first (archived ones do not count)"
            )

    def store(
        self, part: str, scope: Scope, key: str, build: Build, prefer: Candidate | None = None
    ) -> tuple[Path, Memory | None, Memory | None]:
        space = self.parts[part]
        with self.conn.transaction():
            existing = self._lock(space, str(scope), key)
            memory = build(existing)
            if memory is not None:
                self._check_quota(existing, memory)
                self._put(space, memory, existing)
        return Path(space, f"{scope}/{key}"), existing, memory

    def delete(self, candidate: Candidate, still: Callable[[Memory], bool]) -> bool:
        with self.conn.transaction():
            existing = self._lock(candidate.origin, candidate.scope, candidate.key)
            if existing is None or not still(existing):
                return False
            self.conn.execute(
                "DELETE FROM memories WHERE space = %s AND scope = %s AND key = %s",
                (candidate.origin, candidate.scope, candidate.key),
            )
            self.conn.execute(
                "INSERT INTO memory_tombstones (space, scope, key) VALUES (%s, %s, %s)"
                " ON CONFLICT (space, scope, key)"
                " DO UPDATE SET seq = nextval('memory_changes'), changed = clock_timestamp()",
                (candidate.origin, candidate.scope, candidate.key),
            )
            tokens = sum(len(column) for column in columns_of(existing))
            self._changed(candidate.origin, rows=-1, tokens=-tokens)
        return True

    def unwritable(self, part: str, memories: Sequence[Memory]) -> dict[str, ValueError]:
        return {}  # a row is always writable; what a record may hold is the service's rule

    def store_batch(self, part: str, memories: Sequence[Memory], merge: Merge) -> tuple[list[str], list[str]]:
        space, written, unchanged = self.parts[part], [], []
        with self.conn.transaction():
            for memory in memories:
                existing = self._lock(space, str(memory.scope), memory.key)
                kept = merge(memory, existing)
                if kept is None:
                    unchanged.append(memory.address)
                else:
                    self._check_quota(existing, kept)
                    self._put(space, kept, existing)
                    written.append(memory.address)
        return written, unchanged

    def close(self) -> None:
        """The connection is the caller's (a request's, borrowed from the pool)."""
