"""CSRF protection for the pages' forms: a random token kept in a cookie and repeated in each form.

A page on another origin can make the browser send the cookie, but it can read neither the cookie nor
our pages, so it cannot repeat the token in the form: its POST is refused.
"""

from __future__ import annotations

import hmac
import secrets

COOKIE = "hivelore_csrf"
FIELD = "csrf"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def valid(cookie: str | None, submitted: str | None) -> bool:
    """Whether the form repeated the browser's token (compared in constant time)."""
    return bool(cookie) and bool(submitted) and hmac.compare_digest(str(cookie), str(submitted))
