"""An ordinary consolidation of more than 24 restatements (issue 10 §7): the job is split into
chunks of 24, and every chunk's payload holds each of its candidates' identity holders, so a
correct model revises all of them (before: the related list was capped at 24 with the holders in
it, the 25th candidate could only be created, which the identity index refused)."""

from __future__ import annotations

from tests.support.pipeline_helpers import cand, create_all, revise_holders, seed_consolidation, seed_item, src


def test_an_ordinary_consolidation_of_more_than_24_restatements_revises_them_all(make_manager, llm_stub):
    mgr = make_manager()
    holders = [seed_item(mgr, subject=f"naming rule {i:02d}", kind="project_decision") for i in range(30)]
    seed_consolidation(mgr, [cand(src("turn-x", "user", "q"), kind="project_decision", subject=f"naming rule {i:02d}",
                                  statement=f"Rule {i}, restated.") for i in range(30)])
    llm_stub.default("consolidation", revise_holders)
    llm_stub.default("consolidation_repair", create_all)
    result = mgr.process_pending()
    assert (result.succeeded, result.failed) == (2, 0)  # the job and the chunk split off it
    assert len(llm_stub.requests_for("consolidation")) == 2
    items = mgr.list_items()
    assert len(items) == 30 and {i.id for i in items} == set(holders)
    assert all(i.statement.endswith("restated.") for i in items)
