"""Replacing a file atomically: the one way the vault, the profile and `install` write a file.

A temp file in the same folder (so the rename stays on one file system and is atomic) is written
and fsynced, renamed over the target, and then the folder is fsynced so the rename itself survives
a crash. A reader sees the old file or the new one, never half of either. Temp names are
`.tmp-<pid>-<12 hex digits><suffix>`; a writer killed mid-write leaves one behind, which the vault
and the profile skip and, once it is older than `STALE_SECONDS`, remove (`sweep`). Not
`tempfile.mkstemp`: importing tempfile costs more than a whole write on the hook path.

A file is never overwritten blindly either: a writer keeps the `Stamp` of what it read, and its
`before_rename` (`check_unchanged`) raises `DriftError` when the file holds something else by then.
"""

from __future__ import annotations

import os
import stat
import time
import zlib
from collections.abc import Callable, Sequence

from hivelore.errors import Conflict
from hivelore.records import record

TEMP_PREFIX = ".tmp-"
# A write takes milliseconds: a temp file this old has no live writer (one would fail its rename
# and report the write as not done, so nothing acknowledged is lost even then).
STALE_SECONDS = 60.0
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class DriftError(Conflict):
    """A file changed on disk between our read and our write; nothing was written."""


@record
class Stamp:
    """What a file held when it was read. A drift check compares the content, its size and CRC-32:
    a file only touched (a new mtime, the same bytes) has not drifted, since writing over it loses
    nothing. The mtime is kept for the index, which goes by it to notice a change unread."""

    mtime_ns: int
    size: int
    checksum: str  # CRC-32 of the bytes, 8 hex digits: enough to notice a change, and zlib imports in no time

    @classmethod
    def of(cls, data: bytes, st: os.stat_result) -> Stamp:
        """The stamp of a file that holds `data` and stats as `st`."""
        return cls(st.st_mtime_ns, st.st_size, f"{zlib.crc32(data):08x}")

    def same_content(self, other: Stamp | None) -> bool:
        return other is not None and other.size == self.size and other.checksum == self.checksum


def check_unchanged(path: str | os.PathLike[str], expected: Stamp | None, now: Stamp | None) -> None:
    """Raise DriftError unless the file at `path` still holds what was read: `expected` is the stamp
    of that read and `now` the file's stamp at this moment, each None for a file that was not there."""
    if (expected is None and now is None) or (expected is not None and expected.same_content(now)):
        return
    raise DriftError(
        f"{os.fspath(path)} changed on disk since hivelore read it; nothing was written: "
        "check the file and run the command again."
    )


def replace(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    permissions: int | None = None,
    before_rename: Callable[[], None] | None = None,
    suffix: str = "",
    dir_fd: int | None = None,
) -> None:
    """Make `path` hold `data`. `permissions` sets the new file's mode exactly (default: 0o666 less
    the umask); `before_rename` is the last look before the old file is replaced (a drift check
    that raises leaves the old file and no temp file behind). With `dir_fd`, `path` is a name in
    that open folder (see confined.py), and the temp file is never a link."""
    folder = "." if dir_fd is not None else os.path.dirname(os.fspath(path)) or "."
    name = _temp_name(suffix)
    tmp = name if dir_fd is not None else os.path.join(folder, name)
    fd = os.open(tmp, _TEMP_FLAGS, 0o666 if permissions is None else permissions & 0o666, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            if permissions is not None:
                os.fchmod(handle.fileno(), permissions)
        if before_rename is not None:
            before_rename()
        os.replace(tmp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:  # noqa: SIM105 -- contextlib is one import more on the hook path for three lines
            os.unlink(tmp, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        raise
    if dir_fd is not None:
        os.fsync(dir_fd)
    else:
        fsync_dir(folder)


def replace_many(
    dir_fd: int,
    files: Sequence[tuple[str, bytes, Callable[[], None] | None]],
    *,
    permissions: int | None = None,
    suffix: str = "",
) -> None:
    """`replace` of many files of the open folder `dir_fd`, given as (name, data, before_rename):
    each one still a temp file renamed over its name, but the temp files made durable together (one
    `syncfs` on Linux instead of an fsync each, which costs milliseconds apiece) and the folder
    fsynced once, at the end. When one fails, the files renamed before it stay (and are made
    durable), the rest are untouched, and no temp file is left."""
    temps: list[str] = []
    renamed = 0
    try:
        for _, data, _ in files:
            temps.append(_temp_name(suffix))
            fd = os.open(temps[-1], _TEMP_FLAGS, 0o666 if permissions is None else permissions & 0o666, dir_fd=dir_fd)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                if permissions is not None:
                    os.fchmod(handle.fileno(), permissions)
        _make_durable(dir_fd, temps)
        for (name, _, before_rename), tmp in zip(files, temps, strict=True):
            if before_rename is not None:
                before_rename()
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            renamed += 1
    except BaseException:
        for tmp in temps[renamed:]:
            try:  # noqa: SIM105 -- as in `replace`
                os.unlink(tmp, dir_fd=dir_fd)
            except FileNotFoundError:
                pass
        raise
    finally:
        os.fsync(dir_fd)


def _make_durable(dir_fd: int, names: Sequence[str]) -> None:
    """Flush the written files `names` of the open folder to disk: one `syncfs` of their file system
    where the C library has it (Linux), else an fsync each. ctypes is imported only here: bulk
    writes need it, the hook path never does."""
    try:
        import ctypes

        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (ImportError, OSError, AttributeError):
        syncfs = None
    if syncfs is not None and syncfs(dir_fd) == 0:
        return
    for name in names:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _temp_name(suffix: str) -> str:
    return f"{TEMP_PREFIX}{os.getpid()}-{os.urandom(6).hex()}{suffix}"


def remove(path: str | os.PathLike[str]) -> None:
    """Delete `path` (already gone is fine) so that the deletion survives a crash."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    fsync_dir(os.path.dirname(os.fspath(path)) or ".")


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def is_temp_name(name: str) -> bool:
    """Whether `name` is one of `replace`'s temp files (`.tmp-<pid>-<12 hex digits>…`), nothing else."""
    if not name.startswith(TEMP_PREFIX):
        return False
    pid, _, rest = name[len(TEMP_PREFIX) :].partition("-")
    token = rest[:12]
    return pid.isdigit() and pid.isascii() and len(token) == 12 and all(c in "0123456789abcdef" for c in token)


def sweep(folder: int, now: float | None = None) -> tuple[int, int, int]:
    """Remove the stale temp files in the open folder `folder`: `replace`'s own names only, regular
    files only, older than STALE_SECONDS. Returns (files removed, their bytes, fresh ones left for
    their writers)."""
    now = time.time() if now is None else now
    removed = size = fresh = 0
    with os.scandir(folder) as entries:
        temps = [e for e in entries if is_temp_name(e.name)]
    for entry in temps:
        try:
            st = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode):
                continue
            if now - st.st_mtime < STALE_SECONDS:
                fresh += 1
                continue
            os.unlink(entry.name, dir_fd=folder)
        except FileNotFoundError:  # its writer renamed it, or another sweep got there first
            continue
        removed += 1
        size += st.st_size
    if removed:
        os.fsync(folder)
    return removed, size, fresh
