"""The recall memo (standing lane, term document frequencies) is reused only while the Memory items
are unchanged: an item write by another connection or by the same connection starts it over, so
recall never answers from a stale store; a turn, job or summary write does not (the Map a request
builds right after `begin_turn` is the memoized one)."""

from __future__ import annotations

import sqlite3

from autopatch_tui.core.memory.items import bump_data_version, forget_item
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.recall import matching
from autopatch_tui.core.recall.memo import memo
from autopatch_tui.core.recall.query import policy_for
from tests.support.fixtures import db_path
from tests.support.recall_seed import active_thread, seed_item


def standing_ids(conn: sqlite3.Connection, thread: str) -> list[str]:
    return [m.row["logical_id"] for m in matching.standing_items(conn, policy_for("general_chat", thread), ())]


def test_unchanged_store_reuses_the_memo(manager) -> None:
    conn = manager.store.conn()
    thread = active_thread(conn)
    seed_item(conn, subject="answer in English", recall_mode="always", statement="Always answer in English.")
    first = standing_ids(conn, thread)
    cached = memo(conn)
    assert cached["standing"]  # the lane was memoized
    assert standing_ids(conn, thread) == first and memo(conn) is cached


def test_own_writes_and_other_connections_commits_drop_the_memo(manager, repo) -> None:
    conn = manager.store.conn()
    thread = active_thread(conn)
    a = seed_item(conn, subject="answer in English", recall_mode="always", statement="Always answer in English.")
    assert standing_ids(conn, thread) == [a.logical_id]
    b = seed_item(conn, subject="use tabs", recall_mode="always", statement="Indent with tabs.")  # same conn
    assert sorted(standing_ids(conn, thread)) == sorted([a.logical_id, b.logical_id])
    other = sqlite3.connect(db_path(repo), isolation_level=None)
    other.row_factory = sqlite3.Row
    try:  # a forget by another connection: no new row, only the status and the data version change
        forget_item(other, a.logical_id, now=1.0)
    finally:
        other.close()
    assert standing_ids(conn, thread) == [b.logical_id]


def test_turn_and_job_writes_keep_the_memo(manager) -> None:
    conn = manager.store.conn()
    thread = active_thread(conn)
    seed_item(conn, subject="answer in English", recall_mode="always", statement="Always answer in English.")
    first = standing_ids(conn, thread)
    cached = memo(conn)
    handle = manager.begin_turn("what do we do about the cache?")  # what ChatService.ask does before the Map
    assert memo(conn) is cached and standing_ids(conn, thread) == first
    manager.complete_turn(handle, "ok")  # completes the turn and queues its extraction job
    assert memo(conn) is cached
    with write_txn(conn):
        conn.execute("UPDATE memory_meta SET summary_version = data_version WHERE id = 1")
    assert memo(conn) is cached


def test_a_data_version_bump_alone_drops_the_memo(manager) -> None:
    conn = manager.store.conn()
    seed_item(conn, subject="answer in English", recall_mode="always", statement="Always answer in English.")
    cached = memo(conn)
    with write_txn(conn):
        bump_data_version(conn)
    assert memo(conn) is not cached


def test_document_frequency_follows_the_store(manager, monkeypatch) -> None:
    conn = manager.store.conn()
    monkeypatch.setattr(matching, "COMMON_TERM_ITEMS", 2)
    for n in range(2):
        seed_item(conn, subject=f"parser rule {n}", statement=f"The parser keeps rule {n}.")
    assert matching.common_terms(conn, ["parser"]) == set()
    seed_item(conn, subject="parser rule 9", statement="The parser keeps rule nine.")
    assert matching.common_terms(conn, ["parser"]) == {"parser"}
