"""The on-disk format of one memory: YAML frontmatter, then the value as the Markdown body.

Rendering is done here by hand so the field order is fixed and diffs stay small. Parsing reads a
frontmatter exactly as `render` writes it without PyYAML (so a hook that re-reads a file it or
another hivelore wrote never imports it), and anything else with PyYAML, imported on first use,
because people edit these files by hand and may write any valid YAML.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime

from hivelore.errors import BadInput
from hivelore.memory.model import (
    KINDS,
    MAX_SEEN_COUNT,
    PROVENANCE_FIELDS,
    STATES,
    Memory,
    validate_key,
    validate_timestamp,
)
from hivelore.memory.scope import try_parse

_PLAIN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9 ._/:@+-]*$")
_YAML_WORDS = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"}


class FrontmatterError(BadInput):
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
    if memory.cites:  # written only when there are some: files of memories that cite nothing stay as they were
        lines.append("cites:")
        lines.extend(f"  {_scalar(name)}: {_scalar(digest)}" for name, digest in memory.cites.items())
    if memory.when:
        lines.append(f"when: {_scalar(memory.when)}")
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


_RENDERED_FIELDS = ("scope", "key", "kind", "state", "tags", "created", "updated", "seen_count", "expires_at")
# What `_scalar` writes in a double-quoted scalar: JSON's escapes, which mean the same in YAML.
_QUOTED_RE = re.compile(r'^"(?:[^"\\\x00-\x1f]|\\["\\bfnrt]|\\u[0-9a-fA-F]{4})*"$')


def _rendered_scalar(text: str) -> tuple[bool, object]:
    """(True, value) for a scalar exactly as `_scalar` writes it, else (False, None)."""
    if text == "null":
        return True, None
    if text == "0" or (text[:1] in "123456789" and text.isdigit() and text.isascii()):  # not "07": YAML octal
        return True, int(text)
    if text.startswith('"'):
        return (True, json.loads(text)) if _QUOTED_RE.match(text) else (False, None)
    return (True, text) if _scalar(text) == text else (False, None)


def _rendered(head: str) -> dict[str, object] | None:
    """The fields of a frontmatter written by `render`, or None for any other text (PyYAML reads it)."""
    if not head.replace("\n", "").isprintable():  # `_scalar` escapes the rest; YAML breaks lines at some
        return None
    lines = head.split("\n")
    if lines[-1] == "":
        lines.pop()
    data: dict[str, object] = {}
    if lines and lines[-1].startswith("when: "):  # last, and only when there are symptoms (render)
        ok, data["when"] = _rendered_scalar(lines.pop()[len("when: ") :])
        if not ok:
            return None
    for name, line in zip((*_RENDERED_FIELDS, "archived_at"), lines, strict=False):
        label, sep, raw = line.partition(": ")
        if label != name or not sep:
            return None
        if name == "tags":
            tags = _rendered_list(raw)
            if tags is None:
                return None
            data[name] = tags
            continue
        ok, data[name] = _rendered_scalar(raw)
        if not ok:
            return None
    rest = lines[len(_RENDERED_FIELDS) + 1 :]
    cut = rest.index("cites:") if "cites:" in rest else len(rest)
    provenance = _rendered_mapping(rest[:cut], "provenance")
    cites = _rendered_mapping(rest[cut:], "cites") if cut < len(rest) else {}
    if len(data) - ("when" in data) != len(_RENDERED_FIELDS) + 1 or provenance is None or cites is None:
        return None
    data["provenance"] = provenance
    if cut < len(rest):
        data["cites"] = cites
    return data


def _rendered_list(raw: str) -> list[object] | None:
    if not (raw.startswith("[") and raw.endswith("]")):
        return None
    items: list[object] = []
    rest = raw[1:-1]
    while rest:
        if rest.startswith('"'):
            try:
                _, end = json.JSONDecoder().raw_decode(rest)
            except ValueError:
                return None
        else:
            end = rest.find(", ") if ", " in rest else len(rest)
        ok, value = _rendered_scalar(rest[:end])
        rest = rest[end:]
        if not ok or rest == ", " or (rest and not rest.startswith(", ")):
            return None
        items.append(value)
        rest = rest[2:]
    return items


def _rendered_mapping(lines: list[str], field: str) -> dict[str, object] | None:
    """A mapping of plain names to scalars as `render` writes `provenance` and `cites`, else None."""
    if lines == [f"{field}: {{}}"]:
        return {}
    if not lines or lines[0] != f"{field}:" or len(lines) == 1:
        return None
    found: dict[str, object] = {}
    for line in lines[1:]:
        name, sep, raw = line.partition(": ")
        ok, value = _rendered_scalar(raw)
        if not line.startswith("  ") or not sep or not ok or not _PLAIN_RE.match(name[2:]) or name[2:] in found:
            return None
        found[name[2:]] = value
    return found


def _parsed_yaml(head: str) -> object:
    import yaml

    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        return yaml.load(head, Loader=loader) or {}
    except yaml.YAMLError as exc:
        first_line = str(exc).splitlines()[0]
        raise FrontmatterError(f"its frontmatter is not valid YAML ({first_line})") from exc


def parse(text: str, fallback_time: str) -> Memory:
    """Read a memory file's text. `fallback_time` fills a missing created/updated."""
    head, body = _split(text)
    data: object = _rendered(head)
    if data is None:
        data = _parsed_yaml(head)
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
    cites = data.get("cites") or {}
    if not isinstance(cites, dict):
        raise FrontmatterError("'cites' must be a mapping of cited code to its hash")
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
        cites={str(k): "" if v is None else str(v) for k, v in cites.items()},
        when=" ".join(str(data.get("when") or "").split()),
    )
