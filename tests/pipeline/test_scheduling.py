"""Scheduling of extraction (spec: durable 两阶段 Memory 处理 / 正常调度 extraction).

≥ 2 pending ended turns or the oldest waited max_wait → claim; ≤ 4 jobs of one thread in
sequence order; only jobs whose attempt/provider-call counters agree share a batch; a turn ending
while a batch runs is processed in a later batch."""

from __future__ import annotations

import threading

from tests.support.fixtures import FakeClock, raw_connect
from tests.support.llm_stub import Reply
from tests.support.pipeline_helpers import (
    add_turn,
    ext_reply,
    job_of_turn,
    jobs,
    payload_of,
)


def test_single_pending_turn_waits_for_max_wait(make_manager, llm_stub):
    clock = FakeClock()
    mgr = make_manager(clock=clock)
    llm_stub.default("extraction", ext_reply())
    add_turn(mgr, "how does the parser work?", "It tokenizes first.")

    assert mgr.runner.step() is None
    clock.advance(29.5)
    assert mgr.runner.step() is None
    assert llm_stub.requests_for("extraction") == []
    clock.advance(0.5)  # the oldest pending turn has now waited 30 s
    outcome = mgr.runner.step()
    assert outcome is not None and outcome.kind == "extraction" and len(outcome.job_ids) == 1
    assert outcome.status == "succeeded_no_output"
    assert len(llm_stub.requests_for("extraction")) == 1


def test_max_wait_setting_is_honoured(make_manager, llm_stub):
    clock = FakeClock()
    mgr = make_manager(clock=clock, MEMORY_EXTRACTION_MAX_WAIT_SECONDS=5)
    llm_stub.default("extraction", ext_reply())
    add_turn(mgr, "question", "answer")
    clock.advance(4.9)
    assert mgr.runner.step() is None
    clock.advance(0.2)
    assert mgr.runner.step() is not None


def test_two_pending_turns_are_claimed_at_once(make_manager, llm_stub):
    clock = FakeClock()
    mgr = make_manager(clock=clock)
    llm_stub.default("extraction", ext_reply())
    t1 = add_turn(mgr, "first question", "first answer")
    assert mgr.runner.step() is None
    t2 = add_turn(mgr, "second question", "second answer")
    outcome = mgr.runner.step()
    assert outcome is not None
    assert set(outcome.job_ids) == {job_of_turn(mgr, t1)["id"], job_of_turn(mgr, t2)["id"]}
    turns = payload_of(llm_stub.requests_for("extraction")[0])["turns"]
    assert [t["turn_id"] for t in turns] == [t1.turn_id, t2.turn_id]


def test_open_turns_do_not_count_as_pending(make_manager, llm_stub):
    clock = FakeClock()
    mgr = make_manager(clock=clock)
    llm_stub.default("extraction", ext_reply())
    add_turn(mgr, "ended", "answer")
    add_turn(mgr, "still running", None)  # open: no job yet
    assert mgr.runner.step() is None


def test_a_claim_takes_at_most_four_jobs_in_sequence_order(make_manager, llm_stub):
    mgr = make_manager()
    llm_stub.default("extraction", ext_reply())
    handles = [add_turn(mgr, f"question {i}", f"answer {i}") for i in range(6)]

    first = mgr.runner.step()
    assert first is not None and len(first.job_ids) == 4
    expected = [job_of_turn(mgr, h)["id"] for h in handles]
    assert list(first.job_ids) == expected[:4]
    second = mgr.runner.step(force=True)
    assert second is not None and list(second.job_ids) == expected[4:]
    sent = [[t["sequence"] for t in payload_of(r)["turns"]] for r in llm_stub.requests_for("extraction")]
    assert sent == [[1, 2, 3, 4], [5, 6]]


def test_only_jobs_whose_counters_agree_share_a_batch(make_manager, llm_stub):
    clock = FakeClock()
    mgr = make_manager(clock=clock)
    llm_stub.default("extraction", ext_reply())
    h1, h2, h3, h4 = (add_turn(mgr, f"question {i}", f"answer {i}") for i in range(4))
    j2 = job_of_turn(mgr, h2)["id"]
    j3 = job_of_turn(mgr, h3)["id"]
    conn = raw_connect(mgr.paths.db)
    try:  # jobs 2 and 3 come back from one earlier claim that made one provider call
        conn.execute("UPDATE memory_jobs SET status = 'retry_wait', attempts = 1, provider_calls = 1,"
                     " available_at = ?, failure_category = 'transient_provider', failure_phase = 'provider',"
                     " failure_stage = 'primary' WHERE id IN (?, ?)", (clock.now() - 1, j2, j3))
    finally:
        conn.close()

    batches = []
    while (outcome := mgr.runner.step(force=True)) is not None:
        batches.append(list(outcome.job_ids))
    ids = [job_of_turn(mgr, h)["id"] for h in (h1, h2, h3, h4)]
    assert batches == [[ids[0]], [ids[1], ids[2]], [ids[3]]]
    by_id = {j["id"]: j for j in jobs(mgr, "extraction")}
    assert by_id[j2]["attempts"] == 2 and by_id[j2]["provider_calls"] == 2
    assert by_id[ids[0]]["attempts"] == 1 and by_id[ids[0]]["provider_calls"] == 1


def test_turn_ending_during_a_batch_is_processed_in_a_later_batch(make_manager, llm_stub):
    mgr = make_manager()
    other = make_manager()
    release = threading.Event()
    llm_stub.script("extraction", Reply(content='{"thread_checkpoint": "cp one", "candidates": []}',
                                        wait_event=release))
    llm_stub.default("extraction", ext_reply(checkpoint="cp two"))
    t1 = add_turn(mgr, "question one", "answer one")
    t2 = add_turn(mgr, "question two", "answer two")

    result = []
    runner = threading.Thread(target=lambda: result.append(mgr.runner.step()))
    runner.start()
    try:
        assert llm_stub.wait_for_requests(1, task="extraction")
        t3 = add_turn(mgr, "question three", "answer three")
        t4 = add_turn(mgr, "question four", "answer four")
        # one batch per thread at a time: nobody claims the new turns while the batch runs
        assert other.runner.step(force=True) is None
    finally:
        release.set()
        runner.join(10)
    assert result and result[0].status == "succeeded_no_output"
    assert job_of_turn(mgr, t3)["status"] == "pending" and job_of_turn(mgr, t4)["status"] == "pending"

    later = mgr.runner.step()  # two pending turns: due without forcing
    assert later is not None and later.status == "succeeded_no_output"
    first, second = (payload_of(r) for r in llm_stub.requests_for("extraction"))
    assert [t["turn_id"] for t in first["turns"]] == [t1.turn_id, t2.turn_id]
    assert [t["turn_id"] for t in second["turns"]] == [t3.turn_id, t4.turn_id]
    assert second["adjacent_previous_turn"]["turn_id"] == t2.turn_id
    assert second["previous_checkpoint"] == "cp one"


def test_batches_never_mix_threads(make_manager, llm_stub):
    mgr = make_manager()
    llm_stub.default("extraction", ext_reply())
    llm_stub.default("consolidation", {"operations": []})
    a = add_turn(mgr, "old thread question", "answer")
    old = mgr.new_thread(timeout=5)  # flushes the old thread's job first
    assert old.flush.completed == 1
    b1 = add_turn(mgr, "new thread one", "answer")
    b2 = add_turn(mgr, "new thread two", "answer")
    outcome = mgr.runner.step()
    assert outcome is not None
    sent = payload_of(llm_stub.requests_for("extraction")[-1])
    assert sent["thread_id"] == old.new_thread_id
    assert [t["turn_id"] for t in sent["turns"]] == [b1.turn_id, b2.turn_id]
    assert sent["adjacent_previous_turn"] is None  # the old thread's turns belong to the old thread
    assert a.turn_id not in str(sent)


def test_default_timing_is_the_specified_one(make_manager):
    mgr = make_manager()
    t = mgr.runner.timing
    assert (t.lease_seconds, t.heartbeat_seconds, t.max_wait) == (120, 30, 30)
    assert t.heartbeat_seconds * 3 < t.lease_seconds  # several renewals fit inside one lease
