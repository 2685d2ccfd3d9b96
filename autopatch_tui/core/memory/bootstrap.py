"""First start: create a clean schema v4 with its meta singleton and one active thread.

Safe under concurrency: creation happens inside one `BEGIN IMMEDIATE` transaction that re-checks
that the file is still empty, so several processes starting at once converge on one database and
one active thread. An existing non-empty file is never touched here, and nothing is created when
`store_files.preflight` finds a link, an odd file or a permission problem, or when the folder cannot
be written (cause `read_only`)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from autopatch_tui.core.constants import SCHEMA_VERSION
from autopatch_tui.core.errors import UnsafePathError
from autopatch_tui.core.ids import new_id
from autopatch_tui.core.memory.health import READ_ONLY, Health, inspect_store
from autopatch_tui.core.memory.schema import DDL, read_catalog
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.memory.store_files import ensure_gitignore, open_verified, preflight, write_problem
from autopatch_tui.core.paths import StorePaths, create_private_file


@dataclass(frozen=True)
class StoreIdentity:
    """What a store records about itself in `memory_meta` when it is created."""

    store_name: str
    root: str | None = None
    remote: str | None = None


def create_schema(conn: sqlite3.Connection, identity: StoreIdentity, now: float) -> str:
    """Inside an open write transaction: the DDL, the meta rows and the first active thread.
    Returns the new thread ID."""
    for stmt in DDL:
        conn.execute(stmt)
    conn.execute(
        "INSERT INTO memory_meta (id, generation, created_at, store_name, root, remote) VALUES (1, 1, ?, ?, ?, ?)",
        (now, identity.store_name, identity.root, identity.remote or None),
    )
    conn.execute("INSERT INTO recall_meta (id, last_term_id) VALUES (1, 0)")  # the recall index's ID counter
    thread_id = new_id("thr")
    conn.execute("INSERT INTO threads (id, status, created_at) VALUES (?, 'active', ?)", (thread_id, now))
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    return thread_id


def bootstrap_if_empty(db: Path, identity: StoreIdentity, now: float) -> bool:
    """Create the schema when `db` is missing or empty. Returns True when this call created it.
    The folder (0700), `.gitignore` and the file (0600) are created without following links."""
    paths = StorePaths.for_db(db)
    create_private_file(paths.repo, db)
    ensure_gitignore(paths)
    conn = open_verified(paths)
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
    file, and never creates anything beside it (that is the caller's, after the deep check where
    it is due)."""
    paths = StorePaths.for_db(db)
    health = preflight(paths) or inspect_store(db)
    if health.empty:
        problem = write_problem(paths)
        if problem:
            return Health(False, 0, problem, cause=READ_ONLY)
        try:
            bootstrap_if_empty(db, identity, now)
        except UnsafePathError as exc:  # a link or a permission change since the preflight
            return Health(False, 0, str(exc), cause=exc.cause)
        health = preflight(paths) or inspect_store(db)
    if health.healthy:
        problem = write_problem(paths)
        if problem:
            return Health(False, health.schema_version, problem, cause=READ_ONLY, readable=True)
    return health  # `.gitignore` of an existing store: `MemoryStore.reload`, once the checks that see damage passed
