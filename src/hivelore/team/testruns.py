"""Test runs seen in shell calls: is a command a test run, and what did its output say failed.

    is_test_command(command) -> bool
    parse(output, command="", exit_code=None) -> TestRun
    says_failed(output, command="") -> bool

`TestRun` fields:

- `runner`: pytest | unittest | jest | vitest | go | cargo | unknown (the output decides; the command
  only says which parser to try first, so `make test` or `tox` around pytest is still read as pytest);
- `outcome`: `failed` when a test failed, `error` when the run could not test (a collection, import
  or build error, nothing ran, or an unknown output with no exit code to go by), `passed` otherwise;
  an output the parsers do not recognise is judged by `exit_code` (0 passed, anything else failed);
- `failed`: the failed tests exactly as the runner names them (pytest node ids, unittest dotted ids,
  jest/vitest describe titles joined with " › "/" > " as their reporters print them, go
  `package.TestName/subtest`, cargo test paths), in output order, without repeats, at most 500;
- `errors`: what failed that is not a test: pytest collection and setup errors, unittest ERROR
  entries, jest/vitest suites that failed to run, go packages that did not build or crashed, cargo
  crates that did not compile and test targets that crashed without naming a test;
- `passed`, `skipped`: counts when the output gives them, else None.

`says_failed` judges a shell command whose exit code is unknown (an agent that reports none): True only
when its output says so — a test runner's summary or entries count a failed test or an error (or say
nothing ran), or one of the last lines is an error of a known shape (`Error: …`, `SomeError: …`,
`error[E…]: …`, `fatal: …`, a Python traceback header, `npm ERR!`, a Rust panic, `… command not found`,
`… No such file or directory`, `Segmentation fault`). Anything else is not called a failure.

Jest's JSON reporter (`--json`) and `go test -json` are read too. Jest JSON names a test by its
ancestor titles and title joined with " › ", like the text reporter, rather than by `fullName`
(which joins them with spaces): the same test keeps one name whichever reporter ran.

This runs on the hook path: stdlib only, regular expressions compiled on first use (through `re`'s
own cache), each line cut at 2,000 characters before matching, `json` imported only for JSON output.
"""

from __future__ import annotations

import re

MAX_NAMES = 500
LINE_CAP = 2_000
RUNNERS = ("pytest", "unittest", "jest", "vitest", "go", "cargo")


class TestRun:
    """What one test run reported (see the module docstring for the fields)."""

    __slots__ = ("runner", "outcome", "failed", "errors", "passed", "skipped")
    __test__ = False  # pytest: this is not a test class

    def __init__(
        self,
        runner: str,
        outcome: str,
        failed: tuple[str, ...] = (),
        errors: tuple[str, ...] = (),
        passed: int | None = None,
        skipped: int | None = None,
    ) -> None:
        self.runner, self.outcome, self.failed, self.errors = runner, outcome, failed, errors
        self.passed, self.skipped = passed, skipped

    def __eq__(self, other: object) -> bool:
        return type(other) is TestRun and all(getattr(self, f) == getattr(other, f) for f in self.__slots__)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, f) for f in self.__slots__))

    def __repr__(self) -> str:
        fields = ", ".join(f"{f}={getattr(self, f)!r}" for f in self.__slots__)
        return f"TestRun({fields})"


class _Found:
    """What a parser collected from one output."""

    __slots__ = ("failed", "errors", "passed", "skipped", "failures", "broken", "verdict")

    def __init__(self) -> None:
        self.failed: dict[str, None] = {}  # a dict keeps output order and drops repeats
        self.errors: dict[str, None] = {}
        self.passed: int | None = None
        self.skipped: int | None = None
        self.failures = 0  # failed tests a summary counted (named or not)
        self.broken = 0  # errors a summary counted (named or not)
        self.verdict: str | None = None  # what the summary says when nothing failed: passed, or error (nothing ran)

    def add(self, count: str, value: int) -> None:
        setattr(self, count, (getattr(self, count) or 0) + value)

    def conclude(self) -> None:
        """Once the counts are read: a summary that counted no passed test means nothing was tested."""
        self.passed, self.skipped = self.passed or 0, self.skipped or 0
        self.verdict = "passed" if self.passed else "error"


# -- detecting a test command -------------------------------------------------------------------

# A word is a run of unquoted characters and quoted strings; operators split commands. A quote left
# open runs to the end, as the shell reads it (and so that no position is scanned twice).
_TOKEN = r"""(?:[^\s'"`;|&()<>]|'[^']*(?:'|\Z)|"(?:\\.|[^"\\])*(?:"|\\?\Z)|`[^`]*(?:`|\Z))+|&&|\|\||[;|&()\n]"""
_QUOTED = r"""'([^']*)(?:'|\Z)|"((?:\\.|[^"\\])*)(?:"|\\?\Z)|`([^`]*)(?:`|\Z)"""
_OPERATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")", "\n"})
_ASSIGNMENT = r"^[A-Za-z_]\w*="
_PYTHON = r"^(?:python[\d.]*|py|pypy[\d.]*)$"
# prefixes that run the rest of the command; their own flags are skipped too
_WRAPPERS = frozenset({"env", "time", "nice", "nohup", "sudo", "command", "exec", "xvfb-run", "stdbuf", "caffeinate"})
_RUNNING_TOOLS = {  # tool -> the subcommand that runs another program
    "uv": "run", "poetry": "run", "pipenv": "run", "pdm": "run", "hatch": "run", "rye": "run", "pixi": "run",
    "conda": "run", "mamba": "run", "bundle": "exec", "pnpm": "exec", "pipx": "run", "dotenv": "--",
}  # fmt: skip
_LAUNCHERS = frozenset({"npx", "bunx", "uvx", "pnpx"})
# flags of those wrappers that take a value (so the value is not mistaken for the program)
_VALUED_FLAGS = frozenset(
    {"--with", "--python", "-p", "--project", "--directory", "--package", "--extra", "--group", "--env-file"}
    | {"--from", "-e", "--env", "-n", "--name", "-k", "--kill-after", "-s", "--signal", "-u", "--user", "-C"}
)
_TEST_PROGRAMS = frozenset(
    {"pytest", "py.test", "tox", "nox", "jest", "vitest", "mocha", "ava", "rspec", "phpunit", "pest", "ctest"}
)
_PYTHON_MODULES = frozenset({"pytest", "unittest", "tox", "nox", "nose2"})
_PYTHON_SCRIPTS = {"manage.py": "test", "setup.py": "test", "runtests.py": "", "run_tests.py": ""}
_SUBCOMMANDS = {  # tool -> its first argument that runs tests
    "go": {"test"}, "cargo": {"test", "nextest"}, "dotnet": {"test"}, "mix": {"test"}, "deno": {"test"},
    "bun": {"test"}, "swift": {"test"}, "flutter": {"test"}, "dart": {"test"}, "sbt": {"test"}, "lein": {"test"},
    "stack": {"test"}, "cabal": {"test"}, "playwright": {"test"}, "rake": {"test", "spec"}, "zig": {"build"},
    "npm": {"test", "t", "tst"}, "pnpm": {"test", "t"}, "yarn": {"test"},
}  # fmt: skip
_PACKAGE_SCRIPTS = frozenset({"npm", "pnpm", "yarn", "bun"})  # `npm run test:unit`
_TARGET_PATTERNS = {  # tools whose test goal can be any argument
    "make": r"^(?:tests?|check)(?:[-_:]\w+)*$",
    "just": r"^(?:tests?|check)(?:[-_:]\w+)*$",
    "mvn": r"^(?:test|verify|integration-test|surefire:test)$",
    "mvnw": r"^(?:test|verify|integration-test|surefire:test)$",
    "gradle": r"^(?:\S*:)?(?:test\w*|check|\w*Test)$",
    "gradlew": r"^(?:\S*:)?(?:test\w*|check|\w*Test)$",
    "bazel": r"^(?:test|coverage)$",
}
_NOT_A_RUN = frozenset({"--version", "-V", "--help", "-h", "--collect-only", "--co", "--listTests", "--list"})


def is_test_command(command: str) -> bool:
    """True when any command of a shell line runs tests (`cd app && FOO=1 uv run pytest -q`)."""
    return any(_runs_tests(words, depth=0) for words in _commands(command))


def _commands(line: str) -> list[list[str]]:
    commands: list[list[str]] = [[]]
    for token in re.findall(_TOKEN, line[: LINE_CAP * 4]):
        if token in _OPERATORS:
            commands.append([])
        else:
            commands[-1].append(token)
    return [words for words in commands if words]


def _unquoted(word: str) -> str:
    return re.sub(_QUOTED, lambda m: "".join(group or "" for group in m.groups()), word)


def _program(word: str) -> str:
    name = _unquoted(word).replace("\\", "/").rsplit("/", 1)[-1].lower()
    return name.removesuffix(".exe").removesuffix(".cmd").removesuffix(".bat")


def _skip_flags(words: list[str], start: int) -> int:
    while start < len(words) and words[start].startswith(("-", "+")):
        start += 2 if words[start] in _VALUED_FLAGS else 1
    return start


def _strip_prefixes(words: list[str]) -> list[str]:
    """The command without environment assignments, wrappers (`env`, `timeout 60`) and runners (`uv run`)."""
    i = 0
    while i < len(words):
        word, name = words[i], _program(words[i])
        if re.match(_ASSIGNMENT, word):
            i += 1
        elif name in _WRAPPERS or name in _LAUNCHERS:
            i = _skip_flags(words, i + 1)
        elif name == "timeout":
            i = _skip_flags(words, i + 1) + 1  # the duration
        elif name in _RUNNING_TOOLS and i + 1 < len(words) and _program(words[i + 1]) == _RUNNING_TOOLS[name]:
            i = _skip_flags(words, i + 2)
        else:
            break
    return words[i:]


def _runs_tests(words: list[str], depth: int) -> bool:
    words = _strip_prefixes(words)
    if not words or any(_unquoted(word) in _NOT_A_RUN for word in words[1:]):
        return False
    name, args = _program(words[0]), [_unquoted(word) for word in words[1:]]
    if name in _TEST_PROGRAMS:
        return True
    if name in ("bash", "sh", "zsh", "dash") and "-c" in args[:-1] and depth < 2:
        script = args[args.index("-c") + 1]
        return any(_runs_tests(inner, depth + 1) for inner in _commands(script))
    if re.match(_PYTHON, name):
        return _python_runs_tests(args)
    if name in _TARGET_PATTERNS:
        return any(re.match(_TARGET_PATTERNS[name], arg) for arg in args if not arg.startswith("-"))
    return _subcommand_runs_tests(name, args, words, depth)


def _python_runs_tests(args: list[str]) -> bool:
    if "-m" in args[:-1]:
        return args[args.index("-m") + 1] in _PYTHON_MODULES
    rest = [arg for arg in args if not arg.startswith("-")]
    if not rest:
        return False
    script = _program(rest[0])
    return script in _PYTHON_SCRIPTS and (not _PYTHON_SCRIPTS[script] or _PYTHON_SCRIPTS[script] in rest[1:2])


def _subcommand_runs_tests(name: str, args: list[str], words: list[str], depth: int) -> bool:
    first = _skip_flags(args, 0)
    if first >= len(args):
        return False
    sub = args[first]
    if name == "zig":
        return sub == "build" and "test" in args[first + 1 :]
    if sub in _SUBCOMMANDS.get(name, ()):
        return True
    if name in _PACKAGE_SCRIPTS and sub in ("run", "run-script"):
        script = args[_skip_flags(args, first + 1)] if _skip_flags(args, first + 1) < len(args) else ""
        return re.match(r"^tests?(?:$|[:_-])", script) is not None
    if name in ("yarn", "pnpm", "bun") and depth < 2:  # `yarn jest`, `pnpm vitest run`
        return _runs_tests(words[1 + first :], depth + 1)
    return False


# -- parsing the output -------------------------------------------------------------------------

_ANSI = r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
_HINTS = (
    (r"\bpy\.?test\b|\btox\b|\bnox\b", "pytest"),
    (r"\bunittest\b|\bmanage\.py\b", "unittest"),
    (r"\bvitest\b", "vitest"),
    (r"\bjest\b", "jest"),
    (r"\bgo\s+test\b", "go"),
    (r"\bcargo\b", "cargo"),
)


def parse(output: str, command: str = "", exit_code: int | None = None) -> TestRun:
    """Read a test run's output (stdout and stderr merged); never raises, whatever the text."""
    text, lines = _prepared(output)
    for runner in _order(command):
        found = _PARSERS[runner](lines, text)
        if found is not None:
            return _run(runner, found, exit_code)
    return TestRun("unknown", _by_exit_code(exit_code))


# An error line of a shape tools print when they fail (matched at the start of one of the last lines).
_ERROR_LINE = (
    r"^(?:[\w.]*(?:Error|Exception)(?:\[\w+\])?:\s*\S"  # Error: connect ECONNREFUSED …, TypeError: …
    r"|error(?:\[\w+\])?:\s*\S|\S+:\d+(?::\d+)?:\s*(?:fatal )?error:"  # rustc, gcc/clang, tsc
    r"|fatal:\s*\S|Traceback \(most recent call last\):|npm ERR!|ERR_PNPM_\w+"
    r"|thread '.*' panicked at|Segmentation fault"
    r"|.*: (?:command not found|No such file or directory)$)"
)
_ERROR_LINES_LOOKED_AT = 12  # the last non-blank lines: where a command that died says why


def says_failed(output: str, command: str = "") -> bool:
    """Whether the output of a shell command whose exit code is unknown says that it failed (see the
    module docstring); never raises, whatever the text."""
    text, lines = _prepared(output)
    for runner in _order(command):
        found = _PARSERS[runner](lines, text)
        if found is not None:
            return bool(found.failed or found.failures or found.errors or found.broken or found.verdict == "error")
    last = [line.strip() for line in lines if line.strip()][-_ERROR_LINES_LOOKED_AT:]
    return any(re.match(_ERROR_LINE, line) for line in last)


def _prepared(output: str) -> tuple[str, list[str]]:
    text = re.sub(_ANSI, "", output).replace("\r", "\n")
    return text, [line[:LINE_CAP] for line in text.split("\n")]


def _order(command: str) -> list[str]:
    hinted = [runner for pattern, runner in _HINTS if re.search(pattern, command[:LINE_CAP])]
    return list(dict.fromkeys([*hinted, *RUNNERS]))


def _by_exit_code(exit_code: int | None) -> str:
    if exit_code is None:
        return "error"  # nothing to tell a pass from a failure
    return "passed" if exit_code == 0 else "failed"


def _run(runner: str, found: _Found, exit_code: int | None) -> TestRun:
    if found.failed or found.failures:
        outcome = "failed"
    elif found.errors or found.broken:
        outcome = "error"
    else:  # a summary gives the verdict; without one (cut off) the exit code does
        outcome = found.verdict or _by_exit_code(exit_code)
    failed, errors = tuple(found.failed)[:MAX_NAMES], tuple(found.errors)[:MAX_NAMES]
    return TestRun(runner, outcome, failed, errors, found.passed, found.skipped)


def _counts(found: _Found, text: str, words: dict[str, str]) -> None:
    """Add up "3 failed, 2 passed" style counts; `words` maps the runner's word to a `_Found` count."""
    for number, word in re.findall(r"(\d+) ([a-z]+)", text):
        if word in words:
            found.add(words[word], int(number))
    found.conclude()


# pytest ---------------------------------------------------------------------------------------

_PYTEST_SUMMARY = r"^(FAILED|ERROR|SUBFAILED\S*) (\S.*)$"  # a strict XPASS is listed as FAILED
_PYTEST_VERBOSE = r"^(\S+::\S.*?) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b"
_PYTEST_XDIST = r"^\[gw\d+\] \[\s*\d+%\] (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+::\S.*)$"
_PYTEST_TOTALS = r"^=*\s*((?:\d+ [a-z]+(?: [a-z]+)?(?:, )?)+) in \d+(?:\.\d+)?s\b"
_PYTEST_WORDS = {"passed": "passed", "failed": "failures", "skipped": "skipped", "error": "broken", "errors": "broken"}


def _pytest(lines: list[str], text: str) -> _Found | None:
    found, summary, verbose = _Found(), False, []
    for line in lines:
        if "short test summary info" in line:
            summary = True
        elif summary and (match := re.match(_PYTEST_SUMMARY, line)):
            _pytest_entry(found, match.group(1), _node_id(match.group(2)))
        elif match := re.match(_PYTEST_VERBOSE, line):
            verbose.append((match.group(2), match.group(1)))
        elif match := re.match(_PYTEST_XDIST, line):
            verbose.append((match.group(1), match.group(2)))
        elif match := re.match(_PYTEST_TOTALS, line):
            _counts(found, match.group(1), _PYTEST_WORDS)  # tox and nox print one per environment: they add up
        elif re.match(r"^=*\s*no tests ran in ", line):
            found.verdict = "error"
    if not summary:  # the summary names every failure; without it (-rN, a cut output) the -v lines do
        for status, node in verbose:
            _pytest_entry(found, status, node)
    return found if summary or verbose or found.verdict else None


def _pytest_entry(found: _Found, status: str, node: str) -> None:
    if status.startswith(("FAILED", "SUBFAILED")):
        found.failed[node] = None
    elif status == "ERROR":
        found.errors[node] = None


def _node_id(text: str) -> str:
    """The node id a summary entry starts with: up to " - reason", parameters in brackets kept whole."""
    depth = 0
    for i, char in enumerate(text):
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(depth - 1, 0)
        elif depth == 0 and text.startswith(" - ", i):
            return text[:i]
    return text.rstrip()


# unittest -------------------------------------------------------------------------------------

_UNITTEST_HEADER = r"^(FAIL|ERROR|UNEXPECTED SUCCESS): (\S+) \(([^()\s]+)\)"
_UNITTEST_VERBOSE = r"^\s*\S+ \([^()\s]+\)(?: .*)? \.\.\. (ok|FAIL|ERROR|skipped|expected failure|unexpected success)"
_UNITTEST_WORDS = {"failures": "failures", "unexpected_successes": "failures", "errors": "broken", "skipped": "skipped"}


def _unittest(lines: list[str], text: str) -> _Found | None:
    found, ran, verbose_ok, dots = _Found(), False, None, None
    for line in lines:
        if match := re.match(_UNITTEST_HEADER, line):
            name = _unittest_name(match.group(2), match.group(3))
            (found.errors if match.group(1) == "ERROR" else found.failed)[name] = None
        elif match := re.match(_UNITTEST_VERBOSE, line):
            verbose_ok = (verbose_ok or 0) + (match.group(1) == "ok")
        elif match := re.match(r"^Ran (\d+) tests? in ", line):
            ran = True
            found.verdict = "error" if match.group(1) == "0" else "passed"
        elif match := re.match(r"^(?:OK|FAILED) \((.*)\)$", line):
            for word, number in re.findall(r"(\w+)=(\d+)", match.group(1)):
                if word in _UNITTEST_WORDS:
                    found.add(_UNITTEST_WORDS[word], int(number))
        elif dots is None and re.match(r"^[.FEsxu]+$", line):
            dots = line.count(".")  # the progress line of the default output: one "." per passed test
    if not (ran or found.failed or found.errors):
        return None
    found.passed, found.skipped = verbose_ok if verbose_ok is not None else dots, found.skipped or 0
    return found


def _unittest_name(method: str, where: str) -> str:
    # Python 3.11+ prints the whole test id in the parentheses; older versions print the class only
    return where if where.endswith("." + method) else f"{where}.{method}"


# jest and vitest ------------------------------------------------------------------------------

_JS_WORDS = {"passed": "passed", "failed": "failures", "skipped": "skipped"}


def _jest(lines: list[str], text: str) -> _Found | None:
    if any(line.startswith("{") and '"numFailedTests"' in line for line in lines):
        return _jest_json(text)
    found, suite, recognised = _Found(), "", False
    for line in lines:
        if match := re.match(r"^(PASS|FAIL) (\S+)", line):
            suite, recognised = match.group(2), True
        elif match := re.match(r"^\s*● (.+?)\s*$", line):
            if match.group(1) == "Test suite failed to run":
                found.errors[suite or "(test suite)"] = None
            else:
                found.failed[match.group(1)] = None
        elif line.startswith("Tests:"):
            recognised = True
            _counts(found, line, _JS_WORDS)
    return found if recognised else None


def _jest_json(text: str) -> _Found | None:
    import json  # only JSON output pays for it

    for line in text.split("\n"):
        if line.startswith("{") and '"numFailedTests"' in line:
            try:
                return _jest_report(json.loads(line))
            except (ValueError, TypeError, AttributeError, KeyError):
                return None
    return None


def _jest_report(report: dict) -> _Found:
    found = _Found()
    for suite in report["testResults"]:
        failed = [test for test in suite["assertionResults"] if test["status"] == "failed"]
        for test in failed:
            found.failed[" › ".join([*test["ancestorTitles"], test["title"]])] = None
        if suite["status"] == "failed" and not failed:
            found.errors[suite["name"]] = None
    found.passed, found.skipped = int(report["numPassedTests"]), int(report["numPendingTests"])
    found.failures = int(report["numFailedTests"])
    found.conclude()
    return found


def _vitest(lines: list[str], text: str) -> _Found | None:
    found, recognised = _Found(), False
    for line in lines:
        if match := re.match(r"^\s*FAIL\s+\S+ > (.+?)\s*$", line):
            found.failed[re.sub(r" \[[^\]]*\]$", "", match.group(1))] = None
        elif match := re.match(r"^\s*FAIL\s+(\S+) \[ \S+ \]\s*$", line):  # a file that failed to load
            found.errors[match.group(1)] = None
        elif match := re.match(r"^\s*Tests\s+(\d.*)$", line):
            recognised = True
            _counts(found, match.group(1), _JS_WORDS)
    return found if recognised or found.failed else None


# go test --------------------------------------------------------------------------------------

_GO_RESULT = r"^\s*--- (FAIL|PASS|SKIP): (\S+) \("
_GO_PACKAGE = r"^(ok|FAIL|\?)\s*\t(\S+)(.*)$"


class _GoPackage:
    """Test results seen since the last package line: go prints the package after its tests."""

    __slots__ = ("failed", "passed", "skipped")

    def __init__(self) -> None:
        self.failed: list[str] = []
        self.passed = self.skipped = 0


def _go(lines: list[str], text: str) -> _Found | None:
    if any(line.startswith("{") and '"Action"' in line for line in lines[:50]):
        return _go_json(text)
    found, pending, recognised, ok = _Found(), _GoPackage(), False, False
    for line in lines:
        if match := re.match(_GO_RESULT, line):
            status, name = match.groups()
            if status == "FAIL":
                pending.failed.append(name)
            elif status == "PASS":
                pending.passed += 1
            else:
                pending.skipped += 1
            recognised, ok = True, ok or status == "PASS"
        elif match := re.match(_GO_PACKAGE, line):
            _go_package(found, pending, *match.groups())
            pending, recognised, ok = _GoPackage(), True, ok or match.group(1) == "ok"
    _go_package(found, pending, "", "", "")  # results after the last package line (a cut output)
    found.verdict = "passed" if ok else "error"
    return found if recognised else None


def _go_package(found: _Found, pending: _GoPackage, status: str, package: str, rest: str) -> None:
    prefix = f"{package}." if package else ""
    for name in pending.failed:
        found.failed[prefix + name] = None
    if pending.passed or pending.skipped:  # only -v prints them
        found.add("passed", pending.passed)
        found.add("skipped", pending.skipped)
    if status == "FAIL" and ("[build failed]" in rest or "[setup failed]" in rest or not pending.failed):
        found.errors[package] = None  # it did not build, or crashed (a timeout, os.Exit) without naming a test


def _go_json(text: str) -> _Found:
    import json  # only JSON output pays for it

    found, failing, with_failed_tests = _Found(), [], set()
    for line in text.split("\n"):
        try:
            event = json.loads(line) if line.startswith("{") else None
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        action, package, test = event.get("Action"), str(event.get("Package") or ""), event.get("Test")
        if test and action == "fail":
            found.failed[f"{package}.{test}" if package else str(test)] = None
            with_failed_tests.add(package)
        elif test and action in ("pass", "skip"):
            found.add("passed" if action == "pass" else "skipped", 1)
        elif action in ("fail", "build-fail"):
            failing.append(package or str(event.get("ImportPath") or ""))
    for package in failing:
        if package not in with_failed_tests:
            found.errors[package] = None
    found.conclude()
    return found


# cargo test -----------------------------------------------------------------------------------

_CARGO_TEST = r"^test (\S.*?) \.\.\. (ok|FAILED|ignored)"
_CARGO_TOTALS = r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored"


def _cargo(lines: list[str], text: str) -> _Found | None:
    found, recognised, listing, target_named = _Found(), False, False, False
    for line in lines:
        if listing and (match := re.match(r"^ {4}(\S.*?)\s*$", line)):
            found.failed[match.group(1)] = None  # the sorted list under the second "failures:"
            target_named = True
            continue
        listing = line.rstrip() == "failures:"
        if match := re.match(_CARGO_TEST, line):
            recognised = True
            if match.group(2) == "FAILED":
                found.failed[match.group(1)] = None
                target_named = True
        elif match := re.match(_CARGO_TOTALS, line):
            recognised = True
            found.add("passed", int(match.group(1)))
            found.add("skipped", int(match.group(3)))
        elif match := re.match(r"^error: test failed, to rerun pass `(.+)`", line):
            if not target_named:  # the test binary crashed (a signal, an abort) before naming a test
                found.errors[match.group(1)] = None
        elif match := re.match(r"^error: could not compile `([^`]+)`", line):
            recognised = True
            found.errors[match.group(1)] = None
        elif line.lstrip().startswith("Running "):
            target_named = False
    if found.passed is not None:
        found.conclude()
    return found if recognised else None


_PARSERS = {
    "pytest": _pytest,
    "unittest": _unittest,
    "jest": _jest,
    "vitest": _vitest,
    "go": _go,
    "cargo": _cargo,
}
