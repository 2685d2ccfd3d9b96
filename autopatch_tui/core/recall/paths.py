"""Repository paths in recall: normalization, glob coverage and specificity of an item's
applies-to entries against a request's scope (the path side of the Memory Map's ranking)."""

from __future__ import annotations

import unicodedata


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def normalize_path(path: str) -> str:
    """Repo-relative POSIX form, case kept: NFKC, ``\\`` -> ``/``, whitespace around each segment
    stripped, empty and ``.`` segments removed (so leading ``./`` and ``/``, ``//`` and a trailing
    ``/`` go). ``..`` is kept as is. ``""`` means the repository root."""
    segments = (seg.strip() for seg in _nfkc(path).replace("\\", "/").split("/"))
    return "/".join(seg for seg in segments if seg not in ("", "."))


def _is_glob(path: str) -> bool:
    return "*" in path or "?" in path


def _match_segment(pattern: str, name: str) -> bool:
    """Wildcard match of one path segment: ``*`` any run, ``?`` one character. O(len*len)."""
    p = s = 0
    star = -1
    mark = 0
    while s < len(name):
        if p < len(pattern) and pattern[p] == "*":
            star, mark = p, s
            p += 1
        elif p < len(pattern) and (pattern[p] == "?" or pattern[p] == name[s]):
            p += 1
            s += 1
        elif star >= 0:
            p = star + 1
            mark += 1
            s = mark
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


def _match_glob(pattern: list[str], path: list[str]) -> bool:
    """Segment-level glob match; a ``**`` segment matches zero or more segments."""
    rows, cols = len(pattern), len(path)
    below = [False] * (cols + 1)  # row i+1 of the table: pattern[i+1:] vs path[j:]
    below[cols] = True
    for i in range(rows - 1, -1, -1):
        row = [False] * (cols + 1)
        seg = pattern[i]
        for j in range(cols, -1, -1):
            if seg == "**":
                row[j] = below[j] or (j < cols and row[j + 1])
            else:
                row[j] = j < cols and below[j + 1] and _match_segment(seg, path[j])
        below = row
    return below[0]


def path_covers(applies_to: str, scope: str) -> bool:
    """Whether an item's ``applies_to`` covers ``scope`` (both normalized with
    `normalize_path`, case-sensitive). ``""``, ``"*"`` and ``"**"`` cover everything; a literal
    path covers itself and everything below it (``src/`` covers ``src`` and ``src/a.py``, not
    ``srcx/a.py``); a glob (``*``/``?``) covers a path it matches or whose ancestor directory it
    matches (``src/*`` covers ``src/a/b.py``; ``src/*.py`` does not); a glob without ``/`` matches
    at any depth; ``dir/**`` also covers ``dir`` itself."""
    pattern = normalize_path(applies_to)
    if pattern in ("", "*", "**"):
        return True
    target = normalize_path(scope)
    if not target:
        return False
    if not _is_glob(pattern):
        return target == pattern or target.startswith(pattern + "/")
    segments = pattern.split("/")
    if len(segments) == 1:
        segments = ["**", *segments]
    if segments[-1] != "**":
        segments.append("**")  # matching an ancestor directory covers what lies below it
    return _match_glob(segments, target.split("/"))


def path_specificity(applies_to: str) -> int:
    """Ranking weight of an ``applies_to``: 0 for ``""``/``"*"``, otherwise the number of
    segments with no ``*``/``?`` (``"src/app/x.py"`` -> 3, ``"src/*.py"`` -> 1,
    ``"**/*.java"`` -> 0)."""
    pattern = normalize_path(applies_to)
    if pattern in ("", "*"):
        return 0
    return sum(1 for seg in pattern.split("/") if not _is_glob(seg))
