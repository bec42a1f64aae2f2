"""A vault: a folder of Markdown memory files, one folder per scope. The files are the truth.

Writes are atomic (temp file in the same folder, fsync, rename), serialised by one lock file
per vault, and drift-checked: a file that changed on disk since it was read is never
overwritten blindly.
"""

from __future__ import annotations

import contextlib
import os
import re
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from hivelore import atomicfile, confined
from hivelore.atomicfile import Stamp, check_unchanged
from hivelore.home import FILE_MODE, FOLDER_MODE
from hivelore.memory.local.frontmatter import FrontmatterError, parse, render
from hivelore.memory.model import Memory, iso_from_epoch
from hivelore.memory.scope import Scope, try_parse
from hivelore.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from hivelore.folderlock import FolderLock

SCOPE_ROOTS = ("global", "project", "repo", "branch")
# What `Vault.load` raises for a file that cannot be used as a memory: catch these to skip it.
UNREADABLE = (OSError, UnicodeDecodeError, FrontmatterError, confined.LinkRefused)


def slug(key: str, hashed: bool = False) -> str:
    """A safe file name for a key. A lossy slug (or `hashed`) gets the key's CRC-32, so different keys
    rarely share a name; `Hivelore._locate` settles the rare clash by reading the file."""
    base = re.sub(r"[^a-z0-9._-]+", "-", key.lower()).strip("-.")[:80] or "memory"
    if base == key and not hashed:
        return base
    return f"{base}-{zlib.crc32(key.encode()):08x}"


def candidate_names(key: str) -> list[str]:
    """The file names of `Vault.candidate_paths`, best first."""
    hashed = slug(key, hashed=True)
    return [f"{name}.md" for name in dict.fromkeys([slug(key), hashed, *(f"{hashed}-{n}" for n in range(2, 10))])]


@record
class Entry:
    """A memory file as a folder listing saw it (its stat taken while the folder was open)."""

    name: str
    path: Path
    mtime_ns: int
    size: int


@record
class Swept:
    """Temp files of killed writers that a sweep removed."""

    files: int = 0
    bytes: int = 0

    def __add__(self, other: Swept) -> Swept:
        return Swept(self.files + other.files, self.bytes + other.bytes)


@record
class Listing:
    """The memory files of one folder, and what the listing swept there."""

    files: list[Entry]
    swept: Swept
    pending: int  # temp files of writers still at work (younger than a minute): look again later


@record
class Vault:
    root: Path
    tier: str  # "home" or "project"

    @property
    def private(self) -> bool:
        """The home tier is the user's alone (0700 folders, 0600 files); the project tier is committed
        with the repository and keeps the umask's modes."""
        return self.tier == "home"

    def path_for(self, scope: Scope, key: str) -> Path:
        """The usual file of (scope, key); see `candidate_paths` for when it is taken."""
        return self.root / scope.folder / f"{slug(key)}.md"

    def candidate_paths(self, scope: Scope, key: str) -> list[Path]:
        """The names a new file for (scope, key) may take, best first: the usual one, the hashed one,
        then numbered ones (for when people renamed keys inside files by hand)."""
        folder = self.root / scope.folder
        return [folder / name for name in candidate_names(key)]

    def folder(self, scope: Scope) -> Path:
        return self.root / scope.folder

    def has_memories(self) -> bool:
        return any((self.root / name).is_dir() for name in SCOPE_ROOTS)

    # -- staying inside the tier (see confined.py) ---------------------------------------------

    def _open(self, parts: tuple[str, ...] | list[str], create: bool = False) -> int:
        """A descriptor of the folder root/parts, no part of it a link (`LinkRefused` otherwise)."""
        mode = (FOLDER_MODE if self.private else 0o777) if create else None
        return confined.open_folder(str(self.root), parts, create_mode=mode, root_may_link=self.tier == "home")

    def _split(self, path: Path) -> tuple[tuple[str, ...], str]:
        """The folder parts below the root, and the file name, of a path in this vault."""
        parts = path.relative_to(self.root).parts
        return parts[:-1], parts[-1]

    @contextlib.contextmanager
    def _folder_of(self, path: Path, create: bool = False) -> Iterator[tuple[int, str]]:
        parts, name = self._split(path)
        fd = self._open(parts, create)
        try:
            yield fd, name
        finally:
            os.close(fd)

    def lock(self) -> FolderLock:
        """Exclusive per-vault lock, held across read-modify-write of any memory file."""
        from hivelore.folderlock import FolderLock  # a write's: a read takes no lock

        return FolderLock(
            str(self.root),
            (),
            folder_mode=FOLDER_MODE if self.private else 0o777,
            file_mode=FILE_MODE if self.private else 0o666,
            root_may_link=self.tier == "home",
            prepare=self._ignore_own_files if self.tier == "project" else None,
        )

    def _ignore_own_files(self, root: int) -> None:
        """The project tier is committed with the repository; its lock and temp files are not."""
        shown, flags = str(self.root / ".gitignore"), os.O_WRONLY | os.O_CREAT | os.O_EXCL
        if confined.is_link(root, ".gitignore"):
            raise confined.LinkRefused(shown, str(self.root))
        try:
            fd = confined.open_file(root, ".gitignore", flags, 0o666, shown, str(self.root))
        except FileExistsError:
            return
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(".lock\n.tmp-*\n")

    # -- files -----------------------------------------------------------------------------------

    def load(self, path: Path) -> tuple[Memory, Stamp]:
        """Read and parse one file; raises OSError, FrontmatterError or LinkRefused (all UNREADABLE)."""
        data, stamp = self._read(path)
        return _decode(data, stamp), stamp

    def load_folder(
        self, folder: Path, names: Sequence[str]
    ) -> Iterator[tuple[Path, Memory | Exception, Stamp | None]]:
        """`load` of many files of one folder, the folder opened once (a rebuild reads thousands). A
        file that cannot be read comes with its UNREADABLE exception instead of a memory."""
        try:
            fd = self._open(folder.relative_to(self.root).parts)
        except UNREADABLE as exc:
            for name in names:
                yield folder / name, exc, None
            return
        try:
            for name in names:
                path = folder / name
                try:
                    data, stamp = self._read_in(fd, path)
                    yield path, _decode(data, stamp), stamp
                except UNREADABLE as exc:
                    yield path, exc, None
        finally:
            os.close(fd)

    def _read(self, path: Path) -> tuple[bytes, Stamp]:
        with self._folder_of(path) as (fd, name):
            return self._read_in(fd, path)

    def _read_in(self, fd: int, path: Path) -> tuple[bytes, Stamp]:
        data, st = confined.read_file(fd, path.name, str(path), str(self.root))
        return data, Stamp.of(data, st)

    def current_stamp(self, path: Path) -> Stamp | None:
        try:
            return self._read(path)[1]
        except FileNotFoundError:
            return None

    def _check_drift(self, path: Path, expected: Stamp | None, fd: int | None = None) -> None:
        try:
            now = (self._read(path) if fd is None else self._read_in(fd, path))[1]
        except FileNotFoundError:
            now = None
        check_unchanged(path, expected, now)

    def save(self, path: Path, memory: Memory, expected: Stamp | None) -> Stamp:
        """Atomically write `memory` to `path`, refusing if the file is not as `expected`, or if the
        file or any folder below the root is a link.

        Call under `lock()`. `expected` is the stamp from our read, or None for a new file.
        """
        data = render(memory).encode("utf-8")
        with self._folder_of(path, create=True) as (fd, name):
            atomicfile.replace(
                name,
                data,
                permissions=FILE_MODE if self.private else None,
                before_rename=lambda: self._check_drift(path, expected, fd),
                suffix=".md",
                dir_fd=fd,
            )
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        return Stamp.of(data, st)

    def delete(self, path: Path, expected: Stamp | None) -> None:
        """Remove a memory file, refusing if it changed since it was read. Call under `lock()`."""
        self._check_drift(path, expected)
        with self._folder_of(path) as (fd, name):
            os.unlink(name, dir_fd=fd)
            os.fsync(fd)

    def save_many(self, writes: Sequence[tuple[Path, Memory, Stamp | None]]) -> list[Stamp]:
        """`save` of many files, each still atomic (temp file, rename, drift check), each folder
        opened once and its files made durable together (see `atomicfile.replace_many`): the batch
        is whole on disk when this returns, even after a power cut. Call under `lock()`; a failure
        raises after the files before it were written. Stamps come in `writes` order."""
        folders: dict[Path, list[tuple[Path, Memory, Stamp | None]]] = {}
        for write in writes:
            folders.setdefault(write[0].parent, []).append(write)
        stamps: dict[Path, Stamp] = {}
        for folder, group in folders.items():
            fd = self._open(folder.relative_to(self.root).parts, create=True)
            try:
                rendered = [(path, render(memory).encode("utf-8"), expected) for path, memory, expected in group]
                atomicfile.replace_many(
                    fd,
                    [(path.name, data, self._drift_check_in(fd, path, expected)) for path, data, expected in rendered],
                    permissions=FILE_MODE if self.private else None,
                    suffix=".md",
                )
                for path, data, _ in rendered:
                    st = os.stat(path.name, dir_fd=fd, follow_symlinks=False)
                    stamps[path] = Stamp.of(data, st)
            finally:
                os.close(fd)
        return [stamps[path] for path, _, _ in writes]

    def _drift_check_in(self, fd: int, path: Path, expected: Stamp | None) -> Callable[[], None]:
        return lambda: self._check_drift(path, expected, fd)

    # -- listing -----------------------------------------------------------------------------------

    def walk_folders(self) -> Iterator[tuple[Path, int, list[str]]]:
        """Every scope folder with its memory file names, and its mtime taken *before* listing it (so
        a file added meanwhile makes the recorded mtime stale, never hides the file). Folders that are
        links are not entered; memory files that are links are listed (reading them is refused, so
        they are reported as skipped)."""
        for folder, mtime_ns, listing in self.listings():
            yield folder, mtime_ns, [e.name for e in listing.files]

    def listings(self) -> Iterator[tuple[Path, int, Listing]]:
        """`walk_folders` with each folder's listing: its files' stats and what was swept there."""
        pending: list[tuple[str, ...]] = [(name,) for name in SCOPE_ROOTS]
        while pending:
            parts = pending.pop()
            try:
                fd = self._open(parts)
            except (FileNotFoundError, NotADirectoryError, confined.LinkRefused):
                continue
            try:
                mtime_ns = os.fstat(fd).st_mtime_ns
                with os.scandir(fd) as entries:
                    listed = list(entries)
                pending.extend(
                    (*parts, e.name) for e in listed if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)
                )
                listing = self._listing(fd, self.root.joinpath(*parts), listed)
            finally:
                os.close(fd)
            yield self.root.joinpath(*parts), mtime_ns, listing

    @staticmethod
    def _listing(fd: int, folder: Path, listed: list[os.DirEntry[str]]) -> Listing:
        files = []
        for e in sorted(listed, key=lambda e: e.name):
            if not _is_memory_file(e.name) or e.is_dir(follow_symlinks=False):
                continue
            try:
                st = e.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            files.append(Entry(e.name, folder / e.name, st.st_mtime_ns, st.st_size))
        litter = any(atomicfile.is_temp_name(e.name) for e in listed)
        swept, size, fresh = atomicfile.sweep(fd) if litter else (0, 0, 0)
        return Listing(files, Swept(swept, size), fresh)

    def sweep(self) -> Swept:
        """Remove the temp files that writers killed mid-write left in the scope folders (stale ones
        only: see atomicfile.sweep)."""
        total = Swept()
        for _, _, listing in self.listings():
            total += listing.swept
        return total

    def iter_files(self) -> Iterator[Path]:
        """Every memory file of the vault (only rebuild, export and `list --all` walk the whole vault)."""
        for folder, _, names in self.walk_folders():
            for name in names:
                yield folder / name

    def scopes_on_disk(self) -> set[Scope]:
        """The scopes whose folders hold memory files, read from the folder names."""
        found: set[Scope] = set()
        for folder, _, names in self.walk_folders():
            scope = try_parse(_scope_text(folder.relative_to(self.root).parts)) if names else None
            if scope is not None:
                found.add(scope)
        return found

    def names_in(self, scope: Scope) -> set[str]:
        """The names in one scope's folder, none if it does not exist, without a stat each (an import
        looks names up in folders of thousands); `LinkRefused` as for `folder_files`."""
        try:
            fd = self._open(scope.folder.parts)
        except (FileNotFoundError, NotADirectoryError):
            return set()
        try:
            return set(os.listdir(fd))
        finally:
            os.close(fd)

    def folder_files(self, scope: Scope) -> Listing:
        """The memory files directly in one scope's folder (stale temp files there are swept on the
        way); `LinkRefused` when the folder, or one above it in the tier, is a link."""
        try:
            fd = self._open(scope.folder.parts)
        except (FileNotFoundError, NotADirectoryError):
            return Listing([], Swept(), 0)
        try:
            with os.scandir(fd) as entries:
                listed = list(entries)
            return self._listing(fd, self.folder(scope), listed)
        finally:
            os.close(fd)


def _decode(data: bytes, stamp: Stamp) -> Memory:
    try:
        fallback = iso_from_epoch(stamp.mtime_ns / 1e9)
    except (ValueError, OverflowError, OSError) as exc:
        raise FrontmatterError(f"its modification time is out of range ({exc})") from exc
    return parse(data.decode("utf-8-sig"), fallback_time=fallback)


def _is_memory_file(name: str) -> bool:
    return name.endswith(".md") and not name.startswith(".")


def _scope_text(parts: tuple[str, ...]) -> str:
    """The scope a folder path stands for (the inverse of `Scope.folder`)."""
    kind, rest = parts[0], parts[1:]
    if kind in ("global", "project"):
        return "::".join(parts)
    if kind == "repo":
        return f"repo::{'/'.join(rest)}"
    return f"branch::{'/'.join(rest[:2])}::{'/'.join(rest[2:])}"
