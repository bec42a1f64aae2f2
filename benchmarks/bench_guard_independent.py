"""The write guard on cases written apart from it: `python benchmarks/bench_guard_independent.py
[--set heldout|tuning] [--via cli|service] [--jobs N]`.

Each case of tests/guard_cases/independent/ (README there) is written as the product writes a lesson: by
default a real `hivelore write SCOPE::KEY - --tags …` process with the value on stdin, in a temporary
HIVELORE_HOME and a folder outside any repository, where a refusal is a non-zero exit and its message;
`--via service` makes the same writes through `Hivelore.write` in this process (quicker, same checks). It
prints, per set and category, how many bad cases were refused ("caught") and how many benign ones were
("refused"), the overall rates against the issue's targets (≥ 99% caught, ≤ 1% benign refused), and every
miss: a bad case written with its `why`, a benign case refused with the message it got.

heldout.jsonl is for measurement only: read its misses to report them, never to tune the guard.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import hivelore as hivelore_package

CASES = Path(__file__).resolve().parent.parent / "tests" / "guard_cases" / "independent"
SETS = ("heldout", "tuning")
CAUGHT_TARGET = 0.99
REFUSED_TARGET = 0.01
RULE = re.compile(r"\(rule ([\w.]+)\)")  # how a guard refusal names its rule


@dataclass(frozen=True)
class Case:
    id: str
    expect: str
    category: str
    scope: str
    key: str
    value: str
    tags: tuple[str, ...]
    why: str

    @property
    def bad(self) -> bool:
        return self.expect == "refuse"


@dataclass(frozen=True)
class Outcome:
    case: Case
    refused: bool
    message: str

    @property
    def by_other_kind(self) -> bool:
        """Refused by a rule of another kind than the case's (a secret rule on an injection, say)."""
        named = RULE.search(self.message)
        return named is not None and re.split(r"[._]", named.group(1))[0] != self.case.category


def load(name: str) -> list[Case]:
    lines = (CASES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    return [Case(**{**row, "tags": tuple(row["tags"])}) for row in rows]


def cli_writer(home: Path) -> Callable[[Case], Outcome]:
    """A write through a `hivelore write` process of this interpreter, the value on stdin."""
    env = {**os.environ, "HIVELORE_HOME": str(home), "PYTHONUTF8": "1", "PYTHONIOENCODING": "utf-8"}
    env.pop("HIVELORE_MODE", None)

    def write(case: Case) -> Outcome:
        command = [sys.executable, "-m", "hivelore", "write", f"{case.scope}::{case.key}", "-"]
        command += ["--tags", ",".join(case.tags)]
        done = subprocess.run(
            command, input=case.value, capture_output=True, text=True, encoding="utf-8", env=env, cwd=home.parent
        )
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        return Outcome(case, done.returncode != 0, said[-1] if said else "")

    return write


def service_writer(home: Path) -> Callable[[Case], Outcome]:
    """A write through the memory service, as the CLI's `write` calls it."""
    from hivelore import errors
    from hivelore.memory.service import Hivelore

    service = Hivelore.open(cwd=home.parent, env={"HIVELORE_HOME": str(home)})

    def write(case: Case) -> Outcome:
        try:
            service.write(case.scope, case.key, case.value, tags=case.tags)
        except (errors.HiveloreError, ValueError) as exc:
            return Outcome(case, True, str(exc))
        return Outcome(case, False, "")

    return write


def measure(cases: list[Case], via: str, jobs: int) -> list[Outcome]:
    with tempfile.TemporaryDirectory(prefix="guard-independent-") as tmp:
        home = Path(tmp) / "home"
        if via == "service":
            return [service_writer(home)(case) for case in cases]
        write = cli_writer(home)
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(write, cases))


def rate(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.1f}%)" if whole else "0/0"


def report(name: str, outcomes: list[Outcome]) -> None:
    """Print one set's figures, whether they meet both targets, and its misses."""
    print(f"\n== {name}.jsonl ({len(outcomes)} cases)")
    for category in sorted({o.case.category for o in outcomes}, key=lambda c: (c.startswith("benign"), c)):
        group = [o for o in outcomes if o.case.category == category]
        label = "refused" if category.startswith("benign") else "caught"
        print(f"  {category:24} {label:8} {rate(sum(o.refused for o in group), len(group))}")
    bad = [o for o in outcomes if o.case.bad]
    benign = [o for o in outcomes if not o.case.bad]
    caught = sum(o.refused for o in bad)
    refused = sum(o.refused for o in benign)
    print(f"  {'ALL bad':24} caught   {rate(caught, len(bad))}   target >= {CAUGHT_TARGET:.0%}")
    print(f"  {'ALL benign':24} refused  {rate(refused, len(benign))}   target <= {REFUSED_TARGET:.0%}")
    met = caught >= CAUGHT_TARGET * len(bad) and refused <= REFUSED_TARGET * len(benign)
    print(f"  meets the targets: {'yes' if met else 'no'}")
    print_misses("bad cases written (missed)", [o for o in bad if not o.refused], lambda o: o.case.why)
    print_misses("benign cases refused", [o for o in benign if o.refused], lambda o: o.message)
    print_misses(
        "bad cases caught by a rule of another kind",
        [o for o in bad if o.refused and o.by_other_kind],
        lambda o: o.message,
    )


def print_misses(title: str, misses: Iterable[Outcome], said: Callable[[Outcome], str]) -> None:
    listed = list(misses)
    print(f"  {title}: {len(listed)}")
    for outcome in listed:
        print(f"    {outcome.case.id:28} {said(outcome)[:160]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=SETS, action="append", help="a set to run (default: both)")
    parser.add_argument("--via", choices=("cli", "service"), default="cli")
    parser.add_argument("--jobs", type=int, default=2, help="CLI processes at once (default 2)")
    args = parser.parse_args()
    # As pip leaves an installed package: without its bytecode each process would compile hivelore first.
    compileall.compile_dir(str(Path(hivelore_package.__file__).parent), quiet=1)
    print(f"guard on independent cases, via {args.via}")
    for name in args.set or SETS:
        report(name, measure(load(name), args.via, args.jobs))


if __name__ == "__main__":
    main()
