"""The on-disk format of one memory: YAML frontmatter, then the value as the Markdown body.

Rendering is done here by hand so the field order is fixed and diffs stay small; parsing uses
PyYAML (imported on first use, so the hook path never pays for it), because people edit these
files by hand and may write any valid YAML.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime

from hivelore.memory import (
    KINDS,
    MAX_SEEN_COUNT,
    PROVENANCE_FIELDS,
    STATES,
    Memory,
    validate_key,
    validate_timestamp,
)
from hivelore.scope import try_parse

_PLAIN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9 ._/:@+-]*$")
_YAML_WORDS = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"}


class FrontmatterError(ValueError):
    """A memory file that cannot be read; the message names what is wrong."""


def _scalar(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    text = str(value)
    plain = (
        _PLAIN_RE.match(text) and text.lower() not in _YAML_WORDS and ": " not in text and not text.endswith((":", " "))
    )
    if plain:
        return text
    # A JSON string is a YAML double-quoted scalar; YAML refuses raw unprintable characters (line
    # separators, unassigned code points), so those become YAML escapes.
    return "".join(c if c.isprintable() else _escape(c) for c in json.dumps(text, ensure_ascii=False))


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def render(memory: Memory) -> str:
    """The file text for a memory."""
    lines = [
        "---",
        f"scope: {_scalar(str(memory.scope))}",
        f"key: {_scalar(memory.key)}",
        f"kind: {memory.kind}",
        f"state: {memory.state}",
        f"tags: [{', '.join(_scalar(t) for t in memory.tags)}]",
        f"created: {_scalar(memory.created)}",
        f"updated: {_scalar(memory.updated)}",
        f"seen_count: {memory.seen_count}",
        f"expires_at: {_scalar(memory.expires_at)}",
        f"archived_at: {_scalar(memory.archived_at)}",
    ]
    provenance = {k: v for k, v in memory.provenance.items() if v}
    if provenance:
        lines.append("provenance:")
        lines.extend(f"  {name}: {_scalar(value)}" for name, value in provenance.items())
    else:
        lines.append("provenance: {}")
    lines.append("---")
    return "\n".join(lines) + "\n" + memory.value.strip() + "\n"


def _split(text: str) -> tuple[str, str]:
    if not text.startswith("---"):
        raise FrontmatterError("it does not start with a '---' frontmatter block")
    match = re.match(r"^---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)", text, re.S | re.M)
    if not match:
        raise FrontmatterError("its frontmatter block is not closed by a '---' line")
    return match.group(1), text[match.end() :]


def _timestamp(data: dict[str, object], name: str, default: str | None) -> str | None:
    value = data.get(name, default)
    if value is None or value == "":
        return default
    try:
        if isinstance(value, datetime):
            value = value if value.tzinfo else value.replace(tzinfo=UTC)
            value = value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        elif isinstance(value, date):
            value = f"{value.isoformat()}T00:00:00Z"
        return validate_timestamp(name, str(value))
    except (ValueError, OverflowError) as exc:
        shown = value.isoformat() if isinstance(value, date) else value
        raise FrontmatterError(f"'{name}' is not a usable ISO 8601 timestamp: {shown!r}") from exc


def _tags(raw: object) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        return tuple(t.strip() for t in raw.split(",") if t.strip())
    if isinstance(raw, list):
        return tuple(str(t).strip() for t in raw if str(t).strip())
    raise FrontmatterError("'tags' must be a list")


def parse(text: str, fallback_time: str) -> Memory:
    """Read a memory file's text. `fallback_time` fills a missing created/updated."""
    import yaml

    head, body = _split(text)
    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        data = yaml.load(head, Loader=loader) or {}
    except yaml.YAMLError as exc:
        first_line = str(exc).splitlines()[0]
        raise FrontmatterError(f"its frontmatter is not valid YAML ({first_line})") from exc
    if not isinstance(data, dict):
        raise FrontmatterError("its frontmatter is not a mapping of field: value")
    for required in ("scope", "key"):
        if not data.get(required):
            raise FrontmatterError(f"its frontmatter has no '{required}'")
    scope = try_parse(str(data["scope"]))
    if scope is None:
        raise FrontmatterError(f"its scope '{data['scope']}' is not valid")
    try:
        key = validate_key(str(data["key"]))
    except ValueError as exc:
        raise FrontmatterError(str(exc)) from exc
    kind = str(data.get("kind") or "lesson")
    state = str(data.get("state") or "committed")
    if kind not in KINDS:
        raise FrontmatterError(f"its kind '{kind}' is not one of {', '.join(KINDS)}")
    if state not in STATES:
        raise FrontmatterError(f"its state '{state}' is not one of {', '.join(STATES)}")
    try:
        seen = int(data.get("seen_count") or 1)
    except (TypeError, ValueError, OverflowError) as exc:
        raise FrontmatterError("'seen_count' is not a number") from exc
    if not 0 <= seen <= MAX_SEEN_COUNT:
        raise FrontmatterError(f"'seen_count' {seen} is out of range (0 to {MAX_SEEN_COUNT:,})")
    provenance = data.get("provenance") or {}
    if not isinstance(provenance, dict):
        raise FrontmatterError("'provenance' must be a mapping")
    created = _timestamp(data, "created", fallback_time) or fallback_time
    return Memory(
        scope=scope,
        key=key,
        value=body.strip(),
        kind=kind,
        state=state,
        tags=_tags(data.get("tags")),
        created=created,
        updated=_timestamp(data, "updated", created) or created,
        seen_count=seen,
        expires_at=_timestamp(data, "expires_at", None),
        archived_at=_timestamp(data, "archived_at", None),
        provenance={str(k): str(v) for k, v in provenance.items() if k in PROVENANCE_FIELDS and v is not None},
    )
