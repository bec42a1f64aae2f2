"""One lock per folder, held across a read-modify-write of its files: the vault takes its root's,
the profile its folder's. The lock is `.lock` in the folder, held with `fcntl.flock`: the kernel
releases it when its process dies, so a crash never leaves it taken. Stdlib only: hooks write
through this.
"""

from __future__ import annotations

import fcntl
import os

from hivelore import confined

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

LOCK = ".lock"


class FolderLock:
    """`with FolderLock(root, parts, …):` holds the folder root/parts… locked, exclusively. The folder
    is made with `folder_mode` when missing and the lock file with `file_mode`; a link on the way is
    refused (`confined.LinkRefused`), the root itself only when not `root_may_link`. `prepare` runs on
    the open folder before the lock file is opened (the vault ignores its own files there, the profile
    sweeps what killed writers left)."""

    __slots__ = ("root", "parts", "folder_mode", "file_mode", "root_may_link", "prepare", "fd")

    def __init__(
        self,
        root: str,
        parts: Sequence[str],
        *,
        folder_mode: int,
        file_mode: int,
        root_may_link: bool = True,
        prepare: Callable[[int], object] | None = None,
    ) -> None:
        self.root, self.parts, self.root_may_link, self.prepare = root, tuple(parts), root_may_link, prepare
        self.folder_mode, self.file_mode = folder_mode, file_mode
        self.fd = -1

    def __enter__(self) -> FolderLock:
        folder = confined.open_folder(
            self.root, self.parts, create_mode=self.folder_mode, root_may_link=self.root_may_link
        )
        try:
            if self.prepare is not None:
                self.prepare(folder)
            shown = os.path.join(self.root, *self.parts, LOCK)
            self.fd = confined.open_file(folder, LOCK, os.O_RDWR | os.O_CREAT, self.file_mode, shown, self.root)
        finally:
            os.close(folder)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(self.fd)
            self.fd = -1
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        finally:
            os.close(self.fd)
            self.fd = -1
