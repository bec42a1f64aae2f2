"""The task board and the code map on the team server: a repository's team in PostgreSQL
(`PostgresTeam`) and the code graph a checkout pushed (`hivelore graph push`), as the dashboard's pages
read them (`dashboard.services.TeamView`).

A caller sees the repositories an organisation of theirs shares (`repo::OWNER/NAME`) that their token's
scope allow-list admits, with the role and token rules of the /v1/team routes (server/team.py): a
viewer reads, and the pages offer no change of a task anyway.
"""

from __future__ import annotations

import psycopg

from hivelore.dashboard.codemap import NotIndexed
from hivelore.errors import NotFound
from hivelore.server import auth
from hivelore.server import team as access
from hivelore.server.postgres import graph as pushed
from hivelore.server.postgres.team import PostgresTeam
from hivelore.team.codemap import CodeMap
from hivelore.team.model import Card, TaskView
from hivelore.team.taskview import task_view

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from hivelore.codegraph import Graph

NO_REPOSITORY = (
    "none of your organisations shares a repository your token admits: an admin shares one with"
    " `hivelore org share ORG repo::OWNER/NAME`, then its members' hooks fill its task board"
)
NOT_PUSHED = (
    "no code graph of {repo} is on the team server yet: run `hivelore graph push` in a checkout of it"
    " (it indexes the code first if needed), then reload"
)


def shared_repos(conn: psycopg.Connection, who: auth.Caller) -> list[str]:
    """The repositories whose team the caller may read: shared by an organisation of theirs, admitted
    by their token's scopes; by name."""
    rows = conn.execute(
        "SELECT DISTINCT s.scope FROM shared_scopes s JOIN members m ON m.org_id = s.org_id AND m.user_id = %s"
        " WHERE s.scope LIKE 'repo::%%' ORDER BY s.scope",
        (who.user_id,),
    ).fetchall()
    return [scope.removeprefix("repo::") for (scope,) in rows if who.allows(scope)]


class PushedMap(CodeMap):
    """The map over a pushed graph: hot spots computed once go back to the process's cache of that
    graph, so the next request (any viewer's) reads them instead of ranking 30,000 symbols again."""

    def __init__(self, code: Graph, store: PostgresTeam, repo: str) -> None:
        super().__init__(code, store, repo)
        self.code, self.org_id = code, store.org_id

    def hotspots(self, limit: int = 20) -> list[tuple[str, float, float]]:
        kept = self.code.store.meta("hotspots")
        ranked = super().hotspots(limit)
        if self.code.store.meta("hotspots") != kept:  # computed now, not read from the copy
            pushed.remember(self.org_id, self.repo, self.code)
        return ranked


class ServerTeam:
    """The team of the repository `asked` (else the first the caller may read) as caller `who` reads
    it, on `conn` (the request's, from the pool). The repository is looked up on first need: a task's
    page reaches the task by its id, whichever repository holds it."""

    def __init__(self, conn: psycopg.Connection, who: auth.Caller, asked: str) -> None:
        self.conn, self.who, self.asked = conn, who, asked
        self._team: PostgresTeam | None = None
        self._repo = ""
        self._graph: Graph | None = None

    @property
    def repo(self) -> str:
        if not self._repo:
            self._repo = self.asked or next(iter(shared_repos(self.conn, self.who)), "")
            if not self._repo:
                raise NotFound(NO_REPOSITORY)
        return self._repo

    @property
    def store(self) -> PostgresTeam:
        if self._team is None:
            self._team = access.for_repo(self.conn, self.who, self.repo, access.READ, None)
        return self._team

    def task_board(self) -> list[Card]:
        return self.store.task_board(self.repo)

    def task(self, task_id: int) -> TaskView:
        """Task `task_id` of whichever repository holds it, if the caller may read that one's team."""
        holder = access.for_intent(self.conn, self.who, task_id, access.READ, None)
        return task_view(holder, holder.intent(task_id).repo, task_id)

    @property
    def code(self) -> Graph:
        """The pushed graph: a copy of this request's own (graph.load), closed with the team view."""
        if self._graph is None:
            self._graph = pushed.load(self.conn, self.store.org_id, self.repo)
            if self._graph is None:
                raise NotIndexed(NOT_PUSHED.format(repo=self.repo))
        return self._graph

    def code_map(self) -> CodeMap:
        return PushedMap(self.code, self.store, self.repo)

    def close(self) -> None:
        if self._graph is not None:
            self._graph.close()

    def symbol(self, name: str) -> str:
        """The id of the one symbol `name` names in the pushed graph, by the graph's rule (`Graph.resolve`)."""
        return self.code.resolve(name, pushed.PUSH_AGAIN)
