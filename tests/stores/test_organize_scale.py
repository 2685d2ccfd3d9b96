"""Organize that scales and merges topics (issue 10 §7, FR-059).

A merge queues one organize candidate per identity conflict. Whatever their number (0, 1, 24, 25,
300), the candidates are consolidated in chunks whose payload holds every candidate's identity
holder, so a correct model revises the target's item (never a duplicate create); a chunk that
fails suppresses only its own candidates; `reorg_status` says how many were organized. Each chunk
also offers the target's items that overlap the imported ones by terms (topic merge). The same
holder rule holds for an ordinary consolidation of more than 24 restatements."""

from __future__ import annotations

import math

import pytest

from tests.support.llm_stub import Reply
from tests.support.pipeline_helpers import op_from_candidate, payload_of, revise_holders
from tests.support.store_helpers import (
    active_identity_dupes,
    add_item,
    add_turns,
    checkout,
    name_of,
    db_of,
    rows,
    scalar,
    service_for,
)


CHUNK = 24  # candidates per organize call


def _identity(x):
    return (x["kind"], x["subject"].casefold(), tuple(x["applies_to_paths"]))


def _conflicting_stores(tmp_path, open_mgr, clock, n, *, keywords=(), extra_b=()):
    a = checkout(tmp_path, "alpha", remote="https://example.com/org/alpha.git")
    b = checkout(tmp_path, "beta", remote="https://example.com/org/beta.git")
    ma, mb = open_mgr(a, clock=clock), open_mgr(b, clock=clock)
    [ta], [tb] = add_turns(ma, 1), add_turns(mb, 1)
    for i in range(n):
        add_item(ma, f"tool choice {i:03d}", f"Use tool {i} version two.", turn_id=ta, keywords=keywords)
        add_item(mb, f"tool choice {i:03d}", f"Use tool {i} version one.", turn_id=tb)
    extra = [add_item(mb, subject, f"Notes on {subject}.", turn_id=tb, keywords=keywords) for subject in extra_b]
    ma.close()
    mb.close()
    return name_of(a), name_of(b), db_of(b), extra


@pytest.mark.parametrize("n", [0, 1, 24, 25, 300])
def test_organize_revises_every_conflict_whatever_their_number(tmp_path, open_mgr, clock, model_settings, llm_stub,
                                                               n):
    na, nb, bdb, _ = _conflicting_stores(tmp_path, open_mgr, clock, n)
    llm_stub.default("organize", revise_holders)
    llm_stub.default("consolidation_repair", revise_holders)

    result = service_for(model_settings, clock=clock).merge(na, nb)

    requests = llm_stub.requests_for("organize")
    if n == 0:
        assert result.reorg_status == "empty" and llm_stub.requests == []
        return
    assert result.reorg_status == f"reorganized: {n} of {n} candidates"
    assert len(requests) == math.ceil(n / CHUNK)
    assert llm_stub.requests_for("consolidation_repair") == []  # no chunk needed a repair
    for req in requests:
        p = payload_of(req)
        assert 1 <= len(p["candidates"]) <= CHUNK
        related = {_identity(r) for r in p["related_items"]}
        assert all(_identity(c) in related for c in p["candidates"])  # every holder is offered
    active = rows(bdb, "SELECT statement, revision FROM memory_items WHERE status = 'active'"
                       " AND subject LIKE 'tool choice %'")
    assert len(active) == n
    assert all(r["statement"].endswith("version two.") and r["revision"] == 2 for r in active)
    assert active_identity_dupes(bdb) == []
    assert scalar(bdb, "SELECT count(*) FROM memory_candidates WHERE status = 'pending'"
                       " AND origin_store = ?", (na,)) == 0


def test_a_failing_chunk_suppresses_only_its_own_candidates(tmp_path, open_mgr, clock, model_settings, llm_stub):
    na, nb, bdb, _ = _conflicting_stores(tmp_path, open_mgr, clock, 50)  # chunks of 24, 24 and 2

    def second_chunk_fails(req):
        subjects = {c["subject"] for c in payload_of(req)["candidates"]}
        return Reply(status=400) if "tool choice 030" in subjects else revise_holders(req)

    llm_stub.default("organize", second_chunk_fails)
    result = service_for(model_settings, clock=clock).merge(na, nb)

    assert result.reorg_status == "error: bad_request: 26 of 50 candidates organized"
    assert len(llm_stub.requests_for("organize")) == 3  # the chunk after the failing one still ran
    by_status = {r["status"]: r["n"] for r in rows(
        bdb, "SELECT status, count(*) AS n FROM memory_candidates WHERE origin_store = ?"
             " AND consolidation_job_id IS NOT NULL GROUP BY status", (na,))}
    assert by_status == {"accepted": 26, "suppressed": 24}
    failed = rows(bdb, "SELECT id FROM memory_jobs WHERE status = 'failed'")
    assert len(failed) == 1
    assert scalar(bdb, "SELECT count(*) FROM memory_candidates WHERE consolidation_job_id = ?",
                  (failed[0]["id"],)) == 24
    assert active_identity_dupes(bdb) == []


def test_organize_offers_the_targets_items_that_overlap_the_imported_ones(tmp_path, open_mgr, clock, model_settings,
                                                                         llm_stub):
    # 24 conflicts fill the ordinary related bound with holders alone; the target's other items on the
    # same topic (shared keyword) are still offered, so the model can merge the topics
    overlap = [f"deploy pipeline step {j}" for j in range(10)]
    na, nb, bdb, extra = _conflicting_stores(tmp_path, open_mgr, clock, 24, keywords=("deploy",), extra_b=overlap)
    llm_stub.default("organize", revise_holders)
    result = service_for(model_settings, clock=clock).merge(na, nb)
    assert result.reorg_status == "reorganized: 24 of 24 candidates"
    [req] = llm_stub.requests_for("organize")
    offered = {r["id"] for r in payload_of(req)["related_items"]}
    assert {e.logical_id for e in extra} <= offered
    assert len(offered) == 34


# --------------------------------------------------------------------------- topic merge (no conflict)


def _topic_stores(tmp_path, open_mgr, clock):
    a = checkout(tmp_path, "alpha", remote="https://example.com/org/alpha.git")
    b = checkout(tmp_path, "beta", remote="https://example.com/org/beta.git")
    ma, mb = open_mgr(a, clock=clock), open_mgr(b, clock=clock)
    [ta], [tb] = add_turns(ma, 1), add_turns(mb, 1)
    x = add_item(ma, "deploy pipeline", "Deploy with the blue-green pipeline.", turn_id=ta)
    add_item(ma, "only in alpha", turn_id=ta)  # shares one of two subject terms with B's: no overlap
    y = add_item(mb, "deploy pipeline steps", "Deploy in three steps.", turn_id=tb)
    add_item(mb, "only in beta", turn_id=tb)
    ma.close()
    mb.close()
    return name_of(a), name_of(b), b, db_of(b), x, y


def _merge_into_other(req):
    """The model merges the imported topic into the target's overlapping item."""
    p = payload_of(req)
    [c] = p["candidates"]
    [other] = [r for r in p["related_items"] if _identity(r) != _identity(c)]
    return {"operations": [op_from_candidate("revise", c, target_id=other["id"], subject=other["subject"],
                                             statement="Deploy in three steps with the blue-green pipeline.")]}


def test_an_imported_topic_overlapping_a_target_item_is_merged_into_it(tmp_path, open_mgr, clock, model_settings,
                                                                       llm_stub):
    na, nb, b, bdb, x, y = _topic_stores(tmp_path, open_mgr, clock)
    llm_stub.default("organize", _merge_into_other)
    result = service_for(model_settings, clock=clock).merge(na, nb)
    assert result.reorg_status == "reorganized: 1 of 1 candidates"
    [req] = llm_stub.requests_for("organize")
    p = payload_of(req)
    assert [c["subject"] for c in p["candidates"]] == ["deploy pipeline"]  # "only in alpha" does not overlap
    assert {x.logical_id, y.logical_id} <= {r["id"] for r in p["related_items"]}
    active = {r["subject"]: r for r in rows(bdb, "SELECT * FROM memory_items WHERE status = 'active'")}
    assert "deploy pipeline" not in active and "only in alpha" in active and "only in beta" in active
    merged = active["deploy pipeline steps"]
    assert (merged["logical_id"], merged["revision"]) == (y.logical_id, 2)
    assert merged["statement"] == "Deploy in three steps with the blue-green pipeline."
    [gone] = rows(bdb, "SELECT status, replaced_by FROM memory_items WHERE id = ?", (x.revision_id,))
    assert gone == {"status": "superseded", "replaced_by": merged["id"]}
    assert active_identity_dupes(bdb) == []
    quotes = [s.quote for s in open_mgr(b, clock=clock).show_item(y.logical_id).sources]
    assert "remember: deploy pipeline" in quotes  # the merged item's provenance moved along
    # once: the topic candidate's copy of X's quote and X's own candidate are one piece of evidence
    assert quotes.count("remember: deploy pipeline") == 1


def test_a_rejected_or_failed_topic_merge_keeps_the_imported_item(tmp_path, open_mgr, clock, model_settings,
                                                                  llm_stub):
    na, nb, b, bdb, x, y = _topic_stores(tmp_path, open_mgr, clock)
    llm_stub.default("organize", Reply(status=400))
    result = service_for(model_settings, clock=clock).merge(na, nb)
    assert result.reorg_status == "error: bad_request: 0 of 1 candidates organized"
    assert scalar(bdb, "SELECT status FROM memory_items WHERE id = ?", (x.revision_id,)) == "active"
    assert scalar(bdb, "SELECT count(*) FROM memory_items WHERE status = 'active'") == 4
    assert active_identity_dupes(bdb) == []
