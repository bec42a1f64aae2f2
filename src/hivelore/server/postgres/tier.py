"""`PostgresTier`: memories kept in PostgreSQL, passing the same tier contract as the local tier
(tests/test_tier_contract.py), so the memory service's rules run over it unchanged.

A tier's parts are spaces: an organisation's shared one (`org:<id>`) and a user's own (`user:<id>`).
Each row holds the memory's whole record (`Memory.to_dict`, as export writes it) and the columns
reads filter and rank on.

A search asks PostgreSQL for the matches (a GIN-indexed `tsvector` of the tokens SQLite FTS5 would
make, prefix matches from four characters as the local index's), and scores them with FTS5's own
bm25 (memory/bm25.py) over the spaces read: the same query gives the same relevance, so the same
order, as on one machine while the matches fit in the shortlist. Past it, PostgreSQL's `ts_rank`
picks which matches are scored (the corpus counts say when they fit, and then nothing is ranked in
SQL; an any-word search ranks only the rows of its rarest words), so a large organisation's order
is close to, not always, the local one. The rows holding each
query word come from the counts the writes keep (`memory_terms`, migration 0020). The shortlist is
scored from the tokens each row keeps (`terms`, written with it), and only the rows kept are decoded.

A write takes a transaction-scoped advisory lock on its address: N writers of one key give one row
and N counted updates, as the vault's lock does for files. A write that makes a row visible
(new, or revived) counts against its owner's quota; an update of a visible row does not. The lock
and the read of what is there are one statement (a function of migration 0006, as are the quota's
lock and count), then the write is one more (the row, its tombstone, the space's counters), inside
the caller's transaction when one is open (an Idempotency-Key's).

Recall by meaning (postgres/vectors.py, migration 0015): a write whose text changed drops the row's
vector in its statement and tells the replica, which computes the new one in the background;
`nearest` gives the visible rows nearest to a query in meaning, for the service to fuse with BM25's
hits as a machine does (memory/fusion.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import psycopg
from psycopg.pq import TransactionStatus

from hivelore.memory import bm25
from hivelore.memory.model import Memory, epoch_from_iso
from hivelore.memory.scope import Scope
from hivelore.memory.tier import Build, Candidate, Merge, Survey, Tier, Wanted
from hivelore.server.limits import QuotaExceeded
from hivelore.server.postgres import vectors

MAX_POSITION = 16383  # PostgreSQL keeps a token's positions up to this
SHORTLIST_FACTOR = 8  # matches scored per wanted hit, as the local index's shortlist
CANDIDATE_FACTOR = 5  # an any-word search ranks at most this many rows in SQL per row it shortlists
OR_WORDS = 4  # an any-word search looks for the rarest four words of a longer query, as locally
SETTLED_S = 10  # a change this old was committed by a transaction that has ended (see `changes`)
SPACE_SHARDS = 16  # rows of counters per space: writers on different connections rarely share one
_COLUMNS = "space, scope, key, record"
# What orders the matches when more than a shortlist match: ts_rank over 1 + log(length), which ranks
# long rows lower as bm25 does. Of the true bm25 top 10 at 100,000 rows (16 queries), it kept 140 of
# 160 where plain ts_rank kept 121 and ts_rank_cd 101 (docs/server.md, issue 26).
_SHORTLIST_RANK = "ts_rank(doc, %(query)s::tsquery, 1)"
_VISIBLE = "NOT archived AND (expires_ts IS NULL OR expires_ts > %(now)s)"

# The last part of a write's one statement: count the change of the space in its counters' row of
# this connection's shard. That row stays locked until the transaction commits, so with one row per
# space every write to a space waited for the one before it (migration 0004). Readers add up the shards.
_COUNTED = """
    INSERT INTO memory_spaces (space, shard, generation, rows, tokens)
    VALUES (%(space)s, pg_backend_pid() %% %(shards)s, 1, %(rows)s, %(change)s)
    ON CONFLICT (space, shard) DO UPDATE SET generation = memory_spaces.generation + 1,
        rows = memory_spaces.rows + %(rows)s, tokens = memory_spaces.tokens + %(change)s
"""

Columns = tuple[list[str], list[str], list[str]]


@dataclass(frozen=True)
class Changes:
    written: list[tuple[str, Memory, int]]  # (space, the memory as it is now, its change number)
    gone: list[tuple[str, str, str]]  # (space, scope, key) of deleted rows
    cursor: int  # the change number to ask from next
    more: bool  # whether another page is waiting


def columns_of(memory: Memory) -> Columns:
    return indexed(memory.key, f"{memory.value}\n{memory.when}" if memory.when else memory.value, tuple(memory.tags))


@lru_cache(maxsize=256)
def indexed(key: str, value: str, tags: tuple[str, ...]) -> Columns:
    """A memory's columns as tokens, made once a write: the service checks them for words PostgreSQL
    cannot index (server/memories.py) before the tier writes them, and tokenizing a value is a large
    part of a write's CPU. The lists are shared: never change them."""
    return bm25.columns(key, value, tags)


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


def terms_of(columns: Columns) -> str:
    """What the `terms` column holds: the columns' tokens, columns apart by a tab (tokens hold none)."""
    return "\t".join(" ".join(column) for column in columns)


def _joined(terms: str | None, record: dict[str, object] | None) -> list[str]:
    """A row's columns, each its tokens joined by spaces (what bm25.Scorer scores), from its stored
    terms, or (a row written before migration 0005) its record."""
    if terms is None:
        assert record is not None  # the query sends the record when a row has no terms
        terms = terms_of(columns_of(Memory.from_dict(record)))
    return terms.split("\t")


# The part of a write's statement that drops its row's vector when the text changed: the replica
# computes the new one in the background (postgres/vectors.py `Meaning.written`).
_UNVECTORED = ", unvectored AS (DELETE FROM memory_vectors WHERE id IN (SELECT id FROM put))"


def phrase_query(phrase: bm25.Phrase) -> str:
    """A tsquery literal for one query word as FTS5 reads `"word"*` (tokens hold no quote)."""
    last = len(phrase.parts) - 1
    return " <-> ".join(
        f"'{part}'" + (":*" if n == last and phrase.prefix else "") for n, part in enumerate(phrase.parts)
    )


def _rare(phrases: Sequence[bm25.Phrase], holding: Sequence[int], shortlist: int) -> list[bm25.Phrase]:
    """The words of an any-word search whose rows are ranked for its shortlist: the rarest, as many
    as hold at most CANDIDATE_FACTOR rows per shortlisted one between them (every word when even the
    rarest holds more). bm25 weighs a word by its rarity, so a row holding only the commonest words
    seldom outscores the rows holding a rare one, and ranking those rows too ranked every match in
    SQL (a quarter of the rows for a pasted prompt at 100,000)."""
    budget = CANDIDATE_FACTOR * shortlist
    chosen, rows = [], 0
    for n in sorted((n for n in range(len(phrases)) if holding[n]), key=lambda n: holding[n]):
        rows += holding[n]
        if rows > budget:
            break
        chosen.append(phrases[n])
    return chosen or list(phrases)


class PostgresTier(Tier):
    def __init__(
        self,
        conn: psycopg.Connection,
        parts: dict[str, str],
        warnings: list[str],
        owner: int | None = None,
        quota: int | None = None,
        meaning: vectors.Meaning | None = None,
    ) -> None:
        """`conn` in autocommit mode; `parts` maps a part's name to its space, the winning part first.
        A row this tier creates belongs to `owner`, who may have `quota` visible rows at most.
        `meaning`: the replica's model and vectors, for recall by meaning (None: BM25 alone)."""
        self.conn, self.parts, self.warnings = conn, parts, warnings
        self.owner, self.quota = owner, quota
        self.meaning = meaning
        self._held: dict[bm25.Phrase, int] = {}  # rows holding a phrase, counted once a request

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

    def page(self, scopes: Sequence[str], wanted: Wanted, offset: int, limit: int) -> tuple[list[Candidate], int]:
        """As `Tier.page`, filtered, counted and cut in SQL, so only the page's rows are decoded (the
        dashboard's memory view). Words, which only a search of hidden copies asks for, are matched
        by `Tier.page` in Python, as on one machine."""
        if wanted.words:
            return super().page(scopes, wanted, offset, limit)
        spaces = [s for s in self._spaces() if wanted.origins is None or s in wanted.origins]
        where = [
            "space = ANY(%(spaces)s)",
            "scope = ANY(%(scopes)s)",
            f"NOT ({_VISIBLE})" if wanted.hidden else _VISIBLE,
        ]
        where += [f"record->>'{field}' = %({field})s" for field in ("kind", "state") if getattr(wanted, field)]
        where += ["record->'tags' ? %(tag)s"] if wanted.tag else []
        where += ["expires_ts <= %(before)s"] if wanted.expiring_before is not None else []
        condition = " AND ".join(where)
        params = {
            "spaces": spaces,
            "scopes": list(scopes),
            "now": time.time(),
            "kind": wanted.kind,
            "state": wanted.state,
            "tag": wanted.tag,
            "before": wanted.expiring_before,
            "offset": offset,
            "limit": limit,
        }
        row = self.conn.execute(f"SELECT count(*) FROM memories WHERE {condition}", params).fetchone()
        # listing_order: the scopes as asked, then key and space by code point (COLLATE "C").
        found = self._candidates(
            f"SELECT {_COLUMNS} FROM memories WHERE {condition}"
            ' ORDER BY array_position(%(scopes)s::text[], scope), key COLLATE "C", space COLLATE "C"'
            " OFFSET %(offset)s LIMIT %(limit)s",
            params,
        )
        return found, int(row[0]) if row else 0

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
        """The best `limit` visible matches of the phrases (all of them, or any), by FTS5's bm25.

        The shortlist is scored from each row's stored terms, and only the rows kept are decoded.
        When the corpus counts show the matches fit in the shortlist, they are not ranked first."""
        if not phrases:
            return []
        corpus = self._corpus(phrases)
        matches = sum(corpus.holding) if join == " | " else min(corpus.holding)
        if not matches:
            return []
        shortlist = limit * SHORTLIST_FACTOR
        query = join.join(f"({phrase_query(p)})" for p in phrases)
        sought = query
        if join == " | " and matches > shortlist:
            sought = " | ".join(f"({phrase_query(p)})" for p in _rare(phrases, corpus.holding, shortlist))
        # Ties at the cut are broken by id, so that the same query over the same rows scores the same ones.
        rank = "0.0" if matches <= shortlist else _SHORTLIST_RANK
        rows = self.conn.execute(
            f"""
            SELECT m.id, m.terms, CASE WHEN m.terms IS NULL THEN m.record END FROM (
                SELECT id, {rank} AS rank FROM memory_docs
                WHERE space = ANY(%(spaces)s) AND scope = ANY(%(scopes)s) AND {_VISIBLE} AND doc @@ %(sought)s::tsquery
                ORDER BY rank DESC, id LIMIT %(n)s
            ) shortlist JOIN memories m USING (id) ORDER BY shortlist.rank DESC, m.id
            """,
            {**self._where(scopes), "query": query, "sought": sought, "n": shortlist},
        ).fetchall()
        scorer = bm25.Scorer(phrases, corpus)
        scored = [(scorer.joined(*_joined(terms, record)), n, id_) for n, (id_, terms, record) in enumerate(rows)]
        scored.sort(key=lambda entry: (-entry[0], entry[1]))
        best = scored[:limit]
        # Read again, a row archived or deleted since the shortlist is left out.
        found = {
            id_: Candidate.of(Memory.from_dict(record), space, f"{scope}/{key}")
            for id_, space, scope, key, record in self.conn.execute(
                f"SELECT id, {_COLUMNS} FROM memories WHERE id = ANY(%(ids)s) AND {_VISIBLE}",
                {"ids": [id_ for _, _, id_ in best], "now": time.time()},
            )
        }
        return [(found[id_], relevance) for relevance, _, id_ in best if id_ in found]

    def _holding(self, phrases: Sequence[bm25.Phrase]) -> list[int]:
        """Per phrase, the rows of the tier's spaces (every scope, hidden ones too) that hold it,
        counted once a request (an any-word search reuses the every-word search's counts).

        The writes keep these counts for single words (migration 0020's `memory_terms`): one lookup
        by the primary key. A phrase of several tokens, or a prefix the table has no entry for, is
        counted through the GIN index: rare in queries, and its rows are those holding all its tokens."""
        wanted = [p for p in dict.fromkeys(phrases) if p not in self._held]
        terms = {p: term for p in wanted if (term := bm25.held_term(p)) is not None}
        if terms:
            rows = self.conn.execute(
                "SELECT term, sum(rows) FROM memory_terms WHERE space = ANY(%s) AND term = ANY(%s) GROUP BY term",
                (self._spaces(), sorted(set(terms.values()))),
            )
            counted = {term: int(n) for term, n in rows}
            self._held.update((p, counted.get(term, 0)) for p, term in terms.items())
        for phrase in (p for p in wanted if p not in terms):
            row = self.conn.execute(
                "SELECT count(*) FROM memory_docs WHERE space = ANY(%s) AND doc @@ %s::tsquery",
                (self._spaces(), phrase_query(phrase)),
            ).fetchone()
            self._held[phrase] = int(row[0]) if row else 0
        return [self._held[p] for p in phrases]

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

    def nearest(self, scopes: Sequence[str], query: str, limit: int) -> list[tuple[Candidate, float]] | None:
        """The `limit` visible rows of these scopes nearest to `query` in meaning, with their cosine,
        nearest first; None while the replica has no model. The vectors' copy may hold rows hidden
        or moved since: the rows are read again, and more are asked for until `limit` are visible."""
        model = self.meaning.model if self.meaning is not None else None
        if model is None or self.meaning is None:
            return None
        vector = model.query(query)
        wanted = 2 * limit  # some of the nearest may be hidden: one round trip mostly suffices
        while True:
            near = self.meaning.nearest(self.conn, self._spaces(), scopes, vector, wanted)
            rows = {
                id_: Candidate.of(Memory.from_dict(record), space, f"{scope}/{key}")
                for id_, space, scope, key, record in self.conn.execute(
                    f"SELECT id, {_COLUMNS} FROM memories WHERE id = ANY(%(ids)s) AND space = ANY(%(spaces)s)"
                    f" AND scope = ANY(%(scopes)s) AND {_VISIBLE}",
                    {**self._where(scopes), "ids": [id_ for id_, _ in near]},
                )
            }
            found = [(rows[id_], cosine) for id_, cosine in near if id_ in rows]
            if len(found) >= limit or len(near) < wanted:
                return found[:limit]
            wanted *= 4

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
        # The copies in hand are left out in SQL, not decoded again: a search's 50 hits rarely have a
        # rival. A space holds no "/" and a key none, so space/scope/key names one row.
        return self._candidates(
            f"SELECT {_COLUMNS} FROM memories"
            f" WHERE space = ANY(%(spaces)s) AND scope = ANY(%(scopes)s) AND key = ANY(%(keys)s) AND {_VISIBLE}"
            " AND space || '/' || scope || '/' || key <> ALL(%(have)s)",
            {
                "scopes": list(scopes),
                "keys": sorted({c.key for c in of}),
                "have": sorted({f"{c.origin}/{c.place}" for c in of}),
            },
        )

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

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """A transaction, or none when the caller's is open (an Idempotency-Key's): a savepoint in it
        would cost two round trips and change nothing, since an error ends the caller's one too.

        In a pipeline: the BEGIN goes with the lock's statement, and the write with the COMMIT."""
        if self.conn.info.transaction_status == TransactionStatus.INTRANS:
            yield
            return
        with self.conn.pipeline(), self.conn.transaction():
            yield

    def _lock(self, space: str, scope: str, key: str) -> tuple[Memory | None, int]:
        """Inside a transaction: hold scope::key of `space` until it ends; what is there now, and the
        tokens it counts for in its space's counters. One round trip (migration 0006)."""
        row = self.conn.execute("SELECT record, tokens FROM memory_locked(%s, %s, %s)", (space, scope, key)).fetchone()
        return (Memory.from_dict(row[0]), int(row[1])) if row else (None, 0)

    def _put(self, space: str, memory: Memory, before: Memory | None, old: int) -> int:
        """Upsert the row, drop its tombstone and count the change (`old`: the tokens the row counted
        for before): one statement, one round trip. The tokens the row counts for now."""
        columns = columns_of(memory)
        tokens = sum(len(column) for column in columns)
        changed = vectors.text_changed(before, memory)
        self.conn.execute(
            """
            WITH put AS (
                INSERT INTO memories (space, scope, key, record, archived, expires_ts, updated_ts, seen_count, terms,
                                      owner, tokens)
                VALUES (%(space)s, %(scope)s, %(key)s, %(record)s, %(archived)s, %(expires)s, %(updated)s, %(seen)s,
                        %(terms)s, %(owner)s, %(tokens)s)
                ON CONFLICT (space, scope, key) DO UPDATE SET
                    record = excluded.record, archived = excluded.archived, expires_ts = excluded.expires_ts,
                    updated_ts = excluded.updated_ts, seen_count = excluded.seen_count, terms = excluded.terms,
                    tokens = excluded.tokens, seq = nextval('memory_changes'),
                    owner = coalesce(memories.owner, excluded.owner),
                    changed = clock_timestamp()
                RETURNING id
            ), indexed AS (
                INSERT INTO memory_docs (id, space, scope, archived, expires_ts, doc)
                SELECT id, %(space)s, %(scope)s, %(archived)s, %(expires)s, %(doc)s::tsvector FROM put
                ON CONFLICT (id) DO UPDATE SET archived = excluded.archived, expires_ts = excluded.expires_ts,
                    doc = excluded.doc
            ), unburied AS (
                DELETE FROM memory_tombstones WHERE space = %(space)s AND scope = %(scope)s AND key = %(key)s
            )
            """
            + (_UNVECTORED if changed else "")
            + _COUNTED,
            {
                "space": space,
                "scope": str(memory.scope),
                "key": memory.key,
                "record": json.dumps(memory.to_dict()),
                "archived": memory.archived_at is not None,
                "expires": epoch_from_iso(memory.expires_at) if memory.expires_at else None,
                "updated": epoch_from_iso(memory.updated) if memory.updated else 0.0,
                "seen": memory.seen_count,
                "terms": terms_of(columns),
                "doc": document(columns),
                "owner": self.owner,
                "tokens": tokens,
                "rows": 0 if before else 1,
                "change": tokens - old,
                "shards": SPACE_SHARDS,
            },
        )
        if changed and self.meaning is not None:
            self.meaning.written(space, str(memory.scope), memory.key)
        return tokens

    def _check_quota(
        self, space: str, before: Memory | None, after: Memory, used: dict[int, int] | None = None
    ) -> None:
        """Refuse a write that would give a row's owner more visible rows than the quota allows: the
        writer's for a new row; for a hidden row made visible again (a restore, a write over an
        archived copy), the user who first wrote it, whose quota it counts against (`owner`).

        `used`, within one transaction, keeps each owner's count once taken: the owner's quota lock is
        held until the transaction ends, so only this transaction's own rows change it (an import of
        500 new rows counted the owner's rows 500 times)."""
        if self.quota is None or self.owner is None or not after.is_visible():
            return
        if before is not None and before.is_visible():
            return
        if before is None and used is not None and self.owner in used:
            found: tuple[int, int, str] | None = (used[self.owner], self.owner, "")
        else:
            # The owner's quota lock, then the count: one round trip (migration 0006). A row whose
            # writer's account is gone becomes the reviver's (`_put`).
            found = self.conn.execute(
                "SELECT memory_quota_used(o.id, %(now)s), o.id, o.name FROM users o"
                " WHERE o.id = coalesce((SELECT owner FROM memories"
                " WHERE space = %(space)s AND scope = %(scope)s AND key = %(key)s), %(me)s)",
                {"now": time.time(), "space": space, "scope": str(after.scope), "key": after.key, "me": self.owner},
            ).fetchone()
        if found is None:
            return
        count, owner, name = int(found[0]), int(found[1]), str(found[2])
        if count >= self.quota:
            whose = "your account" if owner == self.owner else f"the account of {name}, who first wrote this memory,"
            raise QuotaExceeded(
                f"{whose} holds {count:,} active memories, the most it may hold ({self.quota:,}):"
                " archive or forget some first (archived ones do not count)"
            )
        if used is not None:
            used[owner] = count + 1

    def store(
        self, part: str, scope: Scope, key: str, build: Build, prefer: Candidate | None = None
    ) -> tuple[Path, Memory | None, Memory | None]:
        space = self.parts[part]
        with self._transaction():
            existing, old = self._lock(space, str(scope), key)
            memory = build(existing)
            if memory is not None:
                self._check_quota(space, existing, memory)
                self._put(space, memory, existing, old)
        return Path(space, f"{scope}/{key}"), existing, memory

    def delete(self, candidate: Candidate, still: Callable[[Memory], bool]) -> bool:
        with self._transaction():
            existing, old = self._lock(candidate.origin, candidate.scope, candidate.key)
            if existing is None or not still(existing):
                return False
            self.conn.execute(
                """
                WITH gone AS (
                    DELETE FROM memories WHERE space = %(space)s AND scope = %(scope)s AND key = %(key)s RETURNING id
                ), unindexed AS (
                    DELETE FROM memory_docs WHERE id IN (SELECT id FROM gone)
                ), buried AS (
                    INSERT INTO memory_tombstones (space, scope, key) VALUES (%(space)s, %(scope)s, %(key)s)
                    ON CONFLICT (space, scope, key) DO UPDATE SET seq = nextval('memory_changes'),
                        changed = clock_timestamp()
                )
                """
                + _COUNTED,
                {
                    "space": candidate.origin,
                    "scope": candidate.scope,
                    "key": candidate.key,
                    "rows": -1,
                    "change": -old,
                    "shards": SPACE_SHARDS,
                },
            )
        return True

    def unwritable(self, part: str, memories: Sequence[Memory]) -> dict[str, ValueError]:
        return {}  # a row is always writable; what a record may hold is the service's rule

    def store_batch(self, part: str, memories: Sequence[Memory], merge: Merge) -> tuple[list[str], list[str]]:
        """Every address locked first, in one order (scope, key), then the rows written: two imports of
        the same keys in other orders, or one that locked an address while another held the space's
        counters row and waited for that address, deadlocked (PostgreSQL ended one, a 503)."""
        space, written, unchanged = self.parts[part], [], []
        used: dict[int, int] = {}  # the quota's counts taken in this transaction
        with self._transaction():
            held = {}
            for address in sorted({(str(m.scope), m.key) for m in memories}):
                held[address] = self._lock(space, *address)
            for memory in memories:
                address = (str(memory.scope), memory.key)
                existing, old = held[address]
                kept = merge(memory, existing)
                if kept is None:
                    unchanged.append(memory.address)
                else:
                    self._check_quota(space, existing, kept, used)
                    held[address] = (kept, self._put(space, kept, existing, old))
                    written.append(memory.address)
        return written, unchanged

    def close(self) -> None:
        """The connection is the caller's (a request's, borrowed from the pool)."""
