"""Settings: where the stores are, which mode is in force, and which file or variable decided it.

Precedence, first found wins: the `HIVELORE_MODE` environment variable, the repository's
`.hivelore.json`, the home `config.json`, then the embedded default (`local`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from hivelore.home import home_path
from hivelore.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from pathlib import Path

MODES = ("local",)
DEFAULTS = {"context_budget_chars": 2000, "context_line_chars": 240, "search_limit": 10}
MAXIMA = {"context_budget_chars": 1_000_000, "context_line_chars": 100_000, "search_limit": 1000}


class ConfigError(ValueError):
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


def home_dir(env: Mapping[str, str]) -> Path:
    from pathlib import Path

    return Path(home_path(env))


def _read_json(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}): fix or delete it.") from exc
    if not isinstance(data, dict):
        raise ConfigError(f'{path} must hold a JSON object like {{"mode": "local"}}.')
    return data


def _int_setting(name: str, sources: list[tuple[Path, dict[str, object]]]) -> int:
    for path, data in sources:
        if name in data:
            value = data[name]
            if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAXIMA[name]:
                raise ConfigError(f"{path}: '{name}' must be a whole number from 1 to {MAXIMA[name]:,}, not {value!r}.")
            return value
    return DEFAULTS[name]


def load_settings(repo_root: Path | None, env: Mapping[str, str] | None = None) -> Settings:
    env = os.environ if env is None else env
    home = home_dir(env)
    if home.exists() and not home.is_dir():
        raise ConfigError(f"HIVELORE_HOME {home} is a file, not a folder: point it at a folder.")
    candidates = [p for p in (repo_root / ".hivelore.json" if repo_root else None, home / "config.json") if p]
    sources = [(p, _read_json(p)) for p in candidates]
    sources = [(p, d) for p, d in sources if d]
    mode, mode_source = "local", "default (no HIVELORE_MODE, no .hivelore.json, no config.json)"
    if env.get("HIVELORE_MODE"):
        mode, mode_source = env["HIVELORE_MODE"], "HIVELORE_MODE environment variable"
    else:
        for path, data in sources:
            if "mode" in data:
                mode, mode_source = str(data["mode"]), str(path)
                break
    if mode not in MODES:
        raise ConfigError(f"mode '{mode}' (set by {mode_source}) is not available in this version: use \"local\".")
    return Settings(
        home=home,
        mode=mode,
        mode_source=mode_source,
        config_files=tuple(p for p, _ in sources),
        context_budget_chars=_int_setting("context_budget_chars", sources),
        context_line_chars=_int_setting("context_line_chars", sources),
        search_limit=_int_setting("search_limit", sources),
        profile=_profile_setting(env, sources),
    )


def _profile_setting(env: Mapping[str, str], sources: list[tuple[Path, dict[str, object]]]) -> str:
    """The profile in force: HIVELORE_PROFILE, else the first config file's `profile`, else `default`."""
    if env.get("HIVELORE_PROFILE"):
        return env["HIVELORE_PROFILE"]
    for path, data in sources:
        if "profile" in data:
            if not isinstance(data["profile"], str):
                raise ConfigError(f"{path}: 'profile' must be a profile name like \"default\".")
            return data["profile"]
    return "default"
