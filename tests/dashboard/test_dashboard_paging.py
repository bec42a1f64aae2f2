"""The memory view's paged read: the index gives one sorted, filtered page and a count
(`Hivelore.page`, `Index.page`), the same rows the plain read of every copy gives, and the view links
the pages before and after."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hivelore.dashboard import views
from hivelore.memory.local.tier import LocalTier
from hivelore.memory.service import Hivelore
from hivelore.memory.tier import Tier, Wanted

REPO = "repo::acme/checkout"


@pytest.fixture
def hl(home: Path, repo: Path) -> Hivelore:
    return Hivelore.open(repo)


def addresses(copies: list) -> list[str]:
    return [f"{c.scope}::{c.key}" for c in copies]


def test_the_view_pages_through_the_chain_with_links_both_ways(hl: Hivelore) -> None:
    for n in range(views.SHOWN + 5):
        hl.write(REPO, f"lesson-{n:03d}", f"lesson number {n}")
    for n in range(3):
        hl.write("global", f"habit-{n}", f"habit number {n}")

    first = views.listing(hl, views.Filters())
    second = views.listing(hl, views.Filters(page=1))

    assert (len(first.rows), first.first, first.more, first.total) == (views.SHOWN, 0, 8, views.SHOWN + 8)
    assert (len(second.rows), second.first, second.more) == (8, views.SHOWN, 0)
    shown = [r.memory.key for r in first.rows + second.rows]
    assert shown == [f"lesson-{n:03d}" for n in range(views.SHOWN + 5)] + ["habit-0", "habit-1", "habit-2"]
    assert views.page_links(views.Filters(), first) == {"next": "page=1"}
    assert views.page_links(views.Filters(kind="fact", page=1), second) == {"prev": "kind=fact&page=0"}


def test_every_filter_is_applied_in_the_index_as_the_plain_read_applies_it(hl: Hivelore) -> None:
    hl.write(REPO, "db-port", "postgres listens on 5432", kind="fact", tags=["db"])
    hl.write(REPO, "db-cache", "clear the cache by hand", tags=["db", "cache"])
    hl.write(REPO, "rotate", "rotate the staging keys", ttl_days=2)
    hl.write(REPO, "uv", "use uv to install packages", state="staged")
    hl.write("global", "db-old", "the old database rule", tags=["db"])
    hl.archive("global", "db-old")
    hl.write("global", "later", "a rule that lasts a month", ttl_days=30)
    local = hl.tiers[0]
    assert isinstance(local, LocalTier)
    home = frozenset([local.parts["home"]])
    soon = time.time() + 7 * 86_400
    asked = [
        Wanted(),
        Wanted(hidden=True),
        Wanted(tag="db"),
        Wanted(tag="db", hidden=True),
        Wanted(kind="fact"),
        Wanted(state="staged"),
        Wanted(origins=home, kind="lesson"),
        Wanted(origins=frozenset(["/elsewhere"])),
        Wanted(expiring_before=soon),
        Wanted(hidden=True, words=("old", "rule")),
    ]
    expected = [
        ["rotate", "uv", "db-cache", "db-port", "later"],
        ["db-old"],
        ["db-cache", "db-port"],
        ["db-old"],
        ["db-port"],
        ["uv"],
        ["rotate", "uv", "db-cache", "later"],
        [],
        ["rotate"],
        ["db-old"],
    ]
    for wanted, keys in zip(asked, expected, strict=True):
        paged, total = hl.page(None, wanted, 0, 100)
        plain, plain_total = Tier.page(local, hl.scopes, wanted, 0, 100)  # the read of every copy
        assert addresses(paged) == addresses(plain) and total == plain_total == len(keys), wanted
        assert sorted(c.key for c in paged) == sorted(keys), wanted
    assert hl.scopes_known() == hl.scopes_in_vault() == [REPO, "global"]  # the index's, and the folders'
    assert addresses(hl.page(None, Wanted(), 1, 2)[0]) == [f"{REPO}::db-port", f"{REPO}::rotate"]  # scope, then key
    assert addresses(hl.page(None, Wanted(), 4, 9)[0]) == ["global::later"]  # past the whole repo scope


def test_a_file_edited_after_indexing_is_shown_as_it_is_now(hl: Hivelore) -> None:
    hl.write(REPO, "flaky", "the flaky test is test_refresh")
    (copy,), _ = hl.page(None, Wanted(), 0, 10)
    time.sleep(0.01)  # a new mtime
    copy.path.write_text(copy.path.read_text().replace("test_refresh", "test_rotate"))

    (fresh,), total = hl.page(None, Wanted(), 0, 10)

    assert "test_rotate" in fresh.memory.value and total == 1
