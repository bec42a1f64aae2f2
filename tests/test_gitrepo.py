"""Git's config read from its files (no subprocess on the hook path): the one parser for origin's URL
and for the developer's identity, on real repositories made by git."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import git, make_repo

from hivelore.gitrepo import config_values, read_git_info

IDENTITY = frozenset({"user.name", "user.email"})


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}


def test_origin_is_read_from_its_subsection_with_quotes_comments_and_includes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "shop", origin=None)
    (repo / ".git" / "origin.inc").write_text('[remote "origin"]\n\turl = "git@github.com:acme/shop.git" ; work\n')
    with (repo / ".git" / "config").open("a") as config:
        config.write('[remote "Origin"]\n\turl = git@github.com:someone/else.git\n[include]\n\tpath = origin.inc\n')
    assert git(repo, "config", "--get", "remote.origin.url") == "git@github.com:acme/shop.git"
    info = read_git_info(repo)
    assert info is not None
    assert (info.remote_url, info.owner_repo) == ("git@github.com:acme/shop.git", "acme/shop")


def test_the_repository_config_wins_over_the_users_and_a_worktrees_over_both(
    tmp_path: Path, env: dict[str, str]
) -> None:
    Path(env["HOME"], ".gitconfig").write_text("[user]\n\tname = Ada\n\temail = ada@home.example\n")
    repo = make_repo(tmp_path / "shop")  # user.email dev@example.com, user.name Dev
    git(repo, "config", "--unset", "user.name")
    assert config_values(repo, IDENTITY, env) == {"user.name": "Ada", "user.email": "dev@example.com"}
    git(repo, "config", "extensions.worktreeConfig", "true")
    git(repo, "config", "--worktree", "user.email", "ada@worktree.example")
    assert config_values(repo / "src", IDENTITY, env)["user.email"] == "ada@worktree.example"


def test_a_global_file_named_in_the_environment_replaces_the_users_own(tmp_path: Path, env: dict[str, str]) -> None:
    Path(env["HOME"], ".gitconfig").write_text("[user]\n\temail = ada@home.example\n")
    named = tmp_path / "team.gitconfig"
    named.write_text('[user "not-this"]\n\temail = nobody@example.com\n[User]\n\tEmail = ada@acme.example\n')
    assert config_values(tmp_path, IDENTITY, {**env, "GIT_CONFIG_GLOBAL": str(named)}) == {
        "user.email": "ada@acme.example"
    }
    assert config_values(tmp_path, IDENTITY, env) == {"user.email": "ada@home.example"}
