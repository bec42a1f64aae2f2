"""Test runs by example: which shell commands run tests, and what real runner output says failed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hivelore.team.testruns import TestRun, is_test_command, parse, says_failed

TEST_OUTPUT = Path(__file__).parent / "fixtures" / "test-output"
EXPECTED = {
    name: entry for name, entry in json.loads((TEST_OUTPUT / "expected.json").read_text()).items() if name[0] != "_"
}
# SOURCE.md names the command of each capture: "- pytest/pytest-q.txt: `pytest -q tests/test_calc.py`"
COMMANDS = {
    match.group(1): match.group(2)
    for match in re.finditer(r"^- (\S+)(?: \(\+ \S+\))?: `([^`]+)`", (TEST_OUTPUT / "SOURCE.md").read_text(), re.M)
}
# "same with `RUST_BACKTRACE=1`"
COMMANDS["cargo-test/cargo-test-no-fail-fast-backtrace.txt"] = COMMANDS[
    "cargo-test/cargo-test-no-fail-fast.txt"
].replace("RUST_BACKTRACE=0", "RUST_BACKTRACE=1")


def capture(name: str) -> tuple[str, int]:
    """A captured output and the exit status its runner returned."""
    exit_text = (TEST_OUTPUT / name).with_suffix(".exit").read_text()
    return (TEST_OUTPUT / name).read_text(), int(exit_text.split("=")[1])


# -- every captured run of expected.json --------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_captured_run_names_exactly_the_tests_its_runner_reported_failed(name: str) -> None:
    expected = EXPECTED[name]
    output, exit_code = capture(name)
    run = parse(output, COMMANDS[name], exit_code)

    assert run.runner == {"go-test": "go", "cargo-test": "cargo"}.get(name.split("/")[0], name.split("/")[0])
    if "failed_fullName" in expected:  # jest's JSON reporter: named like its text reporter, "add › wrong sum"
        assert [failed.replace(" › ", " ") for failed in run.failed] == expected["failed_fullName"]
    else:
        assert sorted(run.failed) == sorted(expected["failed"])
    assert len(set(run.failed)) == len(run.failed)
    assert sorted(run.errors) == sorted(expected.get("errors", []) + expected.get("build_failed_packages", []))
    assert run.outcome == ("failed" if run.failed else "error") and expected["exit"] != 0
    for count in ("passed", "skipped"):
        if count in expected:  # go -v lists the skipped tests by name
            number = expected[count]
            assert getattr(run, count) == (len(number) if isinstance(number, list) else number)
    # the command only says which parser to try first: the output alone gives the same answer
    assert parse(output, "", exit_code) == run


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_captured_command_is_a_test_command(name: str) -> None:
    assert is_test_command(COMMANDS[name])


def test_jest_json_run_prints_the_text_report_on_stderr_which_reads_the_same() -> None:
    stderr = (TEST_OUTPUT / "jest" / "jest-json-stderr.txt").read_text()
    output, exit_code = capture("jest/jest-json.json")
    assert parse(stderr, COMMANDS["jest/jest-json.json"], 1) == parse(
        output, COMMANDS["jest/jest-json.json"], exit_code
    )


def test_a_failure_of_a_unittest_subtest_names_the_test_method() -> None:
    run = parse(capture("unittest/unittest-v.txt")[0], "python -m unittest -v tests.test_unit")
    assert "tests.test_unit.CalcTests.test_subtests" in run.failed
    assert (run.passed, run.skipped) == (1, 1)


def test_counts_the_runner_does_not_print_stay_unknown() -> None:
    run = parse(capture("go-test/go-test.txt")[0], "go test ./...")  # without -v: neither passes nor skips
    assert (run.passed, run.skipped) == (None, None)


# -- passing runs, colours, cut outputs ---------------------------------------------------------

PASSING = {
    "pytest -q": "........                                                                 [100%]\n8 passed in 0.12s\n",
    "python -m unittest": "...\n" + "-" * 70 + "\nRan 3 tests in 0.001s\n\nOK\n",
    "npx jest": "PASS ./calc.test.js\n\nTest Suites: 1 passed, 1 total\nTests:       4 passed, 4 total\n",
    "go test ./...": "ok  \texample.com/goproj/calc\t0.003s\nok  \texample.com/goproj/util\t(cached)\n",
    "cargo test": "running 2 tests\ntest tests::a ... ok\ntest tests::b ... ok\n\n"
    "test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n",
}


@pytest.mark.parametrize("command", sorted(PASSING))
def test_a_passing_run_is_passed_even_without_its_exit_code(command: str) -> None:
    run = parse(PASSING[command], command)
    assert (run.outcome, run.failed, run.errors) == ("passed", (), ())


def test_a_run_where_nothing_ran_is_an_error_not_a_pass() -> None:
    assert parse("\nno tests ran in 0.01s\n", "pytest -k nothing", 5).outcome == "error"
    assert parse("\nRan 0 tests in 0.000s\n\nNO TESTS RAN\n", "python -m unittest", 5).outcome == "error"


def test_terminal_colours_change_nothing() -> None:
    output, exit_code = capture("pytest/pytest-v.txt")
    coloured = re.sub(r"\b(FAILED|PASSED|SKIPPED)\b", "\x1b[31m\\1\x1b[0m", output).replace("\n", "\r\n")
    assert parse(coloured, "pytest -v", exit_code) == parse(output, "pytest -v", exit_code)


def test_the_tail_of_an_output_that_was_cut_still_names_the_failures() -> None:
    output, exit_code = capture("pytest/pytest-q.txt")
    tail = "\n".join(output.splitlines()[-5:])
    assert parse(tail, "pytest -q", exit_code).failed == parse(output, "pytest -q", exit_code).failed


def test_a_node_id_keeps_its_parameters_even_when_they_hold_the_reason_separator() -> None:
    output = "=== short test summary info ===\nFAILED tests/t.py::test_x[a - b] - assert 1 == 2\n1 failed in 0.01s\n"
    assert parse(output, "pytest").failed == ("tests/t.py::test_x[a - b]",)


def test_without_the_short_summary_the_verbose_lines_name_the_failures() -> None:
    output = (
        "tests/test_x.py::test_a PASSED   [ 33%]\ntests/test_x.py::test_b[a - b] FAILED   [ 66%]\n"
        "tests/test_x.py::test_c XPASS   [100%]\n==== 1 failed, 1 passed, 1 xpassed in 0.01s ====\n"
    )  # pytest -v -rN; a non-strict XPASS is not a failure
    assert parse(output, "pytest -v -rN", 1) == TestRun(
        "pytest", "failed", ("tests/test_x.py::test_b[a - b]",), (), 1, 0
    )


def test_vitest_names_a_test_by_its_describe_titles() -> None:
    output = """
 ❯ tests/orders.test.ts (3 tests | 1 failed) 812ms
   × orders > creates an order 804ms

⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯

 FAIL  tests/orders.test.ts > orders > creates an order
Error: connect ECONNREFUSED 127.0.0.1:5432

 Test Files  1 failed | 3 passed (4)
      Tests  1 failed | 11 passed (12)
"""
    assert parse(output, "pnpm test", 1) == TestRun("vitest", "failed", ("orders > creates an order",), (), 11, 0)


def test_an_output_no_parser_knows_is_judged_by_its_exit_code() -> None:
    assert parse("all good\n", "make test", 0) == TestRun("unknown", "passed")
    assert parse("boom\n", "make test", 2) == TestRun("unknown", "failed")
    assert parse("boom\n", "make test") == TestRun("unknown", "error")  # no way to tell


def test_a_crate_that_does_not_compile_is_an_error() -> None:
    output = (
        "   Compiling rsproj v0.1.0 (/home/dev/rsproj)\nerror[E0308]: mismatched types\n"
        "error: could not compile `rsproj` (lib test) due to 1 previous error\n"
    )
    assert parse(output, "cargo test", 101) == TestRun("cargo", "error", (), ("rsproj",))


# -- test commands ------------------------------------------------------------------------------

TEST_COMMANDS = [
    "pytest", ".venv/bin/pytest -x tests/", "python -m pytest -q", "python3.12 -m unittest discover",
    "cd app && FOO=1 BAR='a b' uv run pytest -q", "tox -e py311", "nox -s tests", "npm test", "npm run test:unit",
    "pnpm test", "yarn test", "yarn jest", "bun test", "npx jest --ci", "npx vitest run", "pnpm vitest run",
    "go test ./...", "cargo test --offline", "cargo +nightly test", "cargo nextest run", "mvn -q test", "./mvnw verify",
    "./gradlew :app:test", "make test", "make -C backend test-unit", "env CI=1 npm test", "timeout 60 pytest",
    "bash -c 'cd x && pytest -q'", "python manage.py test", "poetry run pytest", "ruff check . && pytest",
    "pytest 2>&1 | tail -20", "dotnet test", "time go test ./...",
]  # fmt: skip
OTHER_COMMANDS = [
    "pip install pytest", "echo pytest", "git commit -m 'run pytest'", "cat pytest.ini", "pytest --version",
    "ls tests", "npm install", "go build ./...", "cargo build", "make", "make build", "python script.py",
    "grep -r test .", "npm run build", "uv pip install pytest", "jest --listTests", "python -m pip install pytest", "",
]  # fmt: skip


@pytest.mark.parametrize("command", TEST_COMMANDS)
def test_test_commands_are_recognised_behind_prefixes_and_wrappers(command: str) -> None:
    assert is_test_command(command)


@pytest.mark.parametrize("command", OTHER_COMMANDS)
def test_commands_that_only_mention_tests_are_not_test_runs(command: str) -> None:
    assert not is_test_command(command)


# -- never raises -------------------------------------------------------------------------------

FRAGMENTS = [line for name in EXPECTED for line in capture(name)[0].splitlines()[:40]] + [
    "{",
    '{"numFailedTests": 1, "testResults": [1]}',
    '{"Action": "fail", "Test": 3}',
    "failures:",
    "    x",
]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=3000), st.text(max_size=80))
def test_parse_never_raises_on_arbitrary_text(output: str, command: str) -> None:
    run = parse(output, command)
    assert run.outcome in ("passed", "failed", "error")
    is_test_command(command + output[:200])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=40), max_size=60), st.sampled_from(sorted(COMMANDS)))
def test_parse_never_raises_on_shuffled_runner_output(lines: list[str], name: str) -> None:
    run = parse("\n".join(lines), COMMANDS[name])
    assert run.runner in ("pytest", "unittest", "jest", "vitest", "go", "cargo", "unknown")


# -- a command whose exit code is unknown: only its output can say it failed ------------------------------------


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_captured_failing_run_says_it_failed_without_its_exit_code(name: str) -> None:
    output, exit_code = capture(name)
    assert exit_code != 0
    assert says_failed(output, COMMANDS[name]) and says_failed(output)


@pytest.mark.parametrize(
    "output",
    [
        "Error: connect ECONNREFUSED 127.0.0.1:5432\n",  # node, as Codex reported it (real capture)
        "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\nKeyError: 'DATABASE_URL'\n",
        "bash: line 1: pnpm: command not found\n",
        "fatal: not a git repository (or any of the parent directories): .git\n",
        "error[E0425]: cannot find value `total` in this scope\n  --> src/cart.rs:4:5\n",
        "src/cart.c:4:5: error: use of undeclared identifier 'total'\n1 error generated.\n",
        "npm ERR! code ELIFECYCLE\nnpm ERR! errno 1\n",
        "thread 'main' panicked at src/main.rs:2:5:\nboom\n",
        "cat: settings.toml: No such file or directory\n",
    ],
)
def test_an_error_line_among_the_last_lines_says_it_failed(output: str) -> None:
    assert says_failed(output)


@pytest.mark.parametrize(
    "output",
    [
        "",
        "db is up\n",
        "3 passed in 0.41s\n",
        "Ran 4 tests in 0.002s\n\nOK\n",
        "grep found: the word error appears in 3 lines\n",  # "error" in prose, not an error line
        "Error: connect ECONNREFUSED 127.0.0.1:5432\n" + "".join(f"retry {n}: connected\n" for n in range(12)),
    ],
)
def test_output_that_does_not_say_it_failed_is_not_called_a_failure(output: str) -> None:
    """Without an exit code a success cannot be proven either: this only means no failure is claimed. An error
    line followed by a dozen more lines is history the command got past."""
    assert not says_failed(output)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=60), max_size=60), st.text(max_size=80))
def test_says_failed_never_raises(lines: list[str], command: str) -> None:
    assert says_failed("\n".join(lines), command) in (True, False)
