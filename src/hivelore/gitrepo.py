"""Git facts of a working folder, read straight from `.git` (no `git` subprocess).

A subprocess and its import cost more than the whole hook budget, so this reads HEAD, refs,
packed-refs and config itself. It understands linked worktrees (`.git` file + `commondir`).
"""

from __future__ import annotations

import re
from pathlib import Path

from hivelore.records import record


@record
class GitInfo:
    root: Path  # top of the work tree
    project_root: Path  # the main work tree, shared by linked worktrees
    remote_url: str | None
    owner_repo: str | None  # "acme/checkout", from origin
    branch: str | None  # None when HEAD is detached
    commit: str | None

    @property
    def origin_is_local(self) -> bool:
        """Whether origin is a path on this machine (`/srv/git/widget.git`, `../widget`, `file://…`)."""
        return self.remote_url is not None and is_local_path(self.remote_url)


_SCP_RE = re.compile(r"^(?:[^@/\s]+@)?[^:/\s]+:(?!//)(?P<path>.+)$")
_DRIVE_RE = re.compile(r"^[A-Za-z]:[\\/]")


def is_local_path(url: str) -> bool:
    """Whether a remote URL names a repository on this machine, as git reads it: a `file://` URL, or
    no `://` and no scp-style `host:path` (a colon with no slash before it; `C:\\…` is a drive)."""
    url = url.strip()
    if url.lower().startswith("file://"):
        return True
    if "://" in url:
        return False
    return _DRIVE_RE.match(url) is not None or _SCP_RE.match(url) is None


def owner_repo_from_url(url: str) -> str | None:
    """`acme/checkout` from an origin URL in scp, ssh, https or git form; None for a local path,
    whose folders name no owner (`/srv/git/widget.git` is not the repository `git/widget`)."""
    url = url.strip()
    if is_local_path(url):
        return None
    if "://" in url:
        path = url.split("://", 1)[1]
        path = path.split("/", 1)[1] if "/" in path else ""
    else:
        match = _SCP_RE.match(url)
        path = match.group("path") if match else url
    path = path.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")]
    parts = [p for p in path.split("/") if p]
    if len(parts) < 2:
        return None
    return f"{parts[-2]}/{parts[-1]}"


def _find_dot_git(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        candidate = folder / ".git"
        if candidate.exists():
            return candidate
    return None


def _git_dirs(dot_git: Path) -> tuple[Path, Path]:
    """(per-worktree git dir, common git dir)."""
    if dot_git.is_dir():
        return dot_git, dot_git
    text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
    gitdir = Path(text.split(":", 1)[1].strip()) if text.startswith("gitdir:") else dot_git
    if not gitdir.is_absolute():
        gitdir = (dot_git.parent / gitdir).resolve()
    common = gitdir
    commondir_file = gitdir / "commondir"
    if commondir_file.exists():
        rel = Path(commondir_file.read_text(encoding="utf-8").strip())
        common = rel if rel.is_absolute() else (gitdir / rel).resolve()
    return gitdir, common


def _origin_url(common: Path) -> str | None:
    try:
        lines = (common / "config").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    in_origin = False
    for raw in lines:
        line = raw.strip()
        if line.startswith("["):
            in_origin = re.match(r'^\[\s*remote\s+"origin"\s*\]', line) is not None
        elif in_origin and "=" in line:
            name, value = line.split("=", 1)
            if name.strip().lower() == "url":
                return value.strip().strip('"')
    return None


def _resolve_ref(common: Path, gitdir: Path, ref: str) -> str | None:
    for base in (gitdir, common):
        try:
            return (base / ref).read_text(encoding="utf-8").strip() or None
        except OSError:
            continue
    try:
        packed = (common / "packed-refs").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in packed.splitlines():
        if line.endswith(" " + ref):
            return line.split(" ", 1)[0]
    return None


def read_git_info(cwd: Path) -> GitInfo | None:
    """Git facts for `cwd`, or None outside a repository (or when `.git` is unreadable)."""
    try:
        dot_git = _find_dot_git(cwd.resolve())
        if dot_git is None:
            return None
        gitdir, common = _git_dirs(dot_git)
        head = (gitdir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    branch: str | None = None
    if head.startswith("ref:"):
        ref = head[4:].strip()
        branch = ref.removeprefix("refs/heads/")
        commit = _resolve_ref(common, gitdir, ref)
    else:
        commit = head or None
    url = _origin_url(common)
    root = dot_git.parent
    project_root = common.parent if common.name == ".git" else root
    return GitInfo(
        root=root,
        project_root=project_root,
        remote_url=url,
        owner_repo=owner_repo_from_url(url) if url else None,
        branch=branch,
        commit=commit,
    )
