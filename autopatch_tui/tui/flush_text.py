"""What `/new` says about the old thread's Memory flush: how its jobs ended — done, failed, to be
retried, still pending — not just how many were processed (a failed job is not "done")."""

from __future__ import annotations

from collections import Counter

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import jobs


def open_jobs(mgr: MemoryManager) -> set[str]:
    """The active thread's open extraction jobs, which `/new` is about to flush."""
    conn = mgr.store.conn()
    return set(jobs.open_jobs_of_thread(conn, mgr.active_thread_id()))


def outcomes(mgr: MemoryManager, captured: set[str]) -> Counter[str]:
    """The status of each captured job and of the consolidation derived from it."""
    conn = mgr.store.conn()
    ids = captured | jobs.derived_jobs(conn, captured)
    return Counter(row["status"] for row in jobs.job_statuses(conn, ids).values())


def flush_report(counts: Counter[str], pending: int) -> str:
    done = counts["succeeded"] + counts["succeeded_no_output"]
    text = f"{done} job(s) done"
    if counts["failed"]:
        text += f", {counts['failed']} failed (see Jobs, F5)"
    if counts["retry_wait"]:
        text += f", {counts['retry_wait']} to retry"
    return text + f", {pending} pending."
