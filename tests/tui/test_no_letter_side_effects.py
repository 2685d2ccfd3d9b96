"""Issue 20, item 3: no single letter writes, deletes, sends or merges from a screen where a person
may be typing; search fields take focus on open and after Escape; Escape means the same everywhere
(first clear the field, then leave).

On the history, typing "help" right after F3 wrote a thread export (`e`: the search field was not
focused); the Memory browser opened on its list the first time and in its search the next; Escape
left the browser at once but only cleared the history's search."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, Input

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import Settings
from autopatch_tui.tui.screens.chat import ChatScreen
from autopatch_tui.tui.screens.confirm import ConfirmScreen
from autopatch_tui.tui.screens.history import HistoryScreen
from autopatch_tui.tui.screens.memory_browser import MemoryBrowserScreen
from autopatch_tui.tui.screens.text_prompt import TextPromptScreen
from autopatch_tui.tui.textual_compat import FooterKey
from tests.support.fixtures import FakeClock
from tests.support.tui_wait import poll, settle
from tests.tui.test_history import SMALL, hs_app, hs_seed, open_history
from tests.tui.test_memory_browser import T0, mb_app, mb_populate, open_browser

pytestmark = pytest.mark.anyio
SIZE = (120, 40)


@pytest.fixture
def mb_clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def mb_manager(repo: Path, settings: Settings, mb_clock: FakeClock) -> MemoryManager:
    return MemoryManager.open(repo, settings, clock=mb_clock)


def exports_of(app) -> list[Path]:
    folder = app.manager.paths.exports_dir
    return list(folder.iterdir()) if folder.exists() else []


async def test_typing_on_the_history_searches_and_writes_nothing(repo: Path, settings: Settings) -> None:
    hs_seed(repo, settings, SMALL)
    app = hs_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        search = screen.query_one("#search", Input)
        assert app.focused is search
        await pilot.press(*"help")  # `e` once exported the thread
        await settle(pilot, lambda: screen.mode == "search")
        assert search.value == "help" and exports_of(app) == []
        # Escape clears the search and keeps focus in it; the second leaves
        await pilot.press("escape")
        await settle(pilot, lambda: screen.mode == "thread")
        assert search.value == "" and app.focused is search
        await pilot.press(*"more")  # `m` would load more turns from the list; here it is text
        await settle(pilot)
        assert search.value == "more"
        await pilot.press("escape", "escape")
        await poll(pilot, lambda: isinstance(app.screen, ChatScreen))
        # back again: the search field has focus, whatever had it before
        await pilot.press("f3")
        await poll(pilot, lambda: isinstance(app.screen, HistoryScreen))
        screen.turns_table.focus()
        await pilot.press("f2")
        await poll(pilot, lambda: isinstance(app.screen, ChatScreen))
        await pilot.press("f3")
        await poll(pilot, lambda: isinstance(app.screen, HistoryScreen))
        assert app.focused is search
        await pilot.press("e")
        await settle(pilot)
        assert exports_of(app) == [] and search.value == "e"


async def test_the_memory_browser_opens_in_its_search_every_time_and_escape_clears_it_first(
        mb_manager: MemoryManager, mb_clock, settings: Settings) -> None:
    mb_populate(mb_manager, mb_clock)
    mb_manager.review.keep_all()  # nothing awaits review: the browser opens on its Items view
    app = mb_app(mb_manager, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot)
        await settle(pilot)
        search = screen.query_one("#mb-search", Input)
        assert app.focused is search  # the first open too (it used to open on the list)
        await pilot.press(*"redis", "enter")
        await settle(pilot, lambda: screen.query_text == "redis")
        await pilot.press("escape")  # clears the search and its results; the browser stays
        await settle(pilot)
        assert isinstance(app.screen, MemoryBrowserScreen)
        assert search.value == "" and screen.query_text == "" and app.focused is search
        screen.query_one("#mb-items", DataTable).focus()
        await pilot.press("escape")  # nothing to clear: back to chat
        await poll(pilot, lambda: isinstance(app.screen, ChatScreen))
        await pilot.press("f4")
        await poll(pilot, lambda: isinstance(app.screen, MemoryBrowserScreen))
        await settle(pilot)
        assert app.focused is search  # reopened: the search again, as on the first open
        await pilot.press("e")  # `e` once wrote an export from the list
        await settle(pilot)
        assert exports_of(app) == []


async def test_a_confirmation_shows_its_own_keys_and_no_stray_enter_confirms(
        mb_manager: MemoryManager, mb_clock, settings: Settings) -> None:
    mb_populate(mb_manager, mb_clock)
    mb_manager.review.keep_all()  # the Items view
    app = mb_app(mb_manager, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot)
        await settle(pilot)
        await pilot.press("down")  # from the search field to the list
        assert app.focused is screen.table
        await pilot.press("f")
        await poll(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.pause()
        keys = [k.key for k in app.screen.query(FooterKey)]
        assert {"y", "n", "escape"} <= set(keys), keys
        assert "k" not in keys and "j" not in keys  # not the browser's keys, beneath the dialog
        await pilot.press("enter")  # No has focus: a stray Enter declines
        await settle(pilot)
        assert app.screen is screen and screen.detail is not None and screen.detail.status == "active"


async def test_escape_in_a_text_dialog_clears_the_field_first(repo: Path, settings: Settings) -> None:
    app = hs_app(repo, settings)
    answers: list[str | None] = []
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.push_screen(TextPromptScreen("Label", "A short name.", value="old label"), answers.append)
        await poll(pilot, lambda: isinstance(app.screen, TextPromptScreen) and app.screen.query(Input))
        field = app.screen.query_one(Input)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, TextPromptScreen) and field.value == "" and answers == []
        await pilot.press("escape")
        await poll(pilot, lambda: not isinstance(app.screen, TextPromptScreen))
        assert answers == [None]
