"""`autopatch-tui ask` ended by SIGTERM or SIGHUP (issue 10, deliverable 5): the turn is kept (failed,
its text saved), the exit flush still runs once within its bound, and no job is left leased. A
signal that arrives during the flush does not cut it short. Real processes: the signal is the point."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest

from tests.agent.conftest import extraction_ok
from tests.support.fixtures import (
    PROJECT_ROOT,
    db_path,
    is_error_doc,
    parse_single_json,
    query,
)
from tests.support.llm_stub import CapturedRequest, Reply


def _start_ask(repo, env: dict[str, str], text: str) -> subprocess.Popen:
    full = dict(os.environ)
    full.update(env)
    full["PYTHONPATH"] = str(PROJECT_ROOT)
    return subprocess.Popen([sys.executable, "-m", "autopatch_tui", "ask", text, "--intent", "general_chat",
                             "--json"], cwd=str(repo), env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, encoding="utf-8")


def _jobs(repo) -> list[tuple[str, str]]:
    """(kind, status) of every job; a processed extraction without candidates is `succeeded_no_output`."""
    return [(r["kind"], r["status"]) for r in query(db_path(repo), "SELECT kind, status FROM memory_jobs")]


DONE = [("extraction", "succeeded_no_output")]


@pytest.mark.parametrize("signum", [signal.SIGTERM], ids=["SIGTERM"])  # SIGHUP: the same handler, below
def test_signal_during_the_model_call_keeps_the_turn_and_still_flushes(repo, model_env, llm_stub, signum) -> None:
    release = threading.Event()
    llm_stub.default("chat", Reply(content="never shown", wait_event=release))
    proc = _start_ask(repo, model_env, "Why is the build slow?")
    try:
        assert llm_stub.wait_for_requests(1, task="chat", timeout=30), proc.stderr and proc.poll()
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err
    assert is_error_doc(parse_single_json(out), 1) and "Traceback" not in err  # `ask --json`: its error document
    assert f"terminated by {signal.Signals(signum).name}" in err
    [turn] = query(db_path(repo), "SELECT state, user_text, assistant_text FROM turns")
    assert tuple(turn) == ("failed", "Why is the build slow?", None)
    assert _jobs(repo) == DONE  # the exit flush ran after the signal
    assert len(llm_stub.requests_for("extraction")) == 1


def test_signal_during_the_exit_flush_does_not_cut_it_short(repo, model_env, llm_stub) -> None:
    llm_stub.default("chat", "The build is slow because of the linker.")
    in_flush = threading.Event()

    def slow_extraction(request: CapturedRequest) -> Reply:
        in_flush.set()
        return Reply(content=json.dumps(extraction_ok(request)), delay=0.6)

    llm_stub.default("extraction", slow_extraction)
    proc = _start_ask(repo, model_env, "Why is the build slow?")
    try:
        assert in_flush.wait(30)
        proc.send_signal(signal.SIGHUP)
        proc.send_signal(signal.SIGTERM)  # two exit paths at once: still one flush, not cut short
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert json.loads(out)["answer"] == "The build is slow because of the linker."
    assert _jobs(repo) == DONE  # not left leased by a killed flush
    assert len(llm_stub.requests_for("extraction")) == 1
    assert "Traceback" not in err
