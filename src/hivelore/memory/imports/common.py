"""What every import reader shares: where it runs from, the skip it reports, and the Markdown it reads.

A reader turns another tool's files into :class:`~hivelore.memory.transfer.ImportRecord`s, the records
every import hands to ``Hivelore.import_records`` (which runs the guard and the write checks). Readers
never write and never check secrets themselves.

Stdlib only at module level (``memory/`` is on the hook path's import list); YAML is imported when a
front matter is parsed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from hivelore.memory.scope import GLOBAL, Chain, Level
from hivelore.memory.transfer import ImportRecord
from hivelore.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from typing import Any

KEY_CHARS = 80  # a key names a file: long headings are cut here
_SLUG_BAD_RE = re.compile(r"[^a-z0-9]+")
_HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE_RE = re.compile(r"^\s*(```|~~~)")
# The opening line `/init` writes into every CLAUDE.md: it says nothing about the repository.
_BOILERPLATE_RE = re.compile(r"^This file provides guidance to [^\n]* when working with code in this repository\.?$")


@record
class Place:
    """Where an import runs: the user's home, the repository (or plain folder) it runs in, and the
    scope that repository's files go to."""

    home: Path
    repo_root: Path
    repo_scope: str
    project_name: str  # the project:: name hivelore gives this folder, "" when it has none


@record
class Skip:
    """A file or entry that cannot become a memory, and why (shown, never imported)."""

    source: str
    reason: str


@record
class Section:
    heading: str  # "" for the text before the first heading
    body: str


Found = Iterator[ImportRecord | Skip]


def place_for(chain: Chain, cwd: Path, home: Path) -> Place:
    """The place of a working folder: its repository's own scope (repo::, else project::, else global)."""
    wide = [s for s in chain.scopes if s.level in (Level.REPO, Level.PROJECT)]
    project = next((s.name for s in chain.scopes if s.level is Level.PROJECT), "")
    root = chain.git.root if chain.git else cwd
    return Place(home=home, repo_root=root, repo_scope=str(wide[0] if wide else GLOBAL), project_name=project)


def shown(path: Path, place: Place) -> str:
    """A path as provenance shows it: under the home as ``~/...`` (no user name in committed files)."""
    try:
        return "~/" + path.resolve().relative_to(place.home.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


def origin(source: str, where: str) -> dict[str, str]:
    """The provenance of an imported memory: which tool, and which file or entry of it."""
    return {"imported_from": f"{source}:{where}"}


def slug(text: str, limit: int = KEY_CHARS) -> str:
    """Lower-case words joined by '-', cut at a word boundary within `limit` characters."""
    words = _SLUG_BAD_RE.sub("-", text.lower()).strip("-")
    if len(words) <= limit:
        return words
    return words[:limit].rsplit("-", 1)[0] or words[:limit]


def read_text(path: Path) -> str | Skip:
    """A UTF-8 file's text with LF line ends, or the skip saying why it cannot be read."""
    try:
        return path.read_bytes().decode("utf-8").lstrip("\ufeff").replace("\r\n", "\n")
    except UnicodeDecodeError:
        return Skip(str(path), "the file is not UTF-8 text.")
    except OSError as exc:
        return Skip(str(path), f"the file could not be read ({exc.strerror or exc}).")


def front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The YAML front matter of a Markdown file (empty when it has none) and the body after it.

    ValueError names what is wrong when a block is opened but broken."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        raise ValueError("the front matter opened by '---' on line 1 is never closed by a '---' line.")
    import yaml  # only here: yaml is heavy and the hook path never parses front matter

    try:
        data = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"the front matter is not valid YAML ({str(exc).splitlines()[0]}).") from None
    if not isinstance(data, dict):
        raise ValueError("the front matter is not a set of 'name: value' fields.")
    return {str(k): v for k, v in data.items()}, "\n".join(lines[end + 1 :])


def sections(body: str) -> list[Section]:
    """A Markdown document cut at its level-2 headings (level-1 when it has no level-2 ones).

    Headings inside code fences do not count. A lone level-1 title before the first cut is dropped
    (it names the file, not a section); other text there is the section with heading "".
    """
    lines = body.split("\n")
    headings = _headings(lines)
    depth = 2 if any(level == 2 for _, level, _ in headings) else 1
    cuts = [(index, title) for index, level, title in headings if level == depth]
    found: list[Section] = []
    start, heading = 0, ""
    for index, title in [*cuts, (len(lines), "")]:
        text = "\n".join(line for n, line in enumerate(lines[start:index], start) if not _is_title(n, headings))
        if text.strip() or heading:
            found.append(Section(heading, text.strip("\n")))
        start, heading = index + 1, title
    return [s for s in found if s.body.strip()]


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    found: list[tuple[int, int, str]] = []
    fenced = False
    for index, line in enumerate(lines):
        if _FENCE_RE.match(line):
            fenced = not fenced
        elif not fenced and (match := _HEADING_RE.match(line)):
            found.append((index, len(match.group(1)), match.group(2)))
    return found


def _is_title(index: int, headings: list[tuple[int, int, str]]) -> bool:
    """Whether line `index` is a level-1 heading above a document cut at level 2."""
    return any(n == index and level == 1 for n, level, _ in headings) and any(lv == 2 for _, lv, _ in headings)


def read_markdown(path: Path) -> tuple[dict[str, Any], str] | Skip:
    """A Markdown file's front matter fields and body, or the skip saying why it cannot be read."""
    text = read_text(path)
    if isinstance(text, Skip):
        return text
    try:
        return front_matter(text)
    except ValueError as exc:
        return Skip(str(path), str(exc))


def text_field(fields: dict[str, Any], name: str) -> str:
    """A front matter field as trimmed text ("" when absent); lists are joined by ', '."""
    value = fields.get(name)
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(str(v).strip() for v in value if str(v).strip())
    return str(value).strip()


def tag_list(raw: object) -> list[str]:
    """Tags from a front matter value (a list, or one comma/space separated string), each made of the
    characters hivelore allows; `#` prefixes dropped."""
    items = raw if isinstance(raw, list) else re.split(r"[,\s]+", str(raw)) if raw else []
    tags: list[str] = []
    for item in items:
        tag = re.sub(r"[^\w.+#-]+", "-", str(item).strip().lstrip("#")).strip("-")
        if tag and tag not in tags:
            tags.append(tag)
    return tags


# Headings under which an instructions file (CLAUDE.md, AGENTS.md) keeps warnings rather than facts.
_LESSON_HEADING_RE = re.compile(
    r"gotcha|pitfall|lesson|mistake|avoid|\bdon'?t\b|\bdo not\b|\bnever\b|troubleshoot|caveat|warning|known issue",
    re.IGNORECASE,
)


def instruction_sections(path: Path, source: str, prefix: str, scope: str, place: Place) -> Found:
    """One record per section of an instructions file: a lesson under a heading that warns
    (gotchas, pitfalls, "don't"...), a fact otherwise; keyed `prefix-<heading>`."""
    markdown = read_markdown(path)
    if isinstance(markdown, Skip):
        yield markdown
        return
    _, body = markdown
    found = [s for s in sections(body) if s.heading or not _BOILERPLATE_RE.match(s.body.strip())]
    for section in found:
        key = prefix if not section.heading else f"{prefix}-{slug(section.heading) or 'section'}"
        value = f"{section.heading}\n\n{section.body}" if section.heading else section.body
        kind = "lesson" if _LESSON_HEADING_RE.search(section.heading) else "fact"
        where = f"{shown(path, place)}#{section.heading}" if section.heading else shown(path, place)
        yield ImportRecord(
            source=f"{path}" + (f" § {section.heading}" if section.heading else ""),
            scope=scope,
            key=key,
            value=value,
            tags=(source,),
            kind=kind,
            provenance=origin(source, where),
        )
