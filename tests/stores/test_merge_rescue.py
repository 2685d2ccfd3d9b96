"""A rescued item (issue 31.2) survives a store merge: it is in the target, still kept, and its
history still says which rule it was kept over; the source's refused list does not travel."""

from __future__ import annotations

from autopatch_tui.core.memory import steering
from tests.support.pipeline_helpers import add_turn, cand, create_all, ext_reply, src
from tests.support.store_helpers import service_for


def test_a_rescued_item_survives_a_merge_kept_with_its_history(pair, settings, model_settings, clock, open_mgr,
                                                               llm_stub) -> None:
    llm_stub.default("consolidation", create_all)
    ma = open_mgr(pair.a, model_settings, clock=clock)
    t = add_turn(ma, "for this release keep the old API")
    llm_stub.script("extraction", ext_reply(cand(src(t, "user", "for this release keep the old API"),
                                                 kind="project_decision", subject="old api",
                                                 statement="Keep the old API.")))
    ma.runner.step(force=True, only=[r[0] for r in ma.store.conn().execute(
        "SELECT id FROM memory_jobs WHERE turn_id = ?", (t.turn_id,))])
    [entry] = [e for e in steering.refused(ma) if e.turn_id == t.turn_id]
    kept = steering.keep_refused(ma, entry.n)
    rule = entry.rule
    ma.close()

    service_for(settings, clock=clock, model=False).merge(pair.na, pair.nb)

    target = open_mgr(pair.b, clock=clock)
    assert target.show_item(kept.id).statement == "Keep the old API."
    assert target.review.review_state([kept.id]) == {kept.id: "kept"}
    assert [k.rule for k in steering.kept_over(target, kept.id)] == [rule]
    assert all(e.turn_id != t.turn_id for e in steering.refused(target))
