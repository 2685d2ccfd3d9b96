"""Help (F1, `?` outside text fields) lists the current screen's bindings by id, from the live
bindings (a user keymap shows); the footer's order does not change with focus."""

from __future__ import annotations

import asyncio
import inspect

from textual.widgets import Input

from autopatch_tui.core.settings import load_settings
from autopatch_tui.tui.screens.help import HelpScreen
from autopatch_tui.tui.textual_compat import FooterKey
from autopatch_tui.tui.widgets.prompt import PromptInput
from tests.support.tui_text import screen_text
from tests.tui.test_chat import SIZE, make_app, wait_idle


def footer_keys(app) -> list[str]:
    return [k.key for k in app.screen.query(FooterKey)]


def test_f1_lists_the_chat_screens_keys_by_id_not_the_text_areas(repo, settings):
    config = settings.home / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[keymap]\n"screen.history" = "f9"\n', encoding="utf-8")
    app = make_app(repo, load_settings({"AUTOPATCH_HOME": str(settings.home)}))

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            assert isinstance(app.focused, PromptInput)
            await pilot.press("f1")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            ids = {r.id for r in app.screen.own + app.screen.everywhere}
            assert {"chat.cancel", "screen.history", "app.quit", "app.help"} <= ids  # chat.retry: on a focused note
            help_screen = app.screen
            assert next(r for r in help_screen.everywhere if r.id == "screen.history").key == "f9"  # the keymap
            text = screen_text(app)
            assert "Keys" in text and "Chat" in text and "chat.cancel" in text and "Enter resends it" in text
            assert "Select line" not in text and "cursor" not in text.lower()  # not the TextArea's bindings
            assert "accept the highlighted" in text  # the prompt's own keys
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen.name == "chat"

    asyncio.run(run())


def test_question_mark_opens_help_only_outside_text_fields(repo, settings):
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            await pilot.press("question_mark")  # the prompt has focus: it types
            await pilot.pause()
            assert app.screen.name == "chat" and app.screen.query_one(PromptInput).text == "?"
            await pilot.press("f4")
            await wait_idle(pilot, app)
            await pilot.press("question_mark")  # the browser opens in its search box: it types too
            await pilot.pause()
            assert app.screen.name == "memory" and app.screen.query_one("#mb-search", Input).value == "?"
            app.screen.query_one("#mb-items").focus()
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            ids = [r.id for r in app.screen.own]
            assert ids[:3] == ["memory.back", "memory.search", "memory.kind"]
            assert "memory.forget" in screen_text(app)

    asyncio.run(run())


def test_the_footer_order_does_not_change_with_focus(repo, settings):
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            await pilot.pause()
            # Help and Quit first (a narrow terminal cuts from the right); the prompt has focus (it binds f6)
            assert footer_keys(app)[:7] == ["f1", "ctrl+q", "f2", "f3", "f4", "f5", "f6"]
            await pilot.press("f4")
            await wait_idle(pilot, app)
            app.screen.query_one("#mb-items").focus()
            await pilot.pause()
            await pilot.pause()
            with_table = footer_keys(app)
            assert with_table[:3] == ["f1", "ctrl+q", "escape"] and "D" in with_table
            assert "f2" not in with_table or with_table.index("f2") > with_table.index("D")  # F-keys leave first
            app.screen.query_one("#mb-search").focus()
            await pilot.pause()
            await pilot.pause()
            with_search = footer_keys(app)  # letter keys type now, so they leave the footer; the order stays
            fkeys = {"f2", "f3", "f4", "f5", "f6", "ctrl+p"}  # back when the letter keys leave room
            assert [k for k in with_search if k not in fkeys] == [k for k in with_table if k in with_search]
            assert with_search[2] == "escape" and "k" not in with_search

    asyncio.run(run())


def test_the_palettes_keys_command_opens_this_help(repo, settings):
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            keys = [c for c in app.get_system_commands(app.screen) if c.title == "Keys"]
            assert len(keys) == 1
            result = keys[0].callback()  # the palette awaits what a command returns
            if inspect.isawaitable(result):
                await result
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)

    asyncio.run(run())
