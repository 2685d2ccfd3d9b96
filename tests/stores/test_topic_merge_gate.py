"""Topic merge through the semantic gate (FR-059 x the consolidation gate).

A topic candidate mirrors an imported item X and carries a copy of X's provenance quotes (as a
merge's conflict candidate does), so an adopted decision still shows the user's and the assistant's
words; an operation that merges it into a related target item Y may keep the origin of either X
or Y. Nothing else is loosened: strength, kind and an origin neither had stay refused, and an
ordinary (unlinked) candidate still may not take its target's origin."""

from __future__ import annotations

import pytest

from autopatch_tui.core.errors import MemoryContractError
from autopatch_tui.core.ids import new_id
from autopatch_tui.core.memory.item_writes import insert_revision, link_candidates
from autopatch_tui.core.memory.items import ItemFields, bump_data_version
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.pipeline.consolidation import Candidate, check_operations
from autopatch_tui.core.pipeline.contracts import ConsolidationOut
from tests.support.pipeline_helpers import op_from_candidate, payload_of
from tests.support.store_helpers import (
    SeededItem,
    active_identity_dupes,
    add_turns,
    checkout,
    db_of,
    name_of,
    rows,
    scalar,
    service_for,
)


def _seed(mgr, subject, statement, *, origin, turn_id, strength="hard"):
    """An active item with its provenance: an adopted proposal cites the assistant's proposal and
    the user's confirmation, an explicit item the user's words."""
    conn = mgr.store.conn()
    now = mgr.clock.now()
    cid = new_id("cand")
    quotes = [("user", f"remember: {subject}")]
    if origin == "adopted_proposal":
        quotes = [("assistant", f"I propose: {statement}"), ("user", "yes, do that")]
    f = ItemFields(kind="project_decision", subject=subject, statement=statement, content=statement,
                   strength=strength, origin=origin, recall_mode="on_match", applies_to_paths=(), aliases=(),
                   keywords=(), thread_id=None)
    with write_txn(conn):
        conn.execute(
            "INSERT INTO memory_candidates (id, status, kind, subject, statement, content, strength, origin,"
            " recall_mode, applies_to_paths, aliases, keywords, created_at)"
            " VALUES (?, 'accepted', 'project_decision', ?, ?, ?, ?, ?, 'on_match', '[]', '[]', '[]', ?)",
            (cid, subject, statement, statement, strength, origin, now))
        conn.executemany("INSERT INTO candidate_sources (candidate_id, ordinal, turn_id, role, quote)"
                         " VALUES (?, ?, ?, ?, ?)", [(cid, n, turn_id, r, q) for n, (r, q) in enumerate(quotes)])
        row_id, logical = insert_revision(conn, f, logical_id=None, revision=1, now=now)
        link_candidates(conn, row_id, [cid])
        bump_data_version(conn)
        rev = conn.execute("SELECT id FROM memory_items WHERE row_id = ?", (row_id,)).fetchone()[0]
    return SeededItem(logical, rev, cid, subject, statement)


def _stores(tmp_path, open_mgr, clock, *, soft=False):
    """A: an adopted decision and an explicit one; B: an explicit and an adopted item overlapping them."""
    a = checkout(tmp_path, "alpha", remote="https://example.com/org/alpha.git")
    b = checkout(tmp_path, "beta", remote="https://example.com/org/beta.git")
    ma, mb = open_mgr(a, clock=clock), open_mgr(b, clock=clock)
    [ta], [tb] = add_turns(ma, 1), add_turns(mb, 1)
    strength = "soft" if soft else "hard"
    xs = [_seed(ma, "deploy pipeline", "Deploy with the blue-green pipeline.", origin="adopted_proposal",
                turn_id=ta, strength=strength),
          _seed(ma, "cache policy", "Cache responses for one hour.", origin="explicit", turn_id=ta,
                strength=strength)]
    ys = [_seed(mb, "deploy pipeline steps", "Deploy in three steps.", origin="explicit", turn_id=tb,
                strength=strength),
          _seed(mb, "cache policy rules", "Never cache private responses.", origin="adopted_proposal", turn_id=tb,
                strength=strength)]
    ma.close()
    mb.close()
    return name_of(a), name_of(b), db_of(b), xs, ys


def _merge_each_into_target(origin_from, **changes):
    """The model merges each imported topic into the target's item on the same topic."""
    def reply(req):
        p = payload_of(req)
        ops = []
        for c in p["candidates"]:
            [y] = [r for r in p["related_items"]
                   if r["subject"].startswith(c["subject"]) and r["subject"] != c["subject"]]
            origin = c["origin"] if origin_from == "candidate" else y["origin"]
            ops.append(op_from_candidate("revise", c, target_id=y["id"], subject=y["subject"], origin=origin,
                                         statement=f"{y['statement']} {c['statement']}", **changes))
        return {"operations": ops}
    return reply


@pytest.mark.parametrize("origin_from", ["candidate", "target"])
def test_imported_topics_of_another_origin_are_merged_into_the_targets_items(tmp_path, open_mgr, clock,
                                                                             model_settings, llm_stub, origin_from):
    na, nb, bdb, xs, ys = _stores(tmp_path, open_mgr, clock)
    llm_stub.default("organize", _merge_each_into_target(origin_from))
    llm_stub.default("consolidation_repair", _merge_each_into_target(origin_from))

    result = service_for(model_settings, clock=clock).merge(na, nb)

    assert result.reorg_status == "reorganized: 2 of 2 candidates"
    assert llm_stub.requests_for("consolidation_repair") == []  # the primary reply passed the gate
    [req] = llm_stub.requests_for("organize")
    by_subject = {c["subject"]: c for c in payload_of(req)["candidates"]}
    # the topic candidate carries the imported item's own quotes: the proposal and its confirmation
    assert {s["role"] for s in by_subject["deploy pipeline"]["sources"]} == {"user", "assistant"}
    assert scalar(bdb, "SELECT count(*) FROM memory_jobs WHERE status = 'failed'") == 0
    assert scalar(bdb, "SELECT count(*) FROM memory_candidates WHERE status IN ('suppressed', 'pending')") == 0
    for x, y in zip(xs, ys):
        [merged] = rows(bdb, "SELECT * FROM memory_items WHERE logical_id = ? AND status = 'active'", (y.logical_id,))
        assert merged["revision"] == 2 and merged["statement"] == f"{y.statement} {x.statement}"
        want = {"candidate": {"deploy pipeline steps": "adopted_proposal", "cache policy rules": "explicit"},
                "target": {"deploy pipeline steps": "explicit", "cache policy rules": "adopted_proposal"}}
        assert merged["origin"] == want[origin_from][y.subject]
        [gone] = rows(bdb, "SELECT status, replaced_by FROM memory_items WHERE id = ?", (x.revision_id,))
        assert gone == {"status": "superseded", "replaced_by": merged["id"]}
    assert active_identity_dupes(bdb) == []


def test_a_topic_merge_still_cannot_harden_a_soft_candidate(tmp_path, open_mgr, clock, model_settings, llm_stub):
    na, nb, bdb, xs, _ = _stores(tmp_path, open_mgr, clock, soft=True)  # soft candidates, soft targets
    bad = _merge_each_into_target("target", strength="hard")
    llm_stub.default("organize", bad)
    llm_stub.default("consolidation_repair", bad)

    result = service_for(model_settings, clock=clock).merge(na, nb)

    assert result.reorg_status == "error: contract_violation: 0 of 2 candidates organized"
    [job] = rows(bdb, "SELECT failure_category, failure_rule FROM memory_jobs WHERE status = 'failed'")
    assert job == {"failure_category": "contract_violation", "failure_rule": "strength_escalation"}
    for x in xs:  # nothing imported is lost
        assert scalar(bdb, "SELECT status FROM memory_items WHERE id = ?", (x.revision_id,)) == "active"


# --------------------------------------------------------------------------- the gate's rule itself


def _cand(origin, *, linked, roles=("user",)):
    fields = {"kind": "project_decision", "subject": "deploy pipeline", "statement": "Deploy blue-green.",
              "content": "", "strength": "soft", "origin": origin, "recall_mode": "on_match",
              "applies_to_paths": [], "aliases": [], "keywords": []}
    sources = [{"turn_id": "turn-x", "role": r, "quote": "blue-green deploys"} for r in roles]
    return Candidate("cand-1", None, fields, sources, linked)


def _target(origin, strength="soft"):
    return {"logical_id": "mem-y", "kind": "project_decision", "subject": "deploy pipeline steps",
            "strength": strength, "origin": origin, "recall_mode": "on_match"}


def _check(cand, target, operation="revise", **changes):
    fields = {k: cand.fields[k] for k in cand.fields}
    fields.update(changes)
    out = ConsolidationOut.model_validate({"operations": [
        {"operation": operation, "candidate_ids": [cand.id], "target_id": None if operation == "create" else "mem-y",
         **fields}]})
    check_operations(out, [cand], [target])


@pytest.mark.parametrize("cand,target,operation,changes,rule", [
    # an ordinary extraction candidate never takes its target's origin
    (_cand("explicit", linked=False), _target("adopted_proposal"), "revise", {"origin": "adopted_proposal"},
     "origin_escalation"),
    (_cand("inferred_repetition", linked=False), _target("explicit"), "revise", {"origin": "explicit"},
     "origin_escalation"),
    # a topic candidate: an origin neither had, a strength neither had, a create (no target)
    (_cand("explicit", linked=True), _target("explicit"), "revise", {"origin": "adopted_proposal"},
     "origin_escalation"),
    (_cand("explicit", linked=True), _target("explicit"), "supersede", {"strength": "hard"}, "strength_escalation"),
    (_cand("explicit", linked=True), _target("adopted_proposal"), "create", {"origin": "adopted_proposal"},
     "origin_escalation"),
    # an adopted topic candidate without the assistant's quote, into a target that is not adopted
    (_cand("adopted_proposal", linked=True), _target("explicit"), "revise", {}, "adopted_needs_assistant_and_user"),
])
def test_the_gate_still_refuses_a_real_escalation(cand, target, operation, changes, rule):
    with pytest.raises(MemoryContractError) as exc:
        _check(cand, target, operation, **changes)
    assert exc.value.rule == rule


@pytest.mark.parametrize("cand,target,changes", [
    (_cand("adopted_proposal", linked=True, roles=("assistant", "user")), _target("explicit"), {}),
    (_cand("adopted_proposal", linked=True), _target("explicit"), {"origin": "explicit"}),
    (_cand("explicit", linked=True), _target("adopted_proposal"), {"origin": "adopted_proposal"}),
    (_cand("inferred_repetition", linked=True), _target("explicit"), {"origin": "explicit"}),
    (_cand("explicit", linked=True), _target("explicit", strength="hard"), {"strength": "hard"}),
])
def test_a_topic_merge_may_keep_the_candidates_or_the_targets_origin(cand, target, changes):
    _check(cand, target, **changes)

