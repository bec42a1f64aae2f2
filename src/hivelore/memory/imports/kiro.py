"""Read Kiro's steering files for ``hivelore import --from kiro`` (docs/import.md).

Kiro (kiro.dev/docs/steering) keeps steering files as Markdown in ``<repo>/.kiro/steering/*.md`` (the
repository's scope) and ``~/.kiro/steering/*.md`` (global steering, every workspace: global scope).
``product.md``, ``tech.md`` and ``structure.md`` are the foundation files Kiro generates; teams add
their own. A front matter says when Kiro includes the file:

=====================================  ======  ================================================
``inclusion: always`` (or none)        fact    always in context
``inclusion: fileMatch``               fact    with ``fileMatchPattern``; the value starts with
                                               "Applies to files matching: <pattern>"
``inclusion: auto``                    fact    included when its ``description`` matches
``inclusion: manual``                  note    only when referenced with ``#name`` in chat
=====================================  ======  ================================================

One memory per file, keyed ``kiro-<file name>``, tagged ``kiro`` and ``kiro-<inclusion>``.
"""

from __future__ import annotations

from pathlib import Path

from hivelore.memory.imports.common import Found, Place, Skip, origin, read_markdown, shown, slug, text_field
from hivelore.memory.transfer import ImportRecord

SOURCE = "kiro"
INCLUSIONS = {"always": "fact", "filematch": "fact", "auto": "fact", "manual": "note"}


def defaults(place: Place) -> list[Path]:
    return [place.repo_root / ".kiro" / "steering", place.home / ".kiro" / "steering"]


def read(paths: list[Path], place: Place) -> Found:
    user_level = (place.home / ".kiro" / "steering").resolve()
    for path in paths:
        if path.is_dir():
            folder = path / ".kiro" / "steering" if (path / ".kiro" / "steering").is_dir() else path
            scope = "global" if folder.resolve() == user_level else place.repo_scope
            for file in sorted(folder.glob("*.md")):
                yield _steering(file, scope, place)
        elif path.is_file():
            yield _steering(path, "global" if path.resolve().parent == user_level else place.repo_scope, place)


def _steering(path: Path, scope: str, place: Place) -> ImportRecord | Skip:
    markdown = read_markdown(path)
    if isinstance(markdown, Skip):
        return markdown
    fields, body = markdown
    inclusion = text_field(fields, "inclusion") or "always"
    if inclusion.lower() not in INCLUSIONS:
        return Skip(str(path), f"inclusion '{inclusion}' is not one of Kiro's: always, fileMatch, auto, manual.")
    value = body.strip()
    if not value:
        return Skip(str(path), "the steering file has no text below its front matter.")
    pattern = text_field(fields, "fileMatchPattern")
    if inclusion.lower() == "filematch" and pattern:
        value = f"Applies to files matching: {pattern}\n\n{value}"
    return ImportRecord(
        source=str(path),
        scope=scope,
        key=f"kiro-{slug(path.stem)}",
        value=value,
        tags=(SOURCE, f"kiro-{slug(inclusion)}"),
        kind=INCLUSIONS[inclusion.lower()],
        provenance=origin(SOURCE, shown(path, place)),
    )
