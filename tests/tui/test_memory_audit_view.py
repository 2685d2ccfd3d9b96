"""The Audit view of the Memory browser (issue 21.5), the browser's word search beside recall
(21.6) and supersession in the item detail (21.4): a finding opens its items side by side, forget
works on either (after the confirmation) and the finding goes; a word that appears only in a subject
shows the item, apart and labelled; a superseded item says so and shows what replaced it.
Snapshots of the audit view at 80×24 and 120×36."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import Settings
from autopatch_tui.tui.screens.confirm import ConfirmScreen
from autopatch_tui.tui.screens.memory_audit import ItemCard
from autopatch_tui.tui.screens.memory_browser import MemoryBrowserScreen
from autopatch_tui.tui.screens.memory_list import WORDS_KEY
from tests.support.fixtures import FakeClock
from tests.support.tui_text import plain
from tests.support.tui_wait import settle
from tests.tui.test_memory_browser import T0, choose, mb_app, mb_seed, mb_supersede, open_browser, row_ids, search

pytestmark = pytest.mark.anyio
SIZE = (120, 36)


def audit_populate(mgr: MemoryManager) -> None:
    mb_seed(mgr, logical_id="mem-21TABS", kind="user_preference", subject="indentation",
            statement="Never use tabs.", now=T0 + 10)
    mb_seed(mgr, logical_id="mem-22MAKE", subject="makefile recipes", statement="Use tabs for indentation.",
            paths=["Makefile"], now=T0 + 20)
    mb_seed(mgr, logical_id="mem-23SPACES", kind="user_preference", subject="Indentation",
            statement="Indent with four spaces.", paths=["src"], now=T0 + 30)
    mb_seed(mgr, logical_id="mem-24PATH", subject="file paths", statement="Prefer pathlib over os.path.",
            now=T0 + 40)
    mgr.review.keep_all()  # the browser opens on its last view, not on the inbox


@pytest.fixture
def mgr(repo: Path, settings: Settings) -> MemoryManager:
    return MemoryManager.open(repo, settings, clock=FakeClock(T0))


def findings(screen: MemoryBrowserScreen) -> list[str]:
    return [str(k.value) for k in screen.query_one("#au-findings", DataTable).rows]


async def test_a_finding_opens_its_items_side_by_side_and_forget_works_on_either(
        mgr: MemoryManager, settings: Settings) -> None:
    audit_populate(mgr)
    app = mb_app(mgr, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot, "audit")
        await settle(pilot, lambda: findings(screen))
        assert "1 conflict(s)" in plain(screen, "#au-summary") and "1 duplicate group(s)" in plain(
            screen, "#au-summary")
        table = screen.query_one("#au-findings", DataTable)
        conflict = [r for r in screen.query_one("AuditView").rows if r.type == "conflict"][0]
        table.move_cursor(row=findings(screen).index(conflict.key))
        await settle(pilot, lambda: [c.item_id for c in screen.query(ItemCard)] == ["mem-21TABS", "mem-22MAKE"])
        assert "the right item requires what the left item forbids" in str(table.get_row(conflict.key)[2])
        await pilot.press("enter")  # to the cards
        assert app.focused.item_id == "mem-21TABS"
        await pilot.press("right")
        assert app.focused.item_id == "mem-22MAKE"
        for ch in "fyi":  # a word typed on a card forgets nothing (issue #20; review v21 #2)
            await pilot.press(ch)
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen) and mgr.show_item("mem-22MAKE").status == "active"
        await pilot.press("delete")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot, lambda: "0 conflict(s)" in plain(screen, "#au-summary"))
        assert mgr.show_item("mem-22MAKE").status == "forgotten" and mgr.show_item("mem-21TABS").status == "active"
        assert app.focused is table
        await pilot.press("escape")  # from the findings: out of the browser
        await settle(pilot)
        assert app.screen.name == "chat"


async def test_a_word_in_a_subject_shows_the_item_apart_and_labelled(mgr: MemoryManager, settings: Settings) -> None:
    audit_populate(mgr)
    mb_seed(mgr, logical_id="mem-25ONLYSUBJ", subject="pathlib migration", statement="Move the helpers over.",
            now=T0 + 50)
    mgr.review.keep_all()
    app = mb_app(mgr, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot)
        await search(pilot, screen, "migration")
        ids = row_ids(screen)
        assert WORDS_KEY in ids and "mem-25ONLYSUBJ" in ids[ids.index(WORDS_KEY):]
        assert "recalled (what the assistant would recall)" in plain(screen, "#mb-summary")
        assert "contain the words" in plain(screen, "#mb-summary")
        await search(pilot, screen, "helpers")  # in the statement only
        assert row_ids(screen) == [WORDS_KEY, "mem-25ONLYSUBJ"]
        assert screen.selected == "mem-25ONLYSUBJ"


async def test_a_superseded_item_says_so_and_shows_its_successor(mgr: MemoryManager, settings: Settings) -> None:
    mb_seed(mgr, logical_id="mem-31OLD", subject="linter", statement="Lint with flake8.", now=T0 + 10)
    mb_seed(mgr, logical_id="mem-32NEW", subject="python linter", statement="Lint with ruff.", now=T0 + 20)
    new_rev = mgr.store.conn().execute("SELECT id FROM memory_items WHERE logical_id = 'mem-32NEW'").fetchone()[0]
    mb_supersede(mgr, "mem-31OLD", by=new_rev, now=T0 + 20)
    mgr.review.keep_all()
    app = mb_app(mgr, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot)
        await choose(pilot, screen, "mem-32NEW")
        history = plain(screen, "#mb-history")
        assert "replaced mem-31OLD r1" in history and "Lint with flake8." in history
        from autopatch_tui.tui.screens.memory_browser import MemoryBrowserScreen as _  # noqa: F401
        from textual.widgets import Select

        screen.query_one("#mb-status", Select).value = "superseded"
        await settle(pilot)
        await choose(pilot, screen, "mem-31OLD")
        history = plain(screen, "#mb-history")
        assert "Superseded by mem-32NEW on" in history and "never recalled" in history
        assert "replaced by mem-32NEW r1" in history


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
def test_audit_view_snapshot(size: tuple[int, int], repo: Path, settings: Settings, snap_compare: Any) -> None:
    mgr = MemoryManager.open(repo, settings, clock=FakeClock(T0))
    audit_populate(mgr)
    app = mb_app(mgr, settings)

    async def run_before(pilot: Pilot) -> None:
        pilot.app.theme = "textual-dark"
        screen = await open_browser(pilot, "audit")
        await settle(pilot, lambda: findings(screen) and len(screen.query(ItemCard)) == 2)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
