"""`memory retry JOB_ID`: the only way a failed job's work comes back.

A `failed` job is replaced, in one transaction, by a fresh `pending` job for the same input
(attempts and provider calls start again at zero):
- extraction: the same turn (one extraction job per turn, so the failed row gives way to it);
- consolidation: the same candidates — those the failure suppressed become `pending` again and
  belong to the new job.
The failed row is removed so `memory status` stops listing a failure whose work is queued again."""

from __future__ import annotations

import sqlite3

from autopatch_tui.core.errors import MemoryNotFoundError
from autopatch_tui.core.ids import new_id
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.memory.turns import ensure_writable


class JobNotRetryableError(MemoryNotFoundError):
    """The job exists but is not `failed` (only a failed job can be retried)."""


COPIED = ("kind", "thread_id", "turn_id", "parent_job_id", "sequence")


def retry_job(conn: sqlite3.Connection, job_id: str, *, now: float) -> str:
    """Replace the failed job `job_id` by a fresh pending job for the same input. Returns its ID."""
    with write_txn(conn):
        ensure_writable(conn)
        row = conn.execute("SELECT * FROM memory_jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise MemoryNotFoundError(f"no Memory job {job_id}")
        if row["status"] != "failed":
            raise JobNotRetryableError(f"Memory job {job_id} is {row['status']}, not failed; only a failed job "
                                       "can be retried")
        new = new_id("job")
        if row["kind"] == "extraction":  # one extraction job per turn: the failed row gives way first
            conn.execute("DELETE FROM memory_jobs WHERE id = ?", (job_id,))
        conn.execute(
            "INSERT INTO memory_jobs (id, kind, status, thread_id, turn_id, parent_job_id, sequence, available_at,"
            " created_at, updated_at) VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?)",
            (new, *(row[k] for k in COPIED), now, now, now))
        if row["kind"] == "consolidation":
            conn.execute("UPDATE memory_candidates SET status = CASE WHEN status = 'suppressed' THEN 'pending'"
                         " ELSE status END, consolidation_job_id = ? WHERE consolidation_job_id = ?", (new, job_id))
            conn.execute("DELETE FROM memory_jobs WHERE id = ?", (job_id,))
    return new
