"""What the dashboard's pages read and change: the memory service and the team service of one folder.

Each request opens its own services and closes them when it is answered: the stores hold SQLite
connections, which belong to the thread that opened them, and the pages are answered on a thread pool.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from hivelore.memory.service import Hivelore
from hivelore.team.coordination import Coordination


class LocalServices:
    """The services `hivelore dashboard` serves: this machine's stores, seen from `folder`."""

    def __init__(self, folder: Path, env: Mapping[str, str] | None = None) -> None:
        self.folder = folder
        self.env = dict(os.environ if env is None else env)

    # `request` is unused: this machine's stores are the same for every request.
    @contextmanager
    def memory(self, request: object = None) -> Iterator[Hivelore]:
        service = Hivelore.open(cwd=self.folder, env=self.env, agent="dashboard")
        try:
            yield service
        finally:
            service.close()

    @contextmanager
    def coordination(self, request: object = None) -> Iterator[Coordination]:
        with self.memory() as service, Coordination.for_service(service, self.env) as team:
            yield team
