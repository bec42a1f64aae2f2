"""What an import carries: one record per memory (from JSONL or a LoreKit store), each field's
type checked before the service validates it like any write, and the report of what happened."""

from __future__ import annotations

from collections.abc import Mapping

from hivelore.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")  # the kind a field must have
    D = TypeVar("D")  # its default


@record
class ImportReport:
    written: list[str]
    unchanged: list[str]
    rejected: list[str]  # "source: reason"


@record
class ImportRecord:
    """One memory to import, validated by the same rules as a write."""

    source: str  # "file.jsonl:12" or a path, for error messages
    scope: str
    key: str
    value: str
    tags: tuple[str, ...] = ()
    kind: str = "lesson"
    state: str = "committed"
    ttl_days: float | None = None
    created: str | None = None
    updated: str | None = None
    seen_count: int | None = None
    expires_at: str | None = None
    archived_at: str | None = None
    provenance: Mapping[str, str] = {}  # noqa: RUF012 (never mutated)
    cites: Mapping[str, str] = {}  # noqa: RUF012 (never mutated)
    when: str = ""

    @classmethod
    def from_json(cls, data: object, source: str) -> ImportRecord:
        """A record from one parsed JSONL line; ValueError naming the line and field if a type is wrong."""
        if not isinstance(data, dict):
            raise ValueError(f"{source}: each line must be a JSON object with scope, key and value.")

        def field(name: str, kinds: tuple[type[T], ...], default: D) -> T | D:
            value = data.get(name)
            if value is None:
                return default
            if not isinstance(value, kinds) or isinstance(value, bool) and bool not in kinds:
                expected = " or ".join(k.__name__ for k in kinds)
                raise ValueError(f"{source}: '{name}' must be {expected}, not {type(value).__name__}.")
            return value

        for required in ("scope", "key", "value"):
            if not isinstance(data.get(required), str):
                raise ValueError(f"{source}: '{required}' is missing or not a string.")
        tags = field("tags", (list,), [])
        provenance = field("provenance", (dict,), {})
        cites = field("cites", (dict,), {})
        if not all(isinstance(t, str) for t in tags) or not all(isinstance(v, str) for v in provenance.values()):
            raise ValueError(f"{source}: 'tags' and the values of 'provenance' must be strings.")
        if not all(isinstance(v, str) for v in cites.values()):
            raise ValueError(f"{source}: the values of 'cites' must be strings (the cited code's hash, or \"\").")
        return cls(
            source=source,
            scope=data["scope"],
            key=data["key"],
            value=data["value"],
            tags=tuple(tags),
            kind=field("kind", (str,), "lesson"),
            state=field("state", (str,), "committed"),
            ttl_days=field("ttl_days", (int, float), None),
            created=field("created", (str,), None),
            updated=field("updated", (str,), None),
            seen_count=field("seen_count", (int,), None),
            expires_at=field("expires_at", (str,), None),
            archived_at=field("archived_at", (str,), None),
            provenance=provenance,
            cites=cites,
            when=field("when", (str,), ""),
        )
