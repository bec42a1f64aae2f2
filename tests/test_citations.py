"""Cited code: what a text names (memory/citations.py), the staleness rules, the front matter that
keeps cites, the one ranking step that demotes stale hits, and grooming's pure parts."""

from __future__ import annotations

import re
from collections.abc import Iterable

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from hivelore.memory import citations, grooming, recall
from hivelore.memory.citations import CHANGED, GONE, Code, Staleness
from hivelore.memory.local.frontmatter import _rendered, parse, render
from hivelore.memory.model import Memory
from hivelore.memory.scope import parse as parse_scope
from hivelore.memory.tier import Candidate

NOW = "2026-11-30T10:26:00Z"


class ListedCode(Code):
    """The code of a repository given as plain data: symbols (id → hash) and files (path → hash)."""

    def __init__(self, symbols: dict[str, str], files: dict[str, str]) -> None:
        self.symbols, self.files = symbols, files

    def resolve(self, name: str) -> tuple[str, str] | None:
        if name in self.files:
            return name, self.files[name]
        found = [i for i in self.symbols if name in (i, i.split("::")[1], i.split("::")[1].split(".")[-1])]
        return (found[0], self.symbols[found[0]]) if len(found) == 1 else None

    def current(self, names: Iterable[str]) -> dict[str, str | None]:
        return {n: self.symbols.get(n, self.files.get(n)) for n in names}


CODE = ListedCode(
    {
        "shop/tokens.py::validate_token": "aa11",
        "shop/orders.py::Cart.total": "bb22",
        "shop/orders.py::checkout": "cc33",
        "shop/a.py::save": "dd44",
        "shop/b.py::save": "ee55",
        "web/parse.ts::parseHeader": "ff66",
    },
    {"shop/orders.py": "0f0f", "README.md": ""},
)


# -- what a text names ------------------------------------------------------------------------------


def test_names_written_as_code_are_mentions() -> None:
    text = (
        "validate_token must check exp; Cart.total rounds wrong in shop/orders.py, see `checkout` and "
        "parseHeader, and shop/tokens.py::validate_token"
    )
    assert citations.mentions(text) == [
        "checkout",
        "Cart.total",
        "shop/orders.py",
        "validate_token",
        "parseHeader",
        "shop/tokens.py::validate_token",
    ]


@pytest.mark.parametrize("word", ["total", "cart", "the", "Checkout", "ok", "e.g", "I.e", "_"])
def test_a_plain_word_is_never_a_mention(word: str) -> None:
    assert citations.mentions(f"the {word} is wrong") == []


@settings(max_examples=300, deadline=None)
@given(st.lists(st.from_regex(r"[a-z]{1,12}", fullmatch=True), max_size=40))
def test_prose_of_plain_words_cites_nothing(words: list[str]) -> None:
    assert citations.mentions(" ".join(words) + ".") == []


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_every_mention_is_in_the_text_and_never_twice(text: str) -> None:
    found = citations.mentions(text)
    assert len(found) == len(set(found))
    assert all(name in text for name in found)


def test_detect_keeps_only_names_that_resolve_to_exactly_one_thing() -> None:
    text = "validate_token and save() both matter; shop/orders.py too, and no_such_thing"
    assert citations.detect(text, CODE) == {"shop/tokens.py::validate_token": "aa11", "shop/orders.py": "0f0f"}


def test_cites_given_must_each_resolve() -> None:
    assert citations.named(["checkout", "README.md"], CODE) == {"shop/orders.py::checkout": "cc33", "README.md": ""}
    with pytest.raises(ValueError, match=r"--cites 'save' cannot be cited: it names no single symbol"):
        citations.named(["save"], CODE)
    with pytest.raises(ValueError, match=r"no code graph for this repository yet"):
        citations.named(["checkout"], None)
    assert citations.named([], None) == {}


@pytest.mark.parametrize(
    ("cites", "problem"),
    [
        ({"a b": ""}, "is not a symbol id or a file path"),
        ({"x.py": "XYZ"}, "is not hexadecimal"),
        ({f"f{n}.py": "" for n in range(citations.MAX_CITES + 1)}, "at most 16"),
    ],
)
def test_cites_that_cannot_be_kept_are_refused(cites: dict[str, str], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        citations.checked_cites(cites)


# -- the staleness rules ----------------------------------------------------------------------------


def test_a_changed_hash_says_code_changed_since() -> None:
    verdict = citations.staleness({"a::f": "11", "a::g": "22"}, {"a::f": "11", "a::g": "33"})
    assert verdict == Staleness(CHANGED, ("a::g",))
    assert verdict.note() == "code changed since: a::g"


def test_gone_code_wins_over_changed_code() -> None:
    verdict = citations.staleness({"a::f": "11", "a::g": "22"}, {"a::f": None, "a::g": "33"})
    assert verdict.note() == "cites code that no longer exists: a::f"


def test_what_the_code_does_not_say_or_was_not_hashed_is_taken_as_written() -> None:
    assert citations.staleness({"a::f": "11", "README.md": ""}, {"README.md": ""}) == citations.FRESH
    assert citations.staleness({"x.md": ""}, {"x.md": "99"}) == citations.FRESH


hashes = st.from_regex(r"[0-9a-f]{0,8}", fullmatch=True)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z]{1,5}", fullmatch=True), st.tuples(hashes, st.none() | hashes)))
def test_the_verdict_follows_the_rules(pairs: dict[str, tuple[str, str | None]]) -> None:
    cites = {name: kept for name, (kept, _) in pairs.items()}
    current = {name: now for name, (_, now) in pairs.items()}
    verdict = citations.staleness(cites, current)
    gone = {n for n, now in current.items() if now is None}
    changed = {n for n, (kept, now) in pairs.items() if kept and now and kept != now}
    if gone:
        assert verdict.verdict == GONE and set(verdict.names) == gone
    elif changed:
        assert verdict.verdict == CHANGED and set(verdict.names) == changed
    else:
        assert verdict == citations.FRESH


# -- the front matter -------------------------------------------------------------------------------


def _memory(**fields: object) -> Memory:
    return Memory(scope=parse_scope("repo::acme/shop"), key="k", value="v", created=NOW, updated=NOW, **fields)  # type: ignore[arg-type]


def test_a_memory_that_cites_nothing_is_written_as_before() -> None:
    assert "cites" not in render(_memory())
    assert parse(render(_memory()), NOW).cites == {}


def test_an_old_file_without_cites_reads() -> None:
    old = "---\nscope: repo::acme/shop\nkey: k\nkind: lesson\n---\nv\n"
    assert parse(old, NOW).cites == {}


names = st.from_regex(r"[A-Za-z0-9_./#:$@+-]{1,40}", fullmatch=True)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(names, hashes, min_size=1, max_size=citations.MAX_CITES))
def test_cites_survive_the_round_trip_and_yaml_agrees(cites: dict[str, str]) -> None:
    text = render(_memory(cites=cites, provenance={"agent": "cli"}))
    assert parse(text, NOW).cites == cites
    head = text.split("---\n", 2)[1]
    fields = _rendered(head)
    if fields is not None:  # our own fast reading, when it takes the file, reads what PyYAML reads
        assert fields == yaml.safe_load(head)
    assert {str(k): "" if v is None else str(v) for k, v in yaml.safe_load(head)["cites"].items()} == cites


def test_cites_written_by_hand_in_yaml_are_read() -> None:
    text = "---\nscope: global\nkey: k\ncites: {'shop/x.py::f': abc, README.md: }\n---\nv\n"
    assert parse(text, NOW).cites == {"shop/x.py::f": "abc", "README.md": ""}


# -- the ranking step -------------------------------------------------------------------------------


def _ranked(key: str, score: float) -> recall.Ranked:
    return recall.Ranked(Candidate.of(_memory().evolve(key=key), "/o", key), score, 1.0)


def test_a_stale_hit_is_noted_and_demoted_below_a_fresh_one() -> None:
    ranked = [_ranked("stale", 0.9), _ranked("fresh", 0.8)]
    demoted = recall.demoted(ranked, {0: ("code changed since: a::f", citations.STALE_FACTOR[CHANGED])})
    assert [(r.row.key, r.note) for r in demoted] == [("fresh", ""), ("stale", "code changed since: a::f")]
    assert demoted[1].score == pytest.approx(0.9 * 0.75)
    assert recall.line_for(demoted[1].row, 100, demoted[1].note).endswith("[code changed since: a::f]")


# -- grooming ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("fix-2026-12-01", "date"),
        ("deploy-20261201", "date"),
        ("build-at-14:05", "time"),
        ("run-3f2a9c1e8b", "hash"),
        ("job-0b7c1f52-6f1e-4b7e-9a55-2b1c0a8d9e11", "UUID"),
        ("pid-4455667", "long number"),
        ("notes-today", "says when"),
        ("tmp-db-fix", "says when"),
        ("session-a1b2c3", "session"),
    ],
)
def test_volatile_keys_say_why(key: str, why: str) -> None:
    assert why in grooming.volatile(key)


@pytest.mark.parametrize(
    "key", ["tests-need-local-postgres", "econnrefused-5432", "use-pnpm", "python-3.12-venv", "decade-old", "feed"]
)
def test_keys_naming_the_lesson_are_not_volatile(key: str) -> None:
    assert grooming.volatile(key) == ""


def _lesson(key: str, value: str, scope: str = "repo::acme/shop", **fields: object) -> Memory:
    return Memory(scope=parse_scope(scope), key=key, value=value, created=NOW, updated=NOW, **fields)  # type: ignore[arg-type]


DB_DOWN = "pnpm test fails with ECONNREFUSED 5432 when the database is down: run docker compose up -d db first"
DB_DOWN_AGAIN = "pnpm test fails with ECONNREFUSED 5432 when the database is down; run docker compose up db first"


def test_near_duplicates_are_pairs_of_alike_words_at_two_addresses() -> None:
    memories = [
        _lesson("db-down", DB_DOWN),
        _lesson("db-down-again", DB_DOWN_AGAIN),
        _lesson("use-pnpm", "this repository uses pnpm, not npm"),
        _lesson("db-down", DB_DOWN, scope="global"),
    ]
    found = {(s.first.address, s.second.address) for s in grooming.near_duplicates(memories)}
    assert {tuple(sorted(pair)) for pair in found} == {
        ("repo::acme/shop::db-down", "repo::acme/shop::db-down-again"),
        ("global::db-down", "repo::acme/shop::db-down"),
        ("global::db-down", "repo::acme/shop::db-down-again"),
    }
    assert all(s.similarity >= grooming.NEAR_DUPLICATE for s in grooming.near_duplicates(memories))


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=200), st.text(min_size=1, max_size=200))
def test_jaccard_is_symmetric_and_bounded(a: str, b: str) -> None:
    first, second = grooming.words(_lesson("a", a)), grooming.words(_lesson("b", b))
    assert grooming.jaccard(first, second) == grooming.jaccard(second, first)
    assert 0.0 <= grooming.jaccard(first, second) <= 1.0


def test_a_merge_keeps_every_text_tag_cite_and_provenance_within_one_scope() -> None:
    keeper = _lesson("db-down", DB_DOWN, seen_count=3, tags=("db",), cites={"docker-compose.yml": ""})
    other = _lesson(
        "db-down-again",
        DB_DOWN_AGAIN + " (port from .env)",
        tags=("tests",),
        provenance={"agent": "codex", "commit": "3f2a9c1e"},
        cites={"shop/db.py::connect": "ab"},
    )
    elsewhere = _lesson("db-down", DB_DOWN, scope="global")
    (merge,) = grooming.plan_merges([keeper, other, elsewhere])
    assert merge.keeper == keeper and merge.others == [other]
    assert DB_DOWN in merge.value and DB_DOWN_AGAIN in merge.value
    assert re.search(r"\(merged from repo::acme/shop::db-down-again, .*agent codex, commit 3f2a9c1e\)", merge.value)
    kept = grooming.merged(merge)
    assert (kept.address, kept.value, kept.tags, kept.seen_count) == (keeper.address, merge.value, ("db", "tests"), 4)
    assert kept.cites == {"docker-compose.yml": "", "shop/db.py::connect": "ab"}


def test_a_merged_text_says_a_contained_duplicate_only_by_where_it_came_from() -> None:
    keeper, other = _lesson("db-down", DB_DOWN), _lesson("db-down-2", DB_DOWN)
    value = grooming.merged_value(keeper, [other])
    assert value.count(DB_DOWN) == 1 and "merged from repo::acme/shop::db-down-2" in value
