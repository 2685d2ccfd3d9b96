"""Bounded waits for Pilot tests, shared by the screen test modules."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from textual.errors import NoWidget
from textual.pilot import Pilot
from textual.widget import Widget


async def settle(pilot: Pilot, cond: Callable[[], Any] | None = None, timeout: float = 30.0) -> None:
    """Let workers finish and their results land; then poll `cond` until it holds.
    (`wait_for_complete` re-raises a worker's error: use `poll` where a worker is expected to fail.)"""
    deadline = time.monotonic() + timeout
    while True:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if cond is None or cond():
            return
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await pilot.pause(0.02)


async def poll(pilot: Pilot, cond: Callable[[], Any], timeout: float = 30.0) -> None:
    """Poll `cond` without waiting for workers (states while a worker still runs, or fails)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await pilot.pause(0.02)


async def click(pilot: Pilot, target: Widget | str, timeout: float = 30.0) -> None:
    """Scroll `target` into view, click it once the compositor has laid it out where it is drawn (a
    widget mounted a moment ago may still have a stale region under load, a toast may cover it for
    a while) and assert that the click landed on it. On a timeout the error names what was drawn
    there."""
    widget = pilot.app.screen.query_one(target) if isinstance(target, str) else target
    widget.screen.scroll_to_widget(widget, animate=False)  # as a user would scroll to it first
    seen: list[str] = []

    def drawn() -> bool:
        region = widget.region
        if not region.area:
            seen[:] = [f"{widget!r} has no region"]
            return False
        try:
            hit, _ = pilot.app.screen.get_widget_at(region.x, region.y)  # where Pilot clicks
        except NoWidget:
            seen[:] = [f"nothing drawn at {region.offset}"]
            return False
        seen[:] = [f"{hit!r} drawn at {region.offset}"]
        return widget in hit.ancestors_with_self

    for _attempt in range(3):  # a re-layout between the check and the click (a refresh under load) moves it
        try:
            await poll(pilot, drawn, timeout)
        except AssertionError:
            raise AssertionError(f"{widget!r} never became clickable: {seen[0] if seen else '?'}") from None
        if await pilot.click(widget):
            return
    raise AssertionError(f"the click missed {widget!r}")
