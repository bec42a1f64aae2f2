"""The code a memory cites, and whether that code moved on since the memory was written.

A lesson or a decision that names `validate_token` or `shop/orders.py` is about that code as it was.
At write time the names in its text that resolve to exactly one symbol of the code graph, or to a
file of the repository, are kept in its front matter with their hash then (`Memory.cites`); at read
time a hash that differs says "code changed since", a symbol or file that is gone says "cites code
that no longer exists". This module holds the rules and no store: `Code` is what the code graph
answers (codegraph/cited.py), so the hook path imports nothing more than the standard library.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from hivelore.records import record

CHANGED = "code changed since"
GONE = "cites code that no longer exists"
# How much a match that cites moved-on code keeps of its score: still found, below a fresh one.
STALE_FACTOR = {CHANGED: 0.75, GONE: 0.5}
MAX_CITES = 16  # a memory about more code than this is about none of it in particular
MAX_NAME_CHARS = 200
CITING_KINDS = ("lesson", "decision")  # what is detected from the text; `--cites` is taken for any kind

# A name as code writes it: `shop/tokens.py::validate_token`, `Cart.total`, `validate_token`,
# `parseHeader`, `src/app/main.go`. Backquoted spans are taken whole.
_BACKQUOTED = re.compile(r"`([^`\s]{2,200})`")
_TOKEN = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|/)[\w$]+)*(?:#\d+)?(?:\(\))?")
_PATH_TOKEN = re.compile(r"(?<![\w/.-])(?:\.{0,2}/)?(?:[\w.-]+/)*[\w-]+\.[A-Za-z][\w]{0,9}(?![\w/]|::)")
_CAMEL = re.compile(r"[a-z0-9][A-Z]")
_NAME = re.compile(r"[A-Za-z0-9_./#:$@+-]{1,200}")
_HASH = re.compile(r"[0-9a-f]{0,64}")
# Abbreviations that look like dotted names.
_NOT_A_NAME = frozenset({"e.g", "i.e", "etc", "vs", "a.k.a"})


def mentions(text: str) -> list[str]:
    """The names in a text that look like code, distinct, in the order they come: backquoted spans,
    ids (`path::name`), dotted names (`Cart.total`), names with an underscore or a capital inside
    (`validate_token`, `parseHeader`) and paths (`shop/orders.py`). A plain word (`total`, `cart`)
    is never taken, even when some symbol has that name: prose is not code."""
    found: dict[str, None] = {}
    for span in _BACKQUOTED.findall(text):
        found.setdefault(span.removesuffix("()"), None)
    for match in _PATH_TOKEN.finditer(text):
        found.setdefault(match.group(0).removeprefix("./"), None)
    for match in _TOKEN.finditer(text):
        name = match.group(0).removesuffix("()")
        if looks_like_code(name):
            found.setdefault(name, None)
    return [name for name in found if name.lower() not in _NOT_A_NAME]


def looks_like_code(name: str) -> bool:
    """Whether a bare token is written as code is: with `::`, `.`, `/`, `_` or an inner capital."""
    if len(name) < 3 or name.lower() in _NOT_A_NAME:
        return False
    if "::" in name or "/" in name:
        return True
    stripped = name.strip("_")
    if "." in stripped:
        return all(part for part in stripped.split("."))
    return "_" in stripped or bool(_CAMEL.search(stripped))


def checked_cites(cites: Mapping[str, str]) -> dict[str, str]:
    """Cites as a file or an import gives them, or ValueError saying which one cannot be kept: a name
    of code characters, a hex hash (or ""), at most MAX_CITES of them."""
    if len(cites) > MAX_CITES:
        raise ValueError(f"a memory cites at most {MAX_CITES} symbols or files, not {len(cites)}.")
    for name, digest in cites.items():
        if not _NAME.fullmatch(name):
            raise ValueError(f"cited name {name[:60]!r} is not a symbol id or a file path (letters, digits, ./_:#-).")
        if not _HASH.fullmatch(digest):
            raise ValueError(f'the hash of cited {name!r} is not hexadecimal: keep the one hivelore wrote, or "".')
    return dict(cites)


class Code:
    """What the code of one repository answers about names: a plain base class (the hook path
    imports this module); codegraph/cited.py answers from graph.db."""

    def resolve(self, name: str) -> tuple[str, str] | None:
        """(the id or path, its hash now) when `name` is exactly one present symbol (an id, a
        qualified name or a name) or a file of the repository; None when it is none or several."""
        raise NotImplementedError

    def current(self, names: Iterable[str]) -> dict[str, str | None]:
        """For cited ids and paths: the hash now ("" for a file the graph does not hash), or None for
        what is gone."""
        raise NotImplementedError

    def close(self) -> None:
        """Let go of what it holds open."""


def detect(text: str, code: Code) -> dict[str, str]:
    """The names a text mentions that resolve to exactly one thing in the code, with their hash now."""
    found: dict[str, str] = {}
    for name in mentions(text):
        resolved = code.resolve(name)
        if resolved is not None and len(found) < MAX_CITES:
            found.setdefault(*resolved)
    return found


def named(names: Sequence[str], code: Code | None) -> dict[str, str]:
    """What `--cites` names, each resolved, or ValueError naming the first that cannot be."""
    found: dict[str, str] = {}
    for name in dict.fromkeys(n.strip() for n in names if n.strip()):
        resolved = code.resolve(name) if code is not None else None
        if resolved is None:
            why = (
                "no code graph for this repository yet (run `hivelore graph index`) and no such file"
                if code is None
                else "it names no single symbol (give its id, `path::Qualified.name`) and no file of the repository"
            )
            raise ValueError(f"--cites {name!r} cannot be cited: {why}.")
        found.setdefault(*resolved)
    return checked_cites(found)


@record
class Staleness:
    """What a memory's cites say against the code now: `verdict` is "" (as written), CHANGED or GONE,
    `names` the cites that say so (the gone ones for GONE)."""

    verdict: str
    names: tuple[str, ...]

    def note(self) -> str:
        """The mark a read shows next to the memory, or ""."""
        return f"{self.verdict}: {', '.join(self.names)}" if self.verdict else ""


FRESH = Staleness("", ())


def staleness(cites: Mapping[str, str], current: Mapping[str, str | None]) -> Staleness:
    """The verdict of some cites against the hashes now (`Code.current`): gone wins over changed; a
    cite the code says nothing about, or with no hash kept, is taken as written."""
    gone = tuple(name for name in cites if name in current and current[name] is None)
    if gone:
        return Staleness(GONE, gone)
    changed = tuple(name for name, digest in cites.items() if digest and current.get(name) and current[name] != digest)
    return Staleness(CHANGED, changed) if changed else FRESH
