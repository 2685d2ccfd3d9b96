"""The one walk of a folder tree for every command (issue 28 review): `os.walk` on Python 3.11
recurses once per level, so a repository with ~1,000 nested folders ended `memory audit`, `@`
completion, the audit's scan, `search_code` and a scoped ask with a `RecursionError`.

`TreeWalk(top)` yields what `os.walk(top)` does — `(dirpath, dirnames, filenames)` top-down, in
pre-order; a link to a folder listed among `dirnames` but never entered; a folder that cannot be
read skipped; `dirnames` pruned or reordered in place by the caller decides what is entered and in
which order — from an explicit stack. Folders more than `max_depth` levels below `top` are not
entered: `skipped` counts them."""

from __future__ import annotations

import os
from collections.abc import Iterator

MAX_WALK_DEPTH = 64  # a real repository nests about 15 deep


class TreeWalk:
    def __init__(self, top: str | os.PathLike[str], *, max_depth: int = MAX_WALK_DEPTH) -> None:
        self.top = os.fspath(top)
        self.max_depth = max_depth
        self.skipped = 0  # folders not entered: deeper than max_depth

    def __iter__(self) -> Iterator[tuple[str, list[str], list[str]]]:
        stack: list[tuple[str, int]] = [(self.top, 0)]
        while stack:
            path, depth = stack.pop()
            try:
                with os.scandir(path) as it:
                    entries = list(it)
            except OSError:
                continue
            dirs: list[str] = []
            files: list[str] = []
            links: set[str] = set()
            for entry in entries:
                try:
                    is_dir = entry.is_dir()
                    if is_dir and entry.is_symlink():
                        links.add(entry.name)
                except OSError:
                    is_dir = False
                (dirs if is_dir else files).append(entry.name)
            yield path, dirs, files
            entered = [d for d in dirs if d not in links]
            if depth >= self.max_depth:
                self.skipped += len(entered)
                continue
            stack.extend((os.path.join(path, d), depth + 1) for d in reversed(entered))
