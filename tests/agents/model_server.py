"""A scripted model on 127.0.0.1 that the real agent CLIs talk to instead of a provider.

It speaks as much of three wire protocols as the agents need for the story in test_real_agents.py:
the Anthropic Messages API (`POST …/v1/messages`, SSE; Claude Code), the OpenAI Responses API
(`POST …/responses`, SSE; Codex) and the Gemini API (`POST …/models/M:streamGenerateContent`, SSE,
and `:generateContent`; Gemini CLI). Every request is logged (`ModelServer.requests`), so a test
can assert what the model was shown.

It is also the agents' HTTP(S) proxy (HTTPS_PROXY, with NO_PROXY=127.0.0.1): whatever an agent tries
to reach beyond the loopback interface arrives here instead, is refused (403) and is logged in
`ModelServer.outside`. Nothing is forwarded anywhere.

The model follows a script: a list of `Action`s, one per turn of the agent's main loop. Which turn a
request is, is read from the conversation it carries (how many tool results it holds), so a retry
or a side request (a title, a "who speaks next" check) does not advance the script. A request that
offers no tools is a side request: it gets a short text answer.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Say:
    """The model answers with text and ends its turn."""

    text: str


@dataclass(frozen=True)
class Call:
    """The model calls a tool: the one whose name is `tool`, or else the one whose name ends with
    `_{tool}` (an MCP tool, named `mcp__hivelore__memory_write` by one agent and `memory_write` or
    `mcp_hivelore_memory_write` by another). `custom` is the text input of a freeform tool (Codex's
    apply_patch); otherwise `arguments` are its JSON arguments."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    custom: str | None = None


Action = Say | Call


@dataclass
class Request:
    """One request an agent made, as the model server saw it."""

    api: str  # anthropic | responses | gemini | other
    method: str
    path: str
    body: Any
    tools: list[str]
    tool_results: int
    at: float = field(default_factory=time.monotonic)  # when it arrived

    @property
    def text(self) -> str:
        """Every string in the request (system prompt, messages, tool results, tool schemas), one a line:
        what the model was shown."""
        return "\n".join(_strings(self.body))

    @property
    def main(self) -> bool:
        """A turn of the agent's own loop (it offers tools), not a side request."""
        return bool(self.tools)


class ModelServer:
    """`with ModelServer() as model:` serves on 127.0.0.1 (a free port: `model.url`) until the block ends."""

    def __init__(self) -> None:
        self.script: list[Action] = []
        self.requests: list[Request] = []
        self.outside: list[str] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._http = _QuietServer(("127.0.0.1", 0), _handler_for(self))
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, name="model-server", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()

    def play(self, script: list[Action]) -> None:
        """The script of the next session; the log starts afresh."""
        with self._lock:
            self.script = list(script)
            self.requests = []

    def main_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.main]

    def next_id(self) -> int:
        return next(self._ids)

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def refuse(self, target: str) -> None:
        with self._lock:
            self.outside.append(target)

    def action_for(self, request: Request) -> Action:
        if not request.main:
            return Say("OK.")
        with self._lock:
            script = self.script
        if request.tool_results >= len(script):
            return Say("The script is over.")
        action = script[request.tool_results]
        if isinstance(action, Call):
            name = _offered(action.tool, request.tools)
            if name is None:
                return Say(f"I have no {action.tool} tool; I was offered: {', '.join(request.tools)}.")
            return Call(name, action.arguments, action.custom)
        return action


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        """An agent that hangs up mid-request (it exits after its last answer, or gives up on a
        refused proxy tunnel) is no error of the scripted model."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _offered(tool: str, tools: list[str]) -> str | None:
    if tool in tools:
        return tool
    return next((t for t in tools if t.endswith("_" + tool)), None)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _handler_for(model: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 -- the base class's name
            pass  # the request log is model.requests

        def do_CONNECT(self) -> None:
            model.refuse(f"CONNECT {self.path}")
            self._json(403, {"error": {"message": "no traffic leaves this machine in the tests"}})

        def do_GET(self) -> None:
            if self._outside():
                return
            model.record(Request("other", "GET", self.path, None, [], 0))
            self._json(404, {"error": {"message": f"the scripted model has no {self.path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self._outside():
                return
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                body = raw.decode(errors="replace")
            path = self.path.split("?")[0]
            if path.endswith("/messages/count_tokens"):
                model.record(Request("other", "POST", self.path, body, [], 0))
                self._json(200, {"input_tokens": 1000})
            elif path.endswith("/messages"):
                self._anthropic(body)
            elif path.endswith("/responses"):
                self._responses(body)
            elif ":streamGenerateContent" in path or ":generateContent" in path:
                self._gemini(body, stream=":streamGenerateContent" in path)
            elif path.endswith(":countTokens"):
                model.record(Request("other", "POST", self.path, body, [], 0))
                self._json(200, {"totalTokens": 1000})
            else:
                model.record(Request("other", "POST", self.path, body, [], 0))
                self._json(404, {"error": {"message": f"the scripted model has no {self.path}"}})

        # -- Anthropic Messages (Claude Code) --------------------------------------------------------

        def _anthropic(self, body: dict) -> None:
            tools = [t.get("name", "") for t in body.get("tools") or []]
            results = sum(
                1
                for m in body.get("messages") or []
                if m.get("role") == "user" and isinstance(m.get("content"), list)
                for block in m["content"]
                if block.get("type") == "tool_result"
            )
            request = Request("anthropic", "POST", self.path, body, tools, results)
            model.record(request)
            action = model.action_for(request)
            n = model.next_id()
            usage = {"input_tokens": 100, "output_tokens": 10}
            start = {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": body.get("model", "scripted"),
                     "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}  # fmt: skip
            if isinstance(action, Call):
                block = {"type": "tool_use", "id": f"toolu_{n}", "name": action.tool, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(action.arguments)}
                stop = "tool_use"
            else:
                block = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": action.text}
                stop = "end_turn"
            if not body.get("stream"):
                filled = {"input": action.arguments} if isinstance(action, Call) else {"text": action.text}
                content = {**block, **filled}
                self._json(200, {**start, "content": [content], "stop_reason": stop})
                return
            self._sse([
                ("message_start", {"type": "message_start", "message": start}),
                ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                   "usage": {"output_tokens": 10}}),
                ("message_stop", {"type": "message_stop"}),
            ])  # fmt: skip

        # -- OpenAI Responses (Codex) ----------------------------------------------------------------

        def _responses(self, body: dict) -> None:
            # Codex offers MCP tools in namespaces, loaded on demand by its client-side tool_search: a
            # loaded namespace comes back in the input as a tool_search_output item. A namespaced tool
            # is known here by its qualified name, namespace + name (mcp__hivelore + memory_write).
            items = [i for i in body.get("input") or [] if isinstance(i, dict)]
            loaded = [t for i in items if i.get("type") == "tool_search_output" for t in i.get("tools") or []]
            namespaces: dict[str, tuple[str, str]] = {}
            tools = []
            for tool in [*(body.get("tools") or []), *loaded]:
                name = tool.get("name") or tool.get("type", "")
                if tool.get("type") == "namespace":
                    for inner in tool.get("tools") or []:
                        namespaces[name + "__" + inner.get("name", "")] = (name, inner.get("name", ""))
                else:
                    tools.append(name)
            results = sum(
                1 for i in items
                if i.get("type") in ("function_call_output", "custom_tool_call_output", "tool_search_output")
            )  # fmt: skip
            request = Request("responses", "POST", self.path, body, [*tools, *namespaces], results)
            model.record(request)
            action = model.action_for(request)
            n = model.next_id()
            call = {"id": f"fc_{n}", "call_id": f"call_{n}", "status": "completed"}
            if isinstance(action, Call) and action.tool == "tool_search":
                item = {"type": "tool_search_call", **call, "execution": "client", "arguments": action.arguments}
            elif isinstance(action, Call) and action.custom is not None:
                item = {"type": "custom_tool_call", **call, "name": action.tool, "input": action.custom}
            elif isinstance(action, Call) and action.tool in namespaces:
                namespace, name = namespaces[action.tool]
                item = {"type": "function_call", **call, "namespace": namespace, "name": name,
                        "arguments": json.dumps(action.arguments)}  # fmt: skip
            elif isinstance(action, Call):
                item = {"type": "function_call", **call, "name": action.tool, "arguments": json.dumps(action.arguments)}
            else:
                item = {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": action.text, "annotations": []}]}  # fmt: skip
            response = {"id": f"resp_{n}", "object": "response", "status": "in_progress", "model": body.get("model")}
            usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
                     "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 110}  # fmt: skip
            self._sse([
                ("response.created", {"type": "response.created", "response": response}),
                ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
                ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
                ("response.completed", {"type": "response.completed",
                                        "response": {**response, "status": "completed", "output": [item],
                                                     "usage": usage}}),
            ])  # fmt: skip

        # -- Gemini (Gemini CLI) ---------------------------------------------------------------------

        def _gemini(self, body: dict, stream: bool) -> None:
            tools = [
                d.get("name", "")
                for t in body.get("tools") or []
                for d in t.get("functionDeclarations") or t.get("function_declarations") or []
            ]
            results = sum(
                1
                for c in body.get("contents") or []
                for part in c.get("parts") or []
                if "functionResponse" in part or "function_response" in part
            )
            request = Request("gemini", "POST", self.path, body, tools, results)
            model.record(request)
            action = model.action_for(request)
            if isinstance(action, Call):
                part: dict[str, Any] = {"functionCall": {"name": action.tool, "args": action.arguments}}
            else:
                part = {"text": action.text}
            chunk = {
                "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
                "modelVersion": "scripted",
            }
            if stream:
                self._sse([(None, chunk)])
            else:
                self._json(200, chunk)

        def _outside(self) -> bool:
            """A request sent to this server as a proxy (an absolute URL): refused unless it is for the
            loopback interface (Gemini CLI sends its model requests through the proxy it is given)."""
            if not self.path.startswith(("http://", "https://")):
                return False
            url = urlsplit(self.path)
            if url.hostname in ("127.0.0.1", "localhost"):
                self.path = url.path + (f"?{url.query}" if url.query else "")
                return False
            model.refuse(f"{self.command} {self.path}")
            self._json(403, {"error": {"message": "no traffic leaves this machine in the tests"}})
            return True

        # -- wire --------------------------------------------------------------------------------------

        def _json(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _sse(self, events: list[tuple[str | None, Any]]) -> None:
            data = b"".join(
                (f"event: {name}\n" if name else "").encode() + b"data: " + json.dumps(payload).encode() + b"\n\n"
                for name, payload in events
            )
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
