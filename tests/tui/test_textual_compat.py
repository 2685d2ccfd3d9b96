"""Every private Textual name the app uses lives in `tui/textual_compat.py` (issue 32 item 4), and
each one is checked here against the installed Textual: an upgrade that renames or removes one
fails this file, not a screen at run time. A test also checks that no other module reaches for one."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, TextArea

from autopatch_tui.tui import textual_compat as compat

PACKAGE = Path(__file__).resolve().parents[2] / "autopatch_tui"
PRIVATE = re.compile(r"from textual\.[\w.]*\._|\._(?:keymap|bindings|disabled|require_update_dimensions|loop)\b"
                     r"|import MarkdownStream")


class _Probe(App[None]):
    BINDINGS = [Binding("ctrl+y", "noop", "Probe", id="probe.key")]

    def compose(self) -> ComposeResult:
        yield DataTable()
        yield Footer()


def test_the_private_names_are_there_and_do_what_the_app_relies_on() -> None:
    async def run() -> None:
        app = _Probe()
        app.set_keymap({"probe.key": "ctrl+z"})
        async with app.run_test(size=(80, 10)) as pilot:
            await pilot.pause()
            assert dict(compat.app_keymap(app)) == {"probe.key": "ctrl+z"}
            bindings = compat.node_bindings(app)
            bindings.apply_keymap(compat.app_keymap(app))
            assert "ctrl+z" in bindings.key_to_bindings  # the copy takes the keymap, the app's own is untouched
            keys = list(app.screen.query(compat.FooterKey))
            assert keys and isinstance(keys[0], compat.FooterKey)
            assert compat.set_footer_key_disabled(keys[0], True) is True
            assert compat.set_footer_key_disabled(keys[0], True) is False
            table = app.query_one(DataTable)
            compat.remeasure_columns(table)
            assert table._require_update_dimensions is True  # noqa: SLF001 - the name the compat module sets
            assert compat.driver_loop(app._driver) is asyncio.get_running_loop()  # noqa: SLF001

    asyncio.run(run())


def test_the_prompt_overrides_textareas_key_handling_by_names_that_exist() -> None:
    """`PromptInput` overrides `TextArea._on_key` and calls `_replace_via_keyboard`."""
    assert callable(TextArea._on_key) and callable(TextArea._replace_via_keyboard)  # noqa: SLF001


def test_no_other_module_reaches_for_a_private_textual_name() -> None:
    found = [f"{path.relative_to(PACKAGE)}:{n}" for path in PACKAGE.rglob("*.py") if path.name != "textual_compat.py"
             for n, line in enumerate(path.read_text("utf-8").splitlines(), 1)
             if PRIVATE.search(line) and "textual.widgets.markdown import MarkdownStream" not in line]
    assert found == []
