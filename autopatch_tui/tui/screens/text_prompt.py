"""A small dialog that asks for one line of text (a folder to add, a store's label). Enter answers
with the text, Escape closes without an answer. The title and hint are plain text, never markup."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Static

from autopatch_tui.tui.resources import style
from autopatch_tui.tui.screens.base import AppModalScreen


class TextPromptScreen(AppModalScreen):
    CSS_PATH = style("dialogs.tcss")
    BINDINGS = [Binding("escape", "close", "Close", id="ask.close")]

    def __init__(self, title: str, hint: str, *, value: str = "", placeholder: str = "") -> None:
        super().__init__(name="ask", classes="ask")
        self.title_text = title
        self.hint_text = hint
        self.value = value
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(self.title_text), id="title", markup=False)
            yield Static(Text(self.hint_text), id="body", markup=False)
            yield Input(value=self.value, placeholder=self.placeholder, id="ask-input")
            yield Static(Text("Enter: OK  ·  Escape: close"), id="ask-keys", markup=False)

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted, "#ask-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_close(self) -> None:
        self.dismiss(None)
