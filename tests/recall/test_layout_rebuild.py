"""The one-time rebuild of a first-layout recall index (`layout_rebuild`): short transactions, a
healthy store with recall results identical to the naive scan after every one of them, item writes
and forgets between them never lost, every state an exact catalog, `memory clear` in every state, the
Memory worker doing it while a turn is saved, kill -9 at any point, two processes at once."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import schema
from autopatch_tui.core.memory.health import inspect_store
from autopatch_tui.core.recall import layout_rebuild
from autopatch_tui.core.recall.cli_search import search_memory
from autopatch_tui.core.recall.layout_rebuild import Rebuild, rebuild_now
from autopatch_tui.core.settings import load_settings
from tests.support.fixtures import db_path, make_git_repo
from tests.support.recall_layouts import (
    copy_store,
    fully_healthy,
    layout_state,
    naive,
    old_rows,
    open_manager,
    recall,
    spec_rows,
    without_related,
)
from tests.support.recall_seed import SyntheticCorpus, revise_item, seed_item
from tests.support.terms_layout import (
    fresh_index_texts,
    index_texts,
    item_postings_consistent,
    to_terms_layout,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of a few rows and items: a store of 150 items takes dozens of transactions."""
    monkeypatch.setattr(layout_rebuild, "TERM_CHUNK_ROWS", 97)
    monkeypatch.setattr(layout_rebuild, "ITEM_CHUNK", 7)


def _old_store(manager: MemoryManager, n: int, seed: int) -> tuple[SyntheticCorpus, list[str]]:
    """`n` synthetic items, their index rewritten as the release before issue 23 wrote it."""
    conn = manager.store.conn()
    corpus = SyntheticCorpus(seed=seed, en_words=200, zh_words=150)
    corpus.populate(conn, n, seed=seed)
    queries = [text for text, _ in corpus.queries(conn, 8, seed=seed + 1)]
    to_terms_layout(conn)
    return corpus, queries


def _step_by_step(conn: sqlite3.Connection) -> Rebuild:
    return Rebuild(lambda: conn, batch_seconds=0.0, min_pause=0.0)  # one chunk a transaction


def test_every_transaction_of_the_rebuild_is_one_small_chunk_and_leaves_a_healthy_store(manager, small_chunks) -> None:
    _, queries = _old_store(manager, 150, seed=11)
    conn = manager.store.conn()
    expected = recall(conn, queries)
    assert without_related(expected) == naive(conn, queries) and any(expected)
    spec = spec_rows(conn)
    rebuild = _step_by_step(conn)
    states, changed = [], []
    more = True
    while more:
        before = conn.total_changes
        more = rebuild.step() is not None
        changed.append((rebuild.transactions[-1].phase, conn.total_changes - before))
        states.append(layout_state(conn))
        if len(states) % 7 == 1 or states[-1] != states[-2]:
            assert fully_healthy(manager.store.db_path), states[-1]  # the full check
            assert recall(conn, queries) == expected, states[-1]
    assert [s for n, s in enumerate(states) if n == 0 or s != states[n - 1]] == [
        schema.BUILDING, schema.SWITCHED, schema.CURRENT]
    phases = [p for p, _ in changed]
    assert phases.count("postings") > 10 and phases.count("records") > 10  # many short transactions ...
    for phase, rows in changed:  # ... each one chunk: bounded by the chunk, not by the store
        bound = {"postings": 2 * layout_rebuild.TERM_CHUNK_ROWS + 1, "records": layout_rebuild.ITEM_CHUNK}.get(phase, 1)
        assert rows <= bound, (phase, rows)
    assert spec_rows(conn) == spec
    assert index_texts(conn) == fresh_index_texts(conn) and item_postings_consistent(conn)
    assert recall(conn, queries) == expected


def test_a_text_with_more_old_rows_than_a_chunk_holds_is_copied_across_chunks(manager, monkeypatch) -> None:
    """A common word at 100k items has tens of thousands of old rows, far more than one chunk: the
    walk must split one text's rows (a walk chunked by text never leaves that text)."""
    monkeypatch.setattr(layout_rebuild, "TERM_CHUNK_ROWS", 5)
    conn = manager.store.conn()
    names = ("amber birch cedar delta ember fjord garnet harbor indigo juniper kestrel lagoon maple nectar "
             "onyx pebble quartz raven saffron tundra").split()  # a word of its own each: one item matches
    items = [seed_item(conn, subject=f"config loader {name}", statement=f"The config rule named {name}.")
             for name in names]
    to_terms_layout(conn)
    assert conn.execute("SELECT count(*) FROM recall_terms WHERE term = 'config'").fetchone()[0] > 4 * 5
    rebuild = _step_by_step(conn)
    for _ in range(400):
        if rebuild.step() is None:
            break
    else:
        raise AssertionError(f"the walk does not end: {rebuild.transactions[-3:]}")
    assert layout_state(conn) == schema.CURRENT
    assert index_texts(conn) == fresh_index_texts(conn) and item_postings_consistent(conn)
    queries = ["config rule", "config loader juniper"]
    assert without_related(recall(conn, queries)) == naive(conn, queries)
    assert [r["id"] for r in search_memory(manager, "config loader juniper")][:1] == [items[9].logical_id]


@pytest.mark.parametrize("seed", [21, 22, 23])
def test_items_written_and_taken_out_between_the_steps_are_never_lost(manager, small_chunks, seed: int) -> None:
    """Every step of the rebuild, in every state, with random item writes, supersedes and forgets
    between them: recall equals the naive scan throughout, and the rebuilt index is exactly what a
    fresh write of the active items posts (no posting of a retired item, none missing)."""
    corpus, queries = _old_store(manager, 120, seed=seed)
    conn = manager.store.conn()
    rng = random.Random(seed)
    threads = [conn.execute("SELECT id FROM threads WHERE status = 'active'").fetchone()[0]]
    rebuild = _step_by_step(conn)
    seen, ops = set(), 0
    while True:
        for _ in range(rng.choice((0, 1, 1, 2))):
            active = [r[0] for r in conn.execute("SELECT logical_id FROM memory_items WHERE status = 'active'")]
            op = rng.random()
            if op < 0.4:
                spec = corpus.item(rng, threads)
                try:
                    seed_item(conn, **spec)
                except Exception as exc:  # the same identity drawn twice
                    assert type(exc).__name__ == "MemoryContractError"
            elif op < 0.7:
                manager.forget(rng.choice(active))
            else:
                spec = corpus.item(rng, threads)
                try:
                    revise_item(conn, rng.choice(active), **spec)
                except Exception as exc:
                    assert type(exc).__name__ == "MemoryContractError"
            ops += 1
        state = layout_state(conn)
        seen.add(state)
        if rng.random() < 0.15:
            assert without_related(recall(conn, queries)) == naive(conn, queries), state
        if rebuild.step() is None:
            break
    assert {schema.TERMS, schema.BUILDING, schema.SWITCHED} <= seen and ops > 30
    assert layout_state(conn) == schema.CURRENT
    assert index_texts(conn) == fresh_index_texts(conn) and item_postings_consistent(conn)
    assert without_related(recall(conn, queries)) == naive(conn, queries)
    assert fully_healthy(manager.store.db_path)


def _walk_to(conn: sqlite3.Connection, state: str) -> Rebuild:
    rebuild = _step_by_step(conn)
    while layout_state(conn) != state:
        assert rebuild.step() is not None
    return rebuild


def _damaged_copy(db: Path, dest: Path, stmt: str) -> Path:
    src = sqlite3.connect(db)
    out = sqlite3.connect(dest)
    src.backup(out)
    src.close()
    out.execute(stmt)
    out.close()
    return dest


@pytest.mark.parametrize(("state", "damage", "diagnostic"), [
    (schema.BUILDING, "DROP TABLE recall_meta", "missing table 'recall_meta'"),
    (schema.BUILDING, "CREATE INDEX recall_terms_field ON recall_terms(field)", "unexpected index 'recall_terms_field'"),
    (schema.SWITCHED, "DROP TABLE recall_dict", "missing table 'recall_dict'"),
    (schema.SWITCHED, "CREATE TABLE recall_extra (x)", "unexpected table 'recall_extra'"),
])
def test_each_state_of_the_rebuild_is_an_exact_catalog(manager, small_chunks, tmp_path: Path, state: str,
                                                       damage: str, diagnostic: str) -> None:
    _old_store(manager, 30, seed=5)
    conn = manager.store.conn()
    _walk_to(conn, state)
    assert fully_healthy(manager.store.db_path)
    health = inspect_store(_damaged_copy(manager.store.db_path, tmp_path / "copy.db", damage))
    assert not health.healthy and diagnostic in (health.diagnostic or "")


@pytest.mark.parametrize("state", [schema.TERMS, schema.BUILDING, schema.SWITCHED])
def test_memory_clear_in_every_state_leaves_the_current_layout(manager, small_chunks, state: str) -> None:
    _old_store(manager, 40, seed=6)
    conn = manager.store.conn()
    if state != schema.TERMS:
        _walk_to(conn, state)
    assert layout_state(conn) == state
    manager.clear(confirm=True)
    conn = manager.store.conn()
    assert layout_state(conn) == schema.CURRENT
    assert {e[1:] for e in schema.read_catalog(conn)} == {e[1:] for e in schema.expected_catalog()}
    assert conn.execute("SELECT count(*) FROM recall_postings").fetchone()[0] == 0
    item = seed_item(conn, subject="fresh start", statement="After the clear.")
    assert [r["id"] for r in search_memory(manager, "fresh start")] == [item.logical_id]
    assert fully_healthy(manager.store.db_path)


@pytest.fixture(scope="module")
def big_old_store(tmp_path_factory) -> Path:
    """A closed store of 1000 items in the first layout."""
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


def _wait_for(predicate, seconds: float = 180.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_the_memory_worker_rebuilds_in_steps_while_a_turn_is_saved(big_old_store: Path, tmp_path: Path) -> None:
    repo = copy_store(big_old_store, tmp_path / "worker")
    mgr = MemoryManager.open(repo, load_settings())
    try:
        conn = mgr.store.conn()
        assert layout_state(conn) == schema.TERMS  # opening wrote nothing
        mgr.start_background()
        assert _wait_for(lambda: layout_state(conn) == schema.BUILDING)
        handle = mgr.begin_turn("what is our config policy?")  # while the worker rebuilds
        mgr.complete_turn(handle, "an answer")
        assert conn.execute("SELECT count(*) FROM turns WHERE user_text = 'what is our config policy?'"
                            " AND state != 'open'").fetchone()[0] == 1
        assert _wait_for(lambda: layout_state(conn) == schema.CURRENT)
        mgr.worker.stop(30)
        assert index_texts(conn) == fresh_index_texts(conn) and item_postings_consistent(conn)
    finally:
        mgr.close()
    assert fully_healthy(db_path(repo))


def test_the_memory_worker_never_rebuilds_a_degraded_store(big_old_store: Path, tmp_path: Path) -> None:
    repo = copy_store(big_old_store, tmp_path / "degraded")
    mgr = MemoryManager.open(repo, load_settings())
    try:
        mgr.store.mark_degraded("damage found at run time")
        mgr.start_background()
        mgr.worker.stop(30)
    finally:
        mgr.close()
    conn = sqlite3.connect(db_path(repo))
    assert layout_state(conn) == schema.TERMS
    conn.close()


# --------------------------------------------------------------------------- processes


CHILD = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from autopatch_tui.core.manager import MemoryManager
    from autopatch_tui.core.recall.cli_search import search_memory
    from autopatch_tui.core.recall.layout_rebuild import Rebuild
    from autopatch_tui.core.settings import load_settings
    repo, mode, go, query = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), sys.argv[4]
    mgr = MemoryManager(repo, load_settings(), register=False)
    conn = mgr.store.conn()
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.001)
    if mode == "rebuild":
        rebuild = Rebuild(mgr.store.conn)
        first = True
        while (pause := rebuild.step()) is not None:
            if first:
                print("started", flush=True)
                first = False
            time.sleep(pause)
        print(json.dumps({"steps": len(rebuild.transactions)}), flush=True)
    elif mode == "search":
        print(json.dumps({"found": [r["id"] for r in search_memory(mgr, query)]}), flush=True)
    else:
        from tests.support.recall_seed import seed_item
        wrote, forgot = [], []
        for n in range(12):
            wrote.append(seed_item(conn, subject=f"written while racing {n}", statement="Raced.").logical_id)
            if n % 3 == 2:
                mgr.forget(wrote[n - 1])
                forgot.append(wrote[n - 1])
            time.sleep(0.05)
        print(json.dumps({"wrote": wrote, "forgot": forgot}), flush=True)
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
    out, err = child.communicate(timeout=300)
    assert child.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.slow
def test_kill_9_at_any_point_of_the_rebuild_leaves_a_healthy_store_that_finishes_it(big_old_store: Path,
                                                                                     tmp_path: Path) -> None:
    pristine = sqlite3.connect(db_path(big_old_store))
    pristine.row_factory = sqlite3.Row
    spec = spec_rows(pristine)
    expected = fresh_index_texts(pristine)  # what the rebuild must give (the items do not change)
    queries = ["config loader", "release train friday", "兼容旧配置怎么处理", "disk cache"]
    results = without_related(recall(pristine, queries))
    assert results == naive(pristine, queries)
    pristine.close()
    # how long one walk takes here, so the kills can land anywhere in it
    repo = copy_store(big_old_store, tmp_path / "timing")
    go = tmp_path / "go-timing"
    child = _child(repo, "rebuild", go)
    started = time.monotonic()
    go.touch()
    _finish(child)
    seconds = time.monotonic() - started
    outcomes: list[str] = []
    rng = random.Random(9)
    for n in range(8):
        if n >= 4 and outcomes.count(schema.BUILDING) >= 2:
            break
        repo = copy_store(big_old_store, tmp_path / f"kill{n}")
        go = tmp_path / f"go{n}"
        child = _child(repo, "rebuild", go)
        go.touch()
        assert child.stdout is not None and child.stdout.readline().strip() == "started"
        time.sleep(rng.uniform(0.0, 0.9) * seconds)
        os.kill(child.pid, signal.SIGKILL)
        child.communicate(timeout=30)
        db = db_path(repo)
        assert fully_healthy(db)  # the full check: b-trees, CHECKs, rules, foreign keys, catalog
        conn = sqlite3.connect(db, isolation_level=None)
        conn.row_factory = sqlite3.Row
        try:
            state = layout_state(conn)
            outcomes.append(state or "?")
            assert spec_rows(conn) == spec
            assert without_related(recall(conn, queries)) == results, state
        finally:
            conn.close()
        mgr = open_manager(repo)  # the next rebuild takes it from there
        try:
            conn = mgr.store.conn()
            rebuild_now(conn)
            assert layout_state(conn) == schema.CURRENT
            assert index_texts(conn) == expected and item_postings_consistent(conn)
        finally:
            mgr.close()
    assert outcomes.count(schema.BUILDING) >= 1, outcomes  # kills really landed inside the walk


@pytest.mark.slow
@pytest.mark.parametrize("modes", [("rebuild", "rebuild"), ("search", "rebuild"), ("write", "rebuild")])
def test_two_processes_meeting_an_old_store_at_once(big_old_store: Path, tmp_path: Path,
                                                    modes: tuple[str, str]) -> None:
    repo = copy_store(big_old_store, tmp_path / "race")
    go = tmp_path / "go"
    conn = sqlite3.connect(db_path(repo))
    query = conn.execute("SELECT subject FROM memory_items WHERE status = 'active' ORDER BY row_id LIMIT 1").fetchone()[0]
    rows = old_rows(conn)
    conn.close()
    children = [_child(repo, mode, go, query) for mode in modes]
    go.touch()
    results = [_finish(c) for c in children]
    mgr = open_manager(repo)
    try:
        conn = mgr.store.conn()
        assert layout_state(conn) == schema.CURRENT
        assert index_texts(conn) == fresh_index_texts(conn) and item_postings_consistent(conn)
        for r in results:
            if "found" in r:
                assert r["found"] and r["found"] == [x["id"] for x in search_memory(mgr, query)]
            if "wrote" in r:
                kept = [i for i in r["wrote"] if i not in r["forgot"]]
                assert len(kept) == 8
                for n, logical_id in enumerate(r["wrote"]):
                    found = [x["id"] for x in search_memory(mgr, f"written while racing {n}")]
                    assert (logical_id in found) == (logical_id in kept), n
    finally:
        mgr.close()
    assert rows  # the old rows were there to rebuild
    assert fully_healthy(db_path(repo))


def test_revise_on_a_store_being_rebuilt_keeps_one_active_revision_in_recall(manager, small_chunks) -> None:
    conn = manager.store.conn()
    item = seed_item(conn, subject="config cache", statement="Flush it on deploy.")
    seed_item(conn, subject="zebra crossing", statement="Stripes at the gate.")
    to_terms_layout(conn)
    _walk_to(conn, schema.BUILDING)
    revised = revise_item(conn, item.logical_id, subject="config cache", statement="Flush it weekly.")
    rebuild_now(conn)
    hits = search_memory(manager, "config cache")
    assert [h["id"] for h in hits] == [item.logical_id] and revised.revision == 2
    assert index_texts(conn) == fresh_index_texts(conn) and item_postings_consistent(conn)


def test_an_old_store_with_a_fault_only_the_deep_check_sees_is_never_rebuilt(big_old_store: Path,
                                                                               tmp_path: Path) -> None:
    """The worker's order: the deep check's verdict first, then the rebuild (a rebuild before it
    would write to a damaged store)."""
    repo = copy_store(big_old_store, tmp_path / "deepfault")
    conn = sqlite3.connect(db_path(repo), isolation_level=None)
    conn.execute("PRAGMA ignore_check_constraints = ON")
    conn.execute("UPDATE threads SET archived_at = 1 WHERE status = 'active'")  # breaks a CHECK: deep only
    assert conn.total_changes == 1
    conn.close()
    mgr = MemoryManager.open(repo, load_settings())
    try:
        assert mgr.store.healthy  # the open-time check passed
        mgr.start_background()
        assert _wait_for(lambda: not mgr.store.healthy)
        mgr.worker.stop(30)
    finally:
        mgr.close()
    check = sqlite3.connect(db_path(repo))
    try:
        assert layout_state(check) == schema.TERMS  # nothing rebuilt in a store found damaged
    finally:
        check.close()
