"""The job table for diagnostics: counts per state and the newest jobs, safe structure only.

Contracts §6: a job row carries its kind, state, counters, times and the safe failure structure
(category, phase, stage, rule) or no-output reason — never a prompt, a reply, a quote or a provider
body. The SELECT names its columns, so nothing else can leak in. Reads only.

`read_job_table(db_path)` / `read_job_counts(db_path)` open a short-lived read-only connection and
close it again: the UI polls them from worker threads without holding one connection per thread."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from autopatch_tui.core import constants as C
from autopatch_tui.core.memory.refusals import refusal_counts
from autopatch_tui.core.memory.sqlite import open_readonly, read_txn

MAX_ROWS = 500
OPEN_STATES = ("pending", "leased", "retry_wait")
SAFE_COLUMNS = (
    "id", "kind", "status", "attempts", "provider_calls", "created_at", "completed_at",
    "failure_category", "failure_phase", "failure_stage", "failure_rule", "no_output_reason",
)


@dataclass(frozen=True)
class JobRow:
    id: str
    kind: str
    status: str
    attempts: int
    provider_calls: int
    created_at: float
    completed_at: float | None
    category: str | None
    phase: str | None
    stage: str | None
    rule: str | None
    no_output_reason: str | None


@dataclass(frozen=True)
class JobTable:
    counts: Mapping[str, int]  # every status of C.JOB_STATUSES, zero when absent
    rows: tuple[JobRow, ...]  # newest first, at most `limit`
    total: int  # every job in the store
    refusals: Mapping[str, int] = field(default_factory=dict)  # candidates the gate refused, by rule

    @property
    def open_jobs(self) -> int:
        return sum(self.counts.get(s, 0) for s in OPEN_STATES)


def job_counts(conn: sqlite3.Connection) -> dict[str, int]:
    counts = {s: 0 for s in C.JOB_STATUSES}
    for status, n in conn.execute("SELECT status, count(*) FROM memory_jobs GROUP BY status"):
        counts[status] = n
    return counts


def job_rows(conn: sqlite3.Connection, *, limit: int = MAX_ROWS) -> list[JobRow]:
    rows = conn.execute(
        f"SELECT {', '.join(SAFE_COLUMNS)} FROM memory_jobs ORDER BY created_at DESC, rowid DESC LIMIT ?",
        (max(0, min(limit, MAX_ROWS)),),
    ).fetchall()
    return [JobRow(*tuple(r)) for r in rows]


def job_table(conn: sqlite3.Connection, *, limit: int = MAX_ROWS) -> JobTable:
    """Counts and the newest rows from one consistent snapshot."""
    with read_txn(conn):
        counts = job_counts(conn)
        rows = job_rows(conn, limit=limit)
        refused = refusal_counts(conn)
    return JobTable(counts=counts, rows=tuple(rows), total=sum(counts.values()), refusals=refused)


def read_job_table(db_path: Path, *, limit: int = MAX_ROWS) -> JobTable:
    conn = open_readonly(db_path)
    try:
        return job_table(conn, limit=limit)
    finally:
        conn.close()


def read_job_counts(db_path: Path) -> dict[str, int]:
    conn = open_readonly(db_path)
    try:
        return job_counts(conn)
    finally:
        conn.close()
