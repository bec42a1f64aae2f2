"""Scopes: the grammar, parsing, and the narrowest-first chain of a working folder.

    global
    project::NAME
    repo::OWNER/REPO
    branch::OWNER/REPO::BRANCH

Stdlib only: the hook path imports this module.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from enum import IntEnum
from pathlib import Path

from hivelore.errors import BadInput
from hivelore.gitrepo import GitInfo, read_git_info
from hivelore.records import record

GRAMMAR = "global, project::NAME, repo::OWNER/REPO or branch::OWNER/REPO::BRANCH"

_NAME = r"[A-Za-z0-9_][A-Za-z0-9._-]*"
_NAME_RE = re.compile(rf"^{_NAME}$")
# A branch is a git ref name: slash-separated parts, no "..", no ":" (git forbids it too, which is
# what makes "SCOPE::KEY" addresses unambiguous).
_BRANCH_PART = r"[A-Za-z0-9_+@#=,][A-Za-z0-9._+@#=,-]*"
_BRANCH_RE = re.compile(rf"^{_BRANCH_PART}(/{_BRANCH_PART})*$")


class Level(IntEnum):
    """How specific a scope is; higher wins on the same key."""

    GLOBAL = 0
    PROJECT = 1
    REPO = 2
    BRANCH = 3


class ScopeError(BadInput):
    """A scope string that does not follow the grammar."""


@record
class Scope:
    level: Level
    name: str = ""  # project name, or OWNER/REPO for repo and branch scopes
    branch: str = ""

    def __str__(self) -> str:
        if self.level is Level.GLOBAL:
            return "global"
        if self.level is Level.PROJECT:
            return f"project::{self.name}"
        if self.level is Level.REPO:
            return f"repo::{self.name}"
        return f"branch::{self.name}::{self.branch}"

    @property
    def folder(self) -> Path:
        """The scope's folder inside a vault, relative to the vault root."""
        if self.level is Level.GLOBAL:
            return Path("global")
        if self.level is Level.PROJECT:
            return Path("project", self.name)
        if self.level is Level.REPO:
            return Path("repo", *self.name.split("/"))
        return Path("branch", *self.name.split("/"), *self.branch.split("/"))


GLOBAL = Scope(Level.GLOBAL)


def _valid_name(name: str) -> bool:
    return bool(_NAME_RE.match(name)) and name not in {".", ".."}


def _valid_owner_repo(text: str) -> bool:
    parts = text.split("/")
    return len(parts) == 2 and all(_valid_name(p) for p in parts)


def _valid_branch(text: str) -> bool:
    return bool(_BRANCH_RE.match(text)) and ".." not in text and not text.endswith((".lock", "."))


def _hint(text: str) -> str:
    """A 'did you mean' for the usual slips: one colon, missing parts, wrong case."""
    fixed = re.sub(r"(?<!:):(?!:)", "::", text.strip())
    head = fixed.split("::", 1)[0].lower()
    rest = fixed.split("::")[1:]
    if head == "branch" and len(rest) == 1 and _valid_owner_repo(rest[0]):
        return f" (did you mean 'branch::{rest[0]}::BRANCH'?)"
    if head in {"global", "project", "repo", "branch"} and fixed != text:
        candidate = "::".join([head, *rest])
        if try_parse(candidate) is not None:
            return f" (did you mean '{candidate}'?)"
    return ""


def parse(text: str) -> Scope:
    """Parse a scope string, or raise ScopeError with the grammar and a likely fix."""
    scope = try_parse(text)
    if scope is None:
        raise ScopeError(f"'{text}' is not a valid scope: use {GRAMMAR}{_hint(text)}.")
    return scope


@functools.lru_cache(maxsize=4096)  # every index row names its scope; parse each string once
def try_parse(text: str) -> Scope | None:
    if text == "global":
        return GLOBAL
    parts = text.split("::")
    head = parts[0]
    if head == "project" and len(parts) == 2 and _valid_name(parts[1]):
        return Scope(Level.PROJECT, parts[1])
    if head == "repo" and len(parts) == 2 and _valid_owner_repo(parts[1]):
        return Scope(Level.REPO, parts[1])
    if head == "branch" and len(parts) == 3 and _valid_owner_repo(parts[1]) and _valid_branch(parts[2]):
        return Scope(Level.BRANCH, parts[1], parts[2])
    return None


@record
class Chain:
    """The scopes that apply to a folder, narrowest first, and the git facts they came from."""

    scopes: tuple[Scope, ...]
    git: GitInfo | None

    @property
    def narrowest(self) -> Scope:
        return self.scopes[0]

    @property
    def remark(self) -> str | None:
        """Why a folder with an origin has no repository scope, for `doctor`; None when nothing is odd."""
        git = self.git
        if git is None or git.remote_url is None or any(s.level is Level.REPO for s in self.scopes):
            return None
        target = f"memories go to {self.scopes[0]}"
        if git.origin_is_local:
            return f"origin {git.remote_url} is a local path: no repo scope; {target}"
        return f"origin {git.remote_url} names no OWNER/REPO: no repo scope; {target}"


def related(a: Scope, b: Scope, chain: Sequence[str] = ()) -> bool:
    """Whether one of two scopes contains the other, so that a key in the narrower one shadows the
    same key in the wider one: the same scope, global and anything, a branch and its repository, or
    two scopes of one folder's chain (which alone knows that a project holds a repository)."""
    if a == b or GLOBAL in (a, b):
        return True
    if {a.level, b.level} == {Level.BRANCH, Level.REPO} and a.name == b.name:
        return True
    return str(a) in chain and str(b) in chain


def _project_name(folder: Path) -> str | None:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", folder.name).strip("-.")
    return name if name and _valid_name(name) else None


def chain_for(cwd: Path) -> Chain:
    """Detect the scope chain of a working folder from git: branch → repo → project → global.

    No remote, or an origin that is a local path (whose folders name no owner): project (named
    after the repository folder) → global; a branch scope needs OWNER/REPO, so there is none
    either. Detached HEAD: no branch scope. Outside git: project (named after the folder) → global.
    """
    git = read_git_info(cwd)
    scopes: list[Scope] = []
    if git and git.owner_repo and _valid_owner_repo(git.owner_repo):
        if git.branch and _valid_branch(git.branch):
            scopes.append(Scope(Level.BRANCH, git.owner_repo, git.branch))
        scopes.append(Scope(Level.REPO, git.owner_repo))
    project = _project_name(git.project_root if git else cwd)
    if project:
        scopes.append(Scope(Level.PROJECT, project))
    scopes.append(GLOBAL)
    return Chain(tuple(scopes), git)
