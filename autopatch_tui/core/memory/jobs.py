"""Memory jobs: claims, leases, heartbeats, fencing and the retry rule.

States: pending → leased → succeeded | succeeded_no_output | retry_wait | failed. A claim bumps
`attempts`; a retryable failure after the first claim goes to `retry_wait` once, anything after the
second claim is terminal. Every write of a result first proves the lease (owner, status and clear
generation) inside the same transaction, so a fenced worker can never commit."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from autopatch_tui.core import constants as C
from autopatch_tui.core.errors import MemoryFencedError
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.memory.turns import ensure_writable

OPEN_STATUSES = ("pending", "leased", "retry_wait")


@dataclass(frozen=True)
class Lease:
    kind: str
    job_ids: tuple[str, ...]
    owner: str
    generation: int
    thread_id: str | None
    attempts: int  # after this claim
    provider_calls: int  # before this claim


@dataclass(frozen=True)
class Failure:
    """Safe structure of a failure (contracts §5/§6)."""

    category: str
    phase: str
    stage: str = "primary"
    rule: str | None = None

    def __post_init__(self) -> None:
        if self.category not in C.FAILURE_CATEGORIES:
            raise ValueError(f"unknown failure category {self.category!r}")
        if self.phase not in C.FAILURE_PHASES or self.stage not in C.FAILURE_STAGES:
            raise ValueError("unknown failure phase or stage")


def _placeholders(n: int) -> str:
    return ",".join("?" * n)


def suppress_failed_candidates(conn: sqlite3.Connection, job_ids: Collection[str]) -> int:
    """Inside the write txn that makes consolidation jobs `failed`: their pending candidates end
    `suppressed` at once (the job's safe failure structure is their reason), so none waits forever.
    `retry_job` is the only way their work comes back."""
    if not job_ids:
        return 0
    return conn.execute(
        f"UPDATE memory_candidates SET status = 'suppressed' WHERE status = 'pending' AND consolidation_job_id IN"
        f" (SELECT id FROM memory_jobs WHERE kind = 'consolidation' AND status = 'failed'"
        f" AND id IN ({_placeholders(len(job_ids))}))", tuple(job_ids)).rowcount


def expire_leases(conn: sqlite3.Connection, now: float) -> None:
    """Inside a write txn: leases whose holder stopped heart-beating (process died) become
    claimable once more (`retry_wait`, due now), or terminal `failed` after the last claim."""
    dying = [r[0] for r in conn.execute(
        "SELECT id FROM memory_jobs WHERE kind = 'consolidation' AND status = 'leased' AND lease_expires_at < ?"
        " AND attempts >= ?", (now, C.MAX_CLAIMS))]
    conn.execute(
        "UPDATE memory_jobs SET status = 'failed', completed_at = ?, updated_at = ?, lease_owner = NULL,"
        " lease_expires_at = NULL, failure_category = 'timeout', failure_phase = 'provider',"
        " failure_stage = 'primary', failure_rule = 'lease_expired'"
        " WHERE kind IN ('extraction', 'consolidation') AND status = 'leased' AND lease_expires_at < ?"
        " AND attempts >= ?",
        (now, now, now, C.MAX_CLAIMS),
    )
    suppress_failed_candidates(conn, dying)
    conn.execute(
        "UPDATE memory_jobs SET status = 'retry_wait', available_at = ?, updated_at = ?, lease_owner = NULL,"
        " lease_expires_at = NULL, failure_category = 'timeout', failure_phase = 'provider',"
        " failure_stage = 'primary', failure_rule = 'lease_expired'"
        " WHERE kind IN ('extraction', 'consolidation') AND status = 'leased' AND lease_expires_at < ?",
        (now, now, now),
    )


def _take(conn: sqlite3.Connection, rows: list[sqlite3.Row], *, owner: str, generation: int, now: float,
          lease_seconds: float) -> Lease:
    ids = tuple(r["id"] for r in rows)
    conn.execute(
        f"UPDATE memory_jobs SET status = 'leased', lease_owner = ?, lease_expires_at = ?, lease_generation = ?,"
        f" attempts = attempts + 1, updated_at = ? WHERE id IN ({_placeholders(len(ids))})",
        (owner, now + lease_seconds, generation, now, *ids),
    )
    first = rows[0]
    return Lease(first["kind"], ids, owner, generation, first["thread_id"], first["attempts"] + 1,
                 first["provider_calls"])


def _eligible_clause() -> str:
    # `status IN (…)` lets SQLite use the (kind, status, …) index instead of scanning the job history
    return "status IN ('pending', 'retry_wait') AND (status = 'pending' OR available_at <= ?)"


def _claim_consolidation(conn: sqlite3.Connection, now: float, only: Collection[str] | None) -> list[sqlite3.Row]:
    busy = conn.execute(
        "SELECT 1 FROM memory_jobs WHERE kind = 'consolidation' AND status = 'leased' LIMIT 1"
    ).fetchone()
    if busy:  # consolidation is serialized across every manager and process
        return []
    rows = conn.execute(
        f"SELECT * FROM memory_jobs WHERE kind = 'consolidation' AND {_eligible_clause()} ORDER BY rowid",
        (now,),
    ).fetchall()
    rows = [r for r in rows if only is None or r["id"] in only]
    return rows[:1]


def _claim_extraction(conn: sqlite3.Connection, now: float, *, max_wait: float, force: bool,
                      only: Collection[str] | None) -> list[sqlite3.Row]:
    threads = conn.execute(
        f"SELECT thread_id, count(*) AS n, min(created_at) AS oldest FROM memory_jobs"
        f" WHERE kind = 'extraction' AND {_eligible_clause()} GROUP BY thread_id ORDER BY oldest",
        (now,),
    ).fetchall()
    for t in threads:
        if conn.execute(
            "SELECT 1 FROM memory_jobs WHERE kind = 'extraction' AND status = 'leased' AND thread_id = ? LIMIT 1",
            (t["thread_id"],),
        ).fetchone():
            continue  # one batch per thread at a time; later turns are scheduled after it
        due = force or t["n"] >= C.EXTRACTION_MIN_PENDING_TURNS or t["oldest"] <= now - max_wait
        if not due:
            continue
        rows = conn.execute(
            f"SELECT * FROM memory_jobs WHERE kind = 'extraction' AND thread_id = ? AND {_eligible_clause()}"
            f" ORDER BY sequence LIMIT ?",
            (t["thread_id"], now, C.EXTRACTION_MAX_BATCH * 4),
        ).fetchall()
        if only is not None:
            rows = [r for r in rows if r["id"] in only]
        if not rows:
            continue
        first = rows[0]
        batch = []
        for r in rows:  # counters must agree across the batch
            if (r["attempts"], r["provider_calls"]) != (first["attempts"], first["provider_calls"]):
                break
            batch.append(r)
            if len(batch) == C.EXTRACTION_MAX_BATCH:
                break
        return batch
    return []


def claim_next(conn: sqlite3.Connection, *, owner: str, now: float, lease_seconds: float, max_wait: float,
               force: bool = False, only: Collection[str] | None = None) -> Lease | None:
    """Claim the next unit of work: the oldest consolidation job when none is running, else an
    extraction batch (≤ 4 jobs of one thread in sequence order). `force` ignores the scheduling rule
    (flushes); `only` restricts the claim to those job IDs (watermark flush)."""
    with write_txn(conn):
        meta = ensure_writable(conn)
        expire_leases(conn, now)
        rows = _claim_consolidation(conn, now, only)
        if not rows:
            rows = _claim_extraction(conn, now, max_wait=max_wait, force=force, only=only)
        if not rows:
            return None
        return _take(conn, rows, owner=owner, generation=meta["generation"], now=now, lease_seconds=lease_seconds)


def assert_lease(conn: sqlite3.Connection, lease: Lease) -> None:
    """Inside a write txn: raise MemoryFencedError unless `lease` still holds every job."""
    meta = ensure_writable(conn)
    if meta["generation"] != lease.generation:
        raise MemoryFencedError("Memory was cleared since the job was claimed")
    n = conn.execute(
        f"SELECT count(*) FROM memory_jobs WHERE id IN ({_placeholders(len(lease.job_ids))})"
        f" AND status = 'leased' AND lease_owner = ?",
        (*lease.job_ids, lease.owner),
    ).fetchone()[0]
    if n != len(lease.job_ids):
        raise MemoryFencedError("the job lease was lost")


def heartbeat(conn: sqlite3.Connection, lease: Lease, *, now: float, lease_seconds: float) -> bool:
    """Renew the job lease and the owner's open turns. False when the lease is fenced."""
    try:
        with write_txn(conn):
            assert_lease(conn, lease)
            conn.execute(
                f"UPDATE memory_jobs SET lease_expires_at = ? WHERE id IN ({_placeholders(len(lease.job_ids))})",
                (now + lease_seconds, *lease.job_ids),
            )
            conn.execute(
                "UPDATE turns SET lease_expires_at = ? WHERE state = 'open' AND owner = ?",
                (now + lease_seconds, lease.owner),
            )
    except MemoryFencedError:
        return False
    return True


def mark_done(conn: sqlite3.Connection, lease: Lease, *, status: str, provider_calls: int, now: float,
              reason: str | None = None, job_ids: Iterable[str] | None = None) -> None:
    """Inside a write txn that already ran `assert_lease`: terminal success for the lease's jobs."""
    if status not in ("succeeded", "succeeded_no_output"):
        raise ValueError(status)
    ids = tuple(job_ids) if job_ids is not None else lease.job_ids
    conn.execute(
        f"UPDATE memory_jobs SET status = ?, completed_at = ?, updated_at = ?, lease_owner = NULL,"
        f" lease_expires_at = NULL, provider_calls = provider_calls + ?, no_output_reason = ?,"
        f" failure_category = NULL, failure_phase = NULL, failure_stage = NULL, failure_rule = NULL"
        f" WHERE id IN ({_placeholders(len(ids))})",
        (status, now, now, provider_calls, reason if status == "succeeded_no_output" else None, *ids),
    )


def record_failure(conn: sqlite3.Connection, lease: Lease, failure: Failure, *, provider_calls: int, now: float,
                   retry_delay: float, suppress_candidates: bool = False) -> str | None:
    """Store a failure with its safe diagnostic. Returns the new status (`retry_wait` or
    `failed`), or None when the lease was fenced and nothing was written."""
    retry = failure.category in C.RETRYABLE_CATEGORIES and failure.stage == "primary" and lease.attempts < C.MAX_CLAIMS
    status = "retry_wait" if retry else "failed"
    try:
        with write_txn(conn):
            assert_lease(conn, lease)
            conn.execute(
                f"UPDATE memory_jobs SET status = ?, available_at = ?, completed_at = ?, updated_at = ?,"
                f" lease_owner = NULL, lease_expires_at = NULL, provider_calls = provider_calls + ?,"
                f" failure_category = ?, failure_phase = ?, failure_stage = ?, failure_rule = ?"
                f" WHERE id IN ({_placeholders(len(lease.job_ids))})",
                (status, now + retry_delay, None if retry else now, now, provider_calls, failure.category,
                 failure.phase, failure.stage, failure.rule, *lease.job_ids),
            )
            if not retry and (suppress_candidates or lease.kind == "consolidation"):
                suppress_failed_candidates(conn, lease.job_ids)
    except MemoryFencedError:
        return None
    return status


def any_open_job(conn: sqlite3.Connection) -> bool:
    """Whether any job is pending, leased or waiting to retry (the background worker builds the
    pipeline only then). One lookup per kind on the queue index, whatever the job history's size."""
    return conn.execute(
        "SELECT 1 FROM memory_jobs WHERE kind IN ('extraction', 'consolidation')"
        " AND status IN ('pending', 'leased', 'retry_wait') LIMIT 1"
    ).fetchone() is not None


def job_counts(conn: sqlite3.Connection) -> dict[str, int]:
    counts = {s: 0 for s in C.JOB_STATUSES}
    for status, n in conn.execute("SELECT status, count(*) FROM memory_jobs GROUP BY status"):
        counts[status] = n
    return counts


def open_jobs_of_thread(conn: sqlite3.Connection, thread_id: str) -> list[str]:
    """The `/new` watermark: the thread's open extraction jobs and its open consolidation jobs
    (already derived from an earlier extraction, or queued for the thread), extraction first."""
    return [r[0] for r in conn.execute(
        "SELECT id FROM memory_jobs WHERE thread_id = ? AND kind IN ('extraction', 'consolidation') AND status IN"
        " ('pending', 'leased', 'retry_wait') ORDER BY kind DESC, sequence, rowid", (thread_id,)
    )]


def release_leases(conn: sqlite3.Connection, owner: str, *, now: float) -> int:
    """A closing owner hands back the jobs it holds: each returns to the state it was claimed from
    (`pending`, or a due `retry_wait`) and the claim is undone, so an abandoned call does not spend
    one of the job's claims through a lease expiry. Returns how many jobs were released."""
    with write_txn(conn):
        ensure_writable(conn)  # a retired store is never written (its holder has the jobs)
        return conn.execute(
            "UPDATE memory_jobs SET status = CASE WHEN attempts <= 1 THEN 'pending' ELSE 'retry_wait' END,"
            " attempts = max(attempts - 1, 0), available_at = ?, updated_at = ?, lease_owner = NULL,"
            " lease_expires_at = NULL WHERE status = 'leased' AND lease_owner = ?", (now, now, owner)).rowcount


def derived_open_jobs(conn: sqlite3.Connection, parents: Collection[str]) -> list[str]:
    """Open consolidation jobs derived from any of `parents` (the watermark flush follows them)."""
    if not parents:
        return []
    return [r[0] for r in conn.execute(
        f"SELECT id FROM memory_jobs WHERE kind = 'consolidation' AND status IN ('pending', 'leased', 'retry_wait')"
        f" AND parent_job_id IN ({_placeholders(len(parents))})", tuple(parents)
    )]


def derived_jobs(conn: sqlite3.Connection, parents: Collection[str]) -> set[str]:
    """Every consolidation job derived from any of `parents`, in any status."""
    if not parents:
        return set()
    return {r[0] for r in conn.execute(
        f"SELECT id FROM memory_jobs WHERE kind = 'consolidation' AND parent_job_id IN ({_placeholders(len(parents))})",
        tuple(parents),
    )}


def job_statuses(conn: sqlite3.Connection, job_ids: Collection[str]) -> dict[str, sqlite3.Row]:
    if not job_ids:
        return {}
    rows = conn.execute(
        f"SELECT id, status, available_at, lease_expires_at FROM memory_jobs WHERE id IN ({_placeholders(len(job_ids))})",
        tuple(job_ids),
    ).fetchall()
    return {r["id"]: r for r in rows}
