"""A copied or cloned checkout keeps its review marks (issue 30 item 8): `cp -a` gives the copy's
store a name of its own, but the marks follow the revisions, not the name — in approval mode the
copy still recalls what was kept; a merge of the copy carries its marks."""

from __future__ import annotations

import shutil

from tests.support.store_helpers import add_item, add_turns, checkout, name_of, service_for


def _copy(src, dst):
    shutil.copytree(src, dst, symlinks=True)  # `cp -a`
    return dst


def test_a_copied_checkout_keeps_what_was_kept(tmp_path, settings, clock, open_mgr, invoke_cli) -> None:
    a = checkout(tmp_path, "alpha", remote="https://example.com/org/alpha.git")
    ma = open_mgr(a, clock=clock)
    add_turns(ma, 1)
    kept = add_item(ma, "deploy day", "Deploy on Fridays only after review.", keywords=["deploy"])
    waiting = add_item(ma, "release tags", "Tag every release with its date.", keywords=["deploy"])
    ma.review.keep([kept.logical_id])
    ma.close()
    copy = _copy(a, tmp_path / "alpha-copy")

    mc = open_mgr(copy, clock=clock)  # the copy is registered under a name of its own
    assert name_of(mc) != name_of(a)
    assert mc.review.review_state([kept.logical_id, waiting.logical_id]) == {
        kept.logical_id: "kept", waiting.logical_id: "new"}
    mc.close()
    env = {"AUTOPATCH_MEMORY_APPROVAL": "review"}
    rc, out, err = invoke_cli("memory", "search", "deploy", json=True, cwd=copy, env=env)
    assert rc == 0, err
    assert [r["id"] for r in out["results"]] == [kept.logical_id]  # recalled in the copy; the new one held back
    rc, out, err = invoke_cli("memory", "review", json=True, cwd=copy, env=env)
    assert [i["id"] for i in out["items"]] == [waiting.logical_id]


def test_a_merge_of_a_copy_carries_the_marks(tmp_path, settings, clock, open_mgr) -> None:
    a = checkout(tmp_path, "alpha", remote="https://example.com/org/alpha.git")
    b = checkout(tmp_path, "beta", remote="https://example.com/org/beta.git")
    ma = open_mgr(a, clock=clock)
    add_turns(ma, 1)
    kept = add_item(ma, "deploy day", "Deploy on Fridays only after review.")
    ma.review.keep([kept.logical_id])
    ma.close()
    mb = open_mgr(b, clock=clock)
    add_turns(mb, 1)
    add_item(mb, "lint", "Run the linters before commit.")
    mb.close()
    copy = _copy(a, tmp_path / "alpha-copy")
    mc = open_mgr(copy, clock=clock)
    copy_name = name_of(mc)
    mc.close()

    service_for(settings, clock=clock, model=False).merge(copy_name, name_of(b))

    target = open_mgr(b, clock=clock)
    assert target.review.review_state([kept.logical_id]) == {kept.logical_id: "kept"}


def test_marks_follow_the_store_lineage_and_generation_not_the_name(tmp_path, clock, open_mgr) -> None:
    from dataclasses import replace

    from autopatch_tui.core.memory import review_marks

    a = checkout(tmp_path, "alpha")
    ma = open_mgr(a, clock=clock)
    item = add_item(ma, "deploy day", "Deploy on Fridays only after review.")
    ma.review.keep([item.logical_id])
    stamp = review_marks.store_stamp(ma.store.conn())
    review_marks._cache.clear()
    assert item.revision_id in review_marks.load_kept(ma.paths, replace(stamp, name="project-RENAMED"))
    for other in (replace(stamp, created_at=stamp.created_at + 1),  # another store file
                  replace(stamp, generation=stamp.generation + 1)):  # after a clear
        assert review_marks.load_kept(ma.paths, other) == frozenset()
