"""The App follows Memory changes with at most one status read per STATE_REFRESH_SECONDS: a burst
of changes (one per finished job) costs one thread worker and one status query, and the status bar
still ends up showing the store as it is."""

from __future__ import annotations

import asyncio

from autopatch_tui.core.events import MemoryChanged
from autopatch_tui.tui.app import AutopatchApp
from autopatch_tui.tui.widgets.status_bar import StatusBar
from tests.tui.test_chat import SIZE, make_app, wait_idle


def test_a_burst_of_memory_changes_reads_the_status_once(repo, settings, monkeypatch) -> None:
    reads: list[int] = []
    real = AutopatchApp._refresh_state

    def counting(self: AutopatchApp) -> None:
        reads.append(1)
        real(self)

    monkeypatch.setattr(AutopatchApp, "_refresh_state", counting)
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            reads.clear()
            versions = app.memory_version
            mgr = app.manager
            handle = mgr.begin_turn("a turn the status bar should count")  # an open turn: no job yet
            mgr.complete_turn(handle, "ok")  # one pending extraction job, one MemoryChanged
            for _ in range(20):
                mgr.events.emit(MemoryChanged("turn"))
            await pilot.pause(0.6)
            await wait_idle(pilot, app)
            assert app.memory_version == versions + 21  # every change still reaches the screens
            assert len(reads) == 1
            assert app.job_counts[0] + app.job_counts[1] == 1  # pending or leased: the new job is counted
            assert app.screen.query_one(StatusBar).pending == 1

    asyncio.run(run())


def test_app_state_changes_repaint_only_what_shows_them(repo, settings, monkeypatch) -> None:
    """A busy worker changes the App's state once or more per job. A `reactive` on the App repaints
    the whole screen on each change (App.refresh: a full compositor update, ~20 ms with a chat log,
    which is what made typing lag while jobs ran); the status bar alone must follow."""
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            refreshes: list[tuple] = []
            real_refresh = app.refresh

            def counting_refresh(*args, **kwargs):
                refreshes.append((args, kwargs))
                return real_refresh(*args, **kwargs)

            monkeypatch.setattr(app, "refresh", counting_refresh)
            for n in range(1, 6):
                app.job_counts = (n, 1, 0, n % 2)
                app.job_events += 1
                app.memory_version += 1
                app.active_thread = f"thread-{n:08d}"
            await pilot.pause()
            assert refreshes == []
            status = app.screen.query_one(StatusBar)
            assert (status.pending, status.failed, status.thread_id) == (6, 1, "thread-00000005")

    asyncio.run(run())


def test_the_deferred_worker_start_skips_a_manager_that_an_exit_or_a_merge_left() -> None:
    """The worker starts after the first frame: by then a hang-up may have flushed and closed the
    manager, or a store merge replaced it; starting it then would run a thread on a closed store."""
    from types import SimpleNamespace

    started: list[str] = []

    def manager(name: str, *, closed: bool = False) -> SimpleNamespace:
        return SimpleNamespace(closed=closed, start_background=lambda: started.append(name))

    live, old, shut = manager("live"), manager("old"), manager("shut", closed=True)
    AutopatchApp._start_background(SimpleNamespace(manager=live, _exiting=False), live)  # type: ignore[arg-type]
    AutopatchApp._start_background(SimpleNamespace(manager=live, _exiting=False), old)  # type: ignore[arg-type]
    AutopatchApp._start_background(SimpleNamespace(manager=live, _exiting=True), live)  # type: ignore[arg-type]
    AutopatchApp._start_background(SimpleNamespace(manager=shut, _exiting=False), shut)  # type: ignore[arg-type]
    assert started == ["live"]
