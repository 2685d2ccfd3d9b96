"""A scripted, OpenAI-compatible chat-completions server for tests (127.0.0.1 only).

    stub.script("extraction", {"candidates": []}, Reply(status=503))
    stub.default("chat", "hello")
    client = LLMClient(base_url=stub.base_url, api_key="k", max_retries=0)

Replies are chosen by the request's `X-AutoPatch-Task` header: first the task's FIFO queue
(`script`), then the task's default (`default`), else HTTP 500 `unscripted task <task>`.
A reply is one of:

* `str` – the assistant content;
* `dict` / `list` – JSON-serialised as the content;
* `Reply(...)` – tool calls, HTTP errors, delays, blocking on an Event, raw bodies, usage;
* a callable `fn(request: CapturedRequest) -> reply` – computed from the request.

`stream: true` requests get Server-Sent Events: content split into several deltas, tool calls
as deltas (id/name first, then arguments in pieces), a finish chunk, optional usage chunk and
`data: [DONE]` — the SDK's real streaming path runs.

Every request is captured (`stub.requests`, `stub.requests_for(task)`). Closing the server
releases every reply that is still delaying or waiting on an Event.

`StubLLMServer(strict=Strict(...))` (or the `strict_llm_stub` fixture) behaves like a strict local
server such as llama-cpp-python: a `null` (or non-string) message content is refused with HTTP 500
and a pydantic-style validation body; tools are ignored unless `tool_choice` forces one (the
scripted tool calls are dropped and the content answers instead); no usage is ever reported (a
stream has no usage chunk); `max_tokens` is honoured by cutting the content (4 characters per
token) with `finish_reason: "length"`, and a request without it is noted in `stub.unbounded`;
`drop_system=True` hides system messages from reply functions (like a chat template without a
system role); `json_mode="rejected"` refuses `response_format` with HTTP 400; `tool_role=False`
refuses any request carrying a `tool` message (a template without a tool role: HTTP 500 "roles
must alternate"); `tools="refused"` refuses any request with tools (HTTP 400, like Ollama for a
model without tool support).

The pytest fixture `llm_stub` yields a started server and closes it afterwards.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

TASK_HEADER = "x-autopatch-task"
CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
AUTO = "auto"
"""`Reply.finish_reason` default: "tool_calls" when the reply has tool calls, else "stop"."""


@dataclass(frozen=True)
class CapturedRequest:
    task: str | None
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON (None when the body was not JSON)
    path: str

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and self.body.get("stream") is True

    @property
    def messages(self) -> list[dict]:
        if isinstance(self.body, dict) and isinstance(self.body.get("messages"), list):
            return self.body["messages"]
        return []

    @property
    def tools_forced(self) -> bool:
        return isinstance(self.body, dict) and _forced(self.body)

    def without_system(self) -> CapturedRequest:
        """The request as a model whose chat template drops system messages sees it."""
        body = dict(self.body)
        body["messages"] = [m for m in self.messages if not (isinstance(m, dict) and m.get("role") == "system")]
        return CapturedRequest(self.task, self.headers, body, self.path)


@dataclass(frozen=True)
class Strict:
    """A strict local server's behaviour (see the module docstring)."""

    tools: str = "unless_forced"  # "unless_forced" | "ignored" (even when forced) | "honoured" | "refused"
    drop_system: bool = False
    json_mode: str = "accepted"  # "accepted" | "rejected"
    tool_role: bool = True
    chars_per_token: int = 4


def _forced(body: dict) -> bool:
    choice = body.get("tool_choice")
    return choice == "required" or isinstance(choice, dict)


def _validation_500(where: str, what: str) -> tuple[int, dict]:
    message = f"1 validation error for RequestBody\n{where}\n  {what} [type=string_type]"
    return 500, {"error": {"message": message, "type": "internal_server_error", "code": None}}


def strict_refusal(strict: Strict, body: dict) -> tuple[int, dict] | None:
    """The error a strict server answers this request body with, or None."""
    for n, message in enumerate(body.get("messages") or ()):
        if not isinstance(message, dict):
            return _validation_500(f"messages.{n}", "Input should be a valid dictionary")
        content = message.get("content", None)
        if content is None or (message.get("role") == "tool" and not isinstance(content, str)):
            return _validation_500(f"messages.{n}.content", "Input should be a valid string")
        if not isinstance(content, (str, list)):
            return _validation_500(f"messages.{n}.content", "Input should be a valid string")
        for m, call in enumerate(message.get("tool_calls") or ()):
            arguments = (call.get("function") or {}).get("arguments") if isinstance(call, dict) else None
            if not isinstance(arguments, str):
                return _validation_500(f"messages.{n}.tool_calls.{m}.function.arguments",
                                       "Input should be a valid string")
        if message.get("role") == "tool" and not strict.tool_role:
            return 500, {"error": {"message": "Conversation roles must alternate user/assistant/user/assistant/...",
                                   "type": "internal_server_error"}}
    if "response_format" in body and strict.json_mode == "rejected":
        return 400, {"error": {"message": "'response_format.type' must be 'json_schema' or 'text'",
                               "type": "invalid_request_error"}}
    if body.get("tools") and strict.tools == "refused":
        return 400, {"error": {"message": "this model does not support tools", "type": "invalid_request_error"}}
    return None


@dataclass
class Reply:
    """A scripted reply. `tool_calls` items are `(name, arguments_json)` tuples or dicts with
    `name`, `arguments` (str, or a JSON-serialisable value) and optional `id`.

    `status` >= 400 answers with `error_body` (a dict sent as is; a str wrapped as
    `{"error": {"message": ...}}`; None → a generic error). `delay` sleeps before answering;
    `wait_event` blocks until the Event is set (both end early when the server closes, which
    then drops the connection). `raw_body` is sent verbatim (content type application/json, or
    text/event-stream for stream requests; `headers` may override it). `usage` is
    `(prompt_tokens, completion_tokens)` or a dict; omitted from the reply when None.
    """

    content: str | None = None
    tool_calls: Sequence[tuple[str, str] | dict[str, Any]] | None = None
    status: int = 200
    error_body: Any = None
    delay: float = 0.0
    wait_event: threading.Event | None = None
    finish_reason: str | None = AUTO
    usage: tuple[int, int] | dict[str, int] | None = None
    raw_body: str | bytes | None = None
    headers: dict[str, str] | None = None  # extra response headers, e.g. {"retry-after-ms": "10"}


ReplySpec = Any  # str | dict | list | Reply | Callable[[CapturedRequest], "ReplySpec"]


class _Closed(Exception):
    """The server closed while a reply was waiting."""


def _as_reply(spec: ReplySpec) -> Reply:
    if isinstance(spec, Reply):
        return spec
    if isinstance(spec, str):
        return Reply(content=spec)
    if isinstance(spec, (dict, list)):
        return Reply(content=json.dumps(spec, ensure_ascii=False))
    raise TypeError(f"unsupported stub reply type: {type(spec).__name__}")


def _tool_calls_json(reply: Reply) -> list[dict[str, Any]]:
    calls = []
    for index, item in enumerate(reply.tool_calls or ()):
        if isinstance(item, dict):
            name = item["name"]
            arguments = item.get("arguments", "{}")
            call_id = item.get("id") or f"call_stub_{index}"
        else:
            name, arguments = item
            call_id = f"call_stub_{index}"
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        calls.append(
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        )
    return calls


def _finish_reason(reply: Reply) -> str | None:
    if reply.finish_reason == AUTO:
        return "tool_calls" if reply.tool_calls else "stop"
    return reply.finish_reason


def _usage_json(reply: Reply) -> dict[str, int] | None:
    if reply.usage is None:
        return None
    if isinstance(reply.usage, dict):
        usage = dict(reply.usage)
    else:
        prompt, completion = reply.usage
        usage = {"prompt_tokens": prompt, "completion_tokens": completion}
    usage.setdefault("total_tokens", usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0))
    return usage


def _pieces(text: str, parts: int) -> list[str]:
    """`text` split into up to `parts` non-empty pieces (at least 2 when len(text) >= 2)."""
    if not text:
        return []
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    stub: StubLLMServer

    def handle_error(self, request: Any, client_address: Any) -> None:  # quiet
        self.stub._note_error(f"handler error from {client_address!r}")


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"  # one request per connection; SSE ends when the socket closes
    server_version = "StubLLM/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def do_GET(self) -> None:
        self._send_json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        stub = self.server.stub
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw.decode("utf-8")) if raw else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            body = None
        headers = {name.lower(): value for name, value in self.headers.items()}
        path = self.path.split("?", 1)[0]
        request = CapturedRequest(task=headers.get(TASK_HEADER), headers=headers, body=body, path=path)
        stub._record(request)
        try:
            if path not in CHAT_PATHS and not path.endswith("/v1/chat/completions"):  # a base URL with a path
                self._send_json(404, {"error": {"message": f"no route {path}"}})
                return
            if not isinstance(body, dict):
                self._send_json(400, {"error": {"message": "request body is not a JSON object"}})
                return
            strict = stub.strict
            if strict is not None:
                refusal = strict_refusal(strict, body)
                if refusal is not None:
                    self._send_json(*refusal)
                    return
            try:
                reply = stub._reply_for(request.without_system() if strict and strict.drop_system else request)
                if strict is not None and reply is not None:
                    reply = stub._strict_reply(request, reply)
            except Exception as exc:  # a test's reply function failed: tell the client and the test
                stub._note_error(f"reply function raised {type(exc).__name__}: {exc}")
                self._send_json(500, {"error": {"message": f"stub reply function raised {type(exc).__name__}"}})
                return
            if reply is None:
                self._send_json(500, {"error": {"message": f"unscripted task {request.task}"}})
                return
            stub._wait(reply)
            self._answer(request, reply)
        except _Closed:
            self.close_connection = True
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            # the client gave up (timeout, cancelled stream): nothing to answer
            self.close_connection = True

    # ------------------------------------------------------------------------------------------
    def _send(self, status: int, payload: bytes, content_type: str, extra: dict[str, str] | None) -> None:
        self.send_response(status)
        headers = {"content-type": content_type, "content-length": str(len(payload))}
        for name, value in (extra or {}).items():
            headers[name.lower()] = value
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _send_json(self, status: int, obj: Any, extra: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj, ensure_ascii=False).encode("utf-8"), "application/json", extra)

    def _answer(self, request: CapturedRequest, reply: Reply) -> None:
        if reply.raw_body is not None:
            payload = reply.raw_body.encode("utf-8") if isinstance(reply.raw_body, str) else reply.raw_body
            content_type = "text/event-stream" if request.stream else "application/json"
            self._send(reply.status, payload, content_type, reply.headers)
            return
        if reply.status >= 400:
            error = reply.error_body
            if error is None:
                error = {"error": {"message": f"stub error {reply.status}", "type": "stub_error", "code": None}}
            elif isinstance(error, str):
                error = {"error": {"message": error}}
            self._send_json(reply.status, error, reply.headers)
            return
        model = request.body.get("model", "stub-model")
        if request.stream:
            self._answer_stream(model, reply)
            return
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        calls = _tool_calls_json(reply)
        if calls:
            message["tool_calls"] = calls
        completion: dict[str, Any] = {
            "id": self.server.stub._next_id(),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(reply)}],
        }
        usage = _usage_json(reply)
        if usage is not None:
            completion["usage"] = usage
        self._send_json(reply.status, completion, reply.headers)

    def _answer_stream(self, model: str, reply: Reply) -> None:
        stub = self.server.stub
        completion_id = stub._next_id()
        created = int(time.time())

        def chunk(delta: dict[str, Any] | None, finish: str | None = None, usage: Any = None) -> bytes:
            obj: dict[str, Any] = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            if usage is not None:
                obj["usage"] = usage
            return b"data: " + json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n\n"

        self.send_response(reply.status)
        headers = {"content-type": "text/event-stream", "cache-control": "no-cache"}
        for name, value in (reply.headers or {}).items():
            headers[name.lower()] = value
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()

        events = [chunk({"role": "assistant", "content": ""})]
        for piece in _pieces(reply.content or "", stub.stream_pieces):
            events.append(chunk({"content": piece}))
        for index, call in enumerate(_tool_calls_json(reply)):
            head = {
                "index": index,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""},
            }
            events.append(chunk({"tool_calls": [head]}))
            for piece in _pieces(call["function"]["arguments"], 3):
                events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
        events.append(chunk({}, _finish_reason(reply)))
        usage = _usage_json(reply)
        if usage is not None:
            events.append(chunk(None, usage=usage))
        events.append(b"data: [DONE]\n\n")
        for event in events:
            if stub._closed.is_set():
                raise _Closed
            self.wfile.write(event)
            self.wfile.flush()


class StubLLMServer:
    """See the module docstring. Starts serving on construction."""

    def __init__(self, *, stream_pieces: int = 4, strict: Strict | None = None) -> None:
        self.stream_pieces = stream_pieces
        self.strict = strict
        self.unbounded: list[str | None] = []  # strict mode: tasks of requests sent without max_tokens
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._queues: dict[str | None, deque[ReplySpec]] = {}
        self._defaults: dict[str | None, ReplySpec] = {}
        self._requests: list[CapturedRequest] = []
        self._errors: list[str] = []
        self._ids = 0
        self._closed = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.stub = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="llm-stub", daemon=True
        )
        self._thread.start()

    # --- scripting -------------------------------------------------------------------------
    def script(self, task: str | None, *replies: ReplySpec) -> StubLLMServer:
        with self._lock:
            self._queues.setdefault(task, deque()).extend(replies)
        return self

    def default(self, task: str | None, reply: ReplySpec) -> StubLLMServer:
        with self._lock:
            self._defaults[task] = reply
        return self

    def pending(self, task: str | None = None) -> int:
        """Scripted replies not yet consumed (for one task, or all)."""
        with self._lock:
            if task is not None:
                return len(self._queues.get(task, ()))
            return sum(len(queue) for queue in self._queues.values())

    # --- inspection ------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def requests(self) -> list[CapturedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_for(self, task: str | None) -> list[CapturedRequest]:
        with self._lock:
            return [r for r in self._requests if r.task == task]

    @property
    def errors(self) -> list[str]:
        """Failures inside the stub itself (e.g. a reply function that raised)."""
        with self._lock:
            return list(self._errors)

    def wait_for_requests(self, count: int, *, task: str | None = None, timeout: float = 5.0) -> bool:
        """Block until at least `count` requests (for `task`, if given) have arrived."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while True:
                seen = [r for r in self._requests if task is None or r.task == task]
                if len(seen) >= count:
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._arrived.wait(remaining)

    # --- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()  # releases delays and wait_events
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> StubLLMServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- used by the handler ---------------------------------------------------------------
    def _record(self, request: CapturedRequest) -> None:
        with self._arrived:
            self._requests.append(request)
            self._arrived.notify_all()

    def _note_error(self, message: str) -> None:
        with self._lock:
            self._errors.append(message)

    def _next_id(self) -> str:
        with self._lock:
            self._ids += 1
            return f"chatcmpl-stub-{self._ids}"

    def _reply_for(self, request: CapturedRequest) -> Reply | None:
        with self._lock:
            queue = self._queues.get(request.task)
            if queue:
                spec = queue.popleft()
            elif request.task in self._defaults:
                spec = self._defaults[request.task]
            else:
                return None
        for _ in range(8):  # a reply function may return another reply function
            if not callable(spec):
                break
            spec = spec(request)
        return _as_reply(spec)

    def _strict_reply(self, request: CapturedRequest, reply: Reply) -> Reply:
        """What a strict local server makes of a scripted reply: tools ignored unless forced, no
        usage, the content cut at `max_tokens`."""
        strict = self.strict
        assert strict is not None
        body = request.body
        changes: dict[str, Any] = {"usage": None}
        honoured = strict.tools == "honoured" or (strict.tools == "unless_forced" and _forced(body))
        if reply.tool_calls and not (body.get("tools") and honoured):
            changes["tool_calls"] = None
            changes["content"] = reply.content or "A plain-text answer: this server did not call any tool."
            if reply.finish_reason in (AUTO, "tool_calls"):
                changes["finish_reason"] = "stop"
        bound = body.get("max_tokens")
        if not isinstance(bound, int):
            with self._lock:
                self.unbounded.append(request.task)
        else:
            content = changes.get("content", reply.content) or ""
            limit = bound * strict.chars_per_token
            if len(content) > limit:
                changes["content"] = content[:limit]
                changes["finish_reason"] = "length"
        if reply.status >= 400 or reply.raw_body is not None:
            return reply
        return replace(reply, **changes)

    def _wait(self, reply: Reply) -> None:
        if reply.delay > 0 and self._closed.wait(reply.delay):
            raise _Closed
        if reply.wait_event is not None:
            while not reply.wait_event.wait(0.02):
                if self._closed.is_set():
                    raise _Closed
        if self._closed.is_set():
            raise _Closed


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (for connection-refused tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def llm_stub() -> Iterator[StubLLMServer]:
    server = StubLLMServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def strict_llm_stub() -> Iterator[StubLLMServer]:
    """The stub as a strict local server (`Strict()`: llama-cpp-python-like defaults)."""
    server = StubLLMServer(strict=Strict())
    try:
        yield server
    finally:
        server.close()


__all__ = [
    "AUTO",
    "CapturedRequest",
    "Reply",
    "Strict",
    "StubLLMServer",
    "free_port",
    "llm_stub",
    "strict_llm_stub",
    "strict_refusal",
]
