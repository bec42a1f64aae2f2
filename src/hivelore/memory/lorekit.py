"""Read a LoreKit store (``~/.lorekit`` or a repo's ``.lorekit/``) for ``hivelore import --from-lorekit``.

LoreKit (github.com/mthines/lorekit, ``packages/cli/src/store/format.mjs`` and ``local.mjs``) keeps its
offline lessons as one Markdown file per scope+key::

    <store>/global/<slug>.md
    <store>/project/<name>/<slug>.md
    <store>/repo/<owner>/<repo>/<slug>.md
    <store>/branch/<owner>/<repo>/<branch parts...>/<slug>.md
    <store>/_other/<sanitised scope>/<slug>.md        (scopes LoreKit could not place)

``<slug>`` is the key lower-cased with runs of other characters turned into ``-`` (``-2``, ``-3`` on a
clash); the key and scope in the frontmatter are authoritative, never the path. The home store also
holds ``config.json``, ``completions/`` and a ``web/`` bundle; only the five scope folders are read.

A file is a ``---`` block of ``name: <JSON value>`` lines, then the lesson body (LoreKit's ``value``)::

    ---
    scope: "repo::mthines/gw-tools"
    key: "aw-lessons::worktree-naming"
    tags: ["skill::aw", "source::stuck-loop"]
    source_agent: "aw-executor"
    trigger: "stuck-loop"
    created: "2026-07-24T10:00:00.000Z"
    updated: "2026-07-24T10:00:00.000Z"
    archived_at: null
    origin_repo: "mthines/gw-tools"
    origin_branch: "feat/x"
    origin_commit: "a1b2c3d"
    origin_pr: 482
    expires_at: null
    seen_count: null
    ---
    Always use the branch name as the worktree directory name.

Files written by older LoreKit releases carry only the first eight fields; the rest read as absent.

The 14 fields and where they go:

=============  ==================================================================================
scope          ``scope``: same four forms as hivelore; the type word is lower-cased and the result
               must parse with :func:`hivelore.memory.scope.try_parse`, else the file is skipped
key            ``key``: trimmed; ``/`` and ``\\`` become ``-`` (a hivelore key names one file)
tags           ``tags``: each run of characters outside ``[A-Za-z0-9_.+#-]`` becomes ``-``, so
               ``skill::aw`` becomes ``skill-aw``; empty and duplicate tags are dropped
source_agent   ``provenance["agent"]``
trigger        dropped: why the lesson was written (``stuck-loop``, ``manual``...) has no equivalent
created        ``created``  (ISO 8601 or unix epoch seconds/milliseconds -> ``YYYY-MM-DDTHH:MM:SSZ``)
updated        ``updated``  (same normalisation)
archived_at    ``archived_at`` (same normalisation)
origin_repo    ``provenance["repo"]``
origin_branch  ``provenance["branch"]``
origin_commit  ``provenance["commit"]``
origin_pr      dropped: hivelore provenance has no pull-request field
expires_at     ``expires_at`` (same normalisation; past dates are kept, the caller decides)
seen_count     ``seen_count``: LoreKit writes ``null`` locally and ``0`` means "unknown", so anything
               below 1 becomes 1
(body)         ``value``: leading and trailing blank lines removed; an empty body is skipped
=============  ==================================================================================

Every record also gets ``kind="lesson"`` (LoreKit's local files have no kind; a non-standard ``kind``
field naming one of lesson/fact/decision/note is honoured), ``state="committed"`` (LoreKit has no
staging: a stored lesson is live) and ``provenance["imported_from"] = "lorekit"``. Other unknown
fields are ignored, as LoreKit itself ignores them.

This reader is stricter than LoreKit's, which falls back to the raw text for a value that is not
JSON: here such a file is skipped with a reason naming the field, so nothing is imported half-read.
Secrets are not checked here; the importer's caller runs the guard over every field of each record,
provenance (``source_agent``, ``origin_*``) included.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from hivelore.memory.scope import try_parse
from hivelore.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["LoreKitRecord", "LoreKitSkip", "read_lorekit"]

SCOPE_FOLDERS = ("global", "project", "repo", "branch", "_other")
KINDS = ("lesson", "fact", "decision", "note")
LOREKIT_SCOPE_FORMS = "global, project::NAME, repo::OWNER/REPO or branch::OWNER/REPO::BRANCH"

_FIELD_LINE_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*:(.*)$")
_TAG_BAD_RE = re.compile(r"[^\w.+#-]+")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
_EPOCH_TEXT_RE = re.compile(r"^-?\d+(\.\d+)?$")
_MS_THRESHOLD = 1e11  # above this an epoch number is milliseconds (1e11 s is the year 5138)


@record
class LoreKitRecord:
    source: Path
    scope: str
    key: str
    value: str
    tags: list[str]
    kind: str
    state: str
    created: str | None
    updated: str | None
    seen_count: int
    expires_at: str | None
    archived_at: str | None
    provenance: dict[str, str]


@record
class LoreKitSkip:
    source: Path
    reason: str


class _Bad(Exception):
    """One file cannot be imported; the message is the skip reason."""


def read_lorekit(root: Path) -> Iterator[LoreKitRecord | LoreKitSkip]:
    """Yield one record or skip per lesson file under ``root``: folder by folder (global, project, repo,
    branch, _other), in path order within each.

    Raises FileNotFoundError (at call time, not on first iteration) when ``root`` does not exist or
    does not look like a LoreKit store. A bad file never raises: it yields a LoreKitSkip.
    """
    root = Path(root).expanduser()
    if not root.exists():
        raise FileNotFoundError(f"No LoreKit store at {root}: the folder does not exist.")
    if not root.is_dir():
        raise FileNotFoundError(f"No LoreKit store at {root}: it is a file, not a folder.")
    folders = [root / name for name in SCOPE_FOLDERS if (root / name).is_dir()]
    if not folders and root.name != ".lorekit":
        raise FileNotFoundError(
            f"No LoreKit store at {root}: it has none of the folders LoreKit keeps lessons in "
            f"({', '.join(SCOPE_FOLDERS)}). Point at ~/.lorekit or a repository's .lorekit folder."
        )
    return _walk(folders)


def _walk(folders: list[Path]) -> Iterator[LoreKitRecord | LoreKitSkip]:
    for folder in folders:
        for path in _lesson_files(folder):
            yield _read_file(path)


def _lesson_files(folder: Path) -> list[Path]:
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        found.extend(Path(dirpath, f) for f in filenames if f.endswith(".md") and not f.startswith("."))
    return sorted(found)


def _read_file(path: Path) -> LoreKitRecord | LoreKitSkip:
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return LoreKitSkip(path, "The file is not UTF-8 text.")
    except OSError as exc:
        return LoreKitSkip(path, f"The file could not be read ({exc.strerror or exc}).")
    try:
        fields, body = _split(text)
        return _translate(path, fields, body)
    except _Bad as exc:
        return LoreKitSkip(path, str(exc))


def _split(text: str) -> tuple[dict[str, Any], str]:
    """The decoded frontmatter fields and the body of one LoreKit file."""
    lines = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if not lines or lines[0].strip() != "---":
        raise _Bad("The file does not start with a '---' frontmatter block, so it is not a LoreKit lesson.")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise _Bad("The frontmatter block opened on line 1 is never closed by a '---' line.") from None
    fields: dict[str, Any] = {}
    for number, line in enumerate(lines[1:end], start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _FIELD_LINE_RE.match(line.strip())
        if match is None:
            shown = line.strip()
            raise _Bad(f"Frontmatter line {number} is not of the form 'name: <JSON value>': {shown!r}.")
        name, raw = match.group(1), match.group(2).strip()
        if name in fields:
            raise _Bad(f"The field '{name}' appears twice in the frontmatter (again on line {number}).")
        fields[name] = _decode(name, raw, number)
    return fields, "\n".join(lines[end + 1 :])


def _decode(name: str, raw: str, number: int) -> Any:
    if raw == "":
        return None  # LoreKit reads an empty value as null
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, _Bad):
        raise _Bad(f"The value of '{name}' on line {number} is not valid JSON: {raw!r}.") from None
    if isinstance(value, dict):
        raise _Bad(f"The value of '{name}' on line {number} is a JSON object, not a scalar or a list.")
    return value


def _reject_constant(token: str) -> Any:
    raise _Bad(token)


def _translate(path: Path, fields: dict[str, Any], body: str) -> LoreKitRecord:
    scope = _scope(fields.get("scope"))
    key = _key(fields.get("key"))
    value = body.strip("\n")
    if not value.strip():
        raise _Bad("The lesson body after the frontmatter is empty.")
    provenance = {"imported_from": "lorekit"}
    for source, target in (
        ("source_agent", "agent"),
        ("origin_repo", "repo"),
        ("origin_branch", "branch"),
        ("origin_commit", "commit"),
    ):
        text = _optional_text(source, fields.get(source))
        if text is not None:
            provenance[target] = text
    kind = fields.get("kind")
    return LoreKitRecord(
        source=path,
        scope=scope,
        key=key,
        value=value,
        tags=_tags(fields.get("tags")),
        kind=kind if kind in KINDS else "lesson",
        state="committed",
        created=_timestamp("created", fields.get("created")),
        updated=_timestamp("updated", fields.get("updated")),
        seen_count=_seen_count(fields.get("seen_count")),
        expires_at=_timestamp("expires_at", fields.get("expires_at")),
        archived_at=_timestamp("archived_at", fields.get("archived_at")),
        provenance=dict(sorted(provenance.items())),
    )


def _scope(raw: Any) -> str:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        raise _Bad("The required field 'scope' is missing or empty.")
    if not isinstance(raw, str):
        raise _Bad(f"The field 'scope' must be a JSON string, not {json.dumps(raw)}.")
    parts = [part.strip() for part in raw.strip().split("::")]
    parts[0] = parts[0].lower()
    parsed = try_parse("::".join(parts))
    if parsed is None:
        raise _Bad(f"The scope {raw!r} is not one of the forms hivelore can import: {LOREKIT_SCOPE_FORMS}.")
    return str(parsed)


def _key(raw: Any) -> str:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        raise _Bad("The required field 'key' is missing or empty.")
    if not isinstance(raw, str):
        raise _Bad(f"The field 'key' must be a JSON string, not {json.dumps(raw)}.")
    key = raw.strip().replace("/", "-").replace("\\", "-")
    if _CONTROL_RE.search(key):
        raise _Bad(f"The key {raw!r} contains a control character (a newline or tab).")
    if ".." in key:
        raise _Bad(f"The key {raw!r} contains '..', which cannot name a hivelore memory.")
    return key


def _tags(raw: Any) -> list[str]:
    if raw is None:
        return []
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not all(isinstance(t, str) for t in items):
        raise _Bad(f"The field 'tags' must be a JSON list of strings, not {json.dumps(raw)}.")
    tags: list[str] = []
    for item in items:
        tag = _TAG_BAD_RE.sub("-", item.strip()).strip("-")
        if tag and tag not in tags:
            tags.append(tag)
    return tags


def _optional_text(name: str, raw: Any) -> str | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        raise _Bad(f"The field '{name}' must be a JSON string, not {json.dumps(raw)}.")
    text = str(raw).strip()
    return text or None


def _seen_count(raw: Any) -> int:
    if raw is None:
        return 1
    numeric = isinstance(raw, int | float) and not isinstance(raw, bool)
    digits = isinstance(raw, str) and re.fullmatch(r"\s*\d+\s*", raw) is not None
    number = float(raw) if numeric or digits else None
    if number is None or not math.isfinite(number):
        raise _Bad(f"The field 'seen_count' must be a whole number, not {json.dumps(raw)}.")
    return max(1, math.floor(number))


def _timestamp(name: str, raw: Any) -> str | None:
    """Normalise an ISO 8601 string or a unix epoch (seconds or milliseconds) to UTC ``...Z``."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    moment: datetime | None = None
    try:
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            moment = _from_epoch(float(raw))
        elif isinstance(raw, str) and _EPOCH_TEXT_RE.match(raw.strip()):
            moment = _from_epoch(float(raw.strip()))
        elif isinstance(raw, str):
            moment = datetime.fromisoformat(re.sub(r"[Zz]$", "+00:00", raw.strip()))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
    except (ValueError, OverflowError, OSError):
        moment = None
    if moment is None:
        raise _Bad(
            f"The field '{name}' holds {json.dumps(raw)}, which is neither an ISO 8601 timestamp "
            "nor a unix epoch number."
        )
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _from_epoch(number: float) -> datetime:
    if not math.isfinite(number):
        raise ValueError("not a finite number")
    if abs(number) >= _MS_THRESHOLD:
        number /= 1000.0
    return datetime.fromtimestamp(number, UTC)
