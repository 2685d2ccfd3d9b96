"""Read-only source tools for `code_explain`, confined to the repository.

Every path goes through `core.confine` (the one shared check): it must stay inside the repo, also
through symlinks, and a `.git` or `.autopatch-j` component at any depth is refused. Results are
bounded in size, and a search is bounded in wall-clock time as well (a model-chosen regex must not
hang the request)."""

from __future__ import annotations

import threading
from pathlib import Path

from autopatch_tui.core.confine import (
    REFUSED_NAMES,
    ConfinementError,
    allowed_entry,
    confine,
    is_regular,
    kind_of,
    read_confined,
    read_regular,
    refused_name,
)
from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.core.tree_walk import TreeWalk

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
        try:  # a FIFO, socket or device is refused before it is opened for reading (it could block)
            target, data = read_confined(self.repo, path, MAX_FILE_BYTES)
        except ConfinementError as exc:
            raise SourceToolError(str(exc)) from None
        text = data.decode("utf-8", errors="replace")
        lines = text.splitlines()
        start = max(1, int(start_line))
        end = min(len(lines), int(end_line) if end_line else start + MAX_READ_LINES - 1, start + MAX_READ_LINES - 1)
        body = "\n".join(f"{n}: {lines[n - 1]}" for n in range(start, end + 1))
        if len(body) > MAX_READ_CHARS:
            body = body[:MAX_READ_CHARS] + "\n[... truncated ...]"
        return f"{target.relative_to(self.repo).as_posix()} lines {start}-{end} of {len(lines)}\n{body}"

    def list_files(self, path: str = ".") -> str:
        target = self.resolve(path or ".")
        if kind_of(target) != "dir":
            raise SourceToolError("not a directory")
        try:
            children = sorted(target.iterdir(), key=lambda p: p.name)
        except OSError:
            raise SourceToolError("that directory cannot be listed") from None
        entries = []
        for child in children:
            if child.name in SKIPPED_DIRS or not allowed_entry(self.repo, child):
                continue
            entries.append(child.name + ("/" if kind_of(child) == "dir" else ""))
            if len(entries) >= MAX_LIST_ENTRIES:
                entries.append("[... more entries omitted ...]")
                break
        return "\n".join(entries) or "(empty)"

    def search_text(self, pattern: str, path: str = ".", *, budget: float = SEARCH_BUDGET_SECONDS) -> str:
        """Lines matching `pattern` (a regex; an invalid one is searched literally). Bounded by hits,
        files and `budget` seconds of wall-clock time: the search runs in a worker thread (the
        `regex` package releases the GIL with `concurrent=True`) that this call waits for at most
        `budget`; each match is also capped at `budget` CPU seconds (`regex`'s `timeout`), so a
        catastrophic pattern left behind stops on its own soon after."""
        if not pattern:
            raise SourceToolError("a search pattern is required")
        root = self.resolve(path or ".")
        hits: list[str] = []
        outcome: list[BaseException | str] = []
        stop = threading.Event()

        def work() -> None:
            try:
                outcome.append(self._search(pattern, root, hits, stop, budget))
            except BaseException as exc:  # handed to the caller below
                outcome.append(exc)

        worker = threading.Thread(target=work, name="search-text", daemon=True)
        worker.start()
        worker.join(budget)
        stopped = (f"[... search stopped: its time budget of {budget:g} s ran out; narrow the path or simplify "
                   "the pattern ...]")
        if worker.is_alive() or not outcome:
            stop.set()
            return "\n".join([*list(hits)[:MAX_SEARCH_HITS], stopped])
        result = outcome[0]
        if isinstance(result, BaseException):
            raise result
        if result == "time":
            return "\n".join([*hits, stopped])
        if result == "bound":
            return "\n".join([*hits, "[... search stopped at its bound ...]"])
        return "\n".join(hits) or "no matches"

    def _search(self, pattern: str, root: Path, hits: list[str], stop: threading.Event, budget: float) -> str:
        """'done', 'bound' or 'time'; appends hits as it goes."""
        import regex  # the search engine (~10-30 ms to import), at the first search: the app's first frame
        # imports this module for SKIPPED_DIRS (the @-completion) and must not pay it (issue 33)

        try:
            rx = regex.compile(pattern)
        except (regex.error, ValueError, OverflowError, RecursionError):
            rx = regex.compile(regex.escape(pattern))
        if kind_of(root) != "dir":
            walk: list[tuple[str, list[str], list[str]]] = [(str(root.parent), [], [root.name])]
        else:
            walk = TreeWalk(root)  # type: ignore[assignment]
        scanned = 0
        for dirpath, dirnames, filenames in walk:
            dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS
                                 and allowed_entry(self.repo, Path(dirpath) / d))
            for name in sorted(filenames):
                f = Path(dirpath) / name
                scanned += 1
                if scanned > MAX_SEARCH_FILES or len(hits) >= MAX_SEARCH_HITS:
                    return "bound"
                if stop.is_set():
                    return "time"
                if f.is_symlink() or refused_name(name) or not is_regular(f):  # a FIFO would block the read
                    continue
                try:
                    text = read_regular(f, MAX_FILE_BYTES).decode("utf-8")
                except (UnicodeDecodeError, OSError, ConfinementError):
                    continue
                for n, line in enumerate(text.splitlines(), 1):
                    if stop.is_set():
                        return "time"
                    try:
                        found = rx.search(line, timeout=budget, concurrent=True)
                    except TimeoutError:
                        return "time"
                    if found:
                        hits.append(f"{f.relative_to(self.repo).as_posix()}:{n}: {line[:200]}")
                        if len(hits) >= MAX_SEARCH_HITS:
                            break
        return "done"
