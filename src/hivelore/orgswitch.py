"""An organisation's switch that turns memory off for one repository (issue 17), as the team server
holds it and as this machine learned it.

While an organisation has `repo::OWNER/NAME` switched off, the team server keeps and serves nothing
under that scope (or a branch of it) for the organisation's members. Their mirror's sync brings the
switches (the change feed carries them), and writes them beside the mirror
(`HIVELORE_HOME/remote/<server>.off.json`); a checkout whose origin is that repository is then off
here as `"mode": "off"` makes it (config.py reads them), without any hook waiting on the network.

Stdlib only, and imported lazily: the hook path reads these files for every event in a repository.
"""

from __future__ import annotations

import contextlib
import json
import os
import time

from hivelore.records import record

SUFFIX = ".off.json"


@record
class OrgSwitch:
    org: str
    scope: str  # repo::OWNER/NAME
    by: str  # who switched it off
    at: str  # when, ISO 8601
    server: str = ""  # the team server's address, on a client
    synced: float = 0.0  # when that server last answered this machine's sync (seconds since the epoch)

    def as_dict(self) -> dict[str, object]:
        return {"org": self.org, "scope": self.scope, "by": self.by, "at": self.at, "server": self.server,
                "synced": self.synced}  # fmt: skip

    def covers(self, scope: str) -> bool:
        """Whether `scope` is the repository or one of its branches."""
        return scope == self.scope or scope.startswith(f"branch::{self.scope.removeprefix('repo::')}::")

    def undo(self) -> str:
        command = f"hivelore org switch-on {self.org} {self.scope}"
        return f"an admin or owner of {self.org} can switch it back on with `{command}`"

    def refusal(self) -> str:
        """The team server's 403 sentence for a write (or a read of one memory) under the repository."""
        return (
            f"the organisation {self.org} switched memory off for {self.scope} ({self.by}, {self.at[:16]}Z):"
            f" the team server keeps and serves nothing of it for {self.org}'s members; {self.undo()}"
        )

    def source(self) -> str:
        """What decided `"mode": "off"` here, as doctor names a mode's source."""
        return (
            f"the organisation {self.org}'s switch for {self.scope} on {self.server}"
            f" (set by {self.by} at {self.at[:16]}Z; as of the last sync at {_iso(self.synced)})"
        )

    def off_message(self) -> str:
        """The one line every surface says in a checkout of the repository."""
        said = f"hivelore is off in this repository (set by {self.source()})"
        return f"{said}: it reads and stores nothing here; {self.undo()}."


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime(epoch))


def path_for(mirror_path: str) -> str:
    """The switches file of the mirror at `mirror_path` (`…/remote/<server>.db`)."""
    return mirror_path.removesuffix(".db") + SUFFIX


def save(path: str, switches: list[OrgSwitch]) -> None:
    """Keep what a sync brought; no file when nothing is switched off (what the hook path looks for)."""
    if not switches:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
        return
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as file:
        json.dump([s.as_dict() for s in switches], file)
    os.replace(temporary, path)


def known(home: str) -> list[OrgSwitch]:
    """Every switch this machine's mirrors brought, of every server it follows."""
    folder = os.path.join(home, "remote")
    try:
        names = [n for n in os.listdir(folder) if n.endswith(SUFFIX)]
    except OSError:
        return []
    found = []
    for name in sorted(names):
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as file:
                found += [OrgSwitch(**entry) for entry in json.load(file)]
        except (OSError, ValueError, TypeError):  # derived: the next sync writes it again
            continue
    return found


def switch_for(home: str, root: str | None) -> OrgSwitch | None:
    """The switch that turns memory off for the checkout at `root` (its origin's repository), if any.
    Costs one directory listing when no switch is known, which is nearly always."""
    if root is None:
        return None
    switches = known(home)
    if not switches:
        return None
    from hivelore.gitrepo import origin_owner_repo

    owner_repo = origin_owner_repo(root)
    if owner_repo is None:
        return None
    return next((s for s in switches if s.scope == f"repo::{owner_repo}"), None)
