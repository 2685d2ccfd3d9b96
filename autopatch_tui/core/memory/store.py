"""`MemoryStore`: one project's memory.db, validated on open, with one connection per thread.

Opening runs the open-time check (`health.py`, independent of the store's size) and, when it
passes, looks up the deep check's remembered verdict for the file's exact state (`verdicts.py`):
a remembered fault keeps the store degraded without opening it for writing; a remembered healthy
verdict makes it `verified`. Otherwise `verify()` runs the deep check later (after the app's first
frame, after a CLI command's answer); a fault it finds degrades the store at once.

A degraded store keeps its diagnostic and refuses every read and write through `conn()`; only
`status`, `export` (when readable) and an explicit clear deal with it. A store that is intact but
not writable for this user (cause `read_only`) also serves `read_conn()`: a read-only connection
that leaves its folder untouched, for the read commands and the browsing screens."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from autopatch_tui.core.clock import Clock, SystemClock
from autopatch_tui.core.errors import MemoryDegradedError, MemoryStoreError, UnsafePathError
from autopatch_tui.core.memory.bootstrap import StoreIdentity, open_or_create
from autopatch_tui.core.memory.health import CORRUPT, MERGED, Health, check_runtime_invariants
from autopatch_tui.core.memory.readonly import open_readonly
from autopatch_tui.core.memory.sqlite import enable_wal, in_wal_mode
from autopatch_tui.core.memory.store_files import ensure_gitignore, open_verified
from autopatch_tui.core.memory.verdicts import Verdict, VerdictMemo, file_state
from autopatch_tui.core.paths import StorePaths

if TYPE_CHECKING:
    from autopatch_tui.core.memory.deep_check import DeepCheck


class MemoryStore:
    def __init__(self, paths: StorePaths, identity: StoreIdentity, *, clock: Clock | None = None,
                 memo: VerdictMemo | None = None) -> None:
        self.paths = paths
        self.identity = identity
        self.clock: Clock = clock or SystemClock()
        self.memo = memo if memo is not None else VerdictMemo(None)
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        self.health: Health = Health(False, 0, "not opened")
        self.verified = False  # the deep check passed on this store (this session, or remembered)
        self._deep: DeepCheck | None = None  # the deep check in progress

    @classmethod
    def open(cls, paths: StorePaths, identity: StoreIdentity, *, clock: Clock | None = None,
             memo: VerdictMemo | None = None) -> MemoryStore:
        store = cls(paths, identity, clock=clock, memo=memo)
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
        """Validate (bootstrapping a missing file) and, when healthy, switch to WAL. `.gitignore` is
        written only for a store whose healthy verdict is remembered or once the deep check passed,
        whatever its journal mode (a repository sets that header too). A fault the deep check
        remembered for exactly these files keeps the store degraded (nothing opened for writing). A
        store not in WAL mode yet, whose verdict is not remembered, is deep-checked first, before
        anything in its folder changes (issue 28 item 7). The
        read-write connection then reads the invariants once more itself (a live peer may have
        committed since the check read the file)."""
        self._drop_connections()
        self.verified = False
        self.health = open_or_create(self.paths.db, self.identity, self.clock.now())
        if not self.health.healthy:
            return self.health
        known = self.memo.lookup(self.paths.db, file_state(self.paths.db))
        if known is not None and not known.healthy:
            self.health = Health(False, self.health.schema_version, known.diagnostic, cause=known.cause or CORRUPT)
            return self.health
        self.verified = known is not None
        if not self.verified and not in_wal_mode(self.paths.db):
            # A store this app never opened for writing (shipped by a repository, copied, an older
            # tool's): nothing is written in its folder — no WAL switch, no `.gitignore` — before
            # the deep check, the one that sees its damage, has passed (`verify` writes it then).
            self.verify()
            if not self.health.healthy or not self.verified:
                return self.health
        elif self.verified and not self._ignore_in_git():
            return self.health
        # in WAL mode without a remembered verdict (the header is the repository's to set too):
        # `.gitignore` waits for the deep check as well — `verify` writes it once it passed
        enable_wal(self.conn())
        problem = check_runtime_invariants(self.conn())
        if problem:
            self.mark_degraded(problem)
        return self.health

    def verify(self, timeout: float | None = None) -> Verdict | None:
        """The deep check (`deep_check.py`) of a healthy store not verified yet: its verdict (a
        fault degrades the store at once), or None when it was cancelled, ran out of `timeout`
        seconds, or was not needed (degraded, closed, already verified)."""
        from autopatch_tui.core.memory.deep_check import DeepCheck  # only when a check runs

        with self._lock:
            if self._closed or not self.health.healthy or self.verified:
                return None
            check = self._deep = DeepCheck(self.paths.db, lambda: open_verified(self.paths, reader=True), self.memo)
        try:
            verdict = check.run(timeout)
        except UnsafePathError as exc:  # a link planted after the store was checked
            verdict = Verdict(False, exc.cause, str(exc))
        finally:
            with self._lock:
                self._deep = None
        if verdict is None or self._closed:
            return None
        if verdict.healthy:
            self.verified = True
            self._ignore_in_git()
        elif self.health.healthy:
            self.mark_degraded(verdict.diagnostic or "the consistency check failed", verdict.cause or CORRUPT)
        return verdict

    def cancel_verify(self) -> None:
        """Stop a deep check in progress (from any thread): it ends without a verdict."""
        with self._lock:
            check = self._deep
        if check is not None:
            check.cancel()

    def _ignore_in_git(self) -> bool:
        """`.gitignore` written (a store whose verdict is healthy only); False, the store degraded,
        when its path is unsafe."""
        try:
            ensure_gitignore(self.paths)
        except UnsafePathError as exc:
            self.mark_degraded(str(exc), exc.cause)
            return False
        return True

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
        with self._lock:
            self._closed = True
        self.cancel_verify()
        self._drop_connections()
