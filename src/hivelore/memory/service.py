"""The service layer: every surface (CLI, MCP, hooks) calls these methods, so validation, the
guard, scopes and ranking exist once.

Reads go through the SQLite index; when it is missing or unreadable they fall back to a bounded
scan of the folders of the scopes being read, and say so.
"""

from __future__ import annotations

import builtins  # `Hivelore.list` shadows the type in the class body
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from hivelore import errors
from hivelore.config import Settings, load_settings
from hivelore.confined import LinkRefused
from hivelore.home import private_home
from hivelore.memory import recall
from hivelore.memory.local.index import Index, IndexUnavailable, RebuildStats, Row, folder_mtime, rebuild
from hivelore.memory.local.vault import UNREADABLE, Stamp, Swept, Vault, candidate_names
from hivelore.memory.model import (
    MAX_SEEN_COUNT,
    STATES,
    Memory,
    iso_from_epoch,
    now_iso,
    validate_key,
    validate_kind,
    validate_tags,
    validate_timestamp,
    validate_ttl_days,
)
from hivelore.memory.scope import Chain, Level, Scope, chain_for, parse
from hivelore.memory.transfer import ImportRecord, ImportReport
from hivelore.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from hivelore.profile.store import Profile

FALLBACK_SCAN_LIMIT = 5000  # files read per command when the index cannot be used
MAX_SEARCH_LIMIT = 1000
MAX_RELATED_HITS = 8  # search hits looked at for memories related to a prompt or an error
OR_WORDS = 4  # words an any-word search looks for: the rarest, when a query has more
CANDIDATES_PER_SCOPE = 50  # per scope, most recent and most seen: ample for a budget of ~15 lines
# Imported records written under one lock, one index transaction and one fsync per folder: large
# enough that those costs vanish per record, small enough that other writers wait a moment only.
IMPORT_BATCH = 500


class NotFound(errors.NotFound):
    """No visible memory at that address."""


@record
class WriteResult:
    memory: Memory
    path: Path
    tier: str
    created: bool
    revived: bool = False  # it was archived or expired, and is visible again


@record
class TreeEntry:
    key: str
    winner: Memory
    shadowed: list[Memory]


class Hivelore:
    """One user's memory as seen from one working folder."""

    def __init__(self, settings: Settings, chain: Chain, agent: str = "cli", session: str = "") -> None:
        self.settings = settings
        self.chain = chain
        self.agent = agent
        self.session = session
        self.home = Vault(settings.home, "home")
        private_home(str(settings.home))
        project_root = chain.git.root / ".hivelore" if chain.git else None
        self.warnings: list[str] = []
        self.project = Vault(project_root, "project") if project_root and self._usable(project_root) else None
        # Within one scope the project tier (committed with the repository) wins over the home tier.
        self.vaults = [v for v in (self.project, self.home) if v]
        self._index: Index | None = None
        self.index_problem: str | None = None

    def _usable(self, project_root: Path) -> bool:
        """Whether the repository has a project tier: a real `.hivelore` folder. A link there (which
        could lead anywhere on the disk) is not read, and writing to it is refused."""
        if project_root.is_symlink():
            self.warnings.append(f"skipped {LinkRefused(str(project_root), str(project_root.parent))}")
            return False
        return project_root.is_dir()

    @classmethod
    def open(
        cls, cwd: Path | None = None, env: Mapping[str, str] | None = None, agent: str = "cli", session: str = ""
    ) -> Hivelore:
        env = os.environ if env is None else env
        chain = chain_for(cwd or Path.cwd())
        settings = load_settings(chain.git.root if chain.git else None, env)
        session = session or env.get("HIVELORE_SESSION", "")
        return cls(settings, chain, agent=env.get("HIVELORE_AGENT", agent), session=session)

    def profile(self, profile_id: str | None = None) -> Profile:
        """The user's profile (USER.md, MEMORY.md, SOUL.md, the ledger): `profile_id`, else the one
        the settings name. Opening it finishes a write an earlier process was killed in."""
        from hivelore.profile.store import Profile, check_profile_id

        return Profile.open(str(self.settings.home), check_profile_id(profile_id or self.settings.profile))

    @property
    def index_path(self) -> Path:
        return self.settings.home / "index.db"

    @property
    def roots(self) -> list[str]:
        """The tiers' folders, the winning tier first."""
        return [str(v.root) for v in self.vaults]

    @property
    def scopes(self) -> list[str]:
        return [str(s) for s in self.chain.scopes]

    # -- the index, or the fallback ---------------------------------------------------------

    def index(self) -> Index | None:
        """The open index, or None (with `index_problem` set) when reads must fall back to files."""
        if self._index is None and self.index_problem is None:
            empty = not any(v.has_memories() for v in self.vaults)
            try:
                self._index = Index.open(self.index_path, create=empty or self.index_path.exists())
            except IndexUnavailable as exc:
                self.index_problem = str(exc)
                self.warnings.append(
                    f"{exc}; reading files directly (at most {FALLBACK_SCAN_LIMIT} per command): "
                    "run `hivelore index rebuild`."
                )
        return self._index

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None

    def _collect_warnings(self) -> None:
        if self._index is not None:
            for warning in self._index.warnings:
                if warning not in self.warnings:
                    self.warnings.append(warning)
            self._index.warnings.clear()

    def _rows(self, scopes: Sequence[str], visible: bool = True) -> list[Row]:
        index = self.index()
        if index is None:
            return [r for r in self._scan(scopes) if not visible or r.memory.is_visible()]
        index.refresh(self.vaults, [parse(s) for s in scopes])
        rows = index.verified(self.vaults, index.rows(self.vaults, scopes, visible))
        self._collect_warnings()
        return [r for r in rows if r.memory.is_visible()] if visible else rows

    def _scan(self, scopes: Sequence[str]) -> list[Row]:
        """Read the scopes' folders directly, up to FALLBACK_SCAN_LIMIT files."""
        rows: list[Row] = []
        for scope in scopes:
            for vault in self.vaults:
                try:
                    files = vault.folder_files(parse(scope)).files
                except LinkRefused as exc:
                    self.warnings.append(f"skipped {exc}")
                    continue
                for entry in files:
                    if len(rows) >= FALLBACK_SCAN_LIMIT:
                        self.warnings.append(f"read only the first {FALLBACK_SCAN_LIMIT} files without an index.")
                        return rows
                    try:
                        memory, stamp = vault.load(entry.path)
                    except UNREADABLE as exc:
                        self.warnings.append(f"skipped {entry.path}: {exc}")
                        continue
                    relpath = str(entry.path.relative_to(vault.root))
                    rows.append(Row.of(memory, str(vault.root), relpath, stamp))
        return rows

    def scopes_for(self, scopes: Iterable[str] | None) -> list[str]:
        """Validate requested scopes (narrowest first), or the folder's chain when none are given."""
        if not scopes:
            return self.scopes
        parsed = sorted({parse(s) for s in scopes}, key=lambda s: (-s.level, str(s)))
        return [str(s) for s in parsed]

    # -- writes -------------------------------------------------------------------------------

    def _named_tier(self, tier: str) -> Vault:
        if tier == "home":
            return self.home
        if tier == "project":
            if not self.chain.git:
                raise ValueError("the project tier needs a git repository: run this inside one, or use --tier home.")
            return self.project or Vault(self.chain.git.root / ".hivelore", "project")
        raise ValueError(f"tier '{tier}' is not 'home' or 'project'.")

    def _vault_for_write(self, scope: Scope, key: str, tier: str | None) -> Vault:
        if tier is not None:
            return self._named_tier(tier)
        for row in self._rows_for_key([str(scope)], key):  # a re-write updates the copy that exists
            return self._vault_of(row)
        if self.project and scope in self.chain.scopes and scope.level is not Level.GLOBAL:
            return self.project
        return self.home

    def _vault_of(self, row: Row) -> Vault:
        return next(v for v in self.vaults if str(v.root) == row.root)

    def _locate(
        self, vault: Vault, scope: Scope, key: str, prefer: Path | None = None
    ) -> tuple[Path, Memory | None, Stamp | None]:
        """Where (scope, key) lives in `vault`, and what is there now. Call under the vault lock.

        File names are only a convention (people create files by hand, and slugs can collide), so a
        file is (scope, key)'s only when its frontmatter says so. `prefer` is the copy a read chose;
        otherwise copies are tried in the order reads rank them (by file name)."""
        index = self.index()
        known: list[Path] = []
        if index is not None:
            index.refresh([vault], [scope])
            known = sorted(r.path for r in index.by_key([vault], [str(scope)], key))
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

    def _provenance(self) -> dict[str, str]:
        git = self.chain.git
        found = {
            "agent": self.agent,
            "session": self.session,
            "repo": git.owner_repo if git and git.owner_repo else "",
            "branch": git.branch if git and git.branch else "",
            "commit": git.commit if git and git.commit else "",
        }
        return {k: v for k, v in found.items() if v}

    def write(
        self,
        scope: str,
        key: str,
        value: str,
        *,
        tags: Sequence[str] = (),
        kind: str | None = None,
        ttl_days: float | None = None,
        state: str = "committed",
        tier: str | None = None,
    ) -> WriteResult:
        """Upsert (scope, key): a re-write replaces the value, bumps seen_count and updated."""
        provenance = self._provenance()
        target, value, clean_tags, expires = _checked(scope, key, value, tags, kind, state, ttl_days, provenance)
        vault = self._vault_for_write(target, key, tier)
        now = now_iso()

        def build(existing: Memory | None) -> Memory:
            if existing is None:
                return Memory(
                    scope=target,
                    key=key,
                    value=value,
                    kind=kind or "lesson",
                    state=state,
                    tags=clean_tags,
                    created=now,
                    updated=now,
                    expires_at=expires,
                    provenance=provenance,
                )
            return existing.evolve(
                value=value,
                kind=kind or existing.kind,
                state="committed" if "committed" in (state, existing.state) else "staged",
                tags=clean_tags or existing.tags,
                updated=now,
                seen_count=existing.seen_count + 1,
                expires_at=expires or (None if existing.is_expired() else existing.expires_at),
                archived_at=None,
                provenance=provenance,
            )

        path, existing, memory = self._store(vault, target, key, build)
        assert memory is not None  # build always returns one
        revived = existing is not None and not existing.is_visible()
        return WriteResult(memory, path, vault.tier, existing is None, revived)

    def _store(
        self,
        vault: Vault,
        scope: Scope,
        key: str,
        build: Callable[[Memory | None], Memory | None],
        prefer: Path | None = None,
    ) -> tuple[Path, Memory | None, Memory | None]:
        """Read-modify-write one memory under the vault lock. `build` gets what is on disk now (None if
        nothing) and returns the memory to write, or None to leave the file as it is."""
        with vault.lock():
            path, existing, stamp = self._locate(vault, scope, key, prefer)
            memory = build(existing)
            if memory is not None:
                before = folder_mtime(path.parent)
                new_stamp = vault.save(path, memory, stamp)
                added = 0 if existing else 1

                def update(index: Index) -> None:
                    index.upsert(vault, path, memory, new_stamp)
                    index.note_own_change(vault, path.parent, before, added)

                self._index_change(path, update)
        return path, existing, memory

    def _index_change(self, path: Path, change: Callable[[Index], None]) -> None:
        """Bring the index along after the file changed. The file is the truth and is already on disk,
        so a failure here is a warning: the next read re-scans the folder and repairs the row."""
        index = self.index()
        if index is None:
            return
        try:
            with index.transaction():
                change(index)
        except sqlite3.Error as exc:
            self.warnings.append(f"{path} is saved, but the index was not updated ({exc}); the next read will.")

    def _rows_for_key(self, scopes: Sequence[str], key: str) -> list[Row]:
        """Every copy of `key` in these scopes (hidden ones too), project tier first within a scope."""
        index = self.index()
        if index is None:
            rows = [r for r in self._scan(scopes) if r.key == key]
        else:
            index.refresh(self.vaults, [parse(s) for s in scopes])
            rows = index.verified(self.vaults, index.by_key(self.vaults, scopes, key))
            self._collect_warnings()
        # A file edited in place may now hold another key: keep only what still is this key's copy.
        rows = [r for r in rows if r.key == key and r.scope in scopes]
        return sorted(rows, key=lambda r: recall.precedence(r, scopes, self.roots))

    def _find(self, scope: str, key: str, visible: bool, tier: str | None = None) -> tuple[Vault, Row]:
        """The first copy of scope::key (project tier first), visible ones only if `visible`, in one
        tier if `tier` ("home" or "project") is given."""
        target, copies = self._copies(scope, key, tier)
        for vault, row in copies:
            if row.memory.is_visible() or not visible:
                return vault, row
        raise self._not_found(target, key, tier, visible)

    def _copies(self, scope: str, key: str, tier: str | None) -> tuple[str, list[tuple[Vault, Row]]]:
        """scope::key's scope as written canonically, and its copies (hidden ones too), project tier
        first, or only the given tier's."""
        target = str(parse(scope))
        validate_key(key)
        if tier not in (None, "home", "project"):
            raise ValueError(f"tier '{tier}' is not 'home' or 'project'.")
        copies = [(self._vault_of(row), row) for row in self._rows_for_key([target], key)]
        return target, [(vault, row) for vault, row in copies if tier in (None, vault.tier)]

    def _not_found(self, target: str, key: str, tier: str | None, visible: bool) -> NotFound:
        hidden = " (archived or expired ones are hidden)" if visible else ""
        where = f" in the {tier} tier" if tier else ""
        return NotFound(
            f"no memory {target}::{key}{where}{hidden}: see `hivelore list` or `hivelore search`{self._unread()}."
        )

    def _modify(self, vault: Vault, row: Row, change: dict[str, object]) -> Memory:
        """Change fields of the copy a read found (`_find`), under the lock, with `updated` bumped."""

        def build(existing: Memory | None) -> Memory:
            if existing is None:
                raise NotFound(f"{row.memory.address} was deleted while hivelore was changing it.")
            return existing.evolve(**change, updated=now_iso())

        _, _, memory = self._store(vault, row.memory.scope, row.memory.key, build, prefer=row.path)
        return memory  # type: ignore[return-value]

    def archive(self, scope: str, key: str, tier: str | None = None) -> Memory:
        """Hide the first visible copy (project tier first, or the given tier's)."""
        return self._modify(*self._find(scope, key, visible=True, tier=tier), {"archived_at": now_iso()})

    def restore(self, scope: str, key: str, tier: str | None = None) -> Memory:
        """Make an archived or expired memory visible again: the first hidden copy, project tier first
        (a visible copy in one tier must not hide an archived one in the other), or the given tier's."""
        target, copies = self._copies(scope, key, tier)
        hidden = [(vault, row) for vault, row in copies if not row.memory.is_visible()]
        if hidden:
            return self._modify(*hidden[0], {"archived_at": None, "expires_at": None})
        if copies:
            raise ValueError(f"{target}::{key} is not archived or expired: nothing to restore.")
        raise self._not_found(target, key, tier, visible=False)

    def forget(self, scope: str, key: str, tier: str | None = None) -> Path:
        """Delete the memory's file (archived and expired ones too): the first copy, project tier
        first, or the given tier's."""
        vault, row = self._find(scope, key, visible=False, tier=tier)
        if not self._delete(vault, row, lambda memory: True):
            raise NotFound(f"{row.memory.address} changed while hivelore was deleting it; nothing was deleted.")
        return row.path

    def _delete(self, vault: Vault, row: Row, still: Callable[[Memory], bool]) -> bool:
        """Delete this row's file if, read again under the lock, it is still the same memory and `still`
        holds for it (purge: still hidden; another agent may have just revived it). True if deleted."""
        with vault.lock():
            try:
                memory, stamp = vault.load(row.path)
            except UNREADABLE:
                return False
            if (memory.scope, memory.key) != (row.memory.scope, row.memory.key) or not still(memory):
                return False
            before = folder_mtime(row.path.parent)
            vault.delete(row.path, stamp)

            def update(index: Index) -> None:
                index.remove(vault, row.path)
                index.note_own_change(vault, row.path.parent, before, -1)

            self._index_change(row.path, update)
        return True

    def purge(self, dry_run: bool = False) -> list[Memory]:
        """Delete the files of archived and expired memories in this folder's chain."""
        hidden = [r for r in self._rows(self.scopes, visible=False) if not r.memory.is_visible()]
        if dry_run:
            return [r.memory for r in hidden]
        return [r.memory for r in hidden if self._delete(self._vault_of(r), r, lambda m: not m.is_visible())]

    # -- reads --------------------------------------------------------------------------------

    def read(self, scope: str, key: str) -> Memory:
        return self._find(scope, key, visible=True)[1].memory

    def resolve(self, key: str) -> Memory:
        """The winning copy of a bare key along this folder's chain (narrowest scope first)."""
        validate_key(key)
        for row in self._rows_for_key(self.scopes, key):
            if row.memory.is_visible():
                return row.memory
        raise NotFound(f"no memory with key '{key}' in {' → '.join(self.scopes)}: see `hivelore list`{self._unread()}.")

    def _unread(self) -> str:
        """For a 'not found': the files this read had to skip, since the memory may be in one of them
        (the warnings themselves are not printed when a command fails)."""
        skipped = [w.removeprefix("skipped ") for w in self.warnings if w.startswith("skipped ")]
        return f" (files skipped as unreadable: {'; '.join(skipped)})" if skipped else ""

    def search(self, query: str, scopes: Iterable[str] | None = None, limit: int | None = None) -> list[recall.Ranked]:
        """Visible memories matching `query`, ranked; a key shadowed by a narrower scope is left out."""
        chosen = self.scopes_for(scopes)
        if limit is not None and not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise ValueError(f"limit must be from 1 to {MAX_SEARCH_LIMIT}, not {limit}.")
        limit = limit or self.settings.search_limit
        words = recall.query_words(query)
        if not words:
            raise ValueError("the query has no words to search for.")
        index = self.index()
        if index is None:
            scored = [(r, recall.word_overlap(r, words)) for r in self._scan(chosen) if r.memory.is_visible()]
            pairs = [(r, s) for r, s in scored if s > 0]
        else:
            index.refresh(self.vaults, [parse(s) for s in chosen])
            hits = self._match(index, chosen, words, max(limit * 5, 50))
            pairs = []
            for row, relevance in hits:
                fresh = self._fresh_visible(index, row)
                if fresh is not None:
                    pairs.append((fresh, relevance))
            # A hit loses to a narrower copy of its key even when that copy does not match the query.
            pairs += [(r, 0.0) for r in self._rivals(index, chosen, [r for r, _ in pairs])]
            self._collect_warnings()
        ranked, _ = recall.winners(recall.rank(pairs, chosen, recall.SEARCH_WEIGHTS), chosen, self.roots, self.scopes)
        return [r for r in ranked if r.relevance > 0][:limit]

    def related(self, text: str, exclude: Iterable[str] = (), limit: int = 3) -> list[recall.Ranked]:
        """Committed memories that bear on a piece of text (a prompt, an error): the best search hits
        for its keywords that contain at least two of them (all of them when there are fewer),
        leaving out the addresses in `exclude` (already shown). Staged ones (notes a hook captured)
        are not what anyone learnt on purpose. Empty when nothing is relevant."""
        words = recall.keywords(text)
        if not words:
            return []
        needed = min(2, len(words))
        excluded = set(exclude)
        found = []
        for hit in self.search(" ".join(words), limit=MAX_RELATED_HITS):
            if hit.row.state != "committed" or hit.row.memory.address in excluded:
                continue
            if recall.word_overlap(hit.row, words) >= needed:
                found.append(hit)
        return found[:limit]

    def citing(self, names: Iterable[str], exclude: Iterable[str] = (), limit: int = 3) -> list[recall.Ranked]:
        """Committed memories whose text names one of these symbols (`validate_token`, `Cart.total`)
        as written: the lessons about the code an agent is about to edit."""
        excluded = set(exclude)
        found: dict[str, recall.Ranked] = {}
        for name in dict.fromkeys(n for n in names if len(n) >= 3):
            for hit in self.search(name, limit=MAX_RELATED_HITS) if recall.query_words(name) else []:
                memory = hit.row.memory
                cited = name in memory.value or name in memory.key
                if cited and hit.row.state == "committed" and memory.address not in excluded:
                    found.setdefault(memory.address, hit)
        return list(found.values())[:limit]

    def _fresh_visible(self, index: Index, row: Row) -> Row | None:
        """The row, found visible by the index, as its file is now, if it is still visible (an in-place
        edit may have archived it; an unchanged file need not be decoded to know)."""
        fresh = index.verify(self.vaults, row)
        return fresh if fresh is row or (fresh is not None and fresh.memory.is_visible()) else None

    def _fresh_winner(self, index: Index, scopes: Sequence[str], row: Row) -> Row | None:
        """The copy of the row's key that wins in `scopes` (narrowest scope, then first tier), as its
        file is now, or None if no copy is visible. Asked only of the rows a budgeted read is about to
        show, so the copies of the hundreds of candidates it ranks are never looked up; a key takes
        the place its best-ranked copy earned, and shows its winning copy there."""
        fresh = self._fresh_visible(index, row)
        rivals = [
            r for r in index.copies(self.vaults, scopes, [row.key]) if r.relpath != row.relpath or r.root != row.root
        ]
        for copy in sorted(
            [*([fresh] if fresh else []), *rivals], key=lambda r: recall.precedence(r, scopes, self.roots)
        ):
            winner = copy if copy is fresh else self._fresh_visible(index, copy)
            if winner is not None:
                return winner
        return None

    def _rivals(self, index: Index, scopes: Sequence[str], rows: Sequence[Row]) -> list[Row]:
        """The other visible copies of these rows' keys, so shadowing is decided over every copy."""
        have = {(r.root, r.relpath) for r in rows}
        copies = index.copies(self.vaults, scopes, {r.key for r in rows})
        return [r for r in copies if (r.root, r.relpath) not in have]

    def _match(self, index: Index, scopes: list[str], words: list[str], limit: int) -> list[tuple[Row, float]]:
        """Memories with every word first (a small set, quick to rank); then, if that is too few, with any
        of the rarest few words. BM25 scores of the two queries are comparable: a word a memory lacks adds
        nothing, and a word most memories hold adds next to nothing, while every memory that holds it must
        be ranked (a prompt's "tests" or "fail" in a large store: tens of milliseconds each)."""
        pairs = index.match(self.vaults, scopes, recall.fts_query(words, every_word=True), limit)
        if len(pairs) < limit and len(words) > 1:
            seen = {(r.root, r.relpath) for r, _ in pairs}
            any_of = self._rarest(index, words)
            more = index.match(self.vaults, scopes, recall.fts_query(any_of, every_word=False), limit) if any_of else []
            pairs += [(r, s) for r, s in more if (r.root, r.relpath) not in seen][: limit - len(pairs)]
        return pairs

    @staticmethod
    def _rarest(index: Index, words: list[str]) -> list[str]:
        """The words an any-word search looks for: all of them when they are few, else the
        OR_WORDS held by the fewest memories (a word no memory holds finds nothing), in their order."""
        if len(words) <= OR_WORDS:
            return words
        counts = index.document_counts(words)
        chosen = set(sorted((w for w in words if counts[w]), key=counts.__getitem__)[:OR_WORDS])
        return [w for w in words if w in chosen]

    def list(self, scopes: Iterable[str] | None = None, include_hidden: bool = False) -> dict[str, list[Memory]]:
        chosen = self.scopes_for(scopes)
        grouped: dict[str, list[Memory]] = {s: [] for s in chosen}
        for row in self._rows(chosen, visible=not include_hidden):
            grouped[str(row.memory.scope)].append(row.memory)
        return {s: sorted(ms, key=lambda m: m.key) for s, ms in grouped.items() if ms}

    def tree(self, scopes: Iterable[str] | None = None) -> builtins.list[TreeEntry]:
        """Per key: the copy that wins (narrowest scope, then project tier) and the copies it shadows."""
        chosen = self.scopes_for(scopes)
        by_key: dict[str, list[Row]] = {}
        for row in self._rows(chosen):
            by_key.setdefault(row.key, []).append(row)
        entries = []
        for key in sorted(by_key):
            rows = sorted(by_key[key], key=lambda r: recall.precedence(r, chosen, self.roots))
            entries.append(TreeEntry(key, rows[0].memory, [r.memory for r in rows[1:]]))
        return entries

    def scopes_in_vault(self) -> builtins.list[str]:
        """Every scope that has a folder of memory files in any tier, narrowest first."""
        found = {str(s) for vault in self.vaults for s in vault.scopes_on_disk()}
        return self.scopes_for(found) if found else []

    def _visible_counts(self, scopes: Sequence[str]) -> dict[str, int]:
        index = self.index()
        if index is None:
            return _count_by_scope(r for r in self._scan(scopes) if r.memory.is_visible())
        index.refresh(self.vaults, [parse(s) for s in scopes])
        self._collect_warnings()
        return index.counts(self.vaults, scopes)

    def scope_counts(self) -> dict[str, int]:
        """Visible memories per scope, for every scope that has any, narrowest first."""
        scopes = self.scopes_in_vault()
        counts = self._visible_counts(scopes) if scopes else {}
        return {s: counts[s] for s in scopes if counts.get(s)}

    def context(self, budget_chars: int | None = None) -> recall.Selection:
        """The ranked, budgeted, de-duplicated memories for this folder's chain, and what was left out."""
        budget = budget_chars or self.settings.context_budget_chars
        scopes = self.scopes
        index = self.index()
        if index is None:
            rows = [r for r in self._scan(scopes) if r.memory.is_visible()]
            per_scope = _count_by_scope(rows)
        else:
            per_scope = self._visible_counts(scopes)
            rows = index.candidates(self.vaults, scopes, CANDIDATES_PER_SCOPE)
        ranked = recall.rank([(r, 0.0) for r in rows], scopes, recall.CONTEXT_WEIGHTS)
        if index is None:
            ranked, shadowed = recall.winners(ranked, scopes, self.roots, scopes)
            shown, duplicates = recall.fit_budget(ranked, budget, self.settings.context_line_chars)
        else:
            shadowed = index.shadowed(self.vaults, scopes)
            generation = index.generation()
            shown, duplicates = recall.fit_budget(
                ranked, budget, self.settings.context_line_chars, lambda row: self._fresh_winner(index, scopes, row)
            )
            if index.generation() != generation:  # a file edited or deleted in place was re-read
                per_scope = index.counts(self.vaults, scopes)
                shadowed = index.shadowed(self.vaults, scopes)
            self._collect_warnings()
        return recall.Selection(
            shown=shown,
            total=sum(per_scope.values()),
            duplicates=duplicates,
            shadowed=shadowed,
            left_out=recall.left_out(scopes, per_scope, shown),
        )

    def render_context(self, selection: recall.Selection) -> str:
        return recall.render(selection, str(self.chain.narrowest), self.settings.context_line_chars)

    # -- import / export ------------------------------------------------------------------------

    def export(self, include_hidden: bool = False) -> Iterator[Memory]:
        """Every memory of the vaults (all scopes), from the files themselves."""
        for vault in self.vaults:
            for folder, _, names in vault.walk_folders():
                for path, memory, _ in vault.load_folder(folder, names):
                    if not isinstance(memory, Memory):
                        self.warnings.append(f"skipped {path}: {memory}")
                    elif include_hidden or memory.is_visible():
                        yield memory

    def _check_record(self, record: ImportRecord) -> Memory:
        """The memory a record would become, or ValueError saying why it cannot be imported."""
        provenance = {**self._provenance(), **dict(record.provenance)}
        scope, value, tags, expires = _checked(
            record.scope, record.key, record.value, record.tags, record.kind, record.state, record.ttl_days, provenance
        )
        for name in ("created", "updated", "expires_at", "archived_at"):
            validate_timestamp(name, getattr(record, name))
        now = now_iso()
        return Memory(
            scope=scope,
            key=record.key,
            value=value,
            kind=record.kind,
            state=record.state,
            tags=tags,
            created=record.created or now,
            updated=record.updated or record.created or now,
            seen_count=min(max(record.seen_count or 1, 1), MAX_SEEN_COUNT),
            expires_at=expires or record.expires_at,
            archived_at=record.archived_at,
            provenance=provenance,
        )

    def import_records(
        self,
        records: Iterable[ImportRecord],
        skip_invalid: bool = False,
        dry_run: bool = False,
        tier: str | None = None,
        unreadable: Sequence[str] = (),
    ) -> ImportReport:
        """Validate every record first; unless `skip_invalid`, one bad record (or one `unreadable`
        source, already described) means nothing is written.

        Records are written in batches of IMPORT_BATCH: one lock, one index transaction and one fsync
        per folder each, every file still replaced atomically. A record is in the report once its
        batch is on disk, so an import killed midway leaves whole files of the batches before, and
        running it again finishes it. Re-importing is idempotent: a memory whose value, kind and
        tags already match is unchanged.
        """
        report = ImportReport(written=[], unchanged=[], rejected=list(unreadable))
        memories: list[tuple[Memory, str]] = []
        for entry in records:
            try:
                memories.append((self._check_record(entry), entry.source))
            except ValueError as exc:
                report.rejected.append(f"{entry.source}: {exc}")
        targets = self._import_targets([m for m, _ in memories], tier)
        seen = _LoadedFiles()
        # The targets must be writable too (a broken file there would stop the import midway).
        unwritable = self._unwritable([(m, v) for (m, _), v in zip(memories, targets, strict=True)], seen)
        checked: list[tuple[Memory, Vault]] = []
        for (memory, source), vault in zip(memories, targets, strict=True):
            problem = vault if isinstance(vault, ValueError) else unwritable.get((vault, memory.address))
            if problem is not None:
                report.rejected.append(f"{source}: {problem}")
            elif isinstance(vault, Vault):
                checked.append((memory, vault))
        if (report.rejected and not skip_invalid) or dry_run:
            if dry_run:
                report.written.extend(m.address for m, _ in checked)
            return report
        for batch in _batches(checked, IMPORT_BATCH):
            for vault, group in _by_vault(batch).items():
                self._import_batch(vault, group, report, seen)
        return report

    def _unwritable(
        self, targets: Sequence[tuple[Memory, Vault | ValueError]], seen: _LoadedFiles
    ) -> dict[tuple[Vault, str], ValueError]:
        """Why the file of (tier, address) cannot be written, for the targets that have a reason."""
        found: dict[tuple[Vault, str], ValueError] = {}
        groups = _grouped((m, v) for m, v in targets if isinstance(v, Vault))
        for (vault, scope), group in groups.items():
            for key, place in self._locate_many(vault, scope, [m.key for m in group], seen).items():
                if isinstance(place, ValueError):
                    found[(vault, f"{scope}::{key}")] = place
        return found

    def _import_targets(self, memories: Sequence[Memory], tier: str | None) -> builtins.list[Vault | ValueError]:
        """`_vault_for_write` of many memories, the copies of their keys looked up once per scope."""
        if tier is not None:
            try:
                vault = self._named_tier(tier)
            except ValueError as exc:
                return [exc for _ in memories]
            return [vault for _ in memories]
        scopes = list(dict.fromkeys(str(m.scope) for m in memories))
        copies: dict[tuple[str, str], Row] = {}
        for scope in scopes:
            wanted = {m.key for m in memories if str(m.scope) == scope}
            for row in self._rows_for_keys([scope], wanted):
                copies.setdefault((row.scope, row.key), row)  # the first is the copy a write updates
        targets: list[Vault | ValueError] = []
        for memory in memories:
            copy = copies.get((str(memory.scope), memory.key))
            if copy is not None:
                targets.append(self._vault_of(copy))
            elif self.project and memory.scope in self.chain.scopes and memory.scope.level is not Level.GLOBAL:
                targets.append(self.project)
            else:
                targets.append(self.home)
        return targets

    def _rows_for_keys(self, scopes: Sequence[str], keys: set[str]) -> builtins.list[Row]:
        """`_rows_for_key` of many keys at once, the scopes' folders refreshed once."""
        index = self.index()
        if index is None:
            rows = [r for r in self._scan(scopes) if r.key in keys]
        else:
            index.refresh(self.vaults, [parse(s) for s in scopes])
            rows = index.verified(self.vaults, index.by_keys(self.vaults, scopes, keys))
            self._collect_warnings()
        rows = [r for r in rows if r.key in keys and r.scope in scopes]
        return sorted(rows, key=lambda r: recall.precedence(r, scopes, self.roots))

    def _locate_many(
        self, vault: Vault, scope: Scope, keys: Sequence[str], seen: _LoadedFiles
    ) -> dict[str, tuple[Path, Memory | None, Stamp | None] | ValueError]:
        """`_locate` of many keys of one scope: the folder listed once, the index asked once, only the
        files that may be a key's read (and those already read at the same size and mtime reused).
        Keys given earlier take their new files' names first, as if written one after the other."""
        index = self.index()
        known: dict[str, list[Path]] = {}
        if index is not None:
            index.refresh([vault], [scope])
            for row in index.by_keys([vault], [str(scope)], set(keys)):
                known.setdefault(row.key, []).append(row.path)
        try:
            listed = vault.names_in(scope)
        except LinkRefused as exc:
            return {key: exc for key in keys}
        folder = vault.folder(scope)
        taken: set[str] = set()  # names the new files of earlier keys take
        found: dict[str, tuple[Path, Memory | None, Stamp | None] | ValueError] = {}
        for key in keys:
            try:
                place = self._pick_file(vault, scope, key, folder, sorted(known.get(key, [])), listed, taken, seen)
            except ValueError as exc:  # LinkRefused too
                found[key] = exc
                continue
            found[key] = place
            if place[1] is None:
                taken.add(place[0].name)
        return found

    @staticmethod
    def _pick_file(
        vault: Vault,
        scope: Scope,
        key: str,
        folder: Path,
        known: builtins.list[Path],
        listed: set[str],
        taken: set[str],
        seen: _LoadedFiles,
    ) -> tuple[Path, Memory | None, Stamp | None]:
        """What `_locate` decides for one key, with its folder's names in hand: the copies the index
        knows, then the file names the key may have, the first one that holds it; else the first
        free name. A name an earlier key of the batch takes holds another memory."""
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
                memory, stamp = seen.load(vault, path)
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

    def _import_batch(self, vault: Vault, memories: Sequence[Memory], report: ImportReport, seen: _LoadedFiles) -> None:
        """Write one batch of imported memories to one tier under one lock, then index them in one
        transaction; the report names them only once their files are on disk."""
        with vault.lock():
            writes: list[tuple[Path, Memory, Stamp | None]] = []
            new_files: dict[Path, int] = {}
            unchanged: list[str] = []
            for scope, group in _by_scope(memories).items():
                located = self._locate_many(vault, scope, [m.key for m in group], seen)
                for memory in group:
                    place = located[memory.key]
                    if isinstance(place, ValueError):
                        raise place
                    path, existing, stamp = place
                    merged = _merge_import(memory, existing)
                    if merged is None:
                        unchanged.append(memory.address)
                        continue
                    writes.append((path, merged, stamp))
                    new_files[path.parent] = new_files.get(path.parent, 0) + (existing is None)
            before = {folder: folder_mtime(folder) for folder in new_files}
            stamps = vault.save_many(writes)

            def update(index: Index) -> None:
                index.upsert_many(vault, [(p, m, s) for (p, m, _), s in zip(writes, stamps, strict=True)])
                for folder, added in new_files.items():
                    index.note_own_change(vault, folder, before[folder], added)

            if writes:
                self._index_change(writes[0][0].parent, update)
        report.written.extend(m.address for _, m, _ in writes)
        report.unchanged.extend(unchanged)

    # -- the index ------------------------------------------------------------------------------

    def rebuild_index(self) -> RebuildStats:
        self.close()
        self.index_problem = None
        return rebuild(self.index_path, self.vaults)

    def sweep(self) -> Swept:
        """Remove the temp files writers killed mid-write left in the tiers' folders (stale ones only)."""
        total = Swept()
        for vault in self.vaults:
            total += vault.sweep()
        return total

    def index_status(self) -> dict[str, object]:
        status: dict[str, object] = {"path": str(self.index_path), "exists": self.index_path.exists()}
        index = self.index()
        if index is None:
            status.update({"healthy": False, "problem": self.index_problem})
            return status
        index.refresh(self.vaults, self.chain.scopes)
        status.update(index.stats())
        status["integrity"] = index.integrity()
        status["healthy"] = status["integrity"] == "ok"
        status["skipped_files"] = [f"{s.path}: {s.reason}" for s in index.skipped_files()]
        status["size_bytes"] = self.index_path.stat().st_size
        return status


def _checked(
    scope: str,
    key: str,
    value: str,
    tags: Sequence[str],
    kind: str | None,
    state: str,
    ttl_days: float | None,
    provenance: Mapping[str, str],
) -> tuple[Scope, str, tuple[str, ...], str | None]:
    """Validate what a write or an import asks for: (scope, trimmed value, clean tags, expires_at). The guard
    sees every field that will be stored, `provenance` included."""
    target = parse(scope)
    validate_key(key)
    clean_tags = validate_tags(list(tags))
    if kind is not None:
        validate_kind(kind)
    if state not in STATES:
        raise ValueError(f"state '{state}' is not one of {', '.join(STATES)}.")
    validate_ttl_days(ttl_days)
    value = value.strip()
    if not value:
        raise ValueError("the value is empty: say what was learned.")
    _check_content(str(target), key, value, clean_tags, kind or "", provenance)
    expires = iso_from_epoch(time.time() + ttl_days * 86400) if ttl_days else None
    return target, value, clean_tags, expires


def _merge_import(incoming: Memory, existing: Memory | None) -> Memory | None:
    """An imported memory over what is on disk: unchanged when it says the same (re-imports are no-ops)."""
    if existing is None:
        return incoming
    if (existing.value, existing.kind, existing.tags) == (incoming.value, incoming.kind, incoming.tags):
        return None
    return incoming.evolve(created=existing.created, seen_count=max(existing.seen_count, incoming.seen_count))


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


def _grouped(checked: Iterable[tuple[Memory, Vault]]) -> dict[tuple[Vault, Scope], list[Memory]]:
    groups: dict[tuple[Vault, Scope], list[Memory]] = {}
    for memory, vault in checked:
        groups.setdefault((vault, memory.scope), []).append(memory)
    return groups


def _by_scope(memories: Iterable[Memory]) -> dict[Scope, list[Memory]]:
    groups: dict[Scope, list[Memory]] = {}
    for memory in memories:
        groups.setdefault(memory.scope, []).append(memory)
    return groups


def _by_vault(batch: Iterable[tuple[Memory, Vault]]) -> dict[Vault, list[Memory]]:
    groups: dict[Vault, list[Memory]] = {}
    for memory, vault in batch:
        groups.setdefault(vault, []).append(memory)
    return groups


def _batches(checked: Sequence[tuple[Memory, Vault]], size: int) -> Iterator[list[tuple[Memory, Vault]]]:
    """Runs of at most `size` records, a new one before an address the current one already has (its
    second record must see the first one's file)."""
    batch: list[tuple[Memory, Vault]] = []
    addresses: set[str] = set()
    for item in checked:
        if len(batch) >= size or item[0].address in addresses:
            yield batch
            batch, addresses = [], set()
        batch.append(item)
        addresses.add(item[0].address)
    if batch:
        yield batch


def _count_by_scope(rows: Iterable[Row]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.scope] = counts.get(row.scope, 0) + 1
    return counts


def _check_content(
    scope: str, key: str, value: str, tags: Sequence[str], kind: str, provenance: Mapping[str, str]
) -> None:
    """The guard, one call for the whole record, imported here because compiling its patterns is the
    largest part of a read-only command's start-up, and reads never need it."""
    from hivelore.memory.guard import check_record

    check_record(scope=scope, key=key, value=value, tags=tags, kind=kind, provenance=provenance)
