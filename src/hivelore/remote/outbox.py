"""Changes for the team server that it has not acknowledged yet: `HIVELORE_HOME/remote/<server>.outbox/`.

A change is on disk (written whole and fsynced, one file each, named so that names sort in the order
the changes were made) before anyone is told it was made, and stays there until the server answered
it. Each carries the idempotency key it is sent with every time, so a change whose answer was lost
and is sent again is applied once. A change the server refuses (a secret, a role, the quota) cannot
succeed by waiting: it moves to `rejected/` with the server's sentence, and `hivelore remote status`
shows it.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from dataclasses import dataclass

from hivelore import atomicfile
from hivelore.home import FILE_MODE, private_folder

REJECTED = "rejected"


@dataclass(frozen=True)
class Change:
    """One change for the server: `op` is write, archive, restore or forget; `body` its request body."""

    name: str  # the file's name: the order, then the idempotency key
    op: str
    body: dict[str, object]

    @property
    def key(self) -> str:
        return self.name.removesuffix(".json").split("-", 1)[1]


class Outbox:
    def __init__(self, folder: str) -> None:
        self.folder = folder

    def add(self, op: str, body: dict[str, object]) -> Change:
        """Keep a change on disk (whole, synced) and return it. Its name sorts after every change
        waiting, even when the clock stepped back since (the changes are sent in name order)."""
        private_folder(self.folder)
        newest = self._names(self.folder)[-1:]
        stamp = max([time.time_ns(), *(int(name.split("-", 1)[0]) + 1 for name in newest)])
        name = f"{stamp:020d}-{uuid.uuid4().hex}.json"
        data = json.dumps({"op": op, "body": body}, ensure_ascii=False).encode()
        atomicfile.replace(os.path.join(self.folder, name), data, permissions=FILE_MODE)
        return Change(name, op, body)

    def waiting(self) -> list[Change]:
        """The changes not acknowledged yet, oldest first."""
        return [change for name in self._names(self.folder) if (change := self._read(self.folder, name))]

    def rejected(self) -> list[tuple[Change, str]]:
        """The changes the server refused, with its sentence."""
        folder = os.path.join(self.folder, REJECTED)
        found = []
        for name in self._names(folder):
            change = self._read(folder, name)
            reason = _text(os.path.join(folder, name.removesuffix(".json") + ".why"))
            if change:
                found.append((change, reason))
        return found

    def done(self, change: Change) -> None:
        """The change is settled: the server acknowledged it, or refused it while the user waited."""
        with contextlib.suppress(FileNotFoundError):  # another process sent it too: the server applied it once
            os.unlink(os.path.join(self.folder, change.name))

    def reject(self, change: Change, reason: str) -> None:
        """The server refused the change: keep it aside with the reason, never send it again."""
        folder = os.path.join(self.folder, REJECTED)
        private_folder(folder)
        why = os.path.join(folder, change.name.removesuffix(".json") + ".why")
        atomicfile.replace(why, reason.encode(), permissions=FILE_MODE)
        with contextlib.suppress(FileNotFoundError):
            os.replace(os.path.join(self.folder, change.name), os.path.join(folder, change.name))

    @staticmethod
    def _names(folder: str) -> list[str]:
        try:
            return sorted(n for n in os.listdir(folder) if n.endswith(".json") and not n.startswith("."))
        except FileNotFoundError:
            return []

    @staticmethod
    def _read(folder: str, name: str) -> Change | None:
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as file:
                data = json.load(file)
        except FileNotFoundError:
            return None  # sent and acknowledged by another process meanwhile
        return Change(name, str(data["op"]), dict(data["body"]))


def _text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except FileNotFoundError:
        return ""
