"""The remote mirror's rules that need no server: which answer wins when two arrive out of order."""

from __future__ import annotations

from pathlib import Path

from hivelore.memory.model import Memory, iso_from_epoch
from hivelore.memory.scope import parse
from hivelore.remote.mirror import Mirror, path_for
from hivelore.remote.replica import refresh_mirrors

SPACE = "org:acme"
SCOPE = "repo::acme/checkout"


def lesson(value: str, updated: float) -> Memory:
    stamp = iso_from_epoch(updated)
    return Memory(scope=parse(SCOPE), key="db-port", value=value, created=stamp, updated=stamp)


def held(mirror: Mirror) -> list[str]:
    return [memory.value for memory in mirror.everything(include_hidden=True)]


def test_a_late_answer_to_an_older_change_does_not_replace_the_newer_row(tmp_path: Path) -> None:
    mirror = Mirror.open(str(tmp_path / "server.db"))
    mirror.put(SPACE, lesson("postgres listens on 5433 now", 2_000_000_000.0), pending=False)
    mirror.put(SPACE, lesson("postgres listens on 5432", 1_999_999_000.0), pending=False)
    assert held(mirror) == ["postgres listens on 5433 now"]


def test_a_newer_answer_replaces_the_row_and_the_outbox_copy(tmp_path: Path) -> None:
    mirror = Mirror.open(str(tmp_path / "server.db"))
    mirror.put(SPACE, lesson("postgres listens on 5432", 1_999_999_000.0), pending=False)
    mirror.put(SPACE, lesson("postgres listens on 5433 (queued)", 1_999_999_500.0), pending=True)
    assert held(mirror) == ["postgres listens on 5433 (queued)"]
    mirror.put(SPACE, lesson("postgres listens on 5433", 2_000_000_000.0), pending=False)
    assert held(mirror) == ["postgres listens on 5433"] and mirror.pending() == 0


def test_the_hook_server_says_why_it_cannot_sync_a_mirror_whose_token_only_commands_have(tmp_path: Path) -> None:
    home, url = str(tmp_path / "home"), "https://hivelore.acme.dev"
    with Mirror.open(path_for(home, url)) as mirror:
        mirror.bind(url, "digest-of-a-token-from-HIVELORE_TOKEN")
    (problem,) = refresh_mirrors(home, budget_s=1.0)
    assert problem.startswith(f"{url}: no token kept for it") and "hivelore remote login" in problem
