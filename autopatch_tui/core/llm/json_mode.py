"""One non-streaming Memory call, in JSON mode when the endpoint allows it.

`AUTOPATCH_LLM_JSON_MODE`:
- `auto` (default): ask for `response_format: {"type": "json_object"}` (servers such as llama.cpp
  then enforce a JSON grammar, so a small model cannot ramble); a server that refuses the
  parameter is remembered for its base URL and model (`core.llm.endpoint`) and the call is
  repeated once without it;
- `on`: always ask; a refusal is the call's failure;
- `off`: never ask.

Memory calls never use SDK retries: a request that timed out may still be running on a local
server, and repeating it would queue behind itself. The durable job retry covers the failure.

Every HTTP request sent is counted in the caller's `count_requests()` block (the refused JSON-mode
request and its repetition are two), so a job's `provider_calls` is the number of requests made.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from autopatch_tui.core.llm.client import Completion, LLMClient
from autopatch_tui.core.llm.endpoint import ENDPOINTS
from autopatch_tui.core.llm.errors import ProviderError

JSON_OBJECT = {"type": "json_object"}


class RequestCount:
    def __init__(self) -> None:
        self.sent = 0


_COUNT: ContextVar[RequestCount | None] = ContextVar("memory_request_count", default=None)


@contextmanager
def count_requests() -> Iterator[RequestCount]:
    """`.sent`: the Memory requests sent (by `complete_memory`) in this thread while the block ran."""
    count = RequestCount()
    token = _COUNT.set(count)
    try:
        yield count
    finally:
        _COUNT.reset(token)


def _sending() -> None:
    count = _COUNT.get()
    if count is not None:
        count.sent += 1


def wants_json_mode(client: LLMClient, model: str) -> bool:
    if client.json_mode == "off":
        return False
    if client.json_mode == "on":
        return True
    return not ENDPOINTS.json_mode_rejected(client.base_url, model)


def complete_memory(client: LLMClient, *, task: str, model: str, messages: list[dict],
                    max_tokens: int) -> Completion:
    """Temperature 0, `max_tokens`, no SDK retries, JSON mode per the setting. Raises ProviderError."""
    json_mode = wants_json_mode(client, model)
    try:
        _sending()
        return client.complete(task=task, model=model, messages=messages, temperature=0, max_tokens=max_tokens,
                               response_format=JSON_OBJECT if json_mode else None, sdk_retries=False)
    except ProviderError as exc:
        if not (json_mode and client.json_mode == "auto" and exc.names_any("response_format", "json_object")):
            raise
    ENDPOINTS.reject_json_mode(client.base_url, model)
    _sending()  # a second HTTP request inside the same Memory call
    return client.complete(task=task, model=model, messages=messages, temperature=0, max_tokens=max_tokens,
                           sdk_retries=False)
