"""The history of some code, as `hivelore context --file/--symbol` and the MCP tool `code_history`
give it (`Coordination.code_history` gathers it): what failed on its symbols before, what was
decided, which other developers' tasks are changing them, and the lessons that name them — or why
there is nothing to look at.
"""

from __future__ import annotations

from hivelore.sqlitedb import Record
from hivelore.team.model import Attempt, Decision, Intent

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from hivelore.memory import recall

CITING_LESSONS = 5
OUTSIDE_GIT = "no code history here: this folder is not in a git repository"
NO_GRAPH = "no code graph for this repository yet: run `hivelore graph index`"


class SymbolHistory(Record):
    """What an agent about to edit `symbol` should know: the failed attempts on it (latest first),
    its active decisions (newest first) and the active tasks of other developers that claimed it."""

    __slots__ = ("symbol", "failed", "decisions", "claimed_by")

    def __init__(self, symbol: str, failed: list[Attempt], decisions: list[Decision], claimed_by: list[Intent]) -> None:
        self.symbol, self.failed, self.decisions, self.claimed_by = symbol, failed, decisions, claimed_by

    def to_json(self) -> dict[str, object]:
        return {
            "symbol": self.symbol,
            "failed": [a.to_dict() for a in self.failed],
            "decisions": [d.to_dict() for d in self.decisions],
            "claimed_by": [{"developer": i.owner, "task": i.id, "title": i.title} for i in self.claimed_by],
        }


class CodeHistory(Record):
    """The code asked about (`asked`: files and symbol ids as the graph names them), the symbols
    examined, those with history, the lessons that name them — or, in `problem`, why there is
    nothing to look at."""

    __slots__ = ("asked", "symbols", "history", "lessons", "problem")

    def __init__(
        self,
        asked: list[str],
        symbols: list[str],
        history: list[SymbolHistory],
        lessons: list[recall.Ranked],
        problem: str = "",
    ) -> None:
        self.asked, self.symbols, self.history, self.lessons, self.problem = (
            asked, symbols, history, lessons, problem
        )  # fmt: skip

    def to_json(self) -> dict[str, object]:
        """What `context --json` answers as its `code` member, and the MCP tool as its result."""
        return {
            "asked": self.asked,
            "symbols": self.symbols,
            "history": [history.to_json() for history in self.history],
            "lessons": [hit.row.memory.to_dict() for hit in self.lessons],
            "problem": self.problem or None,
        }
