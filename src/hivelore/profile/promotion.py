"""Deterministic promotion: what the user keeps saying becomes a line of their profile.

After each direct user prompt of a root session, a stated preference or project fact (found by the
fixed patterns of `grammar`) is promoted when this prompt states it and at least two EARLIER root
sessions stated the same normalised candidate too. Sub-agent and delegated sessions never count
(the caller passes only root sessions' own prompts). "Forget that I prefer X" forgets the line,
and what was said before the forget no longer counts toward promoting it again. No model decides
anything; the ledger says which sessions evidenced each line.
"""

from __future__ import annotations

from hivelore.events.store import EventStore
from hivelore.profile import grammar
from hivelore.profile.store import Profile, Promotion

EARLIER_SESSIONS = 2


class Outcome:
    """What one prompt changed in the profile."""

    __slots__ = ("promoted", "forgotten")

    def __init__(self, promoted: list[Promotion], forgotten: list[str]) -> None:
        self.promoted, self.forgotten = promoted, forgotten

    def __bool__(self) -> bool:
        return bool(self.promoted or self.forgotten)


def observe(store: EventStore, profile: Profile, agent: str, session_id: str, prompt: str) -> Outcome:
    """Apply one direct user prompt of a root session: forget what it asks to forget, record the
    candidates it states, and promote those that two earlier root sessions stated as well."""
    forgotten = _forget(store, profile, grammar.forget_requests(prompt))
    stated = grammar.candidates(prompt)
    store.record_evidence(agent, session_id, [(c.key, c.line) for c in stated])
    promoted = []
    for candidate in stated:
        earlier = [f"{a}:{s}" for a, s in store.evidence(candidate.key) if (a, s) != (agent, session_id)]
        if len(earlier) < EARLIER_SESSIONS:
            continue
        sessions = [*earlier, f"{agent}:{session_id}"]
        result = profile.promote(candidate.line, candidate.file, None, sessions, category_of=grammar.category)
        if result.created:
            promoted.append(result)
    return Outcome(promoted, forgotten)


def forget(store: EventStore | None, profile: Profile, text: str) -> list[str]:
    """Forget the profile line `text` names — "forget that I prefer X", "I prefer X", or the line
    itself ("Prefer X.") — and the evidence for it, so it takes three new sessions to come back.
    Without an event store (it could not be opened) only the line is forgotten."""
    named = grammar.forget_requests(text) or grammar.candidates(text)
    if not named and text.strip():
        named = [grammar.Candidate(text.strip().rstrip(".!;") + ".", grammar.USER)]
    return _forget(store, profile, named)


def _forget(store: EventStore | None, profile: Profile, requests: list[grammar.Candidate]) -> list[str]:
    forgotten = []
    for request in requests:
        if store is not None:
            store.forget_evidence(request.key)
        if profile.forget(request.line):
            forgotten.append(request.line)
    return forgotten
