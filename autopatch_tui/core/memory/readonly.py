"""Read-only connections that see exactly what a read-write connection would read, and create or
change nothing in the store's folder (issue 24: damage committed only in the WAL).

SQLite's read-write connection reads `memory.db` *and* a `-wal` beside it (whatever the header's
journal mode says), and rolls a hot `-journal` back into the file. A check must read the same, but a
plain `mode=ro` reader changes the folder: it creates `-wal` and a 32 KB `-shm` beside a WAL file,
and the first connection to a `-shm` no live process holds truncates and rebuilds it. `read_plan`
chooses, from the side files present:

- `-wal` and `-shm` exist → `mode=ro&readonly_shm=1`: SQLite opens the `-shm` read-only; with a
  live peer it reads the peer's index, without one it builds a private index from the WAL in memory
  (heap-memory mode). Nothing is written.
- a non-empty `-wal` without `-shm` (a copied or backed-up folder) → the file and its `-wal` are
  copied to a private temporary folder (0700, files 0600) and read there; the copy is removed when
  the connection closes. This is the one case that costs O(size of the store).
- no WAL content, a WAL-mode header → `immutable=1` (no locks, no side files): the file is all
  there is to read.
- no WAL content, a rollback-journal header → `mode=ro` with locking: SQLite waits for a live
  writer's lock, and refuses a hot journal it cannot roll back read-only (the health check then
  reports cause `journal`).
- a `-journal` with a valid header (whatever the file's header says: SQLite looks at it first) →
  `mode=ro` with locking too: a live writer's journal is waited for (a first start creating the
  store, a switch to WAL), a hot one left behind is refused before anything is read or created."""

from __future__ import annotations

import os
import sqlite3
import weakref
from pathlib import Path

from autopatch_tui.core.memory.sqlite import BUSY_TIMEOUT_SECONDS, JOURNAL_MAGIC, garbage_journal, side_file, uri

READONLY_SHM, COPY_ASIDE, IMMUTABLE, LOCKING = "readonly_shm", "copy_aside", "immutable", "ro"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _size(path: Path) -> int | None:
    try:
        return os.lstat(path).st_size
    except OSError:
        return None


def _head(path: Path, n: int) -> bytes:
    try:
        with path.open("rb") as fh:
            return fh.read(n)
    except OSError:
        return b""


def hot_journal(path: Path) -> bool:
    """`-journal` holds a rollback journal SQLite would replay (valid magic, header not zeroed)."""
    return _head(side_file(path, "-journal"), len(JOURNAL_MAGIC)) == JOURNAL_MAGIC


def read_plan(path: Path) -> str:
    """How to read `path` as the read-write connection will, changing nothing (see the module doc)."""
    if hot_journal(path):  # SQLite looks at a rollback journal before anything else (a WAL file's too)
        return LOCKING
    wal_size = _size(side_file(path, "-wal"))
    if wal_size is not None and _size(side_file(path, "-shm")) is not None:
        return READONLY_SHM
    if wal_size:
        return COPY_ASIDE
    head = _head(path, 20)
    if head[18:20] != b"\x02\x02" and len(head) == 20 and not garbage_journal(path):
        return LOCKING  # a `-journal` here is empty or finished: SQLite ignores it
    return IMMUTABLE


class _ReadOnlyConnection(sqlite3.Connection):
    """A connection that removes its private copy (if any) when it is closed or collected."""

    _cleanup: weakref.finalize | None = None

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._cleanup is not None:
                self._cleanup()


def _copy_private(src: Path, dst: Path) -> None:
    import shutil

    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
    os.close(fd)
    shutil.copyfile(src, dst)  # into the 0600 file just made (sendfile where the OS has it)


def _remove(folder: str) -> None:
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def _copy_aside(path: Path) -> Path:
    import tempfile  # only this rare case needs it (and shutil)

    folder = Path(tempfile.mkdtemp(prefix="autopatch-check-"))  # 0700
    try:
        for suffix in ("", "-wal"):
            _copy_private(side_file(path, suffix), folder / f"memory.db{suffix}")
    except BaseException:
        _remove(str(folder))
        raise
    return folder


def open_readonly(path: Path, *, busy_timeout: float = BUSY_TIMEOUT_SECONDS,
                  plan: str | None = None) -> sqlite3.Connection:
    """A read-only connection to `path` that reads what a read-write one would and leaves the
    folder as it is. `plan` (from `read_plan`) may be passed when already known."""
    plan = plan or read_plan(path)
    folder = None
    target = path
    params = {"mode": "ro"}
    if plan == READONLY_SHM:
        params["readonly_shm"] = "1"
    elif plan == COPY_ASIDE:
        folder = _copy_aside(path)
        target = folder / "memory.db"
    elif plan == IMMUTABLE:
        params["immutable"] = "1"
    try:
        conn = sqlite3.connect(uri(target, **params), uri=True, timeout=busy_timeout, isolation_level=None,
                               check_same_thread=False, factory=_ReadOnlyConnection)
    except BaseException:
        if folder is not None:
            _remove(str(folder))
        raise
    if folder is not None:
        conn._cleanup = weakref.finalize(conn, _remove, str(folder))
    conn.row_factory = sqlite3.Row
    return conn
