"""Which files of a repository the graph reads, and parsing one of them by its language."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator

from hivelore.codegraph.languages import SKIP_DIRS, language_of
from hivelore.codegraph.model import ParsedFile

# language → the module that parses it (imported on first use: tree-sitter only when needed)
_PARSERS = {
    "python": "python",
    "typescript": "javascript",
    "tsx": "javascript",
    "javascript": "javascript",
    "go": "golang",
    "rust": "rust",
    "java": "java",
}


def source_files(root: str) -> Iterator[tuple[str, str]]:
    """(repo-relative path with "/", language) of each source file, in a stable order; hidden,
    vendored and build folders are skipped."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        relative = os.path.relpath(folder, root)
        for name in sorted(files):
            language = language_of(name)
            if language is not None:
                path = name if relative == "." else f"{relative}/{name}"
                yield path.replace(os.sep, "/"), language


def skipped_folder(path: str) -> bool:
    """Whether a repo-relative path lies in a folder the walk skips."""
    return any(part.startswith(".") or part in SKIP_DIRS for part in path.split("/")[:-1])


def parse_source(path: str, language: str, source: bytes) -> ParsedFile:
    """Parse one file; raises SyntaxError/ValueError (Python) when it does not parse."""
    module = importlib.import_module(f"hivelore.codegraph.{_PARSERS[language]}")
    if language == "python":
        return module.parse(source, path)
    return module.parse(source, path, language)
