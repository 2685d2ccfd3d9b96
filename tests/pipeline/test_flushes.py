"""Exit flush and the `/new` watermark flush (spec: 退出前执行一次持久任务处理; /new 建立干净工作边界)."""

from __future__ import annotations

import dataclasses
import json
import threading
import time

from autopatch_tui.core.events import Notice
from tests.support.fixtures import FakeClock
from tests.support.llm_stub import Reply
from tests.support.pipeline_helpers import (
    active_items,
    add_turn,
    cand,
    create_all,
    db_snapshot,
    ext_reply,
    job_of_turn,
    jobs,
    rows,
    src,
    wait_until,
)

USER = "From now on always use tabs."


def _valid(t, cp="CP"):
    return ext_reply(cand(src(t, "user", "always use tabs"), subject="indentation"), checkpoint=cp)


def _notices(mgr):
    seen: list[Notice] = []
    mgr.events.subscribe(lambda e: seen.append(e) if isinstance(e, Notice) else None)
    return seen


def _retry_delay(mgr, seconds):
    mgr.runner.timing = dataclasses.replace(mgr.runner.timing, retry_delay=seconds)


# --------------------------------------------------------------------------- exit flush


def test_exit_flush_processes_every_pending_job_once_and_persists(make_manager, llm_stub):
    mgr = make_manager()
    llm_stub.default("consolidation", create_all)
    t1 = add_turn(mgr, USER, "ok")
    t2 = add_turn(mgr, "Never use var in this project.", "ok")
    llm_stub.script("extraction", ext_reply(cand(src(t1, "user", "always use tabs"), subject="tabs"),
                                            cand(src(t2, "user", "Never use var in this project."), subject="var")))
    result = mgr.process_pending()
    assert result.as_dict() == {"succeeded": 3, "succeeded_no_output": 0, "retry_wait": 0, "failed": 0,
                                "pending": 0}
    assert sorted(i["subject"] for i in active_items(mgr)) == ["tabs", "var"]
    assert {j["status"] for j in jobs(mgr)} == {"succeeded"}


def test_exit_flush_gives_one_chance_then_returns_with_a_warning(make_manager, llm_stub):
    clock = FakeClock()
    mgr = make_manager(clock=clock)
    _retry_delay(mgr, 0)  # even when the retry is due at once, the flush does not try again
    notices = _notices(mgr)
    t = add_turn(mgr, USER, "ok")
    llm_stub.script("extraction", Reply(status=503), _valid(t))
    llm_stub.default("consolidation", create_all)
    result = mgr.process_pending()
    assert (result.retry_wait, result.succeeded, result.pending) == (1, 0, 0)
    assert len(llm_stub.requests_for("extraction")) == 1
    assert [n.level for n in notices] == ["warning"]
    job = job_of_turn(mgr, t)
    assert (job["status"], job["failure_category"], job["failure_stage"]) == ("retry_wait", "transient_provider",
                                                                               "primary")
    # the next start picks it up again
    clock.advance(10)
    again = make_manager(clock=clock)
    assert again.process_pending().succeeded == 2
    assert job_of_turn(again, t)["status"] == "succeeded" and len(active_items(again)) == 1


def test_exit_flush_terminal_failure_is_saved_and_not_reported_pending(make_manager, llm_stub):
    mgr = make_manager()
    notices = _notices(mgr)
    t = add_turn(mgr, USER, "ok")
    llm_stub.script("extraction", Reply(status=400, error_body="bad request body"))
    result = mgr.process_pending()
    assert (result.failed, result.pending, result.retry_wait) == (1, 0, 0)
    assert [n.level for n in notices] == ["warning"]
    assert job_of_turn(mgr, t)["status"] == "failed"
    assert make_manager().process_pending().as_dict() == {"succeeded": 0, "succeeded_no_output": 0, "retry_wait": 0,
                                                          "failed": 0, "pending": 0}
    assert len(llm_stub.requests) == 1


def test_exit_flush_without_a_model_leaves_jobs_pending(make_manager, llm_stub):
    mgr = make_manager(stub=False)
    assert not mgr.has_model and mgr.model_problem
    add_turn(mgr, USER, "ok")
    add_turn(mgr, "another", "ok")
    assert mgr.runner.step(force=True) is None
    assert mgr.process_pending().as_dict() == {"succeeded": 0, "succeeded_no_output": 0, "retry_wait": 0,
                                                "failed": 0, "pending": 2}
    res = mgr.new_thread(timeout=1)
    assert (res.flush.completed, res.flush.pending, res.flush.timed_out) == (0, 2, False)
    assert mgr.status().jobs.pending == 2 and llm_stub.requests == []


# --------------------------------------------------------------------------- /new


def test_new_processes_the_old_threads_jobs_before_creating_the_new_thread(make_manager, llm_stub):
    mgr = make_manager()
    llm_stub.default("consolidation", create_all)
    t1 = add_turn(mgr, USER, "ok")
    add_turn(mgr, "and something else", "ok")
    llm_stub.script("extraction", _valid(t1))
    res = mgr.new_thread(timeout=10)
    assert (res.flush.completed, res.flush.pending, res.flush.timed_out) == (3, 0, False)
    assert res.old_thread_id == t1.thread_id and res.new_thread_id != t1.thread_id
    created = rows(mgr, "SELECT created_at FROM threads WHERE id = ?", (res.new_thread_id,))[0]["created_at"]
    old_jobs = jobs(mgr)
    assert {j["status"] for j in old_jobs} == {"succeeded"}
    assert max(j["completed_at"] for j in old_jobs) <= created
    assert len(active_items(mgr)) == 1
    assert mgr.status().active_thread_id == res.new_thread_id


def test_new_counts_only_the_old_threads_captured_jobs(make_manager, llm_stub):
    offline = make_manager(stub=False)
    a = add_turn(offline, "a turn of an older thread", "ok")
    offline.new_thread(timeout=1)  # no model: the job stays pending on thread A
    mgr = make_manager()
    llm_stub.default("extraction", ext_reply())
    b = add_turn(mgr, "a turn of thread B", "ok")
    res = mgr.new_thread(timeout=5)
    assert (res.flush.completed, res.flush.pending, res.flush.timed_out) == (1, 0, False)
    assert job_of_turn(mgr, a)["status"] == "pending"
    assert job_of_turn(mgr, b)["status"] == "succeeded_no_output"
    [req] = llm_stub.requests_for("extraction")
    assert b.turn_id in req.messages[-1]["content"] and a.turn_id not in req.messages[-1]["content"]


def test_new_times_out_creates_the_thread_and_the_job_finishes_in_the_background(make_manager, llm_stub):
    mgr = make_manager(MEMORY_LEASE_SECONDS=5, MEMORY_HEARTBEAT_SECONDS=0.2)
    notices = _notices(mgr)
    llm_stub.default("consolidation", create_all)
    t = add_turn(mgr, USER, "ok")
    release = threading.Event()
    llm_stub.script("extraction", Reply(content=json.dumps(_valid(t)), wait_event=release))
    started = time.monotonic()
    res = mgr.new_thread(timeout=0.4)
    assert time.monotonic() - started < 3
    assert res.flush.timed_out and res.flush.pending == 1 and res.flush.completed == 0
    assert mgr.status().active_thread_id == res.new_thread_id != t.thread_id
    assert any(n.level == "warning" and "timed out" in n.text for n in notices)
    assert job_of_turn(mgr, t)["status"] == "leased"
    release.set()
    wait_until(lambda: len(active_items(mgr)) == 1, timeout=10)
    assert job_of_turn(mgr, t)["status"] == "succeeded"
    assert {j["status"] for j in jobs(mgr, "consolidation")} == {"succeeded"}


def test_new_waits_for_a_captured_job_held_by_another_manager(make_manager, llm_stub):
    mgr = make_manager()
    other = make_manager()
    llm_stub.default("consolidation", create_all)
    t = add_turn(mgr, USER, "ok")
    add_turn(mgr, "second turn", "ok")
    release = threading.Event()
    llm_stub.script("extraction", Reply(content=json.dumps(_valid(t)), wait_event=release))
    held = threading.Thread(target=other.runner.step, kwargs={"force": True})
    held.start()
    assert llm_stub.wait_for_requests(1, task="extraction")
    result = []
    flush = threading.Thread(target=lambda: result.append(mgr.new_thread(timeout=10)))
    flush.start()
    time.sleep(0.4)
    assert not result  # still waiting for the captured job
    release.set()
    held.join(10)
    flush.join(10)
    res = result[0]
    assert (res.flush.timed_out, res.flush.pending) == (False, 0)
    assert res.flush.completed == 1  # the derived consolidation; the extraction was the other's
    assert len(llm_stub.requests_for("extraction")) == 1
    assert len(active_items(mgr)) == 1


def test_new_waits_for_a_retry_due_before_the_deadline(make_manager, llm_stub):
    mgr = make_manager()
    _retry_delay(mgr, 0.4)
    t = add_turn(mgr, USER, "ok")
    llm_stub.script("extraction", Reply(status=503), ext_reply())
    assert mgr.process_pending().retry_wait == 1
    res = mgr.new_thread(timeout=5)
    assert (res.flush.timed_out, res.flush.pending, res.flush.completed) == (False, 0, 1)
    assert job_of_turn(mgr, t)["status"] == "succeeded_no_output"


def test_new_does_not_wait_for_a_retry_due_after_the_deadline(make_manager, llm_stub):
    mgr = make_manager()
    _retry_delay(mgr, 60)
    t = add_turn(mgr, USER, "ok")
    llm_stub.script("extraction", Reply(status=503))
    mgr.process_pending()
    started = time.monotonic()
    res = mgr.new_thread(timeout=0.3)
    assert time.monotonic() - started < 3
    assert (res.flush.timed_out, res.flush.pending) == (True, 1)
    assert job_of_turn(mgr, t)["status"] == "retry_wait"
    assert mgr.status().active_thread_id == res.new_thread_id


def test_close_after_a_timed_out_flush_stops_it_and_nothing_is_written_afterwards(make_manager, llm_stub):
    mgr = make_manager(MEMORY_LEASE_SECONDS=5, MEMORY_HEARTBEAT_SECONDS=0.1)
    llm_stub.default("consolidation", create_all)
    t = add_turn(mgr, USER, "ok")
    release = threading.Event()
    llm_stub.script("extraction", Reply(content=json.dumps(_valid(t)), wait_event=release))
    assert mgr.new_thread(timeout=0.3).flush.timed_out
    flush_threads = [th for _, th in mgr._flushes]
    mgr.close(join_timeout=0.3)
    before = db_snapshot(mgr)
    summary = mgr.paths.summary
    assert not summary.exists()
    release.set()
    for th in flush_threads:
        th.join(10)
        assert not th.is_alive()
    time.sleep(0.3)  # heartbeats would have fired by now
    assert db_snapshot(mgr) == before
    assert not summary.exists()
    job = job_of_turn(mgr, t)  # handed back at close: the claim is not spent by a lease expiry
    assert (job["status"], job["attempts"], job["lease_owner"]) == ("pending", 0, None)


def test_new_turn_during_a_background_flush_can_still_complete(make_manager, llm_stub):
    mgr = make_manager(MEMORY_LEASE_SECONDS=1, MEMORY_HEARTBEAT_SECONDS=0.2)
    t = add_turn(mgr, USER, "ok")
    release = threading.Event()
    llm_stub.script("extraction", Reply(content=json.dumps(_valid(t)), wait_event=release))
    llm_stub.default("consolidation", create_all)
    res = mgr.new_thread(timeout=0.3)
    assert res.flush.timed_out
    h = mgr.begin_turn("a new request on the new thread")
    assert h.thread_id == res.new_thread_id
    try:
        time.sleep(1.6)  # past the turn's own 1 s lease
        row = rows(mgr, "SELECT state, lease_expires_at FROM turns WHERE id = ?", (h.turn_id,))[0]
        assert row["state"] == "open" and row["lease_expires_at"] > time.time()
        starter = make_manager(MEMORY_LEASE_SECONDS=1)  # startup recovery of another manager
        assert h.turn_id not in starter.recover()
        mgr.complete_turn(h, "the answer")
    finally:
        release.set()
    assert rows(mgr, "SELECT state FROM turns WHERE id = ?", (h.turn_id,))[0]["state"] == "completed"
    wait_until(lambda: job_of_turn(mgr, t)["status"] == "succeeded", timeout=10)


def test_a_request_begun_before_new_keeps_its_thread(make_manager, llm_stub):
    mgr = make_manager()
    llm_stub.default("extraction", ext_reply())
    add_turn(mgr, "earlier question", "earlier answer")
    h = mgr.begin_turn("a request that is still running")
    res = mgr.new_thread(timeout=5)
    assert res.flush.completed == 1  # the running request had no job yet
    mgr.complete_turn(h, "its answer, shown after /new")
    n = add_turn(mgr, "first question of the new thread", "answer")
    assert rows(mgr, "SELECT thread_id FROM turns WHERE id = ?", (h.turn_id,))[0]["thread_id"] == res.old_thread_id
    assert job_of_turn(mgr, h)["thread_id"] == res.old_thread_id
    while mgr.runner.step(force=True) is not None:
        pass
    by_thread = {}
    for req in llm_stub.requests_for("extraction")[1:]:
        p = json.loads(req.messages[-1]["content"])
        by_thread[p["thread_id"]] = [t["turn_id"] for t in p["turns"]]
    assert by_thread == {res.old_thread_id: [h.turn_id], res.new_thread_id: [n.turn_id]}


def test_after_new_only_project_items_stay_visible(make_manager, llm_stub):
    from autopatch_tui.core.recall.cli_search import search_memory

    mgr = make_manager()
    llm_stub.default("consolidation", create_all)
    t = add_turn(mgr, "From now on all config files must be TOML. Should we also move secrets to a vault? "
                      "Not decided yet.", "ok")
    llm_stub.script("extraction", ext_reply(
        cand(src(t, "user", "all config files must be TOML"), kind="project_decision", subject="config format",
             statement="All config files are TOML.", keywords=["toml"]),
        cand(src(t, "user", "Should we also move secrets to a vault?"), kind="discussion_context",
             subject="secrets vault", statement="Open question: move secrets to a vault (TOML config)?",
             keywords=["toml"])))
    mgr.process_pending()
    before = {r["kind"] for r in search_memory(mgr, "toml config vault")}
    assert before == {"project_decision", "discussion_context"}
    mgr.new_thread(timeout=5)
    after = {r["kind"] for r in search_memory(mgr, "toml config vault")}
    assert after == {"project_decision"}
