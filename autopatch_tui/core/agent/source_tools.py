"""Read-only source tools for `code_explain`, confined to the repository.

Every path is resolved (symlinks included) and must stay inside the repo; `.autopatch-j/**` and
`.git/**` are refused. Results are bounded."""

from __future__ import annotations

import os
import re
from pathlib import Path

from autopatch_tui.core.constants import STATE_DIR_NAME
from autopatch_tui.core.errors import AutopatchError

MAX_READ_LINES = 400
MAX_READ_CHARS = 24_000
MAX_LIST_ENTRIES = 400
MAX_SEARCH_HITS = 50
MAX_SEARCH_FILES = 5_000
MAX_FILE_BYTES = 2_000_000
REFUSED_DIRS = {STATE_DIR_NAME, ".git"}
SKIPPED_DIRS = REFUSED_DIRS | {"node_modules", ".venv", "venv", "__pycache__", "build", "dist", "target"}


class SourceToolError(AutopatchError):
    """A refused or failed source-tool call; the message is safe to show the model."""


class SourceTools:
    def __init__(self, repo: Path) -> None:
        self.repo = repo.resolve()

    def resolve(self, rel: str) -> Path:
        if not isinstance(rel, str) or not rel.strip():
            raise SourceToolError("a repository-relative path is required")
        raw = Path(rel.strip())
        if raw.is_absolute():
            raise SourceToolError("absolute paths are refused; use a path relative to the repository")
        target = (self.repo / raw).resolve()
        try:
            inside = target.relative_to(self.repo)
        except ValueError:
            raise SourceToolError("that path leaves the repository") from None
        if inside.parts and inside.parts[0] in REFUSED_DIRS:
            raise SourceToolError(f"{inside.parts[0]}/ is not readable by tools")
        return target

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
            if child.name in SKIPPED_DIRS:
                continue
            entries.append(child.name + ("/" if child.is_dir() else ""))
            if len(entries) >= MAX_LIST_ENTRIES:
                entries.append("[... more entries omitted ...]")
                break
        return "\n".join(entries) or "(empty)"

    def search_text(self, pattern: str, path: str = ".") -> str:
        if not pattern:
            raise SourceToolError("a search pattern is required")
        try:
            rx = re.compile(pattern)
        except re.error:
            rx = re.compile(re.escape(pattern))
        root = self.resolve(path or ".")
        hits: list[str] = []
        scanned = 0
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
            for name in sorted(filenames):
                f = Path(dirpath) / name
                scanned += 1
                if scanned > MAX_SEARCH_FILES or len(hits) >= MAX_SEARCH_HITS:
                    return "\n".join(hits + ["[... search stopped at its bound ...]"])
                if f.is_symlink() or f.stat().st_size > MAX_FILE_BYTES:
                    continue
                try:
                    text = f.read_text(encoding="utf-8")
                except (UnicodeDecodeError, OSError):
                    continue
                for n, line in enumerate(text.splitlines(), 1):
                    if rx.search(line):
                        hits.append(f"{f.relative_to(self.repo).as_posix()}:{n}: {line[:200]}")
                        if len(hits) >= MAX_SEARCH_HITS:
                            break
        return "\n".join(hits) or "no matches"
