"""LLMClient through the real openai SDK, over HTTP, against the stub server."""

from __future__ import annotations

import json
import threading
import traceback
from pathlib import Path

import pytest

from autopatch_tui.core.llm.client import TASKS, Completion, LLMClient, ToolCall, Usage
from autopatch_tui.core.llm.errors import ProviderError
from autopatch_tui.core.settings import Settings
from tests.support.llm_stub import CapturedRequest, Reply, StubLLMServer, free_port

SECRET_KEY = "sk-PRIVATE-KEY-MARKER-7f3a91"
BODY_MARKER = "PROVIDER-BODY-MARKER-c0ffee"
PROMPT_MARKER = "PROMPT-MARKER-5eb1"


def _messages() -> list[dict]:
    return [{"role": "user", "content": f"please help {PROMPT_MARKER}"}]


@pytest.fixture
def client(llm_stub: StubLLMServer):
    c = LLMClient(base_url=llm_stub.base_url, api_key=SECRET_KEY, timeout=10.0, max_retries=0)
    yield c
    c.close()


# --- the task header ---------------------------------------------------------------------------
def test_task_header_sent_for_every_task_complete_and_stream(llm_stub, client):
    for task in TASKS:
        llm_stub.default(task, f"reply for {task}")
    for task in TASKS:
        assert client.complete(task=task, model="m", messages=_messages()).content == f"reply for {task}"
        deltas: list[str] = []
        result = client.stream(task=task, model="m", messages=_messages(), on_delta=deltas.append)
        assert result.content == f"reply for {task}"
    for task in TASKS:
        seen = llm_stub.requests_for(task)
        assert len(seen) == 2
        assert all(r.headers["x-autopatch-task"] == task for r in seen)
        assert [r.stream for r in seen] == [False, True]
    assert len(llm_stub.requests) == 2 * len(TASKS)


def test_unknown_task_is_rejected_before_any_request(llm_stub, client):
    with pytest.raises(ValueError, match="unknown model task"):
        client.complete(task="gossip", model="m", messages=_messages())
    with pytest.raises(ValueError, match="unknown model task"):
        client.stream(task="gossip", model="m", messages=_messages(), on_delta=lambda _t: None)
    assert llm_stub.requests == []


def test_request_body_carries_options_only_when_given(llm_stub, client):
    llm_stub.script("classify", "a", "b")
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    client.complete(task="classify", model="model-x", messages=_messages())
    client.complete(
        task="classify", model="model-y", messages=_messages(), temperature=0.2, tools=tools, max_tokens=77
    )
    bare, full = (r.body for r in llm_stub.requests_for("classify"))
    assert bare["model"] == "model-x"
    assert bare["messages"] == _messages()
    assert not {"temperature", "tools", "max_tokens", "stream"} & set(bare)
    assert full["model"] == "model-y"
    assert full["temperature"] == 0.2
    assert full["tools"] == tools
    assert full["max_tokens"] == 77
    auth = llm_stub.requests_for("classify")[0].headers["authorization"]
    assert auth == f"Bearer {SECRET_KEY}"


# --- replies -----------------------------------------------------------------------------------
def test_complete_returns_content_finish_reason_and_usage(llm_stub, client):
    llm_stub.script("chat", Reply(content="héllo 世界", usage=(12, 3)), "plain")
    first = client.complete(task="chat", model="m", messages=_messages())
    assert first == Completion(content="héllo 世界", tool_calls=(), finish_reason="stop", usage=Usage(12, 3))
    second = client.complete(task="chat", model="m", messages=_messages())
    assert second.content == "plain"
    assert second.usage is None


def test_complete_dict_reply_is_json_content(llm_stub, client):
    llm_stub.script("extraction", {"candidates": [{"kind": "user_preference"}]})
    result = client.complete(task="extraction", model="m", messages=_messages())
    assert json.loads(result.content) == {"candidates": [{"kind": "user_preference"}]}


def test_complete_returns_tool_calls(llm_stub, client):
    llm_stub.script(
        "chat",
        Reply(tool_calls=[("read_file", '{"path": "a.py"}'), {"id": "call_x", "name": "grep", "arguments": {"q": "x"}}]),
    )
    result = client.complete(task="chat", model="m", messages=_messages())
    assert result.content is None
    assert result.finish_reason == "tool_calls"
    assert result.tool_calls == (
        ToolCall(id="call_stub_0", name="read_file", arguments='{"path": "a.py"}'),
        ToolCall(id="call_x", name="grep", arguments='{"q": "x"}'),
    )


def test_stream_delivers_several_deltas_and_full_content(llm_stub, client):
    text = "The quick brown fox jumps over the lazy dog — 世界 ünïcode."
    llm_stub.script("chat", Reply(content=text, usage=(40, 12)))
    deltas: list[str] = []
    result = client.stream(task="chat", model="m", messages=_messages(), on_delta=deltas.append)
    assert len(deltas) > 1
    assert "".join(deltas) == text
    assert result.content == text
    assert result.finish_reason == "stop"
    assert result.tool_calls == ()
    assert result.usage == Usage(40, 12)
    assert llm_stub.requests_for("chat")[0].body["stream"] is True


def test_stream_assembles_tool_call_fragments(llm_stub, client):
    args_a = json.dumps({"path": "src/main.py", "start": 10, "end": 200})
    args_b = json.dumps({"pattern": "def \\w+", "glob": "**/*.py"})
    llm_stub.script("chat", Reply(content="Looking.", tool_calls=[("read_file", args_a), ("grep", args_b)]))
    deltas: list[str] = []
    result = client.stream(task="chat", model="m", messages=_messages(), on_delta=deltas.append)
    assert result.tool_calls == (
        ToolCall(id="call_stub_0", name="read_file", arguments=args_a),
        ToolCall(id="call_stub_1", name="grep", arguments=args_b),
    )
    assert json.loads(result.tool_calls[0].arguments)["end"] == 200
    assert result.content == "Looking."
    assert "".join(deltas) == "Looking."
    assert result.finish_reason == "tool_calls"


def test_stream_tool_calls_only_has_no_content(llm_stub, client):
    llm_stub.script("chat", Reply(tool_calls=[("ls", "{}")]))
    deltas: list[str] = []
    result = client.stream(task="chat", model="m", messages=_messages(), on_delta=deltas.append)
    assert result.content is None
    assert deltas == []
    assert [c.name for c in result.tool_calls] == ["ls"]


def test_exception_in_on_delta_aborts_stream_and_propagates(llm_stub, client):
    llm_stub.script("chat", Reply(content="x" * 400))
    calls: list[str] = []

    def boom(text: str) -> None:
        calls.append(text)
        raise RuntimeError("stop now")

    with pytest.raises(RuntimeError, match="stop now"):
        client.stream(task="chat", model="m", messages=_messages(), on_delta=boom)
    assert len(calls) == 1


def test_reply_without_choices_is_bad_request(llm_stub, client):
    llm_stub.script("chat", Reply(raw_body='{"id": "x", "object": "chat.completion", "choices": []}'))
    with pytest.raises(ProviderError) as info:
        client.complete(task="chat", model="m", messages=_messages())
    assert info.value.category == "bad_request"
    assert str(info.value) == "model reply had no choices"


def test_stream_without_choices_is_bad_request(llm_stub, client):
    llm_stub.script("chat", Reply(raw_body="data: [DONE]\n\n"))
    with pytest.raises(ProviderError) as info:
        client.stream(task="chat", model="m", messages=_messages(), on_delta=lambda _t: None)
    assert info.value.category == "bad_request"
    assert str(info.value) == "model reply had no choices"


@pytest.mark.parametrize(
    "reply",
    [
        Reply(raw_body=f"<html>{BODY_MARKER}</html>"),  # claims JSON, is not
        Reply(raw_body=f"oops {BODY_MARKER}", headers={"content-type": "text/plain"}),
    ],
    ids=["invalid-json", "text-plain"],
)
def test_non_json_reply_is_bad_request_without_body(llm_stub, client, reply):
    llm_stub.script("chat", reply)
    with pytest.raises(ProviderError) as info:
        client.complete(task="chat", model="m", messages=_messages())
    assert info.value.category == "bad_request"
    assert BODY_MARKER not in _rendered(info.value)


def test_malformed_stream_event_is_bad_request_without_body(llm_stub, client):
    llm_stub.script("chat", Reply(raw_body=f"data: {{{BODY_MARKER}\n\n"))
    with pytest.raises(ProviderError) as info:
        client.stream(task="chat", model="m", messages=_messages(), on_delta=lambda _t: None)
    assert info.value.category == "bad_request"
    assert BODY_MARKER not in _rendered(info.value)


# --- errors --------------------------------------------------------------------------------------
def _error_body(message: str, code: str | None = None) -> dict:
    return {"error": {"message": f"{message} {BODY_MARKER}", "type": "invalid_request_error", "code": code}}


@pytest.mark.parametrize(
    ("reply", "category", "status", "retryable"),
    [
        (
            Reply(status=400, error_body=_error_body("This model's maximum context length is 8192 tokens.", "context_length_exceeded")),
            "context_overflow",
            400,
            False,
        ),
        (
            Reply(status=400, error_body=_error_body("the request exceeds the available context size")),
            "context_overflow",
            400,
            False,
        ),
        (Reply(status=400, error_body=_error_body("temperature must be <= 2", "invalid_value")), "bad_request", 400, False),
        (Reply(status=404, error_body=_error_body("model not found")), "bad_request", 404, False),
        (Reply(status=401, error_body=_error_body("Incorrect API key provided")), "auth", 401, False),
        (Reply(status=403, error_body=_error_body("forbidden")), "auth", 403, False),
        (Reply(status=429, error_body=_error_body("slow down")), "rate_limit", 429, True),
        (Reply(status=500, error_body=_error_body("internal")), "transient_provider", 500, True),
        (Reply(status=503, error_body=_error_body("overloaded")), "transient_provider", 503, True),
    ],
    ids=["ctx-code", "ctx-llamacpp", "400", "404", "401", "403", "429", "500", "503"],
)
@pytest.mark.parametrize("mode", ["complete", "stream"])
def test_http_errors_map_to_categories(llm_stub, client, reply, category, status, retryable, mode):
    llm_stub.script("chat", reply)
    with pytest.raises(ProviderError) as info:
        if mode == "complete":
            client.complete(task="chat", model="m", messages=_messages())
        else:
            client.stream(task="chat", model="m", messages=_messages(), on_delta=lambda _t: None)
    err = info.value
    assert err.category == category
    assert err.status_code == status
    assert err.retryable is retryable
    assert str(err) == f"model provider error: {category} (HTTP {status})"
    assert len(llm_stub.requests_for("chat")) == 1  # max_retries=0: no SDK retry


def test_timeout_maps_to_timeout(llm_stub):
    llm_stub.script("chat", Reply(content="late", delay=5.0))
    with LLMClient(base_url=llm_stub.base_url, api_key=None, timeout=0.3, max_retries=0) as c:
        with pytest.raises(ProviderError) as info:
            c.complete(task="chat", model="m", messages=_messages())
    assert info.value.category == "timeout"
    assert info.value.status_code is None
    assert info.value.retryable is True
    assert "APITimeoutError" in str(info.value)


def test_connection_refused_maps_to_transient_provider():
    with LLMClient(base_url=f"http://127.0.0.1:{free_port()}/v1", api_key=SECRET_KEY, max_retries=0) as c:
        with pytest.raises(ProviderError) as info:
            c.complete(task="chat", model="m", messages=_messages())
        with pytest.raises(ProviderError) as info_stream:
            c.stream(task="chat", model="m", messages=_messages(), on_delta=lambda _t: None)
    assert info.value.category == "transient_provider"
    assert info.value.status_code is None
    assert info_stream.value.category == "transient_provider"


def test_mid_stream_error_event_is_provider_error(llm_stub, client):
    chunk = {"choices": [{"index": 0, "delta": {"content": "par"}, "finish_reason": None}]}
    raw = f"data: {json.dumps(chunk)}\n\ndata: {json.dumps(_error_body('server exploded'))}\n\n"
    llm_stub.script("chat", Reply(raw_body=raw))
    deltas: list[str] = []
    with pytest.raises(ProviderError) as info:
        client.stream(task="chat", model="m", messages=_messages(), on_delta=deltas.append)
    assert deltas == ["par"]
    assert info.value.category == "transient_provider"
    assert BODY_MARKER not in _rendered(info.value)


def test_sdk_retries_when_max_retries_is_one(llm_stub):
    fast = {"retry-after-ms": "10"}
    llm_stub.script("chat", Reply(status=503, headers=fast), "recovered")
    llm_stub.script("classify", Reply(status=503, headers=fast), "unused")
    with LLMClient(base_url=llm_stub.base_url, api_key="k", max_retries=1) as retrying:
        assert retrying.complete(task="chat", model="m", messages=_messages()).content == "recovered"
    seen = llm_stub.requests_for("chat")
    assert len(seen) == 2
    assert all(r.headers["x-autopatch-task"] == "chat" for r in seen)
    with LLMClient(base_url=llm_stub.base_url, api_key="k", max_retries=0) as single:
        with pytest.raises(ProviderError):
            single.complete(task="classify", model="m", messages=_messages())
    assert len(llm_stub.requests_for("classify")) == 1
    assert llm_stub.pending("classify") == 1


# --- privacy -------------------------------------------------------------------------------------
def _rendered(err: BaseException) -> str:
    """Everything a user could see: message, repr, and the formatted traceback with its chain."""
    return "\n".join([str(err), repr(err), "".join(traceback.format_exception(err)), repr(err.args)])


@pytest.mark.parametrize(
    "reply",
    [
        Reply(status=400, error_body=_error_body("bad thing")),
        Reply(status=400, error_body=_error_body("maximum context length exceeded", "context_length_exceeded")),
        Reply(status=401, error_body=_error_body(f"Incorrect API key provided: {SECRET_KEY}")),
        Reply(status=429, error_body=_error_body("rate limited")),
        Reply(status=500, error_body=f"plain text failure {BODY_MARKER}"),
        Reply(status=503, raw_body=f"<html>{BODY_MARKER}</html>", headers={"content-type": "text/html"}),
    ],
    ids=["400", "ctx", "401-echoes-key", "429", "500-text", "503-html"],
)
@pytest.mark.parametrize("mode", ["complete", "stream"])
def test_error_messages_leak_no_key_url_prompt_or_body(llm_stub, client, reply, mode):
    llm_stub.script("chat", reply)
    with pytest.raises(ProviderError) as info:
        if mode == "complete":
            client.complete(task="chat", model="m", messages=_messages())
        else:
            client.stream(task="chat", model="m", messages=_messages(), on_delta=lambda _t: None)
    err = info.value
    shown = _rendered(err)
    for secret in (SECRET_KEY, BODY_MARKER, PROMPT_MARKER, llm_stub.base_url, "127.0.0.1", str(llm_stub.port)):
        assert secret not in shown
    assert err.__cause__ is None
    assert err.__suppress_context__ is True
    assert str(err).startswith("model provider error: ")


def test_timeout_and_connection_errors_leak_no_url():
    port = free_port()
    with LLMClient(base_url=f"http://127.0.0.1:{port}/v1", api_key=SECRET_KEY, max_retries=0) as c:
        with pytest.raises(ProviderError) as info:
            c.complete(task="chat", model="m", messages=_messages())
    shown = _rendered(info.value)
    for secret in (SECRET_KEY, PROMPT_MARKER, "127.0.0.1", str(port)):
        assert secret not in shown


# --- settings, threads -----------------------------------------------------------------------------
def test_from_settings_none_without_model(tmp_path: Path):
    assert LLMClient.from_settings(Settings(home=tmp_path)) is None
    assert LLMClient.from_settings(Settings(home=tmp_path, llm_model="gpt-4o")) is None


def test_from_settings_uses_url_key_timeout_and_retries(llm_stub, tmp_path: Path):
    settings = Settings(
        home=tmp_path,
        llm_base_url=llm_stub.base_url,
        llm_api_key="sk-from-settings",
        llm_model="m",
        llm_timeout_seconds=7.5,
        llm_max_retries=0,
    )
    client = LLMClient.from_settings(settings)
    assert client is not None
    assert client.timeout == 7.5
    assert client.max_retries == 0
    llm_stub.script("chat", "ok", Reply(status=503))
    with client:
        assert client.complete(task="chat", model="m", messages=_messages()).content == "ok"
        with pytest.raises(ProviderError):
            client.complete(task="chat", model="m", messages=_messages())
    assert [r.headers["authorization"] for r in llm_stub.requests] == ["Bearer sk-from-settings"] * 2


def test_from_settings_without_key_sends_placeholder(llm_stub, tmp_path: Path):
    client = LLMClient.from_settings(Settings(home=tmp_path, llm_base_url=llm_stub.base_url))
    assert client is not None
    llm_stub.script("chat", "ok")
    with client:
        client.complete(task="chat", model="m", messages=_messages())
    assert llm_stub.requests[0].headers["authorization"] == "Bearer not-needed"


def test_client_is_usable_from_several_threads(llm_stub, client):
    def echo(request: CapturedRequest) -> str:
        return "echo:" + request.messages[-1]["content"]

    llm_stub.default("chat", echo)
    results: dict[int, str | None] = {}
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            if i % 2:
                results[i] = client.complete(task="chat", model="m", messages=[{"role": "user", "content": f"n{i}"}]).content
            else:
                results[i] = client.stream(
                    task="chat", model="m", messages=[{"role": "user", "content": f"n{i}"}], on_delta=lambda _t: None
                ).content
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert errors == []
    assert results == {i: f"echo:n{i}" for i in range(8)}
