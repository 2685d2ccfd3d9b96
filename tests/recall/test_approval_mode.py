"""Approval mode (contracts §8): with `memory_approval = review`, an item awaiting review is never
recalled — not in the Map (standing or relevant lane), not by `memory_search`, not by `memory_read`,
in ordinary and repair intents alike — until it is kept; switching the mode needs no restart.

The property test runs random bilingual stores with random review marks and compares every Map and
search with the naive full scan that drops the unreviewed rows, and checks that no unreviewed ID
ever appears or can be read."""

from __future__ import annotations

import json
import random

import pytest

from autopatch_tui.core.memory import change_journal, review, review_marks
from autopatch_tui.core.memory.item_writes import insert_revision, retire_revision
from autopatch_tui.core.memory.items import bump_data_version
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.recall import memo as recall_memo
from autopatch_tui.core.recall import memory_map, standing_carry
from autopatch_tui.core.recall.cli_search import search_memory
from autopatch_tui.core.recall.memory_map import build_map
from autopatch_tui.core.recall.query import RecallQuery
from autopatch_tui.core.recall.session import RecallLimitError, RecallSession
from tests.support.recall_seed import SyntheticCorpus, active_thread, fields, map_keys, naive_map, naive_search

INTENTS = ("general_chat", "code_explain", "code_audit", "patch_explain", "zero_finding_review", "patch_revise")


@pytest.fixture(autouse=True)
def _fresh() -> None:
    standing_carry.clear()
    review.clear_carried()
    yield
    standing_carry.clear()
    review.clear_carried()


def active_rows(conn) -> dict[int, tuple[str, str]]:
    return {r[0]: (r[1], r[2]) for r in conn.execute("SELECT row_id, id, logical_id FROM memory_items"
                                                     " WHERE status = 'active'")}


def keep_rows(manager, rows: set[int]) -> None:
    """Mark these active rows kept, through the review door (logical IDs)."""
    conn = manager.store.conn()
    logical = [active_rows(conn)[r][1] for r in sorted(rows)]
    if logical:
        manager.review.keep(logical)


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_no_unreviewed_item_is_ever_recalled_in_review_mode(manager, seed: int) -> None:
    conn = manager.store.conn()
    corpus = SyntheticCorpus(seed=seed, en_words=180, zh_words=120)
    threads = corpus.populate(conn, 160, seed=seed)
    with write_txn(conn):  # plenty of `always` items, so the standing lane is exercised
        conn.execute("UPDATE memory_items SET recall_mode = 'always' WHERE kind != 'discussion_context'"
                     " AND row_id % 5 = 0")
        bump_data_version(conn)
    rng = random.Random(seed)
    rows = active_rows(conn)
    keep_rows(manager, {r for r in rows if rng.random() < 0.5})
    manager.review.set_approval("review", persist=False)
    queries = corpus.queries(conn, 21, seed=seed + 3)
    hidden_seen = nonempty = 0
    for n, (text, paths) in enumerate(queries):
        intent = INTENTS[n % len(INTENTS)]
        policy = manager.review.policy(intent, threads[n % len(threads)], conn)
        unreviewed = {rows[r][1] for r in policy.hidden if r in rows}
        assert policy.hidden & set(rows) == {r for r in rows if rows[r][0] not in manager.review.kept()}
        q = RecallQuery(intent, text, paths)
        mm = build_map(conn, q, policy, budget_tokens=4000)
        assert map_keys(mm) == map_keys(naive_map(conn, q, policy, budget_tokens=4000)), (text, intent)
        assert not set(mm.ids) & unreviewed
        session = RecallSession(manager.store.conn, q, policy)
        explicit = queries[(n + 5) % len(queries)][0]
        found = session.search(explicit)
        assert found == naive_search(conn, q, policy, explicit)
        assert not {f["id"] for f in found} & unreviewed
        nonempty += bool(mm.ids or found)
        for logical in list(unreviewed)[:3]:  # even an ID the request was never shown: refused
            session.readable.add(logical)
            with pytest.raises(RecallLimitError):
                session.read(logical)
            hidden_seen += 1
        session.close()
    assert nonempty >= len(queries) // 3 and hidden_seen  # not vacuous


def test_auto_mode_hides_nothing_and_review_mode_hides_exactly_the_unkept(manager) -> None:
    conn = manager.store.conn()
    SyntheticCorpus(seed=5, en_words=80, zh_words=40).populate(conn, 40, seed=5)
    rows = active_rows(conn)
    assert manager.review.approval == "auto" and manager.review.policy("general_chat", None, conn).hidden == frozenset()
    manager.review.set_approval("review", persist=False)
    assert manager.review.policy("code_audit", None, conn).hidden == frozenset(rows)  # nothing kept yet
    keep_rows(manager, set(list(rows)[:10]))
    assert manager.review.policy("code_audit", None, conn).hidden == frozenset(list(rows)[10:])
    assert review.carry_stats["carried"] >= 1  # the keep moved ten rows, no rebuild


def _tabs_item(conn, n: int, mode: str, paths=()) -> str:
    with change_journal.tracked(conn), write_txn(conn):
        _, logical = insert_revision(conn, fields(subject=f"tabs rule {n}", statement=f"Use tabs, case {n}.",
                                                  recall_mode=mode, applies_to_paths=paths, keywords=("tabs",)),
                                     logical_id=None, revision=1, now=1000.0 + n)
        bump_data_version(conn)
    return logical


def test_map_and_search_change_when_an_item_is_kept_and_the_carried_caches_follow(manager) -> None:
    conn = manager.store.conn()
    thread = active_thread(conn)
    standing = _tabs_item(conn, 1, "always")
    relevant = _tabs_item(conn, 2, "on_match")
    manager.review.set_approval("review", persist=False)

    def recalled() -> tuple[list[str], list[str]]:
        policy = manager.review.policy("general_chat", thread, conn)
        q = RecallQuery("general_chat", "tabs rule", ())
        mm = build_map(conn, q, policy, budget_tokens=3000)
        assert map_keys(mm) == map_keys(naive_map(conn, q, policy, budget_tokens=3000))
        return mm.ids, [r["id"] for r in search_memory(manager, "tabs")]

    assert recalled() == ([], [])
    manager.review.keep([standing])
    assert recalled() == ([standing], [standing])  # same memo: only the marks changed
    built = standing_carry.stats["built"]
    later = _tabs_item(conn, 3, "on_match")  # a write that changes no `always` row: caches carried
    assert recalled() == ([standing], [standing])
    assert standing_carry.stats["built"] == built
    manager.review.keep([relevant, later])
    ids, found = recalled()
    assert set(ids) == {standing, relevant, later} and set(found) == {standing, relevant, later}
    caches = memory_map._standing_caches(conn)[0]
    assert sum(1 for k in caches if k[0] == "hidden") <= 1  # one filtered base per base, never a pile-up


def test_a_revision_of_a_kept_item_is_hidden_again_until_kept(manager) -> None:
    conn = manager.store.conn()
    logical = _tabs_item(conn, 7, "on_match")
    manager.review.keep([logical])
    manager.review.set_approval("review", persist=False)
    assert [r["id"] for r in search_memory(manager, "tabs")] == [logical]
    with change_journal.tracked(conn), write_txn(conn):  # consolidation's `revise`
        old = conn.execute("SELECT row_id FROM memory_items WHERE logical_id = ? AND status = 'active'",
                           (logical,)).fetchone()[0]
        retire_revision(conn, old, status="superseded", replaced_by=None, now=2000.0)
        insert_revision(conn, fields(subject="tabs rule 7", statement="Use tabs, revised.", keywords=("tabs",)),
                        logical_id=logical, revision=2, now=2000.0)
        bump_data_version(conn)
    assert search_memory(manager, "tabs") == []
    assert [e.change for e in manager.review.items()] == ["revised"]
    manager.review.keep([logical])
    assert [r["id"] for r in search_memory(manager, "tabs")] == [logical]


def test_switching_the_mode_takes_effect_for_the_next_request_without_a_restart(manager) -> None:
    conn = manager.store.conn()
    logical = _tabs_item(conn, 9, "on_match")
    assert [r["id"] for r in search_memory(manager, "tabs")] == [logical]
    manager.review.set_approval("review", persist=False)
    assert search_memory(manager, "tabs") == []
    manager.review.set_approval("auto", persist=False)
    assert [r["id"] for r in search_memory(manager, "tabs")] == [logical]


def test_unreadable_marks_fail_closed_in_review_mode(manager) -> None:
    conn = manager.store.conn()
    logical = _tabs_item(conn, 4, "always")
    manager.review.keep([logical])
    manager.paths.review_marks.write_text("{not json")
    manager.review.set_approval("review", persist=False)
    assert manager.review.policy("general_chat", None, conn).hidden == frozenset(active_rows(conn))
    manager.review.set_approval("auto", persist=False)
    assert manager.review.policy("general_chat", None, conn).hidden == frozenset()


def test_the_marks_of_another_store_generation_count_as_none(manager) -> None:
    conn = manager.store.conn()
    logical = _tabs_item(conn, 5, "on_match")
    manager.review.keep([logical])
    assert manager.review.count() == 0
    stamp = review_marks.store_stamp(conn)
    text = manager.paths.review_marks.read_text().replace(f'"generation": {stamp.generation}',
                                                          f'"generation": {stamp.generation + 1}')
    manager.paths.review_marks.unlink()
    manager.paths.review_marks.write_text(text)
    assert manager.review.count() == 1


def test_the_carried_unreviewed_set_equals_a_rebuild_after_random_writes_and_keeps(manager) -> None:
    """The unreviewed set carried across item writes and keeps (by the rows written since and the marks
    added or removed) equals, among the active rows, a set built from scratch — after creates,
    revisions, forgets, keeps, and a marks file replaced from outside (marks removed)."""
    conn = manager.store.conn()
    rng = random.Random(21)
    made = [_tabs_item(conn, n, rng.choice(("always", "on_match"))) for n in range(100, 130)]
    manager.review.set_approval("review", persist=False)
    manager.review.policy("general_chat", None, conn)  # the first set: built
    for step in range(40):
        action = rng.choice(("create", "keep", "forget", "revise", "unmark"))
        live = [i for i in made if manager.show_item(i).status == "active"]
        if action == "create" or not live:
            made.append(_tabs_item(conn, 200 + step, rng.choice(("always", "on_match"))))
        elif action == "keep":
            manager.review.keep(rng.sample(live, min(3, len(live))))
        elif action == "forget":
            manager.forget(rng.choice(live))
        elif action == "revise":
            target = rng.choice(live)
            with change_journal.tracked(conn), write_txn(conn):
                row = conn.execute("SELECT row_id, revision, subject FROM memory_items WHERE logical_id = ?"
                                   " AND status = 'active'", (target,)).fetchone()
                retire_revision(conn, row[0], status="superseded", replaced_by=None, now=3000.0 + step)
                insert_revision(conn, fields(subject=row[2], statement=f"Revised {step}.", keywords=("tabs",)),
                                logical_id=target, revision=row[1] + 1, now=3000.0 + step)
                bump_data_version(conn)
        elif manager.paths.review_marks.exists():  # another process rewrote the marks with fewer
            doc = json.loads(manager.paths.review_marks.read_text())
            doc["kept"] = doc["kept"][: len(doc["kept"]) // 2]
            manager.paths.review_marks.unlink()
            manager.paths.review_marks.write_text(json.dumps(doc))
        carried = manager.review.policy("general_chat", None, conn).hidden
        review.clear_carried()
        recall_memo.clear()  # nothing memoized either: built from scratch
        rebuilt = manager.review.policy("general_chat", None, conn).hidden
        active = set(active_rows(conn))
        assert carried & active == rebuilt & active == rebuilt, (step, action)
    assert review.carry_stats["carried"] > 0
