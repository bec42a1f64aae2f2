"""Failure signatures linked to the lessons that fixed them, so an error alone finds its fix.

A signature is an error's class and the key words of its message, with what changes from run to run
stripped (paths, numbers, hex, line and column): "ModuleNotFoundError: no module named calc". When the
failure hook sees one, it is kept as pending for the session; when the same session then writes a
lesson (MCP `memory_write`, `hivelore write`), every signature pending in it is linked to that
lesson. The next time the signature occurs, in any session, the failure hook shows the linked
lessons even when they share no word with the error.

The links live in `signatures.db` beside the index (HIVELORE_HOME): a local store, rebuilt by use,
deletable. Stdlib only: the hook path uses it.
"""

from __future__ import annotations

import json
import re
import shlex
import sqlite3
import time
from pathlib import Path

from hivelore.home import private_file

SIGNATURES_FILE = "signatures.db"
PENDING_S = 4 * 3600.0  # a lesson written this long after the failure in the same session still fixed it
LINKS_PER_SIGNATURE = 3  # the most recent lessons linked to one signature
KEY_WORDS = 8  # words of the message kept after the class
# An error's class: Python/JS/Java exception names, errno names (ECONNREFUSED), compiler codes.
_CLASS = re.compile(
    r"\b([A-Z][A-Za-z0-9]*(?:Error|Exception|Failure|Exit)|E[A-Z]{4,}[A-Z_]*|error\[E\d+\]|OOMKilled)(?=\W|$)"
)
_PATH = re.compile(r"(?:[A-Za-z]:)?[\w.~-]*[/\\][^\s'\"]*")  # anything with a slash in it
_VOLATILE = re.compile(r"0x[0-9a-fA-F]+|\b[0-9a-fA-F]{8,}\b|\d+")
_WORD = re.compile(r"[^\W\d_][\w-]*")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS pending (
    agent TEXT NOT NULL, session TEXT NOT NULL, signature TEXT NOT NULL, ts REAL NOT NULL,
    PRIMARY KEY (agent, session, signature)
);
CREATE TABLE IF NOT EXISTS links (
    signature TEXT NOT NULL, address TEXT NOT NULL, ts REAL NOT NULL, PRIMARY KEY (signature, address)
);
"""


def signature(error: str) -> str:
    """The error's class and the key words of its message, or "" when no line names an error class.

    Of the lines that name a class, the last one written `Class: message` wins (a traceback ends with
    the error it is about), else the last one naming a class at all; a line cut short is not read."""
    # A runner's one-line summary cuts the message short ("ValueError: invalid lite..."): the full line counts.
    lines = [
        line.strip()
        for line in error[-20_000:].splitlines()
        if _CLASS.search(line) and not line.rstrip().endswith(("...", "…"))
    ]
    if not lines:
        return ""
    with_message = [line for line in lines if re.search(_CLASS.pattern + r"\s*:", line)]
    line = (with_message or lines)[-1]
    found = _CLASS.search(line)
    assert found is not None  # every chosen line names a class
    message = _VOLATILE.sub(" ", _PATH.sub(" ", line[found.end() :]))
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(message)))[:KEY_WORDS]
    return " ".join([f"{found.group(1)}:", *words]).rstrip(":") if words else found.group(1)


def written_lesson(tool: str, command: str, output: str) -> str:
    """The address (SCOPE::KEY) of the lesson a successful call wrote, or "": MCP `memory_write`
    (read from its answer) or `hivelore write SCOPE::KEY …` in a shell command."""
    if tool.lower().endswith("memory_write"):
        try:
            answer = json.loads(output)
        except ValueError:
            return ""
        memory = answer.get("memory") if isinstance(answer, dict) else None
        if isinstance(memory, dict) and memory.get("kind") == "lesson" and memory.get("state") == "committed":
            return f"{memory.get('scope')}::{memory.get('key')}"
        return ""
    if "hivelore" not in command or " write " not in command:
        return ""
    try:
        argv = shlex.split(command)
    except ValueError:
        return ""
    kind = argv[argv.index("--kind") + 1] if "--kind" in argv[:-1] else "lesson"
    if kind != "lesson" or "--staged" in argv:
        return ""
    for i, arg in enumerate(argv[:-2]):
        if arg.endswith("hivelore") and argv[i + 1] == "write" and "::" in argv[i + 2]:
            return argv[i + 2]
    return ""


class Links:
    """`signatures.db`: signatures pending per session, and signatures linked to lessons."""

    def __init__(self, home: Path) -> None:
        private_file(str(home / SIGNATURES_FILE))  # errors and lesson keys: as private as the memories
        self.conn = sqlite3.connect(home / SIGNATURES_FILE, timeout=2)
        # As the index: a commit in the default rollback journal syncs the file twice, 20 ms of the
        # failure hook's time on a busy disk; a log the hook server keeps open needs no sync per commit.
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.executescript(_SCHEMA)

    def saw(self, agent: str, session: str, found: str, now: float | None = None) -> None:
        """A failure with this signature happened in the session: a lesson it writes next fixed it."""
        with self.conn:
            self.conn.execute(
                "INSERT OR REPLACE INTO pending VALUES (?, ?, ?, ?)",
                (agent, session, found, time.time() if now is None else now),
            )

    def wrote(self, agent: str, session: str, address: str, now: float | None = None) -> list[str]:
        """The session wrote this lesson: link it to the signatures pending in the session (seen in the
        last PENDING_S); the signatures it was linked to."""
        now = time.time() if now is None else now
        with self.conn:
            found = [
                row[0]
                for row in self.conn.execute(
                    "SELECT signature FROM pending WHERE agent = ? AND session = ? AND ts >= ?",
                    (agent, session, now - PENDING_S),
                )
            ]
            self.conn.executemany("INSERT OR REPLACE INTO links VALUES (?, ?, ?)", ((s, address, now) for s in found))
            self.conn.execute("DELETE FROM pending WHERE ts < ?", (now - PENDING_S,))
        return found

    def lessons(self, found: str) -> list[str]:
        """The addresses of the lessons linked to this signature, the most recently linked first."""
        rows = self.conn.execute(
            "SELECT address FROM links WHERE signature = ? ORDER BY ts DESC LIMIT ?", (found, LINKS_PER_SIGNATURE)
        )
        return [row[0] for row in rows]

    def close(self) -> None:
        self.conn.close()
