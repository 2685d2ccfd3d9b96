"""The full-screen app in a real process on a pseudo-terminal, ended by a hang-up (SIGHUP with the
terminal gone, so drawing fails): Memory is flushed before the process ends and no job is left leased
(issue 10, deliverable 5). Without a handler the signal killed the process mid-job. SIGTERM, which
exits like ctrl+q, is sent for real to the Pilot app in test_exit_paths."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import threading
import time

import pytest

from autopatch_tui.core.manager import MemoryManager
from tests.support.fixtures import PROJECT_ROOT, db_path, query
from tests.support.llm_stub import CapturedRequest, Reply
from tests.support.pipeline_helpers import stub_env, stub_settings


def _slow_extraction(request: CapturedRequest) -> Reply:
    payload = json.loads(request.messages[-1]["content"])
    reply = {"thread_checkpoint": f"after {len(payload['turns'])} turn(s)", "candidates": []}
    return Reply(content=json.dumps(reply), delay=0.8)


def _drain(fd: int) -> None:
    while True:
        try:
            if not os.read(fd, 65536):
                return
        except OSError:
            return


@pytest.mark.parametrize("signum", [signal.SIGHUP], ids=["SIGHUP"])  # SIGTERM: test_exit_paths, in-process
def test_the_app_flushes_on_a_hangup(repo, llm_stub, signum) -> None:
    llm_stub.default("extraction", _slow_extraction)
    waits = {"AUTOPATCH_MEMORY_EXTRACTION_MAX_WAIT_SECONDS": "0"}  # the worker takes the job at once
    mgr = MemoryManager.open(repo, stub_settings(llm_stub, **waits))
    try:
        mgr.complete_turn(mgr.begin_turn("we ship on Fridays"), "Noted.")
    finally:
        mgr.close()
    env = stub_env(llm_stub, **waits)
    env.update(PYTHONPATH=str(PROJECT_ROOT), TERM="xterm-256color", COLUMNS="110", LINES="34")
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 34, 110, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "autopatch_tui", "--repo", str(repo)], stdin=slave,
                            stdout=slave, stderr=slave, env=env, start_new_session=True, close_fds=True)
    os.close(slave)
    drainer = threading.Thread(target=_drain, args=(master,), daemon=True)
    drainer.start()
    closed = False
    try:
        # the app is up and its worker holds the job's lease while the model "thinks"
        assert llm_stub.wait_for_requests(1, task="extraction", timeout=60), "the app never started its work"
        time.sleep(0.2)
        if signum == signal.SIGHUP:
            os.close(master)  # the terminal is gone: drawing now fails
            closed = True
        proc.send_signal(signum)
        rc = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if not closed:
            os.close(master)
    assert rc in (0, 128 + signum), rc  # a normal exit, or the hard exit after a hang-up's flush
    statuses = [r[0] for r in query(db_path(repo), "SELECT status FROM memory_jobs")]
    assert statuses == ["succeeded_no_output"], statuses  # finished, not left leased
    assert len(llm_stub.requests_for("extraction")) == 1
