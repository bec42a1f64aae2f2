"""Private spans: text a user marked as not to be kept, removed before anything is stored.

Two marks: `<private>…</private>` (any case, nested spans count their depth, an unclosed one hides
everything after it) and whole lines that start with one of the configured prefixes (config key
`private_prefix`). Every path that stores text — a hook event, a memory write or import — calls
`strip_private` once at its entry. Standard library only: the hook path imports it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_TAG = re.compile(r"<(/?)private\s*>", re.IGNORECASE)


def strip_private(text: str, prefixes: Iterable[str] = ()) -> str:
    """`text` without its private spans and without the lines that start with a private prefix.

    Spans go first: a prefixed line that opens a span must not leave the span's later lines behind.
    A closing tag with no span open is dropped and what precedes it stays (it was never marked).
    Removing a span can join a new tag (`<priv<private>x</private>ate>`): that one counts too."""
    while "<" in text:
        public = _without_spans(text)
        if public == text:
            break
        text = public
    marks = tuple(p for p in prefixes if p)
    if marks:
        text = "".join(line for line in text.splitlines(keepends=True) if not line.lstrip().startswith(marks))
    return text


def _without_spans(text: str) -> str:
    kept: list[str] = []
    depth, start = 0, 0
    for tag in _TAG.finditer(text):
        if depth == 0:
            kept.append(text[start : tag.start()])
        if tag.group(1):  # a closing tag
            depth = max(depth - 1, 0)
        else:
            depth += 1
        start = tag.end()
    if depth == 0:
        kept.append(text[start:])
    return "".join(kept)
