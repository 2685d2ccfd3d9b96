"""Deterministic evidence wins over the model's word (issue 30 item 13): two stores whose origin
remotes differ are never proposed above `low` confidence, and the reason says to review; the
command line names the judge as the JSON's engine does ("judged by model") and shows the evidence."""

from __future__ import annotations

from tests.stores.test_scan import _store
from tests.support.store_helpers import service_for, verdict


def test_different_remotes_are_at_most_low_whatever_the_model_says(tmp_path, open_mgr, model_settings, llm_stub):
    a = _store(tmp_path, open_mgr, "parser", "parser includes", "lexer tokens",
               remote="https://git.test/acme/parser.git")
    b = _store(tmp_path, open_mgr, "parser-fork", "parser includes", remote="https://git.test/other/parser-fork.git")
    llm_stub.default("merge_judge", verdict(True, "high", "same subjects"))

    [p] = service_for(model_settings).scan().proposals

    assert {p.source, p.target} == {a, b}
    assert (p.confidence, p.judged_by) == ("low", "engine")
    assert p.reason.startswith("low confidence — review: their origin remotes differ")
    assert "git.test/acme/parser" in p.reason and "git.test/other/parser-fork" in p.reason
    assert p.reason.endswith("same subjects")  # the model's reason is kept, after the evidence


def test_a_missing_remote_is_no_evidence_of_a_difference(tmp_path, open_mgr, model_settings, llm_stub):
    _store(tmp_path, open_mgr, "alpha", "parser includes", remote="https://git.test/acme/alpha.git")
    _store(tmp_path, open_mgr, "alpha-old", "parser includes")  # a plain folder: no remote at all
    llm_stub.default("merge_judge", verdict(True, "high", "same subjects"))
    [p] = service_for(model_settings).scan().proposals
    assert (p.confidence, p.reason) == ("high", "same subjects")


def test_the_cli_says_judged_by_model_and_shows_the_evidence(tmp_path, open_mgr, model_settings, llm_stub,
                                                            invoke_cli, monkeypatch):
    _store(tmp_path, open_mgr, "parser", "parser includes", remote="https://git.test/acme/parser.git")
    _store(tmp_path, open_mgr, "parser-fork", "parser includes", remote="https://git.test/other/parser-fork.git")
    llm_stub.default("merge_judge", verdict(True, "high", "same subjects"))
    env = {"AUTOPATCH_LLM_BASE_URL": llm_stub.base_url, "AUTOPATCH_LLM_MODEL": "gpt-4o"}
    rc, out, err = invoke_cli("memory", "merge-scan", env=env)
    assert rc == 0, err
    assert "[low, judged by model]" in out and "judged by engine" not in out
    assert "remote git.test/acme/parser" in out and "remote git.test/other/parser-fork" in out
    assert str(tmp_path / "parser") in out and "fact(s)" in out
