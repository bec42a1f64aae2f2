"""`hivelore context --file/--symbol`: after the lessons, what failed on that code before, what was
decided, which other developers' tasks are changing it and the lessons that name it — through the
real CLI and the real hook command (subprocesses, a temporary HIVELORE_HOME and git repository).

dev-a's task "add JWT support" edits `validate_token` and fails `test_refresh_session` twice, then
decides on RS256; dev-b asks for the history of shop/tokens.py before touching it.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from harness import claude_hook_as, cli_as, developer_env, make_shop

FILES = {
    "shop/__init__.py": "",
    "shop/tokens.py": (
        "def validate_token(token):\n"
        "    if not token:\n"
        "        raise ValueError('no token')\n"
        "    return token.split('.')[0]\n"
    ),
    "shop/orders.py": (
        "from shop.tokens import validate_token\n\n\n"
        "def checkout(request, cart):\n"
        "    return {'user': validate_token(request), 'total': total(cart)}\n\n\n"
        "def total(cart):\n"
        "    return sum(cart)\n"
    ),
    "shop/reports.py": "def total(orders):\n    return len(orders)\n",
}
PYTEST_FAILURE = """\
.F                                                                       [100%]
=========================== short test summary info ============================
FAILED tests/test_tokens.py::test_refresh_session - AssertionError: assert 'old.jwt' != 'old.jwt'
1 failed, 1 passed in 0.04s
"""
LESSON = "validate_token must reject expired JWTs: check exp before splitting, or refresh breaks"
NO_GRAPH = "no code graph for this repository yet: run `hivelore graph index`"
PLAIN_JSON_KEYS = {"scopes", "total", "shown", "left_out", "shadowed", "near_duplicates", "text"}


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return make_shop(tmp_path / "shop", FILES)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def dev_a_works_on_tokens(home: Path, shop: Path) -> None:
    """dev-a's agent edits validate_token (claimed, then changed), its test run fails twice the same
    way, dev-a decides on RS256 and writes a lesson that names validate_token."""
    ok(cli_as(home, shop, "dev-a", "graph", "index"))
    claude_hook_as(home, shop, "dev-a", "UserPromptSubmit", {"session_id": "a-1", "prompt": "add JWT support"})
    tokens = shop / "shop" / "tokens.py"
    tool_input = {"file_path": str(tokens), "old_string": "[0]", "new_string": "[1]"}
    edit = {"session_id": "a-1", "tool_name": "Edit", "tool_input": tool_input}
    claude_hook_as(home, shop, "dev-a", "PreToolUse", edit)
    tokens.write_text(tokens.read_text().replace("[0]", "[1]"))
    response = {"filePath": str(tokens)}
    edited = {"session_id": "a-1", "tool_name": "Edit", "tool_input": tool_input, "tool_response": response}
    claude_hook_as(home, shop, "dev-a", "PostToolUse", edited)
    failure = {
        "session_id": "a-1",
        "tool_name": "Bash",
        "tool_input": {"command": "pytest -q tests/test_tokens.py"},
        "error": f"Exit code 1\n{PYTEST_FAILURE}",
    }
    claude_hook_as(home, shop, "dev-a", "PostToolUseFailure", failure)
    claude_hook_as(home, shop, "dev-a", "PostToolUseFailure", failure)
    ok(cli_as(home, shop, "dev-a", "task", "decide", "Tokens are JWTs signed with RS256", "--symbol", "validate_token"))
    ok(cli_as(home, shop, "dev-a", "write", "repo::acme/shop::token-expiry", LESSON))


def section(output: str) -> list[str]:
    """The lines of the code history, printed after the lesson block and a blank line."""
    _, found, code = output.partition("\n\ncode history")
    assert found, output
    return f"code history{code}".splitlines()


def test_context_shows_what_failed_on_a_file_what_was_decided_and_who_is_changing_it(home: Path, shop: Path) -> None:
    dev_a_works_on_tokens(home, shop)

    lines = section(ok(cli_as(home, shop, "dev-b", "context", "--file", "shop/tokens.py", "--file", "shop/orders.py")))

    assert lines[0] == (
        "code history · shop/tokens.py, shop/orders.py · 1 of 3 symbols with history — considerations, not rules"
    )
    assert lines[1] == "shop/tokens.py::validate_token"  # checkout and total have none: not listed
    assert re.fullmatch(
        r"  - failed here before: `pytest -q tests/test_tokens\.py` — tests/test_tokens\.py::test_refresh_session"
        r" \(2×\), not resolved yet \(dev-a, (just now|\d+ min ago)\)",
        lines[2],
    )
    assert re.fullmatch(r"  - decided: Tokens are JWTs signed with RS256 \(dev-a, (just now|\d+ min ago)\)", lines[3])
    assert lines[4] == '  - being changed by dev-a (task 1: "add JWT support")'
    assert lines[5:] == ["lessons that name this code:", f"- repo::acme/shop::token-expiry [lesson]: {LESSON}"]


def test_a_symbol_and_paths_relative_to_the_folder_or_absolute_name_the_same_code(home: Path, shop: Path) -> None:
    dev_a_works_on_tokens(home, shop)
    by_file = section(ok(cli_as(home, shop, "dev-b", "context", "--file", "shop/tokens.py")))

    by_name = section(ok(cli_as(home, shop, "dev-b", "context", "--symbol", "validate_token")))
    by_id = section(ok(cli_as(home, shop, "dev-b", "context", "--symbol", "shop/tokens.py::validate_token")))
    from_inside = section(ok(cli_as(home, shop / "shop", "dev-b", "context", "--file", "tokens.py")))
    absolute = section(ok(cli_as(home, shop / "shop", "dev-b", "context", "--file", str(shop / "shop" / "tokens.py"))))

    assert by_name[0] == "code history · shop/tokens.py::validate_token · 1 of 1 symbols with history" + (
        " — considerations, not rules"
    )
    assert by_name[1:] == by_id[1:] == by_file[1:]
    assert from_inside == absolute == by_file


def test_a_developer_is_not_told_about_their_own_claims(home: Path, shop: Path) -> None:
    dev_a_works_on_tokens(home, shop)

    lines = section(ok(cli_as(home, shop, "dev-a", "context", "--symbol", "validate_token")))

    assert any("failed here before" in line for line in lines)
    assert not any("being changed by" in line for line in lines)


def test_json_carries_the_same_history(home: Path, shop: Path) -> None:
    dev_a_works_on_tokens(home, shop)

    answer = json.loads(ok(cli_as(home, shop, "dev-b", "context", "--file", "shop/tokens.py", "--json")))

    code = answer["code"]
    assert code["asked"] == ["shop/tokens.py"] and code["symbols"] == ["shop/tokens.py::validate_token"]
    (history,) = code["history"]
    (attempt,) = history["failed"]
    assert attempt["failed"] == ["tests/test_tokens.py::test_refresh_session"]
    assert (attempt["count"], attempt["developer"], attempt["resolved_by"]) == (2, "dev-a", None)
    assert [d["text"] for d in history["decisions"]] == ["Tokens are JWTs signed with RS256"]
    assert history["claimed_by"] == [{"developer": "dev-a", "task": 1, "title": "add JWT support"}]
    assert [m["key"] for m in code["lessons"]] == ["token-expiry"] and code["problem"] is None


def test_without_the_options_context_is_what_it_was(home: Path, shop: Path) -> None:
    dev_a_works_on_tokens(home, shop)

    plain = ok(cli_as(home, shop, "dev-b", "context"))
    with_code = ok(cli_as(home, shop, "dev-b", "context", "--file", "shop/tokens.py"))
    plain_json = json.loads(ok(cli_as(home, shop, "dev-b", "context", "--json")))
    code_json = json.loads(ok(cli_as(home, shop, "dev-b", "context", "--symbol", "validate_token", "--json")))

    assert "code history" not in plain and "failed here before" not in plain
    assert with_code.startswith(plain) and with_code[len(plain) :].startswith("\ncode history · shop/tokens.py")
    assert set(plain_json) == PLAIN_JSON_KEYS
    assert {k: v for k, v in code_json.items() if k != "code"} == plain_json


def test_without_a_graph_or_outside_git_it_says_so_in_one_line(home: Path, shop: Path, tmp_path: Path) -> None:
    for args in (["--file", "shop/tokens.py"], ["--symbol", "validate_token"]):
        result = cli_as(home, shop, "dev-b", "context", *args)
        assert (result.returncode, result.stderr) == (0, "")
        assert result.stdout.endswith(f"\n\n{NO_GRAPH}\n")

    plain_folder = tmp_path / "notes"
    plain_folder.mkdir()
    outside = cli_as(home, plain_folder, "dev-b", "context", "--symbol", "validate_token")
    assert (outside.returncode, outside.stderr) == (0, "")
    assert outside.stdout.endswith("\n\nno code history here: this folder is not in a git repository\n")


def test_a_file_with_no_history_says_so(home: Path, shop: Path) -> None:
    ok(cli_as(home, shop, "dev-b", "graph", "index"))

    lines = section(ok(cli_as(home, shop, "dev-b", "context", "--file", "shop/orders.py")))

    assert lines == [
        "code history · shop/orders.py: no failed attempts, decisions or other developers' claims on its 2 symbols"
    ]


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["--symbol", "no_such_function"], 1, "no symbol 'no_such_function'"),
        (["--symbol", "total"], 2, "'total' names 2 symbols"),
        (["--file", "../elsewhere.py"], 2, "is outside the repository"),
        (["--file", "/etc/hostname"], 2, "/etc/hostname is outside the repository"),
    ],
)
def test_bad_code_names_are_one_line_errors_and_print_nothing(
    home: Path, shop: Path, args: list[str], code: int, says: str
) -> None:
    ok(cli_as(home, shop, "dev-b", "graph", "index"))

    result = cli_as(home, shop, "dev-b", "context", *args)

    assert (result.returncode, result.stdout) == (code, "")
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("hivelore: ") and says in result.stderr


def test_a_file_outside_the_repository_is_refused_before_the_graph_is_looked_at(home: Path, shop: Path) -> None:
    result = cli_as(home, shop, "dev-b", "context", "--file", "../elsewhere.py")

    assert (result.returncode, result.stdout) == (2, "") and "outside the repository" in result.stderr


def imported_modules(home: Path, cwd: Path, *args: str) -> set[str]:
    """The modules `hivelore ARGS` imported."""
    probe = (
        "import sys\n"
        f"sys.argv = ['hivelore', *{list(args)!r}]\n"
        "from hivelore.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(sys.modules), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=cwd,
        env=developer_env(home, "dev-b"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    return set(ast.literal_eval(result.stderr.strip().splitlines()[-1]))


def test_the_plain_context_never_imports_the_code_graph_or_the_team_model(home: Path, shop: Path) -> None:
    """The plain `context` runs at every session start; the code history stays off its path, and even
    with it `context` pays for no CLI framework (see test_cli's fast-command check)."""
    ok(cli_as(home, shop, "dev-b", "graph", "index"))
    team_side = {"hivelore.team.store", "hivelore.team.coordination", "hivelore.codegraph", "hivelore.cli.code_history"}
    heavy = {"typer", "click", "rich", "pydantic", "yaml", "mcp", "tree_sitter", "rustworkx"}

    plain = imported_modules(home, shop, "context")
    with_code = imported_modules(home, shop, "context", "--file", "shop/tokens.py")

    assert not {m for m in plain if m in team_side or m.startswith("hivelore.codegraph.")}
    assert team_side <= with_code
    assert not {m for m in with_code if m.split(".")[0] in heavy}
