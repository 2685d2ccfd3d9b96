"""One repair, durable retry and terminal failure (spec: output contract 一次 repair; worker 瞬时失败恢复;
退出处理进入 retry / 终态失败)."""

from __future__ import annotations

import pytest

from autopatch_tui.core.pipeline import extraction as extraction_mod
from tests.support.fixtures import FakeClock, raw_connect
from tests.support.llm_stub import Reply
from tests.support.pipeline_helpers import (
    add_turn,
    cand,
    candidates,
    checkpoint,
    ext_reply,
    job_of_turn,
    jobs,
    payload_of,
    seed_consolidation,
    src,
)

GOOD_USER = "From now on always use tabs."


def _good(t):
    return ext_reply(cand(src(t, "user", "always use tabs"), subject="indentation"), checkpoint="CP repaired")


MALFORMED = {
    "prose": "Sure! Here is the JSON you asked for.",
    "prose_around_json": 'Here you go: {"thread_checkpoint": "cp", "candidates": []}',
    "array": '[{"thread_checkpoint": "cp", "candidates": []}]',
    "bad_enum": {"thread_checkpoint": "cp", "candidates": [{**cand(src("x", "user", "q")), "kind": "fact"}]},
    "extra_key": {"thread_checkpoint": "cp", "candidates": [], "confidence": 0.9},
    "missing_key": {"candidates": []},
    "wrong_type": {"thread_checkpoint": "cp", "candidates": {"kind": "user_preference"}},
    "empty_checkpoint": {"thread_checkpoint": "   ", "candidates": []},
    "two_objects": '{"thread_checkpoint": "a", "candidates": []} {"thread_checkpoint": "b", "candidates": []}',
    "empty": "",
}


@pytest.mark.parametrize("shape", sorted(MALFORMED))
def test_malformed_primary_gets_exactly_one_repair_and_a_valid_repair_commits(make_manager, llm_stub, shape):
    mgr = make_manager()
    t = add_turn(mgr, GOOD_USER, "ok")
    llm_stub.script("extraction", MALFORMED[shape])
    llm_stub.script("extraction_repair", _good(t))
    outcome = mgr.runner.step(force=True)
    assert outcome.status == "succeeded"
    assert len(llm_stub.requests_for("extraction")) == 1
    [req] = llm_stub.requests_for("extraction_repair")
    primary = payload_of(llm_stub.requests_for("extraction")[0])
    repair = payload_of(req)
    assert {k: v for k, v in repair.items() if k != "violations"} == primary  # the primary input again
    assert repair["violations"] and all(set(v) == {"rule", "where"} for v in repair["violations"])
    body = str(repair["violations"])
    assert "Sure!" not in body and "fact" not in body and "0.9" not in body  # never the reply itself
    job = job_of_turn(mgr, t)
    assert (job["status"], job["provider_calls"], job["attempts"]) == ("succeeded", 2, 1)
    assert checkpoint(mgr, t.thread_id) == ("CP repaired", 1)
    assert len(candidates(mgr)) == 1


def test_fenced_json_reply_is_tolerated_without_repair(make_manager, llm_stub):
    mgr = make_manager()
    t = add_turn(mgr, GOOD_USER, "ok")
    import json
    llm_stub.script("extraction", "```json\n" + json.dumps(_good(t)) + "\n```")
    assert mgr.runner.step(force=True).status == "succeeded"
    assert llm_stub.requests_for("extraction_repair") == []


def test_invalid_repair_fails_without_advancing_checkpoint_or_candidates(make_manager, llm_stub):
    mgr = make_manager()
    llm_stub.script("extraction", ext_reply(checkpoint="CP before"))
    add_turn(mgr, "warm up", "ok")
    mgr.runner.step(force=True)
    t = add_turn(mgr, GOOD_USER, "ok")
    # the primary has a valid candidate next to a broken one: nothing of it may commit
    llm_stub.script("extraction", ext_reply(cand(src(t, "user", "always use tabs")),
                                            cand(src(t, "user", "not in the text")), checkpoint="CP primary"))
    llm_stub.script("extraction_repair", {"thread_checkpoint": "CP repair", "candidates": "none"})
    outcome = mgr.runner.step(force=True)
    assert outcome.status == "failed" and outcome.category == "contract_violation" and outcome.rule == "schema"
    job = job_of_turn(mgr, t)
    assert (job["status"], job["failure_category"], job["failure_phase"], job["failure_stage"], job["failure_rule"]) \
        == ("failed", "contract_violation", "validate", "repair", "schema")
    assert job["completed_at"] is not None and job["provider_calls"] == 2
    assert checkpoint(mgr, t.thread_id) == ("CP before", 1)
    assert candidates(mgr) == [] and jobs(mgr, "consolidation") == []
    [failure] = [f for f in mgr.status().failures if f.job_id == job["id"]]
    assert (failure.category, failure.phase, failure.stage, failure.rule, failure.provider_calls, failure.attempts) \
        == ("contract_violation", "validate", "repair", "schema", 2, 1)
    assert len(llm_stub.requests_for("extraction_repair")) == 1
    # terminal: never claimed again
    assert mgr.process_pending().failed == 0 and len(llm_stub.requests_for("extraction")) == 2


def test_repair_reply_violating_a_payload_rule_fails_with_that_rule(make_manager, llm_stub):
    mgr = make_manager()
    t = add_turn(mgr, GOOD_USER, "ok")
    bad = ext_reply(cand(src(t, "user", "always use spaces")))
    llm_stub.script("extraction", bad)
    llm_stub.script("extraction_repair", bad)
    outcome = mgr.runner.step(force=True)
    assert (outcome.status, outcome.rule) == ("failed", "quote_not_found")
    assert job_of_turn(mgr, t)["failure_stage"] == "repair"


def test_repair_provider_error_is_terminal(make_manager, llm_stub):
    mgr = make_manager()
    t = add_turn(mgr, GOOD_USER, "ok")
    llm_stub.script("extraction", "not json")
    llm_stub.script("extraction_repair", Reply(status=503))
    outcome = mgr.runner.step(force=True)
    assert outcome.status == "failed"
    job = job_of_turn(mgr, t)
    assert (job["failure_category"], job["failure_phase"], job["failure_stage"]) == (
        "transient_provider", "provider", "repair")


def test_policy_rejections_do_not_trigger_a_repair(make_manager, llm_stub):
    mgr = make_manager()
    t = add_turn(mgr, "thanks", "We decided to always use Redis.")
    llm_stub.script("extraction", ext_reply(cand(src(t, "assistant", "We decided to always use Redis."),
                                                 kind="project_decision")))
    assert mgr.runner.step(force=True).status == "succeeded_no_output"
    assert llm_stub.requests_for("extraction_repair") == []


# --------------------------------------------------------------------------- consolidation repair


def test_consolidation_repair_failure_suppresses_its_candidates(make_manager, llm_stub):
    mgr = make_manager()
    t = add_turn(mgr, GOOD_USER, "ok")
    llm_stub.script("extraction", _good(t))
    mgr.runner.step(force=True)
    llm_stub.script("consolidation", {"operations": [{"operation": "create"}]})
    llm_stub.script("consolidation_repair", "still not an operation list")
    outcome = mgr.runner.step(force=True)
    assert outcome.kind == "consolidation" and outcome.status == "failed"
    [job] = jobs(mgr, "consolidation")
    assert (job["status"], job["failure_category"], job["failure_stage"], job["failure_rule"]) == (
        "failed", "contract_violation", "repair", "json_object")
    assert job["provider_calls"] == 2
    assert [c["status"] for c in candidates(mgr)] == ["suppressed"]
    assert mgr.list_items() == []
    assert len(llm_stub.requests_for("consolidation_repair")) == 1
    repair = payload_of(llm_stub.requests_for("consolidation_repair")[0])
    assert repair["violations"] == [{"rule": "schema", "where": "validate"}]


def test_consolidation_valid_repair_commits(make_manager, llm_stub):
    mgr = make_manager()
    _, [cid] = seed_consolidation(mgr, [cand(src("turn-x", "user", "q"), subject="tabs")])
    llm_stub.script("consolidation", {"operations": [{"operation": "create", "candidate_ids": [cid],
                                                      "target_id": None}]})
    llm_stub.script("consolidation_repair", {"operations": [{
        "operation": "create", "candidate_ids": [cid], "target_id": None, "kind": "user_preference",
        "subject": "tabs", "statement": "Use tabs.", "content": "", "strength": "soft", "origin": "explicit",
        "recall_mode": "on_match", "applies_to_paths": [], "aliases": [], "keywords": []}]})
    assert mgr.runner.step(force=True).status == "succeeded"
    assert [i.subject for i in mgr.list_items()] == ["tabs"]
    assert payload_of(llm_stub.requests_for("consolidation_repair")[0])["violations"] == [
        {"rule": "missing_item_fields", "where": "validate"}]


# --------------------------------------------------------------------------- durable retry


def test_transient_error_goes_to_retry_wait_once_then_failed(make_manager, llm_stub):
    clock = FakeClock()
    mgr = make_manager(clock=clock)
    t = add_turn(mgr, GOOD_USER, "ok")
    llm_stub.script("extraction", Reply(status=503), Reply(status=503))
    outcome = mgr.runner.step(force=True)
    assert (outcome.status, outcome.category) == ("retry_wait", "transient_provider")
    job = job_of_turn(mgr, t)
    assert (job["status"], job["attempts"], job["provider_calls"], job["completed_at"]) == ("retry_wait", 1, 1, None)
    assert (job["failure_category"], job["failure_phase"], job["failure_stage"]) == (
        "transient_provider", "provider", "primary")
    assert job["available_at"] > clock.now()
    assert mgr.runner.step(force=True) is None  # not before its retry time
    assert len(llm_stub.requests) == 1  # SDK retries are off here: one HTTP request per claim

    clock.advance(10)
    outcome = mgr.runner.step(force=True)
    assert outcome.status == "failed"
    job = job_of_turn(mgr, t)
    assert (job["status"], job["attempts"], job["provider_calls"]) == ("failed", 2, 2)
    assert job["completed_at"] == pytest.approx(clock.now())
    clock.advance(3600)
    assert mgr.runner.step(force=True) is None
    # also not after a restart
    again = make_manager(clock=clock)
    assert again.process_pending().as_dict() == {"succeeded": 0, "succeeded_no_output": 0, "retry_wait": 0,
                                                  "failed": 0, "pending": 0}
    assert again.runner.step(force=True) is None
    assert len(llm_stub.requests_for("extraction")) == 2
    assert again.status().jobs.failed == 1


def test_retry_after_transient_error_can_succeed(make_manager, llm_stub):
    clock = FakeClock()
    mgr = make_manager(clock=clock)
    t = add_turn(mgr, GOOD_USER, "ok")
    llm_stub.script("extraction", Reply(status=429), _good(t))
    assert mgr.runner.step(force=True).status == "retry_wait"
    assert job_of_turn(mgr, t)["failure_category"] == "rate_limit"
    clock.advance(10)
    assert mgr.runner.step(force=True).status == "succeeded"
    job = job_of_turn(mgr, t)
    assert (job["status"], job["attempts"], job["provider_calls"], job["failure_category"]) == (
        "succeeded", 2, 2, None)


@pytest.mark.parametrize("status,category", [(400, "bad_request"), (401, "auth"), (404, "bad_request")])
def test_non_retryable_errors_fail_at_once(make_manager, llm_stub, status, category):
    mgr = make_manager()
    t = add_turn(mgr, GOOD_USER, "ok")
    llm_stub.script("extraction", Reply(status=status))
    outcome = mgr.runner.step(force=True)
    assert (outcome.status, outcome.category) == ("failed", category)
    job = job_of_turn(mgr, t)
    assert (job["status"], job["attempts"], job["failure_stage"]) == ("failed", 1, "primary")
    assert job["completed_at"] is not None
    assert mgr.process_pending().failed == 0 and len(llm_stub.requests) == 1


def test_context_overflow_is_terminal(make_manager, llm_stub):
    mgr = make_manager()
    t = add_turn(mgr, GOOD_USER, "ok")
    llm_stub.script("extraction", Reply(status=400, error_body={"error": {
        "message": "This model's maximum context length is 8192 tokens", "code": "context_length_exceeded"}}))
    assert mgr.runner.step(force=True).status == "failed"
    assert job_of_turn(mgr, t)["failure_category"] == "context_overflow"


def test_provider_timeout_is_retryable(make_manager, llm_stub):
    mgr = make_manager(timeout=0.3)
    t = add_turn(mgr, GOOD_USER, "ok")
    llm_stub.script("extraction", Reply(content="{}", delay=2))
    outcome = mgr.runner.step(force=True)
    assert (outcome.status, outcome.category) == ("retry_wait", "timeout")
    assert job_of_turn(mgr, t)["failure_phase"] == "provider"


def _lock_extraction_commits(mgr, monkeypatch):
    """Make another connection hold the write lock (BEGIN IMMEDIATE) exactly while an extraction
    result commits; this thread's busy timeout is short. Returns that connection (close it)."""
    mgr.store.conn().execute("PRAGMA busy_timeout = 50")  # this thread's connection (the step runs here)
    real_commit = extraction_mod.commit
    holder = raw_connect(mgr.paths.db)

    def commit_while_locked(*args, **kwargs):
        holder.execute("BEGIN IMMEDIATE")
        try:
            return real_commit(*args, **kwargs)
        finally:
            holder.execute("ROLLBACK")

    monkeypatch.setattr(extraction_mod, "commit", commit_while_locked)
    return holder


def test_sqlite_lock_at_commit_goes_to_retry_wait(make_manager, llm_stub, monkeypatch):
    """Another connection holds the write lock (BEGIN IMMEDIATE) exactly while the result commits."""
    mgr = make_manager()
    t = add_turn(mgr, GOOD_USER, "ok")
    llm_stub.script("extraction", _good(t))
    holder = _lock_extraction_commits(mgr, monkeypatch)
    try:
        outcome = mgr.runner.step(force=True)
    finally:
        holder.close()
    assert (outcome.status, outcome.category) == ("retry_wait", "sqlite_lock")
    job = job_of_turn(mgr, t)
    assert (job["status"], job["failure_category"], job["failure_phase"], job["failure_stage"]) == (
        "retry_wait", "sqlite_lock", "commit", "primary")
    assert job["provider_calls"] == 1 and candidates(mgr) == []
    assert checkpoint(mgr, t.thread_id) == ("", 0)
    assert mgr.healthy  # a lock is not damage


def test_sqlite_lock_twice_is_terminal(make_manager, llm_stub, monkeypatch):
    clock = FakeClock()
    mgr = make_manager(clock=clock)
    t = add_turn(mgr, GOOD_USER, "ok")
    llm_stub.default("extraction", _good(t))
    holder = _lock_extraction_commits(mgr, monkeypatch)
    try:
        assert mgr.runner.step(force=True).status == "retry_wait"
        clock.advance(10)
        assert mgr.runner.step(force=True).status == "failed"
    finally:
        holder.close()
    job = job_of_turn(mgr, t)
    assert (job["status"], job["attempts"], job["failure_category"]) == ("failed", 2, "sqlite_lock")
    assert job["completed_at"] is not None
