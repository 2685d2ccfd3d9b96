"""A word diff of two short texts (an item's statement against its kept revision), and the change
of an applies-to list: what the review inbox shows for a revised item. Pure functions; the screens
turn the segments into styled text."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Literal

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")  # whitespace runs, words, single punctuation marks

Op = Literal["same", "del", "add"]


@dataclass(frozen=True)
class Segment:
    op: Op
    text: str


def word_diff(old: str, new: str) -> list[Segment]:
    """Segments that spell `old` (same + del) and `new` (same + add), word by word: whitespace runs
    and punctuation marks are tokens of their own ("Redis." → "Redis" "."), so the texts come back
    exactly. Adjacent segments of one kind merge."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    out: list[Segment] = []

    def put(op: Op, tokens: list[str]) -> None:
        text = "".join(tokens)
        if not text:
            return
        if out and out[-1].op == op:
            out[-1] = Segment(op, out[-1].text + text)
        else:
            out.append(Segment(op, text))

    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            put("same", a[i1:i2])
        else:
            put("del", a[i1:i2])
            put("add", b[j1:j2])
    return out


def old_text(segments: list[Segment]) -> str:
    return "".join(s.text for s in segments if s.op != "add")


def new_text(segments: list[Segment]) -> str:
    return "".join(s.text for s in segments if s.op != "del")


@dataclass(frozen=True)
class PathsChange:
    removed: tuple[str, ...]
    added: tuple[str, ...]
    kept: tuple[str, ...]

    @property
    def changed(self) -> bool:
        return bool(self.removed or self.added)


def paths_change(old: list[str], new: list[str]) -> PathsChange:
    """An applies-to list's change (an empty list means the whole project)."""
    old_set, new_set = set(old), set(new)
    return PathsChange(tuple(p for p in old if p not in new_set), tuple(p for p in new if p not in old_set),
                       tuple(p for p in new if p in old_set))
