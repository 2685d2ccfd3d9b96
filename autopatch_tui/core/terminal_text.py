"""Text from a store, a model or a repository, made safe to print on a terminal: control characters
(C0, DEL, C1: an escape sequence could move the cursor, retitle the window or hide text) and the
bidirectional overrides (which reorder what is shown) become visible escapes such as `\\x1b`;
nothing else changes."""

from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every unsafe character escaped; newlines and tabs stay."""
    return _UNSAFE.sub(_escape, text)


def one_line(text: str) -> str:
    """`text` on one line: runs of whitespace become one space, unsafe characters are escaped."""
    return _UNSAFE_ONE_LINE.sub(_escape, " ".join(text.split()))
