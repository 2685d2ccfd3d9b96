"""The review inbox (issue 21.1, 21.2): the Memory browser opens on "To review (N)" while items await
review; keep (Enter) moves on, keep all (ctrl+k) asks first, forget (Delete) asks first, j opens the
source turn; a revised item shows a word diff against the kept revision; the status bar says how many
wait; the approval switch (ctrl+t; to auto only after a confirmation) takes effect for the next
request without a restart; 20 items are reviewed with the keyboard alone in under 60 keystrokes; a
word typed on the inbox keeps, forgets and switches nothing (issue #20's rule, review v21 #2); a keep
in another process shows without a Memory change here. Snapshots at 80×24 and 120×36."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Tabs

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.recall.cli_search import search_memory
from autopatch_tui.core.settings import Settings
from autopatch_tui.tui.screens.confirm import ConfirmScreen
from autopatch_tui.tui.screens.memory_browser import MemoryBrowserScreen
from autopatch_tui.tui.screens.memory_inbox import InboxView
from autopatch_tui.tui.widgets.status_bar import StatusBar
from tests.support.fixtures import FakeClock
from tests.support.tui_text import plain
from tests.support.tui_wait import settle
from tests.tui.test_memory_browser import T0, mb_app, mb_seed, mb_turn

pytestmark = pytest.mark.anyio
SIZE = (120, 36)


def inbox_populate(mgr: MemoryManager, clock: FakeClock) -> dict[str, str]:
    t1 = mb_turn(mgr, clock, "From now on, always use type hints in public functions.", "Noted: type hints.")
    t2 = mb_turn(mgr, clock, "The cache lives in Redis.", "Redis it is.")
    t3 = mb_turn(mgr, clock, "Make the cache in src/cache expire entries after 5 minutes.", "OK: a 5 minute TTL.")
    mb_seed(mgr, logical_id="mem-11CACHE", subject="cache backend", statement="The cache lives in Redis.",
            keywords=["redis", "cache"], sources=[(t2, "user", "The cache lives in Redis")], now=T0 + 100)
    mgr.review.keep(["mem-11CACHE"])
    mb_seed(mgr, logical_id="mem-10HINTS", kind="user_preference", subject="type hints",
            statement="Always use type hints in public functions.", recall_mode="always", keywords=["typing"],
            sources=[(t1, "user", "always use type hints in public functions")], now=T0 + 200)
    mb_seed(mgr, logical_id="mem-11CACHE", subject="cache backend",
            statement="The cache lives in Redis and expires entries after 5 minutes.", paths=["src/cache"],
            keywords=["redis", "cache", "ttl"], sources=[(t3, "user", "expire entries after 5 minutes")],
            now=T0 + 300, revision=2)
    mb_seed(mgr, logical_id="mem-12TALK", kind="discussion_context", subject="parser rewrite",
            statement="We are weighing a rewrite of the parser around a Pratt loop.", keywords=["parser"],
            now=T0 + 400)
    return {"t1": t1, "t2": t2, "t3": t3}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def mgr(repo: Path, settings: Settings, clock: FakeClock) -> MemoryManager:
    return MemoryManager.open(repo, settings, clock=clock)


async def open_memory(pilot: Pilot) -> MemoryBrowserScreen:
    await settle(pilot)
    await pilot.press("f4")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, MemoryBrowserScreen)
    return screen


def inbox_ids(screen: MemoryBrowserScreen) -> list[str]:
    return [str(k.value) for k in screen.query_one("#ib-items", DataTable).rows]


async def test_opens_on_the_inbox_oldest_first_and_shows_the_diff_against_the_kept_revision(
        mgr: MemoryManager, clock: FakeClock, settings: Settings) -> None:
    inbox_populate(mgr, clock)
    app = mb_app(mgr, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_memory(pilot)
        assert screen.view == "inbox" and screen.query_one("#mb-views", Tabs).active == "view-inbox"
        assert str(screen.query_one("#view-inbox").label) == "To review (3)"
        assert inbox_ids(screen) == ["mem-10HINTS", "mem-11CACHE", "mem-12TALK"]
        assert app.focused is screen.query_one("#ib-items")
        await pilot.press("down")
        await settle(pilot, lambda: "Changed since" in plain(screen, "#ib-change"))
        change = screen.query_one("#ib-change").content
        assert "Changed since the kept revision r1" in change.plain
        struck = {change.plain[s.start:s.end] for s in change.spans if "strike" in str(s.style)}
        assert struck == {"whole project"}  # the statement only grew; the applicability changed
        added = "".join(change.plain[s.start:s.end] for s in change.spans if "underline" in str(s.style))
        assert "expires entries after 5 minutes" in added and "src/cache" in added
        sources = screen.query_one("#ib-sources")
        assert "Make the cache in src/cache expire entries" in str(sources.get_option_at_index(0).prompt)


async def test_keep_moves_on_and_the_counts_follow(mgr: MemoryManager, clock: FakeClock, settings: Settings) -> None:
    inbox_populate(mgr, clock)
    app = mb_app(mgr, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert pilot.app.screen.query_one(StatusBar).to_review == 3
        screen = await open_memory(pilot)
        await pilot.press("enter")
        await settle(pilot, lambda: inbox_ids(screen) == ["mem-11CACHE", "mem-12TALK"])
        assert screen.query_one(InboxView).current.entry.summary.id == "mem-11CACHE"  # the next one, selected
        assert str(screen.query_one("#view-inbox").label) == "To review (2)"
        assert mgr.review.review_state(["mem-10HINTS"]) == {"mem-10HINTS": "kept"}
        await pilot.press("f2")
        await settle(pilot, lambda: pilot.app.screen.query_one(StatusBar).to_review == 2)
        assert "2 to review" in pilot.app.screen.query_one(StatusBar).render().plain


async def test_the_status_bar_count_follows_a_keep_at_once(mgr: MemoryManager, clock: FakeClock, settings: Settings,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The count is the inbox's own (issue 30 item 14): no wait for the next state read — which is
    switched off here after the first one, so only the inbox can have said it."""
    from autopatch_tui.tui.app import AutopatchApp

    inbox_populate(mgr, clock)
    app = mb_app(mgr, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.review_count == 3
        monkeypatch.setattr(AutopatchApp, "_schedule_state_refresh", lambda self: None)
        screen = await open_memory(pilot)
        await pilot.press("enter")
        await settle(pilot, lambda: inbox_ids(screen) == ["mem-11CACHE", "mem-12TALK"])
        assert app.review_count == 2
        await pilot.press("f2")
        await settle(pilot, lambda: "2 to review" in pilot.app.screen.query_one(StatusBar).render().plain)


async def test_keep_all_asks_first_and_keeps_exactly_what_was_shown(mgr: MemoryManager, clock: FakeClock,
                                                                    settings: Settings) -> None:
    inbox_populate(mgr, clock)
    app = mb_app(mgr, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_memory(pilot)
        await pilot.press("ctrl+k")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await settle(pilot)
        assert mgr.review.count() == 3
        await pilot.press("ctrl+k")
        await pilot.pause()
        mb_seed(mgr, logical_id="mem-13LATE", subject="late", statement="Arrived while the dialog was open.",
                now=T0 + 900)
        await pilot.press("y")
        await settle(pilot, lambda: inbox_ids(screen) == ["mem-13LATE"])
        assert [e.summary.id for e in mgr.review.items()] == ["mem-13LATE"]  # never seen, so not kept


async def test_forget_asks_first(mgr: MemoryManager, clock: FakeClock, settings: Settings) -> None:
    inbox_populate(mgr, clock)
    app = mb_app(mgr, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_memory(pilot)
        await pilot.press("delete")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot, lambda: inbox_ids(screen) == ["mem-11CACHE", "mem-12TALK"])
        assert mgr.show_item("mem-10HINTS").status == "forgotten"
        assert any("raw turns it came from are kept" in n for n in app.notified)


async def test_j_opens_the_source_turn(mgr: MemoryManager, clock: FakeClock, settings: Settings,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from autopatch_tui.tui.screens.history import HistoryScreen

    turns = inbox_populate(mgr, clock)
    shown: list[str] = []
    original = HistoryScreen.show_turn

    def spy(self: Any, turn_id: str) -> Any:
        shown.append(turn_id)
        return original(self, turn_id)

    monkeypatch.setattr(HistoryScreen, "show_turn", spy)
    app = mb_app(mgr, settings)
    async with app.run_test(size=SIZE) as pilot:
        memory = await open_memory(pilot)
        await pilot.press("j")
        await settle(pilot, lambda: app.screen.name == "history" and shown)
        assert shown == [turns["t1"]]
        # Escape comes back to the inbox it was opened from (issue 30 item 14), not to the chat
        await pilot.press("escape")
        await settle(pilot, lambda: app.screen.name != "history")
        assert app.screen is memory and memory.view == "inbox"
        await pilot.press("escape")  # and the next Escape goes on as usual
        await settle(pilot, lambda: app.screen.name == "chat")


async def test_the_approval_switch_works_for_the_next_request_without_a_restart(
        mgr: MemoryManager, clock: FakeClock, settings: Settings) -> None:
    inbox_populate(mgr, clock)
    assert "mem-10HINTS" in {r["id"] for r in search_memory(mgr, "type hints")}
    app = mb_app(mgr, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_memory(pilot)
        assert "Approval: auto" in plain(screen, "#ib-mode")
        await pilot.press("ctrl+t")  # on: at once (it only holds more back)
        await settle(pilot, lambda: "Approval: review" in plain(screen, "#ib-mode"))
        assert mgr.review.approval == "review" and not isinstance(app.screen, ConfirmScreen)
        assert 'memory_approval = "review"' in settings.config_file.read_text()
        assert search_memory(mgr, "type hints") == []  # the next request: no restart
        await pilot.press("enter")  # keep it: recalled again
        await settle(pilot, lambda: mgr.review.count() == 2)
        assert "mem-10HINTS" in {r["id"] for r in search_memory(mgr, "type hints")}
        await pilot.press("ctrl+t")  # off weakens it: asks first, No has the focus
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("enter")
        await settle(pilot)
        assert mgr.review.approval == "review" and 'memory_approval = "review"' in settings.config_file.read_text()
        await pilot.press("ctrl+t")
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot, lambda: "Approval: auto" in plain(screen, "#ib-mode"))
        assert 'memory_approval = "auto"' in settings.config_file.read_text()


@pytest.mark.parametrize("words", ["kafka", "Kyoto", "fyi", "all good, keep them", "Ay yes"])
async def test_words_typed_on_the_inbox_keep_forget_and_switch_nothing(
        mgr: MemoryManager, clock: FakeClock, settings: Settings, words: str) -> None:
    """Review v21 #2: a person typing on the review screen (they think a field has focus) writes
    nothing — not a keep, not a forget, not the approval setting (also with approval on)."""
    inbox_populate(mgr, clock)
    mgr.review.set_approval("review", persist=False)
    app = mb_app(mgr, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_memory(pilot)
        before = inbox_ids(screen)
        for ch in words:
            await pilot.press("space" if ch == " " else "comma" if ch == "," else ch)
        await settle(pilot)
        for _ in range(5):
            await pilot.pause(0.05)
        assert not isinstance(app.screen, ConfirmScreen), f"typing {words!r} opened a confirmation"
        assert mgr.review.count() == 3 and inbox_ids(screen) == before
        assert len(mgr.list_items()) == 3 and mgr.list_items(status="forgotten") == []
        assert mgr.review.approval == "review"
        assert settings.config_file is None or not settings.config_file.exists() \
            or "memory_approval" not in settings.config_file.read_text()


async def test_a_click_on_a_row_never_keeps(mgr: MemoryManager, clock: FakeClock, settings: Settings) -> None:
    inbox_populate(mgr, clock)
    app = mb_app(mgr, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_memory(pilot)
        table = screen.query_one("#ib-items", DataTable)
        for _ in range(2):  # a click, then a click on the highlighted row (a "select")
            await pilot.click(table, offset=(3, 2))
            await settle(pilot)
        assert mgr.review.count() == 3


async def test_a_keep_in_another_process_shows_in_an_open_inbox(mgr: MemoryManager, clock: FakeClock,
                                                                settings: Settings) -> None:
    """The v21 report: a keep from a shell (another process: its own manager) reached an open inbox
    only at the next Memory change here. The inbox looks at the marks file while shown."""
    inbox_populate(mgr, clock)
    app = mb_app(mgr, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_memory(pilot)
        other = MemoryManager.open(mgr.repo, settings)
        try:
            other.review.keep(["mem-10HINTS"])
        finally:
            other.close()
        await settle(pilot, lambda: inbox_ids(screen) == ["mem-11CACHE", "mem-12TALK"], timeout=8)
        assert str(screen.query_one("#view-inbox").label) == "To review (2)"


async def test_twenty_new_items_are_reviewed_with_the_keyboard_in_under_60_keystrokes(
        mgr: MemoryManager, clock: FakeClock, settings: Settings) -> None:
    for n in range(20):
        mb_seed(mgr, logical_id=f"mem-{n:02d}BULK", subject=f"rule {n}", statement=f"Rule number {n}.",
                now=T0 + n)
    app = mb_app(mgr, settings)
    keys = ["f4"] + ["enter", "enter", "enter", "delete", "y"] * 5  # keep 3, forget 1 (it asks), five times
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
        assert len(keys) < 60
        assert mgr.review.count() == 0 and mgr.review.items() == []
        assert len(mgr.list_items()) == 15 and len(mgr.list_items(status="forgotten")) == 5


async def test_an_empty_inbox_does_not_take_over(mgr: MemoryManager, clock: FakeClock, settings: Settings) -> None:
    inbox_populate(mgr, clock)
    mgr.review.keep_all()
    app = mb_app(mgr, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_memory(pilot)
        assert screen.view == "items"
        await pilot.press("f4")  # F4 again: the next view
        await settle(pilot)
        assert screen.view == "audit"


def _snapshot_app(repo: Path, settings: Settings) -> Any:
    clock = FakeClock(T0)
    mgr = MemoryManager.open(repo, settings, clock=clock)
    inbox_populate(mgr, clock)
    return mb_app(mgr, settings)


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
def test_inbox_snapshot(size: tuple[int, int], repo: Path, settings: Settings, snap_compare: Any) -> None:
    async def run_before(pilot: Pilot) -> None:
        pilot.app.theme = "textual-dark"
        screen = await open_memory(pilot)
        await pilot.press("down")
        await settle(pilot, lambda: "Changed since" in plain(screen, "#ib-change"))

    assert snap_compare(_snapshot_app(repo, settings), terminal_size=size, run_before=run_before)


async def test_store_text_in_the_inbox_is_never_raw(mgr: MemoryManager, clock: FakeClock, settings: Settings) -> None:
    """An ID, subject, statement or path from the store that holds control characters (a merged or
    hand-edited store) is shown escaped in the list and the detail (contracts: never raw)."""
    mb_seed(mgr, logical_id="mem-X\x1b]0;owned\x07", subject="evil\x1b[2J subject", statement="Bad \x1b[2J text \u202e",
            paths=["gone/\x1b[31m"], now=T0 + 5)
    app = mb_app(mgr, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_memory(pilot)
        await settle(pilot, lambda: "Bad" in plain(screen, "#ib-fields"))
        shown = plain(screen, "#ib-fields") + "".join(
            str(c) for c in screen.query_one("#ib-items", DataTable).get_row_at(0))
        assert "\\x1b" in shown and "\\u202e" in shown
        assert not any(ch in shown for ch in "\x1b\x07\u202e"), shown
