"""`hivelore hook …`, the process an agent starts on every event: read the payload, then let the
resident hook server answer it, or answer it here.

The server (`hooks.server`) has hivelore's modules loaded and the stores' pages cached, so a hook
it answers costs this process little more than Python's own start-up. When none is running (the
first event after a while, another system than Linux, or `HIVELORE_HOOK_SERVER=off`), this process
answers the event itself (`hooks.command.respond`, the same code the server runs) and then starts a
server for the events to come. This module is the part that runs before either: it imports no
module of hivelore's beyond the two it needs, and nothing from the standard library but `_socket`.
`hooks.command` needs nothing from here (what both need is in `hooks.wire` and `hooks.log`), so
the two never import each other.

`hivelore search` asks the same server through `warm_search` (cli/fast.py): one that holds the
model answers the search by meaning too; otherwise the command searches itself.

Before it sends a byte, the hook checks that the server runs as its own user (`wire.peer_uid`):
one that does not gets nothing, and the event is answered here. It sends only the variables of
its environment that hooks read (`wire.hook_environ`), never the whole environment.
"""

from __future__ import annotations

import os
import sys

from hivelore import __version__
from hivelore.home import home_path
from hivelore.hooks.wire import (
    HOOK_ENVIRON_WITHHELD,
    MAX_PAYLOAD,
    PROTOCOL,
    ForeignServer,
    WireError,
    hook_environ,
    pack,
    pack_environ,
    peer_uid,
    server_address,
    unpack,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import TextIO

FIRST_BYTE_WAIT_S = 3.0  # an agent that never writes or closes stdin (Kiro IDE 0.12) must not stall the hook
IDLE_WAIT_S = 0.5  # once the payload came, a pause this long without EOF ends it
CONNECT_WAIT_S = 1.0
ANSWER_WAIT_S = 30.0  # well within every agent's hook timeout (Claude Code's default: 60 s)
# For `hivelore search`'s answer: one by meaning at 60,000 memories takes 40 to 90 ms, and past this
# the command answers itself (by BM25) rather than keep its user waiting on a busy server.
SEARCH_WAIT_S = 1.0
OFF = ("0", "off", "false", "no")


def main(argv: list[str]) -> int:
    try:
        raw = read_stdin()
    except (OSError, ValueError, AttributeError) as exc:  # no stdin at all: an event without a payload
        from hivelore.hooks.log import log

        log("-", "-", f"cannot read stdin: {exc}")
        raw = b""
    cwd, home = _cwd(), home_path(os.environ)
    address = server_address(home, sys.executable, __version__) if enabled(os.environ) else None
    status, out, err = _ask(address, home, argv, raw, cwd) if address and cwd else (b"absent", "", "")
    if status not in (b"ok", b"lost"):  # no server, or one that cannot take this event: answered here
        from hivelore.hooks.command import respond

        out, err = respond(argv, raw, cwd or "", os.getppid())
    _write(sys.stdout, out)
    _write(sys.stderr, err)
    if status in (b"absent", b"stale") and address and cwd:  # not b"foreign": its name is taken
        start_server(home)
    return 0


def enabled(environ: Mapping[str, str]) -> bool:
    """Whether hooks may use a hook server (`HIVELORE_HOOK_SERVER=off` says no)."""
    return environ.get("HIVELORE_HOOK_SERVER", "on").strip().lower() not in OFF


def read_stdin() -> bytes:
    """Everything on stdin up to MAX_PAYLOAD + 1 bytes (the rest is read and dropped, so the agent's
    write never blocks), waiting at most FIRST_BYTE_WAIT_S for it to start and IDLE_WAIT_S between
    chunks: a hook that waited for an EOF that never comes would stall the agent."""
    import select

    fd = sys.stdin.fileno()
    chunks: list[bytes] = []
    size = 0
    wait = FIRST_BYTE_WAIT_S
    while select.select([fd], [], [], wait)[0]:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break
        if size <= MAX_PAYLOAD:
            chunks.append(chunk)
        size += len(chunk)
        wait = IDLE_WAIT_S
    return b"".join(chunks)[: MAX_PAYLOAD + 1]


def request(verb: bytes, home: str, fields: list[bytes]) -> bytes:
    return pack([PROTOCOL, verb, os.fsencode(os.path.abspath(home)), os.fsencode(sys.executable), *fields])


def exchange(address: bytes, message: bytes, answer_wait_s: float = ANSWER_WAIT_S) -> list[bytes] | None:
    """Send one message to the server and return its answer's fields; None when no server listens
    there, or the one there went away without a word (a server that leaves drops the connections
    still waiting to be accepted; the hook then answers the event itself). A listener that runs as
    another user raises ForeignServer before a byte is sent. An answer cut short (the server died
    mid-answer) or late (`answer_wait_s` between two reads) raises OSError or WireError: the event
    may have been handled, so it is not handled again."""
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    chunks: list[bytes] = []
    try:
        sock.settimeout(CONNECT_WAIT_S)
        try:
            sock.connect(address)
        except OSError:
            return None
        uid = peer_uid(sock)
        if uid != os.getuid():
            where = os.fsdecode(address.replace(b"\0", b"@", 1))
            raise ForeignServer(f"the hook server's socket {where} is held by uid {uid}, not by this user")
        sock.settimeout(answer_wait_s)
        try:
            sock.sendall(message)
            sock.shutdown(_socket.SHUT_WR)
            while chunk := sock.recv(1 << 20):
                chunks.append(chunk)
        except (ConnectionResetError, BrokenPipeError):
            if not chunks:
                return None
            raise
        return unpack(b"".join(chunks)) if chunks else None
    finally:
        sock.close()


def server_state(home: str, environ: Mapping[str, str]) -> str:
    """One line on the hook server for `home`, as `doctor` and `hivelore hook-server status` say it."""
    if not enabled(environ):
        return "off (HIVELORE_HOOK_SERVER is set to off): each hook answers in its own process"
    address = server_address(home, sys.executable, __version__)
    if address is None:
        return f"not available on {sys.platform}: each hook answers in its own process"
    try:
        answer = _control(address, b"status", home)
    except ForeignServer as exc:
        return f"taken by another user: {exc}; each hook answers in its own process"
    return f"running: {answer}" if answer else "not running: the next hook event starts it"


def stop_server(home: str) -> bool:
    """Ask the hook server for `home` to leave; whether one was running."""
    address = server_address(home, sys.executable, __version__)
    try:
        return address is not None and _control(address, b"stop", home) is not None
    except ForeignServer:
        return False


def _control(address: bytes, verb: bytes, home: str) -> str | None:
    """The server's one-line answer to `verb`; None when there is none (ForeignServer when the one
    there is not ours)."""
    try:
        answer = exchange(address, request(verb, home, []))
    except ForeignServer:
        raise
    except (OSError, WireError):
        return None
    return answer[1].decode("utf-8", "replace") if answer and len(answer) == 3 and answer[0] == b"ok" else None


def start_server(home: str) -> None:
    """Start a hook server for `home`, detached: its own session, stdio on /dev/null (an agent reads
    a hook's stdout until every holder closes it), with the variables a hook may pass on
    (`wire.hook_environ`), so that it does not hold the agent's secrets for hours. Two hooks starting
    one at once is harmless: the second server finds the name taken and leaves."""
    devnull = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
    argv = [sys.executable, "-m", "hivelore.hooks.server", os.path.abspath(home)]
    try:
        os.posix_spawn(sys.executable, argv, hook_environ(os.environ), file_actions=devnull, setsid=True)
    except OSError as exc:
        from hivelore.hooks.log import log

        log("-", "-", f"could not start the hook server: {exc}")


def _ask(address: bytes, home: str, argv: list[str], raw: bytes, cwd: str) -> tuple[bytes, str, str]:
    """(status, stdout, stderr) of the event as the server answered it. Status b"ok": answered;
    b"absent": no server; b"stale" (its code changed on disk), b"refused" (not its home, or it
    cannot take this event) or b"foreign" (another user's process holds the address; it was sent
    nothing): answer it here; b"lost": the answer never came, stay silent."""
    fields = [pack([os.fsencode(a) for a in argv]), os.fsencode(cwd), b"%d" % os.getppid(), b"%d" % _umask()]
    message = request(b"hook", home, [*fields, pack_environ(hook_environ(os.environ)), raw])
    try:
        answer = exchange(address, message)
    except ForeignServer as exc:
        from hivelore.hooks.log import log

        log("-", "-", f"{exc}: it was sent nothing, and the event was answered by the hook itself")
        return b"foreign", "", ""
    except (OSError, WireError) as exc:
        from hivelore.hooks.log import log

        log("-", "-", f"the hook server did not answer ({exc}); the event was left unanswered")
        return b"lost", "", ""
    if answer is None:
        return b"absent", "", ""
    if len(answer) != 3:
        return b"refused", "", ""
    status, out, err = answer
    return status, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def warm_search(argv: list[str], environ: Mapping[str, str]) -> tuple[int, str, str] | None:
    """(exit code, stdout, stderr) of `hivelore search ARGV` as this home's hook server answers it, by
    BM25 and meaning with the model it holds; None when the command must answer itself: no server
    (the command starts none), one that is off, lexical, still loading the model, stale, another
    user's, or late (SEARCH_WAIT_S); and never asked when the environment holds a variable the server
    is never given (HIVELORE_TOKEN: the command reads the team server with it)."""
    cwd = _cwd()
    if not enabled(environ) or not HOOK_ENVIRON_WITHHELD.isdisjoint(environ) or not cwd:
        return None
    home = home_path(environ)
    address = server_address(home, sys.executable, __version__)
    if address is None:
        return None
    fields = [pack([os.fsencode(a) for a in argv]), os.fsencode(cwd), b"%d" % _umask()]
    message = request(b"search", home, [*fields, pack_environ(hook_environ(environ))])
    try:
        answer = exchange(address, message, SEARCH_WAIT_S)
    except (OSError, WireError):  # ForeignServer too: `doctor` says who holds the address
        return None
    if not answer or len(answer) != 4 or answer[0] != b"ok" or not answer[3].isdigit():
        return None
    _, out, err, code = answer
    return int(code), out.decode("utf-8", "surrogatepass"), err.decode("utf-8", "surrogatepass")


def _umask() -> int:
    """This process's umask (there is no reading it but by setting it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:  # the folder was removed under the agent: answered here, where that is handled
        return ""


def _write(stream: TextIO, text: str) -> None:
    if not text:
        return
    try:
        stream.write(text)
        stream.flush()
    except OSError as exc:  # the agent stopped listening (a closed pipe): nothing to tell it
        from hivelore.hooks.log import log

        log("-", "-", f"answer not delivered: {exc}")
