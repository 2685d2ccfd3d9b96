"""Extraction: a batch of ended turns → a new thread checkpoint and validated candidates.

The checkpoint, the accepted candidates, their derived consolidation job and the jobs' states
commit in one transaction, after the lease is proven."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from dataclasses import dataclass

from autopatch_tui.core.errors import MemoryContractError
from autopatch_tui.core.ids import new_id
from autopatch_tui.core.memory import jobs
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.pipeline.contracts import (
    CandidateOut,
    ExtractionOut,
    validate_reply,
)
from autopatch_tui.core.pipeline.extraction_payload import (
    ExtractionInput,
    fit,
    load_input,
)
from autopatch_tui.core.pipeline.extraction_rules import (
    Verdict,
    job_verdict,
    validate_extraction,
)
from autopatch_tui.core.pipeline.model_io import MemoryModel
from autopatch_tui.core.pipeline.prompts import EXTRACTION_SYSTEM, REPAIR_SUFFIX
from autopatch_tui.core.pipeline.secret_gate import safe_checkpoint

REPAIR_SYSTEM = EXTRACTION_SYSTEM + REPAIR_SUFFIX
VIOLATION_ALLOWANCE_TOKENS = 400  # room kept for the repair's violation list


@dataclass
class ExtractionResult:
    checkpoint: str
    candidates: list[CandidateOut]
    rejected: int


def prepare(conn: sqlite3.Connection, lease: jobs.Lease, model: MemoryModel) -> ExtractionInput | None:
    """Load and fit the payload; None when even the projected primary content does not fit."""
    turn_ids = [r[0] for r in conn.execute(
        f"SELECT turn_id FROM memory_jobs WHERE id IN ({','.join('?' * len(lease.job_ids))})", lease.job_ids
    )]
    inp = load_input(conn, turn_ids)
    ok = fit(inp, model.capacity - VIOLATION_ALLOWANCE_TOKENS, lambda text: model.measure_text(REPAIR_SYSTEM, text))
    return inp if ok else None


def judge(reply: dict, inp: ExtractionInput, *, after_repair: bool) -> tuple[ExtractionOut | None, Verdict | None, str | None]:
    """Validate a parsed reply. Returns (out, verdict, first blocking rule or None)."""
    try:
        out = validate_reply(ExtractionOut, reply)
    except MemoryContractError as exc:
        return None, None, exc.rule
    verdict = validate_extraction(out, inp, after_repair=after_repair)
    blocking = verdict.blocking()
    return out, verdict, blocking[0].rule if blocking else None


def repair_payload(inp: ExtractionInput, verdict: Verdict | None, rule: str) -> dict:
    violations = [v.as_payload() for v in verdict.violations] if verdict and verdict.violations else [
        {"rule": rule, "where": "reply"}]
    return {**inp.payload(), "violations": violations}


def commit(conn: sqlite3.Connection, lease: jobs.Lease, inp: ExtractionInput, out: ExtractionOut, verdict: Verdict,
           *, provider_calls: int, now: float) -> str:
    """Returns the job status written (`succeeded` or `succeeded_no_output`)."""
    max_seq = max(t.sequence for t in inp.batch)
    with write_txn(conn):
        jobs.assert_lease(conn, lease)
        conn.execute(
            "UPDATE threads SET checkpoint = ?, checkpoint_sequence = ? WHERE id = ? AND checkpoint_sequence <= ?",
            (safe_checkpoint(out.thread_checkpoint.strip()), max_seq, inp.thread_id, max_seq),
        )
        if verdict.accepted:
            cjob = new_id("job")
            conn.execute(
                "INSERT INTO memory_jobs (id, kind, status, thread_id, parent_job_id, sequence, available_at,"
                " created_at, updated_at) VALUES (?, 'consolidation', 'pending', ?, ?, ?, ?, ?, ?)",
                (cjob, inp.thread_id, lease.job_ids[0], max_seq, now, now, now),
            )
            for cand in verdict.accepted:
                insert_candidate(conn, cand, job_id=lease.job_ids[0], consolidation_job_id=cjob,
                                 thread_id=inp.thread_id, now=now)
            status, reason = "succeeded", None
        else:
            status = "succeeded_no_output"
            reason = "all_rejected" if out.candidates else "no_candidates"
        jobs.mark_done(conn, lease, status=status, reason=reason, provider_calls=provider_calls, now=now)
        record_refusals(conn, lease, verdict)
    return status


def record_refusals(conn: sqlite3.Connection, lease: jobs.Lease, verdict: Verdict) -> None:
    """Each refusal's rule on the extraction job of the turn its candidate's first batch user source
    belongs to (the batch's first job when it has none), as that job's safe verdict: `rule:count`
    pairs in `failure_rule` with no failure category — no failure, shown in the job diagnostics and
    counted by `memory status` (`refusals.refusal_counts`). A turn's refusals are read from its job.
    Where the gate and the model's own reading disagreed, `d-RULE:count` pairs follow
    (`extraction_rules.job_verdict`, `model_reading.py`)."""
    per_turn, disagreed = verdict.by_turn(), verdict.disagreements_by_turn()
    if not per_turn and not disagreed:
        return
    marks = ",".join("?" * len(lease.job_ids))
    job_of = {turn: job for job, turn in conn.execute(
        f"SELECT id, turn_id FROM memory_jobs WHERE id IN ({marks})", lease.job_ids)}
    per_job: dict[str, tuple[Counter[str], Counter[str]]] = {}
    for which, by_turn in enumerate((per_turn, disagreed)):
        for turn, counts in by_turn.items():
            per_job.setdefault(job_of.get(turn, lease.job_ids[0]), (Counter(), Counter()))[which].update(counts)
    for job, (refused, disagreements) in per_job.items():
        conn.execute("UPDATE memory_jobs SET failure_rule = ? WHERE id = ?", (job_verdict(refused, disagreements), job))


def insert_candidate(conn: sqlite3.Connection, cand: CandidateOut, *, job_id: str | None, consolidation_job_id: str,
                     thread_id: str | None, now: float, origin_store: str | None = None) -> str:
    cid = new_id("cand")
    conn.execute(
        "INSERT INTO memory_candidates (id, job_id, consolidation_job_id, thread_id, status, kind, subject, statement,"
        " content, strength, origin, recall_mode, applies_to_paths, aliases, keywords, origin_store, created_at)"
        " VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (cid, job_id, consolidation_job_id, thread_id, cand.kind, cand.subject, cand.statement, cand.content,
         cand.strength, cand.origin, cand.recall_mode, json.dumps(cand.applies_to_paths, ensure_ascii=False),
         json.dumps(cand.aliases, ensure_ascii=False), json.dumps(cand.keywords, ensure_ascii=False), origin_store,
         now),
    )
    conn.executemany(
        "INSERT INTO candidate_sources (candidate_id, ordinal, turn_id, role, quote) VALUES (?, ?, ?, ?, ?)",
        [(cid, n, s.turn_id, s.role, s.quote) for n, s in enumerate(cand.sources)],
    )
    return cid


def commit_capacity(conn: sqlite3.Connection, lease: jobs.Lease, *, now: float) -> None:
    with write_txn(conn):
        jobs.assert_lease(conn, lease)
        jobs.mark_done(conn, lease, status="succeeded_no_output", reason="capacity", provider_calls=0, now=now)
