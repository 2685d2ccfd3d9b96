"""Strict JSON-object replies for Memory calls.

A Memory model reply must be exactly one JSON object. One surrounding Markdown code fence
(```` ``` ```` or ```` ```json ````) is tolerated; anything else — prose around the object, an
array, two objects, duplicate keys, NaN, an empty reply — is a contract violation. Error details
never quote the reply.
"""

from __future__ import annotations

import json
import re
from typing import Any

from autopatch_tui.core.errors import MemoryContractError

RULE = "json_object"

_FENCE_RE = re.compile(r"\A```[ \t]*(?:json)?[ \t]*\r?\n?(?P<body>.*?)\s*```\Z", re.DOTALL | re.IGNORECASE)


class _DuplicateKey(Exception):
    """Raised inside the decoder; never leaves this module."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey
        result[key] = value
    return result


def _reject_constant(_name: str) -> Any:
    raise ValueError("non-finite number")


def _violation(detail: str) -> MemoryContractError:
    return MemoryContractError(rule=RULE, detail=detail)


def parse_json_object_reply(content: str | None) -> dict:
    """The single JSON object in `content`; MemoryContractError(rule="json_object") otherwise."""
    if content is None:
        raise _violation("reply has no content")
    if not isinstance(content, str):
        raise _violation("reply content is not text")
    text = content.strip().lstrip("\ufeff").strip()
    if not text:
        raise _violation("reply is empty")
    if text.startswith("```"):
        match = _FENCE_RE.match(text)
        if match is None:
            raise _violation("malformed code fence")
        text = match.group("body").strip()
        if not text:
            raise _violation("code fence is empty")
    if not text.startswith("{"):
        raise _violation("reply is not a JSON object")
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except _DuplicateKey:
        raise _violation("duplicate key in JSON object") from None
    except RecursionError:  # nested deeper than the parser's recursion allows
        raise _violation("JSON nested too deeply") from None
    except json.JSONDecodeError as exc:
        # `exc.doc` holds the whole reply: never chain it.
        reason = "more than one JSON value" if exc.msg == "Extra data" else "invalid JSON"
        raise _violation(reason) from None
    except (ValueError, RecursionError):
        raise _violation("invalid JSON") from None
    if not isinstance(value, dict):  # pragma: no cover - guarded by the "{" check
        raise _violation("reply is not a JSON object")
    return value


def dump_json_payload(obj: object) -> str:
    """Compact JSON (no spaces), non-ASCII kept as is, keys in the order given; no NaN."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
