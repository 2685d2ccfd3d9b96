"""Bounded waits for Pilot tests, shared by the screen test modules."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot


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
