"""Settings: where the stores are, which mode is in force, and which file or variable decided it.

Precedence for the mode and the profile, first found wins: the environment variable, the
repository's `.hivelore.json`, the home `config.json`, then the embedded default.

Budgets and limits are different: a repository is untrusted input (anyone can commit a
`.hivelore.json`), so it may only narrow them. The user's own `config.json` sets the ceiling (the
embedded default when it says nothing), and a repository's larger value is ignored, with a note.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence

from hivelore.errors import BadInput
from hivelore.home import home_path
from hivelore.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from pathlib import Path

    from hivelore.orgswitch import OrgSwitch

    Source = tuple[Path | str, dict[str, object]]  # a config file that sets something, and what it holds

MODES = ("local", "remote", "off")
CAPTURE = ("on", "off")
REMOTE_WRITES = ("shared", "all")
DEFAULTS = {"context_budget_chars": 2000, "context_line_chars": 240, "search_limit": 10}
MAXIMA = {"context_budget_chars": 1_000_000, "context_line_chars": 100_000, "search_limit": 1000}


class ConfigError(BadInput):
    """A configuration file or variable that cannot be used."""


@record
class Settings:
    home: Path
    mode: str
    mode_source: str
    config_files: tuple[Path, ...]
    context_budget_chars: int
    context_line_chars: int
    search_limit: int
    profile: str = "default"
    remote_writes: str = "shared"  # in remote mode, which writes go to the team server
    decided_by: tuple[tuple[str, str], ...] = ()  # (key, the file or variable that set it), for doctor
    capture: str = "on"  # "off": hooks read (context, recall) but store no prompts, failures, notes or claims
    private_prefix: tuple[str, ...] = ()  # lines starting with one of these are never stored
    org_switch: OrgSwitch | None = None  # the organisation's switch that turned hivelore off here

    @property
    def off(self) -> bool:
        return self.mode == "off"

    def off_message(self) -> str:
        """The one line every surface says when hivelore is off here."""
        if self.org_switch is not None:
            return self.org_switch.off_message()
        where = "in this repository " if self.mode_source.endswith(".hivelore.json") else ""
        undo = "unset it" if self.mode_source.startswith("HIVELORE_MODE") else 'remove "mode": "off" from that file'
        said = f"hivelore is off {where}(set by {self.mode_source})"
        return f"{said}: it reads and stores nothing here; {undo} to switch it on."


@record
class Switches:
    """What decides whether hivelore keeps anything in a folder: the mode (`off`: nothing at all),
    capture (`off`: reads only) and the private line prefixes, each with what set it."""

    mode: str
    mode_source: str
    capture: str
    capture_source: str
    private_prefix: tuple[str, ...]
    private_prefix_source: str
    org_switch: OrgSwitch | None = None


class Off(BadInput):
    """hivelore is switched off for this folder (`"mode": "off"`): the command does nothing."""


def home_dir(env: Mapping[str, str]) -> Path:
    from pathlib import Path

    return Path(home_path(env))


def read_json(path: Path | str) -> dict[str, object]:
    try:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}): fix or delete it.") from exc
    if not isinstance(data, dict):
        raise ConfigError(f'{path} must hold a JSON object like {{"mode": "local"}}.')
    return data


def _int_setting(name: str, repo: tuple[Path, dict] | None, user: tuple[Path, dict] | None) -> tuple[int, str]:
    """The value of a budget or limit and what decided it: the user's file (or the default) sets the
    ceiling, and the repository's file may only lower it."""
    value, source = DEFAULTS[name], "default"
    if user and name in user[1]:
        value, source = _checked_int(name, user), str(user[0])
    if repo and name in repo[1]:
        wanted = _checked_int(name, repo)
        if wanted <= value:
            return wanted, str(repo[0])
        source += f" (ignored {repo[0]}'s {wanted:,}: a repository may only lower a budget or limit)"
    return value, source


def _checked_int(name: str, source: tuple[Path, dict]) -> int:
    path, data = source
    value = data[name]
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAXIMA[name]:
        raise ConfigError(f"{path}: '{name}' must be a whole number from 1 to {MAXIMA[name]:,}, not {value!r}.")
    return value


def load_settings(repo_root: Path | None, env: Mapping[str, str] | None = None) -> Settings:
    env = os.environ if env is None else env
    home = home_dir(env)
    if home.exists() and not home.is_dir():
        raise ConfigError(f"HIVELORE_HOME {home} is a file, not a folder: point it at a folder.")
    repo_file = repo_root / ".hivelore.json" if repo_root else None
    repo = (repo_file, read_json(repo_file)) if repo_file else None
    user = (home / "config.json", read_json(home / "config.json"))
    sources = [s for s in (repo, user) if s and s[1]]
    switched = _switches(env, sources, str(home), str(repo_root) if repo_root else None)
    limits = {name: _int_setting(name, repo, user) for name in DEFAULTS}
    profile, profile_source = _profile_setting(env, sources)
    remote_writes, remote_writes_source = _remote_writes(env, user)
    return Settings(
        home=home,
        mode=switched.mode,
        mode_source=switched.mode_source,
        config_files=tuple(p for p, _ in sources),
        context_budget_chars=limits["context_budget_chars"][0],
        context_line_chars=limits["context_line_chars"][0],
        search_limit=limits["search_limit"][0],
        profile=profile,
        remote_writes=remote_writes,
        decided_by=(
            ("mode", switched.mode_source),
            *((name, source) for name, (_, source) in limits.items()),
            ("profile", profile_source),
            ("remote_writes", remote_writes_source),
            ("capture", switched.capture_source),
            ("private_prefix", switched.private_prefix_source),
        ),
        capture=switched.capture,
        private_prefix=switched.private_prefix,
        org_switch=switched.org_switch,
    )


def switches(folder: str, env: Mapping[str, str]) -> Switches:
    """The mode, capture and private prefixes in force in `folder`, decided as `load_settings` decides
    them, from plain strings: the hook path asks this for every event, and must not pay for pathlib."""
    root = work_tree(folder)
    repo_file = os.path.join(root, ".hivelore.json") if root else None
    home = home_path(env)
    user_file = os.path.join(home, "config.json")
    found = [(path, read_json(path)) for path in (repo_file, user_file) if path]
    return _switches(env, [source for source in found if source[1]], home, root)


def work_tree(folder: str) -> str | None:
    """The top of the git work tree `folder` is in (the nearest folder holding `.git`), or None."""
    current = os.path.realpath(folder)
    while not os.path.exists(os.path.join(current, ".git")):
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
    return current


def _switches(env: Mapping[str, str], sources: Sequence[Source], home: str, root: str | None) -> Switches:
    """As the files and variables say; and off, whatever they say, in a checkout of a repository an
    organisation switched off on a team server this home follows (orgswitch.py): keeping less is
    always allowed, so no file turns it back on."""
    mode, mode_source = "local", "default (neither HIVELORE_MODE nor a config file sets it)"
    if env.get("HIVELORE_MODE"):
        mode, mode_source = env["HIVELORE_MODE"], "HIVELORE_MODE environment variable"
    else:
        for path, data in sources:
            if "mode" in data:
                mode, mode_source = str(data["mode"]), str(path)
                break
    if mode not in MODES:
        raise ConfigError(f'mode \'{mode}\' (set by {mode_source}) is not a mode: use "local", "remote" or "off".')
    capture, capture_source = _capture(env, sources)
    prefixes, prefixes_source = _private_prefixes(sources)
    org_switch = None
    if mode != "off":
        from hivelore.orgswitch import switch_for

        org_switch = switch_for(home, root)
        if org_switch is not None:
            mode, mode_source = "off", org_switch.source()
    return Switches(mode, mode_source, capture, capture_source, prefixes, prefixes_source, org_switch)


def _capture(env: Mapping[str, str], sources: Sequence[Source]) -> tuple[str, str]:
    """Whether hooks store what they see. Off wins wherever it is said (HIVELORE_CAPTURE, the
    repository's file or the user's): keeping less is always allowed, so no file can turn it back on."""
    said: list[tuple[str, object]] = []
    if env.get("HIVELORE_CAPTURE"):
        said.append(("HIVELORE_CAPTURE environment variable", env["HIVELORE_CAPTURE"]))
    said += [(str(path), data["capture"]) for path, data in sources if "capture" in data]
    for source, value in said:
        if value not in CAPTURE:
            raise ConfigError(f'capture {value!r} (set by {source}) is not "on" or "off".')
    for source, value in said:
        if value == "off":
            return "off", source
    return "on", said[0][0] if said else "default"


def _private_prefixes(sources: Sequence[Source]) -> tuple[tuple[str, ...], str]:
    """The line prefixes that mark a line private: those of every config file (each may add, none
    may take one away). A file gives one prefix or a list of them."""
    found: list[str] = []
    named: list[str] = []
    for path, data in sources:
        if "private_prefix" not in data:
            continue
        value = data["private_prefix"]
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, list) or not all(isinstance(v, str) and v.strip() for v in values):
            raise ConfigError(
                f"{path}: 'private_prefix' must be a non-empty text like \"#private\", or a list of them."
            )
        found += [v.strip() for v in values if v.strip() not in found]
        named.append(str(path))
    return tuple(found), ", ".join(named) or "default (none)"


def _remote_writes(env: Mapping[str, str], user: tuple[Path, dict[str, object]]) -> tuple[str, str]:
    """Which writes go to the team server in remote mode: those under shared scopes, or all. The
    user's setting only: a repository does not decide that someone's memories leave their machine."""
    value, source = "shared", "default"
    if env.get("HIVELORE_REMOTE_WRITES"):
        value, source = env["HIVELORE_REMOTE_WRITES"], "HIVELORE_REMOTE_WRITES environment variable"
    elif "remote_writes" in user[1]:
        value, source = str(user[1]["remote_writes"]), str(user[0])
    if value not in REMOTE_WRITES:
        raise ConfigError(f"remote_writes '{value}' (set by {source}) is not one of {', '.join(REMOTE_WRITES)}.")
    return value, source


def _profile_setting(env: Mapping[str, str], sources: list[tuple[Path, dict[str, object]]]) -> tuple[str, str]:
    """The profile in force and what decided it: HIVELORE_PROFILE, else the first config file's
    `profile`, else `default`."""
    if env.get("HIVELORE_PROFILE"):
        return env["HIVELORE_PROFILE"], "HIVELORE_PROFILE environment variable"
    for path, data in sources:
        if "profile" in data:
            if not isinstance(data["profile"], str):
                raise ConfigError(f"{path}: 'profile' must be a profile name like \"default\".")
            return data["profile"], str(path)
    return "default", "default"
