"""First start of a project's Memory: a clean schema v4 store with one meta row and one active thread
("SQLite 持久化普通对话事实": 首次初始化 Memory v4, 遗留 memory JSON)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import schema
from autopatch_tui.core.settings import Settings
from tests.memory import _workers
from tests.support.fixtures import db_path, file_fingerprint, make_git_repo, query, raw_connect, scalar, state_dir


def _assert_healthy_fresh_store(db: Path) -> None:
    conn = raw_connect(db)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 4
        assert tuple(schema.read_catalog(conn)) == schema.expected_catalog()
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM memory_meta").fetchone()[0] == 1
        assert conn.execute("SELECT id, generation FROM memory_meta").fetchone()[:] == (1, 1)
        assert conn.execute("SELECT count(*) FROM threads WHERE status = 'active'").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM threads").fetchone()[0] == 1
        for table in ("turns", "memory_jobs", "memory_candidates", "memory_items"):
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table
    finally:
        conn.close()


def test_fresh_repo_gets_a_clean_v4_store(repo: Path, settings: Settings) -> None:
    assert not state_dir(repo).exists()
    mgr = MemoryManager.open(repo, settings)
    try:
        assert mgr.healthy
        report = mgr.status()
        assert report.state == "healthy"
        assert report.schema_version == 4 and report.generation == 1
        assert report.threads == 1 and report.turns == 0
    finally:
        mgr.close()
    db = db_path(repo)
    assert db.is_file()
    _assert_healthy_fresh_store(db)
    active = scalar(db, "SELECT id FROM threads WHERE status = 'active'")
    assert report.active_thread_id == active
    # the identity recorded for the store comes from the repo (root and normalized origin remote)
    meta = query(db, "SELECT store_name, root, remote FROM memory_meta")[0]
    assert meta["store_name"]
    assert meta["root"] and Path(meta["root"]) == repo
    assert meta["remote"] and "example-project" in meta["remote"]


def test_fresh_store_files_are_private(repo: Path, settings: Settings) -> None:
    mgr = MemoryManager.open(repo, settings)
    try:
        mgr.begin_turn("private")
        side = [db_path(repo).with_name("memory.db" + s) for s in ("-wal", "-shm")]
        assert all(p.exists() for p in side)  # WAL side files exist while the store is open
        assert [stat.S_IMODE(p.stat().st_mode) for p in side] == [0o600, 0o600]
    finally:
        mgr.close()
    assert stat.S_IMODE(state_dir(repo).stat().st_mode) == 0o700
    assert stat.S_IMODE(db_path(repo).stat().st_mode) == 0o600


def test_reopening_reuses_the_active_thread(repo: Path, settings: Settings) -> None:
    """普通 thread 跨重启延续: a restart reuses the active thread (no new thread, same ID)."""
    first = MemoryManager.open(repo, settings)
    try:
        thread = first.status().active_thread_id
        h = first.begin_turn("remember this")
        first.complete_turn(h, "ok")
    finally:
        first.close()
    second = MemoryManager.open(repo, settings)
    try:
        report = second.status()
        assert report.active_thread_id == thread
        assert report.threads == 1 and report.turns == 1
        h2 = second.begin_turn("and this")
        assert h2.thread_id == thread and h2.sequence == 2
    finally:
        second.close()


def test_legacy_memory_json_is_never_read_or_touched(repo: Path, settings: Settings) -> None:
    legacy = state_dir(repo) / "memory.json"
    legacy.parent.mkdir()
    payload = b'{"facts": [ this is NOT valid json \x00\xff'
    legacy.write_bytes(payload)
    before = file_fingerprint(legacy)
    mtime = legacy.stat().st_mtime_ns

    mgr = MemoryManager.open(repo, settings)
    try:
        assert mgr.healthy  # an invalid legacy file cannot matter: it is never read
        h = mgr.begin_turn("hello")
        mgr.complete_turn(h, "hi")
        mgr.export()
        mgr.clear(confirm=True)
    finally:
        mgr.close()

    assert legacy.read_bytes() == payload
    assert file_fingerprint(legacy) == before
    assert legacy.stat().st_mtime_ns == mtime
    _assert_db_has_no_legacy_content(db_path(repo))


def _assert_db_has_no_legacy_content(db: Path) -> None:
    assert scalar(db, "PRAGMA user_version") == 4
    assert not query(db, "SELECT 1 FROM turns WHERE user_text LIKE '%facts%'")


def test_zero_length_db_file_is_bootstrapped(repo: Path, settings: Settings) -> None:
    db = db_path(repo)
    db.parent.mkdir(mode=0o700)
    db.write_bytes(b"")
    mgr = MemoryManager.open(repo, settings)
    try:
        assert mgr.healthy, mgr.store.health.diagnostic
        assert mgr.status().state == "healthy"
    finally:
        mgr.close()
    _assert_healthy_fresh_store(db)


@pytest.mark.slow
def test_concurrent_bootstrap_converges_on_one_store(tmp_path: Path, settings: Settings) -> None:
    repo = make_git_repo(tmp_path / "race")
    results = _workers.run_parallel(_workers.open_store, 4, str(repo))
    assert len(results) == 4
    assert all(r["healthy"] for r in results), [r["diagnostic"] for r in results]
    # every process saw the same single active thread
    assert len({r["active"] for r in results}) == 1
    db = db_path(repo)
    _assert_healthy_fresh_store(db)
    assert scalar(db, "SELECT id FROM threads WHERE status = 'active'") == results[0]["active"]
    assert sorted(p.name for p in state_dir(repo).iterdir() if p.name.startswith("memory.db")) in (
        ["memory.db"], ["memory.db", "memory.db-shm", "memory.db-wal"])
