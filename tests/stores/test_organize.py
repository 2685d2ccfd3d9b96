"""Post-merge organize (FR-059): the imported conflicting candidates run through consolidation with
the `organize` task header (contracts §3.2 shape); `reorg_status` reorganized / skipped / no_model /
empty / error: …; an organize failure never fails the merge."""

from __future__ import annotations

from tests.support.llm_stub import Reply
from tests.support.pipeline_helpers import ITEM_FIELDS, op_from_candidate, payload_of
from tests.support.store_helpers import active_identity_dupes, meta, rows, scalar, service_for

CANDIDATE_KEYS = {"candidate_id", *ITEM_FIELDS, "thread_id", "sources"}
RELATED_KEYS = {"id", "revision", *ITEM_FIELDS}


def _revise_with_candidate(req):
    """Organize: the imported statement revises the target's item of the same identity."""
    p = payload_of(req)
    [c] = p["candidates"]
    [target] = [r for r in p["related_items"] if r["subject"] == c["subject"]]
    return {"operations": [op_from_candidate("revise", c, target_id=target["id"])]}


def _merged_ok(pair) -> bool:
    return meta(pair.adb)["retired_into"] == pair.nb and scalar(
        pair.bdb, "SELECT count(*) FROM turns") == len(pair.sa["turns"]) + len(pair.sb["turns"])


def test_organize_reorganizes_the_imported_conflict(pair, model_settings, llm_stub, clock):
    llm_stub.default("organize", _revise_with_candidate)

    result = service_for(model_settings, clock=clock).merge(pair.na, pair.nb)

    assert result.reorg_status == "reorganized: 1 of 1 candidates"
    [req] = llm_stub.requests_for("organize")
    assert {r.task for r in llm_stub.requests} == {"organize"}  # never the ordinary consolidation header
    assert req.body["temperature"] == 0 and not req.body.get("stream")
    payload = payload_of(req)
    assert set(payload) == {"candidates", "related_items"}
    [cand] = payload["candidates"]
    assert set(cand) == CANDIDATE_KEYS
    assert (cand["subject"], cand["statement"]) == ("indentation", "Use tabs.")
    assert cand["sources"] == [{"turn_id": pair.sa["turns"][-1], "role": "user", "quote": "remember: indentation"}]
    assert all(set(r) == RELATED_KEYS for r in payload["related_items"])
    assert pair.conflict_b.logical_id in {r["id"] for r in payload["related_items"]}

    [active] = rows(pair.bdb, "SELECT logical_id, revision, statement FROM memory_items"
                              " WHERE subject = 'indentation' AND status = 'active'")
    assert active == {"logical_id": pair.conflict_b.logical_id, "revision": 2, "statement": "Use tabs."}
    assert active_identity_dupes(pair.bdb) == []
    assert scalar(pair.bdb, "SELECT count(*) FROM memory_candidates WHERE status = 'pending'"
                            " AND origin_store = ? AND consolidation_job_id LIKE 'job-%' AND statement = 'Use tabs.'",
                  (pair.na,)) == 0
    # only the merge's organize job ran: the other queued work waits for the normal pipeline
    assert scalar(pair.bdb, "SELECT status FROM memory_jobs WHERE id = ?", (pair.sa["job"],)) == "pending"
    assert _merged_ok(pair)


def test_no_organize_skips(pair, model_settings, llm_stub, clock):
    llm_stub.default("organize", _revise_with_candidate)
    result = service_for(model_settings, clock=clock).merge(pair.na, pair.nb, organize=False)
    assert result.reorg_status == "skipped"
    assert llm_stub.requests == []
    # the conflict waits, queued, for the ordinary pipeline: nothing lost
    assert scalar(pair.bdb, "SELECT count(*) FROM memory_candidates WHERE status = 'pending'"
                            " AND statement = 'Use tabs.'") == 1
    assert _merged_ok(pair)


def test_no_model(pair, settings, clock):
    assert service_for(settings, clock=clock).merge(pair.na, pair.nb).reorg_status == "no_model"
    assert _merged_ok(pair)


def test_nothing_to_organize_is_empty(tmp_path, open_mgr, model_settings, llm_stub, clock):
    from tests.support.store_helpers import add_item, checkout, name_of

    a, b = checkout(tmp_path, "a", git=False), checkout(tmp_path, "b", git=False)
    for path, subject in ((a, "alpha"), (b, "beta")):
        m = open_mgr(path)
        add_item(m, subject)
        m.close()
    llm_stub.default("organize", _revise_with_candidate)
    result = service_for(model_settings, clock=clock).merge(name_of(a), name_of(b))
    assert result.reorg_status == "empty"
    assert llm_stub.requests == []


def test_a_malformed_organize_reply_twice_is_an_error_not_a_failed_merge(pair, model_settings, llm_stub, clock):
    llm_stub.default("organize", "Sure! I merged them nicely.")
    llm_stub.default("consolidation_repair", '{"operations": "none"}')
    result = service_for(model_settings, clock=clock).merge(pair.na, pair.nb)
    assert result.reorg_status.startswith("error: ")
    assert "contract_violation" in result.reorg_status
    assert len(llm_stub.requests_for("organize")) == 1
    assert len(llm_stub.requests_for("consolidation_repair")) == 1
    assert _merged_ok(pair)
    # the target's own item is untouched, and the imported revision is still kept as history
    assert rows(pair.bdb, "SELECT statement FROM memory_items WHERE subject = 'indentation' AND status = 'active'") == [
        {"statement": "Use four spaces."}]
    assert scalar(pair.bdb, "SELECT count(*) FROM memory_items WHERE id = ?", (pair.conflict_a.revision_id,)) == 1


def test_a_provider_error_during_organize_is_reported(pair, model_settings, llm_stub, clock):
    llm_stub.default("organize", Reply(status=400, error_body="context too long"))
    result = service_for(model_settings, clock=clock).merge(pair.na, pair.nb)
    assert result.reorg_status.startswith("error: ")
    assert "context too long" not in result.reorg_status  # never a provider error body
    assert _merged_ok(pair)


def test_organize_while_another_process_consolidates_reports_busy(pair, model_settings, llm_stub, clock):
    import sqlite3

    conn = sqlite3.connect(str(pair.bdb), isolation_level=None)
    conn.execute("UPDATE memory_jobs SET status = 'leased', lease_owner = 'app:1:x', lease_expires_at = 1e12,"
                 " lease_generation = 1 WHERE id = ?", (pair.sb["job"],))  # the app at B is consolidating
    conn.close()
    llm_stub.default("organize", _revise_with_candidate)
    result = service_for(model_settings, clock=clock).merge(pair.na, pair.nb)
    assert result.reorg_status == "error: busy: 0 of 1 candidates organized"
    assert llm_stub.requests == []
    assert scalar(pair.bdb, "SELECT count(*) FROM memory_candidates WHERE status = 'pending'"
                            " AND statement = 'Use tabs.'") == 1
    assert _merged_ok(pair)
