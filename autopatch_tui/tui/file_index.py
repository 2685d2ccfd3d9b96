"""Repository file names for `@path` completion (bounded walk, cached until `/reset`)."""

from __future__ import annotations

from pathlib import Path

from autopatch_tui.core.agent.source_tools import SKIPPED_DIRS
from autopatch_tui.core.tree_walk import TreeWalk

MAX_FILES = 20_000


class FileIndex:
    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._paths: list[str] | None = None

    def paths(self) -> list[str]:
        if self._paths is None:
            found: list[str] = []
            for dirpath, dirnames, filenames in TreeWalk(self.repo):
                dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS and not d.startswith("."))
                rel = Path(dirpath).relative_to(self.repo)
                if rel.parts:
                    found.append(rel.as_posix() + "/")
                for name in sorted(filenames):
                    found.append((rel / name).as_posix())
                if len(found) >= MAX_FILES:
                    break
            self._paths = found[:MAX_FILES]
        return self._paths

    def complete(self, prefix: str, limit: int = 12) -> list[str]:
        low = prefix.lower()
        # a folder typed in full offers what is in it, not itself again
        starts = [p for p in self.paths() if p.lower().startswith(low) and not (p.endswith("/") and p.lower() == low)]
        contains = [p for p in self.paths() if low in p.lower() and p not in starts]
        return (starts + contains)[:limit]

    def clear(self) -> None:
        self._paths = None
