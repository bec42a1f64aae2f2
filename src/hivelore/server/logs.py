"""Structured JSON logs, one line per request, each with the request's id.

The id comes from the client's `X-Request-ID` when it is a plain token (a load balancer's, say), or
is made here; it is in the response's `X-Request-ID`, in every error body and in every log line.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_GIVEN_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")
access = logging.getLogger("hivelore.server.access")


class JsonFormatter(logging.Formatter):
    """A log record as one JSON object: time, level, logger, message, the record's `fields`, and the
    traceback of an error (in the log only, never in a response)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            **getattr(record, "fields", {}),
        }
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def configure(level: int = logging.INFO) -> None:
    """JSON lines on stderr for the server's loggers and uvicorn's (its access log is turned off), so
    a line the server writes about a request it could not parse is JSON too."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    handler.formatter.converter = time.gmtime  # type: ignore[union-attr]  # UTC, as the Z says
    for name in ("hivelore.server", "uvicorn"):
        root = logging.getLogger(name)
        root.handlers[:] = [handler]
        root.setLevel(level)
        root.propagate = False


def request_id(request: Request) -> str:
    return str(getattr(request.state, "request_id", "-"))


class RequestLog:
    """ASGI middleware: the request id, the body-size limit, and the access log line."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app, self.max_body_bytes = app, max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        rid = given if _GIVEN_ID.match(given) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = rid
        started, status, received = time.perf_counter(), 500, 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_body_bytes:
                # An HTTPException, because FastAPI turns any other error while reading a body into a 400.
                too_large = f"the request body is larger than {self.max_body_bytes} bytes: send less at once"
                raise HTTPException(413, too_large)
            return message

        async def tagged(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), (b"x-request-id", rid.encode())]
            await send(message)

        try:
            await self.app(scope, counted, tagged)
        finally:
            fields = {
                "request_id": rid,
                "method": scope["method"],
                "path": scope["path"],
                "status": status,
                "ms": round((time.perf_counter() - started) * 1000, 1),
            }
            access.info("request", extra={"fields": fields})
