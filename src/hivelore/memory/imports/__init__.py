"""Readers of the memory other tools keep, for ``hivelore import --from SOURCE [PATH]`` (docs/import.md).

One module per source, named after it, each with ``defaults(place)`` (where the tool keeps its memory
for this repository and this user) and ``read(paths, place)`` (import records and skips). Every record
then goes through ``Hivelore.import_records``: the same checks and guard as any write.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from hivelore.memory.imports.common import Place, Skip
from hivelore.memory.transfer import ImportRecord
from hivelore.records import replace

SOURCES = ("claude-code", "codex", "basic-memory", "claude-mem", "kiro", "lorekit")


def collect(source: str, path: Path | None, place: Place) -> tuple[list[ImportRecord], list[str]]:
    """The records of `source` at `path` (its default locations when None) and a reason for each file
    or entry that cannot be one. ValueError for an unknown source or a `path` that does not exist;
    LookupError when the default locations hold nothing."""
    if source not in SOURCES:
        raise ValueError(f"'{source}' is not a source hivelore imports from: use one of {', '.join(SOURCES)}.")
    reader = importlib.import_module(f"{__name__}.{source.replace('-', '_')}")
    if path is not None and not path.expanduser().exists():
        raise ValueError(f"{path} does not exist: give the file or folder {source} keeps its memory in.")
    paths = [path.expanduser()] if path is not None else reader.defaults(place)
    records: list[ImportRecord] = []
    skipped: list[str] = []
    taken: set[tuple[str, str]] = set()
    for item in reader.read(paths, place):
        if isinstance(item, Skip):
            skipped.append(f"{item.source}: {item.reason}")
            continue
        key = item.key
        while (item.scope, key) in taken:  # two files with one heading (CLAUDE.md and .claude/CLAUDE.md)
            key += "-2"
        taken.add((item.scope, key))
        records.append(replace(item, key=key))
    if not records and not skipped:
        looked = ", ".join(str(p) for p in paths)
        hint = "." if path is not None else ": give its location as PATH."
        raise LookupError(f"found no {source} memory in {looked}{hint}")
    return records, skipped
