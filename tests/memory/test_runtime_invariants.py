"""A healthy store that loses an invariant while a manager is running ("运行时缺失 active thread"):
typed schema error or degraded state, and never an active thread invented outside bootstrap, /new or
an explicit clear."""

from __future__ import annotations

from pathlib import Path

import pytest

from autopatch_tui.core.errors import MemoryDegradedError, MemorySchemaError
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import Settings
from tests.support.fixtures import db_path, raw_connect, scalar


def _lose_active_thread(db: Path, how: str) -> None:
    conn = raw_connect(db)
    try:
        if how == "deleted":
            conn.execute("DELETE FROM threads WHERE status = 'active'")
        else:
            conn.execute("UPDATE threads SET status = 'archived', archived_at = 5.0 WHERE status = 'active'")
    finally:
        conn.close()


@pytest.mark.parametrize("how", ["deleted", "archived"])
def test_begin_turn_and_new_thread_do_not_invent_an_active_thread(how: str, manager: MemoryManager,
                                                                  repo: Path, settings: Settings) -> None:
    db = db_path(repo)
    threads_before = scalar(db, "SELECT count(*) FROM threads")
    _lose_active_thread(db, how)
    threads_after_loss = scalar(db, "SELECT count(*) FROM threads")

    with pytest.raises(MemorySchemaError):
        manager.begin_turn("a question that has nowhere to go")
    with pytest.raises((MemorySchemaError, MemoryDegradedError)):
        manager.new_thread()

    assert scalar(db, "SELECT count(*) FROM threads WHERE status = 'active'") == 0
    assert scalar(db, "SELECT count(*) FROM threads") == threads_after_loss
    assert threads_after_loss == (threads_before - 1 if how == "deleted" else threads_before)
    assert scalar(db, "SELECT count(*) FROM turns") == 0
    assert scalar(db, "SELECT count(*) FROM memory_jobs") == 0

    # the next open reports the damage instead of repairing it
    again = MemoryManager.open(repo, settings)
    try:
        report = again.status()
        assert report.state == "degraded"
        assert "active thread" in (report.diagnostic or "")
        with pytest.raises(MemoryDegradedError):
            again.begin_turn("still nowhere")
    finally:
        again.close()
    assert scalar(db, "SELECT count(*) FROM threads WHERE status = 'active'") == 0


def test_live_status_notices_a_lost_active_thread(manager: MemoryManager, repo: Path) -> None:
    _lose_active_thread(db_path(repo), "deleted")
    try:
        report = manager.status()
    except MemorySchemaError:
        return
    assert report.state == "degraded"
    assert report.diagnostic and "active thread" in report.diagnostic
    # from then on the live manager treats the store as degraded, and nothing invents a thread
    with pytest.raises((MemoryDegradedError, MemorySchemaError)):
        manager.begin_turn("after the status check")
    with pytest.raises((MemoryDegradedError, MemorySchemaError)):
        manager.new_thread()
    assert manager.status().state == "degraded"
    assert scalar(db_path(repo), "SELECT count(*) FROM threads WHERE status = 'active'") == 0


def test_missing_meta_row_at_run_time_is_a_typed_error(manager: MemoryManager, repo: Path) -> None:
    db = db_path(repo)
    h = manager.begin_turn("started before the damage")
    conn = raw_connect(db)
    conn.execute("DELETE FROM memory_meta")
    conn.close()

    with pytest.raises(MemorySchemaError):
        manager.begin_turn("after the damage")
    with pytest.raises(MemorySchemaError):
        manager.complete_turn(h, "answer")
    with pytest.raises(MemorySchemaError):
        manager.new_thread()
    assert scalar(db, "SELECT count(*) FROM turns") == 1
    assert scalar(db, "SELECT state FROM turns") == "open"
    assert scalar(db, "SELECT count(*) FROM memory_jobs") == 0
    assert scalar(db, "SELECT count(*) FROM memory_meta") == 0
    assert scalar(db, "SELECT count(*) FROM threads") == 1


def test_schema_version_changed_at_run_time_is_degraded_on_next_open(manager: MemoryManager, repo: Path,
                                                                     settings: Settings) -> None:
    db = db_path(repo)
    conn = raw_connect(db)
    conn.execute("PRAGMA user_version = 5")
    conn.close()
    manager.close()
    again = MemoryManager.open(repo, settings)
    try:
        report = again.status()
    finally:
        again.close()
    assert report.state == "degraded" and report.schema_version == 5
    assert "found 5" in (report.diagnostic or "")
    assert scalar(db, "PRAGMA user_version") == 5
