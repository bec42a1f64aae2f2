"""What the walk, the parsers and the resolver know per language: file extensions, the name of a
constructor, and the names that are never calls into the repository (builtins, standard methods)."""

from __future__ import annotations

import os

# Extension → language. TypeScript and JavaScript form one family: they import each other.
LANGUAGES = {
    ".py": "python",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
}
FAMILY = {"typescript": "js", "tsx": "js", "javascript": "js"}

# Folders that hold someone else's code or build output, never the repository's own.
SKIP_DIRS = frozenset(
    {"node_modules", "venv", "__pycache__", "dist", "build", "target", "vendor", "site-packages", "coverage"}
)


def language_of(path: str) -> str | None:
    """The language of a file by its extension; None for files the graph does not read."""
    if path.endswith(".d.ts"):  # declarations only: no bodies, and they shadow the real module
        return None
    return LANGUAGES.get(os.path.splitext(path)[1])


def family_of(path: str) -> str:
    """The language family of a file: calls are only resolved within one family."""
    family = _families.get(path)
    if family is None:
        language = language_of(path) or ""
        family = _families[path] = FAMILY.get(language, language)
    return family


_families: dict[str, str] = {}  # path → family: resolution asks for the same few files very often


# The name a class's constructor has, per family ("" where a language has none: Go, Rust).
# Java's constructor is named after its class; "<init>" stands for it in call sites (`super(...)`).
CONSTRUCTOR = {"python": "__init__", "js": "constructor", "java": "<init>"}


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


_PYTHON_BUILTINS = _names(
    "abs aiter all anext any ascii bin bool breakpoint bytearray bytes callable chr classmethod compile complex"
    " delattr dict dir divmod enumerate eval exec filter float format frozenset getattr globals hasattr hash help"
    " hex id input int isinstance issubclass iter len list locals map max memoryview min next object oct open ord"
    " pow print property range repr reversed round set setattr slice sorted staticmethod str sum super tuple type"
    " vars zip __import__ NotImplementedError Exception ValueError TypeError KeyError IndexError RuntimeError"
    " AttributeError OSError StopIteration"
)
_GO_BUILTINS = _names(
    "append cap clear close complex copy delete imag len make max min new panic print println real recover"
    " string int int64 int32 uint uint64 uint32 float64 float32 byte rune bool error"
)
_RUST_PRELUDE = _names("Some Ok Err None Box Vec String drop panic Default Into From")
_JS_GLOBALS = _names(
    "require setTimeout setInterval clearTimeout clearInterval fetch parseInt parseFloat isNaN String Number"
    " Boolean Array Object Promise Symbol Error Date RegExp Map Set JSON Math console structuredClone"
)
# Names never resolved by themselves (a bare call to one of them is not a call into the repository).
BUILTINS = {"python": _PYTHON_BUILTINS, "go": _GO_BUILTINS, "rust": _RUST_PRELUDE, "js": _JS_GLOBALS}

# Methods of the standard containers and strings: `items.append(x)` on a value of unknown type is
# almost always the list's, so such names never fall back to a same-named method in the repository.
_COMMON_METHODS = {
    "python": "append extend insert remove pop clear copy count index sort reverse get items keys values update"
    " setdefault popitem add discard union intersection difference join split rsplit strip lstrip rstrip"
    " startswith endswith replace format encode decode lower upper find rfind splitlines read write close"
    " readline readlines seek flush __enter__ __exit__ __iter__ __next__ __len__ __setitem__",
    "js": "push pop shift unshift slice splice map filter reduce forEach find findIndex some every includes"
    " indexOf join concat sort keys values entries get set has delete add then catch finally toString"
    " trim split replace startsWith endsWith toLowerCase toUpperCase apply call bind log error warn"
    " read write end on once off emit pipe",
    "go": "Error String Len Close Read Write Lock Unlock Add Done Wait",
    "rust": "unwrap expect clone iter into_iter map collect push pop len is_empty to_string as_str get insert"
    " remove contains ok err and_then unwrap_or unwrap_or_default borrow borrow_mut lock fmt eq cmp"
    " partial_cmp hash into from default",
    "java": "add get put set remove size isEmpty contains equals hashCode toString stream map filter collect"
    " forEach length charAt substring append format println print of",
}
COMMON_METHODS = {family: _names(names) for family, names in _COMMON_METHODS.items()}
