"""Where hivelore keeps its home-tier files. Imports nothing: the hook client needs it before
anything else is loaded."""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from collections.abc import Mapping


def home_path(env: Mapping[str, str]) -> str:
    """HIVELORE_HOME, else ~/.hivelore, as an absolute path in a string (the hooks' light path imports
    no pathlib). A relative HIVELORE_HOME is taken from the current folder: kept relative, the index
    filed the same memories under a second root spelt `../home`."""
    return os.path.abspath(os.path.expanduser(env.get("HIVELORE_HOME") or os.path.join("~", ".hivelore")))


# HIVELORE_HOME holds raw prompts, errors and lessons: it is the user's alone.
FOLDER_MODE = 0o700
FILE_MODE = 0o600


def private_folder(path: str) -> None:
    """Make the folder `path`, and any missing folder above it, owner-only (`os.makedirs` would give
    the folders above it the umask's mode)."""
    try:
        os.mkdir(path, FOLDER_MODE)
    except FileExistsError:
        return
    except FileNotFoundError:
        parent = os.path.dirname(path)
        if not parent or parent == path:
            raise
        private_folder(parent)
        try:  # noqa: SIM105 -- contextlib is one import more for the hook client
            os.mkdir(path, FOLDER_MODE)
        except FileExistsError:
            pass


def private_file(path: str) -> None:
    """Create the file `path` owner-only if it is missing, or take group and other access away from it
    (SQLite gives a database's -wal and -shm files the database's mode, so creating the database this
    way before SQLite does covers them). One stat when it already is private.

    An existing file is never opened here: closing any descriptor of a file drops every POSIX lock this
    process holds on it, SQLite's included. In a process that already has the database open (the hook
    server), that let another process take the file for its own, checkpoint and delete the WAL files
    under the first, whose every later use of the store failed with "disk I/O error"."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    except FileExistsError:
        found = os.lstat(path)
        if stat.S_ISLNK(found.st_mode):
            raise OSError(errno.ELOOP, f"{path} is a symbolic link") from None
        if found.st_mode & 0o077:
            try:  # noqa: SIM105 -- contextlib is one import more for the hook client
                os.chmod(path, FILE_MODE)
            except OSError:  # not ours to change: the store still works
                pass
        return
    os.close(fd)  # just made: no connection of this process can hold it


def private_home(home: str) -> None:
    """Narrow a HIVELORE_HOME that others may enter (made by an older hivelore, or under a loose umask):
    the folder becomes 0700, and every folder and file in it loses group and other access. Links are
    left alone (never followed). One stat when the home is private already, or does not exist yet."""
    try:
        if not os.stat(home).st_mode & 0o077:
            return
        os.chmod(home, FOLDER_MODE)
    except OSError:  # missing (a writer makes it private), or not ours to change
        return
    for folder, folders, files in os.walk(home):
        for name in folders + files:
            path = os.path.join(folder, name)
            try:
                mode = os.lstat(path).st_mode
                if mode & 0o077 and not stat.S_ISLNK(mode):
                    os.chmod(path, mode & 0o7700)
            except OSError:
                continue
