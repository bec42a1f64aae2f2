"""Files below a folder that hivelore keeps to (a tier's root, a profile's home), never through a link.

A repository is untrusted: a committed `.hivelore/repo/acme/widget -> /any/dir` must not turn a write
of `repo::acme/widget::k1` into `/any/dir/k1.md`. So every folder below the root is opened one part
at a time relative to its parent's descriptor with `O_NOFOLLOW`, and files are opened relative to
their folder's descriptor with `O_NOFOLLOW`: a link anywhere below the root, or a `..`, is refused
with `LinkRefused` (a ValueError, so every surface reports it as bad input), and nothing is read or
written through it. Opening by descriptor also means a folder swapped for a link between a check and
a write cannot redirect it. Stdlib only: the hooks write through this.
"""

from __future__ import annotations

import errno
import os
import stat

from hivelore.errors import BadInput

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from collections.abc import Sequence

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


class LinkRefused(BadInput):
    """A path below a folder hivelore keeps to is a symbolic link, or climbs out of it with '..'."""

    def __init__(self, path: str, root: str, climbs: bool = False) -> None:
        what = "climbs out of it with '..'" if climbs else "is a symbolic link"
        super().__init__(
            f"{path} {what}, and hivelore keeps to {root} (it never follows links there): "
            "replace the link with a real folder or file, or remove it; nothing was read or written through it."
        )
        self.path = path


def open_folder(root: str, parts: Sequence[str], *, create_mode: int | None = None, root_may_link: bool = True) -> int:
    """A descriptor of `root`/`parts`…, each part a real folder. Missing folders are made with
    `create_mode` (FileNotFoundError when it is None). `root` itself may be a link only if
    `root_may_link` (the user's own HIVELORE_HOME may; a repository's `.hivelore` may not)."""
    fd = _open_root(root, root_may_link, create_mode)
    shown = root
    for part in parts:
        shown = os.path.join(shown, part)
        if part in ("", ".", "..") or os.sep in part:
            os.close(fd)
            raise LinkRefused(shown, root, climbs=True)
        try:
            child = _open_child(fd, part, create_mode, shown, root)
        finally:
            os.close(fd)
        fd = child
    return fd


def _open_root(root: str, may_link: bool, create_mode: int | None) -> int:
    flags = _FOLDER if may_link else _FOLDER | os.O_NOFOLLOW
    try:
        return os.open(root, flags)
    except FileNotFoundError:
        if create_mode is None:
            raise
        os.makedirs(root, create_mode, exist_ok=True)
        return _open_root(root, may_link, None)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(root):
            raise LinkRefused(root, os.path.dirname(root) or ".") from None
        raise


def _open_child(parent: int, name: str, create_mode: int | None, shown: str, root: str) -> int:
    try:
        return os.open(name, _FOLDER | os.O_NOFOLLOW, dir_fd=parent)
    except FileNotFoundError:
        if create_mode is None:
            raise
        try:  # noqa: SIM105 -- contextlib is one import more on the hook path
            os.mkdir(name, create_mode, dir_fd=parent)
        except FileExistsError:  # made meanwhile by another writer (or a dangling link: refused below)
            pass
        return _open_child(parent, name, None, shown, root)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and is_link(parent, name):
            raise LinkRefused(shown, root) from None
        raise


def is_link(folder: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def read_file(folder: int, name: str, shown: str, root: str) -> tuple[bytes, os.stat_result]:
    """The bytes and the stat of a regular file in `folder`, refusing a link (`shown` and `root` name it
    in the error)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=folder)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LinkRefused(shown, root) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", shown)
        chunks = []
        while chunk := os.read(fd, max(st.st_size, 4096)):
            chunks.append(chunk)
        return b"".join(chunks), st
    finally:
        os.close(fd)


def open_file(folder: int, name: str, flags: int, mode: int, shown: str, root: str) -> int:
    """`os.open` of `name` in `folder` that refuses a link (a lock, a `.gitignore`)."""
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=folder)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno == errno.EEXIST and is_link(folder, name)):
            raise LinkRefused(shown, root) from None
        raise
