"""Merge-scan (FR-056; contracts §3.3): the deterministic remote tier, the bounded model tier,
verdict handling, similarity ordering under the 50-pair cap, concurrency, `no_model`, direction,
bounded evidence."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

from autopatch_tui.core.stores.info import MAX_STATEMENT_CHARS, MAX_STATEMENTS, MAX_SUBJECTS, StoreInfo
from autopatch_tui.core.stores.scan import MAX_JUDGED_PAIRS, suggest_direction
from tests.support.fixtures import DEFAULT_REMOTE
from tests.support.llm_stub import Reply
from tests.support.store_helpers import (
    add_item,
    add_turns,
    checkout,
    copy_store_file,
    db_of,
    judge_payload,
    judged_pair,
    name_of,
    remove_store,
    service_for,
    used,
    verdict,
)

EVIDENCE_KEYS = {"store", "label", "root", "remote", "fact_count", "subjects", "sample_statements"}
PROPOSAL_KEYS = {"source", "target", "confidence", "judged_by", "reason", "source_evidence", "target_evidence"}


def _store(tmp_path: Path, open_mgr, name: str, *subjects: str, remote: str | None = None,
           git: bool = False) -> str:
    path = checkout(tmp_path, name, remote=remote, git=git or remote is not None)
    mgr = used(open_mgr(path))
    for s in subjects:
        add_item(mgr, s)
    mgr.close()
    return name_of(path)


# --------------------------------------------------------------------------- deterministic tier


def test_same_remote_is_certain_without_a_model_call(tmp_path, open_mgr, model_settings, llm_stub):
    a = _store(tmp_path, open_mgr, "one/proj", "parser", remote=DEFAULT_REMOTE)
    b = _store(tmp_path, open_mgr, "two/proj", "parser", "lexer",
               remote="git@github.com:Example-Org/example-project")  # the same repository, scp form
    llm_stub.default("merge_judge", verdict(False))

    result = service_for(model_settings).scan()

    assert result.engine == "model" and result.truncated is False
    assert llm_stub.requests_for("merge_judge") == []
    [p] = result.proposals
    assert set(p.as_dict()) == PROPOSAL_KEYS
    assert (p.confidence, p.judged_by) == ("certain", "remote")
    assert (p.source, p.target) == (a, b)  # both readable: more facts wins
    assert p.reason.strip()
    assert p.source_evidence["remote"] == p.target_evidence["remote"] == "github.com/example-org/example-project"


def test_remote_tier_only_pairs_the_same_remote(tmp_path, open_mgr, model_settings, llm_stub):
    a = _store(tmp_path, open_mgr, "one/proj", remote=DEFAULT_REMOTE)
    b = _store(tmp_path, open_mgr, "two/proj", remote=DEFAULT_REMOTE)
    c = _store(tmp_path, open_mgr, "three/other", remote="https://github.com/example-org/other.git")
    llm_stub.default("merge_judge", verdict(False))

    result = service_for(model_settings).scan()

    assert [(p.judged_by, {p.source, p.target}) for p in result.proposals] == [("remote", {a, b})]
    judged = {judged_pair(r) for r in llm_stub.requests_for("merge_judge")}
    assert judged == {frozenset((a, c)), frozenset((b, c))}  # the certain pair is never sent


def test_a_recorded_remote_alone_is_not_certain(tmp_path, open_mgr, settings, llm_stub):
    """The remote tier needs both roots readable here: a store copied from another machine (its root
    is not here) only has its recorded remote, which proves nothing."""
    a = _store(tmp_path, open_mgr, "here/proj", "parser", remote=DEFAULT_REMOTE)
    gone = checkout(tmp_path, "there/proj", remote=DEFAULT_REMOTE)
    used(open_mgr(gone)).close()
    loose = copy_store_file(db_of(gone), tmp_path / "downloads" / "memory.db")
    remove_store(db_of(gone))
    import shutil

    shutil.rmtree(gone)
    svc = service_for(settings, model=False)
    other = svc.add(loose).name
    assert other != a

    result = svc.scan()
    assert result.engine == "no_model"
    assert result.proposals == []


# --------------------------------------------------------------------------- model tier


def test_model_says_same_project(tmp_path, open_mgr, model_settings, llm_stub):
    a = _store(tmp_path, open_mgr, "alpha", "parser includes", "lexer tokens")
    b = _store(tmp_path, open_mgr, "alpha-old", "parser includes")
    llm_stub.default("merge_judge", verdict(True, "medium", "  same subjects and a similar root  "))

    result = service_for(model_settings).scan()

    [req] = llm_stub.requests_for("merge_judge")
    assert req.body["temperature"] == 0 and not req.body.get("stream")
    payload = judge_payload(req)
    assert set(payload) == {"a", "b"}
    assert set(payload["a"]) == set(payload["b"]) == EVIDENCE_KEYS
    [p] = result.proposals
    assert (p.confidence, p.judged_by, p.reason) == ("medium", "engine", "same subjects and a similar root")
    assert (p.source, p.target) == (b, a)  # both readable: the one with more facts is the target
    assert p.target_evidence["fact_count"] == 2 and p.source_evidence["fact_count"] == 1


def test_model_says_different_projects(tmp_path, open_mgr, model_settings, llm_stub):
    _store(tmp_path, open_mgr, "alpha", "parser")
    _store(tmp_path, open_mgr, "beta", "billing")
    llm_stub.default("merge_judge", verdict(False, "high", "different domains"))
    result = service_for(model_settings).scan()
    assert len(llm_stub.requests_for("merge_judge")) == 1
    assert result.engine == "model" and result.proposals == []


BAD_VERDICTS = {
    "prose": "Yes, these look like the same project to me.",
    "missing-reason": {"same_project": True, "confidence": "high"},
    "bad-enum": {"same_project": True, "confidence": "certain", "reason": "x"},
    "blank-reason": {"same_project": True, "confidence": "high", "reason": "   "},
    "string-bool": {"same_project": "yes", "confidence": "high", "reason": "x"},
    "extra-key": {"same_project": True, "confidence": "high", "reason": "x", "extra": 1},
    "array": [{"same_project": True, "confidence": "high", "reason": "x"}],
    "http-500": Reply(status=500),
    "http-400": Reply(status=400, error_body="bad request"),
    "broken-body": Reply(raw_body="{not json"),
}


def test_a_bad_verdict_is_skipped_never_a_crash(tmp_path, open_mgr, model_settings, llm_stub):
    _store(tmp_path, open_mgr, "alpha", "parser")
    _store(tmp_path, open_mgr, "alpha2", "parser")
    svc = service_for(model_settings)
    for n, (why, reply) in enumerate(BAD_VERDICTS.items(), start=1):
        llm_stub.default("merge_judge", reply)
        result = svc.scan()
        assert len(llm_stub.requests_for("merge_judge")) == n, why
        assert (result.engine, result.proposals) == ("model", []), why


def test_a_fenced_verdict_is_accepted(tmp_path, open_mgr, model_settings, llm_stub):
    _store(tmp_path, open_mgr, "alpha", "parser")
    _store(tmp_path, open_mgr, "alpha2", "parser")
    llm_stub.default("merge_judge", '```json\n{"same_project": true, "confidence": "low", "reason": "r"}\n```')
    [p] = service_for(model_settings).scan().proposals
    assert (p.confidence, p.judged_by) == ("low", "engine")


def test_one_bad_verdict_does_not_cost_the_others(tmp_path, open_mgr, model_settings, llm_stub):
    names = [_store(tmp_path, open_mgr, f"s{i}", "parser") for i in range(3)]
    bad = frozenset(names[:2])
    llm_stub.default("merge_judge", lambda req: Reply(status=500) if judged_pair(req) == bad else verdict(True))
    result = service_for(model_settings).scan()
    assert len(llm_stub.requests_for("merge_judge")) == 3
    assert {frozenset((p.source, p.target)) for p in result.proposals} == {
        frozenset((names[0], names[2])), frozenset((names[1], names[2]))}


# --------------------------------------------------------------------------- bounds


@pytest.fixture
def twelve(tmp_path, open_mgr) -> tuple[list[str], frozenset[str]]:
    """12 stores without remotes (66 pairs for the model). The two with the greatest names share
    their subjects; every other store has subjects of its own."""
    paths = [checkout(tmp_path, f"store{i:02d}", git=False) for i in range(12)]
    mgrs = [open_mgr(p) for p in paths]
    names = [name_of(p) for p in paths]
    order = sorted(range(12), key=lambda i: names[i])
    planted = order[-2:]
    for rank, i in enumerate(order):
        subjects = (["kafka consumer offsets", "schema registry client", "retry backoff policy"]
                    if i in planted else [f"topic{rank}a widget{rank}", f"unique{rank} gadget{rank}"])
        for s in subjects:
            add_item(mgrs[i], s)
        mgrs[i].close()
    return names, frozenset(names[i] for i in planted)


def test_cap_50_pairs_similar_first_at_most_4_at_once(twelve, model_settings, llm_stub):
    names, planted = twelve
    lock = threading.Lock()
    active = peak = 0

    def judge(req):
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.02)
        with lock:
            active -= 1
        return verdict(judged_pair(req) == planted, "high", "shared subjects")

    llm_stub.default("merge_judge", judge)
    progress: list[tuple[int, int]] = []
    result = service_for(model_settings).scan(progress=lambda d, t: progress.append((d, t)))

    calls = llm_stub.requests_for("merge_judge")
    assert len(calls) == MAX_JUDGED_PAIRS == 50
    assert len({judged_pair(r) for r in calls}) == 50  # 50 distinct pairs
    assert result.truncated is True
    # the planted pair is the very last of the 66 in name order, yet it is judged (first, by similarity)
    assert planted in {judged_pair(r) for r in calls}
    assert [frozenset((p.source, p.target)) for p in result.proposals] == [planted]
    assert 2 <= peak <= 4
    assert sorted(progress) == [(i, 50) for i in range(1, 51)]


def test_cancel_stops_judging(twelve, model_settings, llm_stub):
    llm_stub.default("merge_judge", verdict(True))
    cancel = threading.Event()
    cancel.set()
    result = service_for(model_settings).scan(cancel=cancel)
    assert llm_stub.requests_for("merge_judge") == []
    assert result.proposals == []


def test_evidence_is_bounded_and_goes_only_to_the_model(tmp_path, open_mgr, model_settings, llm_stub, caplog):
    path = checkout(tmp_path, "big", git=False)
    mgr = open_mgr(path)
    secret = "SECRET-STATEMENT-" + "z" * 400
    for i in range(40):
        add_item(mgr, f"subject number {i}", f"{secret} {i}")
    mgr.close()
    _store(tmp_path, open_mgr, "small", "parser")
    llm_stub.default("merge_judge", verdict(False))
    caplog.set_level(logging.DEBUG)

    result = service_for(model_settings).scan()

    [req] = llm_stub.requests_for("merge_judge")
    assert {r.task for r in llm_stub.requests} == {"merge_judge"}
    payload = judge_payload(req)
    big = payload["a"] if payload["a"]["fact_count"] == 40 else payload["b"]
    assert len(big["subjects"]) <= MAX_SUBJECTS and len(big["sample_statements"]) <= MAX_STATEMENTS
    assert all(len(s) <= MAX_STATEMENT_CHARS for s in big["sample_statements"])
    assert big["sample_statements"] and big["sample_statements"][0].startswith("SECRET-STATEMENT")
    assert result.proposals == []
    assert "SECRET-STATEMENT" not in caplog.text


def test_no_model_gives_deterministic_proposals_only(tmp_path, open_mgr, settings, llm_stub):
    a = _store(tmp_path, open_mgr, "one/proj", "x", remote=DEFAULT_REMOTE)
    b = _store(tmp_path, open_mgr, "two/proj", remote=DEFAULT_REMOTE)
    _store(tmp_path, open_mgr, "alpha", "parser")
    _store(tmp_path, open_mgr, "alpha2", "parser")

    result = service_for(settings).scan()  # settings without a model

    assert result.engine == "no_model" and result.truncated is False
    assert [(p.source, p.target, p.judged_by) for p in result.proposals] == [(b, a, "remote")]
    assert llm_stub.requests == []


def test_retired_and_unreadable_stores_are_not_scanned(tmp_path, open_mgr, settings):
    a = _store(tmp_path, open_mgr, "one/proj", "x", remote=DEFAULT_REMOTE)
    b = _store(tmp_path, open_mgr, "two/proj", remote=DEFAULT_REMOTE)
    c = _store(tmp_path, open_mgr, "three/proj", remote=DEFAULT_REMOTE)
    svc = service_for(settings)
    svc.merge(b, a)
    db_of(tmp_path / "three/proj").write_bytes(b"garbage" * 1000)
    assert c not in {p.source for p in svc.scan().proposals}
    assert svc.scan().proposals == []


# --------------------------------------------------------------------------- direction


def _info(name: str, root: str | None, facts: int) -> StoreInfo:
    return StoreInfo(db_path=Path("/nowhere/memory.db"), name=name, label=None, root=root, remote=None,
                     fact_count=facts, retired_into=None)


def test_direction_readable_root_then_facts_then_name(tmp_path):
    here, gone = str(tmp_path), str(tmp_path / "not-here")
    # a readable root wins over more facts
    src, tgt = suggest_direction(_info("project-B", gone, 99), _info("project-A", here, 1))
    assert (src.name, tgt.name) == ("project-B", "project-A")
    src, tgt = suggest_direction(_info("project-A", gone, 99), _info("project-B", here, 1))
    assert (src.name, tgt.name) == ("project-A", "project-B")
    # both readable (or both not): more facts wins
    src, tgt = suggest_direction(_info("project-A", here, 1), _info("project-B", here, 5))
    assert tgt.name == "project-B"
    src, tgt = suggest_direction(_info("project-A", None, 1), _info("project-B", gone, 5))
    assert tgt.name == "project-B"
    # then the lexicographically smaller name, whatever the argument order
    for pair in ((_info("project-A", here, 3), _info("project-B", here, 3)),
                 (_info("project-B", here, 3), _info("project-A", here, 3))):
        src, tgt = suggest_direction(*pair)
        assert (src.name, tgt.name) == ("project-B", "project-A")


def test_proposal_direction_prefers_the_store_whose_root_is_here(tmp_path, open_mgr, model_settings, llm_stub):
    here = _store(tmp_path, open_mgr, "alpha", "parser")
    gone_path = checkout(tmp_path, "far/alpha", git=False)
    mgr = open_mgr(gone_path)
    add_turns(mgr, 1)
    for s in ("parser", "lexer", "codegen"):
        add_item(mgr, s)
    mgr.close()
    loose = copy_store_file(db_of(gone_path), tmp_path / "usb" / "memory.db")
    import shutil

    shutil.rmtree(gone_path)
    svc = service_for(model_settings)
    far = svc.add(loose).name
    # the dead registry entry of the deleted checkout is not scanned
    llm_stub.default("merge_judge", verdict(True))

    [p] = svc.scan().proposals
    assert (p.source, p.target) == (far, here)
    assert p.target_evidence["root"] is not None and p.source_evidence["fact_count"] == 3
