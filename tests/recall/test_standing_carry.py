"""The standing lane's caches survive a Memory write that changed no `always` item (issue 14: the
Map after each consolidation commit rebuilt the standing base, ~50 ms at 100k items), and are
built again after any write that may have: a new or retired `always` row, a gap in the change
journal (another connection's raw write, a clear), an untracked retirement. Every Map equals the
naive Map of the same store."""

from __future__ import annotations

import itertools

import pytest

from autopatch_tui.core.memory import change_journal
from autopatch_tui.core.memory.item_writes import insert_revision, retire_revision
from autopatch_tui.core.memory.items import bump_data_version, forget_item
from autopatch_tui.core.memory.sqlite import open_readwrite, write_txn
from autopatch_tui.core.recall import memory_map, standing_carry
from autopatch_tui.core.recall.memory_map import build_map
from autopatch_tui.core.recall.query import RecallQuery, policy_for
from tests.support.recall_seed import active_thread, fields, map_keys, naive_map

_n = itertools.count()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    standing_carry.clear()
    yield
    standing_carry.clear()


def commit(conn, *, always: int = 0, on_match: int = 0, paths=("src",)) -> list[str]:
    """A tracked commit (as consolidation writes): new items, one version bump."""
    ids = []
    with change_journal.tracked(conn), write_txn(conn):
        for mode, count in (("always", always), ("on_match", on_match)):
            for _ in range(count):
                n = next(_n)
                _, logical = insert_revision(conn, fields(subject=f"tabs rule {n}", statement=f"Use tabs, case {n}.",
                                                          recall_mode=mode, applies_to_paths=paths if n % 2 else (),
                                                          keywords=("tabs",)),
                                             logical_id=None, revision=1, now=1000.0 + n)
                ids.append(logical)
        bump_data_version(conn)
    return ids


def check(conn) -> tuple[dict, dict]:
    """Build the Map (ordinary and scoped) and compare it with the naive Map; the caches it used."""
    thread = active_thread(conn)
    for paths in ((), ("src/a.py",)):
        q = RecallQuery("general_chat", "tabs rule", paths)
        policy = policy_for("general_chat", thread)
        got = build_map(conn, q, policy, budget_tokens=3000)
        assert map_keys(got) == map_keys(naive_map(conn, q, policy, budget_tokens=3000)), paths
    return memory_map._standing_caches(conn)


def standing_ids(conn) -> set[str]:
    q = RecallQuery("general_chat", "", ("src/a.py",))
    return {m.row["logical_id"] for m in build_map(conn, q, policy_for("general_chat", active_thread(conn)),
                                                   budget_tokens=100_000).standing}


def test_writes_that_touch_no_always_item_keep_the_standing_caches(manager) -> None:
    conn = manager.store.conn()
    always = commit(conn, always=12)
    commit(conn, on_match=12)
    caches = check(conn)
    commit(conn, on_match=3)  # consolidation created on_match items
    assert check(conn) is caches
    on_match_id = commit(conn, on_match=1)[0]
    forget_item(conn, on_match_id, now=2000.0)  # an on_match item forgotten
    assert check(conn) is caches
    with change_journal.tracked(conn), write_txn(conn):  # an on_match item revised
        row = conn.execute("SELECT * FROM memory_items WHERE status = 'active' AND recall_mode = 'on_match'"
                           " LIMIT 1").fetchone()
        retire_revision(conn, row["row_id"], status="superseded", replaced_by=None, now=2001.0)
        insert_revision(conn, fields(subject=row["subject"], statement="Revised.", recall_mode="on_match"),
                        logical_id=row["logical_id"], revision=row["revision"] + 1, now=2001.0)
        bump_data_version(conn)
    assert check(conn) is caches
    assert set(always) <= standing_ids(conn)


def test_a_new_or_retired_always_item_rebuilds_them(manager) -> None:
    conn = manager.store.conn()
    always = commit(conn, always=8)
    commit(conn, on_match=8)
    caches = check(conn)
    [new] = commit(conn, always=1)
    assert check(conn) is not caches  # a careless carry would miss the new item
    assert new in standing_ids(conn)
    caches = check(conn)
    forget_item(conn, always[1], now=3000.0)
    assert check(conn) is not caches
    assert always[1] not in standing_ids(conn)


def test_what_the_journal_cannot_vouch_for_rebuilds_them(manager, repo) -> None:
    conn = manager.store.conn()
    always = commit(conn, always=8)
    commit(conn, on_match=8)
    caches = check(conn)
    # another connection (as another process would) retires an always item with raw SQL and a bump
    other = open_readwrite(repo / ".autopatch-j" / "memory.db")
    try:
        with write_txn(other):
            other.execute("UPDATE memory_items SET status = 'forgotten' WHERE logical_id = ?", (always[3],))
            other.execute("UPDATE memory_meta SET data_version = data_version + 1 WHERE id = 1")
    finally:
        other.close()
    assert check(conn) is not caches
    assert always[3] not in standing_ids(conn)
    # an untracked retirement (no bump of its own), then a tracked on_match commit: poisoned
    caches = check(conn)
    with write_txn(conn):
        row = conn.execute("SELECT row_id FROM memory_items WHERE logical_id = ? AND status = 'active'",
                           (always[5],)).fetchone()[0]
        retire_revision(conn, row, status="superseded", replaced_by=None, now=4000.0)
    commit(conn, on_match=1)
    assert check(conn) is not caches
    assert always[5] not in standing_ids(conn)
    # a clear: every row gone, a new generation
    caches = check(conn)
    from autopatch_tui.core.memory.clear import clear_healthy

    clear_healthy(conn, now=5000.0)
    commit(conn, on_match=2)
    assert check(conn) is not caches
    assert standing_ids(conn) == set()
