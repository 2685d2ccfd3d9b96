"""The chat prompt's history of sent lines, one file per repository in `$AUTOPATCH_HOME`.

It is the user's own terminal history (like a shell's), never Memory: it lives in
`<home>/prompt-history/<repo-key>.jsonl` (folder 0700, file 0600), one JSON string per line, the
newest last, at most MAX_ENTRIES kept. Up/Down in the prompt walk it; the text being typed when the
walk began is kept and comes back after the newest entry. A file that cannot be read or written
costs the history, never the prompt: the problem is logged by type only (the text is private)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

from autopatch_tui.core.bounded_json import JsonFileError, parse, read_bytes
from autopatch_tui.core.paths import ensure_private_dir, write_private_text

log = logging.getLogger(__name__)

MAX_ENTRIES = 500
MAX_FILE_BYTES = 8 << 20
FOLDER = "prompt-history"


def history_file(home: Path, repo: Path) -> Path:
    """The history file of `repo` (keyed by its resolved path, so two checkouts keep two histories)."""
    key = hashlib.sha256(str(Path(repo).resolve()).encode("utf-8")).hexdigest()[:20]
    return Path(home) / FOLDER / f"{key}.jsonl"


class PromptHistory:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: list[str] = self._read()
        self._index: int | None = None  # position while walking; None = not walking
        self._draft = ""

    def _read(self) -> list[str]:
        if self.path is None:
            return []
        try:  # bounded, a regular file, never blocking, never through a link
            raw = read_bytes(self.path, max_bytes=MAX_FILE_BYTES)
        except JsonFileError as exc:
            log.warning("prompt history not read: %s", exc.reason)
            return []
        if raw is None:
            return []
        entries = []
        for line in raw.splitlines():
            try:
                value = parse(line, self.path, max_depth=1)  # one JSON string a line
            except JsonFileError:
                continue  # a torn line (two apps wrote at once) is skipped, not fatal
            if isinstance(value, str) and value.strip():
                entries.append(value)
        return entries[-MAX_ENTRIES:]

    def add(self, text: str) -> None:
        """Remember a sent line (a repeat of the newest entry is not stored twice)."""
        self._index = None
        self._draft = ""
        if not text.strip():
            return
        if self.entries and self.entries[-1] == text:
            return
        self.entries.append(text)
        self.entries = self.entries[-MAX_ENTRIES:]
        self._write()

    def _write(self) -> None:
        if self.path is None:
            return
        try:
            folder = ensure_private_dir(self.path.parent)
            os.chmod(folder, 0o700)
            write_private_text(self.path, "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in self.entries))
        except OSError as exc:
            log.warning("prompt history not saved: %s", type(exc).__name__)

    @property
    def walking(self) -> bool:
        return self._index is not None

    def previous(self, current: str) -> str | None:
        """The entry before the one shown (the newest first); None when there is none."""
        if not self.entries:
            return None
        if self._index is None:
            self._draft = current
            self._index = len(self.entries)
        if self._index == 0:
            return None
        self._index -= 1
        return self.entries[self._index]

    def next(self) -> str | None:
        """The entry after the one shown; past the newest, the draft the walk began with."""
        if self._index is None:
            return None
        self._index += 1
        if self._index >= len(self.entries):
            self._index = None
            return self._draft
        return self.entries[self._index]

    def stop(self) -> None:
        """The user edited the shown entry: the next Up starts a new walk from the newest."""
        self._index = None
