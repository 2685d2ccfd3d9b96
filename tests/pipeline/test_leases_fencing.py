"""Leases while a provider call runs, fencing of late results, kill -9 recovery and run-time schema
damage (spec: provider 调用 heartbeat; heartbeat 发现 fencing; stale worker 回写;
runtime schema 损坏使摘要失效)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from autopatch_tui.core.events import Notice
from autopatch_tui.core.pipeline import summary as summary_mod
from tests.support.fixtures import PROJECT_ROOT, FakeClock, raw_connect
from tests.support.llm_stub import Reply
from tests.support.pipeline_helpers import (
    add_turn,
    cand,
    candidates,
    checkpoint,
    create_all,
    ext_reply,
    job_of_turn,
    rows,
    src,
    stub_env,
    wait_until,
)

FAST = {"MEMORY_LEASE_SECONDS": 1, "MEMORY_HEARTBEAT_SECONDS": 0.2}
USER = "From now on always use tabs."


def _steal_lease(mgr, turn_id: str) -> None:
    """Another owner takes the job's lease behind the worker's back (from its own connection)."""
    thief = raw_connect(mgr.paths.db)
    try:
        thief.execute("UPDATE memory_jobs SET lease_owner = 'another-host:1:x' WHERE turn_id = ?", (turn_id,))
    finally:
        thief.close()


def _valid(t, checkpoint_text="CP late"):
    return ext_reply(cand(src(t, "user", "always use tabs"), subject="indentation"), checkpoint=checkpoint_text)


def _blocked(content, release: threading.Event) -> Reply:
    import json
    return Reply(content=content if isinstance(content, str) else json.dumps(content), wait_event=release)


def _step_in_thread(mgr, **kw):
    out: list = []
    th = threading.Thread(target=lambda: out.append(mgr.runner.step(force=True, **kw)), daemon=True)
    th.start()
    return th, out


# --------------------------------------------------------------------------- heartbeat


def test_heartbeat_keeps_the_lease_and_open_turns_alive_during_a_long_call(make_manager, llm_stub):
    mgr = make_manager(**FAST)
    t = add_turn(mgr, USER, "ok")
    open_turn = mgr.begin_turn("a request still being answered")
    begun = rows(mgr, "SELECT lease_expires_at FROM turns WHERE id = ?", (open_turn.turn_id,))[0]["lease_expires_at"]
    release = threading.Event()
    llm_stub.script("extraction", _blocked(_valid(t), release))
    th, out = _step_in_thread(mgr)
    try:
        assert llm_stub.wait_for_requests(1, task="extraction")
        claimed = job_of_turn(mgr, t)["lease_expires_at"]
        time.sleep(1.6)  # longer than the 1 s lease, several heartbeat intervals
        job = job_of_turn(mgr, t)
        assert job["status"] == "leased" and job["lease_expires_at"] > claimed + 1.0
        assert job["lease_expires_at"] > time.time()
        turn = rows(mgr, "SELECT state, lease_expires_at FROM turns WHERE id = ?", (open_turn.turn_id,))[0]
        assert turn["state"] == "open" and turn["lease_expires_at"] > begun + 1.0
        # another manager neither steals the job nor recovers the open turn as interrupted
        other = make_manager(**FAST)
        assert other.runner.step(force=True) is None
        assert other.recover() == []
    finally:
        release.set()
        th.join(10)
    assert out[0].status == "succeeded"
    assert checkpoint(mgr, t.thread_id) == ("CP late", 1) and len(candidates(mgr)) == 1
    mgr.complete_turn(open_turn, "answered after the long Memory call")  # still completes
    assert rows(mgr, "SELECT state FROM turns WHERE id = ?", (open_turn.turn_id,))[0]["state"] == "completed"


# --------------------------------------------------------------------------- fencing


@pytest.mark.parametrize("reply_kind", ["valid", "malformed"])
@pytest.mark.parametrize("heartbeat", [0.1, 30])
def test_clear_during_a_call_fences_the_late_result(make_manager, llm_stub, reply_kind, heartbeat):
    mgr = make_manager(MEMORY_LEASE_SECONDS=5, MEMORY_HEARTBEAT_SECONDS=heartbeat)
    t = add_turn(mgr, USER, "ok")
    release = threading.Event()
    llm_stub.script("extraction", _blocked(_valid(t) if reply_kind == "valid" else "prose, not JSON", release))
    llm_stub.default("extraction_repair", _valid(t))
    th, out = _step_in_thread(mgr)
    assert llm_stub.wait_for_requests(1, task="extraction")
    other = make_manager()
    new_thread = other.clear(confirm=True)
    if heartbeat < 1:
        time.sleep(0.35)  # let a heartbeat notice the generation bump while the call still runs
    release.set()
    th.join(10)
    assert out[0].status == "fenced"
    assert llm_stub.requests_for("extraction_repair") == []
    assert candidates(mgr) == [] and rows(mgr, "SELECT * FROM memory_jobs") == []
    assert checkpoint(mgr, new_thread) == ("", 0)
    assert rows(mgr, "SELECT id FROM threads") == [{"id": new_thread}]


@pytest.mark.parametrize("reply_kind", ["valid", "malformed"])
@pytest.mark.parametrize("heartbeat", [0.1, 30])
def test_stolen_lease_fences_the_late_result(make_manager, llm_stub, reply_kind, heartbeat):
    mgr = make_manager(MEMORY_LEASE_SECONDS=5, MEMORY_HEARTBEAT_SECONDS=heartbeat)
    t = add_turn(mgr, USER, "ok")
    release = threading.Event()
    llm_stub.script("extraction", _blocked(_valid(t) if reply_kind == "valid" else '{"thread_checkpoint": 1}',
                                           release))
    llm_stub.default("extraction_repair", _valid(t))
    th, out = _step_in_thread(mgr)
    assert llm_stub.wait_for_requests(1, task="extraction")
    _steal_lease(mgr, t.turn_id)
    if heartbeat < 1:
        time.sleep(0.35)
    release.set()
    th.join(10)
    assert out[0].status == "fenced"
    assert llm_stub.requests_for("extraction_repair") == []
    job = job_of_turn(mgr, t)
    assert (job["status"], job["lease_owner"], job["provider_calls"]) == ("leased", "another-host:1:x", 0)
    assert candidates(mgr) == [] and checkpoint(mgr, t.thread_id) == ("", 0)


@pytest.mark.parametrize("heartbeat", [0.1, 30])
def test_stolen_consolidation_lease_fences_the_late_result(make_manager, llm_stub, heartbeat):
    """The consolidation side of the test above (issue 32): a commit that forgot its lease check
    would write the late operations as items."""
    mgr = make_manager(MEMORY_LEASE_SECONDS=5, MEMORY_HEARTBEAT_SECONDS=heartbeat)
    t = add_turn(mgr, USER, "ok")
    llm_stub.script("extraction", _valid(t))
    assert mgr.runner.step(force=True).status == "succeeded"  # a pending candidate and its consolidation job
    release = threading.Event()
    llm_stub.script("consolidation", lambda req: _blocked(create_all(req), release))
    th, out = _step_in_thread(mgr)
    assert llm_stub.wait_for_requests(1, task="consolidation")
    thief = raw_connect(mgr.paths.db)
    try:
        stolen = thief.execute("UPDATE memory_jobs SET lease_owner = 'another-host:1:x'"
                               " WHERE kind = 'consolidation' AND status = 'leased'").rowcount
    finally:
        thief.close()
    assert stolen == 1
    if heartbeat < 1:
        time.sleep(0.35)
    release.set()
    th.join(10)
    assert out[0].status == "fenced"
    job = rows(mgr, "SELECT status, lease_owner FROM memory_jobs WHERE kind = 'consolidation'")
    assert job == [{"status": "leased", "lease_owner": "another-host:1:x"}]
    assert rows(mgr, "SELECT * FROM memory_items") == []
    assert [c["status"] for c in candidates(mgr)] == ["pending"]


def test_expired_lease_reclaimed_by_another_manager_fences_the_first(make_manager, llm_stub):
    """Controllable clocks: the first manager's clock stands still (its heartbeats renew the lease to
    its own 'now' + lease), the second one lives past that lease."""
    slow, fast = FakeClock(), FakeClock()
    first = make_manager(clock=slow, MEMORY_LEASE_SECONDS=10, MEMORY_HEARTBEAT_SECONDS=0.1)
    t = add_turn(first, USER, "ok")
    release = threading.Event()
    llm_stub.script("extraction", _blocked("not JSON at all", release), _valid(t, "CP second"))
    llm_stub.default("extraction_repair", _valid(t, "CP repair"))
    th, out = _step_in_thread(first)
    assert llm_stub.wait_for_requests(1, task="extraction")
    fast.advance(11)
    second = make_manager(clock=fast, MEMORY_LEASE_SECONDS=10, MEMORY_HEARTBEAT_SECONDS=0.1)
    outcome = second.runner.step(force=True)
    assert outcome is not None and outcome.status == "succeeded"
    time.sleep(0.3)  # the first manager's heartbeat sees the lost lease
    release.set()
    th.join(10)
    assert out[0].status == "fenced"
    assert llm_stub.requests_for("extraction_repair") == []
    job = job_of_turn(second, t)
    assert (job["status"], job["attempts"]) == ("succeeded", 2)
    assert checkpoint(second, t.thread_id) == ("CP second", 1)
    assert len(candidates(second)) == 1


# --------------------------------------------------------------------------- kill -9

CHILD = textwrap.dedent("""
    import sys
    from pathlib import Path
    from autopatch_tui.core.manager import MemoryManager
    from autopatch_tui.core.settings import load_settings
    mgr = MemoryManager(Path(sys.argv[1]), load_settings(llm_max_retries=0, llm_timeout_seconds=600))
    print("ready", flush=True)
    mgr.runner.step(force=True)  # the stub never answers: killed mid-call
    print("returned", flush=True)
""")


@pytest.mark.slow
def test_kill_9_mid_call_then_lease_expiry_then_exactly_one_committed_result(make_manager, llm_stub, repo):
    never = threading.Event()
    mgr = make_manager(**FAST)
    t = add_turn(mgr, USER, "ok")
    llm_stub.script("extraction", _blocked(_valid(t, "CP from the dead worker"), never), _valid(t, "CP survivor"))
    llm_stub.default("consolidation", create_all)
    env = stub_env(llm_stub, MEMORY_LEASE_SECONDS=1, MEMORY_HEARTBEAT_SECONDS=0.2)
    env["PYTHONPATH"] = str(PROJECT_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(repo)], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert llm_stub.wait_for_requests(1, task="extraction", timeout=60), child.stderr.read() if child.poll() else ""
        leased = job_of_turn(mgr, t)
        assert leased["status"] == "leased" and leased["lease_owner"] != mgr.owner
        time.sleep(0.5)  # a heartbeat or two from the child
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
        child.stdout.close()
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL
    # within the lease nobody takes the job; after it, the survivor does
    wait_until(lambda: job_of_turn(mgr, t)["lease_expires_at"] < time.time(), timeout=3)
    result = mgr.process_pending()
    assert result.succeeded == 2  # the extraction and its consolidation
    job = job_of_turn(mgr, t)
    assert (job["status"], job["attempts"], job["failure_category"]) == ("succeeded", 2, None)
    assert checkpoint(mgr, t.thread_id) == ("CP survivor", 1)
    assert len(candidates(mgr)) == 1 and len(mgr.list_items()) == 1
    assert len(llm_stub.requests_for("extraction")) == 2
    assert mgr.process_pending().as_dict()["succeeded"] == 0  # nothing left to do twice


# --------------------------------------------------------------------------- schema damage


@pytest.mark.parametrize("damage", ["PRAGMA user_version = 3", "DROP INDEX memory_candidates_job"])
def test_schema_damage_seen_by_the_heartbeat_stops_model_calls_and_marks_the_summary_stale(
        make_manager, llm_stub, damage):
    mgr = make_manager(MEMORY_LEASE_SECONDS=5, MEMORY_HEARTBEAT_SECONDS=0.1)
    notices: list[Notice] = []
    mgr.events.subscribe(lambda e: notices.append(e) if isinstance(e, Notice) else None)
    summary_mod.refresh(mgr.store.conn(), mgr.paths, now=time.time())
    assert mgr.status().summary.status == "current"
    t = add_turn(mgr, USER, "ok")
    add_turn(mgr, "a second turn", "ok")
    release = threading.Event()
    llm_stub.script("extraction", _blocked("malformed: would need a repair", release))
    llm_stub.default("extraction_repair", _valid(t))
    th, out = _step_in_thread(mgr, only={job_of_turn(mgr, t)["id"]})
    assert llm_stub.wait_for_requests(1, task="extraction")
    conn = raw_connect(mgr.paths.db)
    try:
        conn.execute(damage)
    finally:
        conn.close()
    # noticed by the heartbeat while the call still runs: degraded and stale at once
    wait_until(lambda: not mgr.healthy, timeout=3)
    status = mgr.status()
    assert status.state == "degraded" and status.summary.status == "stale"
    release.set()
    th.join(10)
    assert out[0].status == "damaged"
    assert llm_stub.requests_for("extraction_repair") == []
    assert mgr.runner.step(force=True) is None and mgr.process_pending().succeeded == 0
    assert len(llm_stub.requests) == 1  # no further model call of any kind
    assert mgr.status().summary.status == "stale"
    assert [n.level for n in notices] == ["error"]


def test_damage_first_noticed_elsewhere_still_stops_the_step_cleanly(make_manager, llm_stub):
    """Another caller (status, another thread) degrades the store while the call runs and no
    heartbeat fires: the late, malformed reply gets no repair and the step ends as damaged."""
    mgr = make_manager(MEMORY_LEASE_SECONDS=5, MEMORY_HEARTBEAT_SECONDS=30)
    summary_mod.refresh(mgr.store.conn(), mgr.paths, now=time.time())
    t = add_turn(mgr, USER, "ok")
    release = threading.Event()
    llm_stub.script("extraction", _blocked("malformed", release))
    llm_stub.default("extraction_repair", _valid(t))
    th, out = _step_in_thread(mgr)
    assert llm_stub.wait_for_requests(1, task="extraction")
    conn = raw_connect(mgr.paths.db)
    try:
        conn.execute("DELETE FROM memory_meta")
    finally:
        conn.close()
    mgr.status()  # may notice the damage first
    release.set()
    th.join(10)
    assert out and out[0].status == "damaged"
    assert llm_stub.requests_for("extraction_repair") == []
    assert not mgr.healthy and mgr.status().summary.status == "stale"
    assert mgr.runner.step(force=True) is None


def test_a_fenced_worker_does_not_even_record_its_failure(make_manager, llm_stub):
    mgr = make_manager(MEMORY_LEASE_SECONDS=5, MEMORY_HEARTBEAT_SECONDS=30)
    t = add_turn(mgr, USER, "ok")
    release = threading.Event()
    llm_stub.script("extraction", Reply(status=503, wait_event=release))
    th, out = _step_in_thread(mgr)
    assert llm_stub.wait_for_requests(1, task="extraction")
    _steal_lease(mgr, t.turn_id)
    release.set()
    th.join(10)
    assert out[0].status == "fenced"
    job = job_of_turn(mgr, t)
    assert (job["status"], job["lease_owner"], job["failure_category"], job["provider_calls"]) == (
        "leased", "another-host:1:x", None, 0)


def test_stale_consolidation_result_is_not_committed(make_manager, llm_stub):
    from tests.support.pipeline_helpers import (
        active_items,
        op_from_candidate,
        payload_of,
        seed_consolidation,
    )

    mgr = make_manager(MEMORY_LEASE_SECONDS=5, MEMORY_HEARTBEAT_SECONDS=30)
    _job, _ = seed_consolidation(mgr, [cand(src("turn-x", "user", "q"), subject="tabs")])
    release = threading.Event()
    import json
    llm_stub.script("consolidation", lambda req: Reply(content=json.dumps(
        {"operations": [op_from_candidate("create", payload_of(req)["candidates"][0])]}), wait_event=release))
    th, out = _step_in_thread(mgr)
    assert llm_stub.wait_for_requests(1, task="consolidation")
    other = make_manager()
    other.clear(confirm=True)
    release.set()
    th.join(10)
    assert out[0].status == "fenced"
    assert active_items(mgr) == [] and candidates(mgr) == []
