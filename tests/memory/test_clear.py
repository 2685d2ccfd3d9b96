"""`memory clear --confirm` ("清空 Memory", "bootstrap 损坏后显式清空")."""

from __future__ import annotations

from pathlib import Path

import pytest

from autopatch_tui.core.errors import MemoryFencedError, UsageError
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import schema
from autopatch_tui.core.settings import Settings
from tests.support.fixtures import db_path, file_fingerprint, query, raw_connect, scalar, state_dir, write_old_store
from tests.support.memory_factory import add_item, add_turns

DATA_TABLES = ("turns", "memory_jobs", "memory_candidates", "candidate_sources", "memory_items",
               "item_candidates", "recall_postings", "recall_item_postings", "recall_dict")


def _fill(manager: MemoryManager) -> None:
    turns = add_turns(manager, 3)
    conn = manager.store.conn()
    add_item(conn, kind="project_decision", subject="Schema", statement="No migrations.",
             sources=[(turns[0].turn_id, "user", "no migrations")], keywords=["schema"])
    add_item(conn, kind="discussion_context", subject="Retries", statement="Undecided.",
             sources=[(turns[1].turn_id, "user", "retry?")])
    manager.new_thread()
    add_turns(manager, 1, complete=False)


def _keepers(repo: Path) -> dict[str, bytes]:
    """An existing export and the legacy memory.json: clear must not touch either."""
    legacy = state_dir(repo) / "memory.json"
    legacy.write_bytes(b'{"legacy": true}')
    export_dir = state_dir(repo) / "memory-exports"
    export_dir.mkdir(exist_ok=True)
    (export_dir / "memory-20200101T000000Z.json").write_bytes(b'{"old": "export"}')
    return {str(p): p.read_bytes() for p in (legacy, *export_dir.iterdir())}


def test_clear_healthy_deletes_everything_and_starts_one_empty_thread(manager: MemoryManager, repo: Path) -> None:
    db = db_path(repo)
    _fill(manager)
    keep = _keepers(repo)
    exports_before = sorted(p.name for p in (state_dir(repo) / "memory-exports").iterdir())
    before = manager.status()
    assert before.threads == 2 and before.turns == 4 and before.active_items == 2
    old_threads = {r[0] for r in query(db, "SELECT id FROM threads")}

    new_thread = manager.clear(confirm=True)

    assert scalar(db, "SELECT generation FROM memory_meta") == before.generation + 1
    for table in DATA_TABLES:
        assert scalar(db, f"SELECT count(*) FROM {table}") == 0, table
    threads = query(db, "SELECT * FROM threads")
    assert len(threads) == 1
    assert threads[0]["id"] == new_thread and threads[0]["status"] == "active"
    assert new_thread not in old_threads
    assert threads[0]["checkpoint"] == ""
    report = manager.status()
    assert (report.state, report.active_thread_id, report.threads, report.turns, report.active_items) == (
        "healthy", new_thread, 1, 0, 0)
    assert report.jobs.model_dump() == dict.fromkeys(report.jobs.model_dump(), 0)
    # the schema is the same v4 catalog (clear deletes rows, not objects)
    conn = raw_connect(db)
    try:
        assert tuple(schema.read_catalog(conn)) == schema.expected_catalog()
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 4
    finally:
        conn.close()
    assert {p: Path(p).read_bytes() for p in keep} == keep
    assert sorted(p.name for p in (state_dir(repo) / "memory-exports").iterdir()) == exports_before

    # the store keeps working after a clear
    h = manager.begin_turn("after clear")
    assert (h.thread_id, h.sequence) == (new_thread, 1)


def test_clear_fences_a_turn_started_before_it(repo: Path, settings: Settings, manager: MemoryManager) -> None:
    other = MemoryManager.open(repo, settings)
    try:
        h = other.begin_turn("started before the clear")
        manager.clear(confirm=True)
        with pytest.raises(MemoryFencedError):
            other.complete_turn(h, "late answer")
        with pytest.raises(MemoryFencedError):
            other.fail_turn(h)
    finally:
        other.close()
    db = db_path(repo)
    assert scalar(db, "SELECT count(*) FROM turns") == 0
    assert scalar(db, "SELECT count(*) FROM memory_jobs") == 0


def test_clear_without_confirm_is_a_usage_error_and_deletes_nothing(manager: MemoryManager, repo: Path,
                                                                    invoke_cli) -> None:
    _fill(manager)
    with pytest.raises(UsageError):
        manager.clear(confirm=False)
    manager.close()
    db = db_path(repo)
    snapshot = {t: scalar(db, f"SELECT count(*) FROM {t}") for t in (*DATA_TABLES, "threads")}
    generation = scalar(db, "SELECT generation FROM memory_meta")

    rc, out, err = invoke_cli("memory", "clear")
    assert rc == 2, (out, err)
    assert "--confirm" in err
    assert {t: scalar(db, f"SELECT count(*) FROM {t}") for t in snapshot} == snapshot
    assert snapshot["turns"] == 4 and snapshot["memory_items"] == 2
    assert scalar(db, "SELECT generation FROM memory_meta") == generation


def _make_v3(repo: Path) -> Path:
    return write_old_store(repo, "CREATE TABLE turns (id TEXT PRIMARY KEY, user_text TEXT, provider_error TEXT)",
                           "INSERT INTO turns VALUES ('old', 'OLD-V3-TEXT', 'SECRET-BODY')")


def test_clear_on_a_degraded_store_replaces_the_files_with_a_clean_v4_store(repo: Path, run_cli,
                                                                           invoke_cli) -> None:
    db = _make_v3(repo)
    keep = _keepers(repo)
    # stale side files of the old database must not be replayed into the new one
    db.with_name("memory.db-journal").write_bytes(b"\x00" * 512)
    db.with_name("memory.db-wal").write_bytes(b"junk wal")
    old = file_fingerprint(db)

    rc, out, err = invoke_cli("memory", "clear")  # without --confirm: still nothing happens
    assert rc == 2 and file_fingerprint(db) == old

    rc, out, err = run_cli("memory", "clear", "--confirm")
    assert rc == 0, err
    assert "cleared" in out.lower()

    assert not db.with_name("memory.db-journal").exists()
    conn = raw_connect(db)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 4
        assert tuple(schema.read_catalog(conn)) == schema.expected_catalog()
        assert conn.execute("SELECT count(*) FROM threads WHERE status = 'active'").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] == 0
        assert conn.execute("SELECT generation FROM memory_meta").fetchone()[0] == 1
    finally:
        conn.close()
    assert b"OLD-V3-TEXT" not in db.read_bytes()
    assert {p: Path(p).read_bytes() for p in keep} == keep

    rc, out, err = invoke_cli("memory", "status", json=True)
    assert rc == 0 and out["state"] == "healthy" and out["schema_version"] == 4


def test_clear_on_a_degraded_store_in_process(repo: Path, settings: Settings) -> None:
    db = _make_v3(repo)
    mgr = MemoryManager.open(repo, settings)
    try:
        assert not mgr.healthy
        thread = mgr.clear(confirm=True)
        assert mgr.healthy
        report = mgr.status()
        assert report.state == "healthy" and report.active_thread_id == thread and report.turns == 0
        h = mgr.begin_turn("works again")
        assert h.thread_id == thread
    finally:
        mgr.close()
    assert scalar(db, "PRAGMA user_version") == 4
