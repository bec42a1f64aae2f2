"""`PostgresTier`: memories kept in PostgreSQL, passing the same tier contract as the local tier
(tests/test_tier_contract.py), so the memory service's rules run over it unchanged.

A tier's parts are spaces: an organisation's shared one (`org:<id>`) and a user's own (`user:<id>`).
Each row holds the memory's whole record (`Memory.to_dict`, as export writes it) and the columns
reads filter and rank on. Full-text relevance is PostgreSQL's (`ts_rank_cd` over a GIN-indexed
`tsvector`); the words are cut exactly as `recall` cuts a query, so a word the local index finds is
a word found here. A write takes a transaction-scoped advisory lock on its address: N writers of one
key give one row and N counted updates, as the vault's lock does for files.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import psycopg

from hivelore.memory.model import Memory, epoch_from_iso
from hivelore.memory.scope import Scope
from hivelore.memory.tier import Build, Candidate, Merge, Survey, Tier

_WORD = re.compile(r"\w+", re.UNICODE)  # as recall cuts a query into words
MAX_POSITION = 16383  # PostgreSQL keeps a word's positions up to this
_COLUMNS = "space, scope, key, record"
_VISIBLE = "NOT archived AND (expires_ts IS NULL OR expires_ts > %(now)s)"


def searchable(memory: Memory) -> str:
    return f"{memory.key.replace('-', ' ')} {memory.value} {' '.join(memory.tags)}"


def document(text: str) -> str:
    """A tsvector literal of the text's words, each at its position (the words taken as they are:
    PostgreSQL's parser would cut `foo_bar` in two where recall keeps it one)."""
    words = _WORD.findall(text.lower())
    return " ".join(f"'{word}':{min(n, MAX_POSITION)}" for n, word in enumerate(words, start=1))


def any_of(words: Sequence[str]) -> str:
    """A tsquery literal matching any of the words (recall's words hold no quote or backslash)."""
    return " | ".join(f"'{word}'" for word in words if _WORD.fullmatch(word))


class PostgresTier(Tier):
    def __init__(self, conn: psycopg.Connection, parts: dict[str, str], warnings: list[str]) -> None:
        """`conn` in autocommit mode; `parts` maps a part's name to its space, the winning part first."""
        self.conn, self.parts, self.warnings = conn, parts, warnings

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
        query = any_of(words)
        if not query:
            return []
        rows = self.conn.execute(
            f"SELECT {_COLUMNS}, ts_rank_cd(doc, %(query)s::tsquery) AS relevance FROM memories"
            f" WHERE space = ANY(%(spaces)s) AND scope = ANY(%(scopes)s) AND {_VISIBLE}"
            " AND doc @@ %(query)s::tsquery ORDER BY relevance DESC, updated_ts DESC LIMIT %(limit)s",
            {
                "spaces": self._spaces(),
                "scopes": list(scopes),
                "now": time.time(),
                "query": query,
                "limit": limit,
            },
        )
        return [
            (Candidate.of(Memory.from_dict(record), space, f"{scope}/{key}"), float(relevance))
            for space, scope, key, record, relevance in rows
        ]

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
            "SELECT coalesce(sum(generation), 0) FROM memory_generations WHERE space = ANY(%s)",
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

    # -- writes -------------------------------------------------------------------------------

    def _lock(self, space: str, scope: str, key: str) -> Memory | None:
        """Inside a transaction: hold scope::key of `space` until it ends; what is there now."""
        self.conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{space}\n{scope}::{key}",))
        row = self.conn.execute(
            "SELECT record FROM memories WHERE space = %s AND scope = %s AND key = %s", (space, scope, key)
        ).fetchone()
        return Memory.from_dict(row[0]) if row else None

    def _put(self, space: str, memory: Memory) -> None:
        text = searchable(memory)
        self.conn.execute(
            """
            INSERT INTO memories (space, scope, key, record, archived, expires_ts, updated_ts, seen_count, body, doc)
            VALUES (%(space)s, %(scope)s, %(key)s, %(record)s, %(archived)s, %(expires)s, %(updated)s, %(seen)s,
                    %(body)s, %(doc)s::tsvector)
            ON CONFLICT (space, scope, key) DO UPDATE SET
                record = excluded.record, archived = excluded.archived, expires_ts = excluded.expires_ts,
                updated_ts = excluded.updated_ts, seen_count = excluded.seen_count, body = excluded.body,
                doc = excluded.doc
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
                "body": text,
                "doc": document(text),
            },
        )
        self._changed(space)

    def _changed(self, space: str) -> None:
        self.conn.execute(
            "INSERT INTO memory_generations (space, generation) VALUES (%s, 1)"
            " ON CONFLICT (space) DO UPDATE SET generation = memory_generations.generation + 1",
            (space,),
        )

    def store(
        self, part: str, scope: Scope, key: str, build: Build, prefer: Candidate | None = None
    ) -> tuple[Path, Memory | None, Memory | None]:
        space = self.parts[part]
        with self.conn.transaction():
            existing = self._lock(space, str(scope), key)
            memory = build(existing)
            if memory is not None:
                self._put(space, memory)
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
            self._changed(candidate.origin)
        return True

    def unwritable(self, part: str, memories: Sequence[Memory]) -> dict[str, ValueError]:
        return {}  # a row is always writable; what a record may hold is the service's rule

    def store_batch(self, part: str, memories: Sequence[Memory], merge: Merge) -> tuple[list[str], list[str]]:
        space, written, unchanged = self.parts[part], [], []
        with self.conn.transaction():
            for memory in memories:
                kept = merge(memory, self._lock(space, str(memory.scope), memory.key))
                if kept is None:
                    unchanged.append(memory.address)
                else:
                    self._put(space, kept)
                    written.append(memory.address)
        return written, unchanged

    def close(self) -> None:
        """The connection is the caller's (a request's, borrowed from the pool)."""
