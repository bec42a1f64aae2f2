"""A vault: a folder of Markdown memory files, one folder per scope. The files are the truth.

Writes are atomic (temp file in the same folder, fsync, rename), serialised by one lock file
per vault, and drift-checked: a file that changed on disk since it was read is never
overwritten blindly.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

from hivelore import atomicfile
from hivelore.frontmatter import FrontmatterError, parse, render
from hivelore.memory import Memory, iso_from_epoch
from hivelore.records import record
from hivelore.scope import Scope, try_parse

SCOPE_ROOTS = ("global", "project", "repo", "branch")
# What `Vault.load` raises for a file that cannot be used as a memory: catch these to skip it.
UNREADABLE = (OSError, UnicodeDecodeError, FrontmatterError)


class DriftError(RuntimeError):
    """A file changed on disk between our read and our write."""


@record
class Stamp:
    """What a file looked like when we read it."""

    mtime_ns: int
    size: int
    checksum: str  # CRC-32 of the bytes: enough to notice a change, and zlib imports in no time


def slug(key: str, hashed: bool = False) -> str:
    """A safe file name for a key. A lossy slug (or `hashed`) gets the key's CRC-32, so different keys
    rarely share a name; `Hivelore._locate` settles the rare clash by reading the file."""
    base = re.sub(r"[^a-z0-9._-]+", "-", key.lower()).strip("-.")[:80] or "memory"
    if base == key and not hashed:
        return base
    return f"{base}-{zlib.crc32(key.encode()):08x}"


def stamp_of(path: Path, data: bytes) -> Stamp:
    st = path.stat()
    return Stamp(st.st_mtime_ns, st.st_size, f"{zlib.crc32(data):08x}")


@record
class Vault:
    root: Path
    tier: str  # "home" or "project"

    def path_for(self, scope: Scope, key: str) -> Path:
        """The usual file of (scope, key); see `candidate_paths` for when it is taken."""
        return self.root / scope.folder / f"{slug(key)}.md"

    def candidate_paths(self, scope: Scope, key: str) -> list[Path]:
        """The names a new file for (scope, key) may take, best first: the usual one, the hashed one,
        then numbered ones (for when people renamed keys inside files by hand)."""
        hashed = slug(key, hashed=True)
        names = [slug(key), hashed, *(f"{hashed}-{n}" for n in range(2, 10))]
        return [self.root / scope.folder / f"{name}.md" for name in dict.fromkeys(names)]

    def folder(self, scope: Scope) -> Path:
        return self.root / scope.folder

    def has_memories(self) -> bool:
        return any((self.root / name).is_dir() for name in SCOPE_ROOTS)

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Exclusive per-vault lock, held across read-modify-write of any memory file."""
        self.root.mkdir(parents=True, exist_ok=True)
        ignore = self.root / ".gitignore"
        if self.tier == "project" and not ignore.exists():
            # The project tier is committed with the repository; its lock and temp files are not.
            ignore.write_text(".lock\n.tmp-*\n", encoding="utf-8")
        with open(self.root / ".lock", "a+") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def load(self, path: Path) -> tuple[Memory, Stamp]:
        """Read and parse one file; raises OSError or FrontmatterError."""
        data = path.read_bytes()
        stamp = stamp_of(path, data)
        try:
            fallback = iso_from_epoch(stamp.mtime_ns / 1e9)
        except (ValueError, OverflowError, OSError) as exc:
            raise FrontmatterError(f"its modification time is out of range ({exc})") from exc
        memory = parse(data.decode("utf-8-sig"), fallback_time=fallback)
        return memory, stamp

    def current_stamp(self, path: Path) -> Stamp | None:
        try:
            return stamp_of(path, path.read_bytes())
        except FileNotFoundError:
            return None

    def _check_drift(self, path: Path, expected: Stamp | None) -> None:
        now = self.current_stamp(path)
        if now is None and expected is None:
            return
        if now is None or expected is None or now.checksum != expected.checksum:
            raise DriftError(
                f"{path} changed on disk while hivelore was writing it; nothing was written: "
                "check the file and run the command again."
            )

    def save(self, path: Path, memory: Memory, expected: Stamp | None) -> Stamp:
        """Atomically write `memory` to `path`, refusing if the file is not as `expected`.

        Call under `lock()`. `expected` is the stamp from our read, or None for a new file.
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        data = render(memory).encode("utf-8")
        atomicfile.replace(path, data, before_rename=lambda: self._check_drift(path, expected), suffix=".md")
        return stamp_of(path, data)

    def delete(self, path: Path, expected: Stamp | None) -> None:
        """Remove a memory file, refusing if it changed since it was read. Call under `lock()`."""
        self._check_drift(path, expected)
        path.unlink()
        atomicfile.fsync_dir(path.parent)

    def walk_folders(self) -> Iterator[tuple[Path, int, list[str]]]:
        """Every scope folder with its memory file names, and its mtime taken *before* listing it (so
        a file added meanwhile makes the recorded mtime stale, never hides the file)."""
        pending = [self.root / name for name in SCOPE_ROOTS]
        while pending:
            folder = pending.pop()
            try:
                mtime_ns = os.stat(folder).st_mtime_ns
                with os.scandir(folder) as entries:
                    listed = list(entries)
            except (FileNotFoundError, NotADirectoryError):
                continue
            pending.extend(Path(e.path) for e in listed if e.is_dir() and not e.name.startswith("."))
            names = sorted(e.name for e in listed if _is_memory_file(e.name) and e.is_file())
            yield folder, mtime_ns, names

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

    def folder_files(self, scope: Scope) -> list[os.DirEntry[str]]:
        """The memory files directly in one scope's folder."""
        try:
            with os.scandir(self.folder(scope)) as entries:
                return [e for e in entries if e.name.endswith(".md") and not e.name.startswith(".") and e.is_file()]
        except (FileNotFoundError, NotADirectoryError):
            return []


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

