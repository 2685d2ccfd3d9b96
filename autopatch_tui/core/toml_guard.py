"""The one guard before `tomllib` parses a file a repository ships: a dotted key (`a.b.c = 1`,
`[a.b.c]`, `{ a.b.c = 1 }`) of more than MAX_KEY_PARTS parts. tomllib parses one in time quadratic
in its length (20,000 parts: 4.5 s; 60,000: ~100 s; a 1 MB file: most of an hour), so a file holding
one is refused before it is parsed. Each match looks at most MAX_KEY_PARTS parts: linear in the file."""

from __future__ import annotations

import re

MAX_KEY_PARTS = 32  # a real configuration's keys have a handful of parts
_KEY_PART = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\\n]|\\.)*"|'[^'\n]*')"""
_DEEP_KEY = re.compile(rf"(?m)(?:^|[\[{{,])[ \t]*(?:{_KEY_PART}[ \t]*\.[ \t]*){{{MAX_KEY_PARTS}}}")


def has_deep_key(text: str) -> bool:
    """Whether `text` holds a dotted key of more than MAX_KEY_PARTS parts (never parse it then)."""
    return _DEEP_KEY.search(text) is not None
