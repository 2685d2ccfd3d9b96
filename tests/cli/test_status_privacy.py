"""`memory status` (contracts §5) never shows secrets or content (§6), in normal and debug mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import Settings
from tests.support.fixtures import db_path, raw_connect
from tests.support.memory_factory import add_item

STATUS_KEYS = {"state", "db_path", "schema_version", "supported_schema_version", "diagnostic", "generation",
               "active_thread_id", "threads", "turns", "active_items", "jobs", "failures", "summary", "cause",
               "failures_total", "refusals", "review"}
JOB_KEYS = {"pending", "leased", "retry_wait", "failed", "succeeded", "succeeded_no_output"}
FAILURE_KEYS = {"job_id", "kind", "status", "category", "phase", "stage", "rule", "provider_calls", "attempts"}
SECRETS = ("sk-test-SECRET123", "127.0.0.1:9", "private-endpoint", "USER-QUOTE-XYZ", "ANSWER-BODY-XYZ",
           "QUOTE-IN-SOURCE-XYZ")
SECRET_ENV = {"AUTOPATCH_LLM_API_KEY": "sk-test-SECRET123",
              "AUTOPATCH_LLM_BASE_URL": "http://127.0.0.1:9/private-endpoint",
              "AUTOPATCH_LLM_MODEL": "secret-model"}


@pytest.fixture
def busy_store(repo: Path, settings: Settings) -> dict[str, str]:
    """A store with content that must never be shown, and two failed/retrying jobs."""
    mgr = MemoryManager.open(repo, settings)
    try:
        h1 = mgr.begin_turn("please remember USER-QUOTE-XYZ forever")
        mgr.complete_turn(h1, "ANSWER-BODY-XYZ")
        h2 = mgr.begin_turn("second USER-QUOTE-XYZ")
        mgr.fail_turn(h2)
        h3 = mgr.begin_turn("third")
        mgr.complete_turn(h3, "ok")
        add_item(mgr.store.conn(), subject="Quotes", statement="Keep quotes.",
                 sources=[(h1.turn_id, "user", "QUOTE-IN-SOURCE-XYZ")])
    finally:
        mgr.close()
    conn = raw_connect(db_path(repo))
    conn.execute("UPDATE memory_jobs SET status = 'failed', attempts = 2, provider_calls = 2, completed_at = 9.0,"
                 " failure_category = 'auth', failure_phase = 'provider', failure_stage = 'primary',"
                 " failure_rule = NULL, updated_at = 10.0 WHERE turn_id = ?", (h1.turn_id,))
    conn.execute("UPDATE memory_jobs SET status = 'retry_wait', attempts = 1, provider_calls = 2,"
                 " failure_category = 'contract_violation', failure_phase = 'validate', failure_stage = 'repair',"
                 " failure_rule = 'extraction.quote_not_in_turn', updated_at = 11.0 WHERE turn_id = ?",
                 (h2.turn_id,))
    jobs = {r["turn_id"]: r["id"] for r in conn.execute("SELECT id, turn_id FROM memory_jobs")}
    conn.close()
    return {"failed": jobs[h1.turn_id], "retry": jobs[h2.turn_id]}


@pytest.mark.parametrize("debug", ["0", "1"])
def test_status_json_is_exact_and_private(debug: str, busy_store: dict[str, str], run_cli, invoke_cli) -> None:
    env = dict(SECRET_ENV, AUTOPATCH_DEBUG=debug)
    # debug mode through a real process (settings read at start-up), normal mode in-process
    rc, out, err = (run_cli if debug == "1" else invoke_cli)("memory", "status", json=True, env=env)
    assert rc == 0, err
    assert set(out) == STATUS_KEYS
    assert out["state"] == "healthy" and out["diagnostic"] is None
    assert (out["schema_version"], out["supported_schema_version"], out["generation"]) == (4, 4, 1)
    assert (out["threads"], out["turns"], out["active_items"]) == (1, 3, 1)
    assert set(out["jobs"]) == JOB_KEYS
    assert out["jobs"] == {"pending": 1, "leased": 0, "retry_wait": 1, "failed": 1, "succeeded": 0,
                           "succeeded_no_output": 0}
    assert set(out["summary"]) == {"status", "path"} and out["summary"]["status"] == "missing"
    assert all(set(f) == FAILURE_KEYS for f in out["failures"])
    assert sorted(out["failures"], key=lambda f: f["job_id"]) == sorted([
        {"job_id": busy_store["failed"], "kind": "extraction", "status": "failed", "category": "auth",
         "phase": "provider", "stage": "primary", "rule": None, "provider_calls": 2, "attempts": 2},
        {"job_id": busy_store["retry"], "kind": "extraction", "status": "retry_wait",
         "category": "contract_violation", "phase": "validate", "stage": "repair",
         "rule": "extraction.quote_not_in_turn", "provider_calls": 2, "attempts": 1},
    ], key=lambda f: f["job_id"])
    blob = repr(out) + err
    for secret in SECRETS + ("secret-model",):
        assert secret not in blob, secret


@pytest.mark.parametrize("debug", ["0", "1"])
def test_human_status_is_private_too(debug: str, busy_store: dict[str, str], invoke_cli) -> None:
    rc, out, err = invoke_cli("memory", "status", env=dict(SECRET_ENV, AUTOPATCH_DEBUG=debug))
    assert rc == 0, err
    assert "healthy" in out
    assert busy_store["failed"] in out and "category=auth" in out and "stage=repair" in out
    for secret in SECRETS:
        assert secret not in out + err, secret


def test_errors_do_not_leak_configuration_or_content(busy_store: dict[str, str], invoke_cli) -> None:
    """Commands that fail still never echo the key, the endpoint or stored text."""
    for args, code in ((("memory", "show", "mem-nope"), 1), (("memory", "forget", "mem-nope"), 1),
                       (("memory", "show", "mem-"), 0), (("memory", "list", "--kind", "nope"), 2)):
        rc, out, err = invoke_cli(*args, env=SECRET_ENV)
        if code:
            assert rc == code, (args, rc, err)
        for secret in SECRETS[:3]:
            assert secret not in out + err, (args, secret)
