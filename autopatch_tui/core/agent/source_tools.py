"""Read-only source tools for `code_explain`, confined to the repository.

Every path goes through `core.confine` (the one shared check): it must stay inside the repo, also
through symlinks, and a `.git` or `.autopatch-j` component at any depth is refused. Results are
bounded in size, and a search is bounded in wall-clock time as well (a model-chosen regex must not
hang the request)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import regex

from autopatch_tui.core.confine import REFUSED_NAMES, ConfinementError, allowed_entry, confine
from autopatch_tui.core.errors import AutopatchError

MAX_READ_LINES = 400
MAX_READ_CHARS = 24_000
MAX_LIST_ENTRIES = 400
MAX_SEARCH_HITS = 50
MAX_SEARCH_FILES = 5_000
MAX_FILE_BYTES = 2_000_000
SEARCH_BUDGET_SECONDS = 2.0  # wall clock per search_text call, pattern matching included
REFUSED_DIRS = set(REFUSED_NAMES)
SKIPPED_DIRS = REFUSED_DIRS | {"node_modules", ".venv", "venv", "__pycache__", "build", "dist", "target"}


class SourceToolError(AutopatchError):
    """A refused or failed source-tool call; the message is safe to show the model."""


class SourceTools:
    def __init__(self, repo: Path) -> None:
        self.repo = repo.resolve()

    def resolve(self, rel: str) -> Path:
        try:
            return confine(self.repo, rel)
        except ConfinementError as exc:
            raise SourceToolError(str(exc)) from None

    def read_file(self, path: str, start_line: int = 1, end_line: int | None = None) -> str:
        target = self.resolve(path)
        if not target.is_file():
            raise SourceToolError("no such file")
        if target.stat().st_size > MAX_FILE_BYTES:
            raise SourceToolError("file too large to read")
        text = target.read_text(encoding="utf-8", errors="replace")
        lines = text.splitlines()
        start = max(1, int(start_line))
        end = min(len(lines), int(end_line) if end_line else start + MAX_READ_LINES - 1, start + MAX_READ_LINES - 1)
        body = "\n".join(f"{n}: {lines[n - 1]}" for n in range(start, end + 1))
        if len(body) > MAX_READ_CHARS:
            body = body[:MAX_READ_CHARS] + "\n[... truncated ...]"
        return f"{target.relative_to(self.repo).as_posix()} lines {start}-{end} of {len(lines)}\n{body}"

    def list_files(self, path: str = ".") -> str:
        target = self.resolve(path or ".")
        if not target.is_dir():
            raise SourceToolError("not a directory")
        entries = []
        for child in sorted(target.iterdir(), key=lambda p: p.name):
            if child.name in SKIPPED_DIRS or not allowed_entry(self.repo, child):
                continue
            entries.append(child.name + ("/" if child.is_dir() else ""))
            if len(entries) >= MAX_LIST_ENTRIES:
                entries.append("[... more entries omitted ...]")
                break
        return "\n".join(entries) or "(empty)"

    def search_text(self, pattern: str, path: str = ".", *, budget: float = SEARCH_BUDGET_SECONDS) -> str:
        if not pattern:
            raise SourceToolError("a search pattern is required")
        try:
            rx = regex.compile(pattern)
        except (regex.error, ValueError, OverflowError):
            rx = regex.compile(regex.escape(pattern))
        root = self.resolve(path or ".")
        hits: list[str] = []
        scanned = 0
        deadline = time.monotonic() + budget
        stopped = f"[... search stopped: its time budget of {budget:g} s ran out; narrow the path or simplify the pattern ...]"
        if root.is_file():
            walk: list[tuple[str, list[str], list[str]]] = [(str(root.parent), [], [root.name])]
        else:
            walk = os.walk(root)  # type: ignore[assignment]
        for dirpath, dirnames, filenames in walk:
            dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS
                                 and allowed_entry(self.repo, Path(dirpath) / d))
            for name in sorted(filenames):
                f = Path(dirpath) / name
                scanned += 1
                if scanned > MAX_SEARCH_FILES or len(hits) >= MAX_SEARCH_HITS:
                    return "\n".join(hits + ["[... search stopped at its bound ...]"])
                if time.monotonic() >= deadline:
                    return "\n".join(hits + [stopped])
                if f.is_symlink() or f.stat().st_size > MAX_FILE_BYTES:
                    continue
                try:
                    text = f.read_text(encoding="utf-8")
                except (UnicodeDecodeError, OSError):
                    continue
                for n, line in enumerate(text.splitlines(), 1):
                    remaining = deadline - time.monotonic()
                    try:
                        if remaining <= 0:
                            raise TimeoutError
                        found = rx.search(line, timeout=remaining)
                    except TimeoutError:
                        return "\n".join(hits + [stopped])
                    if found:
                        hits.append(f"{f.relative_to(self.repo).as_posix()}:{n}: {line[:200]}")
                        if len(hits) >= MAX_SEARCH_HITS:
                            break
        return "\n".join(hits) or "no matches"
