"""Team coordination over the code graph, the team service: what the hooks, `hivelore graph`/`task`,
`context --file/--symbol` and the MCP tools share — who is changing which code, what was tried
there, the warning before an edit, and the graph queries. The surfaces call its methods and never
the stores under it (tests/test_architecture.py pins that).

`Coordination.for_service(service)` ties the folder's repository (its git root, and the name every
worktree shares: `owner/repo` from origin, else the project name) to the developer working in it
(`HIVELORE_DEVELOPER`, else git's user), the code graph (`HIVELORE_HOME/graph.db`) and the team
store (`SqliteTeam`, `HIVELORE_HOME/team.db`). Both stores open on first use.

A graph that was never built is built in the background (`hivelore graph index`, detached) the
first time a hook needs it: an edit is never held up by indexing. Until the index exists an edit
claims its file (a file-level claim, said as such in warnings) and is warned about other
developers' claims in that file; the session's next pre-edit check once the graph exists, or the
index completing (`upgrade_file_claims`), turns file claims into the symbols the edits touched.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence

from hivelore.errors import BadInput
from hivelore.home import FILE_MODE
from hivelore.memory.service import Hivelore
from hivelore.team import wire
from hivelore.team.codemap import CodeMap
from hivelore.team.history import CITING_LESSONS, NO_GRAPH, OUTSIDE_GIT, CodeHistory, SymbolHistory
from hivelore.team.model import (
    Attempt,
    Card,
    Conflict,
    Decision,
    Expert,
    History,
    Intent,
    Note,
    Resume,
    SharedFailure,
    TaskView,
    TeamUnavailable,
    Why,
    file_claim_ids,
    find_conflicts,
    spoken_day,
    warning_key,
)
from hivelore.team.store import SqliteTeam, TeamStore, developer_for
from hivelore.team.taskview import task_view

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from hivelore.codegraph import Graph  # imported on first use at run time
    from hivelore.remote.teamshare import SharedTeam

HOPS = 3  # call hops within which another developer's claim is worth a warning
HISTORY_ATTEMPTS = 3  # failed attempts shown per edit under "what failed here before"
TEAM_QUERY_SYMBOLS = 100  # symbols per request for the team server's history (its URL's limit)
MAX_ANCHOR_SPANS = 50  # places an edit's texts are looked for in one file
INDEXING_STALE_S = 600  # a background index that has not finished by then is taken to have died
# A warning from a replica of the team's claims older than this says its age: the hook server's
# request is answered at once on a change, else after 4 s (hooks/server.py TEAM_WAIT_S).
REPLICA_STALE_S = 6.0
Claims = list[tuple[str, Intent, str]]  # (symbol, intent, developer), as TeamStore.active_claims
TEAMMATE_HITS = 2  # teammates' failures a failing test run is told about


class Coordination:
    """The repository at `root` (named `repo` in the team model), seen by `developer` through the
    memory service `memory` (its folder, and the lessons that name code). Everything the surfaces
    ask of the team and the code graph is a method here: they never reach the stores."""

    def __init__(self, memory: Hivelore, root: str, repo: str, developer: str) -> None:
        self.memory, self.home = memory, str(memory.settings.home)
        self.root, self.repo, self.developer = root, repo, developer
        self._graph: Graph | None = None
        self._team: TeamStore | None = None
        self._shared: SharedTeam | None = None
        self._shared_looked = False
        self._server_team: TeamStore | None = None

    @classmethod
    def for_service(cls, service: Hivelore, env: Mapping[str, str] | None = None) -> Coordination:
        git = service.chain.git
        root = str(git.root) if git else os.getcwd()
        projects = [str(s).split("::", 1)[1] for s in service.chain.scopes if str(s).startswith("project::")]
        repo = git.owner_repo if git and git.owner_repo else (projects[0] if projects else os.path.basename(root))
        return cls(service, root, repo, developer_for(root, env))

    @property
    def graph(self) -> Graph:
        if self._graph is None:
            from hivelore.codegraph import Graph

            self._graph = Graph.open(self.home, self.root)
        return self._graph

    @property
    def team(self) -> TeamStore:
        if self._team is None:
            self._team = SqliteTeam.open(self.home)
        return self._team

    @property
    def shared(self) -> SharedTeam | None:
        """In remote mode, this repository's team on the team server (its changes are queued for it,
        its claims read from the replica the hook server keeps); None in local mode, or when no
        organisation of the user shares the repository."""
        if not self._shared_looked:
            self._shared_looked = True
            remote = self.memory.remote if self.memory.settings.mode == "remote" else None
            if remote is not None:
                from hivelore.remote.teamshare import SharedTeam

                mirror = remote.replica.mirror
                self._shared = SharedTeam.of(
                    remote.replica.outbox, mirror.path, mirror.shared, mirror.synced, self.repo
                )
        return self._shared

    @property
    def tasks(self) -> TeamStore:
        """Where the commands (CLI, MCP) read and write tasks, handoffs, decisions, `who_knows` and
        `why`: in remote mode, for a repository an organisation shares, the team server's team (one
        request a call, within the command's network budget), so that a task of another machine can
        be seen, handed off and resumed; else team.db. A hook (no network budget) never comes here."""
        remote = self.memory.remote if self.memory.network_budget_s > 0 and self.shared is not None else None
        if remote is None:
            return self.team
        if self._server_team is None:
            from hivelore.remote.team import RemoteTeam

            self._server_team = RemoteTeam(remote.replica.client)
        return self._server_team

    def shared_state(self) -> dict[str, object] | str:
        """What `doctor` says of the team's claims this machine's pre-edit checks read: the replica's
        file, how many claims of this repository it holds and how old they are."""
        shared = self.shared
        if shared is None:
            return "none: local mode, or no organisation of yours shares this repository"
        claims, synced = shared.claims.read(self.repo)
        return {
            "repo": self.repo,
            "replica": shared.claims.path,
            "claims": len(claims),
            "failures": len(shared.failures.read(self.repo)),
            "synced_seconds_ago": round(time.time() - synced, 1) if synced is not None else None,
            "kept_by": "the resident hook server (hivelore hook-server status): the server answers it on a change",
        }

    def _others_claims(self, shared: SharedTeam) -> tuple[list[tuple[str, Intent, str]], float | None]:
        """Other developers' claims on the team server and as of when: asked now by a command (which
        has a network budget), as the replica last had them for a hook (which never waits)."""
        if self.memory.network_budget_s > 0:
            return self.tasks.active_claims(self.repo, other_than=self.developer), time.time()
        return shared.others_claims(self.developer)

    def _share(self, agent: str, session_id: str, kind: str, **fields: object) -> None:
        """Queue a change of the session's task for the team server (remote mode only)."""
        shared = self.shared
        if shared is None:
            return
        from hivelore.remote.teamshare import Session

        title = self.intent(agent, session_id).title
        shared.queue(Session(agent, session_id, self.developer, self.repo, title), kind, **fields)

    def close(self) -> None:
        for store in (self._graph, self._team):
            if store is not None:
                store.close()

    def __enter__(self) -> Coordination:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def symbol(self, name: str) -> str:
        """The id of the one symbol `name` names, by the graph's rule (`Graph.resolve`)."""
        return self.graph.resolve(name, "check the name, or run `hivelore graph index`")

    def repo_path(self, path: str) -> str:
        """`path` (absolute, or relative to the repository root) as the graph names files; a
        ValueError when it is outside the repository."""
        relative = self._inside(path)
        if relative is None:
            raise BadInput(f"{path} is outside the repository at {self.root}.")
        return relative

    # -- the code graph ---------------------------------------------------------------------------

    def index(self, paths: Sequence[str] | None = None):  # noqa: ANN201 -- codegraph.IndexStats, imported on first use
        """Bring the graph up to date with the repository (or the given absolute files and folders);
        a graph.db that cannot be used is started anew, as indexing rebuilds what it held (the repair
        an unusable graph.db's error names)."""
        if self._graph is None:
            from hivelore.codegraph import Graph

            self._graph = Graph.open(self.home, self.root, discard_unusable=True)
        return self._graph.index(list(paths) if paths else None)

    def export(self) -> dict:
        """The whole graph as JSON-ready data: symbols, calls (with confidence) and imports."""
        return self.graph.export()

    def blast_radius(self, symbol_id: str, hops: int = HOPS) -> list[tuple[str, int]]:
        """(caller, distance) within `hops` call hops of the symbol, nearest first."""
        return self.graph.blast_radius(symbol_id, hops=hops)

    def shortest_path(self, source_id: str, target_id: str) -> list[str] | None:
        """The shortest call chain from one symbol to the other (None: no chain)."""
        return self.graph.shortest_path(source_id, target_id)

    def hotspots(self, limit: int = 20) -> list[tuple[str, float, float]]:
        """(symbol, PageRank, betweenness) of the most depended-on symbols."""
        return self.graph.hotspots(limit)

    def code_map(self) -> CodeMap:
        """The dashboard's code map over this repository's graph and its tasks' claims (team/codemap.py; in
        remote mode, with a network budget, the team server's)."""
        return CodeMap(self.graph, self.tasks, self.repo)

    # -- the team over the graph ----------------------------------------------------------------

    def conflicts(self, symbol_ids: Sequence[str]) -> list[Conflict]:
        """Other developers' active tasks that claimed code within HOPS call hops of the symbols."""
        return self._conflicts(self.graph, symbol_ids)[0]

    def _conflicts(
        self, graph: Graph | None, symbol_ids: Sequence[str], paths: Sequence[str] = ()
    ) -> tuple[list[Conflict], str]:
        """The conflicts of an edit with other developers' claims: this machine's, and in remote mode
        the team's as the replica last had them; and, when that replica is older than
        REPLICA_STALE_S, how old (" (as of 4 s ago)") for the warnings its claims give."""
        claims, theirs, synced = self._others_and_team_claims()
        remote = {id(intent) for _symbol, intent, _owner in theirs}
        age = None if synced is None else time.time() - synced
        as_of = f" (as of {age:.0f} s ago)" if age is not None and age > REPLICA_STALE_S else ""
        found = find_conflicts(claims, graph, sorted({s for s in symbol_ids if s}), HOPS, paths)
        return found, as_of if any(id(c.intent) in remote for c in found) else ""

    def _others_and_team_claims(self) -> tuple[Claims, Claims, float | None]:
        """Other developers' claims: this machine's, and in remote mode the team's (those of them
        that are also team.db's named by the server's task, the number the commands use); the
        team's part, and when the server answered it."""
        claims = self.team.active_claims(self.repo, other_than=self.developer)
        shared = self.shared
        if shared is None:
            return claims, [], None
        theirs, synced = self._others_claims(shared)
        there = {(symbol, owner) for symbol, _intent, owner in theirs}
        return [c for c in claims if (c[0], c[2]) not in there] + theirs, theirs, synced

    def who_knows(self, symbol_id: str) -> list[Expert]:
        """Developers ranked by their claims, attempts and decisions on the symbol and its neighbours."""
        return self.tasks.who_knows(self.graph, self.repo, symbol_id)

    def why(self, symbol_id: str) -> Why:
        """The symbol's current decision, the ones it superseded, the attempts on it and the people."""
        return self.tasks.why(self.repo, symbol_id)

    def code_history(self, files: Sequence[str], names: Sequence[str]) -> CodeHistory:
        """The history of the files' symbols (paths absolute, or relative to the repository root)
        and of the named symbols, with the lessons that name them. BadInput for a file outside the
        repository or a name of several symbols, NotFound for a name of none."""
        if self.memory.chain.git is None:
            return CodeHistory([], [], [], [], OUTSIDE_GIT)  # team history is keyed by repository
        # A path outside the repository is bad input with or without a graph, so it is checked first.
        paths = [self.repo_path(path) for path in files]
        if not self.graph.is_indexed():
            return CodeHistory(paths, [], [], [], NO_GRAPH)
        ids = [self.symbol(name) for name in names]
        symbols = list(dict.fromkeys([*(s for path in paths for s in self.graph.symbols_in(path)), *ids]))
        lessons = self.memory.citing([cited_name(symbol) for symbol in symbols], limit=CITING_LESSONS)
        return CodeHistory([*paths, *ids], symbols, self._symbol_histories(symbols), lessons)

    def _symbol_histories(self, symbols: Sequence[str]) -> list[SymbolHistory]:
        """The history of those symbols that have one, in the order given: what the pre-edit hook
        says about failed attempts, plus every active decision and other developers' claims on them
        (by the conflict check's rule: active tasks, not idle)."""
        claimed: dict[str, list[Intent]] = {}
        for symbol, intent, _owner in self._others_and_team_claims()[0]:
            claimed.setdefault(symbol, []).append(intent)
        team = self._team_history(list(dict.fromkeys(symbols)))
        found = []
        for symbol in dict.fromkeys(symbols):
            here = self.team.history(self.repo, [symbol], limit=-1)
            known = {_signature(a) for a in here.failed}
            theirs = [a for a in team.failed if symbol in a.symbols and _signature(a) not in known]
            failed = sorted([*here.failed, *theirs], key=lambda a: (-a.last_ts, -a.id))
            decisions = _merged_decisions(here.decisions, [d for d in team.decisions if symbol in d.symbols])
            if failed or decisions or symbol in claimed:
                found.append(SymbolHistory(symbol, failed, decisions, claimed.get(symbol, [])))
        return found

    def _team_history(self, symbols: list[str]) -> History:
        """In remote mode, what the team's attempts and decisions say of the symbols: the team server's own
        answer for a command (it has a network budget; one request per TEAM_QUERY_SYMBOLS symbols), else,
        or when the server does not answer (said as a warning), the replica of the team's recent failures
        the hook server keeps. Empty in local mode: team.db is all there is."""
        shared = self.shared
        if shared is None:
            return History([], [])
        if self.tasks is not self.team:
            try:
                return self._server_history(symbols)
            except TeamUnavailable as exc:  # TeamBusy too
                self.memory.warnings.append(f"the team's attempts are as this machine last heard them: {exc}")
        edited = set(symbols)
        failures = shared.others_failures(self.developer)
        return History([f.attempt for f in failures if not edited.isdisjoint(f.attempt.symbols)], [])

    def _server_history(self, symbols: list[str]) -> History:
        failed: dict[int, Attempt] = {}
        decisions: dict[int, Decision] = {}
        for at in range(0, len(symbols), TEAM_QUERY_SYMBOLS):
            answer = self.tasks.history(self.repo, symbols[at : at + TEAM_QUERY_SYMBOLS], limit=-1)
            failed.update((a.id, a) for a in answer.failed)
            decisions.update((d.id, d) for d in answer.decisions)
        return History(list(failed.values()), list(decisions.values()))

    # -- tasks ----------------------------------------------------------------------------------

    def task_board(self) -> list[Card]:
        """The repository's tasks: active, handed off, then done; latest first."""
        return self.tasks.task_board(self.repo)

    def task(self, task_id: int) -> TaskView:
        """One task as the board shows it, read only (unlike `resume`, which takes it over)."""
        return task_view(self.tasks, self.repo, task_id)

    def create_task(self, title: str) -> Intent:
        """A task started explicitly, owned by this developer."""
        return self.tasks.create_intent(self.developer, self.repo, title)

    def done(self, task_id: int) -> Intent:
        found = self.tasks.done(task_id)
        for twin in self._local_twins(found):
            self.team.done(twin.id)
        return found

    def handoff(self, task_id: int, note: str) -> Note:
        left = self.tasks.handoff(task_id, note, self.developer)
        for twin in self._local_twins(self.tasks.intent(task_id)):
            self.team.handoff(twin.id, note, self.developer)
        return left

    def _local_twins(self, intent: Intent) -> list[Intent]:
        """When a command marked a task of the team server done or handed off: the active tasks of
        team.db that the hooks keep for the same session (same owner and title), so that they stop
        claiming too. None when the command's task was team.db's own."""
        if self.tasks is self.team:
            return []
        active = self.team.intents(self.repo, "active")
        return [i for i in active if (i.owner, i.title) == (intent.owner, intent.title)]

    def resume(self, task_id: int) -> Resume:
        """Take the task over: its claims, failed attempts, active decisions and notes."""
        return self.tasks.resume(task_id, self.developer)

    def decide(self, text: str, symbol_ids: Sequence[str], task_id: int | None = None) -> Decision:
        """A decision about code, by this developer (in a task, if given); it supersedes the
        decisions current on those symbols."""
        return self.tasks.decide(text, symbol_ids, intent_id=task_id, developer=self.developer, repo=self.repo)

    # -- the session's task ---------------------------------------------------------------------

    def intent(self, agent: str, session_id: str, first_prompt: str = "") -> Intent:
        """The session's task in this repository, created from its first prompt on first need."""
        return self.team.intent_for_session(agent, session_id, self.developer, self.repo, first_prompt)

    # -- around an edit ------------------------------------------------------------------------

    def edited_symbols(self, path: str, anchors: Sequence[str] = ()) -> list[str]:
        """The symbols an edit of `path` touches: those around each replaced text when the edit names
        it and the file holds it, else every symbol of the file."""
        relative = self._inside(path)
        if relative is None:
            return []
        lines = _anchor_lines(os.path.join(self.root, relative), anchors)
        if not lines:
            return self.graph.symbols_in(relative)
        found: dict[str, None] = {}
        for start, end in lines:
            symbols = self.graph.symbols_at(relative, start, end)
            found.update(dict.fromkeys(symbols[:1]))  # the innermost: a method, not its whole class
        return list(found)

    def before_edit(
        self, agent: str, session_id: str, paths: Sequence[str], anchors: Sequence[str] = ()
    ) -> tuple[list[str], list[str]]:
        """Claim what the edit touches for the session's task. Returns the lines to show (each
        conflict with another developer's task, once per session, then what failed on this code
        before) and the ids of the symbols the edit touches ([] while the graph is being built: the
        edit then claims its files)."""
        files = [relative for relative in map(self._inside, paths) if relative is not None]
        if not files:
            return [], []
        if not self._graph_ready():
            return self._before_edit_without_graph(agent, session_id, files, anchors), []
        intent = self.intent(agent, session_id)
        self.team.upgrade_file_claims(self.graph, self.repo, intent.id)  # its edits from before the graph
        symbols = [s for path in files for s in self.edited_symbols(path, anchors)]
        if not symbols:
            return [], []
        self.team.claim(intent.id, symbols)
        self._share(agent, session_id, "claim", symbols=symbols)
        conflicts, as_of = self._conflicts(self.graph, symbols, files)
        said = self._warnings(agent, session_id, conflicts, as_of)
        history = self.team.history(self.repo, symbols)
        for attempt in history.failed[:HISTORY_ATTEMPTS]:
            key = warning_key("history", attempt.id)
            if self.team.mark_warned(agent, session_id, key):
                said.append(failed_here_before(attempt))
        said += self._teammates_failed_here(agent, session_id, symbols, history.failed)
        return said, symbols

    def _teammates_failed_here(
        self, agent: str, session_id: str, symbols: Sequence[str], here: Sequence[Attempt]
    ) -> list[str]:
        """Other developers' failed attempts that changed the symbols, from the replica of the team's
        recent failures (remote mode), the latest HISTORY_ATTEMPTS: each once per session, and once
        more when it has been resolved since. One this machine's team.db holds too is said once."""
        shared = self.shared
        if shared is None:
            return []
        edited, known = set(symbols), {_signature(a) for a in here}
        said, now = [], time.time()
        for failure in shared.others_failures(self.developer):
            attempt = failure.attempt
            if edited.isdisjoint(attempt.symbols) or _signature(attempt) in known:
                continue
            key = warning_key("team-history", attempt.id, attempt.resolved_by or "")
            if self.team.mark_warned(agent, session_id, key):
                said.append(teammate_failed_here(failure, now))
            if len(said) == HISTORY_ATTEMPTS:
                break
        return said

    def teammates_hit(self, agent: str, session_id: str, attempt: Attempt | None) -> list[str]:
        """For a failing test run: the other developers' recent failures of the same tests (remote
        mode, from the replica), each once per session (and again once resolved), with what fixed
        them."""
        shared = self.shared
        names = set(attempt.failed) | set(attempt.errors) if attempt is not None else set()
        if shared is None or not names:
            return []
        said, now = [], time.time()
        for failure in shared.others_failures(self.developer):
            hit = [name for name in failure.names if name in names]
            key = warning_key("team-hit", failure.attempt.id, failure.attempt.resolved_by or "")
            if hit and self.team.mark_warned(agent, session_id, key):
                said.append(teammate_hit_this(failure, hit, now))
            if len(said) == TEAMMATE_HITS:
                break
        return said

    def _before_edit_without_graph(
        self, agent: str, session_id: str, files: list[str], anchors: Sequence[str]
    ) -> list[str]:
        """Claim the edited files (at the lines the edit replaces, when it names them) and warn about
        other developers' claims in them."""
        intent = self.intent(agent, session_id)
        claims = []
        for path in files:
            lines = [first for first, _last in _anchor_lines(os.path.join(self.root, path), anchors)]
            claims += file_claim_ids(path, lines)
        self.team.claim(intent.id, claims)
        self._share(agent, session_id, "claim", symbols=claims)
        return self._warnings(agent, session_id, *self._conflicts(None, [], files))

    def _warnings(self, agent: str, session_id: str, conflicts: Sequence[Conflict], as_of: str = "") -> list[str]:
        """Each conflict not shown to this session yet, as the warning line (with the age of the
        team's claims it was found in, when they are not fresh)."""
        return [
            f"heads-up (a warning, not a block): {conflict.describe()}{as_of}"
            for conflict in conflicts
            if self.team.mark_warned(agent, session_id, conflict.key)
        ]

    def upgrade_file_claims(self) -> int:
        """The repository's file claims turned into symbol claims, once its graph exists (after `graph
        index`); how many were converted."""
        return self.team.upgrade_file_claims(self.graph, self.repo) if self.graph.is_indexed() else 0

    def after_edit(self, paths: Sequence[str], agent: str, session_id: str) -> list[str]:
        """Re-index the edited files; record the symbols whose code changed for the session's task."""
        paths = [p for p in paths if self._inside(p) is not None]
        if not paths or not self._graph_ready():
            return []
        touched = [s for path in paths for s in self.graph.reindex_file(path)]
        if touched:
            self.team.record_change(self.intent(agent, session_id).id, touched)
            self._share(agent, session_id, "change", symbols=touched)
        return touched

    def test_run(self, agent: str, session_id: str, command: str, output: str, exit_code: int | None) -> Attempt | None:
        """Record a test command's run as an attempt of the session's task (None: not a test command)."""
        from hivelore.team import testruns

        if not testruns.is_test_command(command):
            return None
        run = testruns.parse(output, command, exit_code)
        attempt = self.team.record_attempt(self.intent(agent, session_id).id, command, run)
        self._share(agent, session_id, "attempt", command=command, run=wire.encode(run))
        return attempt

    def progress(self, agent: str, session_id: str, summary: str) -> None:
        """Keep a session's last summary as a progress note on its task (only if it has one)."""
        if summary.strip() and self.team.session_intent(agent, session_id, self.repo) is not None:
            self.team.note(self.intent(agent, session_id).id, summary.strip(), "progress", self.developer)
            self._share(agent, session_id, "progress", text=summary.strip())

    # -- helpers --------------------------------------------------------------------------------

    def _inside(self, path: str) -> str | None:
        absolute = os.path.realpath(path if os.path.isabs(path) else os.path.join(self.root, path))
        relative = os.path.relpath(absolute, os.path.realpath(self.root))
        return None if relative.startswith("..") else relative.replace(os.sep, "/")

    def _graph_ready(self) -> bool:
        """Whether the graph of this repository exists; if not, start building it in the background."""
        if self.graph.is_indexed():
            return True
        _index_in_background(self.home, self.root)
        return False


def _anchor_lines(path: str, anchors: Sequence[str]) -> list[tuple[int, int]]:
    """The (first, last) line of each place an anchor text occurs in the file as it is before the edit."""
    if not anchors:
        return []
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return []
    spans: list[tuple[int, int]] = []
    for anchor in anchors:
        # Every place the text occurs: an Edit with replace_all changes each, and a patch's context
        # lines may repeat; claiming one more symbol beats missing the one being changed.
        at = text.find(anchor)
        while at >= 0 and len(spans) < MAX_ANCHOR_SPANS:
            first = text.count("\n", 0, at) + 1
            spans.append((first, first + anchor.count("\n")))
            at = text.find(anchor, at + len(anchor))
    return spans


def failed_here_before(attempt: Attempt, when: str = "") -> str:
    """A failed attempt on code about to change, as the pre-edit hook and `context --symbol` say it:
    the command, the failing tests, how often, whether it was resolved, who (and `when`, if given)."""
    who = f"{attempt.developer}, {when}" if when else attempt.developer
    return f"failed here before: `{attempt.command}` — {_failed(attempt)} ({who})"


def teammate_failed_here(failure: SharedFailure, now: float) -> str:
    """A teammate's failed attempt on code about to change, as the pre-edit hook says it: the command,
    the failing tests, whether resolved, who and when, in which task — and what fixed it."""
    attempt = failure.attempt
    who = f'{attempt.developer}, {spoken_day(attempt.last_ts, now)}, in "{failure.title}"'
    line = f"failed here before: `{attempt.command}` — {_failed(attempt)} ({who})"
    return f"{line}; {what_fixed_it(failure, now)}" if failure.fix is not None else line


def teammate_hit_this(failure: SharedFailure, tests: Sequence[str], now: float) -> str:
    """A failing test run's tests that a teammate's attempt failed too, as the failure hook says it."""
    attempt = failure.attempt
    line = (
        f"a teammate hit this: {_names(tests)} failed for {attempt.developer} {spoken_day(attempt.last_ts, now)}"
        f' (`{attempt.command}`, in "{failure.title}")'
    )
    if failure.fix is None:
        return f"{line}; not resolved yet, {attempt.developer} may know more"
    return f"{line}; {what_fixed_it(failure, now)}"


def what_fixed_it(failure: SharedFailure, now: float) -> str:
    """The passing attempt that resolved a teammate's failure: who, when, what it changed, in which task."""
    fix = failure.fix
    if fix is None:
        return "not resolved yet"
    changed = f", changing {_names([cited_name(s) for s in fix.symbols])}" if fix.symbols else ""
    task = f' (in "{failure.fix_title}")' if failure.fix_title and failure.fix_title != failure.title else ""
    return f"what fixed it: {fix.developer}'s passing `{fix.command}` {spoken_day(fix.last_ts, now)}{changed}{task}"


def _merged_decisions(here: Sequence[Decision], team: Sequence[Decision]) -> list[Decision]:
    """team.db's decisions and the team server's, one of each (a decision made in remote mode is the
    server's only), newest first."""
    seen = {(d.developer, d.text, d.ts) for d in here}
    merged = [*here, *(d for d in team if (d.developer, d.text, d.ts) not in seen)]
    return sorted(merged, key=lambda d: (-d.ts, -d.id))


def _signature(attempt: Attempt) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """What makes an attempt of team.db and one of the team server the same failure."""
    return attempt.developer, tuple(sorted(attempt.failed)), tuple(sorted(attempt.errors))


def cited_name(symbol_id: str) -> str:
    """How a lesson names a symbol: `Cart.total` for `shop/cart.py::Cart.total#2`."""
    return symbol_id.rsplit("::", 1)[-1].split("#")[0]


def _names(names: Sequence[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _failed(attempt: Attempt) -> str:
    shown = _names([*attempt.failed, *attempt.errors])
    times = f" ({attempt.count}×)" if attempt.count > 1 else ""
    state = "resolved later" if attempt.resolved_by else "not resolved yet"
    return f"{shown or attempt.outcome}{times}, {state}"


def indexing_marker(home: str, root: str) -> str:
    """The file that says a background index of the repository at `root` is under way (the indexer
    removes it when done; one older than INDEXING_STALE_S is taken to be left by a dead indexer)."""
    import zlib

    return os.path.join(home, f"graph-indexing-{zlib.crc32(root.encode()):08x}")


def _index_in_background(home: str, root: str) -> None:
    import subprocess

    marker = indexing_marker(home, root)
    try:
        if time.time() - os.stat(marker).st_mtime < INDEXING_STALE_S:
            return  # already under way (the indexer removes the marker when it is done)
    except FileNotFoundError:
        pass
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
        with open(fd, "w") as handle:
            handle.write(root)
        subprocess.Popen(
            [sys.executable, "-m", "hivelore", "graph", "index", "--marker", marker],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        pass  # no indexer today: the next hook tries again
