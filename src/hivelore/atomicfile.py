"""Replacing a file atomically: the one way the vault, the profile and `install` write a file.

A temp file in the same folder (so the rename stays on one file system and is atomic) is written
and fsynced, renamed over the target, and then the folder is fsynced so the rename itself survives
a crash. A reader sees the old file or the new one, never half of either. Temp names start with
`.tmp-` (the vault and the profile skip and clean up such names). Not `tempfile.mkstemp`: importing
tempfile costs more than a whole write on the hook path.
"""

from __future__ import annotations

import os
from collections.abc import Callable

TEMP_PREFIX = ".tmp-"


def replace(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    permissions: int | None = None,
    before_rename: Callable[[], None] | None = None,
    suffix: str = "",
) -> None:
    """Make `path` hold `data`. `permissions` sets the new file's mode exactly (default: 0o666 less
    the umask); `before_rename` is the last look before the old file is replaced (a drift check
    that raises leaves the old file and no temp file behind)."""
    folder = os.path.dirname(os.fspath(path)) or "."
    tmp = os.path.join(folder, f"{TEMP_PREFIX}{os.getpid()}-{os.urandom(6).hex()}{suffix}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if permissions is not None:
            os.chmod(tmp, permissions)
        if before_rename is not None:
            before_rename()
        os.replace(tmp, path)
    except BaseException:
        try:  # noqa: SIM105 -- contextlib is one import more on the hook path for three lines
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(folder)


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
