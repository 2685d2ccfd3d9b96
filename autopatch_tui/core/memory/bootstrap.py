"""First start: create a clean schema v4 with its meta singleton and one active thread.

Safe under concurrency: creation happens inside one `BEGIN IMMEDIATE` transaction that re-checks
that the file is still empty, so several processes starting at once converge on one database and
one active thread. An existing non-empty file is never touched here."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from autopatch_tui.core.constants import SCHEMA_VERSION
from autopatch_tui.core.ids import new_id
from autopatch_tui.core.memory.health import Health, inspect_store
from autopatch_tui.core.memory.schema import DDL, read_catalog
from autopatch_tui.core.memory.sqlite import open_readwrite, write_txn
from autopatch_tui.core.paths import ensure_private_dir


@dataclass(frozen=True)
class StoreIdentity:
    """What a store records about itself in `memory_meta` when it is created."""

    store_name: str
    root: str | None = None
    remote: str | None = None


def create_schema(conn: sqlite3.Connection, identity: StoreIdentity, now: float) -> str:
    """Inside an open write transaction: the DDL, the meta row and the first active thread.
    Returns the new thread ID."""
    for stmt in DDL:
        conn.execute(stmt)
    conn.execute(
        "INSERT INTO memory_meta (id, generation, created_at, store_name, root, remote) VALUES (1, 1, ?, ?, ?, ?)",
        (now, identity.store_name, identity.root, identity.remote or None),
    )
    thread_id = new_id("thr")
    conn.execute("INSERT INTO threads (id, status, created_at) VALUES (?, 'active', ?)", (thread_id, now))
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    return thread_id


def _touch_private(path: Path) -> None:
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return
    os.close(fd)


def bootstrap_if_empty(db: Path, identity: StoreIdentity, now: float) -> bool:
    """Create the schema when `db` is missing or empty. Returns True when this call created it."""
    ensure_private_dir(db.parent)
    _touch_private(db)
    conn = open_readwrite(db, create=True)
    created = False
    try:
        with write_txn(conn):
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version == 0 and not read_catalog(conn):
                create_schema(conn, identity, now)
                created = True
    finally:
        conn.close()
    return created


def open_or_create(db: Path, identity: StoreIdentity, now: float) -> Health:
    """Validate `db`; bootstrap it first when it is missing or empty. Never modifies a non-empty
    file that fails validation."""
    health = inspect_store(db)
    if health.empty:
        bootstrap_if_empty(db, identity, now)
        health = inspect_store(db)
    return health
