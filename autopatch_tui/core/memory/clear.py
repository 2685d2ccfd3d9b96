"""`memory clear --confirm`: fence old workers (generation bump) and delete all Memory data,
leaving one new empty active thread. On a degraded store: delete exactly the database file and its
side files and create a clean v4 database, never reading or patching the old schema. A symlink or a
non-file (a folder named memory.db) on the way is moved aside, never deleted or followed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from autopatch_tui.core.errors import ReadOnlyPathError
from autopatch_tui.core.ids import new_id
from autopatch_tui.core.memory.items import bump_data_version
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.memory.store_files import move_aside_odd_files
from autopatch_tui.core.paths import StorePaths

DATA_TABLES = (  # children first (the recall dictionary goes too; its ID counter does not)
    "recall_postings", "recall_item_postings", "recall_dict", "item_candidates", "memory_items",
    "candidate_sources", "memory_candidates", "memory_jobs", "turns", "threads",
)


def clear_healthy(conn: sqlite3.Connection, *, now: float) -> str:
    """Returns the new active thread ID."""
    # the recall index's code: only when clearing
    from autopatch_tui.core.recall import layout_upgrade

    thread_id = new_id("thr")
    with write_txn(conn):
        counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("threads", "turns", "memory_items")}
        conn.execute("UPDATE memory_meta SET generation = generation + 1 WHERE id = 1")
        # memory_jobs references itself; drop the links first so the delete order cannot matter
        conn.execute("UPDATE memory_jobs SET parent_job_id = NULL")
        layout_upgrade.clear_index(conn)  # an index in its first layout (or being rebuilt) goes first
        for table in DATA_TABLES:
            conn.execute(f"DELETE FROM {table}")
        conn.execute("INSERT INTO threads (id, status, created_at) VALUES (?, 'active', ?)", (thread_id, now))
        conn.execute(
            "INSERT INTO audit_events (at, event, detail) VALUES (?, 'memory_cleared', ?)",
            (now, json.dumps({"threads": counts["threads"], "turns": counts["turns"], "items": counts["memory_items"]})),
        )
        bump_data_version(conn)
    return thread_id


def delete_database_files(paths: StorePaths) -> list[str]:
    """Remove memory.db, -wal, -shm (and a stale -journal, which SQLite would otherwise replay into
    the new file). Returns the names removed. Exports and the legacy memory.json are untouched."""
    removed = []
    for artifact in paths.db_artifacts():
        try:
            artifact.unlink()
        except FileNotFoundError:
            continue
        except PermissionError as exc:
            raise ReadOnlyPathError(f"cannot delete {artifact}: no write permission on {artifact.parent}",
                                    artifact) from exc
        removed.append(artifact.name)
    return removed


def recover_files(paths: StorePaths, now: float) -> list[Path]:
    """Make way for a clean store: links and non-files are moved aside (returned), then the
    regular database files are deleted."""
    moved = move_aside_odd_files(paths, now)
    delete_database_files(paths)
    return moved
