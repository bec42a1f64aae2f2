"""How a hook process and the hook server talk: where the server listens, and the framing of a
request and its answer. Pure stdlib, no imports at all: the client side of this runs on every
agent event, before anything else is loaded.

A message is a sequence of byte strings, each framed as `<length>:<bytes>,` (a netstring), so
payloads, environments and answers travel as they are, with no escaping and no JSON parser.
"""

from __future__ import annotations

import os
import sys

PROTOCOL = b"hivelore-hook/1"
MAX_MESSAGE = 64 * 1024 * 1024  # a request holds at most one capped payload and an environment


class WireError(ValueError):
    """Bytes that are not a well-formed message."""


def server_address(home: str, executable: str, version: str) -> bytes | None:
    """The hook server's socket for this HIVELORE_HOME, interpreter and hivelore version: a name in
    Linux's abstract socket namespace (no file to clean up, no path-length limit), or None on other
    systems, where hooks run in their own process."""
    if not sys.platform.startswith("linux"):
        return None
    key = "\0".join((os.path.abspath(home), executable, version))
    return f"\0hivelore-hooks-{os.getuid()}-{_fnv1a(key.encode('utf-8', 'surrogateescape')):016x}".encode()


def pack(fields: list[bytes]) -> bytes:
    return b"".join(b"%d:%s," % (len(field), field) for field in fields)


def unpack(data: bytes) -> list[bytes]:
    """The fields of a whole message; a WireError when it is cut short or malformed."""
    fields, at = [], 0
    while at < len(data):
        colon = data.find(b":", at, at + 21)
        if colon < 0 or not data[at:colon].isdigit():
            raise WireError(f"no field length at byte {at}")
        end = colon + 1 + int(data[at:colon])
        if end >= len(data) or data[end : end + 1] != b",":
            raise WireError(f"field at byte {at} is cut short")
        fields.append(data[colon + 1 : end])
        at = end + 1
    return fields


def pack_environ(environ: dict[str, str]) -> bytes:
    return b"\0".join(os.fsencode(f"{k}={v}") for k, v in environ.items())


def unpack_environ(data: bytes) -> dict[str, str]:
    pairs = (os.fsdecode(item).partition("=") for item in data.split(b"\0") if item)
    return {key: value for key, _, value in pairs if key}


def _fnv1a(data: bytes) -> int:
    """FNV-1a, 64 bits: a stable short name for a long key, without importing hashlib."""
    value = 0xCBF29CE484222325
    for byte in data:
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value
