"""One task as a reader sees it, read from any team store: what `Coordination.task` shows on a machine
and the team server's task page shows over PostgreSQL (server/board.py), so both read it one way."""

from __future__ import annotations

from hivelore.team.model import Decision, TaskView

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from hivelore.team.contract import TeamStore


def task_view(team: TeamStore, repo: str, task_id: int) -> TaskView:
    """Task `task_id` of `repo`: its claims, every attempt, its notes, and the decisions on the symbols it
    claimed (current ones, then the ones they superseded; latest first). Reading never takes it over."""
    claims = team.claims(task_id)
    decisions: dict[int, Decision] = {}
    for claim in claims:
        for decision in team.decisions(repo, claim.symbol, include_superseded=True):
            decisions[decision.id] = decision
    ordered = sorted(decisions.values(), key=lambda d: (-d.ts, -d.id))
    return TaskView(
        team.intent(task_id),
        claims,
        team.attempts(task_id),
        team.notes(task_id),
        [d for d in ordered if d.active],
        [d for d in ordered if not d.active],
    )
