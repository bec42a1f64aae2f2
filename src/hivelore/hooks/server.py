"""The hook server: one resident process per HIVELORE_HOME (and interpreter and version) that
answers hook events for the short-lived `hivelore hook` processes agents start.

A hook process that answers an event itself spends most of its time importing hivelore and reading
the stores' first pages from disk; here both are done once. Each event is answered exactly as the
hook process would have answered it (`hooks.command.respond`), in the hook process's environment,
folder and umask, one event at a time. The server

- listens on a Linux abstract socket (`wire.server_address`) and answers only its own user;
- leaves when it has been idle for `HIVELORE_HOOK_SERVER_IDLE` seconds (default 7200: two hours,
  so that a lunch break does not cost the next session start its speed), when its
  home folder is removed, when asked (`hivelore hook-server stop`), or when a hivelore source file
  changed on disk since it started (an upgrade or an edit: it answers b"stale", so that the hook
  answers the event itself and starts a server with the new code).

Run by `hooks.client.start_server` as `python -m hivelore.hooks.server HOME`.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import struct
import sys
import time
from collections.abc import Mapping

from hivelore import __version__
from hivelore.hooks.command import log, respond
from hivelore.hooks.wire import MAX_MESSAGE, PROTOCOL, WireError, pack, server_address, unpack, unpack_environ

IDLE_S = 7200.0  # a resident server holds about 20 MB
# The home's SQLite stores. An event opens, writes and closes some of them; when the closing
# connection is a file's last, SQLite checkpoints its log into the file and syncs it, 2 to 20 ms per
# store per event. The server keeps one idle connection to each, so no event's is the last.
STORES = ("index.db", "events.db", "team.db", "graph.db")
TICK_S = 2.0  # how often an idle server checks whether it should leave
READ_WAIT_S = 5.0  # a client that connects and sends nothing must not hold the others up
# Loaded before the first event, so that no event pays for them.
WARM_MODULES = (
    "hivelore.hooks.handlers", "hivelore.eventstore", "hivelore.service", "hivelore.coordination",
    "hivelore.profile.promotion", "hivelore.testruns", "hivelore.codegraph",
)  # fmt: skip


class HookServer:
    def __init__(self, home: str, listener: socket.socket, idle_s: float) -> None:
        self.home, self.listener, self.idle_s = home, listener, idle_s
        self.started_ns = time.time_ns()
        self.last_event = time.monotonic()
        self.events = 0
        self.keepers: dict[str, tuple[tuple[int, int], sqlite3.Connection]] = {}

    def serve(self) -> str:
        """Answer events until it is time to leave; why it left."""
        self.listener.settimeout(TICK_S)
        while True:
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                conn = None
            if conn is not None:
                with conn:
                    reason = self._serve(conn)
                if reason:
                    return reason
            # Asked after every connection too: `status` calls do not make a server busy.
            reason = self._reason_to_leave(full=conn is None)
            if reason:
                return reason

    def _serve(self, conn: socket.socket) -> str:
        """Answer one connection; a reason to leave after it, or ""."""
        try:
            fields = self._read(conn)
        except (OSError, WireError) as exc:
            log("-", "-", f"hook server: a request could not be read ({exc})")
            return ""
        verb = fields[1] if len(fields) > 1 and fields[0] == PROTOCOL else b""
        if not _same_user(conn) or fields[2:4] != [os.fsencode(self.home), os.fsencode(sys.executable)]:
            self._send(conn, [b"refused", b"", b""])
            return ""
        if verb == b"stop":
            self._send(conn, [b"ok", b"stopping", b""])
            return "asked to stop"
        if verb == b"status":
            self._send(conn, [b"ok", self._status().encode(), b""])
            return ""
        if verb != b"hook" or len(fields) != 10:
            self._send(conn, [b"refused", b"", b""])
            return ""
        if self._code_changed():
            self.listener.close()  # the hook starts a new server: the name must be free by then
            self._send(conn, [b"stale", b"", b""])
            return "its code changed on disk"
        self.last_event = time.monotonic()
        self._send(conn, self._answer(fields[4:]))
        self.events += 1
        self._keep_stores()
        return ""

    def _answer(self, fields: list[bytes]) -> list[bytes]:
        """One hook event in the hook process's environment, folder and umask."""
        argv, cwd, ppid, mask, environ, raw = fields
        try:
            args = [os.fsdecode(a) for a in unpack(argv)]
        except WireError:
            return [b"refused", b"", b""]
        if not (ppid.isdigit() and mask.isdigit()):
            return [b"refused", b"", b""]
        os.environ.clear()
        os.environ.update(unpack_environ(environ))
        try:
            os.chdir(cwd)
        except OSError:
            return [b"refused", b"", b""]  # the hook process deals with a folder that is gone
        os.umask(int(mask))
        out, err = respond(args, raw, os.fsdecode(cwd), int(ppid))
        return [b"ok", out.encode("utf-8", "replace"), err.encode("utf-8", "replace")]

    def _keep_stores(self) -> None:
        """An idle read-only connection to each store file there is (a new one when a file was
        replaced, as a reset or a rebuild of a damaged store does)."""
        for name in STORES:
            path = os.path.join(self.home, name)
            held = self.keepers.pop(name, None)
            try:
                found = os.stat(path)
            except OSError:
                found = None
            if held and found and held[0] == (found.st_dev, found.st_ino):
                self.keepers[name] = held
                continue
            if held:
                held[1].close()
            if found:
                try:
                    keeper = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
                    keeper.execute("SELECT count(*) FROM sqlite_master").fetchone()  # joins the log: holds the file
                except sqlite3.Error:
                    continue  # not a database (yet): the event that uses it says so
                self.keepers[name] = ((found.st_dev, found.st_ino), keeper)

    def _read(self, conn: socket.socket) -> list[bytes]:
        conn.settimeout(READ_WAIT_S)
        chunks, size = [], 0
        while chunk := conn.recv(1 << 20):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_MESSAGE:
                raise WireError(f"request over {MAX_MESSAGE:,} bytes")
        return unpack(b"".join(chunks))

    def _send(self, conn: socket.socket, fields: list[bytes]) -> None:
        try:
            conn.sendall(pack(fields))
        except OSError as exc:  # the hook process gave up waiting
            log("-", "-", f"hook server: an answer was not delivered ({exc})")

    def _reason_to_leave(self, full: bool) -> str:
        if time.monotonic() - self.last_event > self.idle_s:
            return f"idle for {self.idle_s:g} s"
        if not full:
            return ""
        if not os.path.isdir(self.home):
            return "its home folder was removed"
        if self._code_changed():
            return "its code changed on disk"
        return ""

    def _code_changed(self) -> bool:
        for name, module in list(sys.modules.items()):
            path = getattr(module, "__file__", None) if name.partition(".")[0] == "hivelore" else None
            try:
                if path and os.stat(path).st_mtime_ns > self.started_ns:
                    return True
            except OSError:
                return True  # removed: uninstalled or moved
        return False

    def _status(self) -> str:
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started_ns / 1e9))
        answered = f"{self.events} event{'' if self.events == 1 else 's'} answered"
        return f"pid {os.getpid()}, since {since}, {answered}, leaves after {self.idle_s:g} s idle"


def idle_seconds(environ: Mapping[str, str]) -> float:
    try:
        value = float(environ.get("HIVELORE_HOOK_SERVER_IDLE", IDLE_S))
    except ValueError:
        return IDLE_S
    return value if value > 0 else IDLE_S


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m hivelore.hooks.server HOME", file=sys.stderr)
        return 2
    home = os.path.abspath(argv[0])
    address = server_address(home, sys.executable, __version__)
    if address is None:
        return 0
    os.environ["HIVELORE_HOME"] = home  # for the log, until the first event brings its environment
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(address)
    except OSError:
        return 0  # another server took the name first: it answers
    listener.listen(64)
    os.chdir("/")
    for name in WARM_MODULES:
        __import__(name)
    server = HookServer(home, listener, idle_seconds(os.environ))
    log("-", "-", f"hook server started (pid {os.getpid()})")
    reason = server.serve()
    listener.close()
    os.environ["HIVELORE_HOME"] = home
    log("-", "-", f"hook server left after {server.events} event{'' if server.events == 1 else 's'}: {reason}")
    return 0


def _same_user(conn: socket.socket) -> bool:
    """Whether the peer runs as this server's user: an abstract socket has no file permissions, so
    any local user could connect to it."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1] == os.getuid()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
