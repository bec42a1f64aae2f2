"""`hivelore import --from SOURCE`: the real formats of five tools (tests/fixtures/imports/, see its
README), laid out where each tool keeps them in a user's home and a repository, imported through the
real CLI: the dry run's mapping, the guard refusing a secret, provenance, and idempotent re-runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "imports"
REPO = "repo::acme/checkout"
TOOL_ENV = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "BASIC_MEMORY_HOME", "CLAUDE_MEM_DATA_DIR")


@pytest.fixture
def user_home(tmp_path: Path, repo: Path) -> Path:
    """A user's home holding every tool's memory where that tool keeps it, and the repository's own
    files (CLAUDE.md, AGENTS.md, .kiro/steering) in `repo`."""
    home = tmp_path / "user"
    claude = FIXTURES / "claude-code"
    shutil.copytree(claude / "repo", repo, dirs_exist_ok=True)
    shutil.copytree(claude / "user", home / ".claude")
    folder = re.sub(r"[^A-Za-z0-9]", "-", str(repo.resolve()))
    shutil.copytree(claude / "memory", home / ".claude" / "projects" / folder / "memory")
    codex = FIXTURES / "codex"
    shutil.copy(codex / "repo" / "AGENTS.md", repo / "AGENTS.md")
    shutil.copytree(codex / "codex-home", home / ".codex")
    handbook = home / ".codex" / "memories" / "MEMORY.md"  # the checkout block ran in this repository
    handbook.write_text(handbook.read_text().replace("/home/ana/src/checkout", str(repo)))
    shutil.copytree(FIXTURES / "basic-memory" / "basic-memory", home / "basic-memory")
    (home / ".claude-mem").mkdir()
    _claude_mem_db(home / ".claude-mem" / "claude-mem.db")
    shutil.copytree(FIXTURES / "kiro" / "repo" / ".kiro", repo / ".kiro")
    shutil.copytree(FIXTURES / "kiro" / "home" / ".kiro", home / ".kiro")
    return home


def _claude_mem_db(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.executescript((FIXTURES / "claude-mem" / "schema.sql").read_text())
        db.executescript((FIXTURES / "claude-mem" / "observations.sql").read_text())
    db.close()


def run(home: Path, user_home: Path, repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in TOOL_ENV}
    env.update(HIVELORE_HOME=str(home), HOME=str(user_home))
    return subprocess.run(
        [sys.executable, "-m", "hivelore", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=60
    )


# What each source's default locations hold: address -> kind, and the files refused with their reason.
EXPECTED: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "claude-code": (
        {
            f"{REPO}::claude-md-build-and-test-commands": "fact",
            f"{REPO}::claude-md-architecture": "fact",
            f"{REPO}::claude-md-code-style": "fact",
            f"{REPO}::claude-md-gotchas": "lesson",
            f"{REPO}::claude-local-md-personal-notes-for-this-repo": "fact",
            "global::user-claude-md-communication": "fact",
            "global::user-claude-md-tools": "fact",
            f"{REPO}::debugging": "note",
            f"{REPO}::feedback-testing": "lesson",
            f"{REPO}::project-merge-freeze": "fact",
            f"{REPO}::reference-linear": "note",
            "global::user-role": "fact",
        },
        {"reference_staging_db.md": "connection string with a password"},
    ),
    "codex": (
        {
            f"{REPO}::agents-md-setup-commands": "fact",
            f"{REPO}::agents-md-code-style": "fact",
            f"{REPO}::agents-md-testing-instructions": "fact",
            f"{REPO}::agents-md-pr-instructions": "fact",
            "global::user-agents-md-working-agreements": "fact",
            f"{REPO}::codex-checkout-payments-tests-preferences": "fact",
            f"{REPO}::codex-checkout-payments-tests-knowledge": "fact",
            f"{REPO}::codex-checkout-payments-tests-failures": "lesson",
            "project::docs-site::codex-docs-site-builds-knowledge": "fact",
            "global::codex-general-shell-habits-preferences": "fact",
        },
        {},
    ),
    "basic-memory": (
        {
            "global::paul-graham": "note",
            "global::architecture-api-design-decisions": "decision",
            "global::architecture-authentication-design": "note",
            "global::coffee-brewing-methods": "note",
            "global::meeting-notes": "note",
        },
        {"broken-frontmatter.md": "not valid YAML"},
    ),
    "claude-mem": (
        {
            f"{REPO}::claude-mem-1-payments-integration-tests-need-stripe-mock": "lesson",
            f"{REPO}::claude-mem-2-keep-stripe-calls-inside-checkout-payments": "decision",
            "project::docs-site::claude-mem-4-astro-build-needs-node-20": "fact",
            "project::docs-site::claude-mem-5-pinned-node-20-in-nvmrc": "note",
        },
        {"claude-mem.db observation 3": "Stripe"},
    ),
    "kiro": (
        {
            f"{REPO}::kiro-api-standards": "fact",
            f"{REPO}::kiro-error-handling": "fact",
            f"{REPO}::kiro-product": "fact",
            f"{REPO}::kiro-release-checklist": "note",
            f"{REPO}::kiro-structure": "fact",
            f"{REPO}::kiro-tech": "fact",
            "global::kiro-personal-style": "fact",
        },
        {"draft.md": "inclusion 'sometimes' is not one of Kiro's"},
    ),
}


def _exported(home: Path, user_home: Path, repo: Path) -> dict[str, dict]:
    result = run(home, user_home, repo, "export", "--include-hidden")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return {f"{m['scope']}::{m['key']}": m for m in lines}


def _refused(rejected: list[str], expected: dict[str, str]) -> None:
    assert len(rejected) == len(expected), rejected
    for where, reason in expected.items():
        assert any(where in line and reason in line for line in rejected), (where, rejected)


@pytest.mark.parametrize("source", sorted(EXPECTED))
def test_dry_run_lists_what_goes_where_and_writes_nothing(source: str, home: Path, user_home: Path, repo: Path) -> None:
    addresses, refused = EXPECTED[source]
    result = run(home, user_home, repo, "import", "--from", source, "--dry-run", "--skip-invalid")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"would write {len(addresses)}, unchanged 0, rejected {len(refused)}"
    assert lines[1] == f"this repository's files go to {REPO}; the user's own to global"
    listed = {line.split()[0]: line.split()[1] for line in lines[2:]}
    assert listed == addresses  # every memory with its scope (in the address) and kind
    _refused([line for line in result.stderr.splitlines() if line.startswith("  rejected")], refused)
    assert not home.exists() or not list(home.rglob("*.md"))


@pytest.mark.parametrize("source", sorted(EXPECTED))
def test_import_keeps_provenance_and_a_second_run_changes_nothing(
    source: str, home: Path, user_home: Path, repo: Path
) -> None:
    addresses, refused = EXPECTED[source]
    first = run(home, user_home, repo, "import", "--from", source, "--skip-invalid", "--json")
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert sorted(report["written"]) == sorted(addresses)
    _refused(report["rejected"], refused)

    imported = _exported(home, user_home, repo)
    assert {a: m["kind"] for a, m in imported.items()} == addresses
    for memory in imported.values():
        origin = memory["provenance"]["imported_from"]
        assert origin.startswith(f"{source}:"), origin
        assert "/user/" not in origin  # paths in the home are written ~/..., without the user's folder
        assert source in memory["tags"]

    again = json.loads(run(home, user_home, repo, "import", "--from", source, "--skip-invalid", "--json").stdout)
    assert (again["written"], sorted(again["unchanged"])) == ([], sorted(addresses))


@pytest.mark.parametrize("source", ["claude-code", "claude-mem"])
def test_a_secret_in_an_old_note_stops_the_import_unless_skipped(
    source: str, home: Path, user_home: Path, repo: Path
) -> None:
    result = run(home, user_home, repo, "import", "--from", source)
    assert result.returncode == 2
    assert "nothing was imported" in result.stderr
    assert "secret" in result.stderr or "password" in result.stderr
    assert not home.exists() or not list(home.rglob("*.md"))


def test_claude_code_values_and_provenance(home: Path, user_home: Path, repo: Path) -> None:
    run(home, user_home, repo, "import", "--from", "claude-code", "--skip-invalid")
    imported = _exported(home, user_home, repo)
    gotchas = imported[f"{REPO}::claude-md-gotchas"]
    assert gotchas["value"].startswith("Gotchas\n\n- The integration tests share one database")
    assert "dropdb checkout" in gotchas["value"]  # a '#' line in a code block is not a heading
    assert gotchas["provenance"]["imported_from"] == f"claude-code:{repo.resolve()}/CLAUDE.md#Gotchas"
    assert gotchas["provenance"]["repo"] == "acme/checkout"
    feedback = imported[f"{REPO}::feedback-testing"]
    assert feedback["value"].startswith("Integration tests must hit a real PostgreSQL, never a mock\n\n")
    assert feedback["tags"] == ["claude-code", "feedback"]
    assert imported["global::user-role"]["provenance"]["imported_from"].startswith("claude-code:~/.claude/projects/")
    assert not any("provides guidance" in m["value"] for m in imported.values())  # /init's opening line


def test_codex_sections_and_scopes(home: Path, user_home: Path, repo: Path) -> None:
    run(home, user_home, repo, "import", "--from", "codex")
    imported = _exported(home, user_home, repo)
    failures = imported[f"{REPO}::codex-checkout-payments-tests-failures"]["value"]
    assert failures.startswith("checkout payments tests: Failures and how to do differently\n\n- symptom:")
    assert not any("rollout_summary_files" in m["value"] for m in imported.values())  # tasks are routing
    assert not any("Thread `019a4f1c" in m["value"] for m in imported.values())  # raw memories not read


def test_claude_mem_value_tags_session_and_time(home: Path, user_home: Path, repo: Path) -> None:
    run(home, user_home, repo, "import", "--from", "claude-mem", "--skip-invalid")
    memory = _exported(home, user_home, repo)[f"{REPO}::claude-mem-1-payments-integration-tests-need-stripe-mock"]
    assert memory["value"].splitlines()[:2] == [
        "Payments integration tests need stripe-mock running",
        "ECONNREFUSED 127.0.0.1:12111 came from the missing stripe-mock container",
    ]
    assert "- docker compose up -d stripe-mock starts it" in memory["value"]
    assert memory["tags"] == ["problem-solution", "gotcha", "claude-mem", "bugfix"]
    assert memory["created"] == "2026-02-11T15:41:27Z"
    assert memory["provenance"]["session"] == "b3e1d7a2-6c4f-4e8b-a1d9-0f2c5e7b9a31"
    assert memory["provenance"]["imported_from"] == "claude-mem:~/.claude-mem/claude-mem.db#observation-1"


def test_kiro_file_match_pattern_and_basic_memory_tags(home: Path, user_home: Path, repo: Path) -> None:
    run(home, user_home, repo, "import", "--from", "kiro", "--skip-invalid")
    run(home, user_home, repo, "import", "--from", "basic-memory", "--skip-invalid")
    imported = _exported(home, user_home, repo)
    api = imported[f"{REPO}::kiro-api-standards"]
    assert api["value"].startswith("Applies to files matching: checkout/api/**/*.py\n\n# API Standards")
    assert api["tags"] == ["kiro", "kiro-filematch"]
    assert imported["global::architecture-api-design-decisions"]["tags"] == [
        "api", "architecture", "decisions", "basic-memory",
    ]  # fmt: skip
    assert imported["global::meeting-notes"]["value"].startswith("# Weekly sync 2026-02-12")


def test_an_explicit_path_is_read_instead_of_the_defaults(home: Path, user_home: Path, repo: Path) -> None:
    steering = FIXTURES / "kiro" / "home" / ".kiro" / "steering" / "personal-style.md"
    report = json.loads(run(home, user_home, repo, "import", "--from", "kiro", str(steering), "--json").stdout)
    assert report["written"] == [f"{REPO}::kiro-personal-style"]  # not the user's own folder: the repository's
    assert report["records"][0]["imported_from"] == f"kiro:{steering.resolve()}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--from", "notion"), "'notion' is not a source hivelore imports from"),
        (("--from", "kiro", "/no/such/folder"), "/no/such/folder does not exist"),
        (("--from", "kiro", "--from-lorekit", "x"), "either --from SOURCE or --from-lorekit DIR"),
    ],
)
def test_bad_input_is_one_sentence_and_writes_nothing(
    args: tuple[str, ...], message: str, home: Path, user_home: Path, repo: Path
) -> None:
    result = run(home, user_home, repo, "import", *args)
    assert result.returncode == 2
    assert result.stderr.startswith("hivelore: ") and message in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_nothing_at_the_default_places_says_where_it_looked(home: Path, tmp_path: Path, repo: Path) -> None:
    empty = tmp_path / "empty-home"
    empty.mkdir()
    result = run(home, empty, repo, "import", "--from", "claude-mem")
    assert result.returncode == 1
    assert f"found no claude-mem memory in {empty}/.claude-mem/claude-mem.db" in result.stderr


def test_lorekit_is_a_source_too(home: Path, user_home: Path, repo: Path) -> None:
    store = Path(__file__).parent / "fixtures" / "lorekit" / "store"
    via_from = json.loads(
        run(
            home, user_home, repo, "import", "--from", "lorekit", str(store), "--skip-invalid", "--dry-run", "--json"
        ).stdout
    )
    via_option = json.loads(
        run(
            home, user_home, repo, "import", "--from-lorekit", str(store), "--skip-invalid", "--dry-run", "--json"
        ).stdout
    )
    assert via_from["written"] == via_option["written"] and len(via_from["written"]) == 5


def test_one_heading_in_two_files_keeps_both(home: Path, user_home: Path, repo: Path) -> None:
    (repo / ".claude").mkdir()
    (repo / ".claude" / "CLAUDE.md").write_text("## Code style\n\n- Tabs in Makefiles only\n")
    report = json.loads(run(home, user_home, repo, "import", "--from", "claude-code", str(repo), "--json").stdout)
    assert {f"{REPO}::claude-md-code-style", f"{REPO}::claude-md-code-style-2"} <= set(report["written"])


def test_claude_mem_rows_of_an_old_release_have_only_text(home: Path, user_home: Path, repo: Path) -> None:
    database = repo.parent / "old.db"
    with sqlite3.connect(database) as db:  # the observations table before titles, facts and narratives
        db.execute(
            "CREATE TABLE observations (id INTEGER PRIMARY KEY, sdk_session_id TEXT, project TEXT, "
            "text TEXT, type TEXT, created_at TEXT, created_at_epoch INTEGER)"
        )
        db.execute(
            "INSERT INTO observations VALUES (7, 's1', 'checkout', 'Cart totals round half-even', 'discovery', "
            "'2025-09-01T10:00:00Z', 1756720800)"
        )
    db.close()
    report = json.loads(run(home, user_home, repo, "import", "--from", "claude-mem", str(database), "--json").stdout)
    assert report["written"] == [f"{REPO}::claude-mem-7"]
    memory = _exported(home, user_home, repo)[f"{REPO}::claude-mem-7"]
    assert (memory["value"], memory["kind"], memory["created"]) == (
        "Cart totals round half-even", "fact", "2025-09-01T10:00:00Z",
    )  # fmt: skip


def test_codex_handbook_without_task_groups_gives_notes(home: Path, user_home: Path, repo: Path) -> None:
    folder = repo.parent / "old-memories"
    folder.mkdir()
    (folder / "MEMORY.md").write_text("# Codex memory\n\n## Build\n\n- `make` before `make test`\n")
    report = json.loads(run(home, user_home, repo, "import", "--from", "codex", str(folder), "--json").stdout)
    assert [(r["address"], r["kind"]) for r in report["records"]] == [(f"{REPO}::codex-memory-build", "note")]


def test_claude_code_topic_type_under_metadata_and_the_config_dir(home: Path, repo: Path, tmp_path: Path) -> None:
    config = tmp_path / "claude-config"  # CLAUDE_CONFIG_DIR moves ~/.claude, the auto memory with it
    memory = config / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(repo.resolve())) / "memory"
    memory.mkdir(parents=True)
    (memory / "feedback_pnpm.md").write_text(
        "---\nname: pnpm\ndescription: Use pnpm\nmetadata:\n  type: feedback\n---\n\nUse pnpm, never npm.\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in TOOL_ENV}
    env.update(HIVELORE_HOME=str(home), HOME=str(tmp_path / "nobody"), CLAUDE_CONFIG_DIR=str(config))
    result = subprocess.run(
        [sys.executable, "-m", "hivelore", "import", "--from", "claude-code", "--json"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    records = json.loads(result.stdout)["records"]
    assert [(r["address"], r["kind"]) for r in records] == [(f"{REPO}::feedback-pnpm", "lesson")]
