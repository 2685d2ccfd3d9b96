"""A model request is abandoned at once from another thread (Escape), also while it waits for the
model's first token: its connection is shut down, it is not sent again by the SDK's retries, and it
ends in the typed `RequestCancelled` (core/llm/abort.py)."""

from __future__ import annotations

import threading
import time

import pytest

from autopatch_tui.core.llm.abort import AbortScope, RequestCancelled
from autopatch_tui.core.llm.client import LLMClient
from tests.support.llm_stub import Reply


def run_aborted(call, scope: AbortScope, sent) -> tuple[BaseException | None, float]:  # type: ignore[no-untyped-def]
    """Run `call` in the scope on a thread; abort the scope once the server holds the request
    (`sent()`) and a moment more; (its error, seconds after the abort)."""
    out: list[BaseException | None] = []

    def work() -> None:
        with scope.active():
            try:
                call()
                out.append(None)
            except BaseException as exc:  # noqa: BLE001 - the test looks at what came out
                out.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    deadline = time.monotonic() + 30
    while not sent() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sent(), "the request never reached the server"
    time.sleep(0.3)  # the client now waits for the first token
    t0 = time.monotonic()
    scope.abort()
    thread.join(20)
    assert not thread.is_alive(), "the request was not abandoned"
    return out[0], time.monotonic() - t0


@pytest.mark.parametrize("streamed", [True, False])
def test_a_request_waiting_for_its_first_token_is_abandoned_at_once_and_not_retried(llm_stub, streamed):
    release = threading.Event()
    llm_stub.default("chat", Reply(content="too late", wait_event=release))
    client = LLMClient(base_url=llm_stub.base_url, api_key="k", timeout=60, max_retries=2)
    messages = [{"role": "user", "content": "hello"}]
    try:
        if streamed:
            call = lambda: client.stream(task="chat", model="m", messages=messages, on_delta=lambda d: None)  # noqa: E731
        else:
            call = lambda: client.complete(task="chat", model="m", messages=messages)  # noqa: E731
        error, after = run_aborted(call, AbortScope(), lambda: llm_stub.requests_for("chat"))
        assert isinstance(error, RequestCancelled)
        assert after < 2.0  # not at the first token (never, here) nor at the 60 s timeout
        time.sleep(1.5)  # the SDK would have retried by now (its backoff is 0.5-1 s)
        assert len(llm_stub.requests_for("chat")) == 1
    finally:
        release.set()
        client.close()


def test_requests_outside_the_scope_and_after_it_are_untouched(llm_stub):
    llm_stub.default("chat", "fine")
    client = LLMClient(base_url=llm_stub.base_url, api_key="k", max_retries=0)
    messages = [{"role": "user", "content": "hello"}]
    try:
        scope = AbortScope()
        scope.abort()
        with scope.active(), pytest.raises(RequestCancelled):  # an aborted scope sends nothing new
            client.complete(task="chat", model="m", messages=messages)
        assert client.complete(task="chat", model="m", messages=messages).content == "fine"  # the pool works on
    finally:
        client.close()
