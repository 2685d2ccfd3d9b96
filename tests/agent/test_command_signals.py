"""SIGTERM/SIGHUP during a store command other than `ask` (`memory process`, `new`, `memory merge`):
the signal unwinds to the manager's clean close, so the job in flight is handed back (not leased,
its attempt not spent); the command ends with one line and exit code 1, never a traceback.
Real processes: the signal is the point."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import load_settings
from tests.support.fixtures import PROJECT_ROOT, db_path, query
from tests.support.llm_stub import Reply


def _queue_one_extraction(repo) -> None:
    mgr = MemoryManager.open(repo, load_settings())
    try:
        handle = mgr.begin_turn("Why is the build slow?")
        mgr.complete_turn(handle, "The linker.")
    finally:
        mgr.close()


def _jobs(repo) -> list[tuple]:
    return [tuple(r) for r in query(db_path(repo), "SELECT kind, status, attempts, lease_owner FROM memory_jobs")]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_signal_during_memory_process_hands_the_job_back(repo, model_env, llm_stub, signum) -> None:
    _queue_one_extraction(repo)
    assert _jobs(repo) == [("extraction", "pending", 0, None)]
    release = threading.Event()
    llm_stub.default("extraction", Reply(content="{}", wait_event=release))
    env = {**os.environ, **model_env, "PYTHONPATH": str(PROJECT_ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "autopatch_tui", "memory", "process"], cwd=str(repo), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8")
    try:
        assert llm_stub.wait_for_requests(1, task="extraction", timeout=30), proc.poll()
        assert [j[1] for j in _jobs(repo)] == ["leased"]
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err
    assert "Traceback" not in err and out == ""
    assert err.count("\n") == 1 and f"terminated by {signal.Signals(signum).name}" in err
    assert _jobs(repo) == [("extraction", "pending", 0, None)]  # handed back: its claim is not spent
