"""`memory status` (contracts §5): health, counts and safe failure structure. Never content."""

from __future__ import annotations

import os
import re
import sqlite3

from autopatch_tui.core import constants as C
from autopatch_tui.core.constants import SCHEMA_VERSION
from autopatch_tui.core.memory.models import (
    JobCounts,
    JobFailure,
    StatusReport,
    SummaryState,
)
from autopatch_tui.core.memory.refusals import refusal_counts
from autopatch_tui.core.memory.sqlite import read_txn
from autopatch_tui.core.paths import StorePaths

MAX_LISTED_FAILURES = 50
SAFE_RULE = re.compile(r"[a-z0-9_.:-]{1,64}")  # the schema's CHECK on failure_rule


def failure_from_row(row: sqlite3.Row) -> JobFailure | None:
    """The safe failure structure, or None. Values outside the v4 enums (a foreign or damaged file)
    are never passed through: such a row reports no failure structure at all."""
    category, phase, stage, rule = (row["failure_category"], row["failure_phase"], row["failure_stage"],
                                    row["failure_rule"])
    if category is None:
        return None
    if (category not in C.FAILURE_CATEGORIES or (phase is not None and phase not in C.FAILURE_PHASES)
            or (stage is not None and stage not in C.FAILURE_STAGES)
            or (rule is not None and not SAFE_RULE.fullmatch(str(rule)))
            or row["kind"] not in C.JOB_KINDS or row["status"] not in C.JOB_STATUSES):
        return None
    return JobFailure(
        job_id=row["id"], kind=row["kind"], status=row["status"], category=row["failure_category"],
        phase=row["failure_phase"] or "prepare", stage=row["failure_stage"] or "primary", rule=row["failure_rule"],
        provider_calls=row["provider_calls"], attempts=row["attempts"],
    )


def summary_state(paths: StorePaths, conn: sqlite3.Connection | None, *, force_stale: bool) -> SummaryState:
    path = str(paths.summary)
    if not os.path.exists(paths.summary):  # False, not an error, when the folder is not searchable
        return SummaryState(status="missing", path=path)
    if force_stale or conn is None:
        return SummaryState(status="stale", path=path)
    row = conn.execute("SELECT data_version, summary_version FROM memory_meta WHERE id = 1").fetchone()
    current = row is not None and row["summary_version"] == row["data_version"]
    return SummaryState(status="current" if current else "stale", path=path)


def healthy_status(conn: sqlite3.Connection, paths: StorePaths, *, summary_stale: bool) -> StatusReport:
    with read_txn(conn):
        meta = conn.execute("SELECT generation FROM memory_meta WHERE id = 1").fetchone()
        active = conn.execute("SELECT id FROM threads WHERE status = 'active'").fetchall()
        threads = conn.execute("SELECT count(*) FROM threads").fetchone()[0]
        turns = conn.execute("SELECT count(*) FROM turns").fetchone()[0]
        items = conn.execute("SELECT count(*) FROM memory_items WHERE status = 'active'").fetchone()[0]
        counts = {r[0]: r[1] for r in conn.execute("SELECT status, count(*) FROM memory_jobs GROUP BY status")}
        failed_where = "status IN ('failed', 'retry_wait') AND failure_category IS NOT NULL"
        rows = conn.execute(
            f"SELECT * FROM memory_jobs WHERE {failed_where} ORDER BY updated_at DESC LIMIT ?", (MAX_LISTED_FAILURES,)
        ).fetchall()
        failures_total = conn.execute(f"SELECT count(*) FROM memory_jobs WHERE {failed_where}").fetchone()[0]
        candidates = {r[0]: r[1] for r in conn.execute(
            "SELECT status, count(*) FROM memory_candidates WHERE status IN ('pending', 'suppressed') GROUP BY status")}
        summary = summary_state(paths, conn, force_stale=summary_stale)
        refusals = refusal_counts(conn)
    failures = [f for f in (failure_from_row(r) for r in rows) if f is not None]
    return StatusReport(
        state="healthy", db_path=str(paths.db), schema_version=SCHEMA_VERSION,
        supported_schema_version=SCHEMA_VERSION, diagnostic=None,
        generation=meta["generation"] if meta else 0,
        active_thread_id=active[0]["id"] if len(active) == 1 else None,
        threads=threads, turns=turns, active_items=items, jobs=JobCounts(**counts), failures=failures,
        failures_total=max(failures_total, len(failures)), summary=summary,
        candidates={s: candidates.get(s, 0) for s in ("pending", "suppressed")}, refusals=refusals,
    )


def degraded_status(paths: StorePaths, schema_version: int, diagnostic: str, *,
                    cause: str | None = None) -> StatusReport:
    return StatusReport(
        state="degraded", db_path=str(paths.db), schema_version=schema_version,
        supported_schema_version=SCHEMA_VERSION, diagnostic=diagnostic, cause=cause, generation=0,
        active_thread_id=None,
        threads=0, turns=0, active_items=0, jobs=JobCounts(), failures=[],
        summary=summary_state(paths, None, force_stale=True),
    )


def missing_status(paths: StorePaths) -> StatusReport:
    """No store at `paths` (nothing was created): healthy and empty — schema_version 0 (no file),
    no active thread, every count 0."""
    return StatusReport(
        state="healthy", db_path=str(paths.db), schema_version=0, supported_schema_version=SCHEMA_VERSION,
        diagnostic=None, cause=None, generation=0, active_thread_id=None, threads=0, turns=0, active_items=0,
        jobs=JobCounts(), failures=[], summary=summary_state(paths, None, force_stale=True),
    )
