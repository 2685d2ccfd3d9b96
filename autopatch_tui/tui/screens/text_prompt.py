"""A small dialog that asks for one line of text (a folder to add, a store's label). Enter answers
with the text; Escape, as everywhere, first clears the field, then closes without an answer. The
title and hint are plain text, never markup."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Static

from autopatch_tui.core.terminal_text import escape_controls
from autopatch_tui.tui.resources import style
from autopatch_tui.tui.screens.base import AppModalScreen
from autopatch_tui.tui.widgets.footer import AppFooter


class TextPromptScreen(AppModalScreen):
    CSS_PATH = style("dialogs.tcss")
    FIELD = "#ask-input"
    BINDINGS = [Binding("escape", "close", "Close", id="ask.close")]

    def __init__(self, title: str, hint: str, *, value: str = "", placeholder: str = "") -> None:
        super().__init__(name="ask", classes="ask")
        self.title_text = title
        self.hint_text = hint
        self.value = value
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(escape_controls(self.title_text)), id="title", markup=False)
            yield Static(Text(escape_controls(self.hint_text)), id="body", markup=False)
            yield Input(value=self.value, placeholder=self.placeholder, id="ask-input")
            yield Static(Text("Enter: OK  ·  Escape: clear the field, then close"), id="ask-keys", markup=False)
        yield AppFooter()

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted, "#ask-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_close(self) -> None:
        if not self.clear_field():
            self.dismiss(None)
