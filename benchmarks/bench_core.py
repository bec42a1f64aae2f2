"""Whole-process timings of the hivelore CLI on synthetic stores, against a bare Python start-up.

For each size, in a fresh temporary folder: a git repository `checkout` (origin
git@github.com:acme/checkout.git, branch main), a HIVELORE_HOME filled by `synth.generate`, and
`hivelore index rebuild` (timed: it is also the setup). Then, in rounds that interleave every
command so machine noise hits all of them alike, it times:

    python -c pass                     the same interpreter as the venv, bare
    hivelore context                   the session-start block
    hivelore search "ECONNREFUSED 5432"
    hivelore write repo::acme/checkout::bench-key-<i> VALUE     a new key each run
    hivelore write repo::acme/checkout::<existing key> VALUE    an update of a generated memory
    hivelore search "ECONNREFUSED 5432"   again, right after those writes changed the repo folder
    hivelore index rebuild             fewer runs at large sizes

and the searches a new user types (`QUERIES`): the issue's "connection refused deadlock", the store's
most common words (read from the index's vocabulary after the rebuild, stop words left out) one, two
and three at a time, and a pasted prompt, each as the plain command with no hook server
(HIVELORE_HOOK_SERVER=off) and with the warm hook server up. With `--baseline SRC` every search and
`context` row also runs with PYTHONPATH=SRC (another checkout's `src`, compiled first), interleaved
with this code's runs, over a copy of the store indexed by that code (untimed): a before/after in one
run. `--searches-only` leaves out the writes, hooks,
imports and rebuilds.

Before the rounds, the store is exported (`hivelore export --include-hidden`, untimed) and that
JSONL file is imported into a fresh HIVELORE_HOME (`hivelore import FILE`, every record through the
guard), then imported again (every record unchanged); one run each from 20,000 memories up.

and prints, per size and command, the median and the minimum wall time and the median as a
multiple of the bare Python median, the median CPU time (user + system) of the process and that as a
multiple of bare Python's (on a shared machine the wall time is mostly others' load; the CPU time
much less), with PASS/MISS for the targets at 60,000 memories (judged on the wall time).

    python benchmarks/bench_core.py                       # 600, 6,000 and 60,000 memories, 7 runs
    python benchmarks/bench_core.py --sizes 200 --runs 3  # the CI smoke run, a few seconds
    python benchmarks/bench_core.py --sizes 60000 --searches-only --baseline ../wt-base/src   # before/after

Exit status: 0 when every command ran (missed targets included: this prints figures, it does not
gate); 1 when a command failed, with its output printed.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import platform
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from importlib import metadata
from pathlib import Path

import synth

QUERY = "ECONNREFUSED 5432"
TARGET_SIZE = 60_000
TARGET_RATIO = 4.0  # context and search, whole process, vs bare Python start-up
TARGET_HOOK_RATIO = 3.0  # the agents' hooks, whole process
TARGET_REBUILD_SECONDS = 30.0
TARGET_IMPORT_SECONDS = 60.0
LOREKIT_HOOK_MS_AT_6000 = 760.0
REPO_ADDRESS = "repo::acme/checkout"
ORIGIN = "git@github.com:acme/checkout.git"

BARE = "python -c pass (bare)"
CONTEXT = "hivelore context"
SEARCH = f'hivelore search "{QUERY}"'
ISSUE_QUERY = "connection refused deadlock"  # issue 26's: a new user's first search
# Pasted from a chat with an agent: most of its words are common in the store, none rare.
PASTED = (
    "the checkout tests fail in ci with a database error after I updated the deps, "
    "how do I run pytest against the dev db in docker?"
)
PLAIN = "no hook server"  # the command answers itself: what a new user, with no hook server yet, runs
BEFORE = "baseline"  # with PYTHONPATH=--baseline: the code before the change, same store, same round
SEARCH_AFTER_WRITE = "  same, right after a write"
WRITE_NEW = "hivelore write (new key)"
WRITE_UPDATE = "hivelore write (update)"
REBUILD_FIRST = "hivelore index rebuild (no index yet)"
REBUILD = "hivelore index rebuild"
IMPORT = "hivelore import (a fresh home)"
IMPORT_AGAIN = "  same file again (all unchanged)"
HOOK_START = "hook: session start (claude)"
HOOK_PROMPT = "hook: prompt (claude)"
HOOK_LONG_PROMPT = "hook: a long prompt (claude)"
HOOK_FAILURE = "hook: tool failure (claude)"
HOOK_READ = "hook: after a read (claude)"
HOOK_SHELL = "hook: after a shell command (claude)"
INJECTING = (HOOK_START, HOOK_PROMPT, HOOK_LONG_PROMPT, HOOK_FAILURE)  # the hooks that answer with lessons
HOOKS = (*INJECTING, HOOK_READ, HOOK_SHELL)
ALONE = "  same, no hook server"  # the hook answers in its own process (the first event after idle, or off)
HOOKS_ALONE = tuple(f"{label} {ALONE.strip()}" for label in HOOKS)
ROW_ORDER = (
    BARE, WRITE_NEW, WRITE_UPDATE, SEARCH, SEARCH_AFTER_WRITE, CONTEXT, f"{CONTEXT} | {BEFORE}",
    *(row for pair in zip(HOOKS, HOOKS_ALONE, strict=True) for row in pair), REBUILD_FIRST, REBUILD,
    IMPORT, IMPORT_AGAIN,
)  # fmt: skip
PROMPT = "why does pnpm test fail with ECONNREFUSED 5432?"
# Eight keywords, none in every lesson: the any-word search runs, over words most of the store holds.
LONG_PROMPT = "the checkout e2e tests fail again with ECONNREFUSED on postgres, how do I start the db for them?"
FAILURE = "Error: connect ECONNREFUSED 127.0.0.1:5432\n    at TCPConnectWrap.afterConnect [as oncomplete]\nExit code 1"


@dataclass
class Series:
    """The timings of one command at one size, or why it stopped."""

    samples: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # seconds of CPU (user + system) of each run's process
    failure: str | None = None
    over_budget: bool = False  # stopped early: its samples used up --budget seconds


@dataclass
class SizeResult:
    size: int
    series: dict[str, Series]
    notes: list[str]


def variant(label: str, *tags: str) -> str:
    """The row of `label` run another way (`PLAIN`, `BEFORE`), shown indented under it."""
    return f"{label} | {', '.join(tags)}"


def shown(label: str) -> str:
    if label in HOOKS_ALONE:
        return ALONE
    return f"  same, {label.split(' | ')[1]}" if " | " in label else label


def common_words(index: Path, count: int) -> list[str]:
    """The `count` words the most memories hold, read from the index's vocabulary: stop words (the
    search keeps them, but a new user types them in a sentence, not alone), words of one letter or
    digits only, and words an earlier one already matches as a prefix (a search for "test" finds
    "tests") left out."""
    from hivelore.memory.recall import STOPWORDS

    conn = sqlite3.connect(index)
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, memories_fts, row)")
        terms = [t for (t,) in conn.execute("SELECT term FROM temp.vocab ORDER BY doc DESC, term LIMIT 200")]
    finally:
        conn.close()
    chosen: list[str] = []
    for term in terms:
        covered = any(term.startswith(word) for word in chosen if len(word) >= 4)
        if term.isalpha() and len(term) > 1 and term not in STOPWORDS and not covered:
            chosen.append(term)
    return chosen[:count]


class Bench:
    def __init__(
        self,
        size: int,
        runs: int,
        rebuild_runs: int,
        seed: int,
        timeout: float,
        budget: float,
        keep: bool,
        baseline: str | None = None,
        searches_only: bool = False,
    ) -> None:
        self.size, self.runs, self.rebuild_runs = size, runs, rebuild_runs
        self.seed, self.timeout, self.budget, self.keep = seed, timeout, budget, keep
        self.baseline, self.searches_only = baseline, searches_only
        self.queries: list[str] = []
        self.hivelore = str(Path(sys.executable).parent / "hivelore")
        launcher = Path(sys.executable).parent / "hivelore-hook"  # what `hivelore install` wires, when present
        self.hook = [str(launcher)] if launcher.is_file() else [self.hivelore, "hook"]
        self.series: dict[str, Series] = {}
        self.notes: list[str] = []
        self.counter = 0
        self.last_cpu = 0.0

    def log(self, message: str) -> None:
        print(f"[{self.size:,}] {message}", file=sys.stderr, flush=True)

    # -- running commands ---------------------------------------------------------------------

    def run(
        self, argv: list[str], stdin: str | None = None, env: dict[str, str] | None = None
    ) -> tuple[float, subprocess.CompletedProcess[str] | None, str | None]:
        """(seconds, process, failure text) of one whole process, `stdin` (or nothing) on its input;
        its CPU seconds in `self.last_cpu`."""
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        try:
            proc = subprocess.run(
                argv,
                cwd=self.repo,
                env=env or self.env,
                input=stdin,
                stdin=None if stdin is not None else subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=self.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            failure = f"`{_shell(argv)}` did not finish in {self.timeout:.0f} s"
            return time.perf_counter() - started, None, failure
        seconds = time.perf_counter() - started
        now = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.last_cpu = now.ru_utime + now.ru_stime - used.ru_utime - used.ru_stime
        if proc.returncode != 0:
            return (
                seconds,
                proc,
                (
                    f"`{_shell(argv)}` exited with status {proc.returncode}\n"
                    f"--- stdout ---\n{proc.stdout.rstrip()}\n--- stderr ---\n{proc.stderr.rstrip()}"
                ),
            )
        return seconds, proc, None

    def timed(
        self, label: str, argv: list[str], stdin: str | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str] | None:
        """Run and record one sample of `label`; after a failure, or once its samples add up to the
        time budget, the command is not run again at this size."""
        series = self.series.setdefault(label, Series())
        if series.failure or series.over_budget:
            return None
        if sum(series.samples) >= self.budget:
            series.over_budget = True
            self.log(f"{label}: {len(series.samples)} runs used the {self.budget:g} s budget; no more runs")
            return None
        seconds, proc, failure = self.run(argv, stdin, env)
        if failure:
            series.failure = failure
            self.log(f"FAILED: {label}")
            return None
        series.samples.append(seconds)
        series.cpu.append(self.last_cpu)
        return proc

    def untimed(self, argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str] | None:
        _, proc, failure = self.run(argv, env=env)
        if failure:
            self.notes.append(f"untimed warm-up failed: {failure}")
            return None
        return proc

    # -- the benchmark ------------------------------------------------------------------------

    def setup(self, tmp: Path) -> None:
        self.repo = tmp / "checkout"  # the folder name is the project scope: project::checkout
        self.home = tmp / "home"
        self.repo.mkdir()
        git = ["git", "-C", str(self.repo)]
        for argv in (
            ["git", "init", "-q", "-b", "main", str(self.repo)],
            [*git, "remote", "add", "origin", ORIGIN],
            [
                *git,
                "-c",
                "user.name=hivelore bench",
                "-c",
                "user.email=bench@example.invalid",
                "-c",
                "commit.gpgsign=false",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "bench",
            ],
        ):
            subprocess.run(argv, check=True, capture_output=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("HIVELORE_")}
        self.env["HIVELORE_HOME"] = str(self.home)

    def execute(self) -> SizeResult:
        tmp = Path(tempfile.mkdtemp(prefix=f"hivelore-bench-{self.size}-"))
        try:
            self.setup(tmp)
            self.log("generating the store…")
            stats = synth.generate(self.home, self.size, self.seed)
            chain = sum(stats.per_scope[s] for s in synth.CHAIN)
            self.notes.append(
                f"store: {self.size:,} files ({chain:,} in the chain {' → '.join(synth.CHAIN)}), "
                f"{_folder_mb(self.home):.1f} MB, generated in {stats.seconds:.1f} s"
            )
            self.log("index rebuild (setup)…")
            proc = self.timed(REBUILD_FIRST, [self.hivelore, "index", "rebuild"])
            if proc is not None:
                self.notes.append(f"setup rebuild said: {proc.stdout.strip()}")
            if not self.searches_only:
                self.imports(tmp)
            if self.baseline:
                self.baseline_home(tmp)
            words = common_words(self.home / "index.db", 3)
            self.queries = [ISSUE_QUERY, *(" ".join(words[:n]) for n in range(1, len(words) + 1)), PASTED]
            self.notes.append(f"the store's most common words, stop words left out: {', '.join(words)}")
            self.warm_up()
            self.start_hook_server()
            repo_keys = stats.keys.get(REPO_ADDRESS, [])
            update_key = repo_keys[len(repo_keys) // 2] if repo_keys else "bench-update"
            for round_no in range(self.runs):
                self.log(f"round {round_no + 1} of {self.runs}")
                self.round(round_no, update_key, rebuild=round_no < self.rebuild_runs)
            status = self.untimed([self.hivelore, "hook-server", "status"])
            self.notes.append(f"hook server: {status.stdout.strip() if status else '?'}")
            self.untimed([self.hivelore, "hook-server", "stop"])
            db = self.home / "index.db"
            if db.exists():
                self.notes.append(f"index.db: {db.stat().st_size / 1e6:.1f} MB")
            return SizeResult(self.size, self.series, self.notes)
        finally:
            if self.keep:
                self.log(f"kept {tmp}")
            else:
                shutil.rmtree(tmp, ignore_errors=True)

    def imports(self, tmp: Path) -> None:
        """The store exported, then imported into a fresh home and imported again: the bulk write
        path, each record checked by the guard. One run from 20,000 memories up (a run takes a while)."""
        jsonl = tmp / "export.jsonl"
        self.log("export (untimed)…")
        if self.untimed([self.hivelore, "export", "--include-hidden", "--output", str(jsonl)]) is None:
            return
        for run in range(self.runs if self.size < 20_000 else 1):
            target = tmp / f"import-home-{run}"
            env = {**self.env, "HIVELORE_HOME": str(target)}
            self.log(f"import {run + 1}…")
            proc = self.timed(IMPORT, [self.hivelore, "import", str(jsonl)], env=env)
            if proc is not None and run == 0:
                self.notes.append(f"import said: {proc.stdout.strip()}")
            proc = self.timed(IMPORT_AGAIN, [self.hivelore, "import", str(jsonl)], env=env)
            if proc is not None and run == 0:
                self.notes.append(f"import again said: {proc.stdout.strip()}")
            shutil.rmtree(target, ignore_errors=True)

    def warm_up(self) -> None:
        """An untimed search: bytecode and OS caches warm, plus a sanity check of what search finds."""
        started = time.perf_counter()
        proc = self.untimed([self.hivelore, "search", QUERY, "--json"])
        if proc is not None:
            hits = json.loads(proc.stdout or "[]")
            top = f"; best: {hits[0]['scope']}::{hits[0]['key']}" if hits else ""
            took = f" (first read after the rebuild, untimed run: {time.perf_counter() - started:.2f} s)"
            self.notes.append(f'search "{QUERY}": {len(hits)} hits{top}{took}')
        for query in self.queries:  # each query's first run, and the baseline's, untimed as well
            self.untimed([self.hivelore, "search", query])
            if self.baseline:
                self.untimed([self.hivelore, "search", query], self.before_env)

    def baseline_home(self, tmp: Path) -> None:
        """The same files in a home of the baseline's own, indexed by the baseline (untimed): an index
        is of one schema, and either code would set aside or upgrade the other's."""
        self.before_home = tmp / "home-baseline"
        shutil.copytree(self.home, self.before_home, ignore=shutil.ignore_patterns("index.db*", "run", "logs"))
        self.log("index rebuild of the baseline's copy (untimed)…")
        self.untimed([self.hivelore, "index", "rebuild"], self.before_env)

    @property
    def before_env(self) -> dict[str, str]:
        return {**self.env, "PYTHONPATH": str(self.baseline), "HIVELORE_HOME": str(self.before_home)}

    def start_hook_server(self) -> None:
        """An untimed hook event: answered in its own process, it starts the hook server, which the
        timed hook rows then use (the "no hook server" rows turn it off)."""
        payload = {"session_id": "bench-warm-up", "cwd": str(self.repo), "hook_event_name": "Stop"}
        self.run([*self.hook, "--agent", "claude", "--event", "Stop"], json.dumps(payload))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status = self.untimed([self.hivelore, "hook-server", "status"])
            if status is not None and status.stdout.startswith("running"):
                return
            time.sleep(0.1)
        self.notes.append("the hook server did not start within 30 s: the hook rows ran without it")

    def round(self, round_no: int, update_key: str, rebuild: bool) -> None:
        hl = self.hivelore
        steps: list[tuple[str, Callable[[], list[str]]]] = [
            (BARE, lambda: [sys.executable, "-c", "pass"]),
            (CONTEXT, lambda: [hl, "context"]),
            (SEARCH, lambda: [hl, "search", QUERY]),
            (WRITE_NEW, lambda: [hl, "write", f"{REPO_ADDRESS}::bench-key-{round_no}", _new_value(round_no)]),
            (WRITE_UPDATE, lambda: [hl, "write", f"{REPO_ADDRESS}::{update_key}", _update_value(round_no)]),
            (SEARCH_AFTER_WRITE, lambda: [hl, "search", QUERY]),
        ]
        if self.searches_only:
            steps = steps[:3]
        for label, argv in steps:
            proc = self.timed(label, argv())
            if label == CONTEXT and self.baseline:
                self.timed(variant(CONTEXT, BEFORE), argv(), env=self.before_env)
            if label == CONTEXT and proc is not None and round_no == 0:
                lines = proc.stdout.strip().splitlines()
                summary = f"{len(lines)} lines, {len(proc.stdout):,} chars"
                self.notes.append(f"context: {summary}; {lines[0][:100] if lines else ''}")
        self.searches()
        if self.searches_only:
            return
        self.hooks(round_no)
        if rebuild:
            self.timed(REBUILD, [hl, "index", "rebuild"])
            # A rebuild rewrites the whole index: warm it again, so every round's reads start alike.
            self.untimed([hl, "search", QUERY])

    def searches(self) -> None:
        """Each query with the warm hook server up, then as the plain command (no hook server), then,
        with --baseline, the plain command of the code before."""
        plain = {**self.env, "HIVELORE_HOOK_SERVER": "off"}
        for query in self.queries:
            label, argv = f'hivelore search "{_cut(query)}"', [self.hivelore, "search", query]
            self.timed(label, argv)
            self.timed(variant(label, PLAIN), argv, env=plain)
            if self.baseline:
                self.timed(variant(label, PLAIN, BEFORE), argv, env={**self.before_env, "HIVELORE_HOOK_SERVER": "off"})

    def hooks(self, round_no: int) -> None:
        """The three hooks an agent runs most, each in a new session (so session start has something
        to give and the prompt's lessons were not shown yet), as Claude Code sends them."""
        base = {"cwd": str(self.repo), "transcript_path": "/dev/null", "permission_mode": "default"}
        payloads = {
            HOOK_START: ("SessionStart", {"hook_event_name": "SessionStart", "source": "startup"}),
            HOOK_PROMPT: ("UserPromptSubmit", {"hook_event_name": "UserPromptSubmit", "prompt": PROMPT}),
            HOOK_LONG_PROMPT: ("UserPromptSubmit", {"hook_event_name": "UserPromptSubmit", "prompt": LONG_PROMPT}),
            HOOK_FAILURE: (
                "PostToolUseFailure",
                {
                    "hook_event_name": "PostToolUseFailure",
                    "tool_name": "Bash",
                    "tool_input": {"command": "pnpm test"},
                    "error": FAILURE,
                },
            ),
            # The most frequent events of all: a file read, a shell command that passed.
            HOOK_READ: (
                "PostToolUse",
                {
                    "hook_event_name": "PostToolUse",
                    "tool_name": "Read",
                    "tool_input": {"file_path": str(self.repo / "README.md")},
                    "tool_response": {"type": "text"},
                },
            ),
            HOOK_SHELL: (
                "PostToolUse",
                {
                    "hook_event_name": "PostToolUse",
                    "tool_name": "Bash",
                    "tool_input": {"command": "git status --short"},
                    "tool_response": {"stdout": "", "stderr": "", "interrupted": False},
                },
            ),
        }
        alone = {**self.env, "HIVELORE_HOOK_SERVER": "off"}
        for label, (event, payload) in payloads.items():
            argv = [*self.hook, "--agent", "claude", "--event", event]
            session = {"session_id": f"bench-{self.size}-{round_no}-{label}-alone"}
            self.timed(f"{label} {ALONE.strip()}", argv, json.dumps({**base, **session, **payload}), alone)
            session = {"session_id": f"bench-{self.size}-{round_no}-{label}"}
            proc = self.timed(label, argv, json.dumps({**base, **session, **payload}))
            if proc is not None and round_no == 0 and label in INJECTING:
                said = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"] if proc.stdout else ""
                self.notes.append(f"{label}: {len(said):,} chars; {said.splitlines()[0][:90] if said else '(silent)'}")


def _new_value(i: int) -> str:
    return (
        f"Benchmark lesson {i}: the checkout integration tests need Postgres on 127.0.0.1:5432; "
        "start it with `docker compose up -d db` and wait for `pg_isready` before `pytest -x`."
    )


def _update_value(i: int) -> str:
    return (
        f"Checked again in benchmark run {i}: run `make db-migrate ENV=test` before "
        "`pytest tests/integration`, or the refunds tests fail with a missing relation."
    )


def _cut(text: str, chars: int = 40) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _shell(argv: list[str]) -> str:
    plain = (a.replace("-", "").replace("/", "").replace(":", "").replace(".", "").isalnum() for a in argv)
    return " ".join(a if ok else repr(a) for a, ok in zip(argv, plain, strict=True))


def _folder_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*.md")) / 1e6


# -- the report ----------------------------------------------------------------------------------


def _target(size: int, label: str, median: float, bare: float | None) -> str:
    if size != TARGET_SIZE:
        return "-"
    if label in (CONTEXT, SEARCH, SEARCH_AFTER_WRITE) or label.startswith(("hivelore search", CONTEXT)):
        if bare is None:
            return "n/a"
        return f"{'PASS' if median / bare <= TARGET_RATIO else 'MISS'} (≤ {TARGET_RATIO:g}×)"
    if label in HOOKS:
        if bare is None:
            return "n/a"
        return f"{'PASS' if median / bare <= TARGET_HOOK_RATIO else 'MISS'} (≤ {TARGET_HOOK_RATIO:g}×)"
    if label in (REBUILD, REBUILD_FIRST):
        return f"{'PASS' if median <= TARGET_REBUILD_SECONDS else 'MISS'} (≤ {TARGET_REBUILD_SECONDS:g} s)"
    if label == IMPORT:
        return f"{'PASS' if median <= TARGET_IMPORT_SECONDS else 'MISS'} (≤ {TARGET_IMPORT_SECONDS:g} s)"
    return "-"


def table(results: list[SizeResult]) -> str:
    header = ("size", "command", "runs", "median ms", "min ms", "× bare", "cpu ms", "cpu × bare", "target")
    rows: list[tuple[str, ...]] = []
    for result in results:
        bare_series = result.series.get(BARE)
        bare = statistics.median(bare_series.samples) if bare_series and bare_series.samples else None
        bare_cpu = statistics.median(bare_series.cpu) if bare_series and bare_series.cpu else None
        others = [label for label in result.series if label not in ROW_ORDER]
        for label in (*ROW_ORDER, *others):
            series = result.series.get(label)
            if series is None:
                continue
            if not series.samples:
                rows.append((f"{result.size:,}", label, "0", "FAILED", "-", "-", "-", "-", "-"))
                continue
            median, low = statistics.median(series.samples), min(series.samples)
            ratio = f"{median / bare:.1f}×" if bare else "-"
            cpu = statistics.median(series.cpu)
            failed = " (then FAILED)" if series.failure else " (budget)" if series.over_budget else ""
            rows.append(
                (
                    f"{result.size:,}",
                    shown(label),
                    f"{len(series.samples)}{failed}",
                    f"{median * 1000:,.0f}",
                    f"{low * 1000:,.0f}",
                    ratio,
                    f"{cpu * 1000:,.0f}",
                    f"{cpu / bare_cpu:.1f}×" if bare_cpu else "-",
                    _target(result.size, label, median, bare),
                )
            )
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    right = {0, 2, 3, 4, 5, 6, 7}

    def line(cells: tuple[str, ...]) -> str:
        cells_widths = enumerate(zip(cells, widths, strict=True))
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in cells_widths).rstrip()

    out = [line(header), "  ".join("-" * w for w in widths)]
    previous = None
    for row in rows:
        if previous is not None and row[0] != previous:
            out.append("")
        out.append(line(row))
        previous = row[0]
    return "\n".join(out)


def _libyaml() -> str:
    try:
        import yaml
    except ImportError:
        return "not installed"
    return f"{yaml.__version__}, libyaml {'yes' if getattr(yaml, '__with_libyaml__', False) else 'NO'}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default="600,6000,60000", help="comma-separated store sizes (default 600,6000,60000)"
    )
    parser.add_argument("--runs", type=int, default=7, help="timed runs of each command per size (default 7)")
    parser.add_argument(
        "--rebuild-runs",
        type=int,
        default=None,
        help="timed runs of `index rebuild` besides the setup one (default: --runs, "
        "but at most 2 from 20,000 memories up)",
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the synthetic store (default 1)")
    parser.add_argument(
        "--timeout", type=float, default=900.0, help="seconds before a command counts as failed (default 900)"
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=300.0,
        help="seconds of samples per command and size after which it gets no more runs (default 300)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders for inspection")
    parser.add_argument(
        "--baseline",
        metavar="SRC",
        help="another checkout's src folder: each search and context also runs with PYTHONPATH=SRC, interleaved",
    )
    parser.add_argument(
        "--searches-only", action="store_true", help="only bare Python, context and the searches (no writes, hooks…)"
    )
    args = parser.parse_args(argv)
    try:
        sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        parser.error(f"--sizes must be numbers separated by commas, not {args.sizes!r}")
    if not sizes or min(sizes) <= 0 or args.runs <= 0:
        parser.error("--sizes and --runs must be positive")
    hivelore = Path(sys.executable).parent / "hivelore"
    if not hivelore.exists():
        parser.error(f"{hivelore} does not exist: run this with the Python of hivelore's venv")

    # A regular `pip install` compiles the package's bytecode; an editable one leaves that to the
    # first import, which PYTHONDONTWRITEBYTECODE (set on some machines) forbids. Without this,
    # every timed run would compile hivelore from source.
    package = Path(importlib.util.find_spec("hivelore").origin).parent
    compileall.compile_dir(package, quiet=1)
    if args.baseline:
        baseline = Path(args.baseline).resolve()
        if not (baseline / "hivelore").is_dir():
            parser.error(f"--baseline {args.baseline} holds no hivelore package: give a checkout's src folder")
        compileall.compile_dir(baseline / "hivelore", quiet=1)
        args.baseline = str(baseline)
    try:
        version = metadata.version("hivelore")
    except metadata.PackageNotFoundError:
        version = "unknown"
    started = time.perf_counter()
    results: list[SizeResult] = []
    for size in sizes:
        rebuild_runs = (
            args.rebuild_runs if args.rebuild_runs is not None else (args.runs if size < 20_000 else min(args.runs, 2))
        )
        bench = Bench(
            size,
            args.runs,
            rebuild_runs,
            args.seed,
            args.timeout,
            args.budget,
            args.keep,
            args.baseline,
            args.searches_only,
        )
        results.append(bench.execute())

    print(f"hivelore {version} core benchmark · {datetime.now().astimezone():%Y-%m-%d %H:%M %Z}")
    print(
        f"python {platform.python_version()} ({sys.executable}) · {platform.platform()} · "
        f"{os.cpu_count()} CPUs · SQLite {sqlite3.sqlite_version} · PyYAML {_libyaml()}"
    )
    print(
        f"whole-process wall time; median and min of the runs, interleaved per round; "
        f"× bare = median / median of `python -c pass`; cpu = user + system of the process, median; "
        f"seed {args.seed}; "
        f"a command stops getting runs after {args.budget:g} s of samples (runs marked 'budget')"
    )
    print()
    print(table(results))
    print()
    for result in results:
        for note in result.notes:
            print(f"[{result.size:,}] {note}")
        context = result.series.get(CONTEXT)
        if result.size == 6000 and context and context.samples:
            print(
                f"[6,000] hivelore context {statistics.median(context.samples) * 1000:,.0f} ms vs "
                f"LoreKit's session-start hook ~{LOREKIT_HOOK_MS_AT_6000:,.0f} ms"
            )
    if TARGET_SIZE not in sizes:
        print(
            f"targets (context and search ≤ {TARGET_RATIO:g}× bare Python, hooks ≤ {TARGET_HOOK_RATIO:g}×, "
            f"rebuild ≤ {TARGET_REBUILD_SECONDS:g} s, import ≤ {TARGET_IMPORT_SECONDS:g} s) "
            f"are judged at {TARGET_SIZE:,} memories: "
            "not measured in this run"
        )
    failures = [
        (result.size, label, series.failure)
        for result in results
        for label, series in result.series.items()
        if series.failure
    ]
    for size, label, failure in failures:
        print(f"\n[{size:,}] FAILED: {label}\n{failure}")
    print(f"\ntotal {time.perf_counter() - started:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
