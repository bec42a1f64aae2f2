"""Recall by meaning on the team server: the model, each memory's vectors in PostgreSQL (migration
0015; its symptoms' phrasings' own vectors, migration 0018), and the nearest rows to a query, found in
this process. A row is as near as the nearest of its vectors, as on a machine (memory/vectors.py
`with_symptoms`).

The model is the one a machine runs (memory/vectors.py: all-MiniLM-L6-v2 int8 from the `semantic`
extra, nothing downloaded), loaded once per replica in the background after it starts; until it is
loaded, or where the extra is not installed, searches rank by BM25 alone and writes store no vector.
A write that changes a row's text drops its vector (postgres/tier.py) and tells the replica, whose
model thread computes the new one about a second later, in one batch with the others written
meanwhile: no write waits for the model. A row without a vector (written before migration 0015,
while no model was loaded, or by a replica that stopped first), or whose symptoms' vectors are not
its phrasings' (written by a replica of older code during a rolling upgrade), gets them from
`backfill`, which a replica runs once its model is loaded and then hourly.

pgvector is not available, so the nearest rows are found by brute force over a copy of each space's
vectors held here as float32 (a 100,000-row space: 150 MB, one matrix product per search). The copy
is read once per space, then refreshed at each search with the vectors changed since (their change
numbers, settled as the change feed's are: postgres/tier.py `changes`). A row deleted, archived,
expired or moved to another space stays in the copy; the tier reads the nearest rows again and keeps
the visible ones of the spaces and scopes asked, so the copy never shows one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

import psycopg

from hivelore.memory import vectors
from hivelore.memory.model import Memory

TYPE_CHECKING = False
if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Matrix = npt.NDArray[np.float32]

log = logging.getLogger("hivelore.server")

SETTLED_S = 10  # as postgres/tier.py's: a change this old was committed by a transaction that has ended
RECENT_TEXTS = 1024  # vectors of texts just computed: a text written again costs no second run
BACKFILL_BATCH = 256
GATHER_S = 1.0  # a written text waits this long for others, to go through the model in one batch

Connect = Callable[[], AbstractContextManager[psycopg.Connection]]


class Model:
    """The embedding model of one replica, shared by its request threads (one at a time: the
    runtime's session is, and a second thread on a 2-core machine gains nothing)."""

    def __init__(self, embedder: vectors.Embedder) -> None:
        self.embedder = embedder
        self._lock = threading.Lock()
        self._recent: OrderedDict[str, bytes] = OrderedDict()

    def vectors(self, texts: Sequence[str]) -> dict[str, bytes]:
        """Per text hash (memory/vectors.py `text_hash`), its vector as stored: 384 float16."""
        import numpy as np

        hashes = {vectors.text_hash(text): text for text in texts}
        with self._lock:
            missing = [h for h in hashes if h not in self._recent]
            if missing:
                computed = self.embedder.embed([hashes[h] for h in missing]).astype("<f2")
                for n, digest in enumerate(missing):
                    self._recent[digest] = np.ascontiguousarray(computed[n]).tobytes()
            found = {h: self._recent[h] for h in hashes}
            for digest in hashes:
                self._recent.move_to_end(digest)
            while len(self._recent) > RECENT_TEXTS:
                self._recent.popitem(last=False)
        return found

    def query(self, text: str) -> Matrix:
        with self._lock:
            return self.embedder.query(text)


class SpaceVectors:
    """This replica's copy of one space's vectors: row ids, their scopes, and the matrix. Its lock
    is held to change or read it, never across a round trip to the database."""

    def __init__(self) -> None:
        import numpy as np

        self.cursor = 0  # the change number read up to, past which nothing unsettled lies
        self.lock = threading.Lock()
        self.rows: dict[int, int] = {}  # memory id → its row in the matrix
        self.seqs: dict[int, int] = {}  # memory id → the change number of the vector held
        self.scope_codes: dict[str, int] = {}
        self.ids = np.zeros(0, dtype=np.int64)
        self.scopes = np.zeros(0, dtype=np.int32)
        self.matrix = np.zeros((0, vectors.DIMENSIONS), dtype=np.float32)
        # The phrasings' vectors of the rows that have symptoms, and their rows in `matrix` (a row per
        # phrasing): a store where few memories carry symptoms does not hold a second matrix of its size.
        self.symptoms = np.zeros((0, vectors.DIMENSIONS), dtype=np.float32)
        self.symptom_rows = np.zeros(0, dtype=np.int64)
        self.symptom_at: dict[int, list[int]] = {}  # row in `matrix` → its rows in `symptoms`

    def wants(self, id_: int, seq: int) -> bool:
        """Whether the vector of change number `seq` is newer than the one held for the row."""
        return self.seqs.get(id_, 0) < seq

    def take(self, rows: Sequence[tuple[int, str, bytes, bytes | None, int]], settled: int) -> None:
        """Keep these vectors (id, scope, vector, its phrasings' vectors stacked or None, change number)
        where newer than the ones held; the space's vectors are then all held up to change number `settled`."""
        newer = [(id_, scope, vector, symptoms) for id_, scope, vector, symptoms, seq in rows if self.wants(id_, seq)]
        self.seqs.update((id_, seq) for id_, *_, seq in rows if self.wants(id_, seq))
        self._apply(newer)
        self.cursor = max(self.cursor, settled)

    def _apply(self, rows: Sequence[tuple[int, str, bytes, bytes | None]]) -> None:
        import numpy as np

        new: list[tuple[int, int, bytes]] = []
        for id_, scope, vector, _ in rows:
            code = self.scope_codes.setdefault(scope, len(self.scope_codes))
            row = self.rows.get(id_)
            if row is None:
                new.append((id_, code, vector))
            else:
                self.scopes[row] = code
                self.matrix[row] = np.frombuffer(vector, dtype="<f2")
        if new:
            start = len(self.ids)
            self.rows.update((id_, start + n) for n, (id_, _, _) in enumerate(new))
            self.ids = np.concatenate([self.ids, np.array([row[0] for row in new], dtype=np.int64)])
            self.scopes = np.concatenate([self.scopes, np.array([row[1] for row in new], dtype=np.int32)])
            self.matrix = np.concatenate([self.matrix, _stacked([row[2] for row in new])])
        self._keep_symptoms([(self.rows[id_], symptoms) for id_, _, _, symptoms in rows])

    def _keep_symptoms(self, rows: Sequence[tuple[int, bytes | None]]) -> None:
        """Keep these rows' phrasings' vectors (None: the row has none now). A row keeps the places it
        had in `symptoms`: fewer phrasings than before leave the rest zero (cosine 0, below
        MIN_SIMILARITY), more take new places at the end."""
        import numpy as np

        added: list[tuple[int, bytes]] = []
        for row, stacked in rows:
            phrasings = _split(stacked or b"")
            places = self.symptom_at.setdefault(row, [])
            for n, place in enumerate(places):
                self.symptoms[place] = np.frombuffer(phrasings[n] if n < len(phrasings) else _NONE, dtype="<f2")
            for vector in phrasings[len(places) :]:
                places.append(len(self.symptom_rows) + len(added))
                added.append((row, vector))
            if not places:
                del self.symptom_at[row]
        if added:
            self.symptom_rows = np.concatenate([self.symptom_rows, np.array([r for r, _ in added], dtype=np.int64)])
            self.symptoms = np.concatenate([self.symptoms, _stacked([s for _, s in added])])

    def nearest(self, scopes: Sequence[str], query: Matrix, limit: int) -> list[tuple[int, float]]:
        """The `limit` rows of these scopes nearest to the query, at least MIN_SIMILARITY near,
        nearest first (ties by id)."""
        import numpy as np

        codes = [self.scope_codes[s] for s in scopes if s in self.scope_codes]
        if not codes or not len(self.ids):
            return []
        similarity = vectors.with_symptoms(self.matrix @ query, query, self.symptom_rows, self.symptoms)
        similarity[~np.isin(self.scopes, codes)] = -np.inf
        take = min(limit, len(similarity))
        top = np.argpartition(-similarity, take - 1)[:take]
        top = top[np.lexsort((self.ids[top], -similarity[top]))]
        return [(int(self.ids[n]), float(similarity[n])) for n in top if similarity[n] >= vectors.MIN_SIMILARITY]


class Meaning:
    """What a replica holds for recall by meaning: the model once loaded, and its spaces' vectors.
    `state`: "off", "loading" (BM25 alone meanwhile), "backfilling" (rows written without a vector
    get one) or "ready"."""

    def __init__(self, enabled: bool = True) -> None:
        """`enabled` False (`hivelore serve --no-meaning`), or without the semantic extra: BM25 alone."""
        self.model: Model | None = None
        self.state = "loading" if enabled and vectors.installed() else "off"
        self.load_s = 0.0
        self._spaces: dict[str, SpaceVectors] = {}
        self._lock = threading.Lock()
        self._written: set[tuple[str, str, str]] = set()  # addresses whose text changed, to embed
        self._wake = threading.Event()

    def written(self, space: str, scope: str, key: str) -> None:
        """A write changed the text at this address: its vector is computed in the background, about
        GATHER_S later with the others written meanwhile (one batch through the model), so no write
        waits for the model. A write whose transaction commits later still is left to the hourly backfill."""
        if self.state == "off":
            return
        with self._lock:
            self._written.add((space, scope, key))
        self._wake.set()

    def load(self) -> None:
        """Load the model (about a second); a replica serves by BM25 alone until it is loaded."""
        if self.state == "off":
            return
        started = time.perf_counter()
        self.model = Model(vectors.Embedder())
        self.load_s = time.perf_counter() - started
        self.state = "backfilling"  # searches rank by meaning already; rows without a vector wait for it

    def start(self, connect: Connect) -> threading.Thread:
        """Load the model, then give every row without a vector one, in a thread of its own."""

        def run() -> None:
            try:
                self.load()
            except (ImportError, OSError, RuntimeError) as exc:  # a broken install of the extra: BM25 alone
                self.state = "off"
                log.warning("model not loaded: recall by meaning is off", extra={"fields": {"error": _first(exc)}})
                return
            if self.model is not None:
                done = self.catch_up(connect)
                log.info("meaning ready", extra={"fields": {"load_s": round(self.load_s, 3), "backfilled": done}})
                self._embed_writes(connect, self.model)

        thread = threading.Thread(target=run, name="hivelore-meaning", daemon=True)
        thread.start()
        return thread

    def _embed_writes(self, connect: Connect, model: Model) -> None:
        """Forever: wait for writes, gather them for GATHER_S, give their rows a vector."""
        while True:
            self._wake.wait()
            time.sleep(GATHER_S)
            self._wake.clear()
            with self._lock:
                keys, self._written = sorted(self._written), set()
            try:
                embed_written(connect, model, keys)
            except psycopg.Error as exc:  # the database away: the hourly backfill gives them their vectors
                log.warning("vectors of writes not kept", extra={"fields": {"error": _first(exc)}})

    def catch_up(self, connect: Connect) -> int:
        """The backfill, once the model is loaded (at start, then hourly: a replica without the model
        may have written since); how many rows got a vector. The database away: the next round tries."""
        if self.model is None:
            return 0
        try:
            done = backfill(connect, self.model)
        except psycopg.Error as exc:
            log.warning("backfill stopped", extra={"fields": {"error": _first(exc)}})
            return 0
        self.state = "ready"
        return done

    def space(self, space: str) -> SpaceVectors:
        with self._lock:
            return self._spaces.setdefault(space, SpaceVectors())

    def nearest(
        self, conn: psycopg.Connection, spaces: Sequence[str], scopes: Sequence[str], query: Matrix, limit: int
    ) -> list[tuple[int, float]]:
        """Over these spaces, the `limit` rows of these scopes nearest to the query, nearest first.

        The spaces' copies are brought up to date first: one round trip for the change numbers past
        each space's cursor (vectors not yet settled come again each time: the numbers alone), and one
        more for the vectors not held yet, if any. Each space from its own cursor: from the lowest of
        them, the first search of a user this replica had not seen (an empty personal space, cursor 0)
        read the change number of every vector of the organisation."""
        held = {space: self.space(space) for space in sorted(spaces)}
        if not held:
            return []
        changed = conn.execute(
            " UNION ALL ".join(
                "(SELECT m.space, v.id, v.seq, v.changed < clock_timestamp() - %s * interval '1 second'"
                " FROM memory_vectors v JOIN memories m USING (id) WHERE m.space = %s AND v.seq > %s)"
                for _ in held
            )
            + " ORDER BY 3",
            [value for space, copy in held.items() for value in (SETTLED_S, space, copy.cursor)],
            # Planned for its cursors, never generically: a generic plan joins every vector of the table.
            prepare=False,
        ).fetchall()
        # Each space is complete up to the last change before its first one that may not be committed
        # yet (a space without a change past its cursor stays where it is).
        settled = {space: copy.cursor for space, copy in held.items()}
        unsettled: set[str] = set()
        for space, _, seq, done in changed:
            if not done:
                unsettled.add(space)
            elif space not in unsettled:
                settled[space] = seq
        wanted = [id_ for space, id_, seq, _ in changed if held[space].wants(id_, seq)]
        fresh = conn.execute(
            "SELECT m.space, v.id, m.scope, v.vector, v.symptoms, v.seq FROM memory_vectors v"
            " JOIN memories m USING (id) WHERE v.id = ANY(%s)",
            (wanted,),
        ).fetchall() if wanted else []  # fmt: skip
        found: list[tuple[int, float]] = []
        for space, copy in held.items():
            with copy.lock:
                copy.take([row[1:] for row in fresh if row[0] == space], settled[space])
                found += copy.nearest(scopes, query, limit)
        found.sort(key=lambda pair: (-pair[1], pair[0]))
        return found[:limit]


VECTOR_BYTES = 2 * vectors.DIMENSIONS  # one vector as stored: 384 float16
_NONE = bytes(VECTOR_BYTES)  # the zero vector: a phrasing a row no longer has


def _split(stacked: bytes) -> list[bytes]:
    """The `symptoms` column's vectors, one per phrasing."""
    return [stacked[at : at + VECTOR_BYTES] for at in range(0, len(stacked), VECTOR_BYTES)]


def _stacked(stored: Sequence[bytes]) -> Matrix:
    import numpy as np

    return np.frombuffer(b"".join(stored), dtype="<f2").reshape(len(stored), vectors.DIMENSIONS).astype(np.float32)


def _first(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


# How many phrasings a record's `when` has, as memory/vectors.py `symptom_phrasings` splits it (its
# `strip` also takes rarer whitespace: such a row is only computed again, to the same vectors).
_PHRASINGS = r"""
    (SELECT count(DISTINCT btrim(p, E' \t\n\r\f\x0b'))
     FROM regexp_split_to_table(coalesce(m.record ->> 'when', ''), ';') AS p
     WHERE btrim(p, E' \t\n\r\f\x0b') <> '')
"""


def backfill(connect: Connect, model: Model, batch: int = BACKFILL_BATCH) -> int:
    """Give every memory without a vector one, and every vector whose symptoms' vectors are not one
    per phrasing its phrasings' (a row written by a replica of older code: none, or the whole `when`
    as one), `batch` rows a transaction, oldest first; how many."""
    done, after = 0, 0
    while True:
        with connect() as conn:
            rows = conn.execute(
                f"""
                SELECT m.id, m.seq, m.record FROM memories m LEFT JOIN memory_vectors v USING (id)
                WHERE m.id > %s
                  AND (v.id IS NULL OR coalesce(octet_length(v.symptoms), 0) <> {VECTOR_BYTES} * {_PHRASINGS})
                ORDER BY m.id LIMIT %s
                """,
                (after, batch),
            ).fetchall()
            if not rows:
                return done
            done += _store(conn, model, rows)
            after = rows[-1][0]


def embed_written(connect: Connect, model: Model, keys: Sequence[tuple[str, str, str]]) -> int:
    """Give the rows at these addresses (space, scope, key) that have no vector one; how many."""
    done = 0
    for start in range(0, len(keys), BACKFILL_BATCH):
        part = keys[start : start + BACKFILL_BATCH]
        with connect() as conn:
            rows = conn.execute(
                """
                SELECT m.id, m.seq, m.record FROM memories m
                JOIN unnest(%s::text[], %s::text[], %s::text[]) AS w(space, scope, key) USING (space, scope, key)
                WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.id = m.id)
                """,
                ([k[0] for k in part], [k[1] for k in part], [k[2] for k in part]),
            ).fetchall()
            done += _store(conn, model, rows) if rows else 0
    return done


def _store(conn: psycopg.Connection, model: Model, rows: Sequence[tuple[int, int, dict[str, object]]]) -> int:
    """Compute and keep the vectors of these rows (id, change number, record), the lesson's and its
    phrasings' (stacked in their order, NULL without any), in one batch through the model. A row
    changed meanwhile is left to the write that changed it (its change number moved); a row with a
    vector of the same text gets the phrasings' vectors where it holds others, with a new change
    number so every replica's copy reads them."""
    memories = [Memory.from_dict(record) for _, _, record in rows]
    texts = [vectors.memory_text(memory) for memory in memories]
    symptoms = [vectors.symptom_phrasings(memory) for memory in memories]
    computed = model.vectors(texts + [text for phrasings in symptoms for text in phrasings])
    hashes = [vectors.text_hash(text) for text in texts]
    inserted = conn.execute(
        """
        INSERT INTO memory_vectors AS v (id, hash, vector, symptoms)
        SELECT u.id, u.hash, u.vector, u.symptoms
        FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::bytea[], %s::bytea[])
            AS u(id, seq, hash, vector, symptoms) JOIN memories m ON m.id = u.id AND m.seq = u.seq
        ON CONFLICT (id) DO UPDATE
            SET symptoms = excluded.symptoms, seq = nextval('memory_vector_changes'), changed = clock_timestamp()
            WHERE v.hash = excluded.hash AND v.symptoms IS DISTINCT FROM excluded.symptoms
        """,
        (
            [r[0] for r in rows],
            [r[1] for r in rows],
            hashes,
            [computed[h] for h in hashes],
            [b"".join(computed[vectors.text_hash(text)] for text in phrasings) or None for phrasings in symptoms],
        ),
    )
    return inserted.rowcount


def text_changed(before: Memory | None, after: Memory) -> bool:
    """Whether a write changes what the row's vector is computed from (a new row's included)."""
    return before is None or vectors.memory_text(before) != vectors.memory_text(after)
