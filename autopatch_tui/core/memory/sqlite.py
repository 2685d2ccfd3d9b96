"""Connections and transactions: WAL, `BEGIN IMMEDIATE` for every write, a busy timeout, and
SQLite lock errors turned into `MemoryBusyError`."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from autopatch_tui.core.errors import MemoryBusyError, MemoryStoreError

BUSY_TIMEOUT_SECONDS = 10.0


def is_lock_error(exc: BaseException) -> bool:
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def uri(path: Path, **params: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"file:{quote(str(path))}" + (f"?{query}" if query else "")


def open_readwrite(path: Path, *, busy_timeout: float = BUSY_TIMEOUT_SECONDS, create: bool = False) -> sqlite3.Connection:
    """A read-write connection in autocommit mode (transactions are explicit)."""
    mode = "rwc" if create else "rw"
    conn = sqlite3.connect(
        uri(path, mode=mode), uri=True, timeout=busy_timeout, isolation_level=None, check_same_thread=False
    )
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def open_reader(path: Path, *, busy_timeout: float = BUSY_TIMEOUT_SECONDS) -> sqlite3.Connection:
    """A plain read-only connection to a store this process has open read-write (its `-wal` and
    `-shm` exist): a normal WAL reader with its own read mark, whose snapshot is the latest commit."""
    conn = sqlite3.connect(uri(path, mode="ro"), uri=True, timeout=busy_timeout, isolation_level=None,
                           check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    return conn


def side_file(path: Path, suffix: str) -> Path:
    """`memory.db` + `suffix` (`-wal`, `-shm`, `-journal`; "" for the file itself)."""
    return path.with_name(path.name + suffix)


JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")


def garbage_journal(path: Path) -> int | None:
    """The size of `path`'s `-journal` when it is not an SQLite rollback journal although SQLite
    would take it for a hot one (first byte not zero, no journal magic), else None."""
    journal = side_file(path, "-journal")
    try:
        with journal.open("rb") as fh:
            head = fh.read(len(JOURNAL_MAGIC))
        size = journal.stat().st_size
    except OSError:
        return None
    if not head or head[0] == 0 or head == JOURNAL_MAGIC:
        return None
    return size


def in_wal_mode(path: Path) -> bool:
    """Whether the database header says WAL (file format versions 2/2, bytes 18-19): a store this
    app has opened for writing is; a shipped, copied or older tool's may be in rollback-journal
    mode (1/1). Read without following a link and without blocking."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        head = os.pread(fd, 20, 0)
    except OSError:
        return False
    finally:
        os.close(fd)
    return head[18:20] == b"\x02\x02"


def opened_file(conn: sqlite3.Connection) -> str:
    """The file SQLite actually opened for `main` (symlinks resolved by SQLite itself)."""
    for row in conn.execute("PRAGMA database_list").fetchall():
        if row[1] == "main":
            return str(row[2])
    return ""


def enable_wal(conn: sqlite3.Connection, *, attempts: int = 50) -> None:
    """Switch to WAL (persistent in the file). Only ever called on a validated or new v4 store."""
    for i in range(attempts):
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        except sqlite3.OperationalError as exc:
            if not is_lock_error(exc) or i == attempts - 1:
                raise MemoryBusyError("cannot switch the Memory store to WAL: it stayed locked") from exc
            time.sleep(0.02 * (i + 1))
            continue
        if str(mode).lower() == "wal":
            return
        raise MemoryStoreError(f"cannot switch the Memory store to WAL (journal mode stays {mode})")


@contextmanager
def write_txn(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """`BEGIN IMMEDIATE` … `COMMIT`; rolls back on any exception."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if is_lock_error(exc):
            raise MemoryBusyError("the Memory store stayed locked by another writer") from exc
        raise
    try:
        yield conn
    except BaseException:
        # SQLite may have rolled the transaction back itself (SQLITE_FULL, SQLITE_IOERR, ...): a
        # second ROLLBACK would raise and hide the error that matters
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    try:
        conn.execute("COMMIT")
    except sqlite3.OperationalError as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if is_lock_error(exc):
            raise MemoryBusyError("the Memory store stayed locked by another writer") from exc
        raise


@contextmanager
def read_txn(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A consistent snapshot for several reads (WAL readers do not block writers)."""
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")
