"""The launched app freezes its start-up objects out of the garbage collector's full collections
after the first frame (tui/gc_tuning.py); an app built any other way (every test) leaves the
process's GC alone."""

from __future__ import annotations

import asyncio

from autopatch_tui.tui import gc_tuning
from autopatch_tui.tui.app import AutopatchApp
from tests.tui.test_chat import SIZE, make_app, wait_idle


def _freezes(repo, settings, monkeypatch, flag: bool | None) -> list[int]:
    calls: list[int] = []
    monkeypatch.setattr(gc_tuning, "freeze_start_up_objects", lambda: calls.append(1))
    app = make_app(repo, settings)
    if flag is not None:
        app.freeze_gc_after_start = flag

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            assert app.screen.name == "chat"

    asyncio.run(run())
    return calls


def test_only_a_launched_app_freezes_once_after_start(repo, settings, monkeypatch) -> None:
    assert _freezes(repo, settings, monkeypatch, None) == []  # the default: tests' processes untouched
    assert _freezes(repo, settings, monkeypatch, True) == [1]


def test_launch_app_asks_for_the_freeze(repo, settings, monkeypatch) -> None:
    from autopatch_tui.tui.launch import launch_app

    seen: list[bool] = []

    def fake_run(self: AutopatchApp, *args: object, **kwargs: object) -> None:
        seen.append(self.freeze_gc_after_start)
        self.manager.close()

    monkeypatch.setattr(AutopatchApp, "run", fake_run)
    assert launch_app(str(repo), settings) == 0
    assert seen == [True]
