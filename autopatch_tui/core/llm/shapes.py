"""Request messages in the shape strict OpenAI-compatible servers accept.

llama-cpp-python (pydantic-validated) refuses `"content": null` — also on the assistant message
that carries `tool_calls` — with an HTTP 500; other servers refuse non-string tool results or
tool-call arguments. Every request passes through `strict_messages`, which returns new dicts
(the caller's list is not changed):

- `content` is always a string (`None` -> `""`); a list of content parts is kept as is;
- a `tool` message's content is a string (anything else is serialised as JSON);
- a tool call's `function.arguments` is a string and it carries `type: "function"`;
- keys whose value is `None` (e.g. `name`) are left out.
"""

from __future__ import annotations

import json
from typing import Any


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _tool_call(call: object) -> object:
    if not isinstance(call, dict):
        return call
    out = {k: v for k, v in call.items() if v is not None}
    out.setdefault("type", "function")
    function = out.get("function")
    if isinstance(function, dict):
        function = {k: v for k, v in function.items() if v is not None}
        function["arguments"] = _text(function.get("arguments")) or "{}"
        function.setdefault("name", "")
        out["function"] = function
    return out


def strict_message(message: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in message.items() if v is not None or k == "content"}
    content = out.get("content")
    if message.get("role") == "tool" or not isinstance(content, list):
        out["content"] = _text(content)
    calls = out.get("tool_calls")
    if calls is not None:
        if calls:
            out["tool_calls"] = [_tool_call(c) for c in calls]
        else:
            del out["tool_calls"]  # an empty list is refused by some servers
    return out


def strict_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [strict_message(m) if isinstance(m, dict) else m for m in messages]
