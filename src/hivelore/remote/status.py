"""What this machine knows of its team server: who the token is, whether the server answers, what
waits in the outbox, how old the mirror is, and which scopes each organisation shares.

One service under `hivelore remote status` (cli/remote.py) and the MCP tools `remote_status` and
`org_scopes` (mcp/tools.py). Looking sends what the outbox holds and syncs the mirror first, within
`budget_s`, as a command's read does; when the server does not answer, what the mirror held at its
last sync is shown, with its age.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from hivelore.errors import HiveloreError, Unavailable
from hivelore.memory.scope import Scope
from hivelore.remote import teamshare
from hivelore.remote.client import Client, Refused
from hivelore.remote.credentials import Remote, resolve
from hivelore.remote.outbox import Change
from hivelore.remote.replica import LOGIN, Held, Replica
from hivelore.remote.tier import sharing_space

ORG_SPACE = "org:"


@dataclass
class Outbox:
    waiting: int
    rejected: list[tuple[str, str]]  # (the change, the server's sentence)
    folder: str


@dataclass
class MirrorState:
    synced_seconds_ago: float | None  # None: never synced
    pending: int  # copies the outbox still holds for the server
    path: str
    problem: str | None  # why this look could not send or sync
    shared: dict[str, list[str]]  # per organisation space (org:NAME), the scopes it shares, as of the last sync

    def orgs(self) -> dict[str, list[str]]:
        """Per organisation name, the scopes it shares."""
        return {space.removeprefix(ORG_SPACE): scopes for space, scopes in self.shared.items()}

    def sharing(self, chain: Sequence[Scope]) -> dict[str, str]:
        """Per scope of `chain` that an organisation shares (a branch: through its repository), the
        organisation: a write under it goes to the team."""
        found = {str(scope): sharing_space(scope, self.shared) for scope in chain}
        return {scope: space.removeprefix(ORG_SPACE) for scope, space in found.items() if space}


@dataclass
class TeamStatus:
    remote: Remote
    me: dict[str, object] | None = None  # GET /v1/me: the user, the token's kind, the orgs and roles
    unreachable: str | None = None
    refused: str | None = None  # the server refused the token: what waits in the outbox waits for a login
    outbox: Outbox | None = None  # None without a token the server may receive
    mirror: MirrorState | None = None
    roles: dict[str, str] = field(default_factory=dict)  # per organisation, the user's role

    @property
    def reachable(self) -> bool:
        return self.me is not None

    def as_dict(self) -> dict[str, object]:
        """The report `hivelore remote status --json` prints."""
        found = self.remote
        report: dict[str, object] = {
            "endpoint": found.endpoint.url,
            "endpoint_decided_by": found.endpoint_source,
            "token": found.token_source,
            "approved": found.approved,
        }
        if self.me is not None:
            report["me"] = self.me
        if self.unreachable is not None:
            report["unreachable"] = self.unreachable
        if self.refused is not None:
            report["refused"] = self.refused
        if self.outbox is not None and self.mirror is not None:
            report["outbox"] = {
                "waiting": self.outbox.waiting,
                "rejected": [{"change": change, "why": why} for change, why in self.outbox.rejected],
                "folder": self.outbox.folder,
            }
            mirror = self.mirror
            report["mirror"] = {
                "synced_seconds_ago": mirror.synced_seconds_ago,
                "pending": mirror.pending,
                "path": mirror.path,
                **({"problem": mirror.problem} if mirror.problem else {}),
            }
        elif found.withheld():
            report["withheld"] = found.withheld()
        return report


def look(home: str, found: Remote, budget_s: float) -> TeamStatus:
    """Ask the server who the token is, send the outbox, sync the mirror (each within `budget_s`),
    and say what this machine holds then. A server that does not answer is said, not raised."""
    status = TeamStatus(found)
    if not (found.approved and found.token):
        return status
    try:
        client = Client(found.endpoint, found.token, timeout_s=budget_s)
        client.retry_budget_s = budget_s
        me = client.get("/v1/me")
        status.me = me if isinstance(me, dict) else None
    except Unavailable as exc:  # what waits on this machine is worth showing while the server is away
        status.unreachable = exc.sentence()
    except Refused as exc:
        if not exc.about_token:
            raise
        status.refused = Held(f"the team server refused the token ({exc.sentence().rstrip('.')})", LOGIN).sentence()
    orgs = status.me.get("orgs") if status.me else None
    if isinstance(orgs, list):
        status.roles = {str(o["org"]): str(o["role"]) for o in orgs if isinstance(o, dict)}
    replica = Replica(home, found, budget_s=budget_s)
    try:
        problem = status.unreachable or status.refused  # not asked again: a second wait would tell nothing new
        if problem is None:
            try:
                problem = replica.flush().held
                replica.sync()
            except HiveloreError as exc:
                problem = exc.sentence()
        age = replica.age_s
        status.outbox = Outbox(
            waiting=len(replica.outbox.waiting()),
            rejected=[(_named(c), why) for c, why in replica.outbox.rejected()],
            folder=replica.outbox.folder,
        )
        status.mirror = MirrorState(
            round(age, 1) if age is not None else None,
            replica.mirror.pending(),
            replica.mirror.path,
            problem,
            replica.mirror.shared,
        )
    finally:
        replica.close()
    return status


def look_from(
    home: str, repo_root: str | None, env: Mapping[str, str], token: str | None, budget_s: float
) -> TeamStatus | None:
    """`look` at the team server this folder names (settings, the repository's .hivelore.json, the
    environment; `token` given, else the kept one); None when it names none."""
    found = resolve(home, repo_root, env, token=token)
    return None if found is None else look(home, found, budget_s)


def _named(change: Change) -> str:
    """How the status names a change the server refused."""
    if change.op == teamshare.TEAM:
        return teamshare.describe(change)
    return f"{change.op} {change.body.get('scope')}::{change.body.get('key')}"
