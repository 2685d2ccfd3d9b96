"""A store merge carries the source's review marks for the items it imports (contracts §8): an item
kept in the source is kept in the target; one the source never kept still awaits review; the
target's own marks stay; marks the source wrote before a clear of its own are not carried."""

from __future__ import annotations

import json

from autopatch_tui.core.memory import review_marks
from tests.support.store_helpers import add_item, service_for


def test_the_source_marks_travel_with_the_imported_items(pair, settings, clock, open_mgr) -> None:
    ma = open_mgr(pair.a, clock=clock)
    kept_a = add_item(ma, "kept in alpha", "Deploy on Fridays only after review.")
    new_a = add_item(ma, "new in alpha", "Tag every release.")
    ma.review.keep([kept_a.logical_id])
    ma.close()
    mb = open_mgr(pair.b, clock=clock)
    kept_b = add_item(mb, "kept in beta", "Run the linters before commit.")
    mb.review.keep([kept_b.logical_id])
    mb.close()

    service_for(settings, clock=clock, model=False).merge(pair.na, pair.nb)

    target = open_mgr(pair.b, clock=clock)
    waiting = {e.summary.id for e in target.review.items()}
    assert kept_a.logical_id not in waiting and kept_b.logical_id not in waiting
    assert new_a.logical_id in waiting
    state = target.review.review_state([kept_a.logical_id, new_a.logical_id, kept_b.logical_id])
    assert state == {kept_a.logical_id: "kept", new_a.logical_id: "new", kept_b.logical_id: "kept"}


def test_marks_of_an_earlier_generation_of_the_source_are_not_carried(pair, settings, clock, open_mgr) -> None:
    ma = open_mgr(pair.a, clock=clock)
    item = add_item(ma, "kept long ago", "Something kept before a clear.")
    ma.review.keep([item.logical_id])
    stamp = review_marks.store_stamp(ma.store.conn())
    ma.close()
    marks = pair.a / ".autopatch-j" / "review_marks.json"
    doc = json.loads(marks.read_text())
    doc["store"]["generation"] = stamp.generation + 5  # as if written for another generation
    marks.unlink()
    marks.write_text(json.dumps(doc))

    service_for(settings, clock=clock, model=False).merge(pair.na, pair.nb)

    target = open_mgr(pair.b, clock=clock)
    assert item.logical_id in {e.summary.id for e in target.review.items()}
