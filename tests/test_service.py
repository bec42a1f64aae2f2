"""The service layer's rules, exercised in-process on a real vault and index."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from hivelore.atomicfile import DriftError
from hivelore.memory import service
from hivelore.memory.guard import GuardError
from hivelore.memory.local.index import Index, IndexBusy, open_or_recreate
from hivelore.memory.local.tier import LocalTier, rarest
from hivelore.memory.local.vault import slug
from hivelore.memory.service import Hivelore, NotFound
from hivelore.memory.transfer import ImportRecord

ADDRESS = ("repo::acme/checkout", "tests-need-local-postgres")
LESSON = "pnpm test fails with ECONNREFUSED 5432 when the db is down: run docker compose up -d db first"


@pytest.fixture
def hl(home: Path, repo: Path) -> Hivelore:
    return Hivelore.open(repo)


def files(home: Path) -> list[Path]:
    return sorted(p for p in home.rglob("*.md"))


def test_a_rewrite_updates_the_one_file_and_counts_it(hl: Hivelore, home: Path) -> None:
    first = hl.write(*ADDRESS, LESSON, tags=["db"])
    second = hl.write(*ADDRESS, LESSON + " (compose v2)")
    assert first.created and not second.created
    assert second.memory.seen_count == 2 and second.memory.created == first.memory.created
    assert second.memory.tags == ("db",)
    assert files(home) == [first.path]
    assert hl.read(*ADDRESS).value.endswith("(compose v2)")


def test_six_processes_writing_one_key_leave_one_file_with_six_counted_writes(home: Path, repo: Path) -> None:
    script = (
        "import sys; from hivelore.memory.service import Hivelore\n"
        "Hivelore.open().write('repo::acme/checkout', 'same-key', 'written by ' + sys.argv[1])\n"
    )
    env = {**os.environ, "HIVELORE_HOME": str(home)}
    procs = [subprocess.Popen([sys.executable, "-c", script, str(i)], cwd=repo, env=env) for i in range(6)]
    assert [p.wait(timeout=60) for p in procs] == [0] * 6
    [path] = files(home)
    assert "seen_count: 6\n" in path.read_text()
    assert Hivelore.open(repo).read("repo::acme/checkout", "same-key").seen_count == 6


def test_a_secret_is_refused_and_nothing_is_written(hl: Hivelore, home: Path) -> None:
    with pytest.raises(GuardError, match="secret"):
        hl.write("global", "ci-token", "the token is ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8")
    assert files(home) == []


def test_narrower_scopes_win_on_every_read_path(hl: Hivelore) -> None:
    for scope in ("global", "project::checkout", "repo::acme/checkout", "branch::acme/checkout::main"):
        hl.write(scope, "db-port", f"the db listens on 5432 ({scope})")
    assert hl.resolve("db-port").value.endswith("(branch::acme/checkout::main)")
    [hit] = hl.search("db listens 5432")
    assert str(hit.row.memory.scope) == "branch::acme/checkout::main"
    [entry] = hl.tree()
    assert str(entry.winner.scope) == "branch::acme/checkout::main" and len(entry.shadowed) == 3
    selection = hl.context()
    assert [str(r.row.memory.scope) for r in selection.shown] == ["branch::acme/checkout::main"]
    assert selection.total == 4 and selection.shadowed == 3
    assert selection.left_out == {"project::checkout": 1, "repo::acme/checkout": 1, "global": 1}


def test_context_budget_and_left_out_counts_are_exact(hl: Hivelore) -> None:
    for i in range(40):
        hl.write("repo::acme/checkout", f"lesson-{i}", f"lesson number {i}: " + "word " * 20 + f"topic{i}")
    for i in range(5):
        hl.write("global", f"g-{i}", f"global habit {i} about topic{i * 7} and nothing else")
    selection = hl.context(budget_chars=600)
    text = hl.render_context(selection)
    assert len("\n".join(text.splitlines()[1:-1])) <= 600
    shown = len(selection.shown)
    assert text.splitlines()[0].startswith(f"{shown} of 45 memories · branch::acme/checkout::main")
    assert sum(selection.left_out.values()) == 45 - shown
    assert text.splitlines()[-1].startswith("left out: ")


def test_near_duplicates_are_shown_once(hl: Hivelore) -> None:
    hl.write(
        "repo::acme/checkout",
        "pg-down",
        "tests fail with ECONNREFUSED 5432: start postgres with docker compose up -d db",
    )
    hl.write(
        "global", "pg-down-again", "tests fail with ECONNREFUSED 5432: start postgres with docker compose up -d db!"
    )
    selection = hl.context()
    assert len(selection.shown) == 1 and selection.duplicates == 1


def test_session_notes_are_near_duplicates_by_the_agents_words_not_their_attribution(hl: Hivelore) -> None:
    def note(session: str, said: str) -> None:
        value = (
            f'the agent (codex) said at the end of session {session} at 2026-12-03 13:02 UTC (its own words): "{said}"'
        )
        hl.write("repo::acme/checkout", f"session-codex-{session}", value, kind="note", tags=("session-note", "codex"))

    note("s-1", "OK")
    note("s-2", "done")
    note("s-3", "done")
    selection = hl.context()
    assert sorted(r.row.memory.key for r in selection.shown) in (
        ["session-codex-s-1", "session-codex-s-2"], ["session-codex-s-1", "session-codex-s-3"]
    )  # fmt: skip
    assert selection.duplicates == 1


def test_archived_and_expired_are_hidden_but_kept(hl: Hivelore, home: Path) -> None:
    hl.write(*ADDRESS, LESSON)
    hl.archive(*ADDRESS)
    with pytest.raises(NotFound):
        hl.read(*ADDRESS)
    assert hl.search("ECONNREFUSED") == [] and len(files(home)) == 1
    hl.restore(*ADDRESS)
    assert hl.read(*ADDRESS).archived_at is None


def test_a_file_edited_under_our_feet_is_not_overwritten(hl: Hivelore, monkeypatch: pytest.MonkeyPatch) -> None:
    path = hl.write(*ADDRESS, LESSON).path
    original_save = type(hl.home).save

    def edit_then_save(self, target, memory, expected):  # a person saves in an editor mid-write
        target.write_text(target.read_text().replace("docker compose", "podman compose"))
        return original_save(self, target, memory, expected)

    monkeypatch.setattr(type(hl.home), "save", edit_then_save)
    with pytest.raises(DriftError, match="changed on disk"):
        hl.write(*ADDRESS, "a new value")
    assert "podman compose" in path.read_text() and "a new value" not in path.read_text()
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".tmp-")]


def test_without_an_index_reads_fall_back_to_the_files(hl: Hivelore, home: Path, repo: Path) -> None:
    hl.write(*ADDRESS, LESSON)
    hl.close()
    (home / "index.db").unlink()
    fallback = Hivelore.open(repo)
    assert [h.row.memory.key for h in fallback.search("ECONNREFUSED")] == ["tests-need-local-postgres"]
    assert fallback.context().total == 1
    assert any("index rebuild" in w for w in fallback.warnings)
    stats = fallback.rebuild_index()
    assert (stats.files, stats.indexed) == (1, 1)
    assert isinstance(Hivelore.open(repo).local, LocalTier)


def test_a_corrupt_index_falls_back_then_rebuilds(hl: Hivelore, home: Path, repo: Path) -> None:
    hl.write(*ADDRESS, LESSON)
    hl.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{home / 'index.db'}{suffix}").unlink(missing_ok=True)
    (home / "index.db").write_bytes(b"this is not a database" * 100)
    broken = Hivelore.open(repo)
    assert broken.read(*ADDRESS).value == LESSON
    assert broken.index_problem and "cannot be read" in broken.index_problem
    broken.rebuild_index()
    assert Hivelore.open(repo).search("ECONNREFUSED")


def test_a_busy_index_is_not_taken_for_a_damaged_one_and_deleted(hl: Hivelore, home: Path) -> None:
    """Another process holding the index (here: in exclusive locking mode) makes a rebuild wait and
    then say so; the index and its rows are still there after."""
    hl.write(*ADDRESS, LESSON)
    hl.close()
    holder = sqlite3.connect(home / "index.db")
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(IndexBusy, match="is busy"):
            open_or_recreate(home / "index.db", timeout=0.2)
    finally:
        holder.rollback()
        holder.close()
    assert Index.open(home / "index.db", create=False).stats()["memories"] == 1


def test_hand_edits_and_deletions_are_seen(hl: Hivelore) -> None:
    path = hl.write(*ADDRESS, LESSON).path
    path.write_text(path.read_text().replace("docker compose up -d db", "make db"))
    assert "make db" in hl.read(*ADDRESS).value
    assert "make db" in Hivelore.open(hl.chain.git.root).search("ECONNREFUSED")[0].row.memory.value
    path.unlink()
    assert Hivelore.open(hl.chain.git.root).search("ECONNREFUSED") == []


def test_project_tier_takes_new_repo_writes_and_wins_within_a_scope(home: Path, repo: Path) -> None:
    Hivelore.open(repo).write("repo::acme/checkout", "ci-runner", "home copy")
    (repo / ".hivelore").mkdir()
    hl = Hivelore.open(repo)
    again = hl.write("repo::acme/checkout", "ci-runner", "home copy, seen again")
    assert again.tier == "home" and again.memory.seen_count == 2  # a re-write updates the copy that exists
    new = hl.write("repo::acme/checkout", "deploy-order", "migrate before deploy")
    assert new.tier == "project" and new.path.is_relative_to(repo / ".hivelore")
    assert hl.write("global", "style", "short replies").tier == "home"
    hl.write("repo::acme/checkout", "ci-runner", "team copy, committed to git", tier="project")
    assert hl.read("repo::acme/checkout", "ci-runner").value == "team copy, committed to git"
    [entry] = [e for e in hl.tree() if e.key == "ci-runner"]
    assert [m.value for m in entry.shadowed] == ["home copy, seen again"]
    assert [h.row.memory.value for h in hl.search("ci runner copy")] == ["team copy, committed to git"]


def test_big_folders_are_rescanned_only_when_someone_else_changed_them(
    hl: Hivelore, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hivelore.memory.local.index

    monkeypatch.setattr(hivelore.memory.local.index, "SMALL_FOLDER", 0)  # treat every folder as big
    first = hl.write("repo::acme/checkout", "first", "redis must run on 6379 for the cache tests")
    assert hl.search("redis 6379")
    by_hand = first.path.with_name("by-hand.md")
    by_hand.write_text("---\nscope: repo::acme/checkout\nkey: by-hand\n---\nthe queue tests need rabbitmq on 5672\n")
    hl.write("repo::acme/checkout", "second", "nats must run with jetstream for the event tests")
    fresh = Hivelore.open(hl.chain.git.root)
    assert [h.row.memory.key for h in fresh.search("rabbitmq 5672")] == ["by-hand"]
    assert fresh.context().total == 3


def test_a_write_never_lands_in_another_memorys_file(hl: Hivelore, home: Path) -> None:
    foo = hl.write("global", "Foo", "original value of Foo")
    assert foo.path.stem == slug("Foo")  # "foo-<crc32>": a key can be spelled exactly like that
    colliding = hl.write("global", slug("Foo"), "another memory whose key is Foo's file name")
    assert colliding.created and colliding.path != foo.path
    assert hl.read("global", "Foo").value == "original value of Foo"
    (home / "global" / "bar.md").write_text("---\nscope: global\nkey: deploy-steps\n---\nmigrate, then deploy\n")
    hl.write("global", "bar", "a memory called bar")
    assert hl.read("global", "deploy-steps").value == "migrate, then deploy"
    assert hl.read("global", "bar").value == "a memory called bar"


def archived_home_copy_behind_a_team_copy(repo: Path) -> tuple[Hivelore, Path]:
    """repo::acme/checkout::db twice: an archived copy in the home tier, a visible one in the project tier
    (whose path is returned)."""
    hl = Hivelore.open(repo)
    hl.write("repo::acme/checkout", "db", "old home copy", tier="home")
    hl.archive("repo::acme/checkout", "db")
    (repo / ".hivelore").mkdir()
    hl = Hivelore.open(repo)
    return hl, hl.write("repo::acme/checkout", "db", "team copy", tier="project").path


def test_purge_deletes_exactly_the_hidden_copies(home: Path, repo: Path) -> None:
    hl, team = archived_home_copy_behind_a_team_copy(repo)
    assert [m.value for m in hl.purge()] == ["old home copy"]
    assert team.exists() and hl.read("repo::acme/checkout", "db").value == "team copy"
    assert files(home) == []


def test_restore_finds_the_archived_copy_behind_a_visible_one_in_the_other_tier(home: Path, repo: Path) -> None:
    hl, _ = archived_home_copy_behind_a_team_copy(repo)

    restored = hl.restore("repo::acme/checkout", "db")

    assert (restored.value, restored.archived_at) == ("old home copy", None)
    assert [m.value for m in hl.purge()] == []
    with pytest.raises(ValueError, match="is not archived or expired: nothing to restore"):
        hl.restore("repo::acme/checkout", "db")


def test_a_shadowed_copy_never_shows_even_when_its_winner_ranks_low(hl: Hivelore) -> None:
    old = hl.write("repo::acme/checkout", "pg-port", "postgres listens on 5433 in this repo")
    path = old.path
    path.write_text(path.read_text().replace(old.memory.updated, "2025-01-01T00:00:00Z"))  # old, seen once
    for i in range(120):
        hl.write("repo::acme/checkout", f"recent-{i}", f"recent lesson number {i} about topic{i}")
    hl.write("global", "pg-port", "postgres listens on 5432 by default, zebra")

    fresh = Hivelore.open(hl.chain.git.root)
    shown = {r.row.memory.address for r in fresh.context(budget_chars=100_000).shown}
    assert "global::pg-port" not in shown and "repo::acme/checkout::pg-port" in shown
    assert fresh.search("zebra") == []  # the only match is shadowed by the repo copy
    assert fresh.search("zebra", scopes=["global"])[0].row.memory.address == "global::pg-port"


def test_a_memory_archived_by_hand_in_a_big_folder_disappears(hl: Hivelore, monkeypatch: pytest.MonkeyPatch) -> None:
    import hivelore.memory.local.index

    monkeypatch.setattr(hivelore.memory.local.index, "SMALL_FOLDER", 0)
    path = hl.write(*ADDRESS, LESSON).path
    assert hl.search("ECONNREFUSED")
    text = path.read_text().replace("archived_at: null", "archived_at: 2026-01-01T00:00:00Z")
    path.write_text(text.replace("docker compose", "podman compose"))  # in place: the folder mtime stays
    fresh = Hivelore.open(hl.chain.git.root)
    assert fresh.search("ECONNREFUSED") == []
    assert fresh.list() == {}
    assert fresh.context().shown == []


def test_forget_never_deletes_a_file_that_now_holds_another_key(
    hl: Hivelore, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hivelore.memory.local.index

    monkeypatch.setattr(hivelore.memory.local.index, "SMALL_FOLDER", 0)  # in-place edits leave the folder stamp alone
    path = hl.write("global", "k5", "five").path
    assert hl.search("five")
    path.write_text(path.read_text().replace("key: k5", "key: renamed-by-hand"))
    fresh = Hivelore.open(hl.chain.git.root)
    with pytest.raises(NotFound):
        fresh.forget("global", "k5")
    assert path.exists() and fresh.read("global", "renamed-by-hand").value == "five"


def test_every_command_picks_the_same_copy_of_a_key_written_twice_by_hand(hl: Hivelore, home: Path) -> None:
    folder = home / "global"
    folder.mkdir(parents=True)
    (folder / "a-old.md").write_text("---\nscope: global\nkey: k\nexpires_at: 2020-01-01T00:00:00Z\n---\nold copy\n")
    (folder / "b-current.md").write_text("---\nscope: global\nkey: k\n---\ncurrent copy\n")
    (folder / "c-hand.md").write_text("---\nscope: global\nkey: k\n---\nhand copy\n")
    assert hl.read("global", "k").value == "current copy"
    assert hl.resolve("k").value == "current copy"
    assert [r.row.memory.value for r in hl.context().shown] == ["current copy"]
    assert hl.archive("global", "k").value == "current copy"
    assert "archived_at: null" not in (folder / "b-current.md").read_text()
    assert hl.read("global", "k").value == "hand copy"


def test_copies_in_unrelated_scopes_do_not_shadow_each_other(hl: Hivelore) -> None:
    hl.write("repo::acme/checkout", "db-port", "checkout's postgres listens on 5433")
    hl.write("repo::acme/api", "db-port", "the api's postgres listens on 5434")
    hl.write("global", "db-port", "postgres listens on 5432 by default")
    hits = hl.search("postgres listens", scopes=["repo::acme/checkout", "repo::acme/api", "global"])
    assert sorted(h.row.memory.address for h in hits) == ["repo::acme/api::db-port", "repo::acme/checkout::db-port"]


def test_not_found_names_the_unreadable_file_the_memory_may_be_in(hl: Hivelore, home: Path) -> None:
    (home / "global").mkdir(parents=True)
    broken = home / "global" / "k.md"
    broken.write_text("---\nscope: global\nkey: k\ntags: [broken\n---\nx\n")
    with pytest.raises(NotFound, match=f"files skipped as unreadable: {broken}: its frontmatter is not valid YAML"):
        hl.read("global", "k")
    assert broken.read_text().startswith("---\nscope: global")  # never rewritten


def test_a_long_query_looks_for_its_rarest_words_when_no_memory_holds_them_all(hl: Hivelore) -> None:
    """A prompt's words that most memories hold ("tests", "fail") add next to nothing to a BM25 score but cost a
    ranking of every memory that holds them: when no memory holds every word, the any-word search looks for the
    four words the fewest memories hold. What those words find is still found, best first."""
    for n in range(30):
        hl.write("global", f"filler-{n}", f"the tests fail sometimes in module {n}; rerun the tests")
    hl.write("global", "db-down", "pnpm test fails with ECONNREFUSED 5432 until the postgres container is up")
    hl.write("global", "redis-down", "the worker tests fail with ECONNREFUSED 6379 until redis is up")
    tier = hl.local
    assert isinstance(tier, LocalTier)
    counts = tier.index.document_counts(["tests", "econnrefused", "postgres", "redis", "fail", "5432", "nowhere"])
    assert counts == {"tests": 31, "econnrefused": 2, "postgres": 1, "redis": 1, "fail": 32, "5432": 1, "nowhere": 0}
    assert rarest(counts, ["tests", "fail", "econnrefused", "postgres", "5432", "nowhere"]) == [
        "tests",
        "econnrefused",
        "postgres",
        "5432",
    ]  # fmt: skip (fail, in 32 memories with "fails", is the commonest; nowhere is in none)

    hits = hl.search("why do the tests fail with econnrefused on postgres 5432 nowhere")
    assert [h.row.memory.key for h in hits][:2] == ["db-down", "redis-down"]


def _records(count: int, scope: str = "repo::acme/checkout") -> list[ImportRecord]:
    return [
        ImportRecord(
            source=f"lessons.jsonl:{n + 1}",
            scope=scope,
            key=f"imported-lesson-{n}",
            value=f"package {n} needs the local postgres: run docker compose up -d db before pnpm test",
            tags=("db",),
        )
        for n in range(count)
    ]


def test_an_import_of_several_batches_writes_and_indexes_every_record_as_one_by_one_writes_would(
    hl: Hivelore, home: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "IMPORT_BATCH", 4)
    hl.write("repo::acme/checkout", "imported-lesson-2", "an older text of lesson 2")
    records = _records(10)
    # The same address twice in one import: the second record updates what the first wrote.
    records.insert(2, records[0]._replace(source="lessons.jsonl:99", value="lesson 0, said better: start the db"))

    report = hl.import_records(records)

    assert len(report.written) == 11 and report.unchanged == [] and report.rejected == []
    assert len(files(home)) == 10
    assert hl.read("repo::acme/checkout", "imported-lesson-0").value == "lesson 0, said better: start the db"
    rewritten = hl.read("repo::acme/checkout", "imported-lesson-2")
    assert rewritten.value.startswith("package 2 needs") and rewritten.seen_count == 1
    fresh = Hivelore.open(repo)
    assert fresh.index_status()["memories"] == 10 and fresh.index_status()["healthy"]
    assert {h.row.key for h in fresh.search("postgres", limit=20)} == {f"imported-lesson-{n}" for n in range(1, 10)}

    again = Hivelore.open(repo).import_records(records[1:])
    assert again.written == [] and len(again.unchanged) == 10


def test_an_import_checks_every_target_before_writing_any(
    hl: Hivelore, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "IMPORT_BATCH", 2)
    folder = home / "repo" / "acme" / "checkout"
    folder.mkdir(parents=True)
    (folder / "imported-lesson-5.md").write_text("---\nscope: [not closed\n---\nbroken\n")

    report = hl.import_records(_records(8))

    assert report.written == []
    assert len(report.rejected) == 1 and report.rejected[0].startswith("lessons.jsonl:6: ")
    assert "imported-lesson-5.md cannot be read" in report.rejected[0]
    assert [p.name for p in files(home)] == ["imported-lesson-5.md"]


def test_an_import_into_a_scope_folder_that_is_a_link_writes_nothing_through_it(
    hl: Hivelore, home: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (home / "repo" / "acme").mkdir(parents=True)
    (home / "repo" / "acme" / "checkout").symlink_to(elsewhere, target_is_directory=True)

    report = hl.import_records(_records(3))

    assert report.written == [] and len(report.rejected) == 3
    assert all("is a symbolic link" in reason for reason in report.rejected)
    assert list(elsewhere.iterdir()) == []
