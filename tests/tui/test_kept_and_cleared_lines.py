"""A line the app gives back is kept selected with the cursor at its end, typing replaces it, Up
recalls it, and the note under the prompt says it was kept (issue 30, item 3); ctrl+c clears a
non-empty prompt into the prompt history, and the footer and F1 say so (item 4)."""

from __future__ import annotations

import asyncio

from autopatch_tui.tui.screens.confirm import ConfirmScreen
from autopatch_tui.tui.widgets.prompt import KEPT_HINT, PromptInput
from autopatch_tui.tui.widgets.prompt_hint import PromptHint
from tests.support.tui_wait import poll
from tests.tui.test_chat import SIZE, make_app, type_and_send, wait_idle
from tests.tui.test_pending_patches import audited, start_audit  # noqa: F401 - the fixture


def prompt_of(app) -> PromptInput:  # type: ignore[no-untyped-def]
    return app.screen.query_one(PromptInput)


async def check_kept(pilot, app, line: str) -> None:  # type: ignore[no-untyped-def]
    prompt = prompt_of(app)
    assert prompt.text == line
    assert prompt.cursor_location == prompt.document.end  # the cursor at the end, not the start
    assert prompt.selected_text == line  # selected: typing replaces it
    hint = app.screen.query_one(PromptHint)
    assert hint.display and hint.shown == KEPT_HINT
    await pilot.press("h", "i")
    await poll(pilot, lambda: prompt.text == "hi")  # replaced, not appended to the old line
    assert not hint.display  # the note was about the kept line
    await pilot.press("up")
    await pilot.pause()
    assert prompt.text == line  # Up recalls it


def test_a_usage_error_keeps_the_line_selected_with_the_cursor_at_its_end(repo, settings):
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            await type_and_send(pilot, "/memory frobnicate now")
            await wait_idle(pilot, app)
            await check_kept(pilot, app, "/memory frobnicate now")

    asyncio.run(run())


def test_a_declined_confirmation_keeps_the_line_selected_with_the_cursor_at_its_end(audited):  # noqa: F811
    repo, settings = audited
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await start_audit(pilot, app)
            await type_and_send(pilot, "/new")
            await poll(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            await pilot.press("n")
            await wait_idle(pilot, app)
            await check_kept(pilot, app, "/new")

    asyncio.run(run())


def footer_keys(app) -> list[str]:  # type: ignore[no-untyped-def]
    return [k for k, _name, *_ in app.screen.query_one("AppFooter").entries()]


def test_ctrl_c_clears_a_non_empty_prompt_into_history_and_the_footer_and_help_say_so(repo, settings):
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            prompt = prompt_of(app)
            prompt.focus()
            prompt.insert("first line\nsecond line\nthird line")
            await pilot.pause(0.2)
            assert "ctrl+c" in footer_keys(app)
            await pilot.press("ctrl+c")
            await pilot.pause()
            assert prompt.text == ""
            assert prompt.prompt_history.entries[-1] == "first line\nsecond line\nthird line"
            await pilot.pause(0.2)
            assert "ctrl+c" not in footer_keys(app)  # an empty prompt: ctrl+c does what it did
            await pilot.press("up")
            await pilot.pause()
            assert prompt.text == "first line\nsecond line\nthird line"
            await pilot.pause(0.2)
            assert "ctrl+c" in footer_keys(app)  # a recalled text can be cleared again: the footer says so
            app.screen.query_one("#log").focus()  # not in the prompt: the screen's binding clears it
            await pilot.pause()
            await pilot.press("ctrl+c")
            await pilot.pause()
            assert prompt.text == ""
            await pilot.press("f1")
            await pilot.pause(0.3)
            from autopatch_tui.tui.screens.help import HelpScreen

            assert isinstance(app.screen, HelpScreen)
            row = next(r for r in app.screen.own if r.id == "chat.clear_prompt")
            assert row.key == "ctrl+c" and row.does == "clear the prompt (Up brings it back)"

    asyncio.run(run())
