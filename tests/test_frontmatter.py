"""The file format: what we write reads back the same, and hand-written YAML is understood."""

from __future__ import annotations

import contextlib

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from hivelore.memory.local.frontmatter import FrontmatterError, _rendered, parse, render
from hivelore.memory.model import Memory
from hivelore.memory.scope import parse as parse_scope

NOW = "2026-11-30T10:00:00Z"


def test_a_rendered_file_is_plain_yaml_frontmatter_then_the_value() -> None:
    memory = Memory(
        scope=parse_scope("repo::acme/checkout"),
        key="tests-need-local-postgres",
        value="pnpm test fails with ECONNREFUSED 5432: run docker compose up -d db first",
        tags=("db", "tests"),
        created=NOW,
        updated=NOW,
        provenance={"agent": "cli", "repo": "acme/checkout"},
    )
    text = render(memory)
    head = text.split("---\n")[1]
    assert yaml.safe_load(head)["scope"] == "repo::acme/checkout"
    assert text.endswith("---\npnpm test fails with ECONNREFUSED 5432: run docker compose up -d db first\n")
    assert parse(text, NOW) == memory


def test_hand_written_yaml_is_understood() -> None:
    text = """---
scope: global
key: use-pnpm
tags:
  - js
  - tooling
created: 2026-01-02T03:04:05Z
---

Use pnpm, never npm, in this monorepo.
"""
    memory = parse(text, NOW)
    assert memory.key == "use-pnpm"
    assert memory.tags == ("js", "tooling")
    assert memory.created == "2026-01-02T03:04:05Z"
    assert memory.updated == memory.created
    assert memory.kind == "lesson" and memory.state == "committed" and memory.seen_count == 1
    assert memory.value == "Use pnpm, never npm, in this monorepo."


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("no frontmatter at all", "does not start with"),
        ("---\nscope: global\nkey: k\nno closing line", "not closed"),
        ("---\nscope: [global\n---\nx", "not valid YAML"),
        ("---\nkey: k\n---\nx", "no 'scope'"),
        ("---\nscope: global\n---\nx", "no 'key'"),
        ("---\nscope: branch:acme/x\nkey: k\n---\nx", "scope 'branch:acme/x' is not valid"),
        ("---\nscope: global\nkey: a/b\n---\nx", "slash"),
        ("---\nscope: global\nkey: k\nkind: banana\n---\nx", "kind 'banana'"),
        ("---\nscope: global\nkey: k\nseen_count: many\n---\nx", "seen_count"),
        ("---\nscope: global\nkey: k\nupdated: yesterday\n---\nx", "ISO 8601"),
        ("---\n- a list\n---\nx", "mapping"),
        ("---\nscope: global\nkey: k\nseen_count: 99999999999999999999\n---\nx", "out of range"),
        ("---\nscope: global\nkey: k\nseen_count: .inf\n---\nx", "seen_count"),
        ("---\nscope: global\nkey: k\ncreated: 0001-01-01 00:00:00+01:00\n---\nx", "ISO 8601"),
        ("---\nscope: global\nkey: k\nexpires_at: 9999-12-31 23:59:59-01:00\n---\nx", "ISO 8601"),
    ],
)
def test_malformed_files_say_what_is_wrong(text: str, reason: str) -> None:
    with pytest.raises(FrontmatterError, match=reason):
        parse(text, NOW)


keys = st.text(st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="/\\"), min_size=1, max_size=40)
values = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=200)
tags = st.lists(st.from_regex(r"[a-z0-9][a-z0-9._+#-]{0,10}", fullmatch=True), max_size=4, unique=True)


@settings(max_examples=300, deadline=None)
@given(key=keys, value=values, tags=tags, seen=st.integers(1, 10_000))
def test_anything_we_render_parses_back_the_same(key: str, value: str, tags: list[str], seen: int) -> None:
    key = key.strip()
    if not key or ".." in key or not value.strip():
        return
    memory = Memory(
        scope=parse_scope("branch::acme/checkout::feature/x"),
        key=key,
        value=value.strip(),
        tags=tuple(tags),
        created=NOW,
        updated=NOW,
        seen_count=seen,
        provenance={"session": key},
    )
    parsed = parse(render(memory), NOW)
    assert parsed.key == memory.key
    assert parsed.value == memory.value
    assert parsed.tags == memory.tags and parsed.seen_count == seen and parsed.provenance == memory.provenance


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_parse_never_crashes_on_arbitrary_text(text: str) -> None:
    with contextlib.suppress(FrontmatterError):
        parse(text, NOW)


@pytest.mark.parametrize("key", ["line\u2028sep", "nel\x85key", "tab-free: colon", "# hash", "yes", "- dash", "[x]"])
def test_awkward_keys_survive_the_round_trip(key: str) -> None:
    memory = Memory(scope=parse_scope("global"), key=key, value="v", created=NOW, updated=NOW)
    assert parse(render(memory), NOW).key == key


def _head(text: str) -> str:
    return text.split("---\n", 2)[1]


@settings(max_examples=300, deadline=None)
@given(key=keys, value=values, tags=tags, seen=st.integers(1, 10_000), session=keys)
def test_what_we_render_is_read_without_yaml_exactly_as_yaml_reads_it(
    key: str, value: str, tags: list[str], seen: int, session: str
) -> None:
    """Re-reading our own files must not need PyYAML (hooks never import it), and must not differ from it."""
    memory = Memory(
        scope=parse_scope("repo::acme/checkout"), key=key, value=value, tags=tuple(tags), created=NOW,
        updated=NOW, seen_count=seen, expires_at=NOW, provenance={"agent": "cli", "session": session},
    )  # fmt: skip
    head = _head(render(memory))
    fields = _rendered(head)
    if "\\U" not in head:  # astral code points YAML escapes as \U…: only PyYAML reads those
        assert fields is not None
    if fields is not None:
        assert fields == yaml.safe_load(head)


@settings(max_examples=500, deadline=None)
@given(position=st.integers(0, 400), inserted=st.text(max_size=3))
def test_a_frontmatter_edited_by_hand_is_read_without_yaml_only_when_yaml_agrees(position: int, inserted: str) -> None:
    memory = Memory(
        scope=parse_scope("global"), key="k", value="v", tags=("db", "a#b"), created=NOW, updated=NOW,
        provenance={"agent": "cli"},
    )  # fmt: skip
    head = _head(render(memory))
    edited = head[:position] + inserted + head[position:]
    fields = _rendered(edited)
    if fields is not None:
        assert fields == yaml.safe_load(edited)


@pytest.mark.parametrize(
    "line, reason",
    [
        ("key: 07", "YAML reads 07 as an octal number"),
        ("key: 'single quoted'", "single quotes"),
        ("key: k  # a comment", "a comment"),
        ('key: "a\\/b"', "an escape JSON never writes"),
    ],
)
def test_frontmatters_we_do_not_write_are_left_to_yaml(line: str, reason: str) -> None:
    head = _head(render(Memory(scope=parse_scope("global"), key="k", value="v", created=NOW, updated=NOW)))
    assert _rendered(head.replace("key: k", line)) is None, reason
