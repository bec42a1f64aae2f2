"""Timings of the code graph on real code: full index, incremental re-index of one file, and the
queries the pre-edit hook runs (the conflict check: `within` 3 hops in both directions), blast
radius, shortest path and hot spots.

Each repository is a wheel fetched with `pip download` (into a temporary folder, never installed)
and unpacked there, or a folder given with --paths. The default run indexes requests, flask and
sqlalchemy one by one, then those three with werkzeug, click and django as one repository of about
30,000 symbols, and measures the queries there.

    python benchmarks/bench_graph.py                              # the default run (a few minutes)
    python benchmarks/bench_graph.py --repos requests,flask       # wheels by requirement
    python benchmarks/bench_graph.py --paths ~/src/project        # any checkout, any language
    python benchmarks/bench_graph.py --small                      # this repository's src/: CI smoke
    python benchmarks/bench_graph.py --corpus                     # precision and recall per language

Figures go to stdout; the exit status is 0 unless something failed (targets are printed, not gated).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from hivelore.codegraph import Graph

DEFAULT_REPOS = ["requests", "flask", "sqlalchemy"]
COMBINED = ["requests", "flask", "sqlalchemy", "werkzeug", "click", "django"]
TARGET_CONFLICT_MS = 10.0
HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "tests" / "fixtures" / "callgraph"
LANGUAGES = ["python", "typescript", "javascript", "go", "rust", "java"]


def fetch(requirement: str, into: Path) -> Path:
    """Download a wheel of `requirement` (no dependencies) and unpack its packages under `into`."""
    wheels = into / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-q", "-d", str(wheels)]
        + [requirement],
        check=True,
    )
    name = requirement.split("=")[0].split("<")[0].split(">")[0].strip().lower().replace("-", "_")
    wheel = next(p for p in wheels.iterdir() if p.name.lower().startswith(name + "-"))
    with zipfile.ZipFile(wheel) as archive:
        members = [m for m in archive.namelist() if ".dist-info/" not in m and ".data/" not in m]
        archive.extractall(into / "unpacked" / name, members)
    return into / "unpacked" / name


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def spread(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"median {median_ms(samples):.2f} ms, p95 {p95 * 1000:.2f} ms, max {ordered[-1] * 1000:.2f} ms"


def timed(function, *args, **kwargs):
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - started, result


def corpus(home: Path) -> None:
    """Precision and recall of the call edges against each corpus's hand-written expected.json."""
    print("\n| language | expected | found | correct | precision | recall |\n|---|---|---|---|---|---|")
    totals = [0, 0, 0]
    for language in LANGUAGES:
        expected = {tuple(e) for e in json.loads((CORPUS / language / "expected.json").read_text())["calls"]}
        with Graph.open(str(home), str(CORPUS / language)) as graph:
            graph.index()
            found = {(c["caller"], c["callee"]) for c in graph.export()["calls"]}
        correct = len(expected & found)
        totals = [totals[0] + len(expected), totals[1] + len(found), totals[2] + correct]
        print(f"| {language} | {len(expected)} | {len(found)} | {correct} | {correct / len(found):.3f} |", end="")
        print(f" {correct / len(expected):.3f} |")
        for caller, callee in sorted(found - expected):
            print(f"|   wrong: {caller} → {callee} | | | | | |")
        for caller, callee in sorted(expected - found):
            print(f"|   missed: {caller} → {callee} | | | | | |")
    expected_total, found_total, correct = totals
    print(f"| all | {expected_total} | {found_total} | {correct} | {correct / found_total:.3f} |", end="")
    print(f" {correct / expected_total:.3f} |")


def bench_index(label: str, root: Path, home: Path, files_to_touch: int) -> Graph:
    graph = Graph.open(str(home), str(root))
    stats = graph.index()
    print(f"\n## {label}\n")
    print(f"- files {stats.files}, symbols {stats.symbols}, calls {stats.calls}, skipped {len(stats.skipped)}")
    bands = graph.store.conn.execute(
        "SELECT confidence, count(*) FROM call_edges WHERE repo = ? GROUP BY confidence ORDER BY confidence DESC",
        (graph.root,),
    ).fetchall()
    print("- calls by confidence: " + ", ".join(f"{confidence}: {count}" for confidence, count in bands))
    print(f"- full index: {stats.seconds:.2f} s")
    again = graph.index()
    print(f"- index again, nothing changed: {again.seconds * 1000:.1f} ms")
    sources = [p for p in graph.store.files()]
    rng = random.Random(1)
    sample = rng.sample(sources, min(files_to_touch, len(sources)))
    touch, edit = [], []
    for relative in sample:
        path = root / relative
        original = path.read_bytes()
        try:
            path.write_bytes(original + b"\n")  # whitespace: re-read and re-parsed, nothing touched
            seconds, touched = timed(graph.reindex_file, str(path))
            touch.append(seconds)
            assert touched == [], (relative, touched)
            if relative.endswith(".py"):  # a new function: one symbol touched, its name resolved again
                path.write_bytes(original + b"\n\ndef bench_added_function():\n    return len([])\n")
                seconds, touched = timed(graph.reindex_file, str(path))
                edit.append(seconds)
        finally:
            path.write_bytes(original)
            graph.reindex_file(str(path))
    sizes = sorted(os.path.getsize(root / r) for r in sample)
    print(f"- reindex_file after a whitespace change ({len(touch)} files, median {sizes[len(sizes) // 2]} bytes):")
    print(f"  {spread(touch)}")
    if edit:
        print(f"- reindex_file after adding a function ({len(edit)} Python files): {spread(edit)}")
    return graph


def bench_queries(graph: Graph, runs: int) -> None:
    conn = graph.store.conn
    rows = conn.execute("SELECT key, id FROM symbols WHERE repo = ? AND present = 1", (graph.root,)).fetchall()
    degree = dict(conn.execute("SELECT callee, count(*) FROM calls GROUP BY callee").fetchall())
    rng = random.Random(2)
    ids = [symbol_id for _key, symbol_id in rows]
    randoms = rng.sample(ids, min(runs, len(ids)))
    busiest = [symbol_id for key, symbol_id in sorted(rows, key=lambda r: -degree.get(r[0], 0))[:50]]
    claimed = set(rng.sample(ids, min(20, len(ids))))

    def conflict(symbol_id: str) -> list[str]:
        near = {**graph.within(symbol_id, 3, "callers"), **graph.within(symbol_id, 3, "callees")}
        return [other for other in near if other in claimed]

    print(
        f"\n### queries ({len(ids)} symbols; each figure over {len(randoms)} random symbols, then the 50 most called)\n"
    )
    for label, query in (
        ("conflict check (within 3 hops, callers and callees)", conflict),
        ("blast_radius(hops=3)", graph.blast_radius),
    ):
        for kind, sample in (("random", randoms), ("most called", busiest)):
            samples = [timed(query, s)[0] for s in sample]
            target = ""
            if query is conflict:
                target = " — meets < 10 ms" if median_ms(samples) < TARGET_CONFLICT_MS else " — MISSES < 10 ms"
            print(f"- {label}, {kind}: {spread(samples)}{target}")
    reach = [len(graph.within(s, 3, "callers")) for s in busiest]
    print(f"- callers within 3 hops of the 50 most called: median {statistics.median(reach):.0f}, max {max(reach)}")
    pairs = [(rng.choice(ids), rng.choice(ids)) for _ in range(50)]
    samples = [timed(graph.shortest_path, a, b)[0] for a, b in pairs]
    print(f"- shortest_path between random pairs: {spread(samples)}")
    seconds, spots = timed(graph.hotspots, 20)
    print(f"- hotspots(20), PageRank and betweenness (rustworkx import included): {seconds:.2f} s")
    print(f"  top 3: {', '.join(i for i, _r, _b in spots[:3])}")


def bench_hook_process(graph: Graph, home: Path, runs: int) -> None:
    """The real pre-edit hook as a whole process: `hivelore-hook --agent claude --event PreToolUse`
    with an Edit payload, through the hook server and in its own process, against bare Python.
    Developer dev-b's task has claimed the most called symbol; dev-a edits one of its callers, so
    every timed run finds dev-b's claim one hop away (a new session each run, so each is warned)."""
    compileall.compile_dir(str(HERE.parent / "src"), quiet=1)  # as an installed package has them
    root = Path(graph.root)
    if not (root / ".git").exists():  # the hooks coordinate only inside a git repository
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    pair = graph.store.conn.execute(
        "SELECT e.file, e.line, r.file, r.line FROM calls c JOIN symbols e ON e.key = c.callee"
        " JOIN symbols r ON r.key = c.caller WHERE e.repo = ? AND c.callee IN (SELECT callee FROM calls"
        " GROUP BY callee ORDER BY count(*) DESC LIMIT 1) AND r.file != e.file LIMIT 1",
        (graph.root,),
    ).fetchone()
    if pair is None:
        return
    callee_file, callee_line, caller_file, caller_line = pair
    bin_dir = Path(sys.executable).parent
    launcher = [str(bin_dir / "hivelore-hook")] if (bin_dir / "hivelore-hook").is_file() else [
        str(bin_dir / "hivelore"), "hook"]  # fmt: skip
    argv = [*launcher, "--agent", "claude", "--event", "PreToolUse"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVELORE_")}
    env.update(HIVELORE_HOME=str(home), HIVELORE_DEVELOPER="dev-a")

    def edit(session: str, file: str, line: int) -> str:
        # An agent's Edit names text that occurs once in the file (Claude Code refuses it otherwise):
        # the symbol's first line, and as many after it as that takes (typing overloads repeat `def f(`).
        source = (root / file).read_text(encoding="utf-8")
        lines = source.splitlines()
        end = line
        while source.count("\n".join(lines[line - 1 : end])) > 1 and end < len(lines):
            end += 1
        text = "\n".join(lines[line - 1 : end])
        tool_input = {"file_path": str(root / file), "old_string": text, "new_string": text + "  # edited"}
        return json.dumps({"session_id": session, "cwd": str(root), "hook_event_name": "PreToolUse",
                           "tool_name": "Edit", "tool_input": tool_input})  # fmt: skip

    def hook(session: str, file: str, line: int, **extra: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(argv, input=edit(session, file, line), capture_output=True, text=True,
                              cwd=root, env={**env, **extra})  # fmt: skip
        if proc.returncode or proc.stderr:
            raise SystemExit(f"the pre-edit hook failed: {proc.returncode} {proc.stderr}")
        return proc

    hook("bench-b", callee_file, callee_line, HIVELORE_DEVELOPER="dev-b", HIVELORE_HOOK_SERVER="off")
    hook("bench-a-start", caller_file, caller_line)  # answered in its own process; starts the server
    status = [str(bin_dir / "hivelore"), "hook-server", "status"]
    deadline = time.monotonic() + 30
    while not subprocess.run(status, capture_output=True, text=True, env=env).stdout.startswith("running"):
        if time.monotonic() > deadline:
            raise SystemExit("the hook server did not start within 30 s")
        time.sleep(0.1)
    bare, served, alone, said = [], [], [], ""
    for i in range(runs):
        seconds, _ = timed(subprocess.run, [sys.executable, "-c", "pass"])
        bare.append(seconds)
        seconds, _ = timed(hook, f"bench-a-alone-{i}", caller_file, caller_line, HIVELORE_HOOK_SERVER="off")
        alone.append(seconds)
        seconds, proc = timed(hook, f"bench-a-{i}", caller_file, caller_line)
        served.append(seconds)
        said = said or proc.stdout
    answered = subprocess.run(status, capture_output=True, text=True, env=env).stdout.strip()
    subprocess.run([str(bin_dir / "hivelore"), "hook-server", "stop"], capture_output=True, env=env)
    warning = json.loads(said)["hookSpecificOutput"]["additionalContext"] if said else "(silent)"
    print(f"- the pre-edit hook as a whole process (`{Path(launcher[0]).name}`), {runs} runs, medians: an Edit")
    print(f"  of {caller_file}:{caller_line}, whose callee in {callee_file} dev-b has claimed")
    for label, samples in (("with the hook server", served), ("in its own process (no server)", alone)):
        ratio = statistics.median(samples) / statistics.median(bare)
        print(f"  {label}: {median_ms(samples):.1f} ms against bare python {median_ms(bare):.1f} ms ({ratio:.1f}×)")
    print(f"  it said: {' '.join(warning.split())[:160]}")
    if "dev-b" not in warning:
        print("  NOTE: no warning about dev-b's claim, so the timed runs may not include the whole conflict path")
    print(f"  hook server: {answered}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos", help="comma-separated requirements to fetch as wheels (default: %(default)s)")
    parser.add_argument("--paths", nargs="*", default=[], help="folders to index as they are")
    parser.add_argument("--small", action="store_true", help="only this repository's src/ (a few seconds)")
    parser.add_argument("--corpus", action="store_true", help="precision and recall on tests/fixtures/callgraph")
    parser.add_argument("--no-combined", action="store_true", help="skip the combined ~30,000-symbol repository")
    parser.add_argument("--files", type=int, default=20, help="files re-indexed per repository (default 20)")
    parser.add_argument("--runs", type=int, default=200, help="symbols per query figure (default 200)")
    args = parser.parse_args()
    print("# code graph benchmark\n")
    print(f"python {sys.version.split()[0]} on {sys.platform}, {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        if args.corpus:
            corpus(work / "home")
            return
        if args.small:
            # a copy: the pre-edit hook coordinates the git repository around it, which must be this one
            shutil.copytree(HERE.parent / "src", work / "src", ignore=shutil.ignore_patterns("__pycache__"))
            graph = bench_index("hivelore src/", work / "src", work / "home", min(args.files, 5))
            bench_queries(graph, min(args.runs, 50))
            bench_hook_process(graph, work / "home", 3)
            return
        targets = [(Path(p).name, Path(p).resolve()) for p in args.paths]
        repos = args.repos.split(",") if args.repos else ([] if args.paths else DEFAULT_REPOS)
        for requirement in repos:
            targets.append((requirement, fetch(requirement, work / "fetched")))
        last = None
        for number, (label, root) in enumerate(targets):
            # an unpacked wheel is a folder holding the package: its imports name the package
            last = bench_index(label, root, work / f"home{number}", args.files)
        if not args.no_combined and not args.paths:
            combined = work / "combined"
            for requirement in COMBINED:
                source = work / "fetched" / "unpacked" / requirement
                if not source.exists():
                    source = fetch(requirement, work / "fetched")
                shutil.copytree(source, combined, dirs_exist_ok=True)
            last = bench_index(" + ".join(COMBINED) + " (one repository)", combined, work / "home-combined", args.files)
            bench_queries(last, args.runs)
            bench_hook_process(last, work / "home-combined", 7)
        elif last is not None:
            bench_queries(last, args.runs)


if __name__ == "__main__":
    main()
