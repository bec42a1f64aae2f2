"""The tier contract (memory/tier.py): every tier keeps memories the same way, so the service's rules
(memory/service.py) give the same answers over any of them.

The suite runs over the local tier (files and the SQLite index), the scan that stands in for it when
the index cannot be used, the team server's tier (PostgreSQL, in the run's own database), the remote
tier a machine in remote mode reads and writes through (its mirror and outbox, in front of the
session's team server on loopback, tests/conftest.py `server`), and `MemoryTier`, a dict that only
this suite uses. A new tier joins the `tier` fixture's parameters and passes the same tests.

Every tier here has two parts, the winning one first (`project` and `home` below): the local tier's
project and home vaults; on the team server, an organisation's space and the user's personal one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from hivelore import errors
from hivelore.memory import recall
from hivelore.memory.local.index import Index
from hivelore.memory.local.tier import LocalTier, ScanTier
from hivelore.memory.local.vault import Vault
from hivelore.memory.model import Memory, iso_from_epoch, now_iso, parse_address
from hivelore.memory.scope import Scope
from hivelore.memory.tier import Build, Candidate, Merge, Survey, Tier, Wanted
from hivelore.remote.tier import NO_BATCH, RemoteTier

TYPE_CHECKING = False
if TYPE_CHECKING:
    from teamserver import Server

CHAIN = ["repo::acme/checkout", "global"]  # narrowest first, as the service passes scopes
POSTGRES = "pnpm test fails with ECONNREFUSED 5432 until the postgres container is up"
REDIS = "the worker tests fail with ECONNREFUSED 6379 until redis is up"


class MemoryTier(Tier):
    """The contract's plainest tier: memories in a dict, by (origin, scope, key)."""

    def __init__(self, warnings: list[str]) -> None:
        self.parts = {"project": "memory:project", "home": "memory:home"}
        self.warnings = warnings
        self._kept: dict[tuple[str, str, str], Memory] = {}
        self._changes = 0

    def _all(self, scopes: Sequence[str], include_hidden: bool) -> list[Candidate]:
        return [
            Candidate.of(memory, origin, f"{scope}/{key}")
            for (origin, scope, key), memory in self._kept.items()
            if scope in scopes and (include_hidden or memory.is_visible())
        ]

    def copies(self, scopes: Sequence[str], keys: set[str]) -> list[Candidate]:
        return [c for c in self._all(scopes, include_hidden=True) if c.key in keys]

    def listed(self, scopes: Sequence[str], include_hidden: bool = False) -> list[Candidate]:
        return self._all(scopes, include_hidden)

    def match(self, scopes: Sequence[str], words: Sequence[str], limit: int) -> list[tuple[Candidate, float]]:
        scored = [(c, recall.word_overlap(c, words)) for c in self._all(scopes, include_hidden=False)]
        return sorted([(c, s) for c, s in scored if s > 0], key=lambda pair: -pair[1])[:limit]

    def survey(self, scopes: Sequence[str], per_scope: int) -> Survey:
        visible = self._all(scopes, include_hidden=False)
        return Survey(self.counts(scopes), visible, len(visible) - len({c.key for c in visible}))

    def rivals(self, scopes: Sequence[str], of: Sequence[Candidate]) -> list[Candidate]:
        have, keys = {(c.origin, c.place) for c in of}, {c.key for c in of}
        visible = self._all(scopes, include_hidden=False)
        return [c for c in visible if c.key in keys and (c.origin, c.place) not in have]

    def fresh(self, candidate: Candidate) -> Candidate | None:
        memory = self._kept.get((candidate.origin, candidate.scope, candidate.key))
        return Candidate.of(memory, candidate.origin, candidate.place) if memory and memory.is_visible() else None

    def counts(self, scopes: Sequence[str]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for c in self._all(scopes, include_hidden=False):
            counts[c.scope] = counts.get(c.scope, 0) + 1
        return counts

    def generation(self) -> int:
        return self._changes

    def scopes(self) -> set[str]:
        return {scope for _, scope, _ in self._kept}

    def everything(self, include_hidden: bool = False) -> Iterator[Memory]:
        return iter([m for m in self._kept.values() if include_hidden or m.is_visible()])

    def store(
        self, part: str, scope: Scope, key: str, build: Build, prefer: Candidate | None = None
    ) -> tuple[Path, Memory | None, Memory | None]:
        origin = self.parts[part]
        existing = self._kept.get((origin, str(scope), key))
        memory = build(existing)
        if memory is not None:
            self._kept[(origin, str(scope), key)] = memory
            self._changes += 1
        return Path(origin, f"{scope}/{key}"), existing, memory

    def delete(self, candidate: Candidate, still: Callable[[Memory], bool]) -> bool:
        memory = self._kept.get((candidate.origin, candidate.scope, candidate.key))
        if memory is None or not still(memory):
            return False
        del self._kept[(candidate.origin, candidate.scope, candidate.key)]
        self._changes += 1
        return True

    def unwritable(self, part: str, memories: Sequence[Memory]) -> dict[str, ValueError]:
        return {}

    def store_batch(self, part: str, memories: Sequence[Memory], merge: Merge) -> tuple[list[str], list[str]]:
        written, unchanged = [], []
        for memory in memories:
            _, _, kept = self.store(part, memory.scope, memory.key, lambda existing, m=memory: merge(m, existing))
            (written if kept is not None else unchanged).append(memory.address)
        return written, unchanged


def _vaults(tmp_path: Path) -> list[Vault]:
    vaults = [Vault(tmp_path / "repo" / ".hivelore", "project"), Vault(tmp_path / "home", "home")]
    for vault in vaults:
        vault.root.mkdir(parents=True)
    return vaults


def _local(tmp_path: Path, warnings: list[str]) -> Tier:
    index_path = tmp_path / "home" / "index.db"
    return LocalTier(_vaults(tmp_path), None, index_path, warnings, Index.open(index_path, create=True))


def _scan(tmp_path: Path, warnings: list[str]) -> Tier:
    return ScanTier(_vaults(tmp_path), None, tmp_path / "home" / "index.db", warnings, "no index here")


TIERS = {"local": _local, "scan": _scan, "memory": lambda tmp_path, warnings: MemoryTier(warnings)}


@pytest.fixture(params=[*TIERS, "postgres", "remote"])
def tier(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Tier]:
    if request.param == "postgres":
        yield from _postgres(request.getfixturevalue("database_url"))
        return
    if request.param == "remote":
        yield from _remote(request.getfixturevalue("database_url"), request.getfixturevalue("server").url, tmp_path)
        return
    made = TIERS[request.param](tmp_path, [])
    yield made
    made.close()


def _postgres(database_url: str) -> Iterator[Tier]:
    """The team server's tier, over spaces of this test's own in the run's database."""
    import secrets

    import psycopg

    from hivelore.server.postgres.tier import PostgresTier

    test = secrets.token_hex(6)
    with psycopg.connect(database_url, autocommit=True) as conn:
        yield PostgresTier(conn, {"project": f"test:{test}:project", "home": f"test:{test}:home"}, [])


def _remote(database_url: str, server_url: str, tmp_path: Path) -> Iterator[Tier]:
    made = _remote_tier(server_url, _team_user(database_url), tmp_path / "hivelore-home", online=True)
    yield made
    made.close()


def _team_user(database_url: str) -> str:
    """A user of this test's own on the team server, who owns an organisation: their token."""
    import secrets

    import psycopg

    from hivelore.server.postgres import accounts

    test = secrets.token_hex(6)
    with psycopg.connect(database_url, autocommit=True) as conn:
        user = accounts.add_user(conn, f"contract-{test}")
        accounts.create_org(conn, f"contract-{test}", user.id)
        return accounts.create_token(conn, user.id, "rw").token


def _remote_tier(server_url: str, token: str, home: Path, online: bool) -> RemoteTier:
    """The remote tier of a machine whose home is `home`, its mirror synced, as a command opens it
    (remote/migration.py `open_remote`); `online=False` is a hook's, which never asks the server."""
    from hivelore.memory.service import COMMAND_NETWORK_BUDGET_S
    from hivelore.remote.client import Endpoint
    from hivelore.remote.credentials import Remote
    from hivelore.remote.replica import Replica

    remote = Remote(Endpoint(server_url), "the contract", token, "the contract", approved=True)
    replica = Replica(str(home), remote, COMMAND_NETWORK_BUDGET_S)
    replica.sync()
    return RemoteTier(replica, [], online)


@pytest.fixture
def team(database_url: str, server: Server, tmp_path: Path) -> Iterator[Callable[..., RemoteTier]]:
    """The remote tiers of one user's machines: `team("laptop")`, `team("laptop", online=False)`."""
    token, opened = _team_user(database_url), []

    def machine(name: str, online: bool = True) -> RemoteTier:
        opened.append(_remote_tier(server.url, token, tmp_path / name, online))
        return opened[-1]

    yield machine
    for made in opened:
        made.close()


@pytest.fixture(params=["local", "scan"])
def file_tier(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Tier]:
    made = TIERS[request.param](tmp_path, [])
    yield made
    made.close()


def project(tier: Tier) -> str:
    """The part that wins: the local tier's project vault, an organisation's space on the team server."""
    return list(tier.parts)[0]


def home(tier: Tier) -> str:
    """The other part: the local tier's home vault, the user's personal space on the team server."""
    return list(tier.parts)[1]


def put(tier: Tier, address: str, value: str, part: str | None = None, **fields: object) -> Memory:
    """Write `address` (in the home part, unless another is named) as the service would: a new memory,
    or the one there with the new value."""
    scope, key = parse_address(address)
    now = now_iso()

    def build(existing: Memory | None) -> Memory:
        if existing is None:
            return Memory(scope=scope, key=key, value=value, created=now, updated=now, **fields)  # type: ignore[arg-type]
        return existing.evolve(value=value, seen_count=existing.seen_count + 1, **fields)

    _, _, memory = tier.store(part or home(tier), scope, key, build)
    assert memory is not None
    return memory


def keys(candidates: Sequence[Candidate]) -> list[str]:
    return sorted(c.key for c in candidates)


# -- store, copies, delete ------------------------------------------------------------------------------------------


def test_a_stored_memory_is_the_one_copy_of_its_key(tier: Tier) -> None:
    put(tier, "repo::acme/checkout::tests-need-postgres", POSTGRES)
    [copy] = tier.copies(CHAIN, {"tests-need-postgres"})
    assert (copy.scope, copy.key, copy.memory.value) == ("repo::acme/checkout", "tests-need-postgres", POSTGRES)
    assert copy.origin == tier.parts[home(tier)]
    assert tier.copies(CHAIN, {"another-key"}) == []


def test_build_gets_what_is_there_and_none_leaves_it_alone(tier: Tier) -> None:
    scope, key = parse_address("global::redis")
    put(tier, "global::redis", REDIS)
    seen: list[Memory | None] = []

    def look(existing: Memory | None) -> Memory | None:
        seen.append(existing)
        return None

    _, before, after = tier.store(home(tier), scope, key, look)
    assert seen[0] is not None and seen[0].value == REDIS
    assert (before, after) == (seen[0], None)
    assert put(tier, "global::redis", "redis must run first").seen_count == 2
    assert [c.memory.value for c in tier.copies(CHAIN, {"redis"})] == ["redis must run first"]


def test_each_part_keeps_its_own_copy_of_a_key(tier: Tier) -> None:
    put(tier, "global::redis", "home's word", part=home(tier))
    put(tier, "global::redis", "the project's word", part=project(tier))
    copies = tier.copies(CHAIN, {"redis"})
    assert {(c.origin, c.memory.value) for c in copies} == {
        (tier.parts[home(tier)], "home's word"),
        (tier.parts[project(tier)], "the project's word"),
    }


def test_a_copy_is_deleted_only_while_it_still_qualifies(tier: Tier) -> None:
    put(tier, "global::redis", REDIS)
    [copy] = tier.copies(CHAIN, {"redis"})
    assert not tier.delete(copy, lambda memory: memory.archived_at is not None)
    assert tier.copies(CHAIN, {"redis"}) != []
    assert tier.delete(copy, lambda memory: True)
    assert tier.copies(CHAIN, {"redis"}) == []
    assert not tier.delete(copy, lambda memory: True)  # gone already


# -- reads ------------------------------------------------------------------------------------------------------------


def test_hidden_copies_are_listed_only_when_asked_for(tier: Tier) -> None:
    # The team server hides "short-lived" by archiving it: its write takes a time to live from now,
    # which cannot be past, so the remote tier archives a memory stored already expired.
    put(tier, "global::redis", REDIS)
    put(tier, "global::old-way", "run make db", archived_at=now_iso())
    put(tier, "global::short-lived", "the staging db is down", expires_at=iso_from_epoch(1_000_000))
    assert keys(tier.listed(CHAIN)) == ["redis"]
    assert keys(tier.listed(CHAIN, include_hidden=True)) == ["old-way", "redis", "short-lived"]
    assert keys(tier.copies(CHAIN, {"old-way", "short-lived"})) == ["old-way", "short-lived"]


def test_match_finds_the_visible_copies_that_hold_the_words_best_first(tier: Tier) -> None:
    put(tier, "repo::acme/checkout::db-down", POSTGRES)
    put(tier, "global::redis-down", REDIS)
    put(tier, "global::old-db-down", POSTGRES, archived_at=now_iso())
    put(tier, "global::lint", "ruff format before every commit")
    hits = tier.match(CHAIN, ["econnrefused", "5432"], limit=10)
    assert [c.key for c, _ in hits] == ["db-down", "redis-down"]
    assert all(relevance > 0 for _, relevance in hits)
    assert tier.match(CHAIN, ["econnrefused", "5432"], limit=1)[0][0].key == "db-down"  # the best one at least
    assert tier.match(["global"], ["5432"], limit=10) == []  # in another scope


def test_a_survey_counts_visible_memories_and_the_copies_that_lose(tier: Tier) -> None:
    put(tier, "repo::acme/checkout::db", POSTGRES)
    put(tier, "global::db", "databases run in containers here")
    put(tier, "global::redis", REDIS)
    put(tier, "global::old-way", "run make db", archived_at=now_iso())
    survey = tier.survey(CHAIN, per_scope=50)
    assert survey.counts == {"repo::acme/checkout": 1, "global": 2}
    assert survey.shadowed == 1  # global::db loses to the repository's db
    assert keys(survey.candidates) == ["db", "db", "redis"]
    assert tier.counts(CHAIN) == survey.counts
    assert tier.counts(["global"]) == {"global": 2}


def test_the_rivals_of_a_copy_are_the_other_visible_copies_of_its_key(tier: Tier) -> None:
    put(tier, "repo::acme/checkout::db", POSTGRES)
    put(tier, "global::db", "databases run in containers here")
    put(tier, "global::db", "the project says: containers", part=project(tier))
    put(tier, "global::redis", REDIS)
    [narrowest] = tier.copies(["repo::acme/checkout"], {"db"})
    rivals = tier.rivals(CHAIN, [narrowest])
    assert sorted(c.memory.value for c in rivals) == [
        "databases run in containers here",
        "the project says: containers",
    ]
    [redis] = tier.copies(CHAIN, {"redis"})
    assert tier.rivals(CHAIN, [redis]) == []


def test_fresh_gives_a_copy_as_it_is_now(tier: Tier) -> None:
    put(tier, "global::redis", REDIS)
    [copy] = tier.copies(CHAIN, {"redis"})
    put(tier, "global::redis", "redis 7 or later")
    fresh = tier.fresh(copy)
    assert fresh is not None and fresh.memory.value == "redis 7 or later"
    put(tier, "global::redis", "redis 7 or later", archived_at=now_iso())
    assert tier.fresh(copy) is None


def test_a_page_is_the_slice_of_the_copies_wanted_in_listing_order(tier: Tier) -> None:
    """A tier's own `page` (an index's, SQL's) gives what `Tier.page`, reading every copy, gives."""
    put(tier, "repo::acme/checkout::db", POSTGRES, tags=["db"], kind="fact")
    put(tier, "repo::acme/checkout::Zeta", "capitals sort first by code point", part=project(tier))
    put(tier, "repo::acme/checkout::alpha", "the project's first", part=project(tier), state="staged")
    put(tier, "global::db", "databases run in containers here", tags=["db", "docker"])
    put(tier, "global::db", "the project says: containers", part=project(tier))
    put(tier, "global::redis", REDIS, expires_at=iso_from_epoch(time.time() + 86_400))
    put(tier, "global::old-way", "run make db", archived_at=now_iso())
    put(tier, "global::gone", "the staging db is down", expires_at=iso_from_epoch(1_000_000), kind="fact")
    soon = time.time() + 7 * 86_400
    asked = [
        Wanted(),
        Wanted(hidden=True),
        Wanted(hidden=True, kind="fact"),
        Wanted(kind="fact"),
        Wanted(state="staged"),
        Wanted(tag="db"),
        Wanted(expiring_before=soon),
        Wanted(origins=frozenset({tier.parts[project(tier)]})),
        Wanted(hidden=True, words=("make",)),
    ]
    for wanted in asked:
        for offset, limit in [(0, 50), (0, 2), (1, 2), (4, 3), (9, 2)]:
            own, total = tier.page(CHAIN, wanted, offset, limit)
            every, expected = Tier.page(tier, CHAIN, wanted, offset, limit)
            assert [(c.origin, c.place) for c in own] == [(c.origin, c.place) for c in every], (wanted, offset)
            assert total == expected, (wanted, offset)
    assert tier.page(CHAIN, Wanted(), 0, 50)[1] == 6  # the visible copies


def test_the_generation_moves_with_every_change(tier: Tier) -> None:
    before = tier.generation()
    put(tier, "global::redis", REDIS)
    stored = tier.generation()
    assert stored != before
    [copy] = tier.copies(CHAIN, {"redis"})
    tier.delete(copy, lambda memory: True)
    assert tier.generation() != stored


def test_scopes_and_everything_cover_every_scope(tier: Tier) -> None:
    put(tier, "repo::acme/checkout::db", POSTGRES)
    put(tier, "project::shop::redis", REDIS, part=project(tier))
    put(tier, "global::old-way", "run make db", archived_at=now_iso())
    assert tier.scopes() == {"repo::acme/checkout", "project::shop", "global"}
    assert sorted(m.key for m in tier.everything()) == ["db", "redis"]
    assert sorted(m.key for m in tier.everything(include_hidden=True)) == ["db", "old-way", "redis"]


# -- batches (an import) ---------------------------------------------------------------------------------------------


def _incoming(address: str, value: str) -> Memory:
    scope, key = parse_address(address)
    return Memory(scope=scope, key=key, value=value, created=now_iso(), updated=now_iso())


def _merge(incoming: Memory, existing: Memory | None) -> Memory | None:
    return None if existing is not None and existing.value == incoming.value else incoming


def test_a_batch_writes_what_changed_and_leaves_the_rest(tier: Tier) -> None:
    put(tier, "global::redis", REDIS)
    batch = [_incoming("global::redis", REDIS), _incoming("global::db", POSTGRES), _incoming("global::lint", "ruff")]
    if isinstance(tier, RemoteTier):
        # What the remote tier does instead: it takes no batch. `merge` runs where a batch is kept, and
        # the server's import runs its own merge (keeping `created`, deriving `updated` and `seen_count`,
        # which a write cannot set), so the import a batch is for goes through `migrate --to remote`.
        # Every address is unwritable, so an import refuses before writing anything, and a batch
        # sent anyway is refused whole.
        problems = tier.unwritable(home(tier), batch)
        assert sorted(problems) == ["global::db", "global::lint", "global::redis"]
        assert {str(problem) for problem in problems.values()} == {NO_BATCH}
        with pytest.raises(errors.BadInput, match="migrate --to remote"):
            tier.store_batch(home(tier), batch, _merge)
        assert keys(tier.listed(["global"])) == ["redis"]
        return
    assert tier.unwritable(home(tier), batch) == {}
    written, unchanged = tier.store_batch(home(tier), batch, _merge)
    assert (written, unchanged) == (["global::db", "global::lint"], ["global::redis"])
    assert keys(tier.listed(["global"])) == ["db", "lint", "redis"]


# -- what only tiers of files meet: files people broke by hand ------------------------------------------------------


def test_a_broken_file_is_skipped_with_one_warning_and_blocks_writes_to_its_key(
    file_tier: Tier, tmp_path: Path
) -> None:
    put(file_tier, "global::redis", REDIS)
    broken = tmp_path / "home" / "global" / "db.md"
    broken.write_text("---\nscope: global\nkey: db\ntags: [broken\n---\nx\n")
    assert keys(file_tier.listed(CHAIN)) == ["redis"]
    assert keys(file_tier.listed(CHAIN)) == ["redis"]
    [warning] = [w for w in file_tier.warnings if str(broken) in w]
    assert warning == f"skipped {broken}: its frontmatter is not valid YAML (while parsing a flow sequence)"
    problems = file_tier.unwritable("home", [_incoming("global::db", POSTGRES)])
    assert list(problems) == ["global::db"] and "cannot be read" in str(problems["global::db"])


# -- what only the remote tier meets: a mirror behind the server, and an outbox -------------------------------------


def test_a_copy_another_machine_deleted_is_not_deleted_again(team: Callable[..., RemoteTier]) -> None:
    laptop, desktop = team("laptop"), team("desktop")
    put(laptop, "global::redis", REDIS)
    desktop.replica.sync()
    [there] = desktop.copies(CHAIN, {"redis"})
    [here] = laptop.copies(CHAIN, {"redis"})
    assert laptop.delete(here, lambda memory: True)
    assert not desktop.delete(there, lambda memory: True)  # gone from the server before its mirror heard
    desktop.replica.sync()
    assert desktop.copies(CHAIN, {"redis"}) == []


def test_a_hidden_memory_stored_without_asking_the_server_reaches_it_hidden(team: Callable[..., RemoteTier]) -> None:
    hook = team("laptop", online=False)
    put(hook, "global::old-way", "run make db", archived_at=now_iso())
    assert keys(hook.listed(CHAIN)) == [] and keys(hook.listed(CHAIN, include_hidden=True)) == ["old-way"]
    assert [change.op for change in hook.replica.outbox.waiting()] == ["write", "archive"]
    flushed = hook.replica.flush()
    hook.replica.sync()
    assert (flushed.sent, flushed.rejected) == (2, [])
    [copy] = hook.copies(CHAIN, {"old-way"})
    assert copy.memory.archived_at is not None and keys(hook.listed(CHAIN)) == []
