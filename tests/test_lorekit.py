"""Reading a LoreKit store (tests/fixtures/lorekit/store mimics ~/.lorekit)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivelore.memory.lorekit import LoreKitRecord, LoreKitSkip, read_lorekit

STORE = Path(__file__).parent / "fixtures" / "lorekit" / "store"


def _items(root: Path) -> dict[str, LoreKitRecord | LoreKitSkip]:
    return {item.source.relative_to(root).as_posix(): item for item in read_lorekit(root)}


def _write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _lesson(**fields: str) -> str:
    base = {"scope": '"global"', "key": '"k"', "tags": "[]", "created": '"2026-01-01T00:00:00.000Z"'}
    base.update(fields)
    body = base.pop("body", "A lesson body.")
    lines = [f"{name}: {value}" for name, value in base.items()]
    return "---\n" + "\n".join(lines) + "\n---\n" + body + "\n"


def _only(root: Path) -> LoreKitRecord | LoreKitSkip:
    items = list(read_lorekit(root))
    assert len(items) == 1, items
    return items[0]


# --- the fixture store ---------------------------------------------------------------------------------


def test_fixture_store_yields_one_item_per_lesson_file_only():
    assert sorted(_items(STORE)) == [
        "_other/team-platform/shared-secrets-rotation.md",
        "branch/mthines/gw-tools/feat/add-memory/aw-lessons-stash-workaround.md",
        "global/always-run-the-test-suite-before-pushing.md",
        "global/prefer-rg-over-grep.md",
        "project/agent-skills/monorepo-build-order.md",
        "repo/mthines/gw-tools/aw-lessons-worktree-naming.md",
        "repo/mthines/gw-tools/hand-edited-tags.md",
        "repo/mthines/gw-tools/notes-from-standup.md",
    ]  # config.json, completions/, web/ and global/scratch.txt are not candidates


def test_full_fourteen_field_global_lesson():
    item = _items(STORE)["global/always-run-the-test-suite-before-pushing.md"]
    assert item == LoreKitRecord(
        source=STORE / "global/always-run-the-test-suite-before-pushing.md",
        scope="global",
        key="always-run-the-test-suite-before-pushing",
        value=(
            "Run the whole test suite before pushing, not only the tests of the files you touched.\n\n"
            "CI runs the integration tests that a local `pytest -k` skips."
        ),
        tags=["skill-aw", "type-procedural"],
        kind="lesson",
        state="committed",
        created="2026-07-24T10:00:00Z",
        updated="2026-09-01T08:30:15Z",
        seen_count=3,
        expires_at=None,
        archived_at=None,
        provenance={
            "agent": "claude-code",
            "branch": "main",
            "commit": "a1b2c3d4e5f6",
            "imported_from": "lorekit",
            "repo": "mthines/lorekit",
        },
    )


def test_legacy_eight_field_lesson_defaults_the_missing_fields():
    item = _items(STORE)["global/prefer-rg-over-grep.md"]
    assert isinstance(item, LoreKitRecord)
    assert (item.scope, item.key, item.tags) == ("global", "prefer-rg-over-grep", [])
    assert item.value.startswith("Use `rg` instead of `grep -r`")
    assert item.seen_count == 1
    assert item.expires_at is None
    assert item.provenance == {"imported_from": "lorekit"}


def test_project_lesson_with_epoch_timestamps():
    item = _items(STORE)["project/agent-skills/monorepo-build-order.md"]
    assert isinstance(item, LoreKitRecord)
    assert item.scope == "project::agent-skills"
    assert item.created == "2026-11-30T10:00:00Z"  # epoch seconds
    assert item.updated == "2026-11-30T11:00:00Z"  # epoch milliseconds
    assert item.expires_at == "2027-05-30T00:00:00Z"
    assert item.seen_count == 1  # LoreKit's 0 means "unknown"
    assert item.tags == ["build"]
    assert item.provenance == {"agent": "aw-executor", "imported_from": "lorekit"}


def test_archived_repo_lesson_keeps_archive_date_and_drops_trigger_and_pr():
    item = _items(STORE)["repo/mthines/gw-tools/aw-lessons-worktree-naming.md"]
    assert isinstance(item, LoreKitRecord)
    assert item.scope == "repo::mthines/gw-tools"
    assert item.key == "aw-lessons::worktree-naming"
    assert item.archived_at == "2026-06-10T09:00:00Z"
    assert item.seen_count == 2
    assert item.tags == ["skill-aw", "source-stuck-loop"]
    assert item.provenance == {
        "agent": "aw-executor",
        "branch": "feat/Origin-Provenance",
        "commit": "0f1e2d3c",
        "imported_from": "lorekit",
        "repo": "mthines/gw-tools",
    }


def test_branch_lesson_with_offset_and_date_only_timestamps():
    item = _items(STORE)["branch/mthines/gw-tools/feat/add-memory/aw-lessons-stash-workaround.md"]
    assert isinstance(item, LoreKitRecord)
    assert item.scope == "branch::mthines/gw-tools::feat/add-memory"
    assert item.created == "2026-10-01T08:15:30Z"
    assert item.updated == "2026-10-01T08:15:30Z"
    assert item.expires_at == "2026-12-31T00:00:00Z"
    assert item.seen_count == 1
    assert item.provenance["agent"] == "cursor"


def test_fixture_skips_name_the_problem():
    items = _items(STORE)
    unknown = items["_other/team-platform/shared-secrets-rotation.md"]
    assert isinstance(unknown, LoreKitSkip)
    assert "'team::platform'" in unknown.reason
    no_frontmatter = items["repo/mthines/gw-tools/notes-from-standup.md"]
    assert isinstance(no_frontmatter, LoreKitSkip)
    assert "frontmatter" in no_frontmatter.reason
    not_json = items["repo/mthines/gw-tools/hand-edited-tags.md"]
    assert isinstance(not_json, LoreKitSkip)
    assert "'tags'" in not_json.reason and "not valid JSON" in not_json.reason


def test_every_record_is_committed_lesson_imported_from_lorekit():
    records = [i for i in read_lorekit(STORE) if isinstance(i, LoreKitRecord)]
    assert len(records) == 5
    for record in records:
        assert record.kind == "lesson"
        assert record.state == "committed"
        assert record.provenance["imported_from"] == "lorekit"


def test_skip_reasons_are_one_sentence():
    for item in read_lorekit(STORE):
        if isinstance(item, LoreKitSkip):
            assert item.reason[0].isupper() and item.reason.endswith(".")
            assert "\n" not in item.reason


# --- the root ------------------------------------------------------------------------------------------


def test_missing_root_raises_at_call_time(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_lorekit(tmp_path / "nope")


def test_root_that_is_a_file_raises(tmp_path: Path):
    file = tmp_path / "store.md"
    file.write_text("x")
    with pytest.raises(FileNotFoundError, match="not a folder"):
        read_lorekit(file)


def test_folder_without_lorekit_layout_raises(tmp_path: Path):
    (tmp_path / "notes").mkdir()
    with pytest.raises(FileNotFoundError, match="none of the folders LoreKit keeps lessons in"):
        read_lorekit(tmp_path)


def test_empty_dot_lorekit_is_an_empty_store(tmp_path: Path):
    root = tmp_path / ".lorekit"
    root.mkdir()
    (root / "config.json").write_text("{}")
    assert list(read_lorekit(root)) == []


def test_tilde_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    _write(tmp_path / ".lorekit", "global/k.md", _lesson())
    [item] = read_lorekit(Path("~/.lorekit"))
    assert isinstance(item, LoreKitRecord)


# --- translation details -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('"global"', "global"),
        ('"Global"', "global"),
        ('" repo :: o/r "', "repo::o/r"),
        ('"project::my-app"', "project::my-app"),
        ('"branch::o/r::feature/deep/name"', "branch::o/r::feature/deep/name"),
    ],
)
def test_scope_forms(tmp_path: Path, raw: str, expected: str):
    _write(tmp_path, "global/k.md", _lesson(scope=raw))
    item = _only(tmp_path)
    assert isinstance(item, LoreKitRecord)
    assert item.scope == expected


@pytest.mark.parametrize(
    "raw",
    ['"repo::mthines"', '"branch::o/r"', '"repo::o/*"', '"org::acme"', '"repo:o/r"', '"project::My App"'],
)
def test_unknown_scope_forms_are_skipped_naming_the_scope(tmp_path: Path, raw: str):
    _write(tmp_path, "global/k.md", _lesson(scope=raw))
    item = _only(tmp_path)
    assert isinstance(item, LoreKitSkip)
    assert repr(raw.strip('"')) in item.reason


def test_missing_scope_or_key_is_skipped(tmp_path: Path):
    _write(tmp_path, "global/a.md", '---\nkey: "a"\n---\nbody\n')
    _write(tmp_path, "global/b.md", '---\nscope: "global"\nkey: null\n---\nbody\n')
    a, b = read_lorekit(tmp_path)
    assert isinstance(a, LoreKitSkip) and "'scope' is missing" in a.reason
    assert isinstance(b, LoreKitSkip) and "'key' is missing" in b.reason


def test_key_slashes_become_dashes(tmp_path: Path):
    _write(tmp_path, "global/k.md", _lesson(key='" auth/token-refresh "'))
    item = _only(tmp_path)
    assert isinstance(item, LoreKitRecord)
    assert item.key == "auth-token-refresh"


def test_key_with_dot_dot_is_skipped(tmp_path: Path):
    _write(tmp_path, "global/k.md", _lesson(key='"../escape"'))
    item = _only(tmp_path)
    assert isinstance(item, LoreKitSkip)
    assert "'..'" in item.reason


def test_tags_translation(tmp_path: Path):
    _write(tmp_path, "global/k.md", _lesson(tags='["skill::aw", "  perf ", "", "c++", "a b", "skill::aw"]'))
    item = _only(tmp_path)
    assert isinstance(item, LoreKitRecord)
    assert item.tags == ["skill-aw", "perf", "c++", "a-b"]


def test_single_string_tag_and_bad_tag_types(tmp_path: Path):
    _write(tmp_path, "global/a.md", _lesson(tags='"solo"'))
    _write(tmp_path, "global/b.md", _lesson(tags="[1, 2]"))
    a, b = read_lorekit(tmp_path)
    assert isinstance(a, LoreKitRecord) and a.tags == ["solo"]
    assert isinstance(b, LoreKitSkip) and "'tags' must be a JSON list of strings" in b.reason


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('"2026-11-30T10:00:00Z"', "2026-11-30T10:00:00Z"),
        ('"2026-11-30T10:00:00.999Z"', "2026-11-30T10:00:00Z"),
        ('"2026-11-30T10:00:00"', "2026-11-30T10:00:00Z"),
        ('"2026-11-30T05:00:00-05:00"', "2026-11-30T10:00:00Z"),
        ('"2026-11-30 10:00:00+00:00"', "2026-11-30T10:00:00Z"),
        ("1796032800", "2026-11-30T10:00:00Z"),
        ("1796032800.75", "2026-11-30T10:00:00Z"),
        ("1796032800000", "2026-11-30T10:00:00Z"),
        ('"1796032800"', "2026-11-30T10:00:00Z"),
        ("null", None),
        ('""', None),
        ("", None),
    ],
)
def test_timestamps_are_normalised(tmp_path: Path, raw: str, expected: str | None):
    _write(tmp_path, "global/k.md", _lesson(created=raw))
    item = _only(tmp_path)
    assert isinstance(item, LoreKitRecord)
    assert item.created == expected


@pytest.mark.parametrize("raw", ['"yesterday"', "true", "[1]", '"2026-13-45"'])
def test_bad_timestamps_are_skipped(tmp_path: Path, raw: str):
    _write(tmp_path, "global/k.md", _lesson(updated=raw))
    item = _only(tmp_path)
    assert isinstance(item, LoreKitSkip)
    assert "'updated'" in item.reason and "neither an ISO 8601 timestamp nor a unix epoch" in item.reason


@pytest.mark.parametrize(("raw", "expected"), [("7", 7), ("2.9", 2), ("-4", 1), ('"5"', 5), ("null", 1)])
def test_seen_count(tmp_path: Path, raw: str, expected: int):
    _write(tmp_path, "global/k.md", _lesson(seen_count=raw))
    item = _only(tmp_path)
    assert isinstance(item, LoreKitRecord)
    assert item.seen_count == expected


def test_bad_seen_count_is_skipped(tmp_path: Path):
    _write(tmp_path, "global/k.md", _lesson(seen_count='"often"'))
    item = _only(tmp_path)
    assert isinstance(item, LoreKitSkip)
    assert "'seen_count'" in item.reason


def test_provenance_values(tmp_path: Path):
    text = _lesson(source_agent='"  "', origin_repo='"o/r"', origin_commit="1234567", origin_pr="9", trigger='"manual"')
    _write(tmp_path, "global/k.md", text)
    item = _only(tmp_path)
    assert isinstance(item, LoreKitRecord)
    assert item.provenance == {"commit": "1234567", "imported_from": "lorekit", "repo": "o/r"}


def test_non_standard_kind_field_is_honoured_only_when_known(tmp_path: Path):
    _write(tmp_path, "global/a.md", _lesson(kind='"decision"'))
    _write(tmp_path, "global/b.md", _lesson(kind='"observation"'))
    a, b = read_lorekit(tmp_path)
    assert isinstance(a, LoreKitRecord) and a.kind == "decision"
    assert isinstance(b, LoreKitRecord) and b.kind == "lesson"


def test_unknown_fields_are_ignored(tmp_path: Path):
    _write(tmp_path, "global/k.md", _lesson(host='"laptop"'))
    assert isinstance(_only(tmp_path), LoreKitRecord)


# --- malformed files -----------------------------------------------------------------------------------


def test_unclosed_frontmatter(tmp_path: Path):
    _write(tmp_path, "global/k.md", '---\nscope: "global"\nkey: "k"\nbody without a closing line\n')
    item = _only(tmp_path)
    assert isinstance(item, LoreKitSkip)
    assert "never closed" in item.reason


def test_line_that_is_not_a_field(tmp_path: Path):
    _write(tmp_path, "global/k.md", '---\nscope: "global"\njust words\nkey: "k"\n---\nbody\n')
    item = _only(tmp_path)
    assert isinstance(item, LoreKitSkip)
    assert "line 3" in item.reason


def test_duplicate_field(tmp_path: Path):
    _write(tmp_path, "global/k.md", '---\nscope: "global"\nkey: "a"\nkey: "b"\n---\nbody\n')
    item = _only(tmp_path)
    assert isinstance(item, LoreKitSkip)
    assert "'key' appears twice" in item.reason


@pytest.mark.parametrize("raw", ["NaN", '{"a": 1}', "'single'", '"unterminated'])
def test_non_json_or_object_values_are_skipped(tmp_path: Path, raw: str):
    _write(tmp_path, "global/k.md", _lesson(origin_repo=raw))
    item = _only(tmp_path)
    assert isinstance(item, LoreKitSkip)
    assert "'origin_repo'" in item.reason


def test_empty_body_is_skipped(tmp_path: Path):
    _write(tmp_path, "global/k.md", _lesson(body="\n   \n"))
    item = _only(tmp_path)
    assert isinstance(item, LoreKitSkip)
    assert "body" in item.reason


def test_non_utf8_file_is_skipped(tmp_path: Path):
    path = tmp_path / "global" / "k.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(b'---\nscope: "global"\nkey: "k"\n---\ncaf\xe9\n')
    item = _only(tmp_path)
    assert isinstance(item, LoreKitSkip)
    assert "UTF-8" in item.reason


def test_crlf_and_bom_are_accepted(tmp_path: Path):
    text = "\ufeff" + _lesson(body="line one\nline two").replace("\n", "\r\n")
    path = tmp_path / "global" / "k.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(text.encode("utf-8"))
    item = _only(tmp_path)
    assert isinstance(item, LoreKitRecord)
    assert item.value == "line one\nline two"


def test_body_keeps_markdown_rules_after_the_frontmatter(tmp_path: Path):
    _write(tmp_path, "global/k.md", _lesson(body="first\n\n---\n\nafter a rule"))
    item = _only(tmp_path)
    assert isinstance(item, LoreKitRecord)
    assert item.value == "first\n\n---\n\nafter a rule"


def test_hidden_and_non_markdown_files_are_not_candidates(tmp_path: Path):
    _write(tmp_path, "global/k.md", _lesson())
    _write(tmp_path, "global/.k.md.swp", "junk")
    _write(tmp_path, "global/.cache/x.md", "junk")
    _write(tmp_path, "global/readme.txt", "junk")
    assert isinstance(_only(tmp_path), LoreKitRecord)


def test_order_is_by_path(tmp_path: Path):
    for name in ("b", "a", "c"):
        _write(tmp_path, f"repo/o/r/{name}.md", _lesson(scope='"repo::o/r"', key=f'"{name}"'))
    _write(tmp_path, "global/z.md", _lesson(key='"z"'))
    keys = [item.key for item in read_lorekit(tmp_path) if isinstance(item, LoreKitRecord)]
    assert keys == ["z", "a", "b", "c"]  # scope folders in LoreKit's order, then path order


def test_records_satisfy_hivelore_rules():
    memory = pytest.importorskip("hivelore.memory.model")
    scope = pytest.importorskip("hivelore.memory.scope")
    for record in read_lorekit(STORE):
        if isinstance(record, LoreKitSkip):
            continue
        assert scope.try_parse(record.scope) is not None
        assert memory.validate_key(record.key) == record.key
        assert memory.validate_kind(record.kind) == record.kind
        assert record.state in memory.STATES
        assert tuple(record.tags) == memory.validate_tags(record.tags)
        assert set(record.provenance) <= set(memory.PROVENANCE_FIELDS)
