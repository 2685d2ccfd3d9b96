"""Merge (FR-057) of two real SQLite stores: validation without side effects, everything moved
(turns, threads, items with provenance, unfinished jobs), the identity invariant, label/root moves,
retirement, audit, idempotent retry after a failure at each step, writes during and after the merge,
and a store copied to a second checkout that diverged."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import autopatch_tui.core.stores.merge as merge_mod
from autopatch_tui.core.errors import StoreRetiredError, UsageError
from autopatch_tui.core.memory.item_writes import insert_revision, retire_revision
from autopatch_tui.core.memory.items import ItemFields
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.stores.merge import merge_files
from autopatch_tui.core.stores.registry import Registry
from autopatch_tui.core.stores.service import MergeError
from tests.support.fixtures import DEFAULT_REMOTE
from tests.support.store_helpers import (
    active_identity_dupes,
    add_item,
    add_turns,
    checkout,
    copy_store_file,
    counts,
    db_of,
    file_digest,
    meta,
    name_of,
    rows,
    scalar,
    service_for,
    set_label,
    state_view,
    used,
)


def test_merge_of_stores_written_before_issue_23_writes_the_targets_first_layout(pair, settings, clock, open_mgr):
    """Both stores hold the recall index in its first layout: the merge works as before, writing the
    imported items to the target's old rows (no rebuild inside a merge), and the retired source keeps
    its layout; the target's rebuild later gives exactly what a fresh write posts."""
    from autopatch_tui.core.memory.schema import TERMS
    from autopatch_tui.core.recall.cli_search import search_memory
    from autopatch_tui.core.recall.layout_rebuild import rebuild_now
    from tests.support.recall_layouts import layout_state
    from tests.support.terms_layout import fresh_index_texts, index_texts, item_postings_consistent, to_terms_layout

    for db in (pair.adb, pair.bdb):
        conn = sqlite3.connect(str(db), isolation_level=None)
        to_terms_layout(conn)
        conn.close()
    service_for(settings, clock=clock).merge(pair.na, pair.nb)
    conn = sqlite3.connect(str(pair.adb), isolation_level=None)
    assert layout_state(conn) == TERMS  # the retired source: only its meta row was written
    conn.close()
    mb = open_mgr(pair.b)
    conn = mb.store.conn()
    assert layout_state(conn) == TERMS
    assert [r["id"] for r in search_memory(mb, "only in alpha")] == [pair.sa["items"][0].logical_id]
    assert rebuild_now(conn)
    assert index_texts(conn) == fresh_index_texts(conn) and item_postings_consistent(conn)
    assert [r["id"] for r in search_memory(mb, "only in alpha")] == [pair.sa["items"][0].logical_id]
    assert active_identity_dupes(pair.bdb) == []


# --------------------------------------------------------------------------- validation


def _digests(*dbs: Path) -> list[dict]:
    return [file_digest(d) for d in dbs]


def _registry_rows(settings) -> list[tuple]:
    with Registry(settings.home) as reg:
        return [tuple(e.__dict__.values()) for e in reg.entries()] + [
            tuple(r) for r in reg._conn.execute("SELECT * FROM aliases ORDER BY alias")]


def test_validation_refuses_without_side_effects(pair, tmp_path, open_mgr, settings, clock):
    c = checkout(tmp_path, "gamma", remote=DEFAULT_REMOTE)
    used(open_mgr(c)).close()
    d = checkout(tmp_path, "delta", remote=DEFAULT_REMOTE)
    used(open_mgr(d)).close()
    nc, nd = name_of(c), name_of(d)
    svc = service_for(settings, clock=clock)
    svc.merge(nd, nc)  # D is retired into C
    dbs = (pair.adb, pair.bdb, db_of(c), db_of(d))

    cases = [
        ((pair.na, pair.na), UsageError, "two different stores"),
        ((pair.na, "project-0000000000000000000000ZZZZ"), UsageError, "unknown store"),
        (("project-0000000000000000000000ZZZZ", pair.nb), UsageError, "unknown store"),
        ((nd, pair.nb), MergeError, f"merged into {nc}"),  # retired source
        ((pair.na, nd), MergeError, f"merged into {nc}"),  # retired target
    ]
    for (source, target), error, text in cases:
        before, reg_before = _digests(*dbs), _registry_rows(settings)
        with pytest.raises(error, match=text):
            svc.merge(source, target)
        assert _digests(*dbs) == before, (source, target)
        assert _registry_rows(settings) == reg_before, (source, target)

    # a degraded file, as source or as target: refused, nothing written to either store
    conn = sqlite3.connect(str(db_of(c)), isolation_level=None)
    conn.execute("CREATE TABLE intruder (x)")
    conn.close()
    for source, target in ((nc, pair.nb), (pair.na, nc)):
        before, reg_before = _digests(*dbs), _registry_rows(settings)
        with pytest.raises(MergeError, match=f"{nc} .* not usable: .*intruder"):
            svc.merge(source, target)
        assert _digests(*dbs) == before
        assert _registry_rows(settings) == reg_before
    # a missing file
    db_of(c).unlink()
    with pytest.raises(MergeError, match="does not exist"):
        svc.merge(pair.na, nc)
    assert not db_of(c).exists()


# --------------------------------------------------------------------------- end to end


def test_end_to_end_merge_moves_everything_and_keeps_the_identity_invariant(pair, settings, clock, open_mgr):
    set_label(pair.adb, "Alpha")
    ca, cb = counts(pair.adb), counts(pair.bdb)
    a_active_items = scalar(pair.adb, "SELECT count(*) FROM memory_items WHERE status = 'active'")

    result = service_for(settings, clock=clock).merge(pair.na, pair.nb)

    assert result.as_dict() == {"target": pair.nb, "merged_turns": ca["turns"], "merged_items": a_active_items,
                                "label_moved": True, "root_moved": False, "aliases": [pair.na],
                                "reorg_status": "no_model"}
    after = counts(pair.bdb)
    for table in ("threads", "turns", "memory_items"):
        assert after[table] == ca[table] + cb[table], table
    # + one organize job holding one queued candidate (with its source) for the conflicting item
    assert after["memory_jobs"] == ca["memory_jobs"] + cb["memory_jobs"] + 1
    assert after["memory_candidates"] == ca["memory_candidates"] + cb["memory_candidates"] + 1
    assert after["candidate_sources"] == ca["candidate_sources"] + cb["candidate_sources"] + 1
    # every source row arrived under its own ID
    for table in ("turns", "memory_jobs", "memory_candidates", "memory_items"):
        ids = {r["id"] for r in rows(pair.adb, f"SELECT id FROM {table}")}
        assert ids <= {r["id"] for r in rows(pair.bdb, f"SELECT id FROM {table}")}, table

    # threads: the target keeps exactly its own active thread; the source's arrive archived
    assert rows(pair.bdb, "SELECT id FROM threads WHERE status = 'active'") == [{"id": pair.b_thread}]
    moved = rows(pair.bdb, "SELECT status, origin_store FROM threads WHERE id IN (SELECT id FROM threads"
                           " WHERE origin_store IS NOT NULL)")
    assert len(moved) == ca["threads"] and all(t == {"status": "archived", "origin_store": pair.na} for t in moved)

    # identity invariant: never two active items of one identity
    assert active_identity_dupes(pair.bdb) == []
    # identical item: linked to the target's, not duplicated
    holder = rows(pair.bdb, "SELECT * FROM memory_items WHERE logical_id = ? AND status = 'active'",
                  (pair.same_b.logical_id,))
    assert len(holder) == 1
    linked = rows(pair.bdb, "SELECT candidate_id FROM item_candidates WHERE item_row_id = ?", (holder[0]["row_id"],))
    assert {r["candidate_id"] for r in linked} == {pair.same_a.candidate_id, pair.same_b.candidate_id}
    [copied] = rows(pair.bdb, "SELECT status, replaced_by FROM memory_items WHERE id = ?", (pair.same_a.revision_id,))
    assert copied == {"status": "superseded", "replaced_by": holder[0]["id"]}
    # conflicting item: the target's stays active, the source's waits as a pending candidate for organize
    [active] = rows(pair.bdb, "SELECT statement FROM memory_items WHERE subject = 'indentation' AND status = 'active'")
    assert active["statement"] == "Use four spaces."
    [queued] = rows(pair.bdb, "SELECT * FROM memory_candidates WHERE status = 'pending' AND statement = 'Use tabs.'")
    assert queued["origin_store"] == pair.na
    job = rows(pair.bdb, "SELECT kind, status FROM memory_jobs WHERE id = ?", (queued["consolidation_job_id"],))
    assert job == [{"kind": "consolidation", "status": "pending"}]
    assert rows(pair.bdb, "SELECT turn_id, quote FROM candidate_sources WHERE candidate_id = ?", (queued["id"],)) == [
        {"turn_id": pair.sa["turns"][-1], "quote": "remember: indentation"}]
    # a source-only item arrives active, findable, with its provenance
    mb = open_mgr(pair.b)
    detail = mb.show_item(pair.sa["items"][0].logical_id)
    assert detail.status == "active" and detail.subject == "only in alpha"
    assert [(s.turn_id, s.quote) for s in detail.sources] == [(pair.sa["turns"][0], "remember: only in alpha")]
    assert pair.sa["items"][0].logical_id in {i.id for i in mb.list_items()}
    assert scalar(pair.bdb, "SELECT count(*) FROM recall_postings p JOIN memory_items m ON m.row_id = p.item_row_id"
                            " WHERE m.logical_id = ?", (pair.sa["items"][0].logical_id,)) > 0
    # the thread-scoped discussion follows its (archived) thread
    [talk] = rows(pair.bdb, "SELECT status, thread_id FROM memory_items WHERE id = ?", (pair.talk_a.revision_id,))
    assert talk == {"status": "active", "thread_id": pair.a_thread}
    # unfinished jobs: pending stay pending, the source's leased one is given back
    assert rows(pair.bdb, "SELECT status, lease_owner FROM memory_jobs WHERE id = ?", (pair.leased,)) == [
        {"status": "pending", "lease_owner": None}]
    assert rows(pair.bdb, "SELECT status FROM memory_jobs WHERE id = ?", (pair.sa["job"],)) == [{"status": "pending"}]
    assert rows(pair.bdb, "SELECT status FROM memory_candidates WHERE id = ?", (pair.sa["candidate"],)) == [
        {"status": "pending"}]
    status = mb.status()
    assert status.state == "healthy" and status.turns == after["turns"]

    # label moved (the target had none), root stayed; the source is retired, its file kept
    tm, sm = meta(pair.bdb), meta(pair.adb)
    assert tm["label"] == "Alpha" and tm["root"] == str(pair.b) and tm["retired_into"] is None
    assert sm["retired_into"] == pair.nb and sm["retired_at"] == clock.now()
    assert counts(pair.adb)["turns"] == ca["turns"]  # the backup still holds everything
    with Registry(settings.home) as reg:
        assert reg.require(pair.na).retired_into == pair.nb
        assert reg.holder_of(pair.na) == pair.nb
        assert reg.require(pair.nb).label == "Alpha"
    # the audit: names and counts only
    [audit] = rows(pair.bdb, "SELECT event, detail FROM audit_events")
    assert audit["event"] == "memory_stores_merged"
    assert json.loads(audit["detail"]) == {"source": pair.na, "target": pair.nb, "turns": ca["turns"],
                                           "items": a_active_items}
    assert [r["alias"] for r in rows(pair.bdb, "SELECT alias FROM store_aliases")] == [pair.na]


def test_label_and_root_move_only_when_the_target_has_none(pair, settings, clock):
    set_label(pair.adb, "Alpha")
    set_label(pair.bdb, "Beta")
    conn = sqlite3.connect(str(pair.bdb), isolation_level=None)
    conn.execute("UPDATE memory_meta SET root = NULL, remote = NULL")  # e.g. a store added from elsewhere
    conn.close()
    result = service_for(settings, clock=clock).merge(pair.na, pair.nb)
    assert (result.label_moved, result.root_moved) == (False, True)
    tm = meta(pair.bdb)
    assert tm["label"] == "Beta"
    assert (tm["root"], tm["remote"]) == (str(pair.a), "example.com/org/alpha")


# --------------------------------------------------------------------------- retry after a failure


@pytest.mark.parametrize("step", ["first_copy", "target_commit", "retire"])
def test_retry_after_a_failure_at_each_step_gives_the_uninterrupted_result(pair, settings, clock, tmp_path, step):
    twin_a = copy_store_file(pair.adb, tmp_path / "twin" / "a" / "memory.db")
    twin_b = copy_store_file(pair.bdb, tmp_path / "twin" / "b" / "memory.db")
    expected = merge_files(twin_a, twin_b, now=clock.now())
    svc = service_for(settings, clock=clock)

    with pytest.raises(RuntimeError, match="injected"):
        svc.merge(pair.na, pair.nb, fail_at=step)
    assert (meta(pair.adb)["retired_into"] is not None) == (step == "retire")
    assert active_identity_dupes(pair.bdb) == []
    result = svc.merge(pair.na, pair.nb)

    assert (result.merged_turns, result.merged_items, result.aliases) == (
        expected.merged_turns, expected.merged_items, expected.aliases)
    assert state_view(pair.bdb) == state_view(twin_b)
    assert state_view(pair.adb) == state_view(twin_a)
    assert counts(pair.bdb) == counts(twin_b)
    with Registry(settings.home) as reg:
        assert reg.require(pair.na).retired_into == pair.nb and reg.holder_of(pair.na) == pair.nb
    # and once more: a completed merge run again changes nothing
    again = svc.merge(pair.na, pair.nb)
    assert again.merged_turns == result.merged_turns
    assert state_view(pair.bdb) == state_view(twin_b)


def test_a_write_between_a_failed_attempt_and_the_retry_arrives(pair, settings, clock, open_mgr):
    svc = service_for(settings, clock=clock)
    with pytest.raises(RuntimeError):
        svc.merge(pair.na, pair.nb, fail_at="first_copy")
    ma = open_mgr(pair.a)  # not retired yet: the checkout still uses its own store
    assert ma.redirect is None
    [late] = add_turns(ma, 1, tag="between")
    ma.close()
    svc.merge(pair.na, pair.nb)
    assert rows(pair.bdb, "SELECT user_text FROM turns WHERE id = ?", (late,)) == [
        {"user_text": "between question 0: how does the parser handle includes?"}]


# --------------------------------------------------------------------------- writes during and after


def test_a_write_during_the_merge_is_swept_in_and_a_write_after_fails_loudly(pair, settings, clock, open_mgr,
                                                                             monkeypatch):
    ma = open_mgr(pair.a)
    open_turn = ma.begin_turn("a question still waiting for its answer")
    real = merge_mod.copy_store
    late: dict[str, object] = {}

    def copy_then_write(*args, **kw):
        out = real(*args, **kw)
        if not late:  # between the first copy and the sweep, the app keeps writing to the source
            late["turn"] = add_turns(ma, 1, tag="during")[0]
            late["item"] = add_item(ma, "late decision", turn_id=late["turn"])
            ma.complete_turn(open_turn, "the answer arrived during the merge")
        return out

    monkeypatch.setattr(merge_mod, "copy_store", copy_then_write)
    service_for(settings, clock=clock).merge(pair.na, pair.nb)

    assert rows(pair.bdb, "SELECT state FROM turns WHERE id = ?", (late["turn"],)) == [{"state": "completed"}]
    assert rows(pair.bdb, "SELECT state, assistant_text FROM turns WHERE id = ?", (open_turn.turn_id,)) == [
        {"state": "completed", "assistant_text": "the answer arrived during the merge"}]
    assert rows(pair.bdb, "SELECT status FROM memory_items WHERE logical_id = ?", (late["item"].logical_id,)) == [
        {"status": "active"}]

    source_before = counts(pair.adb)
    with pytest.raises(StoreRetiredError, match=f"merged into {pair.nb}") as info:
        ma.begin_turn("written after the merge")
    assert info.value.holder == pair.nb
    with pytest.raises(StoreRetiredError):
        ma.new_thread(timeout=0)
    with pytest.raises(StoreRetiredError):
        ma.forget(pair.sa["items"][0].logical_id)
    assert counts(pair.adb) == source_before
    assert scalar(pair.bdb, "SELECT count(*) FROM turns WHERE user_text = 'written after the merge'") == 0


def test_a_turn_open_at_retirement_cannot_complete_into_the_retired_store(pair, settings, clock, open_mgr):
    ma = open_mgr(pair.a)
    h = ma.begin_turn("asked just before the merge")
    service_for(settings, clock=clock).merge(pair.na, pair.nb)
    with pytest.raises(StoreRetiredError):
        ma.complete_turn(h, "too late")
    # the user's text is not lost: it arrived in the target (open until recovery marks it interrupted)
    assert rows(pair.bdb, "SELECT state, user_text FROM turns WHERE id = ?", (h.turn_id,)) == [
        {"state": "open", "user_text": "asked just before the merge"}]


# --------------------------------------------------------------------------- a copied store


def _revise(mgr, logical_id: str, subject: str, statement: str) -> None:
    conn = mgr.store.conn()
    now = mgr.clock.now()
    with write_txn(conn):
        row = conn.execute("SELECT row_id, revision, id FROM memory_items WHERE logical_id = ? AND status = 'active'",
                           (logical_id,)).fetchone()
        retire_revision(conn, row["row_id"], status="superseded", replaced_by=None, now=now)
        f = ItemFields("project_decision", subject, statement, statement, "hard", "explicit", "on_match")
        insert_revision(conn, f, logical_id=logical_id, revision=row["revision"] + 1, now=now)


def test_a_store_copied_to_a_second_checkout_merges_without_losing_either_side(tmp_path, settings, clock, open_mgr):
    a = checkout(tmp_path, "laptop/proj", remote=DEFAULT_REMOTE)
    ma = open_mgr(a, clock=clock)
    common = add_turns(ma, 2, tag="common")
    indent = add_item(ma, "indentation", "Use tabs.")
    build = add_item(ma, "build system", "Use make.")
    ma.close()
    b = checkout(tmp_path, "desktop/proj", remote=DEFAULT_REMOTE)
    copy_store_file(db_of(a), db_of(b))  # the same memory.db, copied to a second checkout

    ma, mb = open_mgr(a, clock=clock), open_mgr(b, clock=clock)
    a_turns = add_turns(ma, 2, tag="laptop")  # both continue the same active thread: it diverges
    b_turns = add_turns(mb, 3, tag="desktop")
    a_item = add_item(ma, "laptop only")
    b_item = add_item(mb, "desktop only")
    _revise(mb, indent.logical_id, "indentation", "Use four spaces.")  # B revised a shared item
    mb.forget(build.logical_id)  # and forgot another
    mb.new_thread(timeout=0)
    b_more = add_turns(mb, 1, tag="desktop-new-thread")
    ma.close()
    mb.close()

    svc = service_for(settings, clock=clock)
    nb = svc.add(b).name  # the copy gets a name of its own; the original keeps its entry
    na = name_of(a)
    assert na != nb and nb == name_of(b)
    with Registry(settings.home) as reg:
        assert Path(reg.require(na).db_path) == db_of(a).resolve()
    assert [(p.source, p.target, p.judged_by) for p in svc.scan().proposals] == [(nb, na, "remote")]

    svc.merge(nb, na)

    texts = {r["id"]: r["user_text"] for r in rows(db_of(a), "SELECT id, user_text FROM turns")}
    assert set(common + a_turns + b_turns + b_more) <= set(texts)
    assert len(texts) == 2 + 2 + 3 + 1
    # B's diverged copy of the shared active thread arrived as a thread of its own, archived
    assert scalar(db_of(a), "SELECT count(*) FROM threads WHERE status = 'active'") == 1
    seqs = rows(db_of(a), "SELECT thread_id, sequence FROM turns")
    assert len({(r["thread_id"], r["sequence"]) for r in seqs}) == len(seqs)
    active = {r["subject"]: r["statement"] for r in rows(db_of(a), "SELECT subject, statement FROM memory_items"
                                                                   " WHERE status = 'active'")}
    assert active["laptop only"] and active["desktop only"]
    assert active["indentation"] == "Use four spaces."  # B's later revision carries on the chain
    assert "build system" not in active  # forgotten on one side stays forgotten
    assert active_identity_dupes(db_of(a)) == []
    ids = {r["logical_id"] for r in rows(db_of(a), "SELECT logical_id FROM memory_items")}
    assert {a_item.logical_id, b_item.logical_id, indent.logical_id, build.logical_id} <= ids
    assert meta(db_of(b))["retired_into"] == na


def test_extraction_jobs_of_a_turn_both_copies_queued_do_not_collide(tmp_path, settings, clock, open_mgr):
    """Copied while a turn was open; each side then ended that turn and queued its own extraction
    job. One job per turn survives in the target, the source's candidates follow it."""
    a = checkout(tmp_path, "laptop/proj", remote=DEFAULT_REMOTE)
    ma = open_mgr(a, clock=clock)
    h = ma.begin_turn("copied while this was open")
    ma.close()
    b = checkout(tmp_path, "desktop/proj", remote=DEFAULT_REMOTE)
    copy_store_file(db_of(a), db_of(b))
    for where, answer in ((a, "answered on the laptop"), (b, "answered on the desktop")):
        m = open_mgr(where, clock=clock)
        m.complete_turn(h, answer)
        m.close()
    svc = service_for(settings, clock=clock)
    nb = svc.add(b).name
    na = name_of(a)
    svc.merge(nb, na)
    assert rows(db_of(a), "SELECT state, assistant_text FROM turns WHERE id = ?", (h.turn_id,)) == [
        {"state": "completed", "assistant_text": "answered on the laptop"}]
    assert scalar(db_of(a), "SELECT count(*) FROM memory_jobs WHERE turn_id = ?", (h.turn_id,)) == 1
