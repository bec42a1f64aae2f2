"""Read a basic-memory project for ``hivelore import --from basic-memory`` (docs/import.md).

basic-memory (github.com/basicmachines-co/basic-memory, docs.basicmemory.com) keeps a knowledge base
as Markdown notes, by default under ``~/basic-memory`` (``BASIC_MEMORY_HOME`` moves it), in any
folders. A note has a YAML front matter (``title``, ``type``, ``permalink``, ``tags``) and a body of
free text, ``## Observations`` (``- [category] text #tag``) and ``## Relations``
(``- relation_type [[Other note]]``). Each note becomes one memory:

=============  ==================================================================================
permalink      the key (``/`` becomes ``-``); the note's path without ``.md`` when it has none
type           the kind when it names one of lesson/fact/decision/note, else ``note``
tags           the tags (plus ``basic-memory``)
title          the value's first line when the body does not start with it (notes without a
               front matter are taken as they are)
(body)         the value, observations and relations as written
=============  ==================================================================================

A knowledge base belongs to the user, not to one repository: notes go to the global scope.
"""

from __future__ import annotations

import os
from pathlib import Path

from hivelore.memory.imports.common import (
    Found,
    Place,
    Skip,
    origin,
    read_markdown,
    shown,
    slug,
    tag_list,
    text_field,
)
from hivelore.memory.model import KINDS
from hivelore.memory.transfer import ImportRecord

SOURCE = "basic-memory"


def defaults(place: Place) -> list[Path]:
    configured = os.environ.get("BASIC_MEMORY_HOME")
    return [Path(configured).expanduser() if configured else place.home / "basic-memory"]


def read(paths: list[Path], place: Place) -> Found:
    for root in paths:
        if root.is_file():
            yield _note(root, root.parent, place)
        elif root.is_dir():
            for path in _notes(root):
                yield _note(path, root, place)


def _notes(root: Path) -> list[Path]:
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        found.extend(Path(dirpath, f) for f in filenames if f.endswith(".md") and not f.startswith("."))
    return sorted(found)


def _note(path: Path, root: Path, place: Place) -> ImportRecord | Skip:
    markdown = read_markdown(path)
    if isinstance(markdown, Skip):
        return markdown
    fields, body = markdown
    title = text_field(fields, "title")
    value = body.strip()
    if not value:
        return Skip(str(path), "the note has no text below its front matter.")
    if title and not value.lstrip("# ").startswith(title):
        value = f"{title}\n\n{value}"
    permalink = text_field(fields, "permalink") or path.relative_to(root).with_suffix("").as_posix()
    kind = text_field(fields, "type").lower()
    return ImportRecord(
        source=str(path),
        scope="global",
        key=slug(permalink.replace("/", "-")) or slug(path.stem),
        value=value,
        tags=tuple(tag_list(fields.get("tags")) + [SOURCE]),
        kind=kind if kind in KINDS else "note",
        provenance=origin(SOURCE, shown(path, place)),
    )
