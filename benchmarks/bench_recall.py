"""The coding-memory retrieval benchmark: does a search find the lesson that applies, however it is asked?

Lessons (benchmarks/recall/main-*.txt, 302 of them, and heldout.txt, 60 written apart and never used
to choose a weight) each come with three queries: a lexical one (the lesson's own rare words), a
paraphrase that shares no content word with the lesson (checked here, after stop words and a light
stemming; violations are printed), and a vague reference ("that postgres thing again"). Each lesson
also has a "when": the symptoms in plain words, as `memory_write --when` takes them, written by the
same author as the queries (so it flatters them).

The agent's side (recall/agent.txt), written blind by language-model sessions playing the agent:
three symptoms per lesson written from the lesson alone, following memory_write's instruction for
`when` ("as the agent writes"), and, for each paraphrase and vague reference, the query an agent
passes to memory_search following that tool's instruction for `query`, written from the user's
message alone ("as the agent searches": the columns `para→agent` and `vague→agent`). The prompt hook
has only the user's own words: the paraphrase and vague columns are its figures.

The lessons are written into a store among distractors that `synth.py` generates deterministically
from templates and a vocabulary (realistic developer lessons on the same topics: errors, ports,
package managers, services), then every query is run through:

- BM25: `Hivelore.search`, the product's own search path, without the model;
- model: all-MiniLM-L6-v2 (vectors.py) alone, ranking every visible memory by cosine;
- fusion: `Hivelore.search` with the model loaded, i.e. the product's hybrid recall (fusion.py);
- BM25+th and fusion+th: the same with the coding thesaurus (thesaurus.py) widening a query that no
  memory matches whole. The thesaurus is mined from the stored memories (lessons and distractors, as
  the index holds them) when the index is rebuilt, never from the queries;

with the lessons as written (no "when"), with the benchmark's own "when", and with the agent's
(blind). It prints recall@3 and MRR@10 per set and query kind, the model's load time, the median and
p90 time per query, the size of the index and of the vector file. Figures only: nothing is asserted.

Needs the semantic extra (`pip install -e '.[semantic]'`). Usage:

    .venv/bin/python benchmarks/bench_recall.py            # 302 + 60 lessons among 6,000 distractors
    .venv/bin/python benchmarks/bench_recall.py --small    # 16 + 8 lessons among 120: the CI run
    .venv/bin/python benchmarks/bench_recall.py --hook-size 60000 --vectors FILE   # the prompt hook's time
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synth  # noqa: E402

from hivelore.memory import thesaurus, vectors  # noqa: E402
from hivelore.memory.local.frontmatter import render  # noqa: E402
from hivelore.memory.local.vault import Vault  # noqa: E402
from hivelore.memory.model import Memory, iso_from_epoch  # noqa: E402
from hivelore.memory.scope import parse  # noqa: E402
from hivelore.memory.service import Hivelore  # noqa: E402

DATA = Path(__file__).resolve().parent / "recall"
ORIGIN = "git@github.com:acme/checkout.git"
SCOPE = "repo::acme/checkout"
KINDS = ("lexical", "paraphrase", "vague")
# Asked again as the agent searches (recall/agent.txt), under these column names.
AGENT_KINDS = {"paraphrase": "para→agent", "vague": "vague→agent"}
COLUMNS = (*KINDS, *AGENT_KINDS.values())
LIMIT = 10
DAY = 86400.0
# Words that carry no content, for the paraphrase check: English glue, number words and the
# product's own query stop words.
_GLUE = (
    "a about above after again against all also am an and any are as at be because been before being below"
    " between both but by can cannot could did do does doing done down during each few for from further get gets"
    " got had has have having he her here hers him his how i if in into is it its itself just let me more most my"
    " no nor not now of off on once only or other our out over own please same she should so some such than that"
    " the their them then there these they this those through to too under until up us use very was we were what"
    " when where which while who whom why will with would you your yours one two three four five six seven eight"
    " nine ten every s t m ve re ll d don doesn didn isn won can't"
)
STOPWORDS = frozenset(_GLUE.split())
_SUFFIXES = ("ations", "ation", "ingly", "ings", "ing", "edly", "ed", "ies", "es", "s", "ly", "ers", "er")


@dataclass(frozen=True)
class Lesson:
    key: str
    text: str
    when: str
    queries: dict[str, str]  # per column: the user's words (KINDS), then the agent's search (AGENT_KINDS)
    agent_when: str = ""


@dataclass
class Outcome:
    """Where each query's lesson ranked (None: not in the top LIMIT), per set and kind."""

    ranks: dict[tuple[str, str], list[int | None]] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)

    def add(self, group: tuple[str, str], rank: int | None, seconds: float) -> None:
        self.ranks.setdefault(group, []).append(rank)
        self.seconds.append(seconds)


def blocks(path: Path) -> Iterator[list[tuple[str, str]]]:
    """Each blank-line-separated block's `name: value` lines (comments left out)."""
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        lines = [line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith("#")]
        if lines:
            yield [(name, value.strip()) for name, value in lines]


def agent_side() -> dict[str, tuple[str, dict[str, str]]]:
    """Per lesson key, the agent's symptoms (joined as one `when`) and its search per kind."""
    found = {}
    for lines in blocks(DATA / "agent.txt"):
        fields = dict(lines)
        whens = [value for name, value in lines if name == "when"]
        found[fields["key"]] = ("; ".join(whens), {column: fields[kind] for kind, column in AGENT_KINDS.items()})
    return found


def load(path: Path) -> list[Lesson]:
    agent = agent_side()
    lessons = []
    for lines in blocks(path):
        fields = dict(lines)
        if "key" in fields:
            agent_when, searches = agent[fields["key"]]
            queries = {**{kind: fields[kind] for kind in KINDS}, **searches}
            lessons.append(Lesson(fields["key"], fields["lesson"], fields["when"], queries, agent_when))
    return lessons


def stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_words(text: str) -> set[str]:
    return {stem(w) for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS and len(w) > 1}


def shared_words(lesson: Lesson) -> set[str]:
    """The paraphrase's content words that the lesson (its key, its text) also has: should be none."""
    return content_words(lesson.queries["paraphrase"]) & content_words(f"{lesson.key.replace('-', ' ')} {lesson.text}")


def memories(lessons: Sequence[Lesson], whose: str, now: float) -> Iterator[Memory]:
    """The lessons as memories, carrying `whose` symptoms: "none", the benchmark "author"'s or the
    "agent"'s (written blind)."""
    for i, lesson in enumerate(lessons):
        stamp = iso_from_epoch(now - (i * 7919 % 300) * DAY)  # ages spread over ten months, as synth's are
        yield Memory(
            scope=parse(SCOPE),
            key=lesson.key,
            value=lesson.text,
            created=stamp,
            updated=stamp,
            when={"none": "", "author": lesson.when, "agent": lesson.agent_when}[whose],
        )


def make_repo(folder: Path) -> Path:
    repo = folder / "checkout"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    for argv in (
        ["git", "init", "-q", "-b", "main", str(repo)],
        [*git, "remote", "add", "origin", ORIGIN],
        [*git, "-c", "commit.gpgsign=false", "commit", "-q", "--allow-empty", "-m", "bench"],
    ):
        subprocess.run(argv, check=True, capture_output=True)
    return repo


def write_store(home: Path, lessons: Sequence[Lesson], distractors: int, whose: str, now: float) -> None:
    synth.generate(home, distractors, seed=1, now=now)
    vault = Vault(home, "home")
    for memory in memories(lessons, whose, now):
        path = vault.path_for(memory.scope, memory.key)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(memory), encoding="utf-8")


def rank_of(keys: Sequence[str], key: str) -> int | None:
    return keys.index(key) + 1 if key in keys else None


def evaluate(sets: dict[str, list[Lesson]], ask: Callable[[str], list[str]]) -> Outcome:
    outcome = Outcome()
    for name, lessons in sets.items():
        for lesson in lessons:
            for kind in COLUMNS:
                started = time.perf_counter()
                keys = ask(lesson.queries[kind])
                outcome.add((name, kind), rank_of(keys, lesson.key), time.perf_counter() - started)
    return outcome


def recall_at(ranks: list[int | None], n: int) -> float:
    return sum(1 for r in ranks if r is not None and r <= n) / len(ranks)


def mrr(ranks: list[int | None]) -> float:
    return sum(1 / r for r in ranks if r is not None) / len(ranks)


def milliseconds(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"{statistics.median(ordered) * 1000:.1f} / {p90 * 1000:.1f}"


def report(title: str, results: dict[str, Outcome], sets: Sequence[str]) -> None:
    print(f"\n{title}: recall@3 / MRR@10")
    for s in sets:
        header = f"{s:<10}" + "".join(f" | {k:>15}" for k in COLUMNS)
        print(header)
        print("-" * len(header))
        for system, outcome in results.items():
            cells = [outcome.ranks[(s, k)] for k in COLUMNS]
            print(f"{system:<10}" + "".join(f" | {recall_at(r, 3) * 100:>6.1f}% / {mrr(r):.2f}" for r in cells))
    print("ms per query, median / p90: " + ", ".join(f"{s} {milliseconds(o.seconds)}" for s, o in results.items()))


def check_paraphrases(sets: dict[str, list[Lesson]]) -> None:
    for name, lessons in sets.items():
        bad = [(lesson.key, sorted(shared_words(lesson))) for lesson in lessons if shared_words(lesson)]
        near_when = sum(
            1 for lesson in lessons if content_words(lesson.queries["paraphrase"]) & content_words(lesson.when)
        )
        near_agent = sum(
            1 for lesson in lessons if content_words(lesson.queries["paraphrase"]) & content_words(lesson.agent_when)
        )
        print(f"{name}: {len(lessons)} lessons; paraphrases sharing a content word with their lesson: {len(bad)}")
        for key, words in bad:
            print(f"  {key}: {', '.join(words)}")
        print(f"  paraphrases sharing a content word with their lesson's 'when' (same author): {near_when}")
        print(f"  paraphrases sharing a content word with the agent's 'when' (written blind): {near_agent}")


def measure(repo: Path, home: Path, semantic: vectors.Semantic, sets: dict[str, list[Lesson]]) -> dict[str, Outcome]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HIVELORE_")}, "HIVELORE_HOME": str(home)}
    service = Hivelore.open(repo, env=env)
    try:
        started = time.perf_counter()
        service.rebuild_index()
        words = thesaurus.mine_index(service.index_path)  # BM25+th and fusion+th switch the expansion on
        took = time.perf_counter() - started
        print(f"  index rebuilt and thesaurus mined ({words:,} words) in {took:.1f} s", file=sys.stderr)
        visible = service.local.listed(service.scopes)
        started = time.perf_counter()
        computed = semantic.remember([c.memory for c in visible])
        took = time.perf_counter() - started
        print(f"  {computed:,} new vectors in {took:.1f} s ({computed / max(took, 1e-9):.0f}/s)", file=sys.stderr)

        def lexical(expand: bool) -> Callable[[str], list[str]]:
            def ask(query: str) -> list[str]:
                service.expand = expand
                return [hit.row.key for hit in service.search(query, limit=LIMIT)]

            return ask

        def model(query: str) -> list[str]:
            return [c.key for c, _ in semantic.rank(query, visible, LIMIT)]

        def fused(expand: bool) -> Callable[[str], list[str]]:
            def ask(query: str) -> list[str]:
                service.semantic, service.expand = semantic, expand
                try:
                    return [hit.row.key for hit in service.search(query, limit=LIMIT)]
                finally:
                    service.semantic = None

            return ask

        systems = (
            ("BM25", lexical(False)),
            ("BM25+th", lexical(True)),
            ("model", model),
            ("fusion", fused(False)),
            ("fusion+th", fused(True)),
        )
        return {name: evaluate(sets, ask) for name, ask in systems}
    finally:
        service.close()


def run_timed(argv: list[str], env: dict[str, str], cwd: Path, stdin: str = "") -> tuple[float, str]:
    started = time.perf_counter()
    proc = subprocess.run(argv, input=stdin, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:3])}… failed: {proc.stderr.strip()[:500]}")
    return seconds, proc.stdout


FILL_BATCH = 2000  # memories embedded per call when the store's vectors are filled before timing
MODEL_WAIT_S = 1800.0  # the most the hook measurement waits for the hook server to load the model


def stored_memories(home: Path) -> list[Memory]:
    """Every memory file of the home's vault, parsed as the product parses it."""
    vault = Vault(home, "home")
    return [vault.load(path)[0] for path in vault.iter_files()]


def fill_vectors(memories_of: Sequence[Memory], vector_file: Path) -> None:
    """Give every one of these memories its vector in `vector_file`, in batches, with the product's
    own code (`Semantic.remember`: vectors are keyed by their text, so a file filled once serves
    every later run of the same store)."""
    semantic = vectors.Semantic(vector_file)
    started, computed = time.perf_counter(), 0
    try:
        for start in range(0, len(memories_of), FILL_BATCH):
            computed += semantic.remember(memories_of[start : start + FILL_BATCH])
            done, took = min(start + FILL_BATCH, len(memories_of)), time.perf_counter() - started
            print(
                f"  vectors: {done:,} of {len(memories_of):,} checked, {computed:,} computed in {took:.0f} s",
                file=sys.stderr,
            )
    finally:
        semantic.close()


def embedded(vector_file: Path, memories_of: Sequence[Memory]) -> int:
    """How many of these memories have their vector in `vector_file`."""
    hashes = [vectors.text_hash(vectors.memory_text(m)) for m in memories_of]
    found = vectors.VectorFile(vector_file)
    try:
        stored = found.read(set(hashes))
    finally:
        found.close()
    return sum(1 for h in hashes if h in stored)


@dataclass
class HookRun:
    """The processes one hook measurement starts, in its temporary repository and home."""

    repo: Path
    env: dict[str, str]
    hivelore: str
    hook: list[str]

    def run(self, argv: list[str], stdin: str = "", alone: bool = False) -> tuple[float, str]:
        return run_timed(argv, {**self.env, "HIVELORE_HOOK_SERVER": "off"} if alone else self.env, self.repo, stdin)

    def prompt(self, text: str, session: str, alone: bool = False) -> tuple[float, str]:
        import json

        payload = {"hook_event_name": "UserPromptSubmit", "cwd": str(self.repo), "prompt": text, "session_id": session}
        return self.run([*self.hook, "--agent", "claude", "--event", "UserPromptSubmit"], json.dumps(payload), alone)

    def status(self) -> str:
        return self.run([self.hivelore, "hook-server", "status"])[1].strip()


def warm_server(run: HookRun, prompt: str) -> str:
    """Start the hook server, wait until it has loaded the model, and have it rank the store once; its
    status then (which says how many memories a ranking left out for want of a vector)."""
    run.prompt(prompt, "warm-up-0")  # answered alone; it starts the server
    deadline = time.monotonic() + MODEL_WAIT_S
    while "recall by meaning" not in run.status():
        if time.monotonic() > deadline:
            raise SystemExit(f"the hook server did not load the model within {MODEL_WAIT_S:.0f} s")
        time.sleep(1)
    seconds, _ = run.prompt(prompt, "warm-up-1")  # the first ranking lists the store (its vectors read ahead)
    print(f"  the first prompt answered by meaning took {seconds * 1000:.0f} ms (it lists and hashes the store)")
    return run.status()


def hook_log(home: Path) -> list[str]:
    path = home / "logs" / "hooks.log"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def compile_hivelore() -> None:
    """Compile hivelore's modules to bytecode, as pip leaves an installed package: a hook process
    then reads them instead of compiling them. An editable install writes them on first import,
    unless PYTHONDONTWRITEBYTECODE is set (as in some sandboxes and CI images): there every hook
    process compiled the modules it imports from source, about 8 ms that no user's hook pays."""
    import compileall

    import hivelore

    compileall.compile_dir(Path(hivelore.__file__).parent, quiet=1)


def measure_hook(lessons: Sequence[Lesson], size: int, runs: int, vector_file: Path | None) -> None:
    """The prompt hook, as its own process, at `size` memories: answered by the hook server with the
    model loaded (fusion), then, the server stopped, by the hook process alone (lexical), each
    round after a bare Python start. Every memory gets its vector first, in batches (into `vector_file`, reused
    by the next run, or a new one), and the home's vectors.db starts as a copy of it; the rounds
    begin only once the server, having ranked the store, says no memory waits for a vector. Each
    round's prompt is another lesson's paraphrase, so the model embeds a new query every round."""
    import json
    import sqlite3

    bin_dir = Path(sys.executable).parent
    launcher = bin_dir / "hivelore-hook"
    hivelore = str(bin_dir / "hivelore")
    compile_hivelore()
    tmp = Path(tempfile.mkdtemp(prefix="hivelore-recall-hook-"))
    try:
        repo, home = make_repo(tmp), tmp / "home"
        now = time.time() - time.time() % DAY
        write_store(home, lessons, size - len(lessons), "author", now)
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("HIVELORE_")}, "HIVELORE_HOME": str(home)}
        run = HookRun(repo, env, hivelore, [str(launcher)] if launcher.is_file() else [hivelore, "hook"])
        run.run([hivelore, "index", "rebuild"])
        stored = stored_memories(home)
        source = vector_file or tmp / "vectors.db"
        fill_vectors(stored, source)
        with sqlite3.connect(source) as original, sqlite3.connect(home / vectors.VECTORS_FILE) as copy:
            original.backup(copy)  # the backup API: the file may be in use by another run
        have = embedded(home / vectors.VECTORS_FILE, stored)
        print(f"\n{have:,} of {len(stored):,} memory files have their vector in the home's vectors.db")
        prompts = [lesson.queries["paraphrase"] for lesson in lessons]
        state = warm_server(run, prompts[-1])
        print(f"  hook server before the timed rounds: {state}")
        if "waiting for a vector" in state:
            raise SystemExit("the hook server still waits for vectors: the timed rounds would not be valid")
        rows: dict[str, list[float]] = {"bare Python": [], "prompt hook, server with model": []}
        answers: list[str] = []
        load_before, log_before = os.getloadavg()[0], hook_log(home)
        for round_no in range(runs):
            rows["bare Python"].append(run.run([sys.executable, "-c", "pass"])[0])
            seconds, answer = run.prompt(prompts[round_no % len(prompts)], f"timed-{round_no}")
            rows["prompt hook, server with model"].append(seconds)
            answers.append(answer)
        print(f"  server after its rounds: {run.status()}")
        problems = [line for line in hook_log(home)[len(log_before) :] if "hook server" not in line]
        print(f"  problems the hooks logged during them: {len(problems)}" + "".join(f"\n    {p}" for p in problems[:3]))
        run.run([hivelore, "hook-server", "stop"])
        # Apart: a hook process answering alone beside the server once made the server's every later
        # event fail with "events.db cannot be used (disk I/O error)", answered in no time, empty.
        rows["prompt hook alone"] = []
        for round_no in range(runs):
            rows["bare Python"].append(run.run([sys.executable, "-c", "pass"])[0])
            text = prompts[round_no % len(prompts)]
            rows["prompt hook alone"].append(run.prompt(text, f"timed-alone-{round_no}", alone=True)[0])
        bare = statistics.median(rows["bare Python"])
        load = f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
        print(
            f"\nprompt hook at {size:,} memories ({runs} rounds each, a new prompt each, bare Python between; {load})"
        )
        for label, seconds in rows.items():
            median = statistics.median(seconds)
            low = min(seconds) * 1000
            print(f"  {label:<32} median {median * 1000:7.1f} ms  min {low:7.1f} ms  {median / bare:.1f}× bare")
        print(f"  rounds the server answered with lessons: {sum(1 for a in answers if a)} of {runs}")
        said = next((a for a in answers if a), "")
        answer = json.loads(said)["hookSpecificOutput"]["additionalContext"] if said else "(silent)"
        print("  first lessons shown: " + " | ".join(answer.splitlines()[:3]))
    finally:
        subprocess.run(["rm", "-rf", str(tmp)], check=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="16 + 8 lessons among 120 distractors (CI)")
    parser.add_argument("--distractors", type=int, default=None, help="distractor count (default 6,000)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--vectors", type=Path, help="a vector file to reuse between runs (default: a new one)")
    parser.add_argument(
        "--hook-size", type=int, help="only time the prompt hook at this many memories (server with the model vs alone)"
    )
    parser.add_argument("--hook-runs", type=int, default=15, help="timed rounds of --hook-size (default 15)")
    args = parser.parse_args(argv)
    if not vectors.installed():
        print(f"{vectors.EXTRA_MISSING}, then run this again.", file=sys.stderr)
        return 1
    main_set = [lesson for path in sorted(DATA.glob("main-*.txt")) for lesson in load(path)]
    held_out = load(DATA / "heldout.txt")
    distractors = args.distractors if args.distractors is not None else 6000
    if args.small:
        main_set, held_out = main_set[::19][:16], held_out[::7][:8]
        distractors = args.distractors if args.distractors is not None else 120
    if args.hook_size:
        measure_hook(main_set + held_out, args.hook_size, args.hook_runs, args.vectors)
        return 0
    sets = {"main": main_set, "held-out": held_out}
    check_paraphrases(sets)
    print(f"distractors: {distractors:,} generated by synth.py (templates + vocabulary, seed 1)")

    started = time.perf_counter()
    embedder = vectors.Embedder()
    load_s = time.perf_counter() - started
    now = time.time() - time.time() % DAY
    tmp = Path(tempfile.mkdtemp(prefix="hivelore-recall-"))
    vector_file = args.vectors or tmp / "vectors.db"
    semantic = vectors.Semantic(vector_file, embedder)
    index_mb = 0.0
    try:
        repo = make_repo(tmp)
        for whose, title in (
            ("none", "lessons as written (no 'when')"),
            ("author", "lessons with the benchmark's 'when' (same author as the queries)"),
            ("agent", "lessons with the agent's 'when' (three symptoms, written blind)"),
        ):
            home = tmp / f"home-{whose}"
            write_store(home, main_set + held_out, distractors, whose, now)
            print(f"{title}: measuring", file=sys.stderr)
            report(title, measure(repo, home, semantic, sets), list(sets))
            index_mb = max(index_mb, (home / "index.db").stat().st_size / 1e6)
    finally:
        semantic.close()
        vectors_mb = vector_file.stat().st_size / 1e6 if vector_file.exists() else 0.0
        if args.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            subprocess.run(["rm", "-rf", str(tmp)], check=False)
    print(
        f"\nmodel load {load_s:.2f} s · index.db {index_mb:.1f} MB · vectors.db"
        f" {vectors_mb:.1f} MB ({len(main_set) + len(held_out) + distractors:,} memories;"
        " the vector file holds the texts of every store)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
