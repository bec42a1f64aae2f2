"""Prepared answers to the requests a client makes while connecting (`initialize`, or the 2026
`server/discover`, then `tools/list`, the empty prompt and resource lists, `ping`): what the SDK
wrote before, kept to be sent again before the SDK has loaded.

An answer is kept as the exact `result` text the SDK wrote, per protocol version the client asked
for, in HIVELORE_HOME/mcp-answers.json. It is sent again around the new request's id, so the line is
byte for byte the one the SDK writes for that id (`response_line`); an answer is kept only when the
SDK's line has exactly that shape, and only for ids whose JSON text is unambiguous.

The file carries a fingerprint of everything the answers depend on: the tools' source and their
result models (schemas.py), the SDK's and pydantic's versions, Python's version. A file with another
fingerprint is ignored (and replaced as the SDK answers again). Standard library only: this runs
before the SDK is imported.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys

from hivelore import atomicfile

FILENAME = "mcp-answers.json"
# Requests whose answer depends on nothing but the protocol version (and this code): clients send
# them while connecting, and some count the server as connecting until the lists are answered.
METHODS = ("initialize", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "ping")
# The same for a 2026 client, which sends no `initialize`: it probes with `server/discover`, and each
# request carries the protocol version in its own envelope (`_meta`); that era has no `ping`. Claude
# Code 2.1.332 connects so.
DISCOVER = "server/discover"
MODERN_METHODS = (DISCOVER, "tools/list", "prompts/list", "resources/list", "resources/templates/list")
# A 2026 client may also open a stream of list-changed notifications, and Claude Code 2.1.332 sends its
# lists only once the server acknowledged it (a notification, not a response). The acknowledgment
# names the request's id and echoes the notifications granted, so it is kept per set asked for.
LISTEN = "subscriptions/listen"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"
# What decides the bytes of an answer besides the tools' own source: the SDK shapes and serialises
# them, pydantic turns the signatures into JSON Schemas, Python cleans the docstrings.
PACKAGES = ("mcp", "mcp-types", "pydantic", "pydantic-core")
# The tools' source: their signatures and docstrings, and the result models (outputSchema).
SOURCES = (
    os.path.join(os.path.dirname(__file__), "tools.py"),
    os.path.join(os.path.dirname(os.path.dirname(__file__)), "schemas.py"),
)
DIST_INFO = re.compile(r"(?P<name>[A-Za-z0-9_.]+)-(?P<version>[^-]+)\.dist-info")
PLAIN_ID = re.compile(r"-?[0-9]{1,15}|\"[A-Za-z0-9_.:-]{1,64}\"")


def fingerprint() -> str:
    """What the answers were computed from, hashed."""
    parts = [sys.version.split()[0], *installed_versions()]
    for name in SOURCES:
        with open(name, "rb") as source:
            parts.append(hashlib.sha256(source.read()).hexdigest())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def installed_versions() -> list[str]:
    """`name==version` of each of PACKAGES, as the first folder on sys.path that holds its
    `.dist-info` says (what importlib.metadata would answer, without its 50 ms of imports)."""
    wanted = {name.replace("-", "_"): name for name in PACKAGES}
    found: dict[str, str] = {}
    for folder in sys.path:
        try:
            entries = os.listdir(folder or ".")
        except OSError:
            continue
        for entry in entries:
            match = DIST_INFO.fullmatch(entry)
            if match and match["name"].lower() in wanted:
                found.setdefault(wanted[match["name"].lower()], match["version"])
    return [f"{name}=={found.get(name, 'missing')}" for name in PACKAGES]


def id_text(request_id: object) -> str | None:
    """The request id as the SDK writes it back, or None when that is not certain (odd strings, floats)."""
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    text = json.dumps(request_id)
    return text if PLAIN_ID.fullmatch(text) else None


def response_line(rid: str, result: str) -> str:
    """A JSON-RPC response line exactly as the SDK's stdio transport writes it."""
    return f'{{"jsonrpc":"2.0","id":{rid},"result":{result}}}\n'


def listen_key(notifications: dict) -> str:
    """The book's name for the acknowledgment of a `subscriptions/listen` asking for `notifications`."""
    return f"{LISTEN} {json.dumps(notifications, sort_keys=True, separators=(',', ':'))}"


def acknowledgment_line(rid: str, granted: str) -> str:
    """The SDK's acknowledgment of the listen request `rid`, granting `granted` (its JSON text)."""
    return f"{_acknowledgment_head(rid)}{granted}}}}}\n"


def granted_of(line: str, rid: str) -> str | None:
    """What the SDK's acknowledgment line of listen request `rid` grants, if the line is
    `acknowledgment_line`'s shape, else None."""
    head = _acknowledgment_head(rid)
    if line.startswith(head) and line.endswith("}}\n"):
        return line[len(head) : -3]
    return None


def _acknowledgment_head(rid: str) -> str:
    return (
        f'{{"jsonrpc":"2.0","method":"{ACKNOWLEDGED}","params":{{"_meta":{{"{SUBSCRIPTION_ID_KEY}":{rid}}},'
        '"notifications":'
    )


def result_of(line: str, rid: str) -> str | None:
    """The result text of the SDK's response line for request `rid`, if the line is `response_line`'s
    shape, else None."""
    head = f'{{"jsonrpc":"2.0","id":{rid},"result":'
    if line.startswith(head) and line.endswith("}\n"):
        return line[len(head) : -2]
    return None


class Book:
    """The prepared answers of one fingerprint: {protocol version: {method: result text}}."""

    def __init__(self, path: str, stamp: str, answers: dict[str, dict[str, str]]) -> None:
        self.path, self.fingerprint, self.answers = path, stamp, answers

    @classmethod
    def load(cls, home: str) -> Book:
        """The book in `home`; empty when there is none, it is unreadable or its fingerprint is another."""
        path, current = os.path.join(home, FILENAME), fingerprint()
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            return cls(path, current, {})
        if not isinstance(data, dict) or data.get("fingerprint") != current or not _well_formed(data.get("answers")):
            return cls(path, current, {})
        return cls(path, current, data["answers"])

    def answer(self, version: str, method: str) -> str | None:
        return self.answers.get(version, {}).get(method)

    def learn(self, version: str, method: str, result: str) -> bool:
        """Keep the SDK's answer; True when the book changed."""
        if self.answer(version, method) == result:
            return False
        self.answers.setdefault(version, {})[method] = result
        return True

    def forget(self, version: str, method: str) -> bool:
        """Drop an answer the SDK no longer gives; True when the book changed."""
        return self.answers.get(version, {}).pop(method, None) is not None

    def save(self) -> None:
        """Write the book (atomically: a reader sees the old book or the new one)."""
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        data = {"fingerprint": self.fingerprint, "answers": self.answers}
        atomicfile.replace(self.path, json.dumps(data, indent=1, sort_keys=True).encode())


def _well_formed(answers: object) -> bool:
    return isinstance(answers, dict) and all(
        isinstance(by_method, dict) and all(isinstance(v, str) for v in by_method.values())
        for by_method in answers.values()
    )
