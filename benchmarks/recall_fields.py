"""Which vectors per memory, and which rule over them, find a lesson asked in other words?

An experiment beside bench_recall.py, on the same lessons and distractors (imported from it): one
store whose lessons carry their `when`, each memory embedded field by field, and several scoring
rules ranked over every visible memory: by the model alone, and fused with BM25 through the
product's own `Hivelore.search` (fusion.py's gate and merge). The rules and the fusion weights are
chosen on the main set; the held-out set is printed beside it and never used to choose.

Vectors are computed once per text and kept in `--vectors` (the same file layout as vectors.db, so
bench_recall.py's file can be reused): a run after the first one embeds only the queries.

    .venv/bin/python benchmarks/recall_fields.py --vectors /tmp/fields.db
    .venv/bin/python benchmarks/recall_fields.py --small
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_recall  # noqa: E402
import numpy as np  # noqa: E402

from hivelore.memory import fusion, recall, vectors  # noqa: E402
from hivelore.memory.service import Hivelore  # noqa: E402
from hivelore.memory.tier import Candidate  # noqa: E402

Rule = Callable[[dict[str, "np.ndarray"]], "np.ndarray"]


def title(candidate: Candidate) -> str:
    """The key as words and the value's first sentence."""
    memory = candidate.memory
    first = re.split(r"(?<=[.;!?])\s", memory.value.strip(), maxsplit=1)[0]
    return f"{memory.key.replace('-', ' ').replace('_', ' ')}\n{first}"


def without_when(candidate: Candidate) -> str:
    memory = candidate.memory
    parts = [memory.key.replace("-", " ").replace("_", " "), memory.value, " ".join(memory.tags)]
    return "\n".join(part for part in parts if part)


FIELDS: dict[str, Callable[[Candidate], str]] = {
    "full": lambda c: vectors.memory_text(c.memory),
    "body": without_when,
    "when": lambda c: c.memory.when,
    "title": title,
}


@dataclass
class Field:
    """One field's vectors over the visible memories: a row each, zero where the field is empty."""

    matrix: np.ndarray
    present: np.ndarray


def embed_fields(semantic: vectors.Semantic, visible: Sequence[Candidate]) -> dict[str, Field]:
    texts = {name: [text(c) for c in visible] for name, text in FIELDS.items()}
    wanted = {vectors.text_hash(t): t for column in texts.values() for t in column if t}
    started = time.perf_counter()
    with semantic._lock:
        done = semantic._compute(wanted)
    print(f"  {done:,} new field vectors in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    stored = semantic.file.read(wanted)
    out = {}
    for name, column in texts.items():
        matrix = np.zeros((len(visible), vectors.DIMENSIONS), dtype=np.float32)
        present = np.zeros(len(visible), dtype=bool)
        for row, text in enumerate(column):
            if text:
                matrix[row] = np.frombuffer(stored[vectors.text_hash(text)], dtype=np.float16)
                present[row] = True
        out[name] = Field(matrix, present)
    return out


def rules() -> dict[str, Rule]:
    """Scoring rules over each field's cosines (a row per memory); a missing field scores -1."""
    found: dict[str, Rule] = {
        "full (today)": lambda s: s["full"],
        "body": lambda s: s["body"],
        "max(full, when)": lambda s: np.maximum(s["full"], s["when"]),
        "max(body, when)": lambda s: np.maximum(s["body"], s["when"]),
        "max(full, title)": lambda s: np.maximum(s["full"], s["title"]),
        "max(body, title)": lambda s: np.maximum(s["body"], s["title"]),
        # A control: every memory gets a short second vector (a distractor, having no `when`, its title).
        "max(full, when or title)": lambda s: np.maximum(s["full"], np.where(s["when"] > -1, s["when"], s["title"])),
        "max(full, when, title)": lambda s: np.maximum.reduce([s["full"], s["when"], s["title"]]),
    }
    for w in (0.9, 0.95, 1.05, 1.1):
        found[f"max(full, {w}·when)"] = lambda s, w=w: np.maximum(s["full"], w * s["when"])
    for a in (0.3, 0.5, 0.7):
        found[f"full + {a}·max(0, when-full)"] = lambda s, a=a: s["full"] + a * np.maximum(0, s["when"] - s["full"])
        found[f"{a}·full + {1 - a:.1f}·when|full"] = lambda s, a=a: np.where(
            s["when"] > -1, a * s["full"] + (1 - a) * s["when"], s["full"]
        )
    return found


class Ranker:
    """Stands in for `vectors.Semantic` in `Hivelore.search`: ranks by one rule over the field vectors."""

    def __init__(self, listed: list[Candidate], fields: dict[str, Field], queries: dict[str, np.ndarray]) -> None:
        self.listed, self.fields, self.queries = listed, fields, queries
        self.rule: Rule = rules()["full (today)"]

    def visible(self, key: object, listing: object) -> list[Candidate]:
        return self.listed

    def scores(self, query: str) -> np.ndarray:
        vector = self.queries[query]
        cosines = {name: np.where(f.present, f.matrix @ vector, -1.0) for name, f in self.fields.items()}
        return self.rule(cosines)

    def rank(self, query: str, candidates: Sequence[Candidate], limit: int) -> list[tuple[Candidate, float]]:
        score = self.scores(query)
        top = np.argsort(-score, kind="stable")[:limit]
        return [(self.listed[i], float(score[i])) for i in top if score[i] >= vectors.MIN_SIMILARITY]


def glue_stripped(query: str) -> str:
    """The query's keywords only (recall.py's stop words out): the agent's conversational glue gone."""
    return " ".join(recall.keywords(query)) or query


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="16 + 8 lessons among 120 distractors")
    parser.add_argument("--vectors", type=Path, help="a vector file to reuse between runs")
    parser.add_argument("--fusion", default="", help="comma-separated rules to fuse (default: the best three on main)")
    args = parser.parse_args(argv)
    main_set = [lesson for path in sorted(bench_recall.DATA.glob("main-*.txt")) for lesson in bench_recall.load(path)]
    held_out = bench_recall.load(bench_recall.DATA / "heldout.txt")
    distractors = 6000
    if args.small:
        main_set, held_out, distractors = main_set[::19][:16], held_out[::7][:8], 120
    sets = {"main": main_set, "held-out": held_out}
    tmp = Path(tempfile.mkdtemp(prefix="hivelore-fields-"))
    semantic = vectors.Semantic(args.vectors or tmp / "vectors.db", vectors.Embedder())
    try:
        repo, home = bench_recall.make_repo(tmp), tmp / "home"
        bench_recall.write_store(home, main_set + held_out, distractors, "author", time.time() - time.time() % 86400)
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("HIVELORE_")}, "HIVELORE_HOME": str(home)}
        service = Hivelore.open(repo, env=env)
        service.rebuild_index()
        visible = service.local.listed(service.scopes)
        fields = embed_fields(semantic, visible)
        asked = [lesson.queries[k] for lesson in main_set + held_out for k in bench_recall.KINDS]
        texts = sorted(set(asked) | {glue_stripped(q) for q in asked})
        queries = dict(zip(texts, semantic.embedder.embed(texts), strict=True))
        ranker = Ranker(visible, fields, queries)

        def model(strip: bool) -> Callable[[str], list[str]]:
            return lambda q: [c.key for c, _ in ranker.rank(glue_stripped(q) if strip else q, visible, 10)]

        results = {}
        for name, rule in rules().items():
            ranker.rule = rule
            results[name] = bench_recall.evaluate(sets, model(False))
        ranker.rule = rules()["max(full, when)"]
        results["max(full, when), glue out"] = bench_recall.evaluate(sets, model(True))
        bench_recall.report("model alone, lessons with their 'when'", results, list(sets))

        def paraphrase(name: str) -> float:
            return bench_recall.recall_at(results[name].ranks[("main", "paraphrase")], 3)

        chosen = args.fusion.split(",") if args.fusion else sorted(rules(), key=paraphrase, reverse=True)[:3]
        chosen = list(dict.fromkeys(["full (today)", *chosen]))
        service.semantic = ranker  # type: ignore[assignment]
        fused: dict[str, bench_recall.Outcome] = {}
        grid = [(fusion.RRF_K, fusion.LEXICAL_WEIGHT)]  # today's weights for every rule, then a grid for the best
        for name in chosen:
            for k, weight in grid + ([(5.0, 0.1), (10.0, 0.25), (10.0, 0.1), (5.0, 0.5)] if name == chosen[1] else []):
                ranker.rule, fusion.RRF_K, fusion.LEXICAL_WEIGHT = rules()[name], k, weight
                fused[f"{name} k{k:g} w{weight}"] = bench_recall.evaluate(
                    sets, lambda q: [h.row.key for h in service.search(q, limit=10)]
                )
        bench_recall.report("fusion (Hivelore.search), lessons with their 'when'", fused, list(sets))
        service.close()
    finally:
        semantic.close()
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
