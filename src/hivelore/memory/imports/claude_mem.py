"""Read claude-mem's observations for ``hivelore import --from claude-mem`` (docs/import.md).

claude-mem (github.com/thedotmack/claude-mem) keeps what it compressed from Claude Code sessions in
SQLite, ``~/.claude-mem/claude-mem.db`` (``CLAUDE_MEM_DATA_DIR`` moves the folder). Its
``observations`` table (``src/services/sqlite/schema.sql``) holds one row per observation:
``id``, ``memory_session_id``, ``project`` (the name of the folder Claude ran in), ``type``,
``title``, ``subtitle``, ``narrative``, ``facts`` and ``concepts`` (JSON lists), ``files_modified``,
``merged_into_project``, ``created_at_epoch`` (milliseconds); rows written by old releases have only
``text``. The database is opened read-only and only that table is read (not the sessions,
summaries or prompts).

=================  =============================================================================
project            the repository's scope when it names the folder hivelore runs in, else
                   ``project::<project>`` (``merged_into_project`` wins when set)
type               the kind: decision -> decision, bugfix -> lesson, discovery -> fact,
                   feature / refactor / change -> note
title, subtitle,   the value, in that order, facts as a bulleted list, then the files modified
narrative, facts
concepts           the tags (plus ``claude-mem`` and the type)
id                 the key ``claude-mem-<id>-<title>`` and the provenance's entry
memory_session_id  ``provenance["session"]``
created_at_epoch   ``created``
=================  =============================================================================
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from hivelore.memory.imports.common import Found, Place, Skip, origin, shown, slug, tag_list
from hivelore.memory.scope import try_parse
from hivelore.memory.transfer import ImportRecord

SOURCE = "claude-mem"
DATABASE = "claude-mem.db"
TYPES = {"decision": "decision", "bugfix": "lesson", "discovery": "fact"}
COLUMNS = (
    "id", "memory_session_id", "project", "merged_into_project", "type", "title", "subtitle", "narrative",
    "facts", "concepts", "files_modified", "text", "created_at_epoch",
)  # fmt: skip


def defaults(place: Place) -> list[Path]:
    configured = os.environ.get("CLAUDE_MEM_DATA_DIR")
    folder = Path(configured).expanduser() if configured else place.home / ".claude-mem"
    return [folder / DATABASE]


def read(paths: list[Path], place: Place) -> Found:
    for path in paths:
        database = path / DATABASE if path.is_dir() else path
        if database.is_file():
            yield from _observations(database, place)


def _observations(database: Path, place: Place) -> Found:
    try:
        connection = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        yield Skip(str(database), f"the database cannot be opened ({exc}).")
        return
    try:
        rows = _rows(connection)
    except sqlite3.Error as exc:
        yield Skip(str(database), f"this is not a claude-mem database ({exc}).")
        return
    finally:
        connection.close()
    if rows is None:
        yield Skip(str(database), "the database has no 'observations' table, so it is not claude-mem's.")
        return
    shown_as = shown(database, place)  # once: resolving a path per row was most of the reading time
    for row in rows:
        yield _record(row, database, shown_as, place)


def _rows(connection: sqlite3.Connection) -> list[dict[str, object]] | None:
    present = {row[1] for row in connection.execute("PRAGMA table_info(observations)")}
    if not present:
        return None
    wanted = [c for c in COLUMNS if c in present]  # old releases lack the newer columns
    cursor = connection.execute(f"SELECT {', '.join(wanted)} FROM observations ORDER BY id")  # noqa: S608 (names from COLUMNS)
    return [dict(zip(wanted, row, strict=True)) for row in cursor]


def _record(row: dict[str, object], database: Path, shown_as: str, place: Place) -> ImportRecord | Skip:
    ident = row.get("id")
    source = f"{database} observation {ident}"
    project = str(row.get("merged_into_project") or row.get("project") or "").strip()
    scope = _scope(project, place)
    if scope is None:
        return Skip(source, f"the project '{project}' cannot name a hivelore project:: scope.")
    value = _value(row)
    if not value:
        return Skip(source, "the observation has no text.")
    kind_of = str(row.get("type") or "").strip().lower()
    return ImportRecord(
        source=source,
        scope=scope,
        key=f"claude-mem-{ident}" + (f"-{slug(str(row['title']), 50)}" if row.get("title") else ""),
        value=value,
        tags=tuple(dict.fromkeys([*tag_list(_json_list(row.get("concepts"))), SOURCE, *tag_list(kind_of)])),
        kind=TYPES.get(kind_of, "note"),
        created=_created(row.get("created_at_epoch")),
        provenance={
            **origin(SOURCE, f"{shown_as}#observation-{ident}"),
            **({"session": str(row["memory_session_id"])} if row.get("memory_session_id") else {}),
        },
    )


def _scope(project: str, place: Place) -> str | None:
    if project and project == place.project_name:
        return place.repo_scope
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", project).strip("-.")
    scope = f"project::{name}"
    return scope if name and try_parse(scope) is not None else None


def _value(row: dict[str, object]) -> str:
    head = [str(row[c]).strip() for c in ("title", "subtitle") if row.get(c) and str(row[c]).strip()]
    parts = ["\n".join(head)] if head else []
    for column in ("narrative", "text"):
        if row.get(column) and str(row[column]).strip():
            parts.append(str(row[column]).strip())
    facts = _json_list(row.get("facts"))
    if facts:
        parts.append("\n".join(f"- {fact}" for fact in facts))
    files = _json_list(row.get("files_modified"))
    if files:
        parts.append("Files modified: " + ", ".join(files))
    return "\n\n".join(parts)


def _json_list(raw: object) -> list[str]:
    """A JSON list column as strings; claude-mem writes '[]' or NULL when there is none."""
    if not raw:
        return []
    try:
        items = json.loads(str(raw))
    except ValueError:
        return [str(raw)]
    return [str(i).strip() for i in items if str(i).strip()] if isinstance(items, list) else []


def _created(epoch: object) -> str | None:
    if not isinstance(epoch, int | float) or epoch <= 0:
        return None
    seconds = epoch / 1000 if epoch > 1e11 else epoch  # milliseconds since claude-mem 4; seconds before
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
