"""The local tier: memory files in the vaults (the project's, committed with the repository, then the
user's home), found through the SQLite index; and the scan that stands in for it, chosen once, when
the index cannot be used (`open_local`).

Both keep the files the same way: a read-modify-write takes the vault's lock, finds the file that
holds scope::key (file names are only a convention: a file is scope::key's only when its
frontmatter says so), and replaces it atomically. `LocalTier` then brings the index along; the file
is already the truth, so an index that cannot follow costs a warning, not the write.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from hivelore import sqlitedb
from hivelore.confined import LinkRefused
from hivelore.memory import recall
from hivelore.memory.local.index import Index, IndexUnavailable, Row, folder_mtime, fts_query
from hivelore.memory.local.vault import UNREADABLE, Stamp, Swept, Vault, candidate_names
from hivelore.memory.model import Memory
from hivelore.memory.scope import Scope, parse
from hivelore.memory.tier import Build, Candidate, Merge, Survey, Tier, Wanted

FALLBACK_SCAN_LIMIT = 5000  # files read per command when the index cannot be used
OR_WORDS = 4  # words an any-word search looks for: the rarest, when a query has more

# Where a key's file is, what it holds now and the stamp a save checks for drift (None: a new file).
Place = tuple[Path, Memory | None, Stamp | None]


def open_local(
    vaults: Sequence[Vault],
    project_root: Path | None,
    index_path: Path,
    warnings: list[str],
    pool: sqlitedb.Pool | None = None,
) -> VaultTier:
    """The tier over these vaults: `LocalTier` when the index opens (it is created when the vaults
    are empty or it exists; taken from `pool` when it keeps a connection to it), else `ScanTier`,
    with a warning saying how to repair it."""
    empty = not any(v.has_memories() for v in vaults)
    try:
        index = Index.open(index_path, create=empty or index_path.exists(), pool=pool)
    except IndexUnavailable as exc:
        warnings.append(
            f"{exc}; reading files directly (at most {FALLBACK_SCAN_LIMIT} per command): run `hivelore index rebuild`."
        )
        return ScanTier(vaults, project_root, index_path, warnings, str(exc))
    return LocalTier(vaults, project_root, index_path, warnings, index)


class VaultTier(Tier):
    """What both local tiers share: the vaults, and writing their files under the vault lock."""

    def __init__(
        self, vaults: Sequence[Vault], project_root: Path | None, index_path: Path, warnings: list[str]
    ) -> None:
        self.vaults = list(vaults)
        self.project_root = project_root  # where the project tier is created by its first write
        self.index_path = index_path
        self.warnings = warnings
        self.parts = {v.tier: str(v.root) for v in self.vaults}
        self.problem: str | None = None  # why the index is not used
        self._loaded = _LoadedFiles()

    def _warn(self, warning: str) -> None:
        if warning not in self.warnings:
            self.warnings.append(warning)

    def _vault(self, part: str) -> Vault:
        for vault in self.vaults:
            if vault.tier == part:
                return vault
        if part == "project" and self.project_root is not None:
            return Vault(self.project_root, "project")
        raise ValueError(f"tier '{part}' is not 'home' or 'project'.")

    def _vault_of(self, candidate: Candidate) -> Vault:
        return next(v for v in self.vaults if str(v.root) == candidate.origin)

    # -- what each tier does around a change to the files ------------------------------------------

    def _known(self, vault: Vault, scope: Scope, keys: set[str]) -> dict[str, list[Path]]:
        """The files known to hold these keys of `scope` in `vault`, by key (tried before the names)."""
        return {}

    def _saved(self, vault: Vault, items: list[tuple[Path, Memory, Stamp]], added: dict[Path, tuple[int, int]]) -> None:
        """These files were written; `added` is, per folder, its mtime before and how many files are new."""

    def _deleted(self, vault: Vault, path: Path, before: int) -> None:
        """This file was deleted; its folder's mtime before was `before`."""

    # -- writes -----------------------------------------------------------------------------------

    def store(
        self, part: str, scope: Scope, key: str, build: Build, prefer: Candidate | None = None
    ) -> tuple[Path, Memory | None, Memory | None]:
        vault = self._vault(part)
        with vault.lock():
            path, existing, stamp = self._locate(vault, scope, key, prefer.path if prefer else None)
            memory = build(existing)
            if memory is not None:
                before = folder_mtime(path.parent)
                new_stamp = vault.save(path, memory, stamp)
                self._saved(vault, [(path, memory, new_stamp)], {path.parent: (before, 0 if existing else 1)})
        return path, existing, memory

    def _locate(self, vault: Vault, scope: Scope, key: str, prefer: Path | None = None) -> Place:
        """Where (scope, key) lives in `vault`, and what is there now. Call under the vault lock.
        `prefer` is the copy a read chose; otherwise copies are tried in the order reads rank them
        (by file name)."""
        known = sorted(self._known(vault, scope, {key}).get(key, []))
        names = vault.candidate_paths(scope, key)
        for path in dict.fromkeys([*([prefer] if prefer else []), *known, *names]):
            if not path.exists():
                continue
            try:
                memory, stamp = vault.load(path)
            except LinkRefused:
                raise
            except UNREADABLE as exc:
                raise ValueError(f"{path} cannot be read ({exc}): fix or delete it, then write again.") from exc
            if (memory.scope, memory.key) == (scope, key):
                return path, memory, stamp
        for path in names:
            if not path.exists():
                return path, None, None
        raise ValueError(f"every file name for {scope}::{key} in {vault.root} holds another memory: rename one.")

    def delete(self, candidate: Candidate, still: Callable[[Memory], bool]) -> bool:
        """Delete the file if, read again under the lock, it is still the same memory and `still` holds
        for it (purge: still hidden; another agent may have just revived it)."""
        vault, path = self._vault_of(candidate), candidate.path
        with vault.lock():
            try:
                memory, stamp = vault.load(path)
            except UNREADABLE:
                return False
            if (str(memory.scope), memory.key) != (candidate.scope, candidate.key) or not still(memory):
                return False
            before = folder_mtime(path.parent)
            vault.delete(path, stamp)
            self._deleted(vault, path, before)
        return True

    def unwritable(self, part: str, memories: Sequence[Memory]) -> dict[str, ValueError]:
        try:
            vault = self._vault(part)
        except ValueError as exc:
            return {m.address: exc for m in memories}
        found: dict[str, ValueError] = {}
        for scope, group in _by_scope(memories).items():
            for key, place in self._locate_many(vault, scope, [m.key for m in group]).items():
                if isinstance(place, ValueError):
                    found[f"{scope}::{key}"] = place
        return found

    def store_batch(self, part: str, memories: Sequence[Memory], merge: Merge) -> tuple[list[str], list[str]]:
        """Under one lock, one save of many files (one fsync per folder) and one index transaction."""
        vault = self._vault(part)
        with vault.lock():
            writes: list[tuple[Path, Memory, Stamp | None]] = []
            added: dict[Path, int] = {}
            unchanged: list[str] = []
            for scope, group in _by_scope(memories).items():
                located = self._locate_many(vault, scope, [m.key for m in group])
                for memory in group:
                    place = located[memory.key]
                    if isinstance(place, ValueError):
                        raise place
                    path, existing, stamp = place
                    merged = merge(memory, existing)
                    if merged is None:
                        unchanged.append(memory.address)
                        continue
                    writes.append((path, merged, stamp))
                    added[path.parent] = added.get(path.parent, 0) + (existing is None)
            before = {folder: folder_mtime(folder) for folder in added}
            stamps = vault.save_many(writes)
            if writes:
                saved = [(p, m, s) for (p, m, _), s in zip(writes, stamps, strict=True)]
                self._saved(vault, saved, {folder: (before[folder], n) for folder, n in added.items()})
        return [m.address for _, m, _ in writes], unchanged

    def _locate_many(self, vault: Vault, scope: Scope, keys: Sequence[str]) -> dict[str, Place | ValueError]:
        """`_locate` of many keys of one scope: the folder listed once, the known copies asked once, only
        the files that may be a key's read (and those already read at the same size and mtime reused).
        Keys given earlier take their new files' names first, as if written one after the other."""
        known = self._known(vault, scope, set(keys))
        try:
            listed = vault.names_in(scope)
        except LinkRefused as exc:
            return {key: exc for key in keys}
        folder = vault.folder(scope)
        taken: set[str] = set()  # names the new files of earlier keys take
        found: dict[str, Place | ValueError] = {}
        for key in keys:
            try:
                place = self._pick_file(vault, scope, key, folder, sorted(known.get(key, [])), listed, taken)
            except ValueError as exc:  # LinkRefused too
                found[key] = exc
                continue
            found[key] = place
            if place[1] is None:
                taken.add(place[0].name)
        return found

    def _pick_file(
        self,
        vault: Vault,
        scope: Scope,
        key: str,
        folder: Path,
        known: list[Path],
        listed: set[str],
        taken: set[str],
    ) -> Place:
        """What `_locate` decides for one key, with its folder's names in hand: the known copies, then
        the file names the key may have, the first one that holds it; else the first free name. A
        name an earlier key of the batch takes holds another memory."""
        names = candidate_names(key)
        tried: set[str] = set()
        for path in [*known, *(folder / name for name in names if name in listed)]:
            if path.parent == folder:
                if path.name in tried or path.name in taken or path.name not in listed:
                    continue
                tried.add(path.name)
            elif not path.exists():
                continue
            try:
                memory, stamp = self._loaded.load(vault, path)
            except LinkRefused:
                raise
            except UNREADABLE as exc:  # noqa: PERF203 -- the rare bad file ends the loop
                raise ValueError(f"{path} cannot be read ({exc}): fix or delete it, then write again.") from exc
            if (memory.scope, memory.key) == (scope, key):
                return path, memory, stamp
        for name in names:
            if name not in listed and name not in taken:
                return folder / name, None, None
        raise ValueError(f"every file name for {scope}::{key} in {vault.root} holds another memory: rename one.")

    # -- reads that go to the files either way ----------------------------------------------------

    def scopes(self) -> set[str]:
        return {str(s) for vault in self.vaults for s in vault.scopes_on_disk()}

    def everything(self, include_hidden: bool = False) -> Iterator[Memory]:
        for vault in self.vaults:
            for folder, _, names in vault.walk_folders():
                for path, memory, _ in vault.load_folder(folder, names):
                    if not isinstance(memory, Memory):
                        self.warnings.append(f"skipped {path}: {memory}")
                    elif include_hidden or memory.is_visible():
                        yield memory

    # -- upkeep -----------------------------------------------------------------------------------

    def sweep(self) -> Swept:
        """Remove the temp files writers killed mid-write left in the vaults' folders (stale ones only)."""
        total = Swept()
        for vault in self.vaults:
            total += vault.sweep()
        return total

    def status(self, scopes: Sequence[str]) -> dict[str, object]:
        """The index's file, and whether it is used (with what is wrong if not); `scopes` are refreshed
        first."""
        return {"path": str(self.index_path), "exists": self.index_path.exists()}


class LocalTier(VaultTier):
    """The vaults, read through the index. Every read refreshes the folders of the scopes it reads
    and re-checks the files it is about to return (see memory/local/index.py)."""

    def __init__(
        self, vaults: Sequence[Vault], project_root: Path | None, index_path: Path, warnings: list[str], index: Index
    ) -> None:
        super().__init__(vaults, project_root, index_path, warnings)
        self.index = index

    def close(self) -> None:
        self.index.close()

    def _refresh(self, scopes: Sequence[str]) -> None:
        self.index.refresh(self.vaults, [parse(s) for s in scopes])

    def _collect(self) -> None:
        """Pass on what the index had to say (files skipped) to the shared warnings."""
        for warning in self.index.warnings:
            self._warn(warning)
        self.index.warnings.clear()

    # -- reads ------------------------------------------------------------------------------------

    def copies(self, scopes: Sequence[str], keys: set[str]) -> list[Candidate]:
        self._refresh(scopes)
        rows = self.index.verified(self.vaults, self.index.by_keys(self.vaults, scopes, keys))
        self._collect()
        return list(rows)

    def listed(self, scopes: Sequence[str], include_hidden: bool = False) -> list[Candidate]:
        self._refresh(scopes)
        rows = self.index.verified(self.vaults, self.index.rows(self.vaults, scopes, visible=not include_hidden))
        self._collect()
        return list(rows) if include_hidden else [r for r in rows if r.memory.is_visible()]

    def page(self, scopes: Sequence[str], wanted: Wanted, offset: int, limit: int) -> tuple[list[Candidate], int]:
        """The page read from the index, so only its rows are decoded and re-checked; words in the
        text are matched in Python, on every copy, as the base class does (SQLite's lower() knows
        only ASCII, so it would not match as `str.lower` does)."""
        if wanted.words:
            return super().page(scopes, wanted, offset, limit)
        self._refresh(scopes)
        rows, total = self.index.page(self.vaults, scopes, wanted, offset, limit)
        now = time.time()
        # A row whose file changed since it was indexed is re-read: keep it only if it still fits.
        fresh = [f for r in rows if (f := self.index.verify(self.vaults, r)) is r or (f and wanted.keeps(f, now))]
        self._collect()
        return list(fresh), total

    def match(self, scopes: Sequence[str], words: Sequence[str], limit: int) -> list[tuple[Candidate, float]]:
        """Memories with every word first (a small set, quick to rank); then, if that is too few, with any
        of the rarest few words. BM25 scores of the two queries are comparable: a word a memory lacks adds
        nothing, and a word most memories hold adds next to nothing, while every memory that holds it must
        be ranked (a prompt's "tests" or "fail" in a large store: tens of milliseconds each)."""
        self._refresh(scopes)
        # Read from the counts the writes keep: a word no memory holds leaves the every-word search
        # nothing to find, and a long query's rarest words are known without a look at the text index.
        counts = self.index.document_counts(words) if len(words) > 1 else {}
        every_word = fts_query(words, every_word=True)
        pairs = self.index.match(self.vaults, scopes, every_word, limit) if all(counts.values()) else []
        if len(pairs) < limit and len(words) > 1:
            seen = {(r.origin, r.place) for r, _ in pairs}
            any_of = rarest(counts, words)
            query = fts_query(any_of, every_word=False)
            more = self.index.match(self.vaults, scopes, query, limit) if any_of else []
            pairs += [(r, s) for r, s in more if (r.origin, r.place) not in seen][: limit - len(pairs)]
        found: list[tuple[Candidate, float]] = []
        for row, relevance in pairs:
            fresh = self.fresh(row)
            if fresh is not None:
                found.append((fresh, relevance))
        self._collect()
        return found

    def survey(self, scopes: Sequence[str], per_scope: int) -> Survey:
        self._refresh(scopes)
        survey = Survey(
            counts=self.index.counts(self.vaults, scopes),
            candidates=list(self.index.candidates(self.vaults, scopes, per_scope)),
            shadowed=self.index.shadowed(self.vaults, scopes),
        )
        self._collect()
        return survey

    def rivals(self, scopes: Sequence[str], of: Sequence[Candidate]) -> list[Candidate]:
        have = {(c.origin, c.place) for c in of}
        origins = set(self.parts.values())
        # A key held once in the whole index has no rival for its own copy (`Index.copies` leaves it
        # out cheaply); a copy from another tier may have one here.
        mine = {c.key for c in of if c.origin in origins}
        theirs = {c.key for c in of if c.origin not in origins}
        rows = self.index.copies(self.vaults, scopes, mine)
        if theirs:
            rows += self.index.copies(self.vaults, scopes, theirs, only_shared=False)
        return [r for r in rows if (r.origin, r.place) not in have]

    def fresh(self, candidate: Candidate) -> Candidate | None:
        """The row as its file is now, if it is still visible (an in-place edit may have archived it;
        an unchanged file need not be decoded to know)."""
        assert isinstance(candidate, Row), "this tier's candidates are the index's rows"
        fresh = self.index.verify(self.vaults, candidate)
        return fresh if fresh is candidate or (fresh is not None and fresh.memory.is_visible()) else None

    def scopes_known(self) -> set[str]:
        """The index's scopes: `scopes()` walks every folder of the vaults (most of a second at 60,000)."""
        return self.index.scopes()

    def counts(self, scopes: Sequence[str]) -> dict[str, int]:
        self._refresh(scopes)
        self._collect()
        return self.index.counts(self.vaults, scopes)

    def generation(self) -> int:
        return self.index.generation()

    # -- keeping the index along ------------------------------------------------------------------

    def _known(self, vault: Vault, scope: Scope, keys: set[str]) -> dict[str, list[Path]]:
        self.index.refresh([vault], [scope])
        known: dict[str, list[Path]] = {}
        for row in self.index.by_keys([vault], [str(scope)], keys):
            known.setdefault(row.key, []).append(row.path)
        return known

    def _saved(self, vault: Vault, items: list[tuple[Path, Memory, Stamp]], added: dict[Path, tuple[int, int]]) -> None:
        def update() -> None:
            self.index.upsert_many(vault, items)
            for folder, (before, files) in added.items():
                self.index.note_own_change(vault, folder, before, files)

        self._index_change(items[0][0], update)

    def _deleted(self, vault: Vault, path: Path, before: int) -> None:
        def update() -> None:
            self.index.remove(vault, path)
            self.index.note_own_change(vault, path.parent, before, -1)

        self._index_change(path, update)

    def _index_change(self, path: Path, change: Callable[[], None]) -> None:
        """Bring the index along after the file changed. The file is the truth and is already on disk,
        so a failure here is a warning: the next read re-scans the folder and repairs the row."""
        try:
            with self.index.transaction():
                change()
        except sqlite3.Error as exc:
            self.warnings.append(f"{path} is saved, but the index was not updated ({exc}); the next read will.")

    def status(self, scopes: Sequence[str]) -> dict[str, object]:
        status = super().status(scopes)
        self._refresh(scopes)
        status.update(self.index.stats())
        status["integrity"] = self.index.integrity()
        status["healthy"] = status["integrity"] == "ok"
        status["skipped_files"] = [f"{s.path}: {s.reason}" for s in self.index.skipped_files()]
        status["size_bytes"] = self.index_path.stat().st_size
        return status


def rarest(counts: dict[str, int], words: Sequence[str]) -> list[str]:
    """The words an any-word search looks for: all of them when they are few, else the OR_WORDS
    held by the fewest memories (`counts`, from `Index.document_counts`; a word no memory holds finds
    nothing), in their order."""
    if len(words) <= OR_WORDS:
        return list(words)
    chosen = set(sorted((w for w in words if counts[w]), key=counts.__getitem__)[:OR_WORDS])
    return [w for w in words if w in chosen]


class ScanTier(VaultTier):
    """The vaults read directly, when the index cannot be used: each scope's folders are read once
    per command (again after this tier changes them), at most FALLBACK_SCAN_LIMIT files in all."""

    def __init__(
        self, vaults: Sequence[Vault], project_root: Path | None, index_path: Path, warnings: list[str], problem: str
    ) -> None:
        super().__init__(vaults, project_root, index_path, warnings)
        self.problem = problem
        self._read: dict[str, list[Candidate]] = {}  # scope → its copies, as read
        self._files = 0
        self._changes = 0

    def _scan(self, scopes: Iterable[str]) -> list[Candidate]:
        found: list[Candidate] = []
        for scope in scopes:
            if scope not in self._read:
                self._read[scope] = self._scan_scope(parse(scope))
            found += self._read[scope]
        return found

    def _scan_scope(self, scope: Scope) -> list[Candidate]:
        found: list[Candidate] = []
        for vault in self.vaults:
            try:
                files = vault.folder_files(scope).files
            except LinkRefused as exc:
                self._warn(f"skipped {exc}")
                continue
            for entry in files:
                if self._files >= FALLBACK_SCAN_LIMIT:
                    self._warn(f"read only the first {FALLBACK_SCAN_LIMIT} files without an index.")
                    return found
                self._files += 1
                try:
                    memory, _ = vault.load(entry.path)
                except UNREADABLE as exc:
                    self._warn(f"skipped {entry.path}: {exc}")
                    continue
                found.append(Candidate.of(memory, str(vault.root), str(entry.path.relative_to(vault.root))))
        return found

    def _visible(self, scopes: Sequence[str]) -> list[Candidate]:
        return [c for c in self._scan(scopes) if c.memory.is_visible()]

    def copies(self, scopes: Sequence[str], keys: set[str]) -> list[Candidate]:
        return [c for c in self._scan(scopes) if c.key in keys]

    def listed(self, scopes: Sequence[str], include_hidden: bool = False) -> list[Candidate]:
        return self._scan(scopes) if include_hidden else self._visible(scopes)

    def match(self, scopes: Sequence[str], words: Sequence[str], limit: int) -> list[tuple[Candidate, float]]:
        """Every match, its relevance how many of the words it holds: with every file read already, a
        cut would only drop copies tied with the ones kept (many hold all the words of a query)."""
        scored = [(c, recall.word_overlap(c, words)) for c in self._visible(scopes)]
        return sorted([(c, s) for c, s in scored if s > 0], key=lambda pair: -pair[1])

    def survey(self, scopes: Sequence[str], per_scope: int) -> Survey:
        """Every visible copy is a candidate: the files are read already."""
        visible = self._visible(scopes)
        return Survey(counts=_count_by_scope(visible), candidates=visible, shadowed=_shadowed(visible))

    def rivals(self, scopes: Sequence[str], of: Sequence[Candidate]) -> list[Candidate]:
        have = {(c.origin, c.place) for c in of}
        keys = {c.key for c in of}
        return [c for c in self._visible(scopes) if c.key in keys and (c.origin, c.place) not in have]

    def fresh(self, candidate: Candidate) -> Candidate | None:
        try:
            memory, _ = self._vault_of(candidate).load(candidate.path)
        except UNREADABLE:
            return None
        return Candidate.of(memory, candidate.origin, candidate.place) if memory.is_visible() else None

    def counts(self, scopes: Sequence[str]) -> dict[str, int]:
        return _count_by_scope(self._visible(scopes))

    def generation(self) -> int:
        return self._changes

    def _forget_reads(self) -> None:
        self._read.clear()
        self._files = 0
        self._changes += 1

    def _saved(self, vault: Vault, items: list[tuple[Path, Memory, Stamp]], added: dict[Path, tuple[int, int]]) -> None:
        self._forget_reads()

    def _deleted(self, vault: Vault, path: Path, before: int) -> None:
        self._forget_reads()

    def status(self, scopes: Sequence[str]) -> dict[str, object]:
        return {**super().status(scopes), "healthy": False, "problem": self.problem}


def _count_by_scope(candidates: Iterable[Candidate]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for candidate in candidates:
        counts[candidate.scope] = counts.get(candidate.scope, 0) + 1
    return counts


def _shadowed(visible: Sequence[Candidate]) -> int:
    """Copies that lose to another copy of their key: all but one per key."""
    return len(visible) - len({c.key for c in visible})


def _by_scope(memories: Iterable[Memory]) -> dict[Scope, list[Memory]]:
    groups: dict[Scope, list[Memory]] = {}
    for memory in memories:
        groups.setdefault(memory.scope, []).append(memory)
    return groups


class _LoadedFiles:
    """The files an import has read, by path: read again only if their size or mtime changed (the
    drift check before each rename still compares the bytes)."""

    def __init__(self) -> None:
        self._files: dict[Path, tuple[Memory, Stamp]] = {}

    def load(self, vault: Vault, path: Path) -> tuple[Memory, Stamp]:
        cached = self._files.get(path)
        if cached is not None:
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                st = None
            if st is not None and (st.st_mtime_ns, st.st_size) == (cached[1].mtime_ns, cached[1].size):
                return cached
        memory, stamp = vault.load(path)
        self._files[path] = (memory, stamp)
        return memory, stamp
