"""A reusable yes/no confirmation dialog. The body is plain text (never markup): it may quote
user or model text such as an item's statement."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Static

from autopatch_tui.core.terminal_text import escape_controls
from autopatch_tui.tui.resources import style
from autopatch_tui.tui.screens.base import AppModalScreen
from autopatch_tui.tui.widgets.footer import AppFooter


class ConfirmScreen(AppModalScreen):
    """Dismisses with True (Yes / `y`) or False (No / `n` / escape). No is focused first, so a
    stray Enter never confirms a destructive action. Its own footer shows its own keys (the
    screen beneath it no longer shows through with keys that do nothing here)."""

    CSS_PATH = style("dialogs.tcss")
    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n", "answer(False)", "No", id="confirm.no"),
        Binding("escape", "close", "Close", id="confirm.cancel"),
    ]

    def __init__(self, title: str, body: str, confirm_label: str = "Yes") -> None:
        super().__init__(name="confirm", classes="confirm")
        self.title_text = title
        self.body_text = body
        self.confirm_label = confirm_label

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(escape_controls(self.title_text)), id="title", markup=False)
            yield Static(Text(escape_controls(self.body_text)), id="body", markup=False)
            with Horizontal(classes="buttons"):
                yield Button(Text("No (n)"), id="no", variant="default")
                yield Button(Text(f"{self.confirm_label} (y)"), id="yes", variant="error")
        yield AppFooter()

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    @on(Button.Pressed, "#yes")
    def _yes(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(True)

    @on(Button.Pressed, "#no")
    def _no(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(False)

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)

    def action_close(self) -> None:
        self.dismiss(False)
