"""`memory merge-scan` and `memory merge` on the command line: exact JSON keys (contracts §4),
human output, exit codes."""

from __future__ import annotations

from tests.support.fixtures import DEFAULT_REMOTE, is_error_doc
from tests.support.pipeline_helpers import stub_env
from tests.support.store_helpers import add_item, checkout, counts, db_of, file_digest, meta, name_of, used, verdict

SCAN_KEYS = {"engine", "truncated", "proposals"}
PROPOSAL_KEYS = {"source", "target", "confidence", "judged_by", "reason", "source_evidence", "target_evidence"}
EVIDENCE_KEYS = {"store", "label", "root", "remote", "fact_count", "subjects", "sample_statements"}
MERGE_KEYS = {"target", "merged_turns", "merged_items", "label_moved", "root_moved", "aliases", "reorg_status"}


def _clones(tmp_path, open_mgr):
    a = checkout(tmp_path, "one/proj", remote=DEFAULT_REMOTE)
    b = checkout(tmp_path, "two/proj", remote=DEFAULT_REMOTE)
    m = open_mgr(a)
    add_item(m, "parser includes")
    add_item(m, "lexer tokens")
    m.close()
    used(open_mgr(b)).close()
    return a, b


def _model_env(llm_stub) -> dict[str, str]:
    env = stub_env(llm_stub)
    return {k: v for k, v in env.items() if k.startswith("AUTOPATCH_LLM")}


def test_merge_scan_json_keys_no_model(tmp_path, open_mgr, invoke_cli):
    a, b = _clones(tmp_path, open_mgr)
    rc, out, err = invoke_cli("memory", "merge-scan", json=True, cwd=a)
    assert rc == 0, err
    assert set(out) == SCAN_KEYS
    assert (out["engine"], out["truncated"]) == ("no_model", False)
    [p] = out["proposals"]
    assert set(p) == PROPOSAL_KEYS
    assert set(p["source_evidence"]) == set(p["target_evidence"]) == EVIDENCE_KEYS
    assert (p["source"], p["target"], p["confidence"], p["judged_by"]) == (name_of(b), name_of(a), "certain", "remote")
    assert isinstance(p["reason"], str) and p["reason"]
    assert p["target_evidence"]["fact_count"] == 2
    assert p["target_evidence"]["subjects"] == ["lexer tokens", "parser includes"]

    rc, text, err = invoke_cli("memory", "merge-scan", cwd=a)
    assert rc == 0 and name_of(b) in text and "certain" in text
    assert "no Memory model" in err


def test_merge_scan_json_with_the_model(tmp_path, open_mgr, invoke_cli, llm_stub):
    a, b = _clones(tmp_path, open_mgr)
    c = checkout(tmp_path, "three/other", git=False)
    m = open_mgr(c)
    add_item(m, "parser includes")
    m.close()
    llm_stub.default("merge_judge", verdict(True, "low", "same subjects"))
    rc, out, err = invoke_cli("memory", "merge-scan", json=True, cwd=a, env=_model_env(llm_stub))
    assert rc == 0, err
    assert out["engine"] == "model"
    assert {(p["judged_by"], p["confidence"]) for p in out["proposals"]} == {("remote", "certain"), ("engine", "low")}
    assert len(llm_stub.requests_for("merge_judge")) == 2


def test_merge_json_keys_and_human_output(tmp_path, open_mgr, invoke_cli, llm_stub):
    a, b = _clones(tmp_path, open_mgr)
    na, nb = name_of(a), name_of(b)
    rc, out, err = invoke_cli("memory", "merge", nb, na, "--no-organize", json=True, cwd=a,
                              env=_model_env(llm_stub))
    assert rc == 0, err
    assert set(out) == MERGE_KEYS
    assert out["target"] == na and out["aliases"] == [nb] and out["reorg_status"] == "skipped"
    assert isinstance(out["merged_turns"], int) and isinstance(out["merged_items"], int)
    assert isinstance(out["label_moved"], bool) and isinstance(out["root_moved"], bool)
    assert llm_stub.requests == []
    rc, listed, _ = invoke_cli("memory", "stores", json=True, cwd=a)
    assert {s["store"]: s["retired"] for s in listed["stores"]} == {na: False, nb: True}

    c = checkout(tmp_path, "three/proj", remote=DEFAULT_REMOTE)
    used(open_mgr(c)).close()
    rc, text, err = invoke_cli("memory", "merge", name_of(c), na, cwd=a)
    assert rc == 0, err
    assert f"into {na}" in text and "retired" in text
    assert "organize: not run: no Memory model" in text and "no_model" not in text  # words, not a status code


def test_merge_errors_exit_codes_and_nothing_written(tmp_path, open_mgr, invoke_cli):
    a, b = _clones(tmp_path, open_mgr)
    na, nb = name_of(a), name_of(b)
    before = [file_digest(db_of(a)), file_digest(db_of(b))]
    c = checkout(tmp_path, "elsewhere", git=False)
    for args, code, text in (
        ((na, na), 2, "two different stores"),
        ((na, "project-0000000000000000000000ZZZZ"), 2, "unknown store"),
    ):
        rc, out, err = invoke_cli("memory", "merge", *args, json=True, cwd=c)
        assert rc == code and is_error_doc(out, code) and text in err and "Traceback" not in err
    rc, _, err = invoke_cli("memory", "merge", na, cwd=c)
    assert rc == 2  # usage: TARGET missing
    assert [file_digest(db_of(a)), file_digest(db_of(b))] == before

    db_of(b).write_bytes(b"\0" * 4096)  # a damaged store
    rc, out, err = invoke_cli("memory", "merge", nb, na, json=True, cwd=c)
    assert rc == 1 and is_error_doc(out, 1) and nb in err and "not usable" in err
    assert meta(db_of(a))["retired_into"] is None and counts(db_of(a))["audit_events"] == 0


def test_the_redirect_notice_goes_to_stderr(tmp_path, open_mgr, invoke_cli):
    a, b = _clones(tmp_path, open_mgr)
    na, nb = name_of(a), name_of(b)
    rc, out, err = invoke_cli("memory", "merge", nb, na, json=True, cwd=b)
    assert rc == 0, err
    assert out["target"] == na
    rc, out, err = invoke_cli("memory", "list", json=True, cwd=b)
    assert rc == 0
    assert {i["subject"] for i in out["items"]} == {"parser includes", "lexer tokens"}
    assert f"({nb}) was merged into {na}" in err
