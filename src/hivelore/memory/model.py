"""The memory record, its address (`SCOPE::KEY`) and the rules for keys and timestamps."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

from hivelore.errors import BadInput
from hivelore.memory.scope import GRAMMAR, Scope, ScopeError, try_parse
from hivelore.memory.scope import parse as parse_scope
from hivelore.records import record, replace

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from typing import Any

KINDS = ("lesson", "fact", "decision", "note")
STATES = ("staged", "committed")
PROVENANCE_FIELDS = ("agent", "session", "repo", "branch", "commit", "imported_from")

MAX_TTL_DAYS = 36_500
# The tag of the notes hooks keep of a session (hooks.handlers._capture_note): the agent's own words,
# in double quotes after who said them, in which session and when (hooks.handlers.agent_words).
SESSION_NOTE_TAG = "session-note"
MAX_SEEN_COUNT = 10**9  # far above any real count, far below SQLite's integer limit
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


class AddressError(BadInput):
    """A key or `SCOPE::KEY` address that cannot name a memory."""


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def iso_from_epoch(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def epoch_from_iso(text: str) -> float:
    """Seconds since the epoch for an ISO 8601 timestamp (naive ones are taken as UTC)."""
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def validate_key(key: str) -> str:
    """Return the key if it can name a file-backed memory, else raise AddressError."""
    if not key or not key.strip():
        raise AddressError("the key is empty: give the memory a short name like 'tests-need-local-postgres'.")
    if key != key.strip():
        raise AddressError(f"the key '{key}' starts or ends with whitespace: remove it.")
    if "/" in key or "\\" in key:
        raise AddressError(f"the key '{key}' contains a slash: keys name one file, use '-' instead.")
    if ".." in key:
        raise AddressError(f"the key '{key}' contains '..': use another name.")
    if _CONTROL_RE.search(key):
        raise AddressError("the key contains a control character (a newline or tab?): use plain text.")
    return key


def parse_address(text: str) -> tuple[Scope, str]:
    """Split `SCOPE::KEY` at the last `::` whose left part is a valid scope."""
    cut = len(text)
    while (cut := text.rfind("::", 0, cut)) > 0:
        scope = try_parse(text[:cut])
        if scope is not None:
            return scope, validate_key(text[cut + 2 :])
    if "::" not in text:
        raise AddressError(f"'{text}' has no scope: write SCOPE::KEY, where SCOPE is {GRAMMAR}.")
    try:
        parse_scope(text.rsplit("::", 1)[0])
    except ScopeError as exc:
        raise AddressError(f"'{text}' does not start with a valid scope: {exc}") from exc
    raise AddressError(f"'{text}' does not start with a valid scope: SCOPE is {GRAMMAR}.")


def looks_like_address(text: str) -> bool:
    """Whether `text` was meant as SCOPE::KEY (it starts with a scope word), not as a bare key."""
    head = text.split(":", 1)[0].strip().lower()
    return ":" in text and head in {"global", "project", "repo", "branch"}


def validate_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"kind '{kind}' is not one of {', '.join(KINDS)}.")
    return kind


def validate_timestamp(name: str, value: str | None) -> str | None:
    """An optional ISO 8601 timestamp that can be turned into seconds, or ValueError naming the field."""
    if value is None:
        return None
    try:
        epoch_from_iso(str(value))
    except (ValueError, OverflowError, OSError) as exc:
        raise ValueError(f"{name} '{value}' is not an ISO 8601 timestamp like 2026-11-30T10:00:00Z.") from exc
    return value


def validate_ttl_days(ttl_days: float | None) -> float | None:
    """A time to live in days: more than 0, at most a century (and so never infinite or NaN)."""
    if ttl_days is not None and not 0 < ttl_days <= MAX_TTL_DAYS:
        raise ValueError(f"ttl_days must be more than 0 and at most {MAX_TTL_DAYS:,}, not {ttl_days}.")
    return ttl_days


def validate_tags(tags: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    cleaned: list[str] = []
    for tag in tags:
        tag = tag.strip()
        if not tag:
            continue
        if not re.fullmatch(r"[\w.+#-]+", tag):
            raise ValueError(f"tag '{tag}' may hold only letters, digits and . _ + # -.")
        if tag not in cleaned:
            cleaned.append(tag)
    return tuple(cleaned)


@record
class Memory:
    """One memory. A NamedTuple, not a dataclass: on the hook path each dataclass costs a
    measurable share of start-up. Never mutate `provenance` (its default is shared)."""

    scope: Scope
    key: str
    value: str
    kind: str = "lesson"
    state: str = "committed"
    tags: tuple[str, ...] = ()
    created: str = ""
    updated: str = ""
    seen_count: int = 1
    expires_at: str | None = None
    archived_at: str | None = None
    provenance: dict[str, str] = {}  # noqa: RUF012
    # The code the memory cites: a symbol id (`shop/tokens.py::validate_token`) or a file path, each
    # with its hash in the code graph when it was written ("" for a file the graph does not read).
    cites: dict[str, str] = {}  # noqa: RUF012 (never mutated, like provenance)
    when: str = ""  # the symptoms in plain words, as someone hitting this would describe them; indexed with the value

    @property
    def address(self) -> str:
        return f"{self.scope}::{self.key}"

    def is_expired(self, now: float | None = None) -> bool:
        if not self.expires_at:
            return False
        return epoch_from_iso(self.expires_at) <= (time.time() if now is None else now)

    def is_visible(self, now: float | None = None) -> bool:
        """Archived and expired memories stay on disk but are left out of every read."""
        return self.archived_at is None and not self.is_expired(now)

    def evolve(self, **changes: object) -> Memory:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, object]:
        """The JSON shape used by `--json`, export and MCP."""
        return {
            "scope": str(self.scope),
            "key": self.key,
            "value": self.value,
            "kind": self.kind,
            "state": self.state,
            "tags": list(self.tags),
            "created": self.created,
            "updated": self.updated,
            "seen_count": self.seen_count,
            "expires_at": self.expires_at,
            "archived_at": self.archived_at,
            "provenance": dict(self.provenance),
            "cites": dict(self.cites),
            "when": self.when,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Memory:
        """Rebuild a memory from `to_dict` output (trusted: the index stores it)."""
        scope = try_parse(str(data["scope"]))
        if scope is None:
            raise ScopeError(f"'{data['scope']}' is not a valid scope.")
        return cls(
            scope=scope,
            key=str(data["key"]),
            value=str(data["value"]),
            kind=str(data.get("kind", "lesson")),
            state=str(data.get("state", "committed")),
            tags=tuple(data.get("tags") or ()),
            created=str(data["created"]),
            updated=str(data["updated"]),
            seen_count=int(data.get("seen_count", 1)),
            expires_at=data.get("expires_at"),
            archived_at=data.get("archived_at"),
            provenance=dict(data.get("provenance") or {}),
            cites=dict(data.get("cites") or {}),
            when=str(data.get("when") or ""),
        )
