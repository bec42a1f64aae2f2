"""The rules of the team's failures as another machine hears them (remote mode): when a teammate's
failure was, said as a person would; the lines the pre-edit and failure hooks say, with what fixed it;
the replica file they are read from; and claims of team.db and of the team server merged without
one task's number hiding another's."""

from __future__ import annotations

import time
from pathlib import Path

from hivelore.remote.teamshare import FailuresReplica
from hivelore.team import wire
from hivelore.team.coordination import teammate_failed_here, teammate_hit_this
from hivelore.team.model import Attempt, Intent, SharedFailure, find_conflicts, spoken_day

REFRESH = "shop/sessions.py::refresh_session"
TEST = "tests/test_auth.py::test_refresh_session"
COMMAND = "pytest -q tests/test_auth.py"


def at(year: int, month: int, day: int, hour: int = 12, minute: int = 0) -> float:
    """A moment on this machine's calendar (spoken_day speaks local time)."""
    return time.mktime((year, month, day, hour, minute, 0, 0, 0, -1))


def attempt(id: int, developer: str, outcome: str, when: float, resolved_by: int | None = None) -> Attempt:
    failed = (TEST,) if outcome == "failed" else ()
    return Attempt(id, 7, developer, COMMAND, outcome, failed, (), (REFRESH,), 1, when, when, resolved_by, ())


def test_a_moment_is_said_as_a_teammate_would_say_it() -> None:
    now = at(2026, 12, 3, 9, 30)  # a Thursday
    assert spoken_day(at(2026, 12, 3, 8, 5), now) == "today at 08:05"
    assert spoken_day(at(2026, 12, 2, 23, 59), now) == "yesterday"
    assert spoken_day(at(2026, 12, 1), now) == "on Tuesday"
    assert spoken_day(at(2026, 11, 27), now) == "on Friday"  # six days back
    assert spoken_day(at(2026, 11, 26), now) == "on 26 Nov"  # a week back: the date
    assert spoken_day(now + 60, now) == "today at 09:31"  # another machine's clock a little ahead


def test_the_pre_edit_line_says_who_failed_when_in_which_task_and_what_fixed_it() -> None:
    now = at(2026, 12, 3, 9, 30)
    open_failure = SharedFailure(attempt(4, "dev-c", "failed", at(2026, 12, 2, 16)), "rotate refresh tokens", None, "")
    assert teammate_failed_here(open_failure, now) == (
        f'failed here before: `{COMMAND}` — {TEST}, not resolved yet (dev-c, yesterday, in "rotate refresh tokens")'
    )
    fix = attempt(9, "dev-e", "passed", at(2026, 12, 3, 9, 2))
    fixed = SharedFailure(attempt(4, "dev-c", "failed", at(2026, 12, 1, 16), 9), "rotate refresh tokens", fix, "keep")
    assert teammate_failed_here(fixed, now) == (
        f'failed here before: `{COMMAND}` — {TEST}, resolved later (dev-c, on Tuesday, in "rotate refresh tokens");'
        f' what fixed it: dev-e\'s passing `{COMMAND}` today at 09:02, changing refresh_session (in "keep")'
    )


def test_the_failure_hook_line_names_the_tests_both_hit() -> None:
    now = at(2026, 12, 3, 9, 30)
    failure = SharedFailure(attempt(4, "dev-c", "failed", at(2026, 12, 1, 16)), "rotate refresh tokens", None, "")
    assert teammate_hit_this(failure, [TEST], now) == (
        f'a teammate hit this: {TEST} failed for dev-c on Tuesday (`{COMMAND}`, in "rotate refresh tokens");'
        " not resolved yet, dev-c may know more"
    )


def test_the_failures_replica_reads_back_what_it_kept_and_nothing_from_a_damaged_file(tmp_path: Path) -> None:
    replica = FailuresReplica(str(tmp_path / "server.failures.json"))
    assert replica.read("acme/shop") == []  # never written
    fix = attempt(9, "dev-e", "passed", 2.0)
    kept = [SharedFailure(attempt(4, "dev-c", "failed", 1.0, 9), "rotate", fix, "keep")]
    replica.write({"acme/shop": wire.encode(kept)})  # type: ignore[dict-item]
    assert replica.read("acme/shop") == kept and replica.read("acme/other") == []
    Path(replica.path).write_text("{not json")
    assert replica.read("acme/shop") == []


def test_two_tasks_with_one_number_one_of_team_db_one_of_the_server_each_warn() -> None:
    mine = Intent(3, "acme/shop", "local task", "dev-x", "active", 0.0, 0.0)
    theirs = Intent(3, "acme/shop", "server task", "dev-y", "active", 0.0, 0.0)
    found = find_conflicts([(REFRESH, mine, "dev-x"), (REFRESH, theirs, "dev-y")], None, [], paths=["shop/sessions.py"])
    assert [c.intent.title for c in found] == ["local task", "server task"]
    assert len({c.key for c in found}) == 2  # each warned once, neither in place of the other
