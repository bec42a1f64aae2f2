"""What hivelore's files on disk may and may not do: writes never leave their tier through a link, the home
is the user's alone, and writers killed mid-write leave nothing behind.

The repositories are real git repositories (conftest.py), the commands the real `hivelore` CLI and `hivelore
hook` run as subprocesses, and the killed writer a real process killed with SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from hivelore import atomicfile
from hivelore.confined import LinkRefused
from hivelore.memory.local.vault import Vault
from hivelore.memory.model import Memory, now_iso
from hivelore.memory.scope import parse
from hivelore.profile.store import Profile, ProfileError

CLI = Callable[..., subprocess.CompletedProcess[str]]
PAYLOADS = Path(__file__).parent / "fixtures" / "hook-payloads" / "claude-code"
REPO = "repo::acme/checkout"
LESSON = "pnpm test fails with ECONNREFUSED until the db container is up: run `docker compose up -d db` first."


def refused(result: subprocess.CompletedProcess[str], link: Path) -> None:
    """The command failed with one line that names the link."""
    assert result.returncode != 0, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"{link} is a symbolic link" in lines[0], lines[0]


def contents(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside every tier, where nothing may ever be written."""
    path = tmp_path / "outside"
    path.mkdir()
    return path


# --- 1. a write never leaves its tier -------------------------------------------------------------------------


def test_a_folder_link_in_the_project_tier_is_refused_and_nothing_is_written(
    repo: Path, cli: CLI, outside: Path
) -> None:
    """The attack of the issue: a committed `.hivelore/repo/acme/checkout -> /any/dir`."""
    link = repo / ".hivelore" / "repo" / "acme" / "checkout"
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)

    refused(cli("write", f"{REPO}::k1", LESSON), link)
    refused(cli("write", "--tier", "project", f"{REPO}::k1", LESSON), link)
    # a link higher up the path is refused the same way
    link.unlink()
    (repo / ".hivelore" / "repo" / "acme").rmdir()
    (repo / ".hivelore" / "repo" / "acme").symlink_to(outside)
    refused(cli("write", f"{REPO}::k1", LESSON), repo / ".hivelore" / "repo" / "acme")

    assert contents(outside) == {}


def test_a_linked_memory_file_is_neither_written_nor_read_through(
    home: Path, repo: Path, cli: CLI, outside: Path
) -> None:
    """A memory file that is a link (to a file that holds a valid memory): a write refuses it, reads skip it
    with a warning, and the file it points at is untouched."""
    assert cli("write", "--tier", "project", f"{REPO}::k0", LESSON).returncode == 0
    folder = repo / ".hivelore" / "repo" / "acme" / "checkout"
    target = outside / "k1.md"
    target.write_bytes((folder / "k0.md").read_bytes().replace(b"key: k0", b"key: k1"))
    before = contents(outside)
    (folder / "k1.md").symlink_to(target)

    refused(cli("write", f"{REPO}::k1", "a different lesson about the checkout tests"), folder / "k1.md")
    listed = cli("list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [m["key"] for m in json.loads(listed.stdout)[REPO]] == ["k0"]
    assert f"skipped {folder / 'k1.md'}" in listed.stderr and "is a symbolic link" in listed.stderr
    assert cli("forget", f"{REPO}::k1").returncode != 0
    assert cli("archive", f"{REPO}::k1").returncode != 0

    assert contents(outside) == before


def test_a_tier_folder_swapped_for_a_link_cannot_be_archived_restored_or_forgotten_through(
    repo: Path, cli: CLI, outside: Path
) -> None:
    """A memory written in the project tier, whose folder is then moved out and linked back: archive,
    restore and forget all fail, and the moved file is exactly as it was."""
    assert cli("write", "--tier", "project", f"{REPO}::k1", LESSON).returncode == 0
    folder = repo / ".hivelore" / "repo" / "acme" / "checkout"
    folder.rename(outside / "checkout")
    folder.symlink_to(outside / "checkout")
    before = contents(outside)

    for command in ("archive", "restore", "forget"):
        result = cli(command, f"{REPO}::k1")
        assert result.returncode != 0, (command, result.stdout)
    assert contents(outside) == before


@pytest.mark.parametrize("name", [".lock", ".gitignore"])
def test_a_linked_lock_or_gitignore_is_refused(repo: Path, cli: CLI, outside: Path, name: str) -> None:
    """Both dangling (the write would create the target) and pointing at an existing file (it would be
    opened, or written, through the link)."""
    tier = repo / ".hivelore"
    tier.mkdir()
    (tier / name).symlink_to(outside / "created-by-hivelore")
    refused(cli("write", "--tier", "project", f"{REPO}::k1", LESSON), tier / name)
    assert contents(outside) == {}

    (outside / "existing").write_text("someone else's file\n")
    (tier / name).unlink()
    (tier / name).symlink_to(outside / "existing")
    refused(cli("write", "--tier", "project", f"{REPO}::k1", LESSON), tier / name)
    assert contents(outside) == {"existing": b"someone else's file\n"}
    assert not list(tier.rglob("*.md"))


def test_a_project_tier_that_is_itself_a_link_is_not_used(home: Path, repo: Path, cli: CLI, outside: Path) -> None:
    """`.hivelore -> elsewhere`: writing to the project tier is refused; reads and the default write keep to
    the home tier and say why."""
    (repo / ".hivelore").symlink_to(outside)
    refused(cli("write", "--tier", "project", f"{REPO}::k1", LESSON), repo / ".hivelore")

    written = cli("write", f"{REPO}::k1", LESSON)
    assert written.returncode == 0, written.stderr
    assert (home / "repo" / "acme" / "checkout" / "k1.md").exists()
    assert f"{repo / '.hivelore'} is a symbolic link" in written.stderr
    assert contents(outside) == {}


def test_a_folder_link_in_the_home_tier_is_refused(home: Path, cli: CLI, outside: Path) -> None:
    link = home / "repo" / "acme" / "checkout"
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)
    refused(cli("write", "--tier", "home", f"{REPO}::k1", LESSON), link)
    assert contents(outside) == {}


def test_a_linked_profile_folder_is_refused(home: Path, outside: Path) -> None:
    """The profile store keeps to HIVELORE_HOME as well: a promotion into a linked profile folder is refused."""
    (home / "profiles").mkdir(parents=True)
    (home / "profiles" / "default").symlink_to(outside)
    with pytest.raises(ProfileError, match="is a symbolic link"):
        Profile.open(str(home)).promote("Prefer concise replies.", "USER.md", "reply verbosity", ["s1", "s2", "s3"])
    assert contents(outside) == {}


def test_a_path_that_climbs_out_of_the_tier_is_refused(tmp_path: Path) -> None:
    """Scope grammar already forbids `..`; the vault refuses it anyway, before anything is written."""
    vault = Vault(tmp_path / "tier", "home")
    memory = Memory(scope=parse("global"), key="k1", value=LESSON, created=now_iso(), updated=now_iso())
    with vault.lock(), pytest.raises(LinkRefused, match=r"climbs out of it with '\.\.'"):
        vault.save(tmp_path / "tier" / "global" / ".." / ".." / "k1.md", memory, None)
    assert not (tmp_path / "k1.md").exists()


# --- 2. HIVELORE_HOME is the user's alone -----------------------------------------------------------------------


def umask_022() -> None:
    os.umask(0o022)


def run(home: Path, cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`hivelore ARGS` under the common umask 022, which would make files readable by everyone."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVELORE_")}
    env.update(HIVELORE_HOME=str(home), HIVELORE_HOOK_SERVER=os.environ["HIVELORE_HOOK_SERVER"])
    return subprocess.run(
        [sys.executable, "-m", "hivelore", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=umask_022,
    )


def payload(event: str, repo: Path, session: str, **fields: object) -> str:
    doc = json.loads((PAYLOADS / f"{event}.json").read_text())
    body = {**doc["examples"][0]["payload"], "cwd": str(repo), "session_id": session, **fields}
    return json.dumps(body)


def too_open(home: Path) -> list[str]:
    """Every file in `home` that group or others may read, and every folder they may enter."""
    found = []
    for path in [home, *home.rglob("*")]:
        mode = path.lstat().st_mode
        if not stat.S_ISLNK(mode) and mode & 0o077:
            found.append(f"{oct(mode & 0o777)} {path.relative_to(home)}")
    return found


def test_a_session_leaves_nothing_in_the_home_that_others_may_read(home: Path, repo: Path) -> None:
    """Three sessions of hooks (start, a prompt the user repeats so that it is promoted into USER.md, a failed
    command, Stop, the session end's note), then CLI writes and a rebuild, all under umask 022."""
    for session in ("s1", "s2", "s3"):
        for event, fields in (
            ("SessionStart", {}),
            ("UserPromptSubmit", {"prompt": "I prefer concise replies."}),
            ("PostToolUseFailure", {"error": "Exit code 1\nError: connect ECONNREFUSED 127.0.0.1:5432"}),
            ("Stop", {}),
            ("SessionEnd", {"last_assistant_message": "Fixed the tests: the db container must be up first."}),
        ):
            result = run(
                home, repo, "hook", "--agent", "claude", "--event", event, stdin=payload(event, repo, session, **fields)
            )
            assert result.returncode == 0 and result.stderr == "", result.stderr
    for args in (("write", f"{REPO}::k1", LESSON), ("write", "global::k2", LESSON), ("index", "rebuild")):
        result = run(home, repo, *args)
        assert result.returncode == 0, result.stderr

    made = {p.name for p in home.rglob("*")}
    assert {"index.db", "events.db", "team.db", ".lock", "k1.md", "USER.md", "promotions.json"} <= made, made
    assert any(name.startswith("session-") for name in made), made  # the session note
    assert too_open(home) == []


def test_an_existing_home_with_loose_modes_is_narrowed_on_open(home: Path, repo: Path) -> None:
    assert run(home, repo, "write", f"{REPO}::k1", LESSON).returncode == 0
    for path in [home, *home.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)

    assert run(home, repo, "list").returncode == 0
    assert too_open(home) == []


def test_the_project_tier_keeps_the_ordinary_modes_of_a_repository(repo: Path, home: Path) -> None:
    """It is committed with the repository, so its files are made like any other file there."""
    assert run(home, repo, "write", "--tier", "project", f"{REPO}::k1", LESSON).returncode == 0
    assert (repo / ".hivelore" / "repo" / "acme" / "checkout" / "k1.md").stat().st_mode & 0o777 == 0o644
    assert (repo / ".hivelore" / "repo").stat().st_mode & 0o777 == 0o755


# --- 3. killed writers leave nothing behind ---------------------------------------------------------------------

WRITER = """
import sys, time
from hivelore import atomicfile
from hivelore.confined import LinkRefused
from hivelore.memory.model import Memory, now_iso

def pause():
    print("writing", flush=True)
    time.sleep(float(sys.argv[3]))

atomicfile.replace(sys.argv[1], sys.argv[2].encode() * 4096, before_rename=pause, suffix=".md")
print("done", flush=True)
"""


def start_writer(path: Path, text: str, pause_s: float) -> subprocess.Popen[str]:
    """A real writer of `path`, stopped between writing its temp file and renaming it over `path`."""
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), text, str(pause_s)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None and writer.stdout.readline() == "writing\n"
    return writer


def temps(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.startswith(".tmp-"))


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_writer_killed_mid_write_loses_nothing_and_its_temp_file_is_swept_once_stale(home: Path, cli: CLI) -> None:
    """SIGKILL between the temp file and the rename: the memory keeps its old text, the temp file stays while
    it is fresh (it could be a live writer's), and is swept by the rebuild once older than a minute."""
    assert cli("write", f"{REPO}::k1", LESSON).returncode == 0
    path = home / "repo" / "acme" / "checkout" / "k1.md"
    before = path.read_bytes()
    writer = start_writer(path, "half-written ", 60)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    [left] = temps(path.parent)
    size = left.stat().st_size

    fresh = json.loads(cli("index", "rebuild", "--json").stdout)
    assert fresh["swept"] == {"temp_files": 0, "bytes": 0}
    assert temps(path.parent) == [left]

    age(left, 120)
    stale = json.loads(cli("index", "rebuild", "--json").stdout)
    assert stale["swept"] == {"temp_files": 1, "bytes": size}
    assert temps(path.parent) == []
    assert path.read_bytes() == before
    assert json.loads(cli("read", f"{REPO}::k1", "--json").stdout)["value"] == LESSON


def test_the_sweep_removes_only_stale_temp_files_of_its_own_naming(home: Path, cli: CLI) -> None:
    """A live writer's fresh temp file stays (and its write then completes); files that only look like temp
    files, and a link with a temp file's name, are never touched."""
    assert cli("write", f"{REPO}::k1", LESSON).returncode == 0
    folder = home / "repo" / "acme" / "checkout"
    stale = folder / ".tmp-4242-0123456789ab.md"
    stale.write_text("left by a killed writer")
    not_ours = [folder / ".tmp-notes.md", folder / ".tmp-12-xyz.md", folder / "tmp-1-0123456789ab.txt"]
    for path in not_ours:
        path.write_text("someone's own file")
    link = folder / ".tmp-4243-0123456789ab.md"
    link.symlink_to(folder / "k1.md")
    for path in [stale, *not_ours, link]:
        os.utime(path, (time.time() - 600,) * 2, follow_symlinks=False)

    writer = start_writer(folder / "k2.md", "a live writer's lesson ", 3)
    swept = cli("doctor", "--json")
    assert json.loads(swept.stdout)["swept"] == {"temp_files": 1, "bytes": len("left by a killed writer")}
    assert writer.stdout is not None and writer.stdout.readline() == "done\n"
    assert writer.wait() == 0

    assert not stale.exists()
    assert all(path.exists() for path in not_ours) and link.is_symlink()
    assert (folder / "k2.md").read_text().startswith("a live writer's lesson ")


def test_a_later_read_sweeps_a_stale_temp_file_of_a_folder_it_lists(home: Path, cli: CLI) -> None:
    """No rebuild needed: reading a scope lists its folder, and stale temp files there go."""
    assert cli("write", f"{REPO}::k1", LESSON).returncode == 0
    folder = home / "repo" / "acme" / "checkout"
    left = folder / ".tmp-4242-0123456789ab.md"
    left.write_text("left by a killed writer")
    age(left, 120)

    assert cli("list").returncode == 0
    assert temps(folder) == []


def test_the_profile_sweeps_its_stale_temp_files_when_it_writes_and_doctor_counts_them(home: Path, cli: CLI) -> None:
    profile = home / "profiles" / "default"
    profile.mkdir(parents=True)
    first, second = profile / ".tmp-4242-0123456789ab", profile / ".tmp-4243-0123456789ab"
    first.write_text("x" * 10)
    second.write_text("y" * 7)
    age(first, 120)
    age(second, 120)

    report = json.loads(cli("doctor", "--json").stdout)
    assert report["swept"] == {"temp_files": 2, "bytes": 17}
    assert temps(profile) == []

    first.write_text("x" * 10)
    age(first, 120)
    Profile.open(str(home)).promote("Prefer concise replies.", "USER.md", "reply verbosity", ["s1", "s2", "s3"])
    assert temps(profile) == []


@pytest.mark.parametrize(
    ("name", "ours"),
    [
        (".tmp-4242-0123456789ab", True),
        (".tmp-4242-0123456789ab.md", True),
        (".tmp-1-ffffffffffff.json", True),
        (".tmp-4242-0123456789a", False),
        (".tmp-4242-0123456789AB", False),
        (".tmp--0123456789ab", False),
        (".tmp-x42-0123456789ab", False),
        (".tmp-notes.md", False),
        ("tmp-4242-0123456789ab", False),
    ],
)
def test_temp_file_names_are_recognised_by_the_pattern_replace_makes(name: str, ours: bool) -> None:
    assert atomicfile.is_temp_name(name) is ours


def test_replace_makes_names_the_sweep_recognises(tmp_path: Path) -> None:
    seen = []
    atomicfile.replace(tmp_path / "f.md", b"x", before_rename=lambda: seen.extend(temps(tmp_path)), suffix=".md")
    assert len(seen) == 1 and atomicfile.is_temp_name(seen[0].name)
