"""Who is asking and what they may do: tokens, roles, and the sentences of a refusal.

A token is `hl_<kind>_` and 43 random URL-safe characters; its prefix is its power: `rw` reads and
writes, `ro` only reads (a CI job's token), `wo` only writes. The server keeps the SHA-256 of the
whole token (a random secret of 256 bits needs no slow hash) and shows the token once. A role is a
member's power in one organisation; each role can do what the one below it can:

    viewer  read the org's shared memories
    member  + write, archive and restore
    admin   + delete, manage members and invitations, bind scopes
    owner   + rename and delete the org

A token may also carry a scope allow-list and an expiry; it never makes a token broader than itself,
and a limited one administers no organisation (`Caller.may_grant`, `Caller.may_administer`).
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from hivelore import errors
from hivelore.errors import BadInput, HiveloreError
from hivelore.memory import guard
from hivelore.memory.scope import Level, try_parse

TOKEN_KINDS = ("rw", "ro", "wo")
ROLES = ("viewer", "member", "admin", "owner")
_TOKEN = re.compile(r"^hl_(rw|ro|wo)_[A-Za-z0-9_-]{32,}$")
RANDOM_BYTES = 32  # 43 URL-safe characters
TOKEN_NAME_CHARS = 100


class Unauthenticated(HiveloreError):
    """No token, or one the server does not accept (HTTP 401)."""

    status, code = 401, "unauthenticated"


class Forbidden(errors.Forbidden):
    """A known caller asked for what their token or role does not allow (HTTP 403)."""


@dataclass(frozen=True)
class Caller:
    """The user behind a request's token, and what that token allows."""

    user_id: int
    user: str
    token_id: int
    kind: str
    scopes: tuple[str, ...]  # patterns such as repo::acme/*; empty allows every scope
    expires: datetime | None = None

    def may_read(self) -> None:
        if self.kind == "wo":
            raise Forbidden("this token can only write (hl_wo_): use an hl_rw_ or hl_ro_ token to read")

    def may_write(self) -> None:
        if self.kind == "ro":
            raise Forbidden("this token can only read (hl_ro_): use an hl_rw_ or hl_wo_ token to write")

    def may_manage(self) -> None:
        """Accounts, organisations and tokens are changed with a read-write token only."""
        if self.kind != "rw":
            raise Forbidden(f"this token is hl_{self.kind}_: managing organisations and tokens needs an hl_rw_ token")

    def may_administer(self, what: str) -> None:
        """Memberships, invitations and the org itself reach past any scope: a token limited to some
        scopes must not change them, or it could hand out more than it holds."""
        self.may_manage()
        if self.scopes:
            raise Forbidden(
                f"this token is limited to the scopes {', '.join(self.scopes)}: {what} needs a token "
                "without a scope allow-list"
            )

    def allows(self, scope: str) -> bool:
        """Whether the token's scope allow-list admits `scope`. A branch is admitted with its
        repository, as a branch of a shared repository is shared."""
        if not self.scopes:
            return True
        parsed = try_parse(scope)
        names = [scope]
        if parsed is not None and parsed.level is Level.BRANCH:
            names.append(f"repo::{parsed.name}")
        return any(fnmatch.fnmatchcase(name, pattern) for name in names for pattern in self.scopes)

    def may_use_scope(self, scope: str) -> None:
        if not self.allows(scope):
            allowed = ", ".join(self.scopes)
            raise Forbidden(f"this token is limited to the scopes {allowed}; {scope} is not among them")

    def may_grant(self, patterns: list[str]) -> list[str]:
        """The allow-list of a token this one makes: its own when none is asked for; else each pattern
        must be one of its own, or a plain scope (no `*`) that it admits — a pattern is never compared
        with a pattern, so no wildcard can reach past what this token holds."""
        if not self.scopes:
            return patterns
        if not patterns:
            return list(self.scopes)
        for pattern in patterns:
            if not self._grants(pattern):
                raise Forbidden(
                    f"this token is limited to the scopes {', '.join(self.scopes)}; it cannot make a token "
                    f"for {pattern}: name one of its own patterns, or a scope without '*' they admit"
                )
        return patterns

    def _grants(self, pattern: str) -> bool:
        return pattern in self.scopes or ("*" not in pattern and self.allows(pattern))

    def sees_token(self, token_id: int, scopes: Sequence[str], expires: datetime | None) -> bool:
        """Whether a listing of the user's tokens shows this token to the caller's. A token without an
        allow-list sees them all; a limited one sees itself and the tokens it could have made (a
        non-empty allow-list within its own, expiring no later), so a leaked limited token does not
        tell the names, powers and reach of its owner's broader ones."""
        if not self.scopes or token_id == self.token_id:
            return True
        within = bool(scopes) and all(self._grants(pattern) for pattern in scopes)
        lasts = self.expires is None or (expires is not None and expires <= self.expires)
        return within and lasts

    def may_grant_until(self, expires: datetime | None) -> datetime | None:
        """The expiry of a token this one makes: its own when none is asked for; never later."""
        if self.expires is None:
            return expires
        if expires is None:
            return self.expires
        if expires > self.expires:
            raise Forbidden(
                f"this token expires at {self.expires.isoformat(timespec='seconds')}: a token it makes "
                "cannot outlive it, so ask for fewer expires_in_days or none"
            )
        return expires


def mint(kind: str) -> str:
    """A new token of `kind` (shown to its owner once, never stored)."""
    if kind not in TOKEN_KINDS:
        raise BadInput(f"a token's kind is one of {', '.join(TOKEN_KINDS)}, not {kind!r}")
    return f"hl_{kind}_{secrets.token_urlsafe(RANDOM_BYTES)}"


def mint_invitation() -> str:
    return f"hl_inv_{secrets.token_urlsafe(RANDOM_BYTES)}"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def bearer(header: str | None) -> str:
    """The token of an `Authorization: Bearer hl_…` header."""
    if not header:
        raise Unauthenticated("this request has no token: send `Authorization: Bearer hl_…`")
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not _TOKEN.match(token):
        raise Unauthenticated("the Authorization header holds no hivelore token: send `Authorization: Bearer hl_…`")
    return token


def check_live(revoked: datetime | None, expires: datetime | None, now: datetime) -> None:
    if revoked is not None:
        raise Unauthenticated("this token was revoked: create a new one with `hivelore token create`")
    if expires is not None and expires <= now:
        raise Unauthenticated("this token has expired: create a new one with `hivelore token create`")


def require_role(role: str | None, needed: str, org: str) -> None:
    """Refuse unless `role` (None: not a member) is at least `needed` in `org`."""
    if role is None:
        raise Forbidden(f"you are not a member of the organisation {org}")
    if ROLES.index(role) < ROLES.index(needed):
        raise Forbidden(f"this needs the role {needed} in {org}; you are {role}")


def check_token_name(name: str) -> str:
    """A token's name is shown back in listings (and to agents through the CLI): short, and free of
    what the guard refuses in a memory — secrets, injection phrasing, invisible characters."""
    if len(name) > TOKEN_NAME_CHARS:
        raise BadInput(f"a token's name is at most {TOKEN_NAME_CHARS} characters: use a short label such as 'ci'")
    found = guard.inspect(name, "the token's name")
    if found:
        raise guard.GuardError(found[0])
    return name


def check_scope_patterns(patterns: list[str]) -> list[str]:
    """A token's scope allow-list: scope names, where `*` may stand for any run of characters."""
    for pattern in patterns:
        if try_parse(pattern.replace("*", "x")) is None:
            raise BadInput(f"{pattern!r} is not a scope pattern: write one like repo::acme/* or project::shop")
    return patterns
