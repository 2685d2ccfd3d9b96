"""Clean close (issue 10 §4): `close()` — and the CLI's close after a timed-out `new` — stops
scheduling, abandons a provider call in flight without a traceback (the HTTP client is closed under
it), hands the job it held back (the claim is not spent by a lease expiry) and writes nothing
after it returns. `new --timeout` warns on stderr, never on stdout."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
from pathlib import Path

import pytest

from tests.support.llm_stub import Reply
from tests.support.pipeline_helpers import (
    add_turn,
    cand,
    db_snapshot,
    ext_reply,
    job_of_turn,
    jobs,
    src,
    wait_until,
)

USER = "From now on always use tabs."


@pytest.fixture
def thread_errors(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Uncaught exceptions of any thread (what would print a traceback)."""
    seen: list[str] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: seen.append(repr(args.exc_value)))
    return seen


def test_close_during_a_background_call_abandons_it_releases_the_job_and_writes_nothing_after(
        make_manager, llm_stub, thread_errors, caplog):
    mgr = make_manager(MEMORY_LEASE_SECONDS=30, MEMORY_HEARTBEAT_SECONDS=0.05, MEMORY_EXTRACTION_MAX_WAIT_SECONDS=0,
                       timeout=30)
    t = add_turn(mgr, USER, "ok")
    release = threading.Event()
    llm_stub.script("extraction", Reply(content=json.dumps(ext_reply(cand(src(t, "user", "always use tabs")))),
                                        wait_event=release))
    mgr.start_background()
    mgr.worker.wake()
    assert llm_stub.wait_for_requests(1, task="extraction")
    wait_until(lambda: job_of_turn(mgr, t)["status"] == "leased")
    started = time.monotonic()
    mgr.close(join_timeout=5)
    assert time.monotonic() - started < 2  # abandoned, not waited for (the call would take 30 s)
    job = job_of_turn(mgr, t)
    assert (job["status"], job["attempts"], job["lease_owner"], job["provider_calls"]) == ("pending", 0, None, 0)
    before = db_snapshot(mgr)
    release.set()
    worker = mgr.worker.thread
    assert worker is not None
    worker.join(5)
    assert not worker.is_alive()
    time.sleep(0.2)  # heartbeats would have fired by now
    assert db_snapshot(mgr) == before
    assert thread_errors == []
    assert not [r for r in caplog.records if r.exc_info]  # no logged traceback either


def test_the_released_job_is_claimed_with_its_full_budget_by_the_next_manager(make_manager, llm_stub):
    mgr = make_manager(MEMORY_LEASE_SECONDS=30, timeout=30)
    t = add_turn(mgr, USER, "ok")
    release = threading.Event()
    llm_stub.script("extraction", Reply(content="{}", wait_event=release), Reply(status=503), ext_reply())
    flusher = threading.Thread(target=mgr.process_pending, daemon=True)
    flusher.start()
    assert llm_stub.wait_for_requests(1, task="extraction")
    mgr.close(join_timeout=5)
    release.set()
    flusher.join(5)
    nxt = make_manager()
    nxt.runner.timing = dataclasses.replace(nxt.runner.timing, retry_delay=0)
    # two claims are left: a transient error still gets its durable retry
    assert nxt.runner.step(force=True).status == "retry_wait"
    assert nxt.runner.step(force=True).status == "succeeded_no_output"


def test_cli_new_with_a_short_timeout_returns_quietly_releases_the_job_and_warns_on_stderr(
        make_manager, llm_stub, invoke_cli, thread_errors):
    queued = make_manager(stub=False)  # no model: the turn's extraction job waits
    add_turn(queued, USER, "ok")
    queued.close()
    # the SDK's read timeout ends the slow call while close() still waits; its retry then met the closed
    # client (`RuntimeError: client has been closed`, a traceback) before the fix
    (Path(os.environ["AUTOPATCH_HOME"]) / "config.toml").write_text("llm_timeout_seconds = 1\n", encoding="utf-8")
    llm_stub.default("extraction", Reply(content=json.dumps(ext_reply()), delay=10))
    rc, out, err = invoke_cli("new", "--timeout", "0.5", env={
        "AUTOPATCH_LLM_BASE_URL": llm_stub.base_url, "AUTOPATCH_LLM_MODEL": "gpt-4o",
        "AUTOPATCH_MEMORY_LEASE_SECONDS": "30"})
    assert rc == 0, err
    assert "warning: the Memory flush timed out: 1 job(s)" in err
    assert "timed out" not in out and "New thread" in out
    [job] = jobs(queued, "extraction")  # handed back at close: pending, its claim not spent
    assert (job["status"], job["attempts"], job["lease_owner"]) == ("pending", 0, None)
    time.sleep(1.0)  # the abandoned call's read timeout (and, before, its retry) has come by now
    assert "Traceback" not in err and thread_errors == []
    assert jobs(queued, "extraction") == [job]  # and nothing was written after close
