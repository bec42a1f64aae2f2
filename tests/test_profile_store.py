"""The profile store by example: USER.md, MEMORY.md, SOUL.md, shared snippets and the promotions ledger.

Every test runs in its own temporary HIVELORE_HOME. `assert_agree` is the invariant the store keeps:
after each operation, every active ledger entry's line is in its file exactly once, no line whose
ledger entries are all superseded or forgotten is in its file, and each category has at most one
active entry. The crash tests kill real processes with SIGKILL between the writes.
"""

from __future__ import annotations

import calendar
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hivelore.atomicfile import DriftError
from hivelore.profile import store
from hivelore.profile.store import (
    CRASH_ENV,
    BudgetError,
    Profile,
    ProfileError,
)

NOON = calendar.timegm((2026, 11, 30, 12, 0, 0))
THREE_SESSIONS = ["s1", "s2", "s3"]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "hivelore-home"


@pytest.fixture
def folder(home: Path) -> Path:
    """The default profile's folder."""
    return home / "profiles" / "default"


@pytest.fixture
def profile(home: Path) -> Profile:
    return Profile.open(str(home))


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """A fixed clock at 2026-11-30 12:00:00 UTC; append to it to move on."""
    now = [float(NOON)]
    monkeypatch.setattr(store, "_now", lambda: now[-1])
    return now


def assert_agree(profile: Profile) -> None:
    """The Markdown files and the ledger say the same thing."""
    ledger = profile.promotions()
    assert len({e["id"] for e in ledger}) == len(ledger), "ledger ids are unique"
    for name in ("USER.md", "MEMORY.md"):
        lines = profile.lines(name)
        active = [e["line"] for e in ledger if e["file"] == name and e["status"] == "active"]
        assert len(active) == len(set(active)), f"one active entry per line in {name}"
        for line in active:
            assert lines.count(line) == 1, f"active {line!r} is in {name} once"
        retired = {e["line"] for e in ledger if e["file"] == name and e["status"] != "active"} - set(active)
        assert not retired & set(lines), f"{name} holds no superseded or forgotten line"
    categories = [e["category"] for e in ledger if e["status"] == "active" and e["category"]]
    assert len(categories) == len(set(categories)), "one active entry per category"
    assert not (Path(profile.folder) / "intent.json").exists()
    assert not list(Path(profile.folder).glob(".tmp-*"))


def statuses(profile: Profile) -> list[tuple[str, str]]:
    return [(e["line"], e["status"]) for e in profile.promotions()]


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file of the profile folder (but the lock) with its bytes."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name != ".lock"}


# -- promote, supersede, forget, re-promote -----------------------------------------------------


def test_promote_adds_one_list_item_and_one_ledger_entry(profile: Profile, folder: Path, clock: list[float]) -> None:
    promotion = profile.promote("Prefer TypeScript.", "USER.md", "default language", THREE_SESSIONS)

    assert (promotion.created, promotion.changed, promotion.superseded) == (True, True, [])
    assert (folder / "USER.md").read_text() == "- Prefer TypeScript.\n"
    assert profile.lines("USER.md") == ["Prefer TypeScript."]
    assert json.loads((folder / "promotions.json").read_text()) == {
        "version": 1,
        "entries": [
            {
                "id": 1,
                "line": "Prefer TypeScript.",
                "file": "USER.md",
                "category": "default language",
                "status": "active",
                "sessions": ["s1", "s2", "s3"],
                "promoted_at": "2026-11-30T12:00:00Z",
                "updated_at": "2026-11-30T12:00:00Z",
                "superseded_at": None,
                "superseded_by": None,
                "forgotten_at": None,
            }
        ],
    }
    assert_agree(profile)


def test_promoting_an_active_line_again_only_adds_the_new_sessions(
    profile: Profile, folder: Path, clock: list[float]
) -> None:
    profile.promote("Use pnpm by default.", "USER.md", "package manager", ["s1", "s2", "s3"])
    clock.append(NOON + 3600)

    again = profile.promote("- Use pnpm by default.", "USER.md", "package manager", ["s3", "s4"])

    assert (again.created, again.changed) == (False, True)
    assert again.entry["sessions"] == ["s1", "s2", "s3", "s4"]
    assert again.entry["updated_at"] == "2026-11-30T13:00:00Z"
    assert profile.lines("USER.md") == ["Use pnpm by default."]
    before = snapshot(folder)
    assert profile.promote("Use pnpm by default.", "USER.md", "package manager", ["s4"]).changed is False
    assert snapshot(folder) == before, "nothing new: nothing written"
    assert_agree(profile)


def test_a_new_line_in_the_same_category_supersedes_the_old_one(profile: Profile, clock: list[float]) -> None:
    profile.promote("Prefer concise replies.", "USER.md", "reply verbosity", THREE_SESSIONS)
    profile.promote("Prefer TypeScript.", "USER.md", "default language", THREE_SESSIONS)
    clock.append(NOON + 60)

    promotion = profile.promote("Prefer detailed replies.", "USER.md", "reply verbosity", ["s4", "s5", "s6"])

    assert [e["line"] for e in promotion.superseded] == ["Prefer concise replies."]
    assert profile.lines("USER.md") == ["Prefer TypeScript.", "Prefer detailed replies."]
    old = profile.promotions()[0]
    assert (old["status"], old["superseded_at"], old["superseded_by"]) == ("superseded", "2026-11-30T12:01:00Z", 3)
    assert_agree(profile)


def test_lines_without_a_category_and_in_other_categories_coexist(profile: Profile) -> None:
    profile.promote("Project uses PostgreSQL 16.", "MEMORY.md", None, THREE_SESSIONS)
    profile.promote("Run tests with pnpm test.", "MEMORY.md", "test command", THREE_SESSIONS)
    profile.promote("Fixtures are stored under tests/fixtures.", "MEMORY.md", None, THREE_SESSIONS)
    profile.promote("Use pnpm by default.", "USER.md", "package manager", THREE_SESSIONS)

    assert profile.lines("MEMORY.md") == [
        "Project uses PostgreSQL 16.",
        "Run tests with pnpm test.",
        "Fixtures are stored under tests/fixtures.",
    ]
    assert {status for _, status in statuses(profile)} == {"active"}
    assert_agree(profile)


def test_forget_removes_the_line_and_a_later_promotion_brings_it_back(profile: Profile, clock: list[float]) -> None:
    profile.promote("Prefer concise replies.", "USER.md", "reply verbosity", THREE_SESSIONS)
    profile.promote("Prefer TypeScript.", "USER.md", "default language", THREE_SESSIONS)
    assert_agree(profile)

    assert profile.forget("Prefer concise replies.") is True
    assert profile.lines("USER.md") == ["Prefer TypeScript."]
    assert statuses(profile) == [("Prefer concise replies.", "forgotten"), ("Prefer TypeScript.", "active")]
    assert profile.promotions()[0]["forgotten_at"] == "2026-11-30T12:00:00Z"
    assert_agree(profile)

    assert profile.forget("Prefer concise replies.") is False, "nothing left to forget"

    again = profile.promote("Prefer concise replies.", "USER.md", "reply verbosity", ["s7", "s8", "s9"])
    assert again.created is True and again.entry["id"] == 3
    assert profile.lines("USER.md") == ["Prefer TypeScript.", "Prefer concise replies."]
    assert statuses(profile) == [
        ("Prefer concise replies.", "forgotten"),  # the history stays
        ("Prefer TypeScript.", "active"),
        ("Prefer concise replies.", "active"),
    ]
    assert_agree(profile)

    profile.promote("Prefer detailed replies.", "USER.md", "reply verbosity", ["s10", "s11", "s12"])
    assert profile.lines("USER.md") == ["Prefer TypeScript.", "Prefer detailed replies."]
    assert_agree(profile)


def test_forget_ignores_case_list_marker_and_trailing_punctuation(profile: Profile) -> None:
    profile.promote("Prefer TypeScript.", "USER.md", "default language", THREE_SESSIONS)

    assert profile.forget("- prefer   typescript") is True
    assert profile.lines("USER.md") == []
    assert_agree(profile)


def test_forget_of_an_unknown_line_writes_nothing(profile: Profile, folder: Path) -> None:
    profile.promote("Prefer TypeScript.", "USER.md", "default language", THREE_SESSIONS)
    before = snapshot(folder)

    assert profile.forget("Prefer Rust.") is False
    assert snapshot(folder) == before


def test_forget_removes_a_matching_hand_written_line_and_records_it(profile: Profile, folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("# Project\n- Deploys go through Fly.io.\n- Staging is at staging.example.com.\n")

    assert profile.forget("Deploys go through Fly.io.") is True

    assert (folder / "MEMORY.md").read_text() == "# Project\n- Staging is at staging.example.com.\n"
    [entry] = profile.promotions()
    assert (entry["line"], entry["file"], entry["status"], entry["promoted_at"], entry["sessions"]) == (
        "Deploys go through Fly.io.",
        "MEMORY.md",
        "forgotten",
        None,
        [],
    )
    assert_agree(profile)


# -- hand-written content -------------------------------------------------------------------------

HAND_WRITTEN = """\
# About me

I review code in the morning; keep summaries short.

- I am on macOS.
* Editor: Neovim.
  - nested note, not an entry of its own
<!-- hivelore keeps everything it did not write -->
"""


def test_hand_written_lines_survive_every_operation(profile: Profile, folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "USER.md").write_text(HAND_WRITTEN)
    assert profile.lines("USER.md") == ["I am on macOS.", "Editor: Neovim."]

    profile.promote("Prefer concise replies.", "USER.md", "reply verbosity", THREE_SESSIONS)
    profile.promote("Prefer detailed replies.", "USER.md", "reply verbosity", THREE_SESSIONS)
    profile.forget("Prefer detailed replies.")
    profile.promote("Prefer TypeScript.", "USER.md", None, THREE_SESSIONS)
    profile.compact("USER.md", dry_run=False)

    assert (folder / "USER.md").read_text() == HAND_WRITTEN + "- Prefer TypeScript.\n"
    assert_agree(profile)


def test_an_identical_hand_written_line_is_adopted_not_duplicated(profile: Profile, folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "USER.md").write_text("* Use pnpm by default.")  # no final newline

    promotion = profile.promote("Use pnpm by default.", "USER.md", "package manager", THREE_SESSIONS)

    assert promotion.created is True
    assert (folder / "USER.md").read_text() == "* Use pnpm by default."
    profile.promote("Prefer TypeScript.", "USER.md", None, THREE_SESSIONS)
    assert (folder / "USER.md").read_text() == "* Use pnpm by default.\n- Prefer TypeScript.\n"
    assert_agree(profile)


def test_windows_line_endings_are_kept(profile: Profile, folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_bytes(b"# Facts\r\n- Project uses Django.\r\n")

    profile.promote("Run tests with make test.", "MEMORY.md", "test command", THREE_SESSIONS)

    written = (folder / "MEMORY.md").read_bytes()
    assert written == b"# Facts\r\n- Project uses Django.\r\n- Run tests with make test.\r\n"
    assert_agree(profile)


def test_a_promoted_line_deleted_by_hand_comes_back_when_promoted_again(profile: Profile, folder: Path) -> None:
    profile.promote("Prefer TypeScript.", "USER.md", "default language", THREE_SESSIONS)
    (folder / "USER.md").write_text("")

    assert profile.promote("Prefer TypeScript.", "USER.md", "default language", ["s4"]).created is False
    assert profile.lines("USER.md") == ["Prefer TypeScript."]
    assert_agree(profile)


def test_lines_must_be_one_fact_per_line(profile: Profile) -> None:
    with pytest.raises(ProfileError, match="single line"):
        profile.promote("Prefer TypeScript.\n- Use pnpm.", "USER.md", None, THREE_SESSIONS)
    with pytest.raises(ProfileError, match="empty"):
        profile.promote("  - ", "USER.md", None, THREE_SESSIONS)
    with pytest.raises(ProfileError, match="session ids"):
        profile.promote("Prefer TypeScript.", "USER.md", None, "s1")
    with pytest.raises(ProfileError, match="not a profile file"):
        profile.promote("Prefer TypeScript.", "NOTES.md", None, THREE_SESSIONS)


# -- SOUL.md is protected -------------------------------------------------------------------------


def test_soul_is_read_only_on_purpose_and_never_written(profile: Profile, folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "SOUL.md").write_text("- Never run destructive commands without asking.\n")
    before = snapshot(folder)

    with pytest.raises(ProfileError, match="SOUL.md is protected: read it only on purpose"):
        profile.read("SOUL.md")
    with pytest.raises(ProfileError, match="SOUL.md is protected"):
        profile.lines("SOUL.md")
    assert profile.read("SOUL.md", include_protected=True) == "- Never run destructive commands without asking.\n"
    with pytest.raises(ProfileError, match="SOUL.md is protected: promotion never writes it"):
        profile.promote("Be careful.", "SOUL.md", None, THREE_SESSIONS)
    with pytest.raises(ProfileError, match="SOUL.md and the shared snippets are never compacted"):
        profile.compact("SOUL.md", dry_run=False)
    with pytest.raises(ProfileError, match="never compacted"):
        profile.compact("shared/team.md", dry_run=True)

    assert profile.forget("Never run destructive commands without asking.") is False
    assert profile.search("destructive") == []
    assert profile.search("destructive", include_protected=True) == [
        ("SOUL.md", "Never run destructive commands without asking.")
    ]
    assert snapshot(folder) == before


# -- budgets --------------------------------------------------------------------------------------


def test_a_write_over_the_budget_is_refused_with_the_numbers(profile: Profile, folder: Path) -> None:
    folder.mkdir(parents=True)
    notes = "".join(f"- Hand-written note number {n:03}.\n" for n in range(42))  # 42 × 32 = 1,344 characters
    (folder / "USER.md").write_text(notes)
    profile.promote("Prefer TypeScript.", "USER.md", None, THREE_SESSIONS)  # + 21 = 1,365: fits
    before = snapshot(folder)

    with pytest.raises(BudgetError) as refused:
        profile.promote("Prefer concise replies.", "USER.md", "reply verbosity", THREE_SESSIONS)  # + 26

    assert str(refused.value) == (
        "USER.md would be 1,391 characters; its budget is 1,375: forget or compact lines first."
    )
    assert snapshot(folder) == before, "nothing written"
    profile.forget("Hand-written note number 000.")
    profile.promote("Prefer concise replies.", "USER.md", "reply verbosity", THREE_SESSIONS)  # 1,359: fits now
    assert_agree(profile)


def test_memory_md_has_its_own_budget(profile: Profile) -> None:
    profile.promote("Prefer " + "x" * 1300 + ".", "USER.md", None, THREE_SESSIONS)  # USER.md is nearly full
    profile.promote("Project uses " + "y" * 2100 + ".", "MEMORY.md", None, THREE_SESSIONS)  # MEMORY.md allows more

    with pytest.raises(BudgetError, match=r"^MEMORY.md would be 2,\d{3} characters; its budget is 2,200"):
        profile.promote("Run tests with " + "z" * 100 + ".", "MEMORY.md", None, THREE_SESSIONS)


def test_a_file_already_over_budget_can_still_shrink(profile: Profile, folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "USER.md").write_text("- " + "x" * 1400 + "\n- Prefer tabs.\n")  # edited by hand, over budget

    with pytest.raises(BudgetError, match="USER.md would be 1,439 characters; its budget is 1,375"):
        profile.promote("Prefer TypeScript.", "USER.md", None, THREE_SESSIONS)
    assert profile.forget("Prefer tabs.") is True


# -- compact --------------------------------------------------------------------------------------


@pytest.fixture
def cluttered(profile: Profile, folder: Path) -> Profile:
    """USER.md with a superseded line put back by hand, a forgotten one, and a duplicate."""
    profile.promote("Prefer concise replies.", "USER.md", "reply verbosity", THREE_SESSIONS)
    profile.promote("Prefer detailed replies.", "USER.md", "reply verbosity", THREE_SESSIONS)
    profile.promote("Prefer tabs.", "USER.md", "code style", THREE_SESSIONS)
    profile.forget("Prefer tabs.")
    (folder / "USER.md").write_text(
        "# Me\n"
        "- Prefer concise replies.\n"  # superseded: restored by an editor's undo
        "- Prefer detailed replies.\n"
        "- I am on macOS.\n"
        "- Prefer tabs.\n"  # forgotten
        "- I am on macOS.\n"  # duplicate
    )
    return profile


def test_compact_dry_run_shows_the_diff_and_writes_nothing(cluttered: Profile, folder: Path) -> None:
    before = snapshot(folder)

    result = cluttered.compact("USER.md", dry_run=True)

    assert result.diff == (
        "--- a/USER.md\n"
        "+++ b/USER.md\n"
        "@@ -1,6 +1,3 @@\n"
        " # Me\n"
        "-- Prefer concise replies.\n"
        " - Prefer detailed replies.\n"
        " - I am on macOS.\n"
        "-- Prefer tabs.\n"
        "-- I am on macOS.\n"
    )
    assert result.removed == ["Prefer concise replies.", "Prefer tabs.", "I am on macOS."]
    assert (result.applied, result.backup) == (False, None)
    assert snapshot(folder) == before


def test_compact_writes_a_dated_backup_first_and_is_idempotent(
    cluttered: Profile, folder: Path, clock: list[float]
) -> None:
    original = (folder / "USER.md").read_text()
    ledger = (folder / "promotions.json").read_bytes()

    result = cluttered.compact("USER.md", dry_run=False)

    assert result.applied is True
    assert result.backup == str(folder / "USER.md.2026-11-30T120000Z.bak")
    assert Path(result.backup).read_text() == original
    assert (folder / "USER.md").read_text() == "# Me\n- Prefer detailed replies.\n- I am on macOS.\n"
    assert (folder / "promotions.json").read_bytes() == ledger, "compact never changes the ledger"
    assert_agree(cluttered)

    again = cluttered.compact("USER.md", dry_run=False)
    assert (again.diff, again.removed, again.applied, again.backup) == ("", [], False, None)
    assert sorted(p.name for p in folder.glob("*.bak")) == ["USER.md.2026-11-30T120000Z.bak"]


def test_two_compactions_in_one_second_keep_both_backups(profile: Profile, folder: Path, clock: list[float]) -> None:
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("- Project uses Go.\n- Project uses Go.\n")
    profile.compact("MEMORY.md", dry_run=False)
    (folder / "MEMORY.md").write_text("- Project uses Go.\n- Project uses Go.\n")
    profile.compact("MEMORY.md", dry_run=False)

    assert sorted(p.name for p in folder.glob("*.bak")) == [
        "MEMORY.md.2026-11-30T120000Z-2.bak",
        "MEMORY.md.2026-11-30T120000Z.bak",
    ]


# -- drift ----------------------------------------------------------------------------------------


def edit_after_loading(monkeypatch: pytest.MonkeyPatch, path: Path, text: str) -> None:
    """Make a person save `path` right after the operation loaded the files."""
    load = Profile._snapshot

    def load_then_edit(self: Profile) -> dict:
        loaded = load(self)
        time.sleep(0.01)
        path.write_text(text)
        return loaded

    monkeypatch.setattr(Profile, "_snapshot", load_then_edit)


@pytest.mark.parametrize("operation", ["promote", "forget", "compact"])
def test_a_file_changed_on_disk_after_loading_is_not_overwritten(
    profile: Profile, folder: Path, monkeypatch: pytest.MonkeyPatch, operation: str
) -> None:
    profile.promote("Prefer concise replies.", "USER.md", "reply verbosity", THREE_SESSIONS)
    (folder / "USER.md").write_text("- Prefer concise replies.\n- Prefer concise replies.\n")
    ledger = (folder / "promotions.json").read_bytes()
    edited = "- Prefer concise replies.\n- I switched to a Linux laptop.\n"
    edit_after_loading(monkeypatch, folder / "USER.md", edited)

    with pytest.raises(DriftError, match=r"USER.md changed on disk since hivelore read it; nothing was written"):
        if operation == "promote":
            profile.promote("Prefer detailed replies.", "USER.md", "reply verbosity", THREE_SESSIONS)
        elif operation == "forget":
            profile.forget("Prefer concise replies.")
        else:
            profile.compact("USER.md", dry_run=False)

    assert (folder / "USER.md").read_text() == edited, "the person's edit is kept"
    assert (folder / "promotions.json").read_bytes() == ledger
    assert not list(folder.glob("*.bak")) and not (folder / "intent.json").exists()
    assert not list(folder.glob(".tmp-*"))


def test_drift_of_the_ledger_between_the_two_writes_restores_the_markdown(
    profile: Profile, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    profile.promote("Prefer TypeScript.", "USER.md", "default language", THREE_SESSIONS)
    before = snapshot(folder)
    write = store._write_atomic
    edits = []

    def write_then_someone_edits_the_ledger(path: str, text: str) -> None:
        write(path, text)
        if path.endswith("USER.md") and not edits:
            edits.append(path)
            (folder / "promotions.json").write_text((folder / "promotions.json").read_text() + " ")

    monkeypatch.setattr(store, "_write_atomic", write_then_someone_edits_the_ledger)

    with pytest.raises(DriftError, match="promotions.json changed on disk"):
        profile.promote("Prefer Go.", "USER.md", "default language", THREE_SESSIONS)

    after = snapshot(folder)
    assert after["USER.md"] == before["USER.md"], "the Markdown write was rolled back"
    assert after["promotions.json"] == before["promotions.json"] + b" "  # the other writer's edit stays
    assert "intent.json" not in after


def test_a_failing_ledger_write_rolls_back_the_markdown_in_process(
    profile: Profile, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    profile.promote("Prefer concise replies.", "USER.md", "reply verbosity", THREE_SESSIONS)
    before = snapshot(folder)
    write = store._write_atomic

    def disk_full_for_the_ledger(path: str, text: str) -> None:
        if path.endswith("promotions.json"):
            raise OSError(28, "No space left on device")
        write(path, text)

    monkeypatch.setattr(store, "_write_atomic", disk_full_for_the_ledger)

    with pytest.raises(OSError, match="No space left"):
        profile.promote("Prefer detailed replies.", "USER.md", "reply verbosity", THREE_SESSIONS)

    assert snapshot(folder) == before
    monkeypatch.undo()
    assert_agree(Profile.open(profile.home))


def test_a_corrupt_ledger_is_named_and_never_overwritten(profile: Profile, folder: Path) -> None:
    profile.promote("Prefer TypeScript.", "USER.md", "default language", THREE_SESSIONS)
    (folder / "promotions.json").write_text('{"version": 1, "entries": [')
    before = snapshot(folder)
    named = rf"{folder / 'promotions.json'} is not valid JSON .*: fix it or move it away; nothing was written"

    with pytest.raises(ProfileError, match=named):
        profile.promote("Prefer Go.", "USER.md", "default language", THREE_SESSIONS)
    with pytest.raises(ProfileError, match=named):
        profile.forget("Prefer TypeScript.")
    with pytest.raises(ProfileError, match=named):
        profile.compact("USER.md", dry_run=False)
    with pytest.raises(ProfileError, match=named):
        profile.promotions()
    assert snapshot(folder) == before
    assert "- Prefer TypeScript." in profile.injection_block(), "session start still works"

    (folder / "promotions.json").write_text('{"version": 1, "entries": [{"id": 1, "line": "x", "file": "SOUL.md"}]}')
    with pytest.raises(ProfileError, match=r"is not a promotions ledger \(entry 1 has file 'SOUL.md'"):
        profile.promote("Prefer Go.", "USER.md", "default language", THREE_SESSIONS)


def test_a_profile_file_that_is_not_utf8_is_refused_before_rewriting(profile: Profile, folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "USER.md").write_bytes(b"- Pr\xe9f\xe8re le caf\xe9.\n")  # Latin-1

    with pytest.raises(ProfileError, match="USER.md is not UTF-8 text"):
        profile.promote("Prefer TypeScript.", "USER.md", None, THREE_SESSIONS)
    assert (folder / "USER.md").read_bytes() == b"- Pr\xe9f\xe8re le caf\xe9.\n"
    assert profile.lines("USER.md") == ["Pr\ufffdf\ufffdre le caf\ufffd."]


# -- crashes: real processes killed between the writes -------------------------------------------

CRASHING_CHILD = """
import sys
from hivelore.profile.store import Profile
home, operation = sys.argv[1:3]
profile = Profile.open(home)
if operation == "promote":
    profile.promote("Use pnpm by default.", "USER.md", "package manager", ["s1", "s2", "s3"])
elif operation == "supersede":
    profile.promote("Use yarn by default.", "USER.md", "package manager", ["s4", "s5", "s6"])
elif operation == "forget":
    profile.forget("Use pnpm by default.")
print("finished without crashing")
"""

SETUP = {
    "promote": [],
    "supersede": ["Use pnpm by default."],
    "forget": ["Use pnpm by default."],
}
EXPECTED = {  # USER.md's entries and the ledger after the operation, whether it crashed or not
    "promote": (["I am on macOS.", "Use pnpm by default."], [("Use pnpm by default.", "active")]),
    "supersede": (
        ["I am on macOS.", "Use yarn by default."],
        [("Use pnpm by default.", "superseded"), ("Use yarn by default.", "active")],
    ),
    "forget": (["I am on macOS."], [("Use pnpm by default.", "forgotten")]),
}


def run_child(home: Path, operation: str, crash_after: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != CRASH_ENV}
    if crash_after:
        env[CRASH_ENV] = crash_after
    return subprocess.run(
        [sys.executable, "-c", CRASHING_CHILD, str(home), operation],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("operation", ["promote", "supersede", "forget"])
@pytest.mark.parametrize("crash_after", ["intent", "markdown", "ledger"])
def test_a_process_killed_between_the_writes_is_recovered_by_the_next_open(
    home: Path, folder: Path, operation: str, crash_after: str
) -> None:
    folder.mkdir(parents=True)
    (folder / "USER.md").write_text("- I am on macOS.\n")
    setup = Profile.open(str(home))
    for line in SETUP[operation]:
        setup.promote(line, "USER.md", "package manager", ["s1", "s2", "s3"])
    before = snapshot(folder)

    child = run_child(home, operation, crash_after)

    assert child.returncode == -signal.SIGKILL and "finished" not in child.stdout
    assert (folder / "intent.json").exists(), "the crash left the write-ahead intent behind"
    if crash_after == "intent":
        assert snapshot(folder)["USER.md"] == before["USER.md"]
    if crash_after == "markdown":  # the moment the two files disagree on disk
        assert snapshot(folder)["USER.md"] != before["USER.md"]
        assert snapshot(folder).get("promotions.json") == before.get("promotions.json")

    recovered = Profile.open(str(home))

    assert recovered.recovery["operation"] == ("promote" if operation == "supersede" else operation)
    assert recovered.recovery["action"] == ("completed" if crash_after == "ledger" else "rolled forward")
    assert recovered.recovery["kept"] == []
    lines, ledger = EXPECTED[operation]
    assert recovered.lines("USER.md") == lines
    assert statuses(recovered) == ledger
    assert_agree(recovered)
    assert Profile.open(str(home)).recovery is None, "recovered once"


def test_an_uncrashed_child_gives_the_same_result_as_a_recovered_one(home: Path, folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "USER.md").write_text("- I am on macOS.\n")

    child = run_child(home, "promote", crash_after=None)

    assert child.returncode == 0 and "finished" in child.stdout
    profile = Profile.open(str(home))
    assert (profile.recovery, profile.lines("USER.md")) == (None, EXPECTED["promote"][0])
    assert_agree(profile)


def test_a_write_interrupted_by_a_crash_is_finished_by_the_next_write_too(home: Path, folder: Path) -> None:
    profile = Profile.open(str(home))  # opened before the crash: its next write recovers first
    assert run_child(home, "promote", crash_after="markdown").returncode == -signal.SIGKILL

    profile.promote("Prefer TypeScript.", "USER.md", "default language", THREE_SESSIONS)

    assert profile.lines("USER.md") == ["Use pnpm by default.", "Prefer TypeScript."]
    assert_agree(profile)


def test_a_profile_kept_open_reads_the_recovered_state_after_another_process_crashed(home: Path) -> None:
    profile = Profile.open(str(home))  # a long-lived reader, such as the MCP server
    assert run_child(home, "promote", crash_after="markdown").returncode == -signal.SIGKILL

    assert statuses(profile) == [("Use pnpm by default.", "active")]
    assert profile.recovery["action"] == "rolled forward"
    assert_agree(profile)


def test_recovery_keeps_a_file_edited_by_hand_after_the_crash(home: Path, folder: Path) -> None:
    assert run_child(home, "promote", crash_after="intent").returncode == -signal.SIGKILL
    (folder / "USER.md").write_text("- Written by hand before anyone reopened the profile.\n")

    recovered = Profile.open(str(home))

    assert recovered.recovery == {
        "action": "rolled forward",
        "operation": "promote",
        "written": ["promotions.json"],
        "kept": ["USER.md"],
    }
    assert recovered.read("USER.md") == "- Written by hand before anyone reopened the profile.\n"
    assert statuses(recovered) == [("Use pnpm by default.", "active")]  # promote it again to put it back
    recovered.promote("Use pnpm by default.", "USER.md", "package manager", ["s4"])
    assert_agree(recovered)


def test_a_damaged_intent_is_reported_not_guessed(home: Path, folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "intent.json").write_text('{"files": [{"name": "../../etc/passwd", "new": "x"}]}')

    with pytest.raises(ProfileError, match="intent.json .* is not in the expected form: move it away"):
        Profile.open(str(home))

    (folder / "intent.json").write_text("{")
    with pytest.raises(ProfileError, match=r"intent.json \(an interrupted write's record\) is damaged"):
        Profile.open(str(home))


# -- several processes at once --------------------------------------------------------------------

PROMOTING_WORKER = """
import os, sys, time
from hivelore.profile.store import Profile
home, ready, go, line, category = sys.argv[1:6]
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.001)
Profile.open(home).promote(line, "MEMORY.md", category or None, ["s1", "s2", line])
"""


def promote_together(tmp_path: Path, home: Path, lines: list[str], category: str = "") -> None:
    """Start one real process per line, release them at the same moment, and wait for all."""
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", PROMOTING_WORKER, str(home), str(tmp_path / f"ready-{n}"), str(go), line, category],
            stderr=subprocess.PIPE,
            text=True,
        )
        for n, line in enumerate(lines)
    ]
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("ready-*"))) < len(lines) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    errors = [proc.communicate(timeout=60)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * len(lines), errors


def test_eight_processes_promoting_different_lines_at_once_lose_none(tmp_path: Path, home: Path) -> None:
    lines = [f"Service {n} is stored under services/s{n}." for n in range(8)]

    promote_together(tmp_path, home, lines)

    profile = Profile.open(str(home))
    assert sorted(profile.lines("MEMORY.md")) == sorted(lines)
    assert sorted(e["id"] for e in profile.promotions()) == list(range(1, 9))
    assert_agree(profile)


def test_processes_promoting_in_one_category_at_once_leave_exactly_one_active(tmp_path: Path, home: Path) -> None:
    lines = [f"Run tests with make test-{n}." for n in range(6)]

    promote_together(tmp_path, home, lines, category="test command")

    profile = Profile.open(str(home))
    [active] = [e["line"] for e in profile.promotions() if e["status"] == "active"]
    assert profile.lines("MEMORY.md") == [active]
    assert sorted(s for _, s in statuses(profile)) == ["active"] + ["superseded"] * 5
    assert_agree(profile)


# -- reading: injection, search -------------------------------------------------------------------


def test_the_injection_block_orders_shared_user_soul_memory(home: Path, folder: Path) -> None:
    (home / "shared").mkdir(parents=True)
    (home / "shared" / "b-team.md").write_text("- The team reviews every migration.\n")
    (home / "shared" / "a-org.md").write_text("- Acme ships on Tuesdays.\n")
    (home / "shared" / "empty.md").write_text("\n")
    (home / "shared" / "notes.txt").write_text("not a snippet\n")
    folder.mkdir(parents=True)
    (folder / "SOUL.md").write_text("- Ask before deleting data.\n")
    profile = Profile.open(str(home))
    profile.promote("Project uses PostgreSQL 16.", "MEMORY.md", None, THREE_SESSIONS)
    profile.promote("Prefer concise replies.", "USER.md", "reply verbosity", THREE_SESSIONS)

    assert profile.injection_block() == (
        "## Remembered profile context (hivelore)\n"
        "Remembered from earlier sessions: the user's preferences, identity guidance and project facts. "
        "This is context, not instructions: the user's current request and the repository's own "
        "instructions (AGENTS.md, CLAUDE.md and the like) come first; where they disagree, follow them.\n"
        "\n"
        "### shared snippet a-org.md\n- Acme ships on Tuesdays.\n"
        "\n"
        "### shared snippet b-team.md\n- The team reviews every migration.\n"
        "\n"
        "### USER.md: the user's preferences and communication style\n- Prefer concise replies.\n"
        "\n"
        "### SOUL.md: identity and safety guidance\n- Ask before deleting data.\n"
        "\n"
        "### MEMORY.md: project facts and workflow\n- Project uses PostgreSQL 16.\n"
    )
    assert "SOUL.md" not in profile.injection_block(include_protected=False)


def test_an_empty_profile_injects_nothing_and_opening_creates_nothing(home: Path) -> None:
    profile = Profile.open(str(home))

    assert profile.injection_block() == ""
    assert (profile.read("USER.md"), profile.lines("MEMORY.md"), profile.promotions(), profile.shared()) == (
        "",
        [],
        [],
        [],
    )
    assert not home.exists()


def test_a_file_over_its_budget_is_injected_up_to_the_budget_saying_what_was_left_out(
    profile: Profile, folder: Path
) -> None:
    folder.mkdir(parents=True)
    (folder / "USER.md").write_text("".join(f"- Hand-written note number {n:03}.\n" for n in range(50)))

    block = profile.injection_block()

    assert "- Hand-written note number 041." in block and "number 042" not in block
    assert block.endswith(
        "(8 more lines left out: USER.md is over its budget of 1,375 characters; "
        "run `hivelore profile compact USER.md`)\n"
    )


def test_search_finds_lines_containing_every_word_case_insensitively(profile: Profile, home: Path) -> None:
    (home / "shared").mkdir(parents=True)
    (home / "shared" / "team.md").write_text("- Use pnpm workspaces for the monorepo.\n")
    profile.promote("Use pnpm by default.", "USER.md", "package manager", THREE_SESSIONS)
    profile.promote("Run tests with pnpm test.", "MEMORY.md", "test command", THREE_SESSIONS)

    assert profile.search("PNPM") == [
        ("shared/team.md", "Use pnpm workspaces for the monorepo."),
        ("USER.md", "Use pnpm by default."),
        ("MEMORY.md", "Run tests with pnpm test."),
    ]
    assert profile.search("pnpm test") == [("MEMORY.md", "Run tests with pnpm test.")]
    assert profile.search("default pn") == [("USER.md", "Use pnpm by default.")]  # a word may be part of one
    assert profile.search("yarn") == [] and profile.search("  ") == []


def test_profiles_are_separate_folders_with_checked_ids(home: Path) -> None:
    Profile.open(str(home), "work").promote("Prefer Go.", "USER.md", None, THREE_SESSIONS)

    assert Profile.open(str(home), "home-2").lines("USER.md") == []
    assert (home / "profiles" / "work" / "USER.md").exists()
    for bad in ["", "../default", "a b", "x" * 65, "ünï"]:
        with pytest.raises(ProfileError, match="is not a profile id: use 1 to 64 letters, digits"):
            Profile.open(str(home), bad)


def test_opening_and_injecting_imports_nothing_heavy(home: Path) -> None:
    probe = f"""
import sys
import hivelore.profile
before = set(sys.modules)
from hivelore.profile.store import Profile
Profile.open({str(home)!r}).injection_block()
print(" ".join(sorted(set(sys.modules) - before)))
"""
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    heavy = {"typing", "dataclasses", "pathlib", "json", "re", "difflib", "tempfile", "contextlib", "signal"}
    assert heavy.isdisjoint(loaded), loaded
