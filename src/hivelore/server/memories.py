"""One caller's memory on the team server: the memory service (memory/service.py) composed over
PostgreSQL, so validation, the guard, scope precedence and ranking are the very rules a machine runs.

What differs from one machine is who may do what, and where a write goes:

- The caller reads their own space (`personal`) and the shared space of every organisation they
  belong to (`org:NAME`), the organisations' first: an org's shared copy of a key wins over a
  personal one, as a repository's committed copy wins over the home's on one machine.
- A write under a scope an organisation shares (the scope itself, or a branch of a shared
  repository) by a member of it (role member or above) goes to that organisation's one shared row;
  any other write goes to the caller's personal space, and the answer says so.
- An import places each record the same way: by its scope's sharing, never by an older copy.
- Archive and restore in an organisation's space need the role member; forget needs admin.
- While an organisation has a repository switched off (orgswitch.py), the server keeps and serves
  nothing under it (or a branch of it) for the organisation's members, in any of their spaces: a
  write there, or a read of one memory there, is refused (403) with a sentence naming the
  organisation and who can switch it back on; searches, lists and the session-start block leave it
  out. Strangers to the organisation are not its to govern.
- A token's scope allow-list is checked by the routes before the service is called.
- PostgreSQL indexes and searches words of at most 2,047 bytes, and a search counts each of its
  words over the spaces read: a longer word, or a search of more than MAX_QUERY_WORDS words, is
  refused with a sentence (a machine's SQLite has neither limit).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import psycopg

from hivelore.errors import BadInput
from hivelore.memory import bm25, citations, recall
from hivelore.memory.model import Memory
from hivelore.memory.scope import Chain, Level, Scope, parse
from hivelore.memory.service import Budgets, MemoryService, Target, WriteResult
from hivelore.memory.tier import Candidate, Tier
from hivelore.memory.transfer import ImportRecord
from hivelore.orgswitch import OrgSwitch
from hivelore.server import auth
from hivelore.server.postgres.tier import PostgresTier, indexed
from hivelore.server.postgres.vectors import Meaning

PERSONAL = "personal"
PROVENANCE_KEYS = ("agent", "session", "repo", "branch", "commit")  # what a client may say of a write
BUDGETS = Budgets(context_budget_chars=2000, context_line_chars=240, search_limit=10)  # config.DEFAULTS
CHANGE_ROLES = {"archive": "member", "restore": "member", "commit": "member", "forget": "admin"}
MAX_WORD_BYTES = 2047  # PostgreSQL's longest word in a tsvector or a tsquery
MAX_QUERY_WORDS = 100  # distinct words of one search


def check_words(what: str, tokens: Iterable[str], advice: str = "break it up with spaces") -> None:
    """Refuse text holding a word (a token as the index makes them) PostgreSQL cannot index or search."""
    longest = max((len(token.encode()) for token in tokens), default=0)
    if longest > MAX_WORD_BYTES:
        raise BadInput(
            f"{what} holds a word of {longest:,} bytes, and the team server indexes words of at most"
            f" {MAX_WORD_BYTES:,}: {advice}."
        )


def check_indexable(key: str, value: str, tags: Sequence[str]) -> None:
    # The columns as the tier will write them (stripped, as the service stores a value): made once.
    columns = indexed(key, value.strip(), tuple(tags))
    for what, tokens in zip(("the key", "the value", "the tags"), columns, strict=True):
        check_words(what, tokens)


@dataclass(frozen=True)
class Membership:
    org_id: int
    org: str
    role: str
    shared: frozenset[str]  # the scopes the organisation shares
    off: tuple[OrgSwitch, ...] = ()  # the repositories it switched memory off for

    @property
    def part(self) -> str:
        return f"org:{self.org}"

    def shares(self, scope: Scope) -> bool:
        """Whether a write under `scope` belongs to this organisation: a shared scope, or a branch of
        a shared repository."""
        if str(scope) in self.shared:
            return True
        if scope.level is Level.BRANCH:
            owner_repo = str(scope).split("::")[1]
            return f"repo::{owner_repo}" in self.shared
        return False


def memberships(conn: psycopg.Connection, user_id: int) -> list[Membership]:
    """The user's organisations, with the scopes each shares and the repositories each switched off
    (migration 0009), in one round trip."""
    rows = conn.execute(
        """
        SELECT o.id, o.name, m.role, coalesce(array_agg(s.scope) FILTER (WHERE s.scope IS NOT NULL), '{}'),
            (SELECT coalesce(json_agg(json_build_array(r.scope, r.actor,
                to_char(r.switched AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')) ORDER BY r.scope), '[]')
             FROM repo_switches r WHERE r.org_id = o.id)
        FROM members m JOIN orgs o ON o.id = m.org_id LEFT JOIN shared_scopes s ON s.org_id = o.id
        WHERE m.user_id = %s GROUP BY o.id, o.name, m.role ORDER BY o.name
        """,
        (user_id,),
    ).fetchall()
    return [
        Membership(org_id, org, role, frozenset(scopes), tuple(OrgSwitch(org, *entry) for entry in off))
        for org_id, org, role, scopes, off in rows
    ]


class TeamMemories(MemoryService):
    """The memory service over the caller's spaces in PostgreSQL."""

    def __init__(
        self,
        conn: psycopg.Connection,
        caller: auth.Caller,
        scopes: Sequence[str],
        quota: int,
        provenance: dict[str, str] | None = None,
        meaning: Meaning | None = None,
        known: Sequence[Membership] | None = None,
    ) -> None:
        """`known`: the caller's memberships, when the request read them already (a batch reads them
        once for all its writes); else read here."""
        chain = Chain(tuple(parse(s) for s in scopes) or (parse("global"),), None)
        given = provenance or {}
        super().__init__(chain, BUDGETS, agent=given.get("agent", ""), session=given.get("session", ""))
        self.caller = caller
        self.memberships = list(known) if known is not None else memberships(conn, caller.user_id)
        self.given = {k: v for k, v in given.items() if k in PROVENANCE_KEYS and v}
        parts = {m.part: f"org:{m.org_id}" for m in self.memberships}
        parts[PERSONAL] = f"user:{caller.user_id}"
        self.tier = PostgresTier(conn, parts, self.warnings, owner=caller.user_id, quota=quota, meaning=meaning)
        self.tier_names = tuple(parts)
        self.notices: list[str] = []  # where a write went, when the caller may not expect it
        self.changed_part = ""  # the space the last archive, restore or forget acted in
        self.sent_cites: dict[str, str] = {}  # what the write under way cites (see `write`)

    @property
    def tiers(self) -> list[Tier]:
        return [self.tier]

    # -- an organisation's switches ---------------------------------------------------------------

    @property
    def switched_off(self) -> list[OrgSwitch]:
        """The repositories the caller's organisations switched memory off for."""
        return [sw for m in self.memberships for sw in m.off]

    def switch_over(self, scope: str) -> OrgSwitch | None:
        """The switch that turns memory off for `scope`, if one does."""
        return next((sw for sw in self.switched_off if sw.covers(scope)), None)

    def check_switch(self, scope: str) -> None:
        switch = self.switch_over(str(parse(scope)))
        if switch is not None:
            raise auth.Forbidden(switch.refusal())

    @property
    def scopes(self) -> list[str]:
        return [s for s in super().scopes if self.switch_over(s) is None]

    def scopes_for(self, scopes: Iterable[str] | None) -> list[str]:
        """What a read reads: never a scope switched off for the caller."""
        return [s for s in super().scopes_for(scopes) if self.switch_over(s) is None]

    def part_of_space(self, space: str) -> str:
        """The name the caller knows a space by (`org:acme`, `personal`)."""
        return next(name for name, origin in self.tier.parts.items() if origin == space)

    def _role(self, part: str) -> str | None:
        return next((m.role for m in self.memberships if m.part == part), None)

    def _named_tier(self, tier: str) -> Target:
        if tier not in self.tier.parts:
            known = ", ".join(self.tier.parts)
            raise BadInput(f"'{tier}' is none of your spaces ({known})")
        if tier != PERSONAL:
            membership = next(m for m in self.memberships if m.part == tier)
            auth.require_role(membership.role, "member", membership.org)
        return self.tier, tier

    def _tier_for_write(self, scope: Scope, key: str, tier: str | None) -> Target:
        """Where a write goes is decided by the scope's sharing alone (never by an older copy)."""
        return self._named_tier(tier) if tier is not None else self._default_tier(scope)

    def _default_tier(self, scope: Scope) -> Target:
        sharing = [m for m in self.memberships if m.shares(scope)]
        writers = [m for m in sharing if auth.ROLES.index(m.role) >= auth.ROLES.index("member")]
        if len(writers) > 1:
            names = ", ".join(m.org for m in writers)
            raise BadInput(f"{scope} is shared by several of your organisations ({names}): name one with org")
        if writers:
            return self.tier, writers[0].part
        if sharing:
            viewer = sharing[0].org
            self.notices.append(
                f"{scope} is shared by {viewer}, where you are a viewer: this memory went to your personal space"
            )
        else:
            self.notices.append(
                f"{scope} is shared by none of your organisations: this memory went to your personal space"
            )
        return self.tier, PERSONAL

    def _provenance(self) -> dict[str, str]:
        return {**self.given, "user": self.caller.user}

    def write(
        self,
        scope: str,
        key: str,
        value: str,
        *,
        tags: Sequence[str] = (),
        kind: str | None = None,
        ttl_days: float | None = None,
        state: str = "committed",
        tier: str | None = None,
        cites: Sequence[str] = (),
        when: str | None = None,
        cited: Mapping[str, str] | None = None,
    ) -> WriteResult:
        """As the service's; `cited`: the code the memory cites with each one's hash, as the writer's
        code graph resolved them (a remote write), kept as sent once their shape is checked."""
        self.check_switch(scope)
        check_indexable(key, f"{value}\n{when}" if when else value, tags)
        self.sent_cites = citations.checked_cites(cited or {})
        return super().write(
            scope, key, value, tags=tags, kind=kind, ttl_days=ttl_days, state=state, tier=tier, cites=cites, when=when
        )

    def _cited(self, value: str, kind: str, names: Sequence[str]) -> dict[str, str]:
        """The server holds no code to resolve names against (the service's answer for names is a
        refusal): a write keeps the cites its client resolved."""
        return super()._cited(value, kind, names) if names else self.sent_cites

    def _check_record(self, record: ImportRecord) -> Memory:
        memory = super()._check_record(record)
        check_indexable(memory.key, memory.value, memory.tags)
        return memory

    def _import_targets(self, memories: Sequence[Memory], tier: str | None) -> list[Target | ValueError]:
        """As for a write, the scope's sharing alone decides (never an older copy): a viewer's import of
        a key the organisation holds goes to their personal space, not over the organisation's row.
        A record under a repository switched off is refused with the switch's sentence."""
        targets: list[Target | ValueError] = []
        if tier is not None:
            targets = super()._import_targets(memories, tier)
        else:
            for memory in memories:
                try:
                    targets.append(self._default_tier(memory.scope))
                except ValueError as exc:
                    targets.append(exc)
        switches = [self.switch_over(str(memory.scope)) for memory in memories]
        return [t if sw is None else BadInput(sw.refusal()) for t, sw in zip(targets, switches, strict=True)]

    def search(self, query: str, scopes: Iterable[str] | None = None, limit: int | None = None) -> list[recall.Ranked]:
        words = recall.query_words(query)
        if len(words) > MAX_QUERY_WORDS:
            raise BadInput(
                f"the query has {len(words):,} different words; a search on the team server takes at most"
                f" {MAX_QUERY_WORDS}: keep the few that pick out the memory."
            )
        check_words("the query", (t for word in words for t in bm25.tokens(word)), "no memory holds a word that long")
        return super().search(query, scopes, limit)

    def _nearest(self, query: str, scopes: Sequence[str], limit: int) -> list[tuple[Candidate, float]] | None:
        """The rows nearest in meaning, from the vectors PostgreSQL keeps (postgres/vectors.py); the
        service fuses them with BM25's hits by the same code as on one machine."""
        return self.tier.nearest(scopes, query, limit)

    def find(self, scope: str, key: str) -> Candidate:
        """The copy of scope::key reads show."""
        return self._find(scope, key, visible=True)

    def listed(self, scopes: Sequence[str], include_hidden: bool = False) -> list[Candidate]:
        """Every copy in `scopes` (the hidden ones too, if asked), by scope and key."""
        scopes = [s for s in scopes if self.switch_over(s) is None]
        return sorted(self._listed(scopes, include_hidden), key=lambda c: (scopes.index(c.scope), c.key, c.origin))

    def _copies(self, scope: str, key: str, tier: str | None) -> tuple[str, list[Candidate]]:
        """What reading, archiving, restoring or forgetting one memory starts from: refused under a
        repository switched off for the caller."""
        self.check_switch(scope)
        return super()._copies(scope, key, tier)

    def _check_change(self, action: str, tier: Tier, part: str) -> None:
        self.changed_part = part
        if part == PERSONAL:
            return
        membership = next(m for m in self.memberships if m.part == part)
        auth.require_role(membership.role, CHANGE_ROLES[action], membership.org)
