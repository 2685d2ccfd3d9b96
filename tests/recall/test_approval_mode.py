"""Approval mode (contracts §8): with `memory_approval = review`, an item awaiting review is never
recalled — not in the Map (standing or relevant lane), not by `memory_search`, not by `memory_read`,
in ordinary and repair intents alike — until it is kept; switching the mode needs no restart.

The policy holds an allow-list — the revisions kept when the request started — so a revision written
while the request runs (the worker consolidating the previous turn while the next one calls tools)
is hidden too. The property test runs random bilingual stores with random review marks, writes new
items and revisions of kept items between `policy()` and every Map, search and read, compares each
with the naive full scan that keeps only the kept revisions, and checks that no unreviewed ID or
text ever appears or can be read."""

from __future__ import annotations

import json
import random

import pytest

from autopatch_tui.core.memory import change_journal, review_marks
from autopatch_tui.core.memory.item_writes import insert_revision, retire_revision
from autopatch_tui.core.memory.items import bump_data_version
from autopatch_tui.core.memory.sqlite import write_txn
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
    yield
    standing_carry.clear()


def active_rows(conn) -> dict[int, tuple[str, str]]:
    return {r[0]: (r[1], r[2]) for r in conn.execute("SELECT row_id, id, logical_id FROM memory_items"
                                                     " WHERE status = 'active'")}


def keep_rows(manager, rows: set[int]) -> None:
    """Mark these active rows kept, through the review door (logical IDs)."""
    conn = manager.store.conn()
    logical = [active_rows(conn)[r][1] for r in sorted(rows)]
    if logical:
        manager.review.keep(logical)


def _revise(conn, logical: str, statement: str, now: float) -> None:
    """Consolidation's `revise` of an active item."""
    with change_journal.tracked(conn), write_txn(conn):
        row = conn.execute("SELECT row_id, revision, subject FROM memory_items WHERE logical_id = ?"
                           " AND status = 'active'", (logical,)).fetchone()
        retire_revision(conn, row[0], status="superseded", replaced_by=None, now=now)
        insert_revision(conn, fields(subject=row[2], statement=statement, keywords=("tabs",)),
                        logical_id=logical, revision=row[1] + 1, now=now)
        bump_data_version(conn)


def _write_during_request(conn, rng: random.Random, words: str, kept_logical: list[str], tag: str) -> set[str]:
    """What the worker lands while a request runs: a brand-new item and a revision of a kept one,
    both worded like the request's queries (so a leak would match). Returns the statements."""
    new_text = f"{words} (new while the request ran, {tag})"
    with change_journal.tracked(conn), write_txn(conn):
        insert_revision(conn, fields(subject=f"{words[:60]} {tag}", statement=new_text, recall_mode=rng.choice(
            ("always", "on_match")), keywords=tuple(words.split()[:3])), logical_id=None, revision=1, now=5000.0)
        bump_data_version(conn)
    revised_text = f"{words} (a revision written while the request ran, {tag})"
    if kept_logical:
        _revise(conn, rng.choice(kept_logical), revised_text, 5001.0)
    return {new_text, revised_text}


def _statements(conn, logical_ids) -> set[str]:
    return {r[0] for r in conn.execute("SELECT statement FROM memory_items WHERE logical_id IN"
                                       " (SELECT value FROM json_each(?))", (json.dumps(list(logical_ids)),))}


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
    hidden_seen = nonempty = leaks_tried = 0
    for n, (text, paths) in enumerate(queries):
        intent = INTENTS[n % len(INTENTS)]
        rows = active_rows(conn)
        policy = manager.review.policy(intent, threads[n % len(threads)], conn)  # the request starts
        kept = manager.review.kept()
        assert policy.kept == kept
        unreviewed = {logical for rev, logical in rows.values() if rev not in kept}
        kept_logical = [logical for rev, logical in rows.values() if rev in kept]
        q = RecallQuery(intent, text, paths)
        explicit = queries[(n + 5) % len(queries)][0]
        written = _write_during_request(conn, rng, text, kept_logical, f"map {n}")  # before the Map
        mm = build_map(conn, q, policy, budget_tokens=4000)
        assert map_keys(mm) == map_keys(naive_map(conn, q, policy, budget_tokens=4000)), (text, intent)
        assert not set(mm.ids) & unreviewed
        assert not _statements(conn, mm.ids) & written
        session = RecallSession(manager.store.conn, q, policy)
        written |= _write_during_request(conn, rng, explicit, kept_logical, f"search {n}")  # before the search
        found = session.search(explicit)
        assert found == naive_search(conn, q, policy, explicit)
        assert not {f["id"] for f in found} & unreviewed
        assert not {f["statement"] for f in found} & written
        nonempty += bool(mm.ids or found)
        shown = [i for i in dict.fromkeys([*mm.ids, *(f["id"] for f in found)]) if i in kept_logical]
        for logical in shown[:2]:  # a kept item the request was shown, revised before it is read
            written.add(f"read {n} {logical}")
            _revise(conn, logical, f"read {n} {logical}", 6000.0)
            with pytest.raises(RecallLimitError):  # its kept revision is gone; the new one is unreviewed
                session.read(logical)
            leaks_tried += 1
        for logical in list(unreviewed)[:3]:  # even an ID the request was never shown: refused
            session.readable.add(logical)
            with pytest.raises(RecallLimitError):
                session.read(logical)
            hidden_seen += 1
        session.close()
    assert nonempty >= len(queries) // 3 and hidden_seen and leaks_tried  # not vacuous


def test_auto_mode_hides_nothing_and_review_mode_allows_exactly_the_kept(manager) -> None:
    conn = manager.store.conn()
    SyntheticCorpus(seed=5, en_words=80, zh_words=40).populate(conn, 40, seed=5)
    rows = active_rows(conn)
    assert manager.review.approval == "auto" and manager.review.policy("general_chat", None, conn).kept is None
    manager.review.set_approval("review", persist=False)
    assert manager.review.policy("code_audit", None, conn).kept == frozenset()  # nothing kept yet
    keep_rows(manager, set(list(rows)[:10]))
    assert manager.review.policy("code_audit", None, conn).kept == frozenset(rows[r][0] for r in list(rows)[:10])


def test_an_item_and_a_revision_written_while_a_request_runs_stay_hidden(manager) -> None:
    """Review finding 1: the worker lands the previous turn's consolidation while this request calls
    tools — a brand-new item and a revision of a kept one. Neither reaches the model."""
    conn = manager.store.conn()
    kept = _tabs_item(conn, 1, "on_match")
    manager.review.keep([kept])
    manager.review.set_approval("review", persist=False)
    policy = manager.review.policy("general_chat", None, conn)
    session = RecallSession(manager.store.conn, RecallQuery("general_chat", "hello", ()), policy)
    fresh = _tabs_item(conn, 2, "always")
    _revise(conn, kept, "Use SPACES now (an unreviewed revision).", 2000.0)
    assert session.search("tabs") == []
    assert build_map(conn, RecallQuery("general_chat", "tabs rule", ()), policy, budget_tokens=3000).ids == []
    session.readable.update((kept, fresh))
    for logical in (kept, fresh):
        with pytest.raises(RecallLimitError):
            session.read(logical)
    # the next request, after a keep of both, sees them
    manager.review.keep([kept, fresh])
    later = RecallSession(manager.store.conn, RecallQuery("general_chat", "hello", ()),
                          manager.review.policy("general_chat", None, conn))
    assert {f["id"] for f in later.search("tabs")} == {kept, fresh}
    assert later.read(kept)["statement"] == "Use SPACES now (an unreviewed revision)."


def test_rows_written_after_a_clear_during_a_request_stay_hidden(manager) -> None:
    """`memory clear` deletes every row, so new rows get the old row IDs again: a request that
    started before the clear must not take them for the rows it was allowed to see."""
    conn = manager.store.conn()
    made = [_tabs_item(conn, n, "always") for n in range(3)]
    manager.review.keep(made)
    manager.review.set_approval("review", persist=False)
    policy = manager.review.policy("general_chat", None, conn)
    before = {r[0] for r in conn.execute("SELECT row_id FROM memory_items")}
    session = RecallSession(manager.store.conn, RecallQuery("general_chat", "hello", ()), policy)
    manager.clear(confirm=True)
    again = [_tabs_item(conn, n, "always") for n in range(10, 13)]
    assert {r[0] for r in conn.execute("SELECT row_id FROM memory_items")} & before  # the IDs came back
    assert session.search("tabs") == []
    assert build_map(conn, RecallQuery("general_chat", "tabs rule", ()), policy, budget_tokens=3000).ids == []
    session.readable.update(again)
    with pytest.raises(RecallLimitError):
        session.read(again[0])


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
    assert sum(1 for k in caches if k[0] == "kept") <= 1  # one filtered base per base, never a pile-up


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
    assert manager.review.policy("general_chat", None, conn).kept == frozenset()  # allows nothing
    assert search_memory(manager, "tabs") == []
    manager.review.set_approval("auto", persist=False)
    assert manager.review.policy("general_chat", None, conn).kept is None


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
