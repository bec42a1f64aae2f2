"""Scope grammar, address splitting and the chain detected from git."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import git, make_repo

from hivelore.gitrepo import is_local_path, owner_repo_from_url
from hivelore.memory.model import AddressError, parse_address
from hivelore.memory.scope import GLOBAL, Level, Scope, ScopeError, chain_for, parse


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("global", GLOBAL),
        ("project::checkout", Scope(Level.PROJECT, "checkout")),
        ("repo::acme/checkout", Scope(Level.REPO, "acme/checkout")),
        ("branch::acme/checkout::main", Scope(Level.BRANCH, "acme/checkout", "main")),
        ("branch::acme/checkout::feature/jwt-refresh", Scope(Level.BRANCH, "acme/checkout", "feature/jwt-refresh")),
    ],
)
def test_valid_scopes_round_trip(text: str, expected: Scope) -> None:
    assert parse(text) == expected
    assert str(parse(text)) == text


@pytest.mark.parametrize(
    "text",
    [
        "branch:acme/widget",
        "Global",
        "",
        "repo::acme",
        "repo::acme/checkout/extra",
        "repo:acme/checkout",
        "branch::acme/widget",
        "project::",
        "project::../etc",
        "repo::../x",
        "branch::a/b::feat..x",
        "branch::a/b::",
        "team::platform",
        "project::a b",
    ],
)
def test_invalid_scopes_are_refused_with_the_grammar(text: str) -> None:
    with pytest.raises(ScopeError, match="global, project::NAME, repo::OWNER/REPO"):
        parse(text)


def test_single_colon_branch_scope_gets_a_hint() -> None:
    with pytest.raises(ScopeError, match=r"did you mean 'branch::acme/widget::BRANCH'"):
        parse("branch:acme/widget")


def test_folders_follow_the_scope() -> None:
    assert parse("branch::acme/checkout::feature/x").folder == Path("branch/acme/checkout/feature/x")
    assert parse("repo::acme/checkout").folder == Path("repo/acme/checkout")
    assert GLOBAL.folder == Path("global")


@pytest.mark.parametrize(
    ("address", "scope", "key"),
    [
        ("repo::acme/checkout::tests-need-local-postgres", "repo::acme/checkout", "tests-need-local-postgres"),
        ("branch::acme/checkout::main::k", "branch::acme/checkout::main", "k"),
        ("global::use-pnpm", "global", "use-pnpm"),
        ("repo::a/b::aw-lessons::worktree-naming", "repo::a/b", "aw-lessons::worktree-naming"),
    ],
)
def test_address_splits_at_the_last_valid_scope(address: str, scope: str, key: str) -> None:
    parsed_scope, parsed_key = parse_address(address)
    assert (str(parsed_scope), parsed_key) == (scope, key)


@pytest.mark.parametrize("address", ["use-pnpm", "repo::a/b::", "repo::a/b::x/y", "repo::a/b::..", "nope::k"])
def test_bad_addresses_are_refused(address: str) -> None:
    with pytest.raises(AddressError):
        parse_address(address)


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:acme/checkout.git",
        "ssh://git@github.com/acme/checkout.git",
        "ssh://git@github.com:22/acme/checkout",
        "https://github.com/acme/checkout.git",
        "https://token@github.com/acme/checkout/",
        "git://example.org/acme/checkout.git",
        "example.org:acme/checkout",
    ],
)
def test_owner_and_repo_from_every_origin_form(url: str) -> None:
    assert not is_local_path(url)
    assert owner_repo_from_url(url) == "acme/checkout"


@pytest.mark.parametrize(
    "url",
    [
        "/srv/git/widget.git",
        "../widget",
        "./vendor/widget",
        "widget",
        "~/git/widget",
        "file:///srv/git/widget.git",
        "FILE:///srv/git/widget.git",
        "C:\\git\\widget",
        "./odd:name/widget",  # a slash before the colon: a path, not host:path
    ],
)
def test_a_local_path_origin_names_no_owner(url: str) -> None:
    assert is_local_path(url)
    assert owner_repo_from_url(url) is None


@pytest.mark.parametrize("origin", ["/srv/git/widget.git", "../widget", "file:///srv/git/widget.git"])
def test_a_clone_of_a_local_path_falls_back_to_its_project(tmp_path: Path, origin: str) -> None:
    repo = make_repo(tmp_path / "widget", origin=origin)
    chain = chain_for(repo)
    assert [str(s) for s in chain.scopes] == ["project::widget", "global"]
    assert chain.remark == f"origin {origin} is a local path: no repo scope; memories go to project::widget"


def test_an_origin_without_owner_says_so(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "widget", origin="https://git.example.org/widget.git")
    chain = chain_for(repo)
    assert [str(s) for s in chain.scopes] == ["project::widget", "global"]
    assert chain.remark == (
        "origin https://git.example.org/widget.git names no OWNER/REPO: no repo scope; memories go to project::widget"
    )


def test_a_usual_origin_or_none_needs_no_remark(repo: Path, tmp_path: Path) -> None:
    assert chain_for(repo).remark is None
    assert chain_for(make_repo(tmp_path / "scratch", origin=None)).remark is None


def test_chain_of_a_repo_on_a_branch(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "feature/jwt")
    chain = chain_for(repo).scopes
    assert [str(s) for s in chain] == [
        "branch::acme/checkout::feature/jwt",
        "repo::acme/checkout",
        "project::checkout",
        "global",
    ]


def test_chain_from_a_subfolder(repo: Path) -> None:
    (repo / "src" / "deep").mkdir(parents=True)
    assert str(chain_for(repo / "src" / "deep").narrowest) == "branch::acme/checkout::main"


def test_detached_head_has_no_branch_scope(repo: Path) -> None:
    git(repo, "checkout", "-q", "--detach")
    assert [str(s) for s in chain_for(repo).scopes] == ["repo::acme/checkout", "project::checkout", "global"]


def test_no_remote_gives_project_and_global(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "scratch", origin=None)
    assert [str(s) for s in chain_for(repo).scopes] == ["project::scratch", "global"]


def test_outside_git_gives_folder_project(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    assert [str(s) for s in chain_for(folder).scopes] == ["project::notes", "global"]


def test_packed_refs_and_worktrees(repo: Path, tmp_path: Path) -> None:
    git(repo, "pack-refs", "--all")
    info = chain_for(repo).git
    assert info is not None and info.commit == git(repo, "rev-parse", "HEAD")
    git(repo, "worktree", "add", "-q", "-b", "fix/login", str(tmp_path / "wt"))
    chain = chain_for(tmp_path / "wt")
    assert [str(s) for s in chain.scopes] == [
        "branch::acme/checkout::fix/login",
        "repo::acme/checkout",
        "project::checkout",
        "global",
    ]
