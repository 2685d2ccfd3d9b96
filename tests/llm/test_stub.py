"""The stub server itself: scripting rules, SSE framing, capture, release on close."""

from __future__ import annotations

import http.client
import json
import threading

import pytest

from autopatch_tui.core.llm.client import LLMClient
from autopatch_tui.core.llm.errors import ProviderError
from tests.support.llm_stub import CapturedRequest, Reply, StubLLMServer


def _post(stub: StubLLMServer, body: dict, *, task: str | None, path: str = "/v1/chat/completions"):
    conn = http.client.HTTPConnection("127.0.0.1", stub.port, timeout=5)
    headers = {"content-type": "application/json"}
    if task is not None:
        headers["X-AutoPatch-Task"] = task
    conn.request("POST", path, body=json.dumps(body), headers=headers)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, response.getheader("content-type"), data


def _sse_events(data: bytes) -> list[object]:
    events = []
    for block in data.decode("utf-8").split("\n\n"):
        if block.startswith("data: "):
            payload = block[len("data: ") :]
            events.append(payload if payload == "[DONE]" else json.loads(payload))
    return events


BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def test_base_url_is_loopback_v1(llm_stub):
    assert llm_stub.base_url == f"http://127.0.0.1:{llm_stub.port}/v1"


def test_unscripted_task_answers_500(llm_stub):
    status, ctype, data = _post(llm_stub, BODY, task="organize")
    assert status == 500
    assert ctype == "application/json"
    assert json.loads(data) == {"error": {"message": "unscripted task organize"}}
    assert llm_stub.requests[0].task == "organize"


def test_queue_is_fifo_then_default_per_task(llm_stub):
    llm_stub.script("chat", "one", "two")
    llm_stub.default("chat", "fallback")
    llm_stub.script("classify", "other-task")
    contents = []
    for _ in range(4):
        status, _, data = _post(llm_stub, BODY, task="chat")
        assert status == 200
        contents.append(json.loads(data)["choices"][0]["message"]["content"])
    assert contents == ["one", "two", "fallback", "fallback"]
    assert llm_stub.pending("classify") == 1
    assert llm_stub.pending() == 1


def test_captures_headers_body_and_path(llm_stub):
    llm_stub.default("chat", "ok")
    _post(llm_stub, BODY, task="chat", path="/chat/completions")
    (captured,) = llm_stub.requests_for("chat")
    assert captured == CapturedRequest(task="chat", headers=captured.headers, body=BODY, path="/chat/completions")
    assert captured.headers["x-autopatch-task"] == "chat"
    assert all(name == name.lower() for name in captured.headers)
    status, _, _ = _post(llm_stub, BODY, task="chat", path="/v1/embeddings")
    assert status == 404
    assert llm_stub.requests[-1].path == "/v1/embeddings"


def test_client_works_without_v1_prefix(llm_stub):
    llm_stub.default("chat", "no prefix")
    base = llm_stub.base_url.removesuffix("/v1")
    with LLMClient(base_url=base, api_key="k", max_retries=0) as client:
        assert client.complete(task="chat", model="m", messages=[]).content == "no prefix"
    assert llm_stub.requests[0].path == "/chat/completions"


def test_callable_reply_sees_the_request(llm_stub):
    llm_stub.script("merge_judge", lambda req: {"echo": req.messages[-1]["content"], "model": req.body["model"]})
    _, _, data = _post(llm_stub, BODY, task="merge_judge")
    content = json.loads(json.loads(data)["choices"][0]["message"]["content"])
    assert content == {"echo": "hi", "model": "m"}


def test_failing_reply_function_is_reported(llm_stub):
    def broken(_req):
        raise LookupError("nope")

    llm_stub.script("chat", broken)
    status, _, data = _post(llm_stub, BODY, task="chat")
    assert status == 500
    assert "LookupError" in json.loads(data)["error"]["message"]
    assert any("LookupError" in e for e in llm_stub.errors)


def test_error_reply_bodies(llm_stub):
    llm_stub.script(
        "chat",
        Reply(status=429, error_body={"error": {"message": "slow", "code": "rate_limit_exceeded"}}),
        Reply(status=400, error_body="just text"),
        Reply(status=503),
    )
    s1, _, d1 = _post(llm_stub, BODY, task="chat")
    s2, _, d2 = _post(llm_stub, BODY, task="chat")
    s3, _, d3 = _post(llm_stub, BODY, task="chat")
    assert (s1, json.loads(d1)) == (429, {"error": {"message": "slow", "code": "rate_limit_exceeded"}})
    assert (s2, json.loads(d2)) == (400, {"error": {"message": "just text"}})
    assert s3 == 503 and "error" in json.loads(d3)


def test_stream_is_sse_with_split_content_and_tool_call_deltas(llm_stub):
    llm_stub.script("chat", Reply(content="abcdefghijklmnop", tool_calls=[("grep", '{"pattern": "abc"}')], usage=(3, 4)))
    status, ctype, data = _post(llm_stub, {**BODY, "stream": True}, task="chat")
    assert status == 200
    assert ctype == "text/event-stream"
    events = _sse_events(data)
    assert events[-1] == "[DONE]"
    chunks = [e for e in events if isinstance(e, dict)]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    content_pieces = [d["content"] for d in deltas if d.get("content")]
    assert len(content_pieces) >= 2 and "".join(content_pieces) == "abcdefghijklmnop"
    tool_deltas = [tc for d in deltas for tc in d.get("tool_calls", [])]
    assert tool_deltas[0]["id"] == "call_stub_0" and tool_deltas[0]["function"]["name"] == "grep"
    arg_pieces = [tc["function"]["arguments"] for tc in tool_deltas[1:]]
    assert len(arg_pieces) >= 2 and "".join(arg_pieces) == '{"pattern": "abc"}'
    assert all("id" not in tc for tc in tool_deltas[1:])
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finishes[-1] == "tool_calls" and set(finishes[:-1]) == {None}
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 7


def test_explicit_finish_reason_is_kept(llm_stub):
    llm_stub.script("chat", Reply(content="cut", finish_reason="length"))
    with LLMClient(base_url=llm_stub.base_url, api_key="k", max_retries=0) as client:
        assert client.complete(task="chat", model="m", messages=[]).finish_reason == "length"


def test_wait_event_blocks_until_set(llm_stub):
    gate = threading.Event()
    llm_stub.script("extraction", Reply(content="released", wait_event=gate))
    result: dict[str, object] = {}

    def call() -> None:
        with LLMClient(base_url=llm_stub.base_url, api_key="k", max_retries=0, timeout=10) as client:
            result["content"] = client.complete(task="extraction", model="m", messages=[]).content

    worker = threading.Thread(target=call)
    worker.start()
    assert llm_stub.wait_for_requests(1, task="extraction", timeout=5)
    worker.join(timeout=0.2)
    assert worker.is_alive() and "content" not in result
    gate.set()
    worker.join(timeout=5)
    assert not worker.is_alive()
    assert result == {"content": "released"}


@pytest.mark.parametrize("blocker", ["event", "delay"])
def test_close_releases_blocked_replies(blocker):
    stub = StubLLMServer()
    never = threading.Event()
    reply = Reply(content="never", wait_event=never) if blocker == "event" else Reply(content="never", delay=60)
    stub.script("consolidation", reply)
    outcome: list[BaseException | str] = []

    def call() -> None:
        with LLMClient(base_url=stub.base_url, api_key="k", max_retries=0, timeout=30) as client:
            try:
                outcome.append(client.complete(task="consolidation", model="m", messages=[]).content or "")
            except ProviderError as exc:
                outcome.append(exc)

    worker = threading.Thread(target=call)
    worker.start()
    try:
        assert stub.wait_for_requests(1, timeout=5)
    finally:
        stub.close()
    worker.join(timeout=5)
    assert not worker.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], ProviderError)
    assert outcome[0].category == "transient_provider"
    stub.close()  # idempotent


def test_wait_for_requests_times_out(llm_stub):
    assert llm_stub.wait_for_requests(1, timeout=0.05) is False
