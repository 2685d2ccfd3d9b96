"""Deep-check verdicts remembered per file state, in this process and across processes.

The deep check (`deep_check.py`) is O(size of the store); its verdict is kept for the exact state
of the files it read, so a repeat open does not pay it again:

- `file_state` identifies the bytes of `memory.db`, `-wal` and `-journal` without reading them:
  device, inode, mode, owner, link count, size, mtime and ctime of each; an absent or empty side
  file holds nothing and counts as absent. Content cannot change without changing ctime, which no
  unprivileged process can set back. A link, or a file system with whole-millisecond timestamps
  (where a rewrite can repeat the state), has no state: nothing is remembered for it.
- a verdict is kept only for a file last changed `SETTLED_SECONDS` before its check began, so a
  write in the same timestamp tick cannot repeat the state;
- the per-user file `$AUTOPATCH_HOME/store-checks.json` (0600, written atomically, never through a
  link, read bounded and without blocking: `core/bounded_json.py`) holds the last verdict of up to
  `MAX_STORES` stores, by the store's real path. A degraded
  verdict lives there, never beside the store: a degraded store's folder is never written. A
  healthy verdict is trusted only while the state is exactly the one checked; a degraded one keeps
  the store degraded, without a write, until its files change (or `memory clear`).

Losing the file (or a concurrent writer's update) only costs a repeated check."""

from __future__ import annotations

import json
import logging
import os
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from autopatch_tui.core.bounded_json import JsonFileError, read_json
from autopatch_tui.core.memory.sqlite import side_file

log = logging.getLogger(__name__)
SETTLED_SECONDS = 0.05
MEMO_FILE = "store-checks.json"
MAX_STORES = 64
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 8  # ours nests four levels (file, stores, one store, its state)
FORMAT = "autopatch-store-checks"

State = tuple[object, ...]


def file_state(db: Path) -> State | None:
    """The state of `db`, `-wal` and `-journal` (see the module doc), or None when it cannot be
    trusted to change with the content."""
    out: list[object] = []
    for suffix in ("", "-wal", "-journal"):
        try:
            st = os.lstat(side_file(db, suffix))
        except FileNotFoundError:
            out.append(None)
            continue
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode) or st.st_ctime_ns % 1_000_000 == 0:
            return None
        if suffix and st.st_size == 0:
            out.append(None)
            continue
        out.append([st.st_dev, st.st_ino, st.st_mode, st.st_uid, st.st_nlink, st.st_size, st.st_mtime_ns,
                    st.st_ctime_ns])
    return tuple(out) if out[0] is not None else None


def settled(state: State, started: float) -> bool:
    ctimes = [entry[-1] for entry in state if entry is not None]  # type: ignore[index]
    return bool(ctimes) and max(ctimes) < (started - SETTLED_SECONDS) * 1e9  # type: ignore[operator]


@dataclass(frozen=True)
class Verdict:
    healthy: bool
    cause: str | None = None
    diagnostic: str | None = None


class VerdictMemo:
    """Verdicts by store path and file state: this process's, and the per-user file's (when a
    home folder is given)."""

    def __init__(self, home: Path | None) -> None:
        self.home = home
        self._local: dict[str, tuple[State, Verdict]] = {}
        self._lock = threading.Lock()

    @property
    def path(self) -> Path | None:
        return self.home / MEMO_FILE if self.home is not None else None

    def lookup(self, db: Path, state: State | None) -> Verdict | None:
        if state is None:
            return None
        key = os.path.realpath(db)
        with self._lock:
            local = self._local.get(key)
        if local is not None and local[0] == state:
            return local[1]
        entry = self._read().get(key)
        if not isinstance(entry, dict) or _state(entry.get("state")) != state:
            return None
        verdict = Verdict(bool(entry.get("healthy")), _text(entry.get("cause")), _text(entry.get("diagnostic")))
        if not verdict.healthy and not verdict.diagnostic:
            return None
        with self._lock:
            self._local[key] = (state, verdict)
        return verdict

    def remember(self, db: Path, state: State, verdict: Verdict) -> None:
        key = os.path.realpath(db)
        with self._lock:
            self._local[key] = (state, verdict)
        if self.path is None:
            return
        stores = self._read()
        stores.pop(key, None)
        stores[key] = {"state": list(state), "healthy": verdict.healthy, "cause": verdict.cause,
                       "diagnostic": verdict.diagnostic, "checked_at": round(time.time(), 3)}
        while len(stores) > MAX_STORES:
            stores.pop(next(iter(stores)))
        self._write({"format": FORMAT, "version": 1, "stores": stores})

    def forget(self, db: Path) -> None:
        key = os.path.realpath(db)
        with self._lock:
            self._local.pop(key, None)
        stores = self._read()
        if stores.pop(key, None) is not None:
            self._write({"format": FORMAT, "version": 1, "stores": stores})

    def _read(self) -> dict[str, object]:
        path = self.path
        if path is None:
            return {}
        try:  # bounded, never blocking (a FIFO there), never through a link: `core/bounded_json.py`
            data = read_json(path, max_bytes=MAX_FILE_BYTES, max_depth=MAX_DEPTH)
        except JsonFileError as exc:  # damage costs a repeated check, never a command
            log.debug("store check memo unreadable: %s", exc.reason)
            return {}
        stores = data.get("stores") if isinstance(data, dict) and data.get("format") == FORMAT else None
        return dict(stores) if isinstance(stores, dict) else {}

    def _write(self, data: dict[str, object]) -> None:
        from autopatch_tui.core.errors import AutopatchError
        from autopatch_tui.core.paths import write_private_text

        assert self.home is not None
        try:
            write_private_text(self.home / MEMO_FILE, json.dumps(data, ensure_ascii=False), root=self.home)
        except (OSError, AutopatchError) as exc:  # a read-only home: the check runs again next time
            log.info("store check verdict not saved: %s", type(exc).__name__)


def _state(value: object) -> State | None:
    if not isinstance(value, list):
        return None
    return tuple(value)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
