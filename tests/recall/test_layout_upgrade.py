"""Stores written before issue 23 (recall index in its first layout, `recall_terms`): healthy and read
as they are, written in that layout by item writes (which never rebuild), rebuilt into the current
layout only by the rebuild (`test_layout_rebuild.py`), with every spec row untouched and recall
results identical throughout; the current index's own rules (packed records, term IDs, catalog)."""

from __future__ import annotations

import json
import os
import random
import sqlite3
from pathlib import Path

import pytest

from autopatch_tui.core.errors import MemoryContractError
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import schema
from autopatch_tui.core.memory.deep_check import deep_problem
from autopatch_tui.core.memory.health import inspect_store
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.recall import layout_upgrade, matching, postings
from autopatch_tui.core.recall.cli_search import search_memory
from autopatch_tui.core.recall.layout_rebuild import rebuild_now
from autopatch_tui.core.recall.query import RecallQuery, policy_for
from autopatch_tui.core.recall.session import RecallSession
from tests.support.fixtures import db_path, make_git_repo
from tests.support.recall_layouts import (
    fully_healthy,
    QUERIES,
    layout_state,
    naive,
    old_rows,
    open_manager,
    recall,
    spec_rows,
    without_related,
)
from tests.support.recall_seed import (
    SyntheticCorpus,
    active_thread,
    match_keys,
    naive_matches,
    naive_search,
    seed_item,
)
from tests.support.terms_layout import (
    expected_terms_rows,
    fresh_index_texts,
    index_texts,
    item_postings_consistent,
    restore_fixture,
    terms_rows,
    to_terms_layout,
)


@pytest.fixture
def old_store(repo: Path) -> Path:
    """The real store written by the release before issue 23 (tests/fixtures), at `repo`."""
    restore_fixture(db_path(repo))
    return repo


def _search_ids(manager: MemoryManager, query: str) -> list[str]:
    s = RecallSession(manager.store.conn, RecallQuery("general_chat", ""), policy_for("general_chat", None))
    return [r["id"] for r in s.search(query)]


# --------------------------------------------------------------------------- a real old store


def test_an_old_store_is_healthy_and_read_as_it_is_until_the_rebuild(old_store: Path) -> None:
    assert fully_healthy(db_path(old_store))
    mgr = open_manager(old_store)
    try:
        conn = mgr.store.conn()
        assert mgr.store.healthy and layout_state(conn) == schema.TERMS  # opening writes nothing
        rows = old_rows(conn)
        assert rows == expected_terms_rows(conn)  # the fixture is what that release's writer wrote
        before = recall(conn)
        assert without_related(before) == naive(conn)
        assert any(before[0::3]) and any(before[1::3]) and any(before[2::3])  # not vacuous
        assert layout_state(conn) == schema.TERMS and old_rows(conn) == rows  # reading wrote nothing
        spec = spec_rows(conn)

        assert rebuild_now(conn) is True
        assert layout_state(conn) == schema.CURRENT
        assert {e[1:] for e in schema.read_catalog(conn)} == {e[1:] for e in schema.expected_catalog()}
        assert spec_rows(conn) == spec  # every row of every spec table, untouched
        assert index_texts(conn) == fresh_index_texts(conn)  # what a fresh write of these items posts
        assert item_postings_consistent(conn)
        assert recall(conn) == before
        assert rebuild_now(conn) is False  # once
    finally:
        mgr.close()
    assert fully_healthy(db_path(old_store))  # the full check, current layout


def test_item_writes_on_an_old_store_write_the_old_layout_and_never_rebuild(old_store: Path) -> None:
    mgr = open_manager(old_store)
    try:
        conn = mgr.store.conn()
        rows = old_rows(conn)
        taken = conn.execute("SELECT subject, applies_to_paths FROM memory_items WHERE status = 'active'"
                             " AND kind = 'project_decision' LIMIT 1").fetchone()
        with pytest.raises(MemoryContractError), write_txn(conn):  # a write that fails leaves nothing
            from autopatch_tui.core.memory.item_writes import insert_revision
            from tests.support.recall_seed import fields
            insert_revision(conn, fields(subject="zebra crossing", statement="Stripes."), logical_id=None,
                            revision=1, now=1.0)
            insert_revision(conn, fields(subject=taken[0], statement="dup", applies_to_paths=json.loads(taken[1])),
                            logical_id=None, revision=1, now=2.0)
        assert old_rows(conn) == rows
        item = seed_item(conn, subject="zebra crossing", statement="Stripes at the gate.", aliases=["pedestrian way"])
        assert layout_state(conn) == schema.TERMS  # the write went to the old rows: no rebuild in a user's write
        mine = old_rows(conn) - rows
        written = terms_rows(item.row_id, "zebra crossing", ["pedestrian way"], [], "Stripes at the gate.", "")
        assert mine == {r for r in written if not r[0].startswith("\x1f")}  # that release's rows (no phrase-only ones)
        assert _search_ids(mgr, "zebra crossing") == [item.logical_id]
        assert _search_ids(mgr, "pedestrian way") == [item.logical_id]
        victim = conn.execute("SELECT logical_id, row_id FROM memory_items WHERE status = 'active'"
                              " AND subject = 'backward compatibility'").fetchone()
        mgr.forget(victim[0])
        assert layout_state(conn) == schema.TERMS
        assert conn.execute("SELECT count(*) FROM recall_terms WHERE item_row_id = ?", (victim[1],)).fetchone()[0] == 0
        assert "backward compatibility" not in [r["subject"] for r in search_memory(mgr, "backward compatibility")]
        assert without_related(recall(conn)) == naive(conn)
        assert rebuild_now(conn)
        assert index_texts(conn) == fresh_index_texts(conn) and item_postings_consistent(conn)
        assert _search_ids(mgr, "zebra crossing") == [item.logical_id]
    finally:
        mgr.close()


def test_memory_search_never_rebuilds(old_store: Path) -> None:
    mgr = open_manager(old_store)
    try:
        conn = mgr.store.conn()
        rows = old_rows(conn)
        catalog = schema.read_catalog(conn)
        thread = active_thread(conn)
        for query in QUERIES[:4]:
            expected = [r["id"] for r in naive_search(conn, RecallQuery("general_chat", ""),
                                                      policy_for("general_chat", thread), query)]
            assert [r["id"] for r in search_memory(mgr, query)] == expected
        assert search_memory(mgr, "backward compatibility")  # not vacuous
        assert schema.read_catalog(conn) == catalog and old_rows(conn) == rows  # a read wrote nothing
    finally:
        mgr.close()


def test_a_store_written_before_the_phrase_index_gets_its_phrase_keys(manager, monkeypatch) -> None:
    conn = manager.store.conn()
    item = seed_item(conn, subject="config cache", statement="Flush it on deploy.", keywords=["java:S1128"])
    to_terms_layout(conn, phrase_rows=False)  # what the releases before the phrase index held
    monkeypatch.setattr(matching, "COMMON_TERM_ITEMS", 0)  # every term is common: only the phrase finds it
    policy = policy_for("general_chat", None)
    s = RecallSession(manager.store.conn, RecallQuery("general_chat", ""), policy)
    assert s.search("the config cache") == []  # read as it is: those stores never had the keys
    assert rebuild_now(conn)
    assert index_texts(conn) == fresh_index_texts(conn) and item_postings_consistent(conn)
    s = RecallSession(manager.store.conn, RecallQuery("general_chat", ""), policy)
    assert [r["id"] for r in s.search("the config cache")] == [item.logical_id]
    assert s.search("cache config") == []  # not written as the phrase


@pytest.mark.parametrize(("seed", "common_cap"), [(5, 12), (6, matching.COMMON_TERM_ITEMS)])
def test_random_stores_recall_the_same_in_both_layouts_and_after_the_rebuild(manager, monkeypatch, seed: int,
                                                                               common_cap: int) -> None:
    monkeypatch.setattr(matching, "COMMON_TERM_ITEMS", common_cap)
    conn = manager.store.conn()
    corpus = SyntheticCorpus(seed=seed, en_words=200, zh_words=150)
    threads = corpus.populate(conn, 200, seed=seed)
    queries = [text for text, _ in corpus.queries(conn, 18, seed=seed + 1)]
    written = index_texts(conn)
    current = recall(conn, queries)
    assert without_related(current) == naive(conn, queries)
    lexical = [match_keys(matching.lexical_matches(conn, RecallQuery("general_chat", q).base_terms(),
                                                   policy_for("general_chat", threads[0]), ())) for q in queries]
    assert any(lexical)

    to_terms_layout(conn)
    assert fully_healthy(manager.store.db_path)
    assert recall(conn, queries) == current  # read through the view
    assert lexical == [match_keys(matching.lexical_matches(conn, RecallQuery("general_chat", q).base_terms(),
                                                           policy_for("general_chat", threads[0]), ())) for q in queries]
    assert rebuild_now(conn)
    assert index_texts(conn) == written and item_postings_consistent(conn)
    assert recall(conn, queries) == current
    assert [match_keys(naive_matches(conn, RecallQuery("general_chat", q).base_terms(),
                                     policy_for("general_chat", threads[0]), ())) for q in queries] == lexical


def test_a_reader_of_the_old_layout_is_not_broken_by_a_rebuild_in_another_connection(old_store: Path) -> None:
    mgr = open_manager(old_store)
    try:
        reader = mgr.store.conn()
        writer = sqlite3.connect(db_path(old_store), isolation_level=None, timeout=10)
        terms = RecallQuery("general_chat", "backward compatibility").base_terms()
        policy = policy_for("general_chat", None)
        expected = match_keys(naive_matches(reader, terms, policy, ()))
        assert expected
        with layout_upgrade.reading(reader) as index:
            assert index is layout_upgrade.TERMS_VIEW
            assert rebuild_now(writer)  # every step committed while the reader holds its snapshot
            assert match_keys(matching.lexical_matches(reader, terms, policy, ())) == expected
        with layout_upgrade.reading(reader) as index:
            assert index is postings.INDEX
        assert match_keys(matching.lexical_matches(reader, terms, policy, ())) == expected
        writer.close()
    finally:
        mgr.close()


def test_a_read_only_old_store_is_searched_as_it_is_and_left_byte_for_byte(invoke_cli, monkeypatch) -> None:
    from tests.memory._hostile import give_to_nobody, remove_tree, tree_fingerprint, unprivileged, world_dir

    base = world_dir("apj-old-ro-")
    try:
        repo = make_git_repo(base / "project")
        restore_fixture(db_path(repo))
        monkeypatch.setenv("AUTOPATCH_HOME", str(base / "home"))
        conn = sqlite3.connect(db_path(repo))
        conn.row_factory = sqlite3.Row
        thread = active_thread(conn)
        expected = {q: [r["id"] for r in naive_search(conn, RecallQuery("general_chat", ""),
                                                      policy_for("general_chat", thread), q)] for q in QUERIES}
        conn.close()
        assert any(expected.values())
        os.chmod(db_path(repo), 0o444)
        os.chmod(db_path(repo).parent, 0o555)
        give_to_nobody(base)
        before = tree_fingerprint(db_path(repo).parent)
        with unprivileged():
            results = {q: invoke_cli("memory", "search", q, "--repo", str(repo), json=True, cwd=base) for q in QUERIES}
            rc, status, err = invoke_cli("memory", "status", "--repo", str(repo), json=True, cwd=base)
        # a read-only store is degraded (cause read_only): status prints its report and exits 3 (contracts §4)
        assert rc == 3 and status["cause"] == "read_only" and status["error"]["code"] == 3, err
        for q, (rc, out, err) in results.items():
            assert rc == 0, err
            assert [r["id"] for r in out["results"]] == expected[q], q
        assert tree_fingerprint(db_path(repo).parent) == before  # nothing written, no side file
    finally:
        remove_tree(base)


# --------------------------------------------------------------------------- the index itself


def test_packed_pairs_round_trip_and_refuse_what_pack_never_writes() -> None:
    rng = random.Random(3)
    for _ in range(200):
        codes = {rng.randrange(1, 1 << rng.choice((4, 12, 30, 62))) for _ in range(rng.randrange(0, 80))}
        assert postings.unpack(postings.pack(codes)) == sorted(codes)
    assert postings.pack([]) == b"" and postings.unpack(b"") == []
    top = (1 << 63) - 1  # the largest value a record may hold
    assert postings.unpack(postings.pack([1, top])) == [1, top]
    too_many = b"\x01" * (postings.MAX_RECORD_CODES + 1)
    for bad in (b"\x80", b"\x05\x00", b"\xff" * 10 + b"\x01", b"\x05\x85", b"\xff" * 9 + b"\x7f",
                postings.pack([top]) + b"\x01", too_many):
        with pytest.raises(ValueError):
            postings.unpack(bad)


DAMAGED_RECORDS = {
    "garbage": b"\x80",
    "not a blob": "text",
    "a value of 2^70": b"\xff" * 9 + b"\x7f",  # ten bytes: more than 63 bits
    "a total of 2^63": b"\xff" * 8 + b"\x7f" + b"\x01",
    "too many values": b"\x01" * (postings.MAX_RECORD_CODES + 1),
}


@pytest.mark.parametrize("damage", ["missing", *DAMAGED_RECORDS])
def test_an_item_whose_postings_record_is_damaged_still_leaves_the_index_completely(manager, damage: str) -> None:
    conn = manager.store.conn()
    keep = seed_item(conn, subject="config cache", statement="Flush the cache on deploy.")
    gone = seed_item(conn, subject="config loader", statement="Load the cache config lazily.")
    kept = conn.execute("SELECT count(*) FROM recall_postings WHERE item_row_id = ?", (keep.row_id,)).fetchone()[0]
    with write_txn(conn):
        if damage == "missing":
            conn.execute("DELETE FROM recall_item_postings WHERE item_row_id = ?", (gone.row_id,))
        else:
            conn.execute("PRAGMA ignore_check_constraints = ON")
            conn.execute("UPDATE recall_item_postings SET postings = ? WHERE item_row_id = ?",
                         (DAMAGED_RECORDS[damage], gone.row_id))
    manager.forget(gone.logical_id)  # neither raises nor leaves a posting behind
    conn.execute("PRAGMA ignore_check_constraints = OFF")
    assert conn.execute("SELECT count(*) FROM recall_postings WHERE item_row_id = ?", (gone.row_id,)).fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM recall_postings WHERE item_row_id = ?", (keep.row_id,)).fetchone()[0] == kept


def test_term_ids_are_never_given_twice(manager) -> None:
    conn = manager.store.conn()
    first = seed_item(conn, subject="zyzzyva", statement="A rare word.")
    zyzzyva = conn.execute("SELECT id FROM recall_dict WHERE term = 'zyzzyva'").fetchone()[0]
    manager.forget(first.logical_id)
    assert conn.execute("SELECT id FROM recall_dict WHERE term = 'zyzzyva'").fetchone()[0] == zyzzyva  # kept
    with write_txn(conn):
        conn.execute("DELETE FROM recall_meta")  # the counter row lost: the dictionary says what was given
    seed_item(conn, subject="quokka", statement="Another rare word.")
    ids = [r[0] for r in conn.execute("SELECT id FROM recall_dict")]
    assert len(ids) == len(set(ids))
    assert conn.execute("SELECT last_term_id FROM recall_meta").fetchone()[0] == max(ids)
    again = seed_item(conn, subject="zyzzyva", statement="Back again.")
    s = RecallSession(manager.store.conn, RecallQuery("general_chat", ""), policy_for("general_chat", None))
    assert [r["id"] for r in s.search("zyzzyva")] == [again.logical_id]


def test_a_counter_set_back_is_degraded_and_never_gives_an_id_twice(manager) -> None:
    conn = manager.store.conn()
    config = seed_item(conn, subject="config cache", statement="Flush the config cache on deploy.")
    seed_item(conn, subject="zebra crossing", statement="Stripes at the gate.")
    seed_item(conn, subject="release train", statement="Ship the release train on friday.")
    with write_txn(conn):
        conn.execute("UPDATE recall_meta SET last_term_id = 0")
    healthy, found = _checked(manager.store.db_path, deep=True)  # found by the deep check ...
    assert not healthy and "term IDs above the ID counter in recall_dict" in found
    # ... and set back while a process has it open, the next write still gives IDs no text holds
    quokka = seed_item(conn, subject="quokka marsupial", statement="A quokka is a small marsupial.")
    ids = [r[0] for r in conn.execute("SELECT id FROM recall_dict")]
    assert len(ids) == len(set(ids))
    assert _search_ids(manager, "config cache") == [config.logical_id]
    assert _search_ids(manager, "quokka marsupial") == [quokka.logical_id]


def test_a_counter_at_its_limit_refuses_new_terms_with_a_clear_error_and_loses_nothing(manager) -> None:
    from autopatch_tui.core.errors import MemorySchemaError

    conn = manager.store.conn()
    item = seed_item(conn, subject="config cache", statement="Flush it.")
    with write_txn(conn):
        conn.execute("UPDATE recall_meta SET last_term_id = ?", (schema.MAX_TERM_ID,))
    with pytest.raises(MemorySchemaError, match="term IDs are used up"):
        seed_item(conn, subject="quokka marsupial", statement="A brand-new term.")
    assert conn.execute("SELECT count(*) FROM memory_items WHERE subject = 'quokka marsupial'").fetchone()[0] == 0
    manager.forget(item.logical_id)  # taking an item out gives no ID
    assert conn.execute("SELECT count(*) FROM recall_postings").fetchone()[0] == 0


def test_a_term_id_given_twice_is_degraded(manager) -> None:
    conn = manager.store.conn()
    seed_item(conn, subject="config cache", statement="Flush it.")
    with write_txn(conn):
        conn.execute("UPDATE recall_dict SET id = (SELECT id FROM recall_dict WHERE term = 'config')"
                     " WHERE term = 'cache'")
    healthy, found = _checked(manager.store.db_path, deep=True)
    assert not healthy and "a term ID given to more than one text" in found


def test_postings_under_an_id_above_the_counter_are_degraded(manager) -> None:
    conn = manager.store.conn()
    seed_item(conn, subject="config cache", statement="Flush it.")
    with write_txn(conn):  # the dictionary entry of the highest ID lost, and the counter set back below it
        top = conn.execute("SELECT max(term_id) FROM recall_postings").fetchone()[0]
        conn.execute("DELETE FROM recall_dict WHERE id = ?", (top,))
        conn.execute("UPDATE recall_meta SET last_term_id = ?", (top - 1,))
    healthy, found = _checked(manager.store.db_path, deep=True)
    assert not healthy and "postings under a term ID above the ID counter in recall_postings" in found


# --------------------------------------------------------------------------- the catalog


def _terms_store(repo: Path, *extra: str) -> Path:
    """The fixture store with `extra` statements run on it (schema damage)."""
    db = db_path(repo)
    restore_fixture(db)
    conn = sqlite3.connect(db, isolation_level=None)
    for stmt in extra:
        conn.execute(stmt)
    conn.close()
    return db


@pytest.mark.parametrize(("extra", "diagnostic"), [
    (("DROP INDEX recall_terms_item",), "missing index 'recall_terms_item'"),
    ((schema.RECALL_DDL[0],), "unexpected table 'recall_dict'"),
    (("CREATE INDEX recall_terms_field ON recall_terms(field)",), "unexpected index 'recall_terms_field'"),
    (("PRAGMA writable_schema = ON",
      "UPDATE sqlite_master SET sql = replace(sql, 'CHECK (need >= 1)', '') WHERE name = 'recall_terms'",
      "PRAGMA writable_schema = OFF"), "table 'recall_terms' differs"),
    (("PRAGMA ignore_check_constraints = ON",
      "INSERT INTO recall_terms VALUES ('x', (SELECT min(row_id) FROM memory_items), 'bogus', 0, 1)"),
     "CHECK constraint failed in recall_terms"),
])
def test_an_old_layout_that_is_not_exactly_the_released_one_is_degraded(repo: Path, extra: tuple[str, ...],
                                                                         diagnostic: str) -> None:
    healthy, found = _checked(_terms_store(repo, *extra), deep="CHECK constraint" in diagnostic)
    assert not healthy and diagnostic in found


def _checked(db: Path, *, deep: bool) -> tuple[bool, str]:
    """(healthy, diagnostic) of the store by the check that must find its damage: the open-time
    check, or — for rows that break a CHECK constraint, which only a scan sees (issue 23) — the
    deep check of the layout the catalog holds, after the open-time check passed."""
    health = inspect_store(db, then=deep_problem if deep else None)
    if not deep:
        return health.healthy, health.diagnostic or ""
    assert health.healthy, f"the open-time check reads no rows: {health.diagnostic}"
    return health.read is None, health.read[1] if health.read else ""  # type: ignore[index]


@pytest.mark.parametrize(("stmt", "diagnostic"), [  # judged against the nearest accepted layout
    ("DROP TABLE recall_meta", "missing table 'recall_meta'"),
    ("CREATE INDEX recall_terms_item ON recall_dict(id)", "unexpected index 'recall_terms_item'"),
    ("CREATE TABLE recall_terms (term TEXT)", "table 'recall_terms' differs"),  # not the released table
])
def test_a_current_store_with_a_piece_of_either_layout_missing_or_extra_is_degraded(manager, stmt: str,
                                                                                     diagnostic: str) -> None:
    db = manager.store.db_path
    manager.close()
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute(stmt)
    conn.close()
    health = inspect_store(db)
    assert not health.healthy and diagnostic in (health.diagnostic or "")


ONE_POSTING = ("(term_id, field, item_row_id, phrase) = (SELECT term_id, field, item_row_id, phrase"
               " FROM recall_postings WHERE field = 4 LIMIT 1)")


@pytest.mark.parametrize(("table", "sql"), [
    ("recall_dict", "UPDATE recall_dict SET id = 'x' WHERE term = 'cache'"),
    ("recall_dict", "UPDATE recall_dict SET id = 6.5 WHERE term = 'cache'"),
    ("recall_dict", "UPDATE recall_dict SET id = 0 WHERE term = 'cache'"),
    ("recall_meta", "UPDATE recall_meta SET last_term_id = 'many'"),
    ("recall_meta", "UPDATE recall_meta SET last_term_id = 9223372036854775807"),
    ("recall_meta", "UPDATE recall_meta SET last_term_id = -1"),
    ("recall_postings", "UPDATE recall_postings SET term_id = 'zz' WHERE " + ONE_POSTING),
    ("recall_postings", "UPDATE recall_postings SET term_id = 9223372036854775807 WHERE " + ONE_POSTING),
    ("recall_postings", "UPDATE recall_postings SET field = 3.5 WHERE " + ONE_POSTING),
    ("recall_postings", "UPDATE recall_postings SET item_row_id = 'x' WHERE " + ONE_POSTING),
    ("recall_postings", "UPDATE recall_postings SET phrase = 'first' WHERE " + ONE_POSTING),
    ("recall_postings", "UPDATE recall_postings SET need = 1.5 WHERE " + ONE_POSTING),
])
def test_an_index_value_of_the_wrong_type_or_out_of_range_is_degraded(manager, table: str, sql: str) -> None:
    """Values a write would choke on (`TypeError`, `OverflowError` in Python) never reach a healthy store."""
    db = manager.store.db_path
    seed_item(manager.store.conn(), subject="config cache", statement="Flush it.")
    manager.close()
    conn = sqlite3.connect(db, isolation_level=None)
    with pytest.raises(sqlite3.IntegrityError):  # SQLite itself refuses them ...
        conn.execute(sql)
    conn.execute("PRAGMA ignore_check_constraints = ON")  # ... so only a bypass or damage writes them
    assert conn.execute(sql).rowcount >= 1
    conn.close()
    healthy, found = _checked(db, deep=True)
    assert not healthy and f"CHECK constraint failed in {table}" in found


def test_a_check_of_the_current_index_is_enforced(manager) -> None:
    db = manager.store.db_path
    seed_item(manager.store.conn(), subject="config cache", statement="Flush it.")
    manager.close()
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA ignore_check_constraints = ON")
    conn.execute("UPDATE recall_postings SET need = 3 WHERE field = 1")  # content has no need of its own
    conn.close()
    healthy, found = _checked(db, deep=True)
    assert not healthy and "CHECK constraint failed in recall_postings" in found
