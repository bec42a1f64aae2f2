"""The hook server: one resident process per HIVELORE_HOME (and interpreter and version) that
answers hook events for the short-lived `hivelore hook` processes agents start.

A hook process that answers an event itself spends most of its time importing hivelore and opening
the stores; here both are done once (the stores' connections stay open from one event to the next,
`sqlitedb.Pool`). Each event is answered exactly as the
hook process would have answered it (`hooks.command.respond`), in the hook process's environment,
folder and umask, one event at a time — except that, with the `semantic` extra, the server loads the
model in the background and, once it is loaded, the prompt and failure hooks recall by meaning too
(`_keep_recall`; HIVELORE_HOOK_MODEL=off at its start keeps it lexical). Once the model is loaded,
it also answers `hivelore search` (`_search`: the command's own code, given the model), so that a
plain search recalls by meaning without loading it. The server

- listens on a socket file in `HIVELORE_HOME/run/`, a folder only its user may enter, or, when that
  path is too long for a socket address, on a Linux abstract socket (`wire.server_address`);
- closes a connection from another user as it accepts it, before reading a byte (SO_PEERCRED);
- reads every connection's request at once (a selector), each within READ_WAIT_S in all, so that
  a client that sends slowly, or never, delays no one else's answer;
- in remote mode, keeps this home's mirrors of the team server current in a background thread
  (MIRROR_SYNC_S), sending what their outboxes hold as soon as an event was answered; and, in a
  second thread, the replica of the team's active claims and recent failures, by a request the
  team server holds until something changes (TEAM_WAIT_S): a hook reads the mirror and the replica
  and never waits on the network itself;
- leaves when it has been idle for `HIVELORE_HOOK_SERVER_IDLE` seconds (default 7200: two hours,
  so that a lunch break does not cost the next session start its speed), when its
  home folder is removed, when asked (`hivelore hook-server stop`), or when a hivelore source file
  changed on disk since it started (an upgrade or an edit: it answers b"stale", so that the hook
  answers the event itself and starts a server with the new code).

Run by `hooks.client.start_server` as `python -m hivelore.hooks.server HOME`.
"""

from __future__ import annotations

import contextlib
import io
import os
import selectors
import socket
import sqlite3
import stat
import sys
import threading
import time
from collections.abc import Callable, Mapping

from hivelore import __version__
from hivelore.hooks.command import respond
from hivelore.hooks.log import log
from hivelore.hooks.wire import (
    MAX_MESSAGE,
    PROTOCOL,
    WireError,
    pack,
    peer_uid,
    run_folder,
    server_address,
    unpack,
    unpack_environ,
)
from hivelore.memory.service import Pool

TYPE_CHECKING = False  # typing is not imported at run time (records.py)
if TYPE_CHECKING:
    from hivelore.remote.client import Client

IDLE_S = 7200.0  # a resident server holds about 20 MB
# The home's SQLite stores. An event opens, writes and closes some of them; when the closing
# connection is a file's last, SQLite checkpoints its log into the file and syncs it, 2 to 20 ms per
# store per event. The server keeps one idle connection to each, so no event's is the last.
STORES = ("index.db", "events.db", "team.db", "graph.db", "signatures.db")
TICK_S = 2.0  # how often an idle server checks whether it should leave
READ_WAIT_S = 5.0  # for a whole request, from its connection on: a hook sends its request at once
SEND_WAIT_S = 5.0  # for an answer to be taken: a hook reads it at once
BACKLOG = 64  # connections waiting to be accepted
MIRROR_SYNC_S = 2.0  # how often the team server's mirrors are brought up to date (remote mode)
# How long the team server holds the replica's request when nothing changed (it answers within
# 0.25 s of a change: a claim queued on one machine, sent as soon as its event was answered, reaches
# the replica on another well within a second). A request every 4 s, 15 a minute, and with the
# mirror's sync 45 of the server's 120 per token. The replica's age, shown past REPLICA_STALE_S
# (team/coordination.py), stays under it while the server answers.
TEAM_WAIT_S = 4.0
TEAM_RETRY_S = 1.0  # after a round that failed (the server away): not a busy loop
MIRROR_BUDGET_S = 5.0  # how long one of those waits for the server
RECALL_TICK_S = 1.0  # how often the vectors a ranking left out are computed (a batch at a time)
# Loaded before the first event, so that no event pays for them.
WARM_MODULES = (
    "hivelore.hooks.handlers", "hivelore.events.store", "hivelore.memory.service", "hivelore.team.coordination",
    "hivelore.profile.promotion", "hivelore.team.testruns", "hivelore.codegraph", "hivelore.cli.search",
)  # fmt: skip


class Listening:
    """The server's listening socket and, for a socket file, the lock that makes this server the
    only one at that path (so that a server starting does not unlink a live server's socket)."""

    def __init__(self, sock: socket.socket, path: bytes | None = None, lock: int | None = None) -> None:
        self.sock, self.path, self.lock = sock, path, lock

    def close(self) -> None:
        """Give the address up: a server started after this one can take it at once."""
        if self.path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
            self.path = None
        self.sock.close()
        if self.lock is not None:
            os.close(self.lock)
            self.lock = None


class Request:
    """A connection whose request is still coming in."""

    def __init__(self, conn: socket.socket, deadline: float) -> None:
        self.conn, self.deadline = conn, deadline
        self.chunks: list[bytes] = []
        self.size = 0
        self.problem = ""

    def read(self) -> bool:
        """Take what has come; whether the request is complete (the client shut its side) or broken."""
        try:
            chunk = self.conn.recv(1 << 20)
        except BlockingIOError:
            return False
        except OSError as exc:
            self.problem = str(exc)
            return True
        if not chunk:
            return True
        self.chunks.append(chunk)
        self.size += len(chunk)
        if self.size > MAX_MESSAGE:
            self.problem = f"request over {MAX_MESSAGE:,} bytes"
            return True
        return False


class HookServer:
    def __init__(self, home: str, listening: Listening, idle_s: float) -> None:
        self.home, self.listening, self.idle_s = home, listening, idle_s
        self.started_ns = time.time_ns()
        self.last_event = time.monotonic()
        self.events = 0
        self.searches = 0  # `hivelore search` commands answered
        self.keepers: dict[str, tuple[tuple[int, int], sqlite3.Connection]] = {}
        self.pool = Pool()  # the stores' connections, kept from one event to the next
        self.refused_uids: set[int] = set()
        self.leaving = threading.Event()
        self.wake = threading.Event()  # an event was answered: send what it queued now
        self.mirrors_state = ""  # how the last sync of the team server's mirrors went, for `status`
        self.synced_at = ""  # when they were last synced without a problem (UTC, for `status`)

    def _sync_mirrors(self) -> None:
        """The background thread: it touches only the files under `home/remote` and the network,
        never the process's folder or environment, which each event sets for itself."""
        told: set[str] = set()
        clients: dict[str, Client] = {}  # per server, kept across rounds: its connection stays warm
        synced = 0.0  # when the memories were last synced (monotonic)
        while not self.leaving.is_set():
            self.wake.wait(MIRROR_SYNC_S)
            self.wake.clear()
            if self.leaving.is_set() or not os.path.isdir(os.path.join(self.home, "remote")):
                continue
            from hivelore.remote.replica import refresh_mirrors

            now = time.monotonic()
            memories = now - synced >= MIRROR_SYNC_S
            synced = now if memories else synced
            try:
                problems = set(refresh_mirrors(self.home, MIRROR_BUDGET_S, clients, memories, claims=False))
            except Exception as exc:  # noqa: BLE001 -- a bug here must not end the thread, only be logged
                problems = {f"syncing the team server's mirror failed: {type(exc).__name__}: {exc}"}
            for problem in problems - told:
                log("-", "-", f"hook server: {problem}")
            if told and not problems:
                log("-", "-", "hook server: the team server answers again; the mirrors are synced")
            told = problems
            self.mirrors_state = self._mirrors_state(problems)
        for client in clients.values():
            client.close()

    def _keep_recall(self, model: bool) -> None:
        """Recall by meaning where it is warm: load the model in the background (the `semantic` extra,
        unless HIVELORE_HOOK_MODEL=off; the prompt and failure hooks use it once it is loaded) and
        between events embed the memories a ranking had to leave out."""
        from pathlib import Path

        from hivelore.memory import vectors

        home = Path(self.home)
        resident = vectors.start_resident(home) if model else None
        while not self.leaving.wait(RECALL_TICK_S):
            semantic = vectors.resident(home)
            while semantic is not None and not self.leaving.is_set() and semantic.fill():
                pass
            if resident is not None and resident.problem:
                log("-", "-", f"hook server: recall stays lexical, the model did not load ({resident.problem})")
                resident = None

    def _recall_state(self) -> str:
        from pathlib import Path

        vectors = sys.modules.get("hivelore.memory.vectors")
        if vectors is None or not vectors.installed():
            return "recall lexical (no semantic extra)"
        if not vectors.resident_started(Path(self.home)):
            return "recall lexical (HIVELORE_HOOK_MODEL=off)"
        semantic = vectors.resident(Path(self.home))
        if semantic is None:
            return "recall lexical (model loading)"
        waiting = semantic.waiting()
        return f"recall by meaning ({waiting:,} memories waiting for a vector)" if waiting else "recall by meaning"

    def _watch_team(self) -> None:
        """The second background thread: the replica of the team's claims and failures, by requests
        the team server answers when something changed (remote/replica.py `watch_team`). Like the
        first, it touches only the files under `home/remote` and the network."""
        from hivelore.remote.replica import Watch, watch_team

        told: set[str] = set()
        watches: dict[str, Watch] = {}  # per server, kept across rounds: its ETag and its connection
        while not self.leaving.is_set():
            if not os.path.isdir(os.path.join(self.home, "remote")):
                self.leaving.wait(TEAM_RETRY_S)
                continue
            try:
                problems = set(watch_team(self.home, MIRROR_BUDGET_S, TEAM_WAIT_S, watches))
            except Exception as exc:  # noqa: BLE001 -- a bug here must not end the thread, only be logged
                problems = {f"keeping the team's replica failed: {type(exc).__name__}: {exc}"}
            for problem in problems - told:
                log("-", "-", f"hook server: {problem}")
            told = problems
            if problems or not any(watch.etag for watch in watches.values()):  # nothing to wait on
                self.leaving.wait(TEAM_RETRY_S)
        for watch in watches.values():
            watch.client.close()

    def _mirrors_state(self, problems: set[str]) -> str:
        """What `status` (and so `doctor`) says of the mirrors: synced, or why not and since when."""
        if not problems:
            self.synced_at = time.strftime("%H:%M:%SZ", time.gmtime())
            return f"team server mirrors synced at {self.synced_at}"
        since = f"since {self.synced_at}" if self.synced_at else "since it started"
        return (
            f"team server mirrors not synced {since}, hooks answer from them as they are: {'; '.join(sorted(problems))}"
        )

    def serve(self) -> str:
        """Answer events until it is time to leave; why it left."""
        selector = selectors.DefaultSelector()
        self.listening.sock.setblocking(False)
        selector.register(self.listening.sock, selectors.EVENT_READ)
        requests: dict[socket.socket, Request] = {}
        threading.Thread(target=self._sync_mirrors, name="mirrors", daemon=True).start()
        # Read now: each event replaces this process's environment with its hook's.
        model = os.environ.get("HIVELORE_HOOK_MODEL", "on") != "off"
        # Imported here, before any event: a module the recall thread was still importing would be
        # found half-made by an event's `_warm_model` or by `status`. It is cheap; the model's
        # runtime is imported by the thread.
        import hivelore.memory.vectors  # noqa: F401

        threading.Thread(target=self._keep_recall, args=(model,), name="recall", daemon=True).start()
        threading.Thread(target=self._watch_team, name="team", daemon=True).start()
        try:
            while True:
                ready = selector.select(self._wait(requests))
                for key, _ in ready:
                    if key.fileobj is self.listening.sock:
                        self._accept(selector, requests)
                        continue
                    request = requests[key.fileobj]  # type: ignore[index]  # the socket registered, typed loosely
                    if not request.read():
                        continue
                    selector.unregister(request.conn)
                    del requests[request.conn]
                    with request.conn:
                        reason = self._serve(request)
                    if reason:
                        return reason
                self._drop_late(selector, requests)
                # Asked after every connection too: `status` calls do not make a server busy.
                reason = self._reason_to_leave(full=not ready)
                if reason:
                    return reason
        finally:
            self.leaving.set()
            self.wake.set()
            for conn in requests:
                conn.close()
            selector.close()
            self.pool.close()

    def _wait(self, requests: dict[socket.socket, Request]) -> float:
        if not requests:
            return TICK_S
        return max(0.0, min(TICK_S, min(r.deadline for r in requests.values()) - time.monotonic()))

    def _accept(self, selector: selectors.BaseSelector, requests: dict[socket.socket, Request]) -> None:
        """Take the connections waiting (at most a backlog's worth, so that a flood of them does not
        keep the others waiting); one from another user is closed before a byte is read."""
        for _ in range(BACKLOG):
            try:
                conn, _ = self.listening.sock.accept()
            except OSError:  # BlockingIOError: none left
                return
            uid = peer_uid(conn)
            if uid != os.getuid():
                conn.close()
                if uid not in self.refused_uids:  # once per user: a flood must not wash the log away
                    self.refused_uids.add(uid)
                    log("-", "-", f"hook server: refused a connection from uid {uid} (not this server's user)")
                continue
            conn.setblocking(False)
            selector.register(conn, selectors.EVENT_READ)
            requests[conn] = Request(conn, time.monotonic() + READ_WAIT_S)

    def _drop_late(self, selector: selectors.BaseSelector, requests: dict[socket.socket, Request]) -> None:
        now = time.monotonic()
        for request in [r for r in requests.values() if r.deadline <= now]:
            selector.unregister(request.conn)
            del requests[request.conn]
            request.conn.close()
            whole = f"was not whole after {READ_WAIT_S:g} s ({request.size} bytes)"
            log("-", "-", f"hook server: a request {whole}: dropped")

    def _serve(self, request: Request) -> str:
        """Answer one request; a reason to leave after it, or ""."""
        conn = request.conn
        try:
            if request.problem:
                raise WireError(request.problem)
            fields = unpack(b"".join(request.chunks))
        except WireError as exc:
            log("-", "-", f"hook server: a request could not be read ({exc})")
            return ""
        conn.settimeout(SEND_WAIT_S)
        verb = fields[1] if len(fields) > 1 and fields[0] == PROTOCOL else b""
        if fields[2:4] != [os.fsencode(self.home), os.fsencode(sys.executable)]:
            self._send(conn, [b"refused", b"", b""])
            return ""
        if verb == b"stop":
            self._send(conn, [b"ok", b"stopping", b""])
            return "asked to stop"
        if verb == b"status":
            self._send(conn, [b"ok", self._status().encode(), b""])
            return ""
        # A hook's request: argv, cwd, ppid, umask, environment, payload; a search's: argv, cwd, umask, environment.
        if (verb, len(fields)) not in ((b"hook", 10), (b"search", 8)):
            self._send(conn, [b"refused", b"", b""])
            return ""
        if self._code_changed():
            self.listening.close()  # the hook starts a new server: the address must be free by then
            self._send(conn, [b"stale", b"", b""])
            return "its code changed on disk"
        self.last_event = time.monotonic()
        if verb == b"search":
            answer = self._search(fields[4:])
            self._send(conn, answer)
            self.searches += answer[0] == b"ok"  # not those the command answers itself
        else:
            later: list[Callable[[], None]] = []
            self._send(conn, self._answer(fields[4:], later))
            conn.close()  # the hook process reads to the end of the answer: it leaves now
            for work in later:
                work()
            self.wake.set()
            self.events += 1
        self._keep_stores()
        return ""

    def _answer(self, fields: list[bytes], later: list[Callable[[], None]]) -> list[bytes]:
        """One hook event in the hook process's environment, folder and umask; the work the answer
        does not depend on is left in `later`, for once the answer is sent."""
        argv, cwd, ppid, mask, environ, raw = fields
        args = self._enter(argv, cwd, mask, environ) if ppid.isdigit() else None
        if args is None:
            return [b"refused", b"", b""]
        out, err = respond(args, raw, os.fsdecode(cwd), int(ppid), self.pool, later)
        return [b"ok", out.encode("utf-8", "replace"), err.encode("utf-8", "replace")]

    def _search(self, fields: list[bytes]) -> list[bytes]:
        """`hivelore search` in the command's environment, folder and umask, by BM25 and meaning:
        (b"ok", stdout, stderr, exit code). While the model is not loaded (or never will be) it answers
        b"lexical", and the command searches itself, as it would without a server."""
        from pathlib import Path

        from hivelore.cli.search import SEARCH, answer_search
        from hivelore.memory import vectors

        semantic = vectors.resident(Path(self.home))
        if semantic is None:
            return [b"lexical", b"", b""]
        argv, cwd, mask, environ = fields
        args = self._enter(argv, cwd, mask, environ)
        if args is None:
            return [b"refused", b"", b""]
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                # No token: the command asks only when it has none (and the server never holds one).
                code = answer_search(SEARCH.parse(args), lambda _: semantic, None, self.pool)
        except SystemExit as exc:  # a bad input, said on stderr, with its exit code
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        except Exception as exc:  # noqa: BLE001 -- a bug: the command searches itself, and shows it
            log("-", "-", f"hook server: hivelore search {' '.join(args)}: {type(exc).__name__}: {exc}")
            return [b"refused", b"", b""]
        answer = (out.getvalue(), err.getvalue())
        return [b"ok", *(text.encode("utf-8", "surrogatepass") for text in answer), b"%d" % code]

    def _enter(self, argv: bytes, cwd: bytes, mask: bytes, environ: bytes) -> list[str] | None:
        """Take on a client's environment, folder and umask; its arguments, or None when the request
        cannot be answered here (the client then answers itself)."""
        try:
            args = [os.fsdecode(a) for a in unpack(argv)]
        except WireError:
            return None
        if not mask.isdigit():
            return None
        os.environ.clear()
        os.environ.update(unpack_environ(environ))
        try:
            os.chdir(cwd)
        except OSError:
            return None  # the client deals with a folder that is gone
        os.umask(int(mask))
        return args

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
        answered += f", {self.searches} search{'' if self.searches == 1 else 'es'} answered"
        state = f", {self.mirrors_state}" if self.mirrors_state else ""
        recall = self._recall_state()
        return f"pid {os.getpid()}, since {since}, {answered}, leaves after {self.idle_s:g} s idle, {recall}{state}"


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
    listening = listen(home, address)
    if listening is None:
        return 0  # another server holds the address: it answers
    os.chdir("/")
    for name in WARM_MODULES:
        __import__(name)
    server = HookServer(home, listening, idle_seconds(os.environ))
    log("-", "-", f"hook server started (pid {os.getpid()})")
    try:
        reason = server.serve()
    finally:
        listening.close()
    os.environ["HIVELORE_HOME"] = home
    log("-", "-", f"hook server left after {server.events} event{'' if server.events == 1 else 's'}: {reason}")
    return 0


def listen(home: str, address: bytes) -> Listening | None:
    """A socket listening at `address`, or None when another server holds it, or when the folder of
    the socket file is not this user's own (logged)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if address.startswith(b"\0"):
        try:
            sock.bind(address)
        except OSError:
            sock.close()
            return None
        sock.listen(BACKLOG)
        return Listening(sock)
    problem = _private_folder(run_folder(home))
    if problem:
        log("-", "-", f"hook server not started: {problem}")
        sock.close()
        return None
    import fcntl

    lock = os.open(address[: -len(b".sock")] + b".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        sock.close()
        return None
    with contextlib.suppress(FileNotFoundError):
        os.unlink(address)  # left by a server that was killed: it holds no lock any more
    sock.bind(address)
    sock.listen(BACKLOG)
    return Listening(sock, address, lock)


def _private_folder(path: str) -> str:
    """Make `path` a folder that only this user may enter; what is wrong with it when it cannot be."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        found = os.lstat(path)
        if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid():
            return f"{path} is not a folder of this user's (a link, a file, or another user's folder)"
        if found.st_mode & 0o077:
            os.chmod(path, 0o700)
    except OSError as exc:
        return f"cannot make {path} a private folder ({exc})"
    return ""


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
