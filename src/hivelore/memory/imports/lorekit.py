"""``hivelore import --from lorekit``: a LoreKit store (``~/.lorekit`` and the repository's
``.lorekit/``), read by hivelore.memory.lorekit, as import records. ``--from-lorekit DIR`` is the
same reader."""

from __future__ import annotations

from pathlib import Path

from hivelore.memory.imports.common import Found, Place, Skip
from hivelore.memory.lorekit import LoreKitRecord, LoreKitSkip, read_lorekit
from hivelore.memory.transfer import ImportRecord


def defaults(place: Place) -> list[Path]:
    return [place.home / ".lorekit", place.repo_root / ".lorekit"]


def read(paths: list[Path], place: Place) -> Found:
    for path in paths:
        if path.is_dir():
            yield from records(path)


def records(root: Path) -> Found:
    """The store's lessons as records; FileNotFoundError (at call time) when `root` is not a store."""
    found = read_lorekit(root)
    return (_converted(item) for item in found)


def _converted(item: LoreKitRecord | LoreKitSkip) -> ImportRecord | Skip:
    if isinstance(item, LoreKitSkip):
        return Skip(str(item.source), item.reason)
    return ImportRecord(
        source=str(item.source),
        scope=item.scope,
        key=item.key,
        value=item.value,
        tags=tuple(item.tags),
        kind=item.kind,
        state=item.state,
        created=item.created,
        updated=item.updated,
        seen_count=item.seen_count,
        expires_at=item.expires_at,
        archived_at=item.archived_at,
        provenance=item.provenance,
    )
