"""Every candidate reaches an end state (issue 10 §2) and /new captures the whole watermark (§3).

- A consolidation job that ends `failed` — whatever the cause: a repair call answered HTTP 400,
  two transient primary errors, a non-retryable primary error, a lease that expired after the
  last claim — suppresses its pending candidates in the same transaction; `memory status` counts
  them. Other jobs' candidates are untouched.
- `retry_job` (and `memory retry JOB_ID [--json]`) replaces a failed job by a fresh pending job for
  the same input — the only way the work comes back; a job that is not failed, or unknown, is a
  clear error.
- `/new` processes and counts the old thread's pending consolidation jobs, derived or queued."""

from __future__ import annotations

import pytest

from autopatch_tui.core.errors import MemoryNotFoundError
from autopatch_tui.core.memory.render import render_status
from autopatch_tui.core.memory.sqlite import write_txn
from tests.support.fixtures import FakeClock, is_error_doc
from tests.support.llm_stub import Reply
from tests.support.pipeline_helpers import (
    add_turn,
    cand,
    candidates,
    create_all,
    ext_reply,
    job_of_turn,
    jobs,
    one,
    rows,
    seed_consolidation,
    src,
)

BROKEN = {"operations": [{"operation": "create"}]}  # violates the contract: a repair follows


def _seed(mgr, subject="indentation"):
    return seed_consolidation(mgr, [cand(src("turn-x", "user", "q"), subject=subject),
                                    cand(src("turn-x", "user", "q"), subject=subject + " two")])


def _statuses(mgr, job_id):
    return [c["status"] for c in candidates(mgr) if c["consolidation_job_id"] == job_id]


def test_a_repair_answered_http_400_suppresses_the_candidates_in_the_failing_transaction(make_manager, llm_stub):
    mgr = make_manager()
    job, _ = _seed(mgr)
    other, _ = _seed(mgr, "naming")  # another job's candidates stay pending
    llm_stub.script("consolidation", BROKEN)
    llm_stub.script("consolidation_repair", Reply(status=400))
    outcome = mgr.runner.step(force=True, only={job})
    assert (outcome.status, outcome.category) == ("failed", "bad_request")
    [row] = rows(mgr, "SELECT status, failure_stage FROM memory_jobs WHERE id = ?", (job,))
    assert (row["status"], row["failure_stage"]) == ("failed", "repair")
    assert _statuses(mgr, job) == ["suppressed", "suppressed"]
    assert _statuses(mgr, other) == ["pending", "pending"]
    report = mgr.status()
    assert report.candidates == {"pending": 2, "suppressed": 2}
    assert "candidates: pending 2, suppressed 2" in "\n".join(render_status(report))
    assert "candidates" not in report.model_dump(mode="json")  # the §5 document is unchanged


def test_two_transient_primary_errors_end_failed_with_the_candidates_suppressed(make_manager, llm_stub):
    clock = FakeClock()
    mgr = make_manager(clock=clock)
    job, _ = _seed(mgr)
    llm_stub.script("consolidation", Reply(status=503), Reply(status=503))
    assert mgr.runner.step(force=True).status == "retry_wait"
    assert _statuses(mgr, job) == ["pending", "pending"]  # a retry is still due: nothing is final yet
    clock.advance(60)
    assert mgr.runner.step(force=True).status == "failed"
    assert _statuses(mgr, job) == ["suppressed", "suppressed"]


def test_a_non_retryable_primary_error_suppresses_at_once(make_manager, llm_stub):
    mgr = make_manager()
    job, _ = _seed(mgr)
    llm_stub.script("consolidation", Reply(status=401))
    assert mgr.runner.step(force=True).status == "failed"
    assert _statuses(mgr, job) == ["suppressed", "suppressed"]


def test_a_lease_that_expires_after_the_last_claim_suppresses_too(make_manager, llm_stub):
    clock = FakeClock()
    mgr = make_manager(clock=clock)
    job, _ = _seed(mgr)
    conn = mgr.store.conn()
    with write_txn(conn):  # a dead process held its second claim
        conn.execute("UPDATE memory_jobs SET status = 'leased', lease_owner = 'dead:1:x', attempts = 2,"
                     " lease_expires_at = ? WHERE id = ?", (clock.now() - 1, job))
    assert mgr.runner.step(force=True) is None  # the claim expires it; nothing is left to run
    assert one(mgr, "SELECT status FROM memory_jobs WHERE id = ?", (job,)) == "failed"
    assert _statuses(mgr, job) == ["suppressed", "suppressed"]


# --------------------------------------------------------------------------- retry


def test_retry_of_a_failed_consolidation_requeues_its_candidates_and_can_succeed(make_manager, llm_stub):
    mgr = make_manager()
    job, ids = _seed(mgr)
    llm_stub.script("consolidation", Reply(status=401))
    mgr.runner.step(force=True)
    new_job = mgr.retry_job(job)
    assert new_job != job
    assert rows(mgr, "SELECT id FROM memory_jobs WHERE id = ?", (job,)) == []  # replaced, not duplicated
    [fresh] = rows(mgr, "SELECT * FROM memory_jobs WHERE id = ?", (new_job,))
    assert (fresh["kind"], fresh["status"], fresh["attempts"], fresh["provider_calls"]) == (
        "consolidation", "pending", 0, 0)
    assert sorted(c["id"] for c in candidates(mgr, "pending")) == sorted(ids)
    assert mgr.status().failures == []
    llm_stub.script("consolidation", create_all)
    assert mgr.runner.step(force=True).status == "succeeded"
    assert sorted(i.subject for i in mgr.list_items()) == ["indentation", "indentation two"]


def test_retry_of_a_failed_extraction_runs_the_same_turn_again(make_manager, llm_stub):
    mgr = make_manager()
    t = add_turn(mgr, "From now on always use tabs.", "ok")
    llm_stub.script("extraction", Reply(status=400))
    mgr.runner.step(force=True)
    old = job_of_turn(mgr, t)
    assert old["status"] == "failed"
    new_job = mgr.retry_job(old["id"])
    fresh = job_of_turn(mgr, t)
    assert (fresh["id"], fresh["status"], fresh["attempts"]) == (new_job, "pending", 0)
    llm_stub.script("extraction", ext_reply(cand(src(t, "user", "always use tabs"), subject="indentation")))
    assert mgr.runner.step(force=True).status == "succeeded"


@pytest.mark.parametrize("status", ["pending", "succeeded", "retry_wait"])
def test_only_a_failed_job_can_be_retried(make_manager, status):
    mgr = make_manager()
    job, _ = _seed(mgr)
    conn = mgr.store.conn()
    with write_txn(conn):
        conn.execute("UPDATE memory_jobs SET status = ?, completed_at = CASE WHEN ? = 'succeeded' THEN 1 END"
                     " WHERE id = ?", (status, status, job))
    with pytest.raises(MemoryNotFoundError, match=f"is {status}, not failed"):
        mgr.retry_job(job)
    with pytest.raises(MemoryNotFoundError, match="no Memory job"):
        mgr.retry_job("job-unknown")


def test_memory_retry_cli_json_and_errors(make_manager, llm_stub, invoke_cli):
    mgr = make_manager()
    job, _ = _seed(mgr)
    llm_stub.script("consolidation", Reply(status=401))
    mgr.runner.step(force=True)
    mgr.close()
    rc, out, err = invoke_cli("memory", "retry", job, json=True)
    assert rc == 0, err
    assert set(out) == {"job_id", "new_job_id"} and out["job_id"] == job
    assert one(mgr, "SELECT status FROM memory_jobs WHERE id = ?", (out["new_job_id"],)) == "pending"
    rc, out2, err = invoke_cli("memory", "retry", out["new_job_id"], json=True)
    assert rc == 1 and is_error_doc(out2, 1) and "not failed" in err and "Traceback" not in err
    rc, _, err = invoke_cli("memory", "retry", "job-nope")
    assert rc == 1 and "no Memory job job-nope" in err
    rc, _, err = invoke_cli("memory", "retry")
    assert rc == 2


# --------------------------------------------------------------------------- /new watermark


def test_new_processes_and_counts_an_already_queued_consolidation_of_the_old_thread(make_manager, llm_stub):
    mgr = make_manager()
    llm_stub.default("consolidation", create_all)
    job, _ = _seed(mgr)
    res = mgr.new_thread(timeout=5)
    assert (res.flush.completed, res.flush.pending, res.flush.timed_out) == (1, 0, False)
    assert one(mgr, "SELECT status FROM memory_jobs WHERE id = ?", (job,)) == "succeeded"
    assert len(mgr.list_items()) == 2


def test_new_counts_a_consolidation_derived_before_it_started(make_manager, llm_stub):
    mgr = make_manager()
    llm_stub.default("consolidation", create_all)
    t = add_turn(mgr, "From now on always use tabs.", "ok")
    llm_stub.script("extraction", ext_reply(cand(src(t, "user", "always use tabs"), subject="indentation")))
    assert mgr.runner.step(force=True).kind == "extraction"  # the extraction is done, its consolidation waits
    [cjob] = jobs(mgr, "consolidation")
    assert cjob["status"] == "pending"
    res = mgr.new_thread(timeout=5)
    assert (res.flush.completed, res.flush.pending, res.flush.timed_out) == (1, 0, False)
    assert one(mgr, "SELECT status FROM memory_jobs WHERE id = ?", (cjob["id"],)) == "succeeded"


def test_new_ignores_another_threads_consolidation(make_manager, llm_stub):
    mgr = make_manager()
    old = mgr.active_thread_id()
    mgr.new_thread(timeout=1)
    job, _ = seed_consolidation(mgr, [cand(src("turn-x", "user", "q"))], thread_id=old)  # an archived thread's
    llm_stub.default("consolidation", create_all)
    res = mgr.new_thread(timeout=2)
    assert (res.flush.completed, res.flush.pending) == (0, 0)
    assert one(mgr, "SELECT status FROM memory_jobs WHERE id = ?", (job,)) == "pending"
