"""Read Claude Code's memory for ``hivelore import --from claude-code`` (docs/import.md).

Two kinds of files (code.claude.com/docs/en/memory):

* CLAUDE.md instructions: ``<repo>/CLAUDE.md``, ``<repo>/.claude/CLAUDE.md``, ``<repo>/CLAUDE.local.md``
  (the repository's scope) and ``~/.claude/CLAUDE.md`` (global). One memory per section, a lesson
  under a heading that warns, a fact otherwise (common.instruction_sections).
* Auto memory: ``~/.claude/projects/<folder>/memory/`` where ``<folder>`` is the repository's absolute
  path with every character other than a letter or digit turned into ``-``. ``MEMORY.md`` is the
  index Claude loads each session (its link lines are pointers, not memories); each topic file has a
  front matter ``name``, ``description`` and ``type``, mapped by type:

  =========  ========  ==========================================================================
  user       fact      global: who the user is holds in every repository
  feedback   lesson    the repository's scope: how to work here, corrected by the user
  project    fact      the repository's scope
  reference  note      the repository's scope: pointers to outside systems
  (none)     note      the repository's scope: a topic file written before types existed
  =========  ========  ==========================================================================

``CLAUDE_CONFIG_DIR`` moves ``~/.claude`` as it does for Claude Code.
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
    read_markdown,
    read_text,
    sections,
    shown,
    slug,
    text_field,
)
from hivelore.memory.transfer import ImportRecord

SOURCE = "claude-code"
TYPES = {"user": "fact", "feedback": "lesson", "project": "fact", "reference": "note"}
PROJECT_FILES = ("CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md")
_INDEX_LINE_RE = re.compile(r"^\s*[-*]\s*\[[^\]]*\]\([^)]*\.md\)")  # "- [Title](topic.md) — hook"


def config_dir(place: Place) -> Path:
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured).expanduser() if configured else place.home / ".claude"


def memory_dir(place: Place) -> Path:
    """The auto memory folder Claude Code keeps for this repository."""
    folder = re.sub(r"[^A-Za-z0-9]", "-", str(place.repo_root.resolve()))
    return config_dir(place) / "projects" / folder / "memory"


def defaults(place: Place) -> list[Path]:
    """What a bare ``--from claude-code`` reads: the repository's CLAUDE.md files, the user's, and
    this repository's auto memory folder."""
    return [
        *(place.repo_root / name for name in PROJECT_FILES),
        config_dir(place) / "CLAUDE.md",
        memory_dir(place),
    ]


def read(paths: list[Path], place: Place) -> Found:
    for path in paths:
        if path.is_dir() and ((path / "MEMORY.md").exists() or path.name == "memory"):
            yield from _auto_memory(path, place)
        elif path.is_dir():
            for name in PROJECT_FILES:
                if (path / name).is_file():
                    yield from _instructions(path / name, place)
        elif path.is_file():
            yield from _instructions(path, place)


def _instructions(path: Path, place: Place) -> Found:
    user_level = path.resolve() == (config_dir(place) / "CLAUDE.md").resolve()
    scope = "global" if user_level else place.repo_scope
    # The user's file gets its own keys: the same heading in a repository's file must not shadow it.
    prefix = "user-claude-md" if user_level else "claude-local-md" if path.name == "CLAUDE.local.md" else "claude-md"
    yield from instruction_sections(path, SOURCE, prefix, scope, place)


def _auto_memory(folder: Path, place: Place) -> Found:
    index = folder / "MEMORY.md"
    if index.is_file():
        yield from _index_notes(index, place)
    for path in sorted(folder.glob("*.md")):
        if path.name != "MEMORY.md" and not path.name.startswith("."):
            yield _topic(path, place)


def _index_notes(path: Path, place: Place) -> Found:
    """What MEMORY.md says besides its links to topic files (older auto memory kept notes there)."""
    text = read_text(path)
    if isinstance(text, Skip):
        yield text
        return
    kept = "\n".join(line for line in text.split("\n") if not _INDEX_LINE_RE.match(line))
    for section in sections(kept):
        key = "memory-md" + (f"-{slug(section.heading)}" if section.heading else "")
        value = f"{section.heading}\n\n{section.body}" if section.heading else section.body
        where = shown(path, place) + (f"#{section.heading}" if section.heading else "")
        yield ImportRecord(
            source=str(path),
            scope=place.repo_scope,
            key=key,
            value=value,
            tags=(SOURCE,),
            kind="note",
            provenance=origin(SOURCE, where),
        )


def _topic(path: Path, place: Place) -> ImportRecord | Skip:
    markdown = read_markdown(path)
    if isinstance(markdown, Skip):
        return markdown
    fields, body = markdown
    metadata = fields.get("metadata")
    kind_of = text_field(fields, "type") or (text_field(metadata, "type") if isinstance(metadata, dict) else "")
    if kind_of and kind_of not in TYPES:
        return Skip(str(path), f"the type '{kind_of}' is not one of Claude Code's: {', '.join(TYPES)}.")
    description = text_field(fields, "description")
    value = body.strip()
    if description and description not in value:
        value = f"{description}\n\n{value}".strip()
    if not value:
        return Skip(str(path), "the topic file has no text.")
    return ImportRecord(
        source=str(path),
        scope="global" if kind_of == "user" else place.repo_scope,
        key=slug(path.stem),
        value=value,
        tags=(SOURCE, kind_of) if kind_of else (SOURCE,),
        kind=TYPES.get(kind_of, "note"),
        provenance=origin(SOURCE, shown(path, place)),
    )
