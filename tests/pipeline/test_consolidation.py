"""Consolidation (spec: consolidation identity 与 revision; 同批 create 重复 logical identity;
revise 不得制造重复 active identity; bounded related targets 不缩小 identity 校验;
consolidation payload 超过模型容量; inferred item 不得覆盖 explicit item)."""

from __future__ import annotations

import pytest

from autopatch_tui.core.pipeline.consolidation import MAX_RELATED_ITEMS
from tests.support.pipeline_helpers import (
    active_items,
    add_turn,
    cand,
    candidates,
    consolidate_with,
    ext_reply,
    jobs,
    op,
    op_from_candidate,
    payload_of,
    rows,
    seed_consolidation,
    seed_item,
    src,
    table_counts,
)

RELATED_KEYS = {"id", "revision", "kind", "subject", "statement", "content", "strength", "origin", "recall_mode",
                "applies_to_paths", "aliases", "keywords"}
CANDIDATE_KEYS = {"candidate_id", "kind", "subject", "statement", "content", "strength", "origin", "recall_mode",
                  "applies_to_paths", "aliases", "keywords", "thread_id", "sources"}


def _decision(subject, **kw):
    kw.setdefault("kind", "project_decision")
    return cand(src("turn-x", "user", "quote"), subject=subject, statement=kw.pop("statement", f"About {subject}."),
                **kw)


def _fields(**kw):
    base = {"kind": "project_decision", "subject": "s", "statement": "st", "content": "", "strength": "soft", "origin": "explicit",
                "recall_mode": "on_match", "applies_to_paths": [], "aliases": [], "keywords": []}
    base.update(kw)
    return base


def _state(mgr):
    return ([(i["logical_id"], i["revision"], i["subject"], i["kind"]) for i in active_items(mgr)],
            rows(mgr, "SELECT count(*) AS n FROM memory_items")[0]["n"])


def _failed_and_suppressed(mgr, rule):
    [job] = [j for j in jobs(mgr, "consolidation") if j["status"] != "succeeded"]
    assert (job["status"], job["failure_category"], job["failure_stage"], job["failure_rule"]) == (
        "failed", "contract_violation", "repair", rule)
    assert {c["status"] for c in candidates(mgr) if c["consolidation_job_id"] == job["id"]} == {"suppressed"}


# --------------------------------------------------------------------------- create / payload


def test_create_gets_a_store_generated_logical_id_and_payload_matches_the_contract(make_manager, llm_stub):
    mgr = make_manager()
    existing = seed_item(mgr, subject="error handling", aliases=["exceptions"])
    t = add_turn(mgr, "From now on all errors must be logged with context.", "ok")
    llm_stub.script("extraction", ext_reply(cand(src(t, "user", "all errors must be logged with context"),
                                                 kind="project_decision", subject="error logging",
                                                 aliases=["error handling"])))
    mgr.runner.step(force=True)
    llm_stub.script("consolidation", consolidate_with(lambda p: [
        {**op_from_candidate("create", p["candidates"][0]), "id": "mem-CHOSEN-BY-MODEL"}]))
    llm_stub.script("consolidation_repair", consolidate_with(lambda p: [
        op_from_candidate("create", p["candidates"][0])]))
    assert mgr.runner.step(force=True).status == "succeeded"
    primary = payload_of(llm_stub.requests_for("consolidation")[0])
    assert set(primary) == {"candidates", "related_items"}
    assert [set(c) for c in primary["candidates"]] == [CANDIDATE_KEYS]
    assert primary["candidates"][0]["sources"] == [{"turn_id": t.turn_id, "role": "user",
                                                    "quote": "all errors must be logged with context"}]
    assert primary["candidates"][0]["thread_id"] == t.thread_id
    assert [r["id"] for r in primary["related_items"]] == [existing]
    assert set(primary["related_items"][0]) == RELATED_KEYS
    # an extra key ("id") is a contract violation: the model never chooses IDs
    assert payload_of(llm_stub.requests_for("consolidation_repair")[0])["violations"][0]["rule"] == "schema"
    new = [i for i in active_items(mgr) if i["logical_id"] != existing]
    assert len(new) == 1 and new[0]["logical_id"].startswith("mem-") and new[0]["revision"] == 1
    assert [c["status"] for c in candidates(mgr)] == ["accepted"]
    detail = mgr.show_item(new[0]["logical_id"])
    assert detail.sources[0].quote == "all errors must be logged with context"


def test_revise_keeps_the_logical_id_and_merges_recall_metadata(make_manager, llm_stub):
    mgr = make_manager()
    target = seed_item(mgr, subject="schema migration", aliases=["backward compatibility"], keywords=["schema"])
    _, [cid] = seed_consolidation(mgr, [_decision("schema migration", aliases=["delete legacy schema"],
                                                  statement="Delete the old schema outright.")])
    llm_stub.script("consolidation", {"operations": [op("revise", [cid], target, **_fields(
        subject="schema migration", statement="Delete the old schema outright.", aliases=[], keywords=[]))]})
    assert mgr.runner.step(force=True).status == "succeeded"
    detail = mgr.show_item(target)
    assert detail.revision == 2 and detail.status == "active"
    assert [r.status for r in detail.revisions] == ["superseded", "active"]
    assert {"backward compatibility", "delete legacy schema"} <= set(detail.aliases)
    assert "schema" in detail.keywords


def test_unknown_target_goes_to_repair_then_fails_and_suppresses(make_manager, llm_stub):
    mgr = make_manager()
    seed_item(mgr, subject="logging")
    before = _state(mgr)
    _, [cid] = seed_consolidation(mgr, [_decision("logging")])
    bad = {"operations": [op("revise", [cid], "mem-DOES-NOT-EXIST", **_fields(subject="logging"))]}
    llm_stub.script("consolidation", bad)
    llm_stub.script("consolidation_repair", bad)
    assert mgr.runner.step(force=True).status == "failed"
    assert payload_of(llm_stub.requests_for("consolidation_repair")[0])["violations"] == [
        {"rule": "unknown_target", "where": "validate"}]
    _failed_and_suppressed(mgr, "unknown_target")
    assert _state(mgr) == before


def test_revise_may_only_target_provided_related_items(make_manager, llm_stub):
    mgr = make_manager()
    unrelated = seed_item(mgr, subject="database engine", keywords=["postgres"])
    _, [cid] = seed_consolidation(mgr, [_decision("frontend framework")])
    bad = {"operations": [op("revise", [cid], unrelated, **_fields(subject="frontend framework"))]}
    llm_stub.script("consolidation", bad)
    llm_stub.script("consolidation_repair", bad)
    assert mgr.runner.step(force=True).status == "failed"
    assert payload_of(llm_stub.requests_for("consolidation")[0])["related_items"] == []
    _failed_and_suppressed(mgr, "unknown_target")
    assert mgr.show_item(unrelated).revision == 1


def test_two_creates_of_one_identity_roll_the_whole_result_back(make_manager, llm_stub):
    mgr = make_manager()
    _, [a, b, c] = seed_consolidation(mgr, [_decision("api style"), _decision("API Style!"), _decision("naming")])
    dup = {"operations": [op("create", [c], None, **_fields(subject="naming")),
                          op("create", [a], None, **_fields(subject="api style")),
                          op("create", [b], None, **_fields(subject="API  style"))]}
    llm_stub.script("consolidation", dup)
    llm_stub.script("consolidation_repair", dup)
    assert mgr.runner.step(force=True).status == "failed"
    assert active_items(mgr) == []  # not even the first, valid create survives
    assert table_counts(mgr)["recall_postings"] == table_counts(mgr)["recall_item_postings"] == 0
    assert payload_of(llm_stub.requests_for("consolidation_repair")[0])["violations"] == [
        {"rule": "duplicate_identity", "where": "commit"}]
    _failed_and_suppressed(mgr, "duplicate_identity")


def test_two_creates_repaired_into_create_and_reject_commit(make_manager, llm_stub):
    mgr = make_manager()
    _, [a, b] = seed_consolidation(mgr, [_decision("api style"), _decision("api style")])
    llm_stub.script("consolidation", {"operations": [op("create", [a], None, **_fields(subject="api style")),
                                                     op("create", [b], None, **_fields(subject="api style"))]})
    llm_stub.script("consolidation_repair", {"operations": [op("create", [a, b], None, **_fields(subject="api style"))]})
    assert mgr.runner.step(force=True).status == "succeeded"
    assert [i["subject"] for i in active_items(mgr)] == ["api style"]
    assert {c["status"] for c in candidates(mgr)} == {"accepted"}


def test_revise_onto_another_items_identity_rolls_back(make_manager, llm_stub):
    mgr = make_manager()
    a = seed_item(mgr, subject="error format", keywords=["errors"])
    b = seed_item(mgr, subject="error codes", keywords=["errors"])
    before = _state(mgr)
    _, [cid] = seed_consolidation(mgr, [_decision("error format", keywords=["errors"])])
    bad = {"operations": [op("revise", [cid], b, **_fields(subject="Error Format"))]}
    llm_stub.script("consolidation", bad)
    llm_stub.script("consolidation_repair", bad)
    assert mgr.runner.step(force=True).status == "failed"
    sent = {r["id"] for r in payload_of(llm_stub.requests_for("consolidation")[0])["related_items"]}
    assert {a, b} <= sent
    _failed_and_suppressed(mgr, "duplicate_identity")
    assert _state(mgr) == before  # neither A replaced nor B revised
    assert mgr.show_item(a).revision == 1 and mgr.show_item(b).revision == 1


def test_identity_check_sees_items_beyond_the_bounded_registry(make_manager, llm_stub):
    mgr = make_manager()
    oldest = seed_item(mgr, subject="cache policy 00", keywords=["cache"])
    for i in range(1, MAX_RELATED_ITEMS + 2):
        seed_item(mgr, subject=f"cache policy {i:02d}", keywords=["cache", "alpha", "beta", "gamma"])
    before = _state(mgr)
    # the candidate's own identity is new, so its holder lookup adds nothing; the model then creates
    # an item whose identity only the (display-bounded) oldest item holds
    _, [cid] = seed_consolidation(mgr, [_decision("cache policy fresh", keywords=["cache", "alpha", "beta", "gamma"])])
    dup = {"operations": [op("create", [cid], None, **_fields(subject="cache policy 00"))]}
    llm_stub.script("consolidation", dup)
    llm_stub.script("consolidation_repair", dup)
    assert mgr.runner.step(force=True).status == "failed"
    related = payload_of(llm_stub.requests_for("consolidation")[0])["related_items"]
    assert len(related) == MAX_RELATED_ITEMS
    assert oldest not in {r["id"] for r in related}  # bounded display ...
    _failed_and_suppressed(mgr, "duplicate_identity")  # ... but the identity check saw it
    assert _state(mgr) == before


def test_a_restatement_always_sees_its_identity_holder(make_manager, llm_stub):
    mgr = make_manager()
    oldest = seed_item(mgr, subject="cache policy 00", keywords=["cache"])
    for i in range(1, MAX_RELATED_ITEMS + 2):
        seed_item(mgr, subject=f"cache policy {i:02d}", keywords=["cache", "alpha", "beta", "gamma"])
    _, [cid] = seed_consolidation(mgr, [_decision("Cache Policy 00", keywords=["cache", "alpha", "beta", "gamma"])])
    llm_stub.script("consolidation", {"operations": [op("revise", [cid], oldest, **_fields(subject="cache policy 00"))]})
    assert mgr.runner.step(force=True).status == "succeeded"
    related = payload_of(llm_stub.requests_for("consolidation")[0])["related_items"]
    assert related[0]["id"] == oldest and len(related) == MAX_RELATED_ITEMS
    assert mgr.show_item(oldest).revision == 2


def test_preference_and_decision_with_one_subject_share_a_revision_chain(make_manager, llm_stub):
    mgr = make_manager()
    pref = seed_item(mgr, subject="commit messages", kind="user_preference", strength="soft",
                     keywords=["commits"])
    _, [cid] = seed_consolidation(mgr, [_decision("commit messages", keywords=["commits"],
                                                  statement="Use conventional commits.")])
    llm_stub.script("consolidation", {"operations": [op("revise", [cid], pref, **_fields(
        subject="commit messages", statement="Use conventional commits."))]})
    assert mgr.runner.step(force=True).status == "succeeded"
    detail = mgr.show_item(pref)
    assert (detail.kind, detail.revision, detail.statement) == ("project_decision", 2, "Use conventional commits.")
    assert [i["logical_id"] for i in active_items(mgr)] == [pref]


def test_a_decision_cannot_be_created_beside_a_preference_of_the_same_subject(make_manager, llm_stub):
    mgr = make_manager()
    seed_item(mgr, subject="commit messages", kind="user_preference", strength="soft")
    _, [cid] = seed_consolidation(mgr, [_decision("commit messages")])
    dup = {"operations": [op("create", [cid], None, **_fields(subject="commit messages"))]}
    llm_stub.script("consolidation", dup)
    llm_stub.script("consolidation_repair", dup)
    assert mgr.runner.step(force=True).status == "failed"
    _failed_and_suppressed(mgr, "duplicate_identity")


def test_supersede_replaces_the_target_chain(make_manager, llm_stub):
    mgr = make_manager()
    old = seed_item(mgr, subject="http client", keywords=["requests"])
    _, [cid] = seed_consolidation(mgr, [_decision("http client library", keywords=["requests"],
                                                  statement="Use httpx instead of requests.")])
    llm_stub.script("consolidation", {"operations": [op("supersede", [cid], old, **_fields(
        subject="http client library", statement="Use httpx instead of requests."))]})
    assert mgr.runner.step(force=True).status == "succeeded"
    assert mgr.show_item(old).status == "superseded"
    [new] = active_items(mgr)
    assert new["logical_id"] != old and new["subject"] == "http client library"


def test_reject_only_is_no_output(make_manager, llm_stub):
    mgr = make_manager()
    _, [cid] = seed_consolidation(mgr, [_decision("trivia")])
    llm_stub.script("consolidation", {"operations": [op("reject", [cid])]})
    assert mgr.runner.step(force=True).status == "succeeded_no_output"
    assert [c["status"] for c in candidates(mgr)] == ["rejected"] and active_items(mgr) == []
    assert jobs(mgr, "consolidation")[0]["no_output_reason"] == "all_rejected"


def test_every_candidate_must_be_covered_exactly_once(make_manager, llm_stub):
    mgr = make_manager()
    _, [a, _b] = seed_consolidation(mgr, [_decision("one"), _decision("two")])
    bad = {"operations": [op("create", [a], None, **_fields(subject="one"))]}
    llm_stub.script("consolidation", bad)
    llm_stub.script("consolidation_repair", bad)
    assert mgr.runner.step(force=True).status == "failed"
    _failed_and_suppressed(mgr, "candidate_coverage")


# --------------------------------------------------------------------------- inferred vs explicit


def _inferred(subject="semicolons"):
    return cand(src("turn-x", "user", "q"), kind="user_preference", origin="inferred_repetition", subject=subject,
                keywords=["semicolons"])


@pytest.mark.parametrize("claimed_origin", ["inferred_repetition", "explicit"])
def test_inferred_never_overrides_explicit(make_manager, llm_stub, claimed_origin):
    mgr = make_manager()
    explicit = seed_item(mgr, subject="semicolons", kind="user_preference", strength="hard",
                         keywords=["semicolons"])
    _, [cid] = seed_consolidation(mgr, [_inferred()])
    bad = {"operations": [op("revise", [cid], explicit, **_fields(
        kind="user_preference", subject="semicolons", statement="Avoid semicolons.", origin=claimed_origin))]}
    llm_stub.script("consolidation", bad)
    llm_stub.script("consolidation_repair", bad)
    assert mgr.runner.step(force=True).status == "failed"
    rule = "inferred_overrides_explicit" if claimed_origin == "inferred_repetition" else "origin_escalation"
    _failed_and_suppressed(mgr, rule)
    detail = mgr.show_item(explicit)
    assert (detail.revision, detail.origin, detail.strength) == (1, "explicit", "hard")


def test_inferred_may_revise_an_inferred_item(make_manager, llm_stub):
    mgr = make_manager()
    old = seed_item(mgr, subject="semicolons", kind="user_preference", strength="soft",
                    origin="inferred_repetition", keywords=["semicolons"])
    _, [cid] = seed_consolidation(mgr, [_inferred()])
    llm_stub.script("consolidation", {"operations": [op("revise", [cid], old, **_fields(
        kind="user_preference", subject="semicolons", statement="Avoid semicolons.",
        origin="inferred_repetition"))]})
    assert mgr.runner.step(force=True).status == "succeeded"
    assert mgr.show_item(old).revision == 2


@pytest.mark.parametrize("escalation,rule", [
    ({"strength": "hard"}, "inferred_not_soft"),
    ({"kind": "project_decision"}, "origin_escalation"),
])
def test_consolidation_cannot_escalate_an_inferred_candidate(make_manager, llm_stub, escalation, rule):
    mgr = make_manager()
    _, [cid] = seed_consolidation(mgr, [_inferred()])
    fields = _fields(kind="user_preference", subject="semicolons", origin="inferred_repetition")
    fields.update(escalation)
    if "kind" in escalation:
        fields["origin"] = "explicit"
    bad = {"operations": [op("create", [cid], None, **fields)]}
    llm_stub.script("consolidation", bad)
    llm_stub.script("consolidation_repair", bad)
    assert mgr.runner.step(force=True).status == "failed"
    _failed_and_suppressed(mgr, rule)


@pytest.mark.parametrize("escalation,rule", [
    ({"kind": "project_decision"}, "kind_escalation"),
    ({"kind": "discussion_context", "strength": "hard"}, "strength_escalation"),
    ({"kind": "discussion_context", "recall_mode": "always"}, "recall_mode_escalation"),
])
def test_consolidation_cannot_turn_a_discussion_into_a_decision_or_harden_it(make_manager, llm_stub, escalation,
                                                                                rule):
    mgr = make_manager()
    _, [cid] = seed_consolidation(mgr, [cand(src("turn-x", "user", "q"), kind="discussion_context",
                                             subject="toml or yaml")])
    fields = _fields(subject="toml or yaml")
    fields.update(escalation)
    bad = {"operations": [op("create", [cid], None, **fields)]}
    llm_stub.script("consolidation", bad)
    llm_stub.script("consolidation_repair", bad)
    assert mgr.runner.step(force=True).status == "failed"
    _failed_and_suppressed(mgr, rule)


def test_revising_a_hard_target_may_keep_it_hard(make_manager, llm_stub):
    mgr = make_manager()
    target = seed_item(mgr, subject="tabs", kind="user_preference", strength="hard", recall_mode="always")
    _, [cid] = seed_consolidation(mgr, [cand(src("turn-x", "user", "q"), subject="tabs")])
    llm_stub.script("consolidation", {"operations": [op("revise", [cid], target, **_fields(
        kind="user_preference", subject="tabs", strength="hard", recall_mode="always"))]})
    assert mgr.runner.step(force=True).status == "succeeded"
    assert mgr.show_item(target).strength == "hard"


# --------------------------------------------------------------------------- capacity


def test_candidates_plus_registry_beyond_capacity_make_no_call(make_manager, llm_stub):
    mgr = make_manager(LLM_CONTEXT_WINDOW=3000, LLM_MAX_OUTPUT_TOKENS=500)
    for i in range(6):
        seed_item(mgr, subject=f"retry policy {i}", keywords=["retry"], statement="R" * 600)
    before = _state(mgr)
    _job, _ids = seed_consolidation(mgr, [_decision(f"retry policy new {i}", keywords=["retry"], statement="N" * 600)
                                        for i in range(3)])
    outcome = mgr.runner.step(force=True)
    assert outcome.status == "succeeded_no_output" and outcome.rule == "capacity"
    assert llm_stub.requests == []
    [j] = jobs(mgr, "consolidation")
    assert (j["status"], j["no_output_reason"], j["provider_calls"]) == ("succeeded_no_output", "capacity", 0)
    assert {c["status"] for c in candidates(mgr)} == {"suppressed"}
    assert _state(mgr) == before  # no active item was dropped to make room


def test_consolidation_jobs_are_serialized(make_manager, llm_stub):
    mgr = make_manager()
    other = make_manager()
    seed_consolidation(mgr, [_decision("one")])
    seed_consolidation(mgr, [_decision("two")])
    import threading
    release = threading.Event()
    import json

    from tests.support.llm_stub import Reply
    llm_stub.script("consolidation", lambda req: Reply(content=json.dumps(
        {"operations": [op_from_candidate("create", payload_of(req)["candidates"][0])]}), wait_event=release))
    out = []
    th = threading.Thread(target=lambda: out.append(mgr.runner.step(force=True)))
    th.start()
    try:
        assert llm_stub.wait_for_requests(1, task="consolidation")
        assert other.runner.step(force=True) is None  # the second consolidation waits
    finally:
        release.set()
        th.join(10)
    llm_stub.default("consolidation", consolidate_with(lambda p: [op_from_candidate("create", p["candidates"][0])]))
    assert other.runner.step(force=True).status == "succeeded"
    assert sorted(i["subject"] for i in active_items(mgr)) == ["one", "two"]
