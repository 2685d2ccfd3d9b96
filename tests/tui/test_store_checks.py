"""The app and the store checks (issues 23 and 24): damage committed only in the WAL is reported at
open and nothing of the store's folder changes; damage only the deep check sees is found after
the first frame, by the background worker, and degrades the store at once."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from autopatch_tui.core.memory import deep_check
from tests.memory._hostile import commit_only_in_wal, sql, tree_fingerprint
from tests.support.fixtures import bootstrap_healthy
from tests.tui.test_chat import SIZE, make_app, notes, wait_idle


@pytest.mark.parametrize("shm", [False, True], ids=["wal-only", "wal-and-shm"])
def test_wal_only_damage_is_reported_and_the_folder_is_left_as_it_was(repo: Path, settings, shm: bool) -> None:
    db = bootstrap_healthy(repo, settings)
    commit_only_in_wal(db, "PRAGMA user_version = 5", shm=shm)
    before = tree_fingerprint(db.parent)
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            assert any("Memory is degraded" in n and "schema version 5" in n for n in notes(app)), notes(app)
            assert app.health == "degraded"
            await pilot.press("f4")
            await wait_idle(pilot, app)
            await pilot.press("f3")
            await wait_idle(pilot, app)

    asyncio.run(run())
    assert tree_fingerprint(db.parent) == before


def test_damage_only_a_scan_sees_is_found_after_the_first_frame(repo: Path, settings, monkeypatch) -> None:
    db = bootstrap_healthy(repo, settings)
    sql(db, "PRAGMA foreign_keys = OFF",
        "INSERT INTO turns (id, thread_id, sequence, intent, state, user_text, created_at, ended_at)"
        " VALUES ('turn-orphan', 'thr-missing', 1, 'general_chat', 'failed', 'x', 1.0, 2.0)")
    where: list[tuple[str, bool]] = []
    real = deep_check.deep_problem

    def watched(conn):
        where.append((threading.current_thread().name, app.is_running and app.screen.name == "chat"))
        return real(conn)

    monkeypatch.setattr(deep_check, "deep_problem", watched)
    app = make_app(repo, settings)
    toasts: list[str] = []
    monkeypatch.setattr(app, "notify", lambda message, **kw: toasts.append(str(message)))
    assert app.manager.healthy  # the open-time check cannot see a foreign key

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            for _ in range(400):
                await pilot.pause(0.05)
                if app.health == "degraded":
                    break
            assert app.health == "degraded"
            assert any("Memory is degraded" in t and "foreign key" in t for t in toasts), toasts

    asyncio.run(run())
    assert where == [("memory-worker", True)]  # once, off the UI thread, with the chat screen up
