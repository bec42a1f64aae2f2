"""Read Codex's memory for ``hivelore import --from codex`` (docs/import.md).

* AGENTS.md instructions (developers.openai.com/codex/guides/agents-md): ``<repo>/AGENTS.md`` and
  ``<repo>/AGENTS.override.md`` (the repository's scope), ``~/.codex/AGENTS.md`` and
  ``~/.codex/AGENTS.override.md`` (global). One memory per section, as for CLAUDE.md.
* Memories (developers.openai.com/codex/memories): ``~/.codex/memories/MEMORY.md``, the handbook
  Codex consolidates its memories into (``codex-rs/memories/write/templates/memories/consolidation.md``).
  It is a run of blocks, each opened by ``# Task Group: <name>`` with ``scope:`` and
  ``applies_to: cwd=<folder>; reuse_rule=...`` lines, then ``## Task <n>`` sections (pointers to
  rollout summaries and keywords: routing, not memories) and the consolidated sections imported here:

  ===================================  ======  =====================================================
  ``## User preferences``              fact
  ``## Reusable knowledge``            fact
  ``## Failures and how to do          lesson
  differently``
  any other section but ``## Task``    note
  ===================================  ======  =====================================================

  A block whose ``cwd`` is this repository (or inside it) goes to the repository's scope; another
  folder's block to ``project::<that folder's name>`` (the project scope hivelore gives the folder);
  a block without a cwd to global. A MEMORY.md without Task Group blocks (Codex's first releases
  wrote a free-form registry) gives one note per section, in the repository's scope.
  ``memory_summary.md`` (an index of MEMORY.md), ``raw_memories.md`` and ``rollout_summaries/`` (the
  inputs MEMORY.md is consolidated from) are not read.

``CODEX_HOME`` moves ``~/.codex`` as it does for Codex.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from hivelore.memory.imports.common import (
    Found,
    Place,
    Skip,
    instruction_sections,
    origin,
    read_text,
    sections,
    shown,
    slug,
)
from hivelore.memory.scope import try_parse
from hivelore.memory.transfer import ImportRecord

SOURCE = "codex"
INSTRUCTION_FILES = ("AGENTS.md", "AGENTS.override.md")
SECTION_KINDS = {
    "user preferences": "fact",
    "reusable knowledge": "fact",
    "failures and how to do differently": "lesson",
}
SECTION_KEYS = {
    "user preferences": "preferences",
    "reusable knowledge": "knowledge",
    "failures and how to do differently": "failures",
}
_GROUP_RE = re.compile(r"^#\s+Task Group:\s*(.+?)\s*$")
_CWD_RE = re.compile(r"^applies_to:.*?\bcwd=([^;]+)", re.MULTILINE)
_TASK_RE = re.compile(r"^task\s+\d+\b", re.IGNORECASE)


def codex_home(place: Place) -> Path:
    configured = os.environ.get("CODEX_HOME")
    return Path(configured).expanduser() if configured else place.home / ".codex"


def defaults(place: Place) -> list[Path]:
    """The repository's AGENTS.md files, the user's, and the memories folder."""
    home = codex_home(place)
    return [
        *(place.repo_root / name for name in INSTRUCTION_FILES),
        *(home / name for name in INSTRUCTION_FILES),
        home / "memories",
    ]


def read(paths: list[Path], place: Place) -> Found:
    for path in paths:
        if path.is_dir() and (path / "MEMORY.md").is_file():
            yield from _handbook(path / "MEMORY.md", place)
        elif path.is_dir():
            for name in INSTRUCTION_FILES:
                if (path / name).is_file():
                    yield from _instructions(path / name, place)
        elif path.name == "MEMORY.md":
            yield from _handbook(path, place)
        elif path.is_file():
            yield from _instructions(path, place)


def _instructions(path: Path, place: Place) -> Found:
    user_level = path.resolve().parent == codex_home(place).resolve()
    scope = "global" if user_level else place.repo_scope
    prefix = "agents-override-md" if path.name == "AGENTS.override.md" else "agents-md"
    if user_level:  # the user's file gets its own keys: a repository's same heading must not shadow it
        prefix = f"user-{prefix}"
    yield from instruction_sections(path, SOURCE, prefix, scope, place)


def _handbook(path: Path, place: Place) -> Found:
    text = read_text(path)
    if isinstance(text, Skip):
        yield text
        return
    blocks = _blocks(text)
    if not blocks:  # a handbook from before the Task Group format: its sections, as notes for here
        yield from _plain_handbook(path, text, place)
    for group, body in blocks:
        scope = _block_scope(body, place)
        for section in sections(body):
            name = section.heading.lower().strip()
            if not section.heading or _TASK_RE.match(name):
                continue  # the block's header lines, and the tasks' routing lists
            key = f"codex-{slug(group, 50)}-{SECTION_KEYS.get(name) or slug(name, 30) or 'section'}"
            yield ImportRecord(
                source=f"{path} § {group} / {section.heading}",
                scope=scope,
                key=key,
                value=f"{group}: {section.heading}\n\n{section.body}",
                tags=(SOURCE,),
                kind=SECTION_KINDS.get(name, "note"),
                provenance=origin(SOURCE, f"{shown(path, place)}#{group}"),
            )


def _blocks(text: str) -> list[tuple[str, str]]:
    """(task group name, the block's text below its heading) for each block of MEMORY.md."""
    blocks: list[tuple[str, list[str]]] = []
    for line in text.split("\n"):
        if match := _GROUP_RE.match(line):
            blocks.append((match.group(1), []))
        elif blocks:
            blocks[-1][1].append(line)
    return [(name, "\n".join(lines)) for name, lines in blocks]


def _block_scope(body: str, place: Place) -> str:
    match = _CWD_RE.search(body)
    cwd = match.group(1).strip().strip("`<>") if match else ""
    if not cwd.startswith(("/", "~")):
        return "global"  # no folder, or a family of them ("any repo using pnpm"): applies everywhere
    folder, root = Path(cwd).expanduser().resolve(), place.repo_root.resolve()
    if folder == root or root in folder.parents:
        return place.repo_scope
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", folder.name).strip("-.")
    scope = f"project::{name}"
    return scope if try_parse(scope) is not None else "global"


def _plain_handbook(path: Path, text: str, place: Place) -> Found:
    for section in sections(text):
        name = slug(section.heading, 50) if section.heading else ""
        yield ImportRecord(
            source=f"{path}" + (f" § {section.heading}" if section.heading else ""),
            scope=place.repo_scope,
            key=f"codex-memory-{name}" if name else "codex-memory",
            value=f"{section.heading}\n\n{section.body}" if section.heading else section.body,
            tags=(SOURCE,),
            kind="note",
            provenance=origin(SOURCE, shown(path, place) + (f"#{section.heading}" if section.heading else "")),
        )
