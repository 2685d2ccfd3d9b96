"""`ask` with a main call longer than the turn lease while a second process runs `memory process`
(issue 10 §1, black-box): the turn stays the request's, its answer is saved, `ask` exits 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from tests.support.fixtures import PROJECT_ROOT, db_path, query

LEASE_ENV = {"AUTOPATCH_MEMORY_LEASE_SECONDS": "0.5", "AUTOPATCH_MEMORY_HEARTBEAT_SECONDS": "0.1"}


def test_ask_outliving_its_lease_keeps_the_turn_against_a_second_process(repo, model_env, llm_stub,
                                                                          invoke_cli) -> None:
    second: dict[str, object] = {}

    def chat(_request) -> str:
        # the second process starts (imports, opens the store, recovers, processes) well after the
        # turn's 0.5 s lease would have run out without renewal: a fast start-up must not make it early
        time.sleep(1.2)
        env = {**os.environ, **LEASE_ENV, "PYTHONPATH": str(PROJECT_ROOT)}
        proc = subprocess.run([sys.executable, "-m", "autopatch_tui", "memory", "process", "--json"], cwd=str(repo),
                              env=env, capture_output=True, text=True, timeout=60)
        second.update(rc=proc.returncode, out=proc.stdout, err=proc.stderr)
        return "Slow but complete answer."

    llm_stub.default("chat", chat)
    rc, out, err = invoke_cli("ask", "Walk me through the build.", "--intent", "general_chat", json=True,
                              env=LEASE_ENV)
    assert second["rc"] == 0, second["err"]
    assert float(query(db_path(repo), "SELECT max(ended_at - created_at) FROM turns")[0][0]) > 1.0
    assert json.loads(str(second["out"]))["succeeded"] + json.loads(str(second["out"]))["succeeded_no_output"] == 0
    assert rc == 0, err
    assert out["state"] == "completed" and out["answer"] == "Slow but complete answer."
    [row] = query(db_path(repo), "SELECT state, assistant_text FROM turns")
    assert tuple(row) == ("completed", "Slow but complete answer.")
