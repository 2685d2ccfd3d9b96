"""Issue 20, items 6 and 7 in the app: every slash command answers in its own format, text from the
store and the model is shown with control characters escaped, and first use says what to do.

* `/memory status bogus` ran `status`; `/memory export --to PATH` wrote to the default folder;
* an ESC sequence in a turn was written raw to the terminal;
* a fresh repository opened to an empty box; at 80 columns the footer cut "f1 Help"; the palette's
  Quit said "Quit the application as soon as possible" (it saves Memory first); at 80 columns the
  Stores table dropped the column that tells a retired store from a live one."""

from __future__ import annotations

import asyncio

import pytest

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.tui.screens.stores import StoresScreen
from autopatch_tui.tui.textual_compat import FooterKey
from autopatch_tui.tui.widgets.prompt import PLACEHOLDER
from autopatch_tui.tui.widgets.responsive_table import ResponsiveTable
from tests.support.store_helpers import used
from tests.support.tui_text import screen_text
from tests.support.tui_wait import poll
from tests.tui.test_chat import SIZE, make_app, notes, type_and_send, wait_idle

RAW = ("\x1b", "\x9b", "\u202e")


# --------------------------------------------------------------------------- slash commands


UNTAKEN = [  # (line, what the error names)
    ("/memory status bogus", "bogus"),
    ("/memory list nonsense", "nonsense"),
    ("/memory show", "usage: /memory show ID"),
    ("/memory show a b", "b"),
    ("/memory clear --force", "--force"),
    ("/memory export --into x", "--into"),
    ("/memory export --to", "usage: /memory export --to PATH"),
    ("/new now", "now"),
    ("/help me", "me"),
    ("/retry twice", "twice"),
    ("/patch list all", "all"),
    ("/patch show F12 please now", "please now"),
    ("/patch apply F3 now", "now"),
    ("/patch discard F3 all", "all"),
]


def test_what_a_slash_command_does_not_take_is_an_error_that_names_it(repo, settings):
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            prompt = app.screen.query_one("#prompt")
            for line, named in UNTAKEN:
                before = len(notes(app))
                prompt.clear()
                await type_and_send(pilot, line)
                await wait_idle(pilot, app)
                shown = notes(app)[before:]
                assert len(shown) == 1 and named in shown[0], (line, shown)  # the error, and nothing run
                assert prompt.text == line, line  # kept to be corrected

    asyncio.run(run())


def test_memory_export_to_a_path_writes_there(repo, settings, tmp_path):
    app = make_app(repo, settings)
    target = tmp_path / "elsewhere"
    target.mkdir()

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            await type_and_send(pilot, f"/memory export --to {target}")
            await wait_idle(pilot, app)
            [written] = list(target.glob("memory-*.json"))
            assert f"Memory exported to {written}" in notes(app)[-1]
            await type_and_send(pilot, f"/memory export --to {tmp_path / 'missing' / 'x.json'}")
            await wait_idle(pilot, app)
            assert "no such file or folder" in notes(app)[-1]  # in the chat, in plain words

    asyncio.run(run())
    assert not app.manager.paths.exports_dir.exists() or not list(app.manager.paths.exports_dir.iterdir())


def test_a_memory_export_shows_its_rows_as_it_goes_and_clears_the_line_after(repo, settings, monkeypatch):
    """Issue 33: the export streams; the status bar's busy line follows its rows, then clears."""
    from autopatch_tui.core.memory import export as export_mod
    from autopatch_tui.tui.widgets.status_bar import StatusBar
    from tests.support.memory_factory import add_item

    mgr = MemoryManager.open(repo, settings)
    for i in range(30):
        add_item(mgr.store.conn(), subject=f"rule {i}", statement=f"Rule {i}.")
    mgr.close()
    monkeypatch.setattr(export_mod, "PROGRESS_EVERY", 10)
    app = make_app(repo, settings)
    shown: list[str] = []

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            bar = app.screen.query_one(StatusBar)
            bar.watch(bar, "busy", lambda text: shown.append(text), init=False)
            await type_and_send(pilot, "/memory export")
            await wait_idle(pilot, app)
            assert "Memory exported to" in notes(app)[-1]
            assert bar.busy == ""

    asyncio.run(run())
    rows = [t for t in shown if t.startswith("Exporting Memory:")]
    assert rows and rows[-1].endswith(" rows…") and rows[-1].split()[2] == rows[-1].split()[4]  # done == total


# --------------------------------------------------------------------------- control characters


def test_store_and_model_text_is_shown_with_control_characters_escaped(repo, settings):
    mgr = MemoryManager.open(repo, settings)
    handle = mgr.begin_turn("retitle \x1b]0;owned\x07 please \u202eright-to-left")
    mgr.complete_turn(handle, "Sure: \x1b[2J cleared and \x9b31m red")
    mgr.close()
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            await pilot.pause()
            text = screen_text(app)
            assert "retitle" in text and "cleared" in text
            assert [c for c in RAW if c in text] == []
            assert "\\x1b" in text and "\\u202e" in text and "\\x9b" in text
            app.notify("label \x1b[31mred", markup=False)
            await pilot.pause()
            assert all("\x1b" not in n.message for n in app._notifications)

    asyncio.run(run())


# --------------------------------------------------------------------------- first use


def test_a_fresh_repository_says_what_to_do(repo, settings):
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            await pilot.pause()
            text = screen_text(app)
            assert PLACEHOLDER in text  # the empty prompt says what it takes
            assert any(n.startswith("Welcome.") for n in notes(app))
            quit_help = next(c.help for c in app.get_system_commands(app.screen) if c.title == "Quit")
            assert "Memory" in quit_help and "as soon as possible" not in quit_help

    asyncio.run(run())


def test_no_welcome_once_the_thread_has_turns(repo, settings):
    mgr = MemoryManager.open(repo, settings)
    mgr.complete_turn(mgr.begin_turn("hello"), "hi")
    mgr.close()
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            assert not any(n.startswith("Welcome.") for n in notes(app))

    asyncio.run(run())


@pytest.mark.parametrize("size, must_show", [((80, 24), ("f1", "ctrl+q")), ((60, 24), ("f1",))])
def test_the_footer_keeps_help_and_quit_visible_on_a_narrow_terminal(repo, settings, size, must_show):
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=size) as pilot:
            await wait_idle(pilot, app)
            await pilot.pause()
            for screen_key in ("f2", "f3", "f4", "f5", "f6"):
                await pilot.press(screen_key)
                await wait_idle(pilot, app)
                await pilot.pause()
                keys = {k.key: k for k in app.screen.query(FooterKey)}
                for key in must_show:
                    region = keys[key].region
                    assert region.width > 0 and region.right <= size[0], (screen_key, key, region)

    asyncio.run(run())


def test_the_stores_table_keeps_the_live_or_retired_state_at_80_columns(repo, settings):
    used(MemoryManager.open(repo, settings)).close()
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_idle(pilot, app)
            await pilot.press("f6")
            await poll(pilot, lambda: isinstance(app.screen, StoresScreen) and app.screen.rows)
            await pilot.pause()
            table = app.screen.query_one(ResponsiveTable)
            assert "state" in table.shown_keys, table.shown_keys
            assert "current" in screen_text(app)

    asyncio.run(run())
