"""The two primitives every read-modify-write of a file stands on: the stamp a drift check compares
(atomicfile.Stamp) and the folder lock (folderlock.FolderLock). The vault and the profile use the
same ones, so a change one of them calls drift the other calls drift too.
"""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

import pytest

from hivelore.atomicfile import DriftError, Stamp
from hivelore.confined import LinkRefused
from hivelore.folderlock import FolderLock
from hivelore.memory.local.vault import Vault
from hivelore.memory.model import Memory, now_iso
from hivelore.memory.scope import parse
from hivelore.profile.store import Profile

LESSON = "pnpm test fails with ECONNREFUSED until the db container is up: run `docker compose up -d db` first."
# A person's editor, between hivelore's read and its write: only the mtime changes, or the bytes do.
TOUCH = "touch"
SAME_SIZE_EDIT = "same-size edit"


def someone(change: str, path: Path) -> None:
    if change == TOUCH:
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    else:
        data = path.read_bytes()
        path.write_bytes(data.replace(b"ECONNREFUSED", b"ECONNRESET!!"))


def vault_write_after(change: str, tmp_path: Path) -> None:
    """Write a memory, let someone change its file, then write it again with the first read's stamp."""
    vault = Vault(tmp_path / "tier", "home")
    memory = Memory(scope=parse("global"), key="k1", value=LESSON, created=now_iso(), updated=now_iso())
    path = vault.path_for(memory.scope, memory.key)
    with vault.lock():
        vault.save(path, memory, None)
    _, stamp = vault.load(path)
    someone(change, path)
    with vault.lock():
        vault.save(path, memory, stamp)


def profile_write_after(change: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Promote a line, let someone change USER.md right after the next promotion read it."""
    profile = Profile.open(str(tmp_path / "home"))
    profile.promote(LESSON, "USER.md", None, ["s1", "s2", "s3"])
    load = Profile._snapshot

    def load_then_change(self: Profile) -> dict:
        loaded = load(self)
        someone(change, Path(self.folder) / "USER.md")
        return loaded

    with monkeypatch.context() as patch:
        patch.setattr(Profile, "_snapshot", load_then_change)
        profile.promote("Prefer concise replies.", "USER.md", None, ["s1", "s2", "s3"])


@pytest.mark.parametrize("writer", ["vault", "profile"])
def test_a_touched_file_has_not_drifted_but_a_same_size_edit_has(
    writer: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def write_after(change: str, folder: Path) -> None:
        if writer == "vault":
            vault_write_after(change, folder)
        else:
            profile_write_after(change, folder, monkeypatch)

    write_after(TOUCH, tmp_path / "touched")
    with pytest.raises(DriftError, match="changed on disk since hivelore read it; nothing was written"):
        write_after(SAME_SIZE_EDIT, tmp_path / "edited")


def test_a_stamp_is_the_files_size_mtime_and_crc32(tmp_path: Path) -> None:
    path = tmp_path / "k1.md"
    path.write_bytes(b"hello")
    stamp = Stamp.of(b"hello", path.stat())
    assert stamp == Stamp(path.stat().st_mtime_ns, 5, "3610a686")
    assert stamp.same_content(Stamp(0, 5, "3610a686"))
    assert not stamp.same_content(Stamp(stamp.mtime_ns, 5, "00000000"))
    assert not stamp.same_content(None)


def locked_elsewhere(path: Path) -> bool:
    """Whether another holder (another open file description, as another process has) is refused the lock."""
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_a_folder_lock_excludes_every_other_holder_until_it_is_released(tmp_path: Path) -> None:
    prepared = []
    with FolderLock(
        str(tmp_path), ("profiles", "default"), folder_mode=0o700, file_mode=0o600, prepare=prepared.append
    ):
        folder = tmp_path / "profiles" / "default"
        assert locked_elsewhere(folder / ".lock")
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert stat.S_IMODE((folder / ".lock").stat().st_mode) == 0o600
        assert len(prepared) == 1, "prepare ran once, on the open folder"
    assert not locked_elsewhere(folder / ".lock")


def test_a_folder_lock_is_not_taken_through_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "profiles").symlink_to(outside)
    with pytest.raises(LinkRefused, match="profiles is a symbolic link"):
        FolderLock(str(tmp_path / "home"), ("profiles",), folder_mode=0o700, file_mode=0o600).__enter__()
    (tmp_path / "tier").symlink_to(outside)
    with pytest.raises(LinkRefused, match="tier is a symbolic link"):
        FolderLock(str(tmp_path / "tier"), (), folder_mode=0o700, file_mode=0o600, root_may_link=False).__enter__()
    assert list(outside.iterdir()) == []
