"""The client side of the team server: one endpoint, one token, JSON over HTTP(S), retries.

Standard library only (`http.client`): the hook server will use it, and the hook path imports no
third-party package. Every failure becomes one of hivelore's errors with one sentence, so each
surface shows it as it shows any other: a refusal of the server is its own sentence; a server that
cannot be reached is `Unavailable`, saying which and how to check.

An error the server answered carries its HTTP `status` and the body's `code` (server/app.py's table):
the status alone does not tell a full quota from a role's refusal (both 403), nor the token's rate
limit from a busy server (both 429), and the callers decide by the code.

Retries, within `retry_budget_s` in all: a 429 or a 503 (the server did nothing) after the server's
`Retry-After`; a connection refused (nothing was sent), and a read whose answer was lost, a few times
with a growing pause. A change whose answer was lost is not sent again: whether it was applied is unknown,
and the error says so.

One keep-alive connection per client, kept between requests (the hook server syncs every 2 s: a new
connection each time would cost a handshake, with TLS two round trips more). A kept connection the
server closed while idle is seen before it is used and opened afresh; one that breaks under a request
is opened afresh and the request sent again at once, once, when that is safe (a GET, or a change with
an idempotency key).
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from urllib.parse import quote, urlsplit

from hivelore import errors

TYPE_CHECKING = False  # typing is not imported at run time (records.py)
if TYPE_CHECKING:
    import http.client

TIMEOUT_S = 10.0
RETRY_BUDGET_S = 30.0  # waiting out a 429 or a 503, as the server's Retry-After asks
CONNECT_ATTEMPTS = 4  # a server that is down is told at once (after about 2 s), not after the budget
LOOPBACK = ("127.0.0.1", "::1", "localhost")
USER_AGENT = "hivelore-client"


class Refused(errors.BadInput):
    """The server refused the request (a 4xx other than 404, 409 and 429): its sentence says why, its
    `code` which refusal it is (`guard_refused`, `forbidden`, `quota_exceeded`, `unauthenticated` …;
    empty from a server older than the codes)."""

    def __init__(self, message: str, status: int, code: str = "") -> None:
        super().__init__(message)
        self.status, self.code = status, code

    @property
    def about_token(self) -> bool:
        """The token was refused, not the request: a new login lets it through."""
        return self.code == "unauthenticated" or not self.code and self.status == 401


class QuotaReached(Refused):
    """The account holds as many memories as it may (`quota_exceeded`): fewer at once may still fit."""


class RateLimited(errors.Busy):
    """The token's requests this minute are used up (`rate_limited`), rather than the server busy."""


class Dropped(ConnectionResetError):
    """A kept connection broke under a request: the server may have closed it as the request left."""


class Endpoint:
    """A team server's base URL: https, or http on this machine only (a token never crosses a
    network in clear)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url.strip())
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise errors.BadInput(f"{url!r} is not a server address: give one like https://hivelore.example.com")
        if parts.scheme == "http" and parts.hostname not in LOOPBACK:
            raise errors.BadInput(
                f"{url} is plain http to another machine: the token would cross the network unencrypted; use https"
            )
        if parts.query or parts.fragment or parts.username or parts.password:
            raise errors.BadInput(f"{url!r} holds a query, a fragment or a password: give the bare server address")
        self.scheme, self.host = parts.scheme, parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.base = parts.path.rstrip("/")

    @property
    def url(self) -> str:
        default = 443 if self.scheme == "https" else 80
        port = "" if self.port == default else f":{self.port}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}{port}{self.base}"

    def __str__(self) -> str:
        return self.url


def segment(text: str) -> str:
    """One path segment, quoted (a scope's `::` and `/` included)."""
    return quote(text, safe=":")


class Client:
    """Not for two threads at once: requests of one client are one after another (a lock holds them)."""

    def __init__(self, endpoint: Endpoint, token: str | None, timeout_s: float = TIMEOUT_S) -> None:
        self.endpoint, self.token, self.timeout_s = endpoint, token, timeout_s
        self.retry_budget_s = RETRY_BUDGET_S
        self.waited_s = 0.0  # spent waiting out 429s and 503s, for a long job to report
        self.opened = 0  # connections opened: one while the kept one lasts
        self._conn: http.client.HTTPConnection | None = None
        self._lock = threading.Lock()
        self.etag: str | None = None  # the last answer's ETag header
        self._missing: set[str] = set()  # routes this server answered 404 or 405 to: older than they are

    def get_if_changed(self, path: str, etag: str | None) -> tuple[object, str | None]:
        """A GET with `If-None-Match: etag`: (its JSON, its ETag) when the server answered it whole,
        (None, etag) when it answered 304 (not modified). Sent once (again on a new connection when
        the kept one was closed): the caller asks again soon."""
        if not self.token:
            raise errors.BadInput("no token for the team server: set HIVELORE_TOKEN or run `hivelore remote login`")
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT, "Authorization": f"Bearer {self.token}"}
        if etag:
            headers["If-None-Match"] = etag
        resent = False
        while True:
            try:
                status, answer, retry_after = self._once("GET", self.endpoint.base + path, None, headers)
                break
            except OSError as exc:
                if isinstance(exc, Dropped) and not resent:
                    resent = True
                    continue
                raise self._unreachable(exc, False) from None
        if status == 304:
            return None, etag
        return _result(status, answer, retry_after), self.etag

    def close(self) -> None:
        with self._lock:
            self._drop()

    def missing(self, path: str) -> None:
        """The server has no `path` (it is older than the route): asked no more while this client lasts."""
        self._missing.add(path)

    def lacks(self, path: str) -> bool:
        return path in self._missing

    def get(self, path: str) -> object:
        return self.request("GET", path)

    def post(
        self, path: str, body: object = None, idempotency_key: str | None = None, replayable: bool = False
    ) -> object:
        """`replayable`: the body makes the request safe to send again without a key of its own (a
        batch whose every write carries its own idempotency key)."""
        return self.request("POST", path, body, idempotency_key=idempotency_key, replayable=replayable)

    def put(self, path: str, body: object = None) -> object:
        return self.request("PUT", path, body)

    def patch(self, path: str, body: object = None) -> object:
        return self.request("PATCH", path, body)

    def delete(self, path: str) -> object:
        return self.request("DELETE", path)

    def request(
        self,
        method: str,
        path: str,
        body: object = None,
        authenticated: bool = True,
        idempotency_key: str | None = None,
        replayable: bool = False,
    ) -> object:
        """The JSON the server answered (None for 204), retried within the budget; or an error. A
        change sent with an `idempotency_key` (or `replayable`) is sent again when its answer was
        lost: the server applies it once."""
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        if authenticated:
            if not self.token:
                raise errors.BadInput("no token for the team server: set HIVELORE_TOKEN or run `hivelore remote login`")
            headers["Authorization"] = f"Bearer {self.token}"
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        deadline, pause, attempts, resent = time.monotonic() + self.retry_budget_s, 0.25, 0, False
        safe = method == "GET" or idempotency_key is not None or replayable
        while True:
            try:
                status, answer, retry_after = self._once(method, self.endpoint.base + path, payload, headers)
            except OSError as exc:
                if isinstance(exc, Dropped) and safe and not resent:  # at once, on a new connection
                    resent = True
                    continue
                attempts += 1
                lost = not safe and not isinstance(exc, ConnectionRefusedError)
                if lost or attempts >= CONNECT_ATTEMPTS or time.monotonic() + pause > deadline:
                    raise self._unreachable(exc, lost) from None
                time.sleep(pause)
                pause *= 2
                continue
            if status in (429, 503) and retry_after is not None and time.monotonic() + retry_after <= deadline:
                time.sleep(retry_after)
                self.waited_s += retry_after
                continue
            return _result(status, answer, retry_after)

    def _once(
        self, method: str, path: str, payload: bytes | None, headers: dict[str, str]
    ) -> tuple[int, bytes, float | None]:
        with self._lock:
            conn, kept = self._connection()
            try:
                conn.request(method, path, body=payload, headers=headers)
                response = conn.getresponse()
                data = response.read()
            except OSError as exc:
                self._drop()
                if kept:
                    raise Dropped(exc.errno or 0, exc.strerror or str(exc) or type(exc).__name__) from exc
                raise
            if response.will_close:
                self._drop()
            retry = response.getheader("Retry-After")
            self.etag = response.getheader("ETag")
            return response.status, data, float(retry) if retry and retry.isdigit() else None

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        """The kept connection (True) if the server has not closed it while idle, else a new one."""
        import http.client  # here, not above: with ssl, 25 ms that every other command would pay
        import ssl

        if self._conn is not None and self._conn.sock is not None and not _closed(self._conn.sock):
            return self._conn, True
        self._drop()
        self.opened += 1
        if self.endpoint.scheme == "https":
            self._conn = http.client.HTTPSConnection(
                self.endpoint.host, self.endpoint.port, timeout=self.timeout_s, context=ssl.create_default_context()
            )
        else:
            self._conn = http.client.HTTPConnection(self.endpoint.host, self.endpoint.port, timeout=self.timeout_s)
        return self._conn, False

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _unreachable(self, exc: OSError, lost: bool) -> errors.Unavailable:
        reason = exc.strerror or str(exc) or type(exc).__name__
        if lost:
            return errors.Unavailable(
                f"the connection to the team server at {self.endpoint} broke before it answered ({reason})",
                "the change may or may not have been made: check, then try again",
            )
        return errors.Unavailable(
            f"the team server at {self.endpoint} cannot be reached ({reason})",
            "check the address and your network, or try again later",
        )


def _closed(sock: socket.socket) -> bool:
    """An idle connection that is readable has been closed by the server (or holds bytes nobody
    asked for): either way it is not to be used again."""
    try:
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True


def _result(status: int, answer: bytes, retry_after: float | None) -> object:
    if status == 204:
        return None
    try:
        data = json.loads(answer) if answer else None
    except ValueError:
        data = None
    if 200 <= status < 300:
        return data
    raise error_of(status, data, retry_after)


def error_of(status: int, data: object, retry_after: float | None = None) -> errors.HiveloreError:
    """The error a refusal of the server stands for: by its `code` where the status alone says too
    little, else by the status. `data`: the answer's JSON (a batch answers each write's as its own)."""
    body = data if isinstance(data, dict) else {}
    sentence = body.get("error") if isinstance(body.get("error"), str) else None
    code = str(body["code"]) if sentence is not None and isinstance(body.get("code"), str) else ""
    if sentence is None and status in (404, 413):  # not hivelore's answer: about the route, not the request
        return errors.Unavailable(
            f"the team server answered {status} without hivelore's sentence (a proxy in the way, or an address"
            " that is not a hivelore server)",
            "check the address and the proxy, then try again",
        )
    sentence = (sentence or f"the team server answered {status}").rstrip(".")
    waited = f" (retry after {retry_after:.0f} s)" if retry_after else ""
    if code == "quota_exceeded":
        return QuotaReached(sentence, status, code)
    if code == "rate_limited":
        return RateLimited(sentence + waited)
    if status == 404:
        return errors.NotFound(sentence)
    if status == 409:
        return errors.Conflict(sentence)
    if status == 429:
        return errors.Busy(sentence + waited)
    if status >= 500:
        return errors.Unavailable(f"the team server failed: {sentence}", "try again later")
    return Refused(sentence, status, code)
