"""What leaves the process (contracts §5, §6, §7; spec: 查看 Memory job 错误; JSON export), the review
summary (contracts §1) and the `memory process` command (contracts §4)."""

from __future__ import annotations

import json
import logging

import pytest

from tests.support.llm_stub import Reply
from tests.support.pipeline_helpers import (
    add_turn,
    cand,
    create_all,
    ext_reply,
    src,
    stub_env,
)

KEY = "sk-FAKE-SECRET-KEY-93c1a7"
BODY = "PROVIDER-BODY-MARKER-7731"
QUOTE = "USER-QUOTE-MARKER-5521"
REJECTED = "REJECTED-REPLY-MARKER-4410"
PROCESS_KEYS = {"succeeded", "succeeded_no_output", "retry_wait", "failed", "pending"}
STATUS_KEYS = {"state", "db_path", "schema_version", "supported_schema_version", "diagnostic", "generation",
               "active_thread_id", "threads", "turns", "active_items", "jobs", "failures", "summary", "cause",
               "failures_total", "refusals", "review"}
FAILURE_KEYS = {"job_id", "kind", "status", "category", "phase", "stage", "rule", "provider_calls", "attempts"}


@pytest.mark.parametrize("debug", ["0", "1"])
def test_secrets_never_reach_status_export_logs_or_notices(make_manager, llm_stub, caplog, debug):
    caplog.set_level(logging.DEBUG)
    mgr = make_manager(LLM_API_KEY=KEY, DEBUG=debug)
    notices = []
    mgr.events.subscribe(lambda e: notices.append(repr(e)))
    add_turn(mgr, f"Remember {QUOTE}: always use tabs.", "ok")
    # 1) a provider error whose body carries a marker (retryable, then terminal)
    llm_stub.script("extraction", Reply(status=503, error_body={"error": {"message": f"{BODY} {KEY}"}}))
    assert mgr.runner.step(force=True).status == "retry_wait"
    # 2) a second job: a rejected reply and a rejected repair, both carrying markers
    mgr.store.conn().execute("UPDATE memory_jobs SET available_at = 1e18")  # keep job 1 waiting
    t2 = add_turn(mgr, f"{QUOTE} never use var", "ok")
    rejected = ext_reply(cand(src(t2, "user", f"{REJECTED} {QUOTE}"), subject=REJECTED), checkpoint=REJECTED)
    llm_stub.script("extraction", rejected)
    llm_stub.script("extraction_repair", Reply(status=400, error_body=f"{BODY} bad request"))
    assert mgr.runner.step(force=True).status == "failed"
    # 3) an accepted item, so that the user quote is legitimately in the store
    t3 = add_turn(mgr, f"Please always remember {QUOTE}.", "ok")
    llm_stub.script("extraction", ext_reply(cand(src(t3, "user", f"always remember {QUOTE}"), subject="marker")))
    llm_stub.default("consolidation", create_all)
    mgr.process_pending()
    assert llm_stub.requests[0].headers["authorization"] == f"Bearer {KEY}"  # the key was really used

    status = mgr.status()
    status_json = status.model_dump_json()
    assert set(json.loads(status_json)) == STATUS_KEYS
    for secret in (KEY, BODY, QUOTE, REJECTED, llm_stub.base_url, "127.0.0.1"):
        assert secret not in status_json
    fails = {f.job_id: f for f in status.failures}
    assert len(fails) == 2
    for f in status.failures:
        assert set(f.model_dump()) == FAILURE_KEYS
    assert {(f.category, f.phase, f.stage, f.status) for f in status.failures} == {
        ("transient_provider", "provider", "primary", "retry_wait"),
        ("bad_request", "provider", "repair", "failed")}

    export = mgr.export().read_text(encoding="utf-8")
    for secret in (KEY, BODY, REJECTED, llm_stub.base_url):
        assert secret not in export
    snap = json.loads(export)
    assert all(j["failure"] is None or set(j["failure"]) == FAILURE_KEYS for j in snap["jobs"])
    # the user's words are in the export only where the contract puts them: RAW turns and provenance
    assert QUOTE in json.dumps(snap["turns"], ensure_ascii=False)
    for section in ("meta", "threads", "jobs"):
        assert QUOTE not in json.dumps(snap[section], ensure_ascii=False)
    assert [c["subject"] for c in snap["candidates"]] == ["marker"]

    # the app's log output: everything its own loggers say, and warnings or worse from any library
    # (the CLI configures logging at WARNING; third-party DEBUG/INFO chatter is never emitted)
    emitted = [r for r in caplog.records if r.name.startswith("autopatch_tui") or r.levelno >= logging.WARNING]
    logged = "\n".join(r.getMessage() + " " + str(r.exc_info or "") for r in emitted)
    for text in (logged, "\n".join(notices)):
        for secret in (KEY, BODY, QUOTE, REJECTED, llm_stub.base_url):
            assert secret not in text


def test_memory_process_and_status_from_the_command_line(run_cli, make_manager, llm_stub, isolated_env):
    (isolated_env / "config.toml").write_text("llm_max_retries = 1\n")  # keep the SDK backoff short
    env = stub_env(llm_stub, LLM_API_KEY=KEY)
    llm_stub.default("extraction", Reply(status=503, error_body={"error": {"message": BODY}}))
    writer = make_manager(stub=False)  # the same repo: writes a turn, processes nothing
    add_turn(writer, f"{QUOTE} always use tabs", "ok")
    rc, out, err = run_cli("memory", "process", json=True, env=env)
    assert rc == 0 and out == {"succeeded": 0, "succeeded_no_output": 0, "retry_wait": 1, "failed": 0,
                               "pending": 0}
    assert len(llm_stub.requests_for("extraction")) == 1  # Memory calls get no SDK retry: the job's retry_wait
    rc, status, err2 = run_cli("memory", "status", json=True, env=env)
    assert rc == 0 and set(status) == STATUS_KEYS and status["jobs"]["retry_wait"] == 1
    [failure] = status["failures"]
    assert set(failure) == FAILURE_KEYS
    assert (failure["category"], failure["phase"], failure["stage"], failure["attempts"]) == (
        "transient_provider", "provider", "primary", 1)
    for text in (json.dumps(status), err, err2):
        assert KEY not in text and BODY not in text and QUOTE not in text and llm_stub.base_url not in text


def test_memory_process_without_a_model(run_cli, repo):
    rc, out, _err = run_cli("memory", "process", json=True)
    assert rc == 0 and set(out) == PROCESS_KEYS and out["pending"] == 0


# --------------------------------------------------------------------------- review summary


def test_summary_is_refreshed_after_consolidation_and_goes_stale_after_forget(make_manager, llm_stub):
    mgr = make_manager()
    llm_stub.default("consolidation", create_all)
    assert mgr.status().summary.status == "missing"
    t = add_turn(mgr, "From now on always use tabs.", "ok")
    llm_stub.script("extraction", ext_reply(cand(src(t, "user", "always use tabs"), subject="indentation style")))
    mgr.process_pending()
    summary = mgr.paths.summary
    assert summary.exists() and "indentation style" in summary.read_text(encoding="utf-8")
    assert oct(summary.stat().st_mode & 0o777) == "0o600"
    assert mgr.status().summary.status == "current"

    [item] = mgr.list_items()
    mgr.forget(item.id)
    assert mgr.status().summary.status == "stale"

    t2 = add_turn(mgr, "Never use var.", "ok")
    llm_stub.script("extraction", ext_reply(cand(src(t2, "user", "Never use var."), subject="var keyword")))
    mgr.process_pending()
    assert mgr.status().summary.status == "current"
    text = summary.read_text(encoding="utf-8")
    assert "var keyword" in text and "indentation style" not in text

    summary.unlink()
    assert mgr.status().summary.status == "missing"
