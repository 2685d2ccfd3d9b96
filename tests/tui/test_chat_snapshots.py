"""Snapshots of the chat screen: empty (no model), populated (restart continuity), degraded."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import time_machine

from autopatch_tui.core import ids
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.tui.app import AutopatchApp
from autopatch_tui.tui.services import Services
from tests.support.fixtures import write_old_store
from tests.tui.layouts import SIZES

SIZE = (110, 34)
FROZEN = "2026-11-29 12:00:00 +0000"


@pytest.fixture
def deterministic(monkeypatch):
    counter = itertools.count(1)
    monkeypatch.setattr(ids.os, "urandom", lambda n: next(counter).to_bytes(n, "big"))
    with time_machine.travel(FROZEN, tick=False):
        yield


@pytest.fixture
def fixed_repo(tmp_path: Path) -> Path:
    # the status bar and notes show no paths, but keep the layout independent of tmp names anyway
    repo = tmp_path / "project"
    repo.mkdir()
    return repo


def app_for(repo: Path, settings) -> AutopatchApp:
    return AutopatchApp(Services(MemoryManager.open(repo, settings), settings))


async def settle(pilot) -> None:
    for prompt in pilot.app.screen.query("PromptInput"):
        prompt.cursor_blink = False  # a blinking cursor would make the snapshot depend on timing
    for _ in range(10):
        await pilot.pause(0.05)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def test_chat_empty_no_model(snap_compare, fixed_repo, settings, deterministic):
    assert snap_compare(app_for(fixed_repo, settings), terminal_size=SIZE, run_before=settle)


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_chat_populated(snap_compare, fixed_repo, settings, deterministic, size):
    mgr = MemoryManager.open(fixed_repo, settings)
    for question, answer in [("How do I run the tests?", "Run `make test`. It sets up **everything**."),
                             ("And the [bold]app[/bold]?", "Use `make run`.")]:
        h = mgr.begin_turn(question)
        mgr.complete_turn(h, answer)
    mgr.close()
    assert snap_compare(app_for(fixed_repo, settings), terminal_size=size, run_before=settle)


def test_chat_degraded(snap_compare, fixed_repo, settings, deterministic):
    write_old_store(fixed_repo, "CREATE TABLE legacy (x)")
    assert snap_compare(app_for(fixed_repo, settings), terminal_size=SIZE, run_before=settle)
