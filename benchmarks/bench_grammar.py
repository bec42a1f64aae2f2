"""How often the promotion grammar gets a message exactly right, on the promotion vectors in
tests/fixtures/promotion-vectors/ (see SOURCE.md there), and how long it takes per message.

A vector keeps when the lines `candidates(message)` promotes are exactly its expected lines, in order
(an empty list: nothing may be promoted). The keep rate is printed per class and overall, for the dev
part (the grammar was tuned on it) and the held-out part (it was not); the target is >= 95% held out.

    python benchmarks/bench_grammar.py              # both parts, 7 timing rounds
    python benchmarks/bench_grammar.py --misses     # also list every vector that was not kept
    python benchmarks/bench_grammar.py --rounds 3

Figures go to stdout; the exit status is 0 (targets are printed, not gated) unless a vector file is
missing or malformed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from hivelore.profile.grammar import candidates

VECTORS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "promotion-vectors"
PARTS = ("dev", "heldout")
TARGET = 0.95
# Fake credentials are assembled here, not written in the vector files, so that the files do not trip
# secret scanners; a vector names one as <<NAME>>.
FAKE_SECRETS = {
    "GITHUB_TOKEN": "ghp_" + "u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d",
    "OPENAI_KEY": "sk-" + "proj-" + "DL7DxtpYlSXpfKtHF4vUCsMehGAkWvj7FAc9QeWJKY40uvSw",
    "AWS_KEY_ID": "AKIA" + "2OGYBAH6QWERTY7Z",
    "STRIPE_KEY": "sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "SLACK_TOKEN": "xoxb-" + "1029384756-" + "Qw8Er7Ty6Ui5Op4As3Df2Gh1",
}


def load(part: str) -> list[dict]:
    """The vectors of one part, with their <<NAME>> placeholders filled in."""
    vectors = []
    path = VECTORS / f"{part}.jsonl"
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            vector = json.loads(line)
            message = vector["message"]
            for name, secret in FAKE_SECRETS.items():
                message = message.replace(f"<<{name}>>", secret)
            vectors.append({**vector, "message": message, "where": f"{path.name}:{number}"})
        except (ValueError, KeyError) as error:
            sys.exit(f"{path}:{number} is not a vector ({error}): fix the line.")
    return vectors


def kept(vector: dict) -> bool:
    return [candidate.line for candidate in candidates(vector["message"])] == vector["expect"]


def median_time_us(messages: list[str], rounds: int) -> float:
    """Median wall time of one `candidates` call, in microseconds (warm: compiled patterns cached)."""
    for message in messages:
        candidates(message)
    samples = []
    for _ in range(rounds):
        for message in messages:
            started = time.perf_counter()
            candidates(message)
            samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1e6


def report(part: str, vectors: list[dict], show_misses: bool) -> list[str]:
    by_class: dict[str, list[bool]] = defaultdict(list)
    misses = []
    for vector in vectors:
        ok = kept(vector)
        by_class[vector["class"]].append(ok)
        if not ok:
            misses.append(vector)
    print(f"\n{part}: {len(vectors)} vectors")
    for name in sorted(by_class):
        results = by_class[name]
        print(f"  {name:<12} {sum(results):>3}/{len(results):<3} {sum(results) / len(results):6.1%}")
    total = sum(sum(results) for results in by_class.values())
    rate = total / len(vectors)
    print(f"  {'overall':<12} {total:>3}/{len(vectors):<3} {rate:6.1%}   (target >= {TARGET:.0%})")
    if show_misses:
        for vector in misses:
            found = [candidate.line for candidate in candidates(vector["message"])]
            print(f"    miss {vector['where']}: {vector['message']!r} -> {found} (expected {vector['expect']})")
    return [vector["message"] for vector in vectors]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="timing rounds over all vectors (default 7)")
    parser.add_argument("--misses", action="store_true", help="list every vector that was not kept")
    args = parser.parse_args()
    messages = []
    for part in PARTS:
        messages += report(part, load(part), args.misses)
    print(f"\nmedian time per message: {median_time_us(messages, args.rounds):.0f} µs ({args.rounds} rounds)")


if __name__ == "__main__":
    main()
