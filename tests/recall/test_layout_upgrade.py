"""Stores written before issue 23 (recall index in its first layout, `recall_terms`): healthy and read
as they are, rebuilt into the current layout once by the first process that writes (atomically, also
when killed or raced), with every spec row untouched and recall results identical throughout."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from autopatch_tui.core.errors import MemoryContractError
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import schema
from autopatch_tui.core.memory.health import inspect_store
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.pipeline import consolidation
from autopatch_tui.core.recall import layout_upgrade, matching, postings
from autopatch_tui.core.recall.cli_search import search_memory
from autopatch_tui.core.recall.memory_map import build_map
from autopatch_tui.core.recall.query import RecallQuery, policy_for
from autopatch_tui.core.recall.session import RecallSession
from autopatch_tui.core.settings import load_settings
from tests.support.fixtures import db_path, make_git_repo
from tests.support.recall_seed import (
    SyntheticCorpus,
    active_thread,
    map_keys,
    match_keys,
    naive_map,
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
    to_terms_layout,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
QUERIES = ["backward compatibility", "我们要不要向后兼容", "what about the legacy config keys", "disk cache loader",
           "parse_user_config in python", "release train friday", "config loader", "why does no-unused-vars fire",
           "兼容旧配置怎么处理", "the the of"]


def _spec_rows(conn: sqlite3.Connection) -> dict[str, list[tuple]]:
    """Every row of every spec table (all but the recall index), in a stable order."""
    tables = [t for t in schema.TABLES if not t.startswith("recall_")]
    return {t: sorted(map(tuple, conn.execute(f"SELECT * FROM {t}").fetchall()), key=repr) for t in tables}


def _terms_rows(conn: sqlite3.Connection) -> set[tuple]:
    return set(map(tuple, conn.execute("SELECT * FROM recall_terms").fetchall()))


def _requests(conn: sqlite3.Connection, queries: list[str]) -> list[tuple[str, object, RecallQuery, str]]:
    """(intent, policy, Map query, text) per query: ordinary and repair alternate, some scoped."""
    thread = active_thread(conn)
    out = []
    for n, text in enumerate(queries):
        intent = ("general_chat", "code_audit")[n % 2]
        out.append((intent, policy_for(intent, thread), RecallQuery(intent, text, ("src/cache/x.py",) if n % 3 == 0
                                                                     else ()), text))
    return out


def _recall(mgr: MemoryManager, conn: sqlite3.Connection, queries: list[str] = QUERIES) -> list[object]:
    """Searches and Maps for `queries`, plus the consolidation's related items."""
    out: list[object] = []
    for intent, policy, q, text in _requests(conn, queries):
        session = RecallSession(lambda: conn, RecallQuery(intent, ""), policy)
        out.append(session.search(text))
        out.append(map_keys(build_map(conn, q, policy, budget_tokens=600)))
        cand = consolidation.Candidate("probe", None, {"kind": "project_decision", "subject": text,
                                                       "applies_to_paths": [], "aliases": [], "keywords": []}, [])
        out.append([r["logical_id"] for r in consolidation.related_items(conn, [cand])])
    return out


def _naive(conn: sqlite3.Connection, queries: list[str] = QUERIES) -> list[object]:
    out: list[object] = []
    for intent, policy, q, text in _requests(conn, queries):
        out.append(naive_search(conn, RecallQuery(intent, ""), policy, text))
        out.append(map_keys(naive_map(conn, q, policy, budget_tokens=600)))
    return out


def _without_related(results: list[object]) -> list[object]:
    return [r for n, r in enumerate(results) if n % 3 != 2]


@pytest.fixture
def old_store(repo: Path) -> Path:
    """The real store written by the release before issue 23 (tests/fixtures), at `repo`."""
    restore_fixture(db_path(repo))
    return repo


def _open(repo: Path) -> MemoryManager:
    return MemoryManager(repo, load_settings(), register=False)


# --------------------------------------------------------------------------- a real old store


def test_an_old_store_is_healthy_and_read_as_it_is_until_a_writer_needs_it(old_store: Path) -> None:
    assert inspect_store(db_path(old_store)).healthy
    mgr = _open(old_store)
    try:
        conn = mgr.store.conn()
        assert mgr.store.healthy and layout_upgrade.is_terms_layout(conn)  # opening writes nothing
        old_rows = _terms_rows(conn)
        assert old_rows == expected_terms_rows(conn)  # the fixture is what that release's writer wrote
        before = _recall(mgr, conn)
        assert _without_related(before) == _naive(conn)
        assert any(before[0::3]) and any(before[1::3]) and any(before[2::3])  # not vacuous
        assert layout_upgrade.is_terms_layout(conn) and _terms_rows(conn) == old_rows  # reading wrote nothing
        spec = _spec_rows(conn)

        assert layout_upgrade.upgrade(conn) is True
        assert not layout_upgrade.is_terms_layout(conn)
        assert tuple(schema.read_catalog(conn)) != schema.expected_catalog(schema.TERMS_LAYOUT_DDL)
        assert {e[1:] for e in schema.read_catalog(conn)} == {e[1:] for e in schema.expected_catalog()}
        assert _spec_rows(conn) == spec  # every row of every spec table, untouched
        assert index_texts(conn) == fresh_index_texts(conn)  # what a fresh write of these items posts
        assert item_postings_consistent(conn)
        assert _recall(mgr, conn) == before
        assert layout_upgrade.upgrade(conn) is False  # once
    finally:
        mgr.close()
    assert inspect_store(db_path(old_store)).healthy  # the full check, current layout


def test_the_first_item_write_rebuilds_inside_its_own_transaction(old_store: Path) -> None:
    mgr = _open(old_store)
    try:
        conn = mgr.store.conn()
        taken = conn.execute("SELECT subject, applies_to_paths FROM memory_items WHERE status = 'active'"
                             " AND kind = 'project_decision' LIMIT 1").fetchone()
        with pytest.raises(MemoryContractError):  # a write that fails takes the rebuild back with it
            seed_item(conn, subject="zebra crossing", statement="Stripes.")  # rebuilds, then ...
            seed_item(conn, subject=taken[0], statement="dup", applies_to_paths=json.loads(taken[1]))
        assert not layout_upgrade.is_terms_layout(conn)  # the first write committed (its own txn)
        mgr.close()

        restored = old_store.parent / "again"
        restored.mkdir()
        repo = make_git_repo(restored / "project")
        restore_fixture(db_path(repo))
        mgr = _open(repo)
        conn = mgr.store.conn()
        with pytest.raises(MemoryContractError), write_txn(conn):
            from autopatch_tui.core.memory.item_writes import insert_revision
            from tests.support.recall_seed import fields
            insert_revision(conn, fields(subject="zebra crossing", statement="Stripes."), logical_id=None,
                            revision=1, now=1.0)
            assert not layout_upgrade.is_terms_layout(conn)  # rebuilt inside this write ...
            insert_revision(conn, fields(subject=taken[0], statement="dup", applies_to_paths=json.loads(taken[1])),
                            logical_id=None, revision=1, now=2.0)
        assert layout_upgrade.is_terms_layout(conn)  # ... and rolled back with it: nothing half done
        item = seed_item(conn, subject="zebra crossing", statement="Stripes at the gate.")
        assert not layout_upgrade.is_terms_layout(conn)
        assert index_texts(conn) == fresh_index_texts(conn) and item_postings_consistent(conn)
        s = RecallSession(mgr.store.conn, RecallQuery("general_chat", ""), policy_for("general_chat", None))
        assert [r["id"] for r in s.search("zebra crossing")] == [item.logical_id]
    finally:
        mgr.close()


def test_forget_and_clear_on_an_old_store(old_store: Path) -> None:
    mgr = _open(old_store)
    try:
        conn = mgr.store.conn()
        victim = conn.execute("SELECT logical_id, row_id FROM memory_items WHERE status = 'active'"
                              " AND subject = 'backward compatibility'").fetchone()
        mgr.forget(victim[0])
        assert not layout_upgrade.is_terms_layout(conn)
        assert conn.execute("SELECT count(*) FROM recall_postings WHERE item_row_id = ?", (victim[1],)).fetchone()[0] == 0
        assert index_texts(conn) == fresh_index_texts(conn) and item_postings_consistent(conn)
    finally:
        mgr.close()
    other = make_git_repo(old_store.parent / "cleared" / "project")
    restore_fixture(db_path(other))
    mgr = _open(other)
    try:
        conn = mgr.store.conn()
        assert layout_upgrade.is_terms_layout(conn)
        mgr.clear(confirm=True)
        assert not layout_upgrade.is_terms_layout(conn)
        assert {e[1:] for e in schema.read_catalog(conn)} == {e[1:] for e in schema.expected_catalog()}
        assert conn.execute("SELECT count(*) FROM recall_postings").fetchone()[0] == 0
        item = seed_item(conn, subject="fresh start", statement="After the clear.")
        s = RecallSession(mgr.store.conn, RecallQuery("general_chat", ""), policy_for("general_chat", None))
        assert [r["id"] for r in s.search("fresh start")] == [item.logical_id]
    finally:
        mgr.close()
    assert inspect_store(db_path(other)).healthy


def test_memory_search_and_the_worker_rebuild_but_opening_does_not(old_store: Path) -> None:
    mgr = _open(old_store)
    try:
        conn = mgr.store.conn()
        assert layout_upgrade.is_terms_layout(conn)
        found = search_memory(mgr, "backward compatibility")
        assert found and not layout_upgrade.is_terms_layout(conn)
    finally:
        mgr.close()
    other = make_git_repo(old_store.parent / "worker" / "project")
    restore_fixture(db_path(other))
    mgr = MemoryManager.open(other, load_settings())
    try:
        assert layout_upgrade.is_terms_layout(mgr.store.conn())
        mgr.start_background()
        mgr.worker.stop(10)
        assert not layout_upgrade.is_terms_layout(mgr.store.conn())
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
    assert layout_upgrade.upgrade(conn)
    assert index_texts(conn) == fresh_index_texts(conn)
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
    current = _recall(manager, conn, queries)
    assert _without_related(current) == _naive(conn, queries)
    lexical = [match_keys(matching.lexical_matches(conn, RecallQuery("general_chat", q).base_terms(),
                                                   policy_for("general_chat", threads[0]), ())) for q in queries]
    assert any(lexical)

    to_terms_layout(conn)
    assert inspect_store(manager.store.db_path).healthy
    assert _recall(manager, conn, queries) == current  # read through the view
    assert lexical == [match_keys(matching.lexical_matches(conn, RecallQuery("general_chat", q).base_terms(),
                                                           policy_for("general_chat", threads[0]), ())) for q in queries]
    assert layout_upgrade.upgrade(conn)
    assert index_texts(conn) == written and item_postings_consistent(conn)
    assert _recall(manager, conn, queries) == current
    assert [match_keys(naive_matches(conn, RecallQuery("general_chat", q).base_terms(),
                                     policy_for("general_chat", threads[0]), ())) for q in queries] == lexical


def test_a_reader_of_the_old_layout_is_not_broken_by_a_rebuild_in_another_connection(old_store: Path) -> None:
    mgr = _open(old_store)
    try:
        reader = mgr.store.conn()
        writer = sqlite3.connect(db_path(old_store), isolation_level=None, timeout=10)
        terms = RecallQuery("general_chat", "backward compatibility").base_terms()
        policy = policy_for("general_chat", None)
        expected = match_keys(naive_matches(reader, terms, policy, ()))
        assert expected
        with layout_upgrade.reading(reader) as index:
            assert index is layout_upgrade.TERMS_VIEW
            assert layout_upgrade.upgrade(writer)  # committed while the reader holds its snapshot
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
    for bad in (b"\x80", b"\x05\x00", b"\xff" * 10 + b"\x01", b"\x05\x85"):
        with pytest.raises(ValueError):
            postings.unpack(bad)


@pytest.mark.parametrize("damage", ["garbage", "missing", "not a blob"])
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
                         (b"\x80" if damage == "garbage" else "text", gone.row_id))
    manager.forget(gone.logical_id)
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
    health = inspect_store(_terms_store(repo, *extra))
    assert not health.healthy and diagnostic in (health.diagnostic or "")


@pytest.mark.parametrize(("stmt", "diagnostic"), [  # judged against the old layout once it holds recall_terms
    ("DROP TABLE recall_meta", "missing table 'recall_meta'"),
    (schema.TERMS_RECALL_DDL[0], "unexpected table 'recall_dict'"),  # the first of the current layout
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


def test_a_check_of_the_current_index_is_enforced(manager) -> None:
    db = manager.store.db_path
    seed_item(manager.store.conn(), subject="config cache", statement="Flush it.")
    manager.close()
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA ignore_check_constraints = ON")
    conn.execute("UPDATE recall_postings SET need = 3 WHERE field = 1")  # content has no need of its own
    conn.close()
    health = inspect_store(db)
    assert not health.healthy and "CHECK constraint failed in recall_postings" in (health.diagnostic or "")


# --------------------------------------------------------------------------- processes


CHILD = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from autopatch_tui.core.manager import MemoryManager
    from autopatch_tui.core.recall import layout_upgrade
    from autopatch_tui.core.recall.cli_search import search_memory
    from autopatch_tui.core.settings import load_settings
    repo, mode, go, query = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), sys.argv[4]
    mgr = MemoryManager(repo, load_settings(), register=False)
    conn = mgr.store.conn()
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.001)
    if mode == "upgrade":
        rebuild, took = layout_upgrade._rebuild, []
        def traced(c):  # inside the write transaction
            print("rebuilding", flush=True)
            t = time.perf_counter()
            rebuild(c)
            took.append(time.perf_counter() - t)
        layout_upgrade._rebuild = traced
        done = layout_upgrade.upgrade(conn)
        print(json.dumps({"rebuilt": done, "seconds": took[0] if took else 0.0}), flush=True)
    elif mode == "search":
        print(json.dumps({"found": [r["id"] for r in search_memory(mgr, query)]}), flush=True)
    else:
        from tests.support.recall_seed import seed_item
        print(json.dumps({"wrote": seed_item(conn, subject="written while racing", statement="Raced.").logical_id}),
              flush=True)
    mgr.close()
""")


def _child(repo: Path, mode: str, go: Path, query: str = "") -> subprocess.Popen:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(PROJECT_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(repo), mode, str(go), query], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=PROJECT_ROOT)
    assert child.stdout is not None and child.stdout.readline().strip() == "ready", child.stderr.read()
    return child


def _finish(child: subprocess.Popen) -> dict[str, object]:
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def big_old_store(tmp_path_factory) -> Path:
    """A closed store of 1000 items in the first layout (its rebuild takes a good part of a second)."""
    home = tmp_path_factory.mktemp("home")
    repo = make_git_repo(tmp_path_factory.mktemp("big-old") / "project")
    old = os.environ.get("AUTOPATCH_HOME")
    os.environ["AUTOPATCH_HOME"] = str(home)
    try:
        mgr = MemoryManager(repo, load_settings(), register=False)
        conn = mgr.store.conn()
        SyntheticCorpus(seed=8).populate(conn, 1000, seed=8)
        to_terms_layout(conn)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        mgr.close()
    finally:
        if old is not None:
            os.environ["AUTOPATCH_HOME"] = old
    return repo


def _copy_store(src: Path, dest_root: Path) -> Path:
    repo = make_git_repo(dest_root / "project")
    shutil.copytree(src / ".autopatch-j", repo / ".autopatch-j", dirs_exist_ok=True)
    return repo


@pytest.mark.slow
def test_kill_9_during_the_rebuild_leaves_the_old_layout_or_the_new_one_never_a_mix(big_old_store: Path,
                                                                                       tmp_path: Path) -> None:
    pristine = sqlite3.connect(db_path(big_old_store))
    old_rows = _terms_rows(pristine)
    spec = _spec_rows(pristine)
    expected = fresh_index_texts(pristine)  # what the rebuild must give (the items do not change)
    pristine.close()
    # how long one rebuild takes here, so the kills can land inside it
    repo = _copy_store(big_old_store, tmp_path / "timing")
    go = tmp_path / "go-timing"
    child = _child(repo, "upgrade", go)
    go.touch()
    seconds = float(_finish(child)["seconds"])  # type: ignore[arg-type]
    outcomes: list[str] = []
    rng = random.Random(9)
    cap = 0.9
    for n in range(8):
        if n >= 4 and "old" in outcomes:
            break
        repo = _copy_store(big_old_store, tmp_path / f"kill{n}")
        go = tmp_path / f"go{n}"
        child = _child(repo, "upgrade", go)
        go.touch()
        assert child.stdout is not None and child.stdout.readline().strip() == "rebuilding"  # the txn is open
        time.sleep(rng.uniform(0.0, cap) * seconds)
        os.kill(child.pid, signal.SIGKILL)
        child.communicate(timeout=30)
        killed = child.returncode == -signal.SIGKILL
        db = db_path(repo)
        assert inspect_store(db).healthy  # the full check: b-trees, CHECKs, foreign keys, catalog
        conn = sqlite3.connect(db, isolation_level=None)
        try:
            assert _spec_rows(conn) == spec
            if layout_upgrade.is_terms_layout(conn):
                assert _terms_rows(conn) == old_rows  # nothing of the rebuild stayed
                outcomes.append("old" if killed else "old, not killed")
            else:
                assert index_texts(conn) == expected and item_postings_consistent(conn)
                outcomes.append("new")
                cap /= 2  # the commit came first: aim earlier
        finally:
            conn.close()
        mgr = _open(repo)  # the next writer finishes the job
        try:
            layout_upgrade.upgrade(mgr.store.conn())
            conn = mgr.store.conn()
            assert not layout_upgrade.is_terms_layout(conn)
            assert index_texts(conn) == expected and item_postings_consistent(conn)
        finally:
            mgr.close()
    assert "old" in outcomes, outcomes  # at least one kill really landed inside the transaction


@pytest.mark.slow
@pytest.mark.parametrize("modes", [("upgrade", "upgrade"), ("search", "upgrade"), ("write", "search")])
def test_two_processes_meeting_an_old_store_at_once(big_old_store: Path, tmp_path: Path,
                                                    modes: tuple[str, str]) -> None:
    repo = _copy_store(big_old_store, tmp_path / "race")
    go = tmp_path / "go"
    conn = sqlite3.connect(db_path(repo))
    query = conn.execute("SELECT subject FROM memory_items WHERE status = 'active' ORDER BY row_id LIMIT 1").fetchone()[0]
    conn.close()
    children = [_child(repo, mode, go, query) for mode in modes]
    go.touch()
    results = [_finish(c) for c in children]
    if modes == ("upgrade", "upgrade"):
        assert sorted(r["rebuilt"] for r in results) == [False, True]  # exactly one did it
    mgr = _open(repo)
    try:
        conn = mgr.store.conn()
        assert not layout_upgrade.is_terms_layout(conn)
        assert index_texts(conn) == fresh_index_texts(conn) and item_postings_consistent(conn)
        for r in results:
            if "found" in r:
                assert r["found"] and r["found"] == [x["id"] for x in search_memory(mgr, query)]
            if "wrote" in r:
                assert [x["id"] for x in search_memory(mgr, "written while racing")] == [r["wrote"]]
    finally:
        mgr.close()
    assert inspect_store(db_path(repo)).healthy
