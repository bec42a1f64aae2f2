"""What the dashboard's pages read and change: the memory service and the team of one repository.

Each request opens its own services and closes them when it is answered: the stores hold SQLite
connections, which belong to the thread that opened them, and the pages are answered on a thread pool.

The task board and the code map need only `TeamView` of a team: `Coordination` is one on a machine (over
team.db and graph.db), server/board.py's `ServerTeam` another on the team server (over PostgreSQL and
the graph a checkout pushed).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from hivelore.memory.service import Hivelore
from hivelore.team.codemap import CodeMap
from hivelore.team.coordination import Coordination
from hivelore.team.model import Card, TaskView


class TeamView(Protocol):
    """A repository's team as the task board and the code map read it."""

    @property
    def repo(self) -> str:
        """The repository's name (`owner/repo`)."""
        ...

    def task_board(self) -> list[Card]:
        """The repository's tasks: active, handed off, then done; latest first."""
        ...

    def task(self, task_id: int) -> TaskView:
        """One task, read only (a NotFound when the caller can see no such task)."""
        ...

    def code_map(self) -> CodeMap:
        """The code map over the repository's graph and its tasks' claims."""
        ...

    def symbol(self, name: str) -> str:
        """The id of the one symbol `name` names (NotFound: none; BadInput: several)."""
        ...


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

    def repos(self, request: object = None) -> list[str]:
        """No choice of repository: the folder's is the one shown."""
        return []
