"""Smoke test of `bench/memory_eval.py` (issue 29, deliverable 5) against the scripted stub: two
cases as real conversations in a child process, interrupted (SIGINT) in the middle of the second;
the rerun resumes from the results file without redoing the first, and prints the report."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.support.llm_stub import CapturedRequest, Reply
from tests.support.pipeline_helpers import create_all, payload_of

ROOT = Path(__file__).resolve().parents[2]
KEEP = "Always pin exact versions in requirements.txt."
ONE_OFF = "For this answer, keep it short."


def _case(cid: str, text: str, expect: str, category: str) -> dict:
    return {"id": cid, "lang": "en", "category": category,
            "turns": [{"user": text, "assistant": "OK.", "intent": "general_chat"}],
            "candidate": {"kind": "user_preference", "subject": "pinning" if expect == "keep" else "answer length",
                          "statement": text, "content": text, "strength": "hard", "origin": "explicit",
                          "recall_mode": "always", "applies_to_paths": [], "aliases": [], "keywords": ["versions"],
                          "sources": [{"turn": 0, "role": "user", "quote": text}]},
            "expect": expect, "lasting": True if expect == "keep" else None, "why": "smoke"}


def _extraction(req: CapturedRequest) -> dict:
    """The 'model' extracts the last turn's whole user text, with its own reading of it."""
    turn = payload_of(req)["turns"][-1]
    scope = "this_task" if "this answer" in turn["user"] else "lasting"
    return {"thread_checkpoint": "Checkpoint.", "candidates": [{
        "kind": "user_preference", "subject": "exact version pinning" if scope == "lasting" else "answer length",
        "statement": turn["user"], "content": turn["user"], "strength": "hard", "origin": "explicit",
        "recall_mode": "always", "applies_to_paths": [], "aliases": [], "keywords": ["versions"],
        "sources": [{"turn_id": turn["turn_id"], "role": "user", "quote": turn["user"]}],
        "evidence": {"speaker": "user", "stance": "asserted", "scope": scope}}]}


def _said(req: CapturedRequest, text: str) -> bool:
    return any(text in str(m.get("content")) for m in req.messages if m.get("role") == "user")


def _run(args: list[str], env: dict, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-I", str(ROOT / "bench" / "memory_eval.py"), *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_eval_runs_two_cases_and_resumes_after_an_interrupt(llm_stub, tmp_path):
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps({"writer": "smoke", "cases": [
        _case("s-keep", KEEP, "keep", "preference"), _case("s-oneoff", ONE_OFF, "refuse", "one_off")]}))
    release = threading.Event()

    def chat(req: CapturedRequest) -> str:
        if _said(req, ONE_OFF):
            release.wait(30)  # the second case hangs in its answer until the run is interrupted
        return "Noted."

    llm_stub.default("chat", chat)
    llm_stub.default("extraction", _extraction)
    llm_stub.default("consolidation", create_all)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOPATCH_")}
    env.update(AUTOPATCH_LLM_BASE_URL=llm_stub.base_url, AUTOPATCH_LLM_MODEL="gpt-4o", AUTOPATCH_LLM_API_KEY="test-key",
               AUTOPATCH_LLM_MAX_RETRIES="0", AUTOPATCH_HOME=str(tmp_path / "home"))
    results = tmp_path / "results.jsonl"
    args = ["--run", "--corpus", str(corpus), "--results", str(results)]

    first = _run(args, env, tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not any(_said(r, ONE_OFF) for r in llm_stub.requests_for("chat")):
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the second case never started"
            time.sleep(0.05)
        first.send_signal(signal.SIGINT)
        out, err = first.communicate(timeout=60)
    finally:
        release.set()
        if first.poll() is None:
            first.kill()
    assert first.returncode == 130, (out, err)
    assert "run again to resume" in out and "Traceback" not in err
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["s-keep"]
    assert rows[0]["stored"] and rows[0]["stored"][0]["match"] == "legit"

    before = len(llm_stub.requests)
    second = _run(args, env, tmp_path)
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, (out, err)
    again = llm_stub.requests[before:]
    assert not any(_said(r, KEEP) for r in again)  # case 1 was not redone
    assert any(_said(r, ONE_OFF) for r in again)
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["s-keep", "s-oneoff"]
    oneoff = rows[1]
    assert oneoff["stored"] == [] and oneoff["refusals"] and oneoff["legit"] == 0
    assert "1 already done" in out
    assert "corpus:preference" in out and "corpus:one_off" in out  # the per-category report
    assert "subject" not in json.dumps(rows)  # no model-written text without --with-text


def test_a_case_whose_memory_jobs_did_not_end_runs_again(llm_stub, tmp_path):
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps({"writer": "smoke", "cases": [_case("s-keep", KEEP, "keep", "preference")]}))
    llm_stub.default("chat", "Noted.")
    llm_stub.default("extraction", Reply(status=503))  # a server still starting
    llm_stub.default("consolidation", create_all)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOPATCH_")}
    env.update(AUTOPATCH_LLM_BASE_URL=llm_stub.base_url, AUTOPATCH_LLM_MODEL="gpt-4o", AUTOPATCH_LLM_API_KEY="test-key",
               AUTOPATCH_LLM_MAX_RETRIES="0", AUTOPATCH_HOME=str(tmp_path / "home"))
    results = tmp_path / "results.jsonl"
    args = ["--run", "--corpus", str(corpus), "--results", str(results)]
    out, err = _run(args, env, tmp_path).communicate(timeout=120)
    assert "INCOMPLETE" in out, (out, err)
    [row] = [json.loads(line) for line in results.read_text().splitlines()]
    assert row["complete"] is False and row["stored"] == []

    llm_stub.default("extraction", _extraction)  # the server is up now
    out, err = _run(args, env, tmp_path).communicate(timeout=120)
    assert "0 already done" in out and "1 to run" in out, (out, err)
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert [r["complete"] for r in rows] == [False, True] and rows[1]["stored"][0]["match"] == "legit"
    assert "corpus:preference  1" in out  # the report counts the case once, from its complete line
