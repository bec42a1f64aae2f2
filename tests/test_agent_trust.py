"""What the agents decided about a folder, read from their files: Gemini's trusted folders, Codex's
project trust and hook review. The Codex hashes below were printed by the real Codex 0.171.0
(`codex app-server`, method `hooks/list`, field `currentHash`) for these very commands."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
import tomlkit
from hypothesis import given
from hypothesis import strategies as st

from hivelore.agents.trust import codex_hook_review, codex_project_trust, gemini_folder_trust

HOOK = "/work/wt-setup/.venv/bin/hivelore-hook --agent codex --event {}"
# (event, timeout in hooks.json, the hash Codex 0.171.0 reported): SessionEnd's 10 s is clamped to 3 s
# before hashing, so a file saying 10 and one saying 3 have one identity.
CODEX_SAW = [
    ("SessionStart", 10, "sha256:0deda58e92277e5922b89ad292237f53ae8984b74b32ec88ee0bc3763060828a"),
    ("PreToolUse", 10, "sha256:b824dfc3aed7de3fbc4641f07fd4233289e0537915a096371c0515265e51c74c"),
    ("SessionEnd", 10, "sha256:2c68288f4c09be761524629bcd3bec80a2255d9f44dae62b46eba2a994ec1c82"),
]
SNAKE = {"SessionStart": "session_start", "PreToolUse": "pre_tool_use", "SessionEnd": "session_end"}


def codex_files(tmp_path: Path, states: dict[str, dict], timeouts: dict[str, int] | None = None) -> tuple[Path, Path]:
    """A project hooks.json with our three hooks, and a Codex home whose config.toml holds `states`
    (event -> hook state)."""
    hooks_file = tmp_path / "repo/.codex/hooks.json"
    hooks_file.parent.mkdir(parents=True)
    timeouts = {event: t for event, t, _ in CODEX_SAW} | (timeouts or {})
    hooks = {
        event: [{"hooks": [{"type": "command", "command": HOOK.format(event), "timeout": timeouts[event]}]}]
        for event, _, _ in CODEX_SAW
    }
    hooks_file.write_text(json.dumps({"hooks": hooks}, indent=2))
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    state = {f"{hooks_file}:{SNAKE[event]}:0:0": value for event, value in states.items()}
    (codex_home / "config.toml").write_text(tomlkit.dumps({"model": "o3", "hooks": {"state": state}}))
    return hooks_file, codex_home


def reviewed() -> dict[str, dict]:
    return {event: {"trusted_hash": digest} for event, _, digest in CODEX_SAW}


def test_hooks_reviewed_in_codex_are_seen_as_reviewed(tmp_path: Path) -> None:
    hooks_file, codex_home = codex_files(tmp_path, reviewed())
    assert codex_hook_review(hooks_file, codex_home).ok is True


def test_a_session_end_written_with_codexs_own_limit_keeps_its_review(tmp_path: Path) -> None:
    hooks_file, codex_home = codex_files(tmp_path, reviewed(), timeouts={"SessionEnd": 3})
    assert codex_hook_review(hooks_file, codex_home).ok is True


def test_unreviewed_changed_and_disabled_hooks_are_named(tmp_path: Path) -> None:
    states = reviewed()
    del states["SessionStart"]
    states["SessionEnd"] = {"trusted_hash": "sha256:" + "0" * 64}
    states["PreToolUse"] = {**states["PreToolUse"], "enabled": False}
    hooks_file, codex_home = codex_files(tmp_path, states)

    finding = codex_hook_review(hooks_file, codex_home)

    assert finding.ok is False
    assert finding.text.startswith(
        "codex: 3 of 3 hooks not reviewed or changed since reviewed or disabled "
        "(session_start, pre_tool_use, session_end): Codex skips them"
    )


def test_without_codex_config_no_hook_is_reviewed(tmp_path: Path) -> None:
    hooks_file, codex_home = codex_files(tmp_path, {})
    (codex_home / "config.toml").unlink()
    finding = codex_hook_review(hooks_file, codex_home)
    assert finding.ok is False and "3 of 3 hooks not reviewed" in finding.text


def test_a_hook_shape_we_did_not_write_is_not_guessed(tmp_path: Path) -> None:
    hooks_file, codex_home = codex_files(tmp_path, reviewed())
    data = json.loads(hooks_file.read_text())
    data["hooks"]["SessionStart"][0]["hooks"][0]["statusMessage"] = "loading lessons"
    hooks_file.write_text(json.dumps(data))
    finding = codex_hook_review(hooks_file, codex_home)
    assert finding.ok is None and "cannot tell" in finding.text


def test_a_broken_codex_config_is_said_not_guessed(tmp_path: Path) -> None:
    hooks_file, codex_home = codex_files(tmp_path, reviewed())
    (codex_home / "config.toml").write_text("[hooks\n")
    finding = codex_hook_review(hooks_file, codex_home)
    assert finding.ok is None and "is not valid TOML" in finding.text
    assert codex_project_trust((tmp_path / "repo",), codex_home).ok is None


def test_codex_project_trust_by_work_tree_or_main_work_tree(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    main, linked = tmp_path / "widget", tmp_path / "widget-fix"
    config = codex_home / "config.toml"

    config.write_text(tomlkit.dumps({"projects": {str(main): {"trust_level": "trusted"}}}))
    assert codex_project_trust((linked, main), codex_home).ok is True
    assert codex_project_trust((linked,), codex_home).text.startswith(f"codex: {linked} is not trusted yet")

    config.write_text(tomlkit.dumps({"projects": {str(linked): {"trust_level": "untrusted"}}}))
    assert codex_project_trust((linked,), codex_home).text.startswith(f"codex: {linked} is marked untrusted")


# --- Gemini CLI ---------------------------------------------------------------------------------------------


def trust_rules(home: Path, rules: dict[str, str] | str) -> Path:
    path = home / ".gemini/trustedFolders.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(rules if isinstance(rules, str) else json.dumps(rules))
    return path


def test_gemini_without_a_rule_does_not_trust(tmp_path: Path) -> None:
    finding = gemini_folder_trust(tmp_path / "repo", tmp_path, {})
    assert finding.ok is False and "trustedFolders.json" in finding.text


def test_gemini_trusts_through_a_symlink_as_gemini_resolves_it(tmp_path: Path) -> None:
    real = tmp_path / "src/widget"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    trust_rules(tmp_path, {str(real): "TRUST_FOLDER"})
    assert gemini_folder_trust(tmp_path / "link", tmp_path, {}).ok is True


@pytest.mark.parametrize(
    ("environ", "ok"),
    [
        ({"GEMINI_CLI_TRUST_WORKSPACE": "true"}, True),
        ({"GEMINI_CLI_TRUST_WORKSPACE": "false"}, False),
        ({"GEMINI_RESTRICTED_MODE": "true", "GEMINI_CLI_TRUST_WORKSPACE": "true"}, False),
    ],
)
def test_gemini_environment_overrides_the_rules(tmp_path: Path, environ: dict[str, str], ok: bool) -> None:
    trust_rules(tmp_path, {str(tmp_path): "TRUST_FOLDER"} if not ok else {})
    assert gemini_folder_trust(tmp_path / "repo", tmp_path, environ).ok is ok


def test_gemini_homes_and_rule_files_move_with_its_variables(tmp_path: Path) -> None:
    other_home = tmp_path / "gemini-home"
    trust_rules(other_home, {str(tmp_path / "repo"): "TRUST_FOLDER"})
    assert gemini_folder_trust(tmp_path / "repo", tmp_path, {}).ok is False
    assert gemini_folder_trust(tmp_path / "repo", tmp_path, {"GEMINI_CLI_HOME": str(other_home)}).ok is True
    rules = other_home / ".gemini/trustedFolders.json"
    assert gemini_folder_trust(tmp_path / "repo", tmp_path, {"GEMINI_CLI_TRUSTED_FOLDERS_PATH": str(rules)}).ok


def test_gemini_with_folder_trust_turned_off_trusts_everything(tmp_path: Path) -> None:
    settings = tmp_path / ".gemini/settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"security": {"folderTrust": {"enabled": False}}}))
    assert gemini_folder_trust(tmp_path / "repo", tmp_path, {}).ok is True


def test_gemini_rules_hivelore_cannot_read_are_said_not_guessed(tmp_path: Path) -> None:
    trust_rules(tmp_path, '{"/srv": "TRUST_FOLDER", // mine\n}')
    finding = gemini_folder_trust(tmp_path / "repo", tmp_path, {})
    assert finding.ok is None and "not plain JSON" in finding.text


LEVELS = st.sampled_from(["TRUST_FOLDER", "DO_NOT_TRUST"])


@given(depth=st.integers(1, 6), rules=st.dictionaries(st.integers(0, 6), LEVELS, max_size=7))
def test_gemini_the_deepest_rule_above_the_folder_decides(depth: int, rules: dict[int, str]) -> None:
    """Rules on the folder, its ancestors and below it (which never apply): the nearest one decides."""
    root = Path("/nonexistent-hivelore-test")
    parts = [f"d{i}" for i in range(6)]
    folder = root.joinpath(*parts[:depth])
    applying = [rules[level] for level in sorted(rules) if level <= depth]
    expected = applying[-1] != "DO_NOT_TRUST" if applying else False
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trustedFolders.json"
        path.write_text(json.dumps({str(root.joinpath(*parts[:level])): trust for level, trust in rules.items()}))
        finding = gemini_folder_trust(folder, root, {"GEMINI_CLI_TRUSTED_FOLDERS_PATH": str(path)})
    assert finding.ok is expected
