"""Git facts of a working folder, read straight from `.git` (no `git` subprocess).

A subprocess and its import cost more than the whole hook budget, so this reads HEAD, refs,
packed-refs and config itself. It understands linked worktrees (`.git` file + `commondir`). Config
is parsed here only: origin's URL and, for the team store, the user's identity (`config_values`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from hivelore.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from collections.abc import Mapping


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
    """origin's URL as the repository's own config (and what it includes) sets it."""
    values: dict[str, str] = {}
    _read_config(str(common / "config"), _ORIGIN, values, os.path.expanduser("~"), depth=0)
    return values.get("remote.origin.url")


def origin_owner_repo(root: str) -> str | None:
    """`acme/checkout` of the origin of the work tree at `root`; None without one (or a local path)."""
    try:
        dot_git = _find_dot_git(Path(root))
        if dot_git is None:
            return None
        url = _origin_url(_git_dirs(dot_git)[1])
    except OSError:
        return None
    return owner_repo_from_url(url) if url else None


def config_values(folder: str | Path, names: frozenset[str], env: Mapping[str, str]) -> dict[str, str]:
    """The config `names` ("user.email", "remote.origin.url") that git reads for the work tree at
    `folder`, from its files: the system's, the user's, the repository's and its worktree's, the last
    to set a name winning. `[include] path` is followed; `[includeIf]` is not (that takes git itself)."""
    home = env.get("HOME") or os.path.expanduser("~")
    values: dict[str, str] = {}
    for path in _config_files(Path(folder), env, home):
        _read_config(path, names, values, home, depth=0)
    return values


def _config_files(folder: Path, env: Mapping[str, str], home: str) -> list[str]:
    """Git's config files, the one that wins last."""
    files = [] if env.get("GIT_CONFIG_NOSYSTEM") else ["/etc/gitconfig"]
    if env.get("GIT_CONFIG_GLOBAL"):
        files.append(env["GIT_CONFIG_GLOBAL"])
    else:
        xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        files += [os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig")]
    try:
        dot_git = _find_dot_git(folder.resolve())
        if dot_git is not None:
            gitdir, common = _git_dirs(dot_git)
            files += [str(common / "config"), str(gitdir / "config.worktree")]
    except OSError:  # an unreadable `.git`: the user's own files still say who they are
        pass
    return files


_SECTION = re.compile(r'^\s*\[\s*([\w.-]+)(?:\s+"((?:\\.|[^"\\])*)")?\s*\](.*)$')
_ENTRY = re.compile(r"^\s*([A-Za-z][\w-]*)\s*(?:=(.*))?$")
_ORIGIN = frozenset({"remote.origin.url"})
_INCLUDE_DEPTH = 5  # as deep as includes are followed (git stops at 10; a loop must end somewhere)


def _read_config(path: str, names: frozenset[str], values: dict[str, str], home: str, depth: int) -> None:
    """Read `names` from one config file into `values`, in order; `[include] path` is read in place."""
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            lines = file.read().splitlines()
    except OSError:
        return
    section = ""
    for line in lines:
        if match := _SECTION.match(line):
            section = match.group(1).lower()
            if match.group(2) is not None:  # a subsection keeps its case: `[remote "origin"]`
                section += "." + re.sub(r"\\(.)", r"\1", match.group(2))
            line = match.group(3)
        match = _ENTRY.match(line)
        if not match or not section:
            continue
        key = f"{section}.{match.group(1).lower()}"
        if key == "include.path":
            if depth < _INCLUDE_DEPTH:
                value = _config_value(match.group(2) or "")
                included = home + value[1:] if value.startswith("~/") else value
                _read_config(os.path.join(os.path.dirname(path), included), names, values, home, depth + 1)
        elif key in names:
            values[key] = _config_value(match.group(2) or "")


def _config_value(raw: str) -> str:
    """A git config value: quotes removed, backslash escapes read, a `#` or `;` comment cut."""
    out, quoted, i = [], False, 0
    while i < len(raw):
        char = raw[i]
        if char == "\\" and i + 1 < len(raw):
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(raw[i + 1], raw[i + 1]))
            i += 2
            continue
        if char == '"':
            quoted = not quoted
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
        i += 1
    return "".join(out).strip()


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
