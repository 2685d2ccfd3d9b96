"""Connections and transactions: WAL, `BEGIN IMMEDIATE` for every write, a busy timeout, and
SQLite lock errors turned into `MemoryBusyError`."""

from __future__ import annotations

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


def _uri(path: Path, **params: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"file:{quote(str(path))}" + (f"?{query}" if query else "")


def open_readwrite(path: Path, *, busy_timeout: float = BUSY_TIMEOUT_SECONDS, create: bool = False) -> sqlite3.Connection:
    """A read-write connection in autocommit mode (transactions are explicit)."""
    mode = "rwc" if create else "rw"
    conn = sqlite3.connect(
        _uri(path, mode=mode), uri=True, timeout=busy_timeout, isolation_level=None, check_same_thread=False
    )
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def open_readonly(path: Path, *, busy_timeout: float = BUSY_TIMEOUT_SECONDS) -> sqlite3.Connection:
    """A read-only connection: the main file is never written through it. (On a file in WAL mode
    SQLite still needs the `-wal`/`-shm` side files and creates them, empty, when absent.)"""
    conn = sqlite3.connect(_uri(path, mode="ro"), uri=True, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    return conn


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
