"""Where hivelore keeps its home-tier files. Imports nothing: the hook client needs it before
anything else is loaded."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from collections.abc import Mapping


def home_path(env: Mapping[str, str]) -> str:
    """HIVELORE_HOME, else ~/.hivelore, as a string (the hooks' light path imports no pathlib)."""
    return os.path.expanduser(env.get("HIVELORE_HOME") or os.path.join("~", ".hivelore"))
