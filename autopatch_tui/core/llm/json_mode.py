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
"""

from __future__ import annotations

from autopatch_tui.core.llm.client import Completion, LLMClient
from autopatch_tui.core.llm.endpoint import ENDPOINTS
from autopatch_tui.core.llm.errors import ProviderError

JSON_OBJECT = {"type": "json_object"}


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
        return client.complete(task=task, model=model, messages=messages, temperature=0, max_tokens=max_tokens,
                               response_format=JSON_OBJECT if json_mode else None, sdk_retries=False)
    except ProviderError as exc:
        if not (json_mode and client.json_mode == "auto" and exc.names_any("response_format", "json_object")):
            raise
    ENDPOINTS.reject_json_mode(client.base_url, model)
    return client.complete(task=task, model=model, messages=messages, temperature=0, max_tokens=max_tokens,
                           sdk_retries=False)
