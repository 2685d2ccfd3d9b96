"""Token estimates without a tokenizer (no download, no network).

A deterministic heuristic good enough for budgeting context: about 4 ASCII characters per token,
one token per CJK character (Han, kana, Hangul, full-width forms), two other non-ASCII
characters per token. Rounded up; non-empty text is never 0 tokens. O(n) and done in C-level
string operations, so it is cheap on hot paths.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

_CJK_RE = re.compile(
    "["
    "\u1100-\u11ff"  # Hangul Jamo
    "\u2e80-\u2fdf"  # CJK radicals, Kangxi radicals
    "\u3000-\u303f"  # CJK symbols and punctuation
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3100-\u31ff"  # Bopomofo, Hangul compatibility Jamo, Katakana ext.
    "\u3200-\u4dbf"  # enclosed CJK, compatibility, CJK ext. A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\ua960-\ua97f"  # Hangul Jamo ext. A
    "\uac00-\ud7ff"  # Hangul syllables, Jamo ext. B
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\ufe30-\ufe4f"  # CJK compatibility forms
    "\uff00-\uffef"  # half-width and full-width forms
    "\U00020000-\U0003ffff"  # CJK ext. B–H
    "]"
)

# per-message framing (role, separators) and reply priming, as in OpenAI's chat format
MESSAGE_OVERHEAD_TOKENS = 4
TOOL_CALL_OVERHEAD_TOKENS = 3
REPLY_PRIMING_TOKENS = 3


def estimate_tokens(text: str) -> int:
    """Estimated token count of `text`: ceil(ascii/4 + cjk + other_non_ascii/2)."""
    if not text:
        return 0
    n = len(text)
    if text.isascii():
        return (n + 3) // 4
    ascii_count = len(text.encode("ascii", "ignore"))
    cjk_count = _CJK_RE.subn("", text)[1]
    other = n - ascii_count - cjk_count
    # in quarter-tokens: ascii 1, cjk 4, other 2
    return (ascii_count + 4 * cjk_count + 2 * other + 3) // 4


def _content_tokens(content: object) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return estimate_tokens(content)
    if isinstance(content, Iterable) and not isinstance(content, (bytes, Mapping)):
        total = 0
        for part in content:  # OpenAI content parts: {"type": "text", "text": ...}
            if isinstance(part, Mapping):
                text = part.get("text")
                if isinstance(text, str):
                    total += estimate_tokens(text)
                else:
                    total += MESSAGE_OVERHEAD_TOKENS
            elif isinstance(part, str):
                total += estimate_tokens(part)
        return total
    return estimate_tokens(str(content))


def _tool_call_tokens(call: object) -> int:
    if isinstance(call, Mapping):
        function = call.get("function")
        if isinstance(function, Mapping):
            name, arguments = function.get("name"), function.get("arguments")
        else:
            name, arguments = call.get("name"), call.get("arguments")
    else:  # e.g. client.ToolCall
        name, arguments = getattr(call, "name", None), getattr(call, "arguments", None)
    total = TOOL_CALL_OVERHEAD_TOKENS
    if isinstance(name, str):
        total += estimate_tokens(name)
    if isinstance(arguments, str):
        total += estimate_tokens(arguments)
    return total


def estimate_messages_tokens(messages: list[dict]) -> int:
    """Estimated prompt tokens of a chat message list: content, names, tool-call arguments and a
    small per-message overhead, plus the reply priming. 0 for an empty list."""
    if not messages:
        return 0
    total = REPLY_PRIMING_TOKENS
    for message in messages:
        total += MESSAGE_OVERHEAD_TOKENS
        total += _content_tokens(message.get("content"))
        name = message.get("name")
        if isinstance(name, str):
            total += estimate_tokens(name)
        for call in message.get("tool_calls") or ():
            total += _tool_call_tokens(call)
    return total
