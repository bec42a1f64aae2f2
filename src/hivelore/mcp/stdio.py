"""The stdio transport of `hivelore mcp`: the handshake in a fraction of a second, and no call refused.

Importing the official SDK and building the tools takes seconds (`import mcp` alone loads its HTTP
transports and the pydantic models of every protocol version). A client that times out a slow
handshake, or refuses its model's calls until the handshake is done, loses them. So this module,
standard library only, takes the client's stdin and stdout at once and puts pipes in their place:

- a reader thread takes the client's lines as they come and passes every one, in order, to the SDK's
  stdin pipe. Until the SDK runs, it answers `initialize` (or a 2026 client's `server/discover`),
  `tools/list` and the other requests of a connecting client itself from the answers the SDK gave
  before (answers.py), when it has them for the protocol version the client asked for;
- the main thread imports the SDK and serves with it (its own stdio transport, on the pipes). A
  `tools/call` sent right after the handshake waits in the pipe and is answered;
- a writer thread passes the SDK's lines to the client, except its answers to the requests already
  answered: those are compared with what was sent (a difference is reported on stderr and the
  answer corrected for the next start) and dropped. The SDK's answers to those requests are kept
  for the next start.

When the client closes stdin, the SDK's stdin is closed only once the SDK has answered every request,
those answered early included (it drops the requests still in flight at end of file), or it was
cancelled.
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading

from hivelore.mcp.answers import (
    ACKNOWLEDGED,
    DISCOVER,
    LISTEN,
    METHODS,
    MODERN_METHODS,
    SUBSCRIPTION_ID_KEY,
    Book,
    acknowledgment_line,
    granted_of,
    id_text,
    listen_key,
    response_line,
    result_of,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import BinaryIO

CANCELLED = "notifications/cancelled"
# What Claude Code 2.1.332 asks a `subscriptions/listen` for, as captured: `prepare` asks the same.
CLAUDE_NOTIFICATIONS = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}
# The 2026 envelope's keys, as the SDK names them (mcp.shared.inbound), without importing the SDK.
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"


class Front:
    """What the reader and writer threads share: the book, the requests still unanswered, the answers
    already sent. `send` writes one line to the client."""

    def __init__(self, book: Book, send: Callable[[bytes], None]) -> None:
        self.book, self._send = book, send
        self._lock = threading.Condition()
        self.sdk_running = False
        self._version: str | None = None  # what the client's `initialize` asked for
        self._asked: dict[str, tuple[str, str]] = {}  # id → (method, version) of a request the book may answer
        self._sent: dict[str, str] = {}  # id → the answer sent before the SDK ran
        self._open: set[str] = set()  # ids of the requests the SDK has not answered yet
        self._changed = False
        self._passing = threading.Lock()  # the SDK's stdin: held probes and the reader's lines, in order
        self._pipe: Callable[[bytes], object] | None = None
        self._held: list[tuple[str | None, bytes]] = []  # (id, line) of probes kept from the SDK until it runs

    def attach(self, pipe: Callable[[bytes], object]) -> None:
        """Where the client's lines go: the SDK's stdin."""
        self._pipe = pipe

    def start_sdk(self) -> None:
        with self._passing:
            with self._lock:
                self.sdk_running = True
            held, self._held = self._held, []
            for _rid, line in held:
                self._write(line)

    def pass_on(self, raw: bytes) -> None:
        """Give a client's line to the SDK, or keep it back. The SDK takes the era of the first request
        it reads, for good: a 2026 probe (`server/discover` with the per-request envelope) makes it
        refuse every later request without that envelope. A client whose probe timed out while the SDK
        was still loading falls back to `initialize` (Claude Code 2.1 does), and the stale probe must
        not decide the era of that handshake. So a probe waits until the SDK runs, and is dropped
        if an `initialize` comes first: its client gave up on it."""
        line = raw if raw.endswith(b"\n") else raw + b"\n"
        message = _json_object(line.decode("utf-8", "replace"))
        with self._passing:
            if not self.sdk_running and message is not None:
                if _enveloped(message):
                    self._held.append((id_text(message.get("id")), line))
                    return
                if message.get("method") == "initialize" and self._held:
                    self._drop_held()
            self._write(line)

    def _drop_held(self) -> None:
        with self._lock:
            self._open.difference_update(rid for rid, _line in self._held if rid is not None)
            self._lock.notify_all()
        self._held = []

    def _write(self, line: bytes) -> None:
        if self._pipe is not None:
            self._pipe(line)

    def receive(self, line: str) -> None:
        """A line from the client: answer it now if it is a handshake request the book knows."""
        with self._lock:
            early = self._note(line)
            if early is not None:
                self._send(early.encode())

    def deliver(self, raw: bytes) -> None:
        """A line from the SDK: pass it on, unless its request was answered already."""
        line = raw.decode("utf-8", "replace")
        with self._lock:
            kept = self._settle(line)
            if kept is not None:
                self._send(kept.encode())
            self._lock.notify_all()
            changed, self._changed = self._changed, False
        if changed:
            self._save()

    def wait_for_answers(self) -> None:
        """Return once every request received has its answer."""
        with self._lock:
            self._lock.wait_for(lambda: not self._open)

    def _note(self, line: str) -> str | None:
        message = _json_object(line)
        if message is None or message.get("jsonrpc") != "2.0":
            return None  # the SDK refuses it, maybe without an answer to wait for
        method, rid = message.get("method"), id_text(message.get("id"))
        if method == CANCELLED:
            params = message.get("params")
            self._open.discard(id_text(params.get("requestId")) if isinstance(params, dict) else None)
            return None
        if not isinstance(method, str) or rid is None:
            return None
        self._open.add(rid)
        asked = self._preparable(method, message.get("params"))
        if asked is None:
            return None
        self._asked[rid] = asked
        result = None if self.sdk_running else self.book.answer(asked[1], asked[0])
        if result is None:
            return None
        # It stays open until the SDK's own answer comes: closing the SDK's stdin sooner would drop
        # that answer, and with it the check of what was sent.
        listening = asked[0].startswith(LISTEN)
        self._sent[rid] = acknowledgment_line(rid, result) if listening else response_line(rid, result)
        return self._sent[rid]

    def _preparable(self, method: str, params: object) -> tuple[str, str] | None:
        """(method, protocol version) when the request's answer could come from the book: a 2026
        request names its version in its envelope, an older one in the connection's `initialize`."""
        enveloped = _envelope_version(params) if method != "initialize" else None
        if enveloped is not None and method == LISTEN and isinstance(params, dict):
            asked = params.get("notifications")
            return (listen_key(asked), enveloped) if isinstance(asked, dict) and len(params) == 2 else None
        if enveloped is not None:
            return (method, enveloped) if method in MODERN_METHODS and _plain(params) else None
        if method == "initialize":
            self._version = _asked_version(params)
            return (method, self._version) if self._version else None
        if method in METHODS and _plain(params) and self._version:
            return method, self._version
        return None

    def _settle(self, line: str) -> str | None:
        message = _json_object(line)
        if message is None:
            print(f"hivelore mcp: the server wrote a line that is not JSON-RPC: {line[:200]!r}", file=sys.stderr)
            return None
        if message.get("method") == ACKNOWLEDGED:
            return self._settle_acknowledgment(message, line)
        if "method" in message or ("result" not in message and "error" not in message):
            return line
        rid = id_text(message.get("id"))
        if rid is None:  # not the id of a request noted as open (see _note)
            return line
        self._open.discard(rid)
        asked = self._asked.pop(rid, None)
        if asked is None:
            return line
        return self._check_sent(rid, asked, result_of(line, rid), line)

    def _check_sent(self, rid: str, asked: tuple[str, str], result: str | None, line: str) -> str | None:
        """Keep the SDK's answer to a request the book may answer; None (drop it) when the client had
        one already, reported if it differed."""
        method, version = asked
        sent = self._sent.pop(rid, None)
        if result is not None:
            self._changed |= self.book.learn(version, method, result)
        if sent is None:
            return line
        if line != sent:
            print(
                f"hivelore mcp: the prepared answer to {method} ({version}) differed from the SDK's; "
                "the next start uses the SDK's.",
                file=sys.stderr,
            )
            if result is None:
                self._changed |= self.book.forget(version, method)
        return None

    def _settle_acknowledgment(self, message: dict, line: str) -> str | None:
        """The SDK acknowledged a listen request: kept for the next start, and dropped when the client
        had it from the book. The request counts as answered (the stream it opened stays open)."""
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        rid = id_text(meta.get(SUBSCRIPTION_ID_KEY)) if isinstance(meta, dict) else None
        asked = self._asked.get(rid) if rid is not None else None
        if rid is None or asked is None or not asked[0].startswith(LISTEN):
            return line
        del self._asked[rid]
        self._open.discard(rid)
        return self._check_sent(rid, asked, granted_of(line, rid), line)

    def _save(self) -> None:
        try:
            self.book.save()
        except OSError as exc:  # the next start is slower, nothing else is lost
            print(f"hivelore mcp: cannot keep the answers in {self.book.path}: {exc.strerror}.", file=sys.stderr)


def main() -> None:
    """`hivelore mcp` and `python -m hivelore.mcp`."""
    from hivelore.home import home_path

    serve(home_path(os.environ))


def serve(home: str) -> None:
    """Serve the client on this process's stdin and stdout until it closes stdin."""
    client_in, client_out = _take_stdio()
    front = Front(Book.load(home), _writer(client_out))
    _run(front, client_in)


def prepare(home: str) -> list[str]:
    """Ask the SDK the handshake of every protocol version it negotiates and keep the answers, so
    the first `hivelore mcp` of any client answers at once. Returns the versions prepared."""
    book = Book.load(home)
    for version, methods in _eras():
        front = Front(book, lambda _line: None)
        _run(front, io.BytesIO(_handshake_lines(version, methods)), restore=_borrowed_stdio())
    book.save()
    return [version for version, _methods in _eras()]


def prepared(home: str) -> bool:
    """Whether the answers in `home` hold the whole handshake of every protocol version the SDK
    negotiates, for this installation (what `prepare` would keep)."""
    book = Book.load(home)
    wanted = [(version, method) for version, methods in _eras() for method in methods]
    return all(book.answer(version, method) is not None for version, method in wanted)


def _run(front: Front, client_in: BinaryIO, restore: Callable[[], None] | None = None) -> None:
    """Serve `client_in` with the SDK, on pipes in place of fd 0 and 1, answers through `front`."""
    to_sdk, from_sdk = os.pipe(), os.pipe()
    os.dup2(to_sdk[0], 0)
    os.dup2(from_sdk[1], 1)
    os.close(to_sdk[0])
    os.close(from_sdk[1])
    reader = threading.Thread(target=_read, args=(front, client_in, to_sdk[1]), daemon=True, name="mcp-client")
    end = f"end of output {os.urandom(8).hex()}\n".encode()
    writer = threading.Thread(target=_pass_out, args=(front, from_sdk[0], end), daemon=True, name="mcp-sdk")
    reader.start()
    writer.start()
    from hivelore.mcp.tools import build_server  # the seconds this module exists to hide

    server = build_server()
    front.start_sdk()
    server.run("stdio")
    # The SDK keeps its own copy of the pipe's write end open for good, so the writer thread never
    # sees end of file: a line of our own, after the SDK's last one, tells it where the output ends.
    os.write(1, end)
    writer.join()
    os.dup2(2, 1)
    if restore is not None:
        restore()


def _read(front: Front, client_in: BinaryIO, sdk_stdin: int) -> None:
    with open(sdk_stdin, "wb", buffering=0) as pipe:
        front.attach(pipe.write)
        for raw in client_in:
            front.receive(raw.decode("utf-8", "replace"))
            front.pass_on(raw)
        front.wait_for_answers()


def _pass_out(front: Front, sdk_stdout: int, end: bytes) -> None:
    with open(sdk_stdout, "rb") as pipe:
        for raw in pipe:
            if raw == end:
                return
            front.deliver(raw)


def _take_stdio() -> tuple[BinaryIO, BinaryIO]:
    """The client's ends of stdin and stdout, moved off fd 0 and 1 (the SDK's pipes go there)."""
    client_in, client_out = os.dup(0), os.dup(1)
    return open(client_in, "rb"), open(client_out, "wb")


def _borrowed_stdio() -> Callable[[], None]:
    """Keep fd 0 and 1 aside while `prepare` puts pipes there; the callable puts them back."""
    saved = os.dup(0), os.dup(1)

    def restore() -> None:
        for fd, copy in zip((0, 1), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)

    return restore


def _writer(client_out: BinaryIO) -> Callable[[bytes], None]:
    def send(line: bytes) -> None:
        try:
            client_out.write(line)
            client_out.flush()
        except (BrokenPipeError, ValueError):  # the client went away: nobody is left to answer
            pass

    return send


def _eras() -> list[tuple[str, tuple[str, ...]]]:
    """(protocol version, the requests of its connecting client) for every version the SDK speaks."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

    return [
        *((version, METHODS) for version in HANDSHAKE_PROTOCOL_VERSIONS),
        *((version, (*MODERN_METHODS, listen_key(CLAUDE_NOTIFICATIONS))) for version in MODERN_PROTOCOL_VERSIONS),
    ]


def _handshake_lines(version: str, methods: tuple[str, ...]) -> bytes:
    """What a client of `version` sends while connecting: `methods`, in order (a listen: as Claude Code
    asks it), and for the handshake era the `initialized` notification after `initialize`."""
    client = {"name": "hivelore", "version": "0"}
    if methods[0] == DISCOVER:
        envelope = {"_meta": {PROTOCOL_VERSION_KEY: version, CLIENT_INFO_KEY: client, CLIENT_CAPABILITIES_KEY: {}}}
        requests = (
            {"jsonrpc": "2.0", "id": n, "method": LISTEN, "params": {**envelope, "notifications": CLAUDE_NOTIFICATIONS}}
            if method.startswith(LISTEN)
            else {"jsonrpc": "2.0", "id": n, "method": method, "params": envelope}
            for n, method in enumerate(methods, start=1)
        )
        return b"".join(json.dumps(m).encode() + b"\n" for m in requests)
    messages = (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": client}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *({"jsonrpc": "2.0", "id": n, "method": method} for n, method in enumerate(METHODS[1:], start=2)),
    )  # fmt: skip
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def _enveloped(message: dict) -> bool:
    """Whether a request carries the 2026 per-request envelope (its protocol version in `_meta`), as
    the SDK tells the eras apart; `initialize` never opens that era."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return message.get("method") != "initialize" and isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta


def _envelope_version(params: object) -> str | None:
    """The protocol version a 2026 request's envelope names, if it names one."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def _plain(params: object) -> bool:
    """Whether a request's params leave its answer as the book has it: none, or only the request's
    `_meta` (its progress token and the like, which no answer of METHODS depends on). Codex 0.171
    sends `tools/list` with `{"_meta": {"progressToken": 0}}`; a cursor asks for another page."""
    if params is None:
        return True
    return isinstance(params, dict) and set(params) <= {"_meta"} and isinstance(params.get("_meta", {}), dict)


def _asked_version(params: object) -> str | None:
    """The protocol version of a well-formed `initialize` (the only part its answer depends on)."""
    if not isinstance(params, dict):
        return None
    version, client = params.get("protocolVersion"), params.get("clientInfo")
    if not isinstance(version, str) or not isinstance(params.get("capabilities"), dict):
        return None
    if not isinstance(client, dict) or not all(isinstance(client.get(k), str) for k in ("name", "version")):
        return None
    return version


def _json_object(line: str) -> dict | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None
