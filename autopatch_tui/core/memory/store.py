"""`MemoryStore`: one project's memory.db, validated on open, with one connection per thread.

A degraded store keeps its diagnostic and refuses every read and write through `conn()`; only
`status`, `export` (when readable) and an explicit clear deal with it. A store that is intact but
not writable for this user (cause `read_only`) also serves `read_conn()`: a read-only connection
that leaves its folder untouched, for the read commands and the browsing screens."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from autopatch_tui.core.clock import Clock, SystemClock
from autopatch_tui.core.errors import MemoryDegradedError, MemoryStoreError, UnsafePathError
from autopatch_tui.core.memory.bootstrap import StoreIdentity, open_or_create
from autopatch_tui.core.memory.health import CORRUPT, MERGED, Health
from autopatch_tui.core.memory.sqlite import enable_wal, open_readonly
from autopatch_tui.core.memory.store_files import open_verified
from autopatch_tui.core.paths import StorePaths


class MemoryStore:
    def __init__(self, paths: StorePaths, identity: StoreIdentity, *, clock: Clock | None = None) -> None:
        self.paths = paths
        self.identity = identity
        self.clock: Clock = clock or SystemClock()
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        self.health: Health = Health(False, 0, "not opened")

    @classmethod
    def open(cls, paths: StorePaths, identity: StoreIdentity, *, clock: Clock | None = None) -> MemoryStore:
        store = cls(paths, identity, clock=clock)
        store.reload()
        return store

    @classmethod
    def unavailable(cls, paths: StorePaths, identity: StoreIdentity, diagnostic: str) -> MemoryStore:
        """A store that must not be opened (e.g. merged into a holder that is not reachable)."""
        store = cls(paths, identity)
        store.health = Health(False, 0, diagnostic, cause=MERGED)
        return store

    @property
    def db_path(self) -> Path:
        return self.paths.db

    @property
    def healthy(self) -> bool:
        return self.health.healthy

    def reload(self) -> Health:
        """Validate (bootstrapping a missing file) and, when healthy, switch to WAL."""
        self._drop_connections()
        self.health = open_or_create(self.paths.db, self.identity, self.clock.now())
        if self.health.healthy:
            enable_wal(self.conn())
        return self.health

    def mark_degraded(self, diagnostic: str, cause: str = CORRUPT) -> None:
        """Run-time damage found: stop using the store until it is reloaded or cleared. Open
        connections of other threads are not closed under them; `conn()` refuses them from now on
        and `close()` releases them."""
        self.health = Health(False, self.health.schema_version, diagnostic, cause=cause)

    @property
    def readable(self) -> bool:
        """Healthy, or intact but read-only: `read_conn()` works."""
        return self.health.healthy or self.health.readable

    def degraded_error(self) -> MemoryDegradedError:
        return MemoryDegradedError(self.health.diagnostic or "Memory is degraded", self.health.cause)

    def read_conn(self) -> sqlite3.Connection:
        """This thread's connection for reading: the read-write one of a healthy store, a read-only
        one (creating no file) of a read-only store."""
        if self.health.healthy or self._closed:
            return self.conn()
        if not self.health.readable:
            raise self.degraded_error()
        conn = getattr(self._local, "ro_conn", None)
        if conn is None:
            conn = open_readonly(self.paths.db)
            with self._lock:
                self._conns.append(conn)
            self._local.ro_conn = conn
        return conn

    def conn(self) -> sqlite3.Connection:
        """This thread's read-write connection to a healthy store."""
        if self._closed:
            raise MemoryStoreError("the Memory store is closed")
        if not self.health.healthy:
            raise self.degraded_error()
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = open_verified(self.paths)
            except UnsafePathError as exc:  # a link planted after the store was checked
                self.mark_degraded(str(exc), exc.cause)
                raise self.degraded_error() from None
            conn.execute("PRAGMA synchronous = NORMAL")
            with self._lock:
                self._conns.append(conn)
            self._local.conn = conn
        return conn

    def release_thread_connection(self) -> None:
        """Close this thread's connection (short-lived threads: heartbeats, flushes)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            return
        self._local.conn = None
        with self._lock:
            if conn in self._conns:
                self._conns.remove(conn)
        conn.close()

    def close_connections(self) -> None:
        """Drop every connection (before the files are deleted by an explicit clear)."""
        self._drop_connections()

    def _drop_connections(self) -> None:
        with self._lock:
            conns, self._conns = self._conns, []
        self._local = threading.local()
        for c in conns:
            c.close()

    def close(self) -> None:
        self._closed = True
        self._drop_connections()
