"""How a hook process and the hook server talk: where the server listens, who may be on the other
end, which of the hook's environment travels, and the framing of a request and its answer. Pure
stdlib, nothing imported at module level but `os` and `sys`: the client side of this runs on every
agent event, before anything else is loaded.

A message is a sequence of byte strings, each framed as `<length>:<bytes>,` (a netstring), so
payloads, environments and answers travel as they are, with no escaping and no JSON parser.
"""

from __future__ import annotations

import os
import sys

from hivelore.errors import BadInput

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from collections.abc import Mapping

PROTOCOL = b"hivelore-hook/1"
MAX_PAYLOAD = (
    16 * 1024 * 1024
)  # an event's stdin is read (so the agent never blocks writing) but not parsed beyond this
MAX_MESSAGE = 64 * 1024 * 1024  # a request holds at most one capped payload and an environment
SUN_PATH_MAX = 107  # sizeof(sockaddr_un.sun_path) on Linux, less the terminating NUL
# The variables a hook event is answered with. Everything the code the server runs reads (a test
# walks that code and checks), what the processes it starts need (Python's own, the user's
# locale), and nothing else: an agent's environment holds cloud keys and tokens that hivelore
# never reads and that must not leave the hook process.
HOOK_ENVIRON = frozenset({
    "HOME", "PATH", "TMPDIR", "TZ", "LANG", "LANGUAGE", "USER", "USERNAME", "LOGNAME",
    "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM",  # where git's user.email is (team.py)
    "USER_PROMPT",  # Kiro IDE 0.12's payload (hooks/command.py)
})  # fmt: skip
HOOK_ENVIRON_PREFIXES = ("HIVELORE_", "LC_", "PYTHON")
# hivelore's own secrets, which the prefix would let through: no code the server runs reads them (a test
# checks), and a server that lives for hours must not hold the team server's token.
HOOK_ENVIRON_WITHHELD = frozenset({"HIVELORE_TOKEN"})


class WireError(BadInput):
    """Bytes that are not a well-formed message."""


class ForeignServer(OSError):
    """The process listening at the hook server's address runs as another user."""


def server_address(home: str, executable: str, version: str) -> bytes | None:
    """The hook server's socket for this HIVELORE_HOME, interpreter and hivelore version, or None on
    other systems than Linux, where hooks run in their own process.

    A socket file in `HIVELORE_HOME/run/` (a folder only its owner may enter, see `run_folder`):
    no other user can connect to it, nor take its name before our server does. When that path is
    longer than a socket address holds, a name in Linux's abstract namespace instead, which any
    local user can see and bind; there both ends check who is on the other side (`peer_uid`)."""
    if not sys.platform.startswith("linux"):
        return None
    home = os.path.abspath(home)
    key = "\0".join((home, executable, version)).encode("utf-8", "surrogateescape")
    name = f"hooks-{os.getuid()}-{_fnv1a(key):016x}"
    path = os.fsencode(os.path.join(run_folder(home), f"{name}.sock"))
    return path if len(path) <= SUN_PATH_MAX else f"\0hivelore-{name}".encode()


def run_folder(home: str) -> str:
    return os.path.join(os.path.abspath(home), "run")


def peer_uid(sock: object) -> int:
    """The user id of the process at the other end of a connected Unix socket (SO_PEERCRED: for a
    client, whoever called listen(); for a server, whoever called connect())."""
    import _socket

    creds = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)  # type: ignore[attr-defined]
    return int.from_bytes(creds[4:8], sys.byteorder)  # struct ucred {pid_t pid; uid_t uid; gid_t gid;}


def hook_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """The part of a hook process's environment that travels to the server (HOOK_ENVIRON)."""
    return {
        k: v
        for k, v in environ.items()
        if (k in HOOK_ENVIRON or k.startswith(HOOK_ENVIRON_PREFIXES)) and k not in HOOK_ENVIRON_WITHHELD
    }


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


def pack_environ(environ: Mapping[str, str]) -> bytes:
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
