"""A reusable yes/no confirmation dialog. The body is plain text (never markup), its control
characters escaped: it may quote user or model text such as an item's statement. A dialog with a
larger body or other keys (the promote diff, written on ctrl+s, no letter bound) subclasses
`ConfirmBase`: `compose_body` for the body, its own BINDINGS and `CONFIRM_KEY` for the key named on
the confirm button. Every confirmation has its own footer, which shows its own keys (the screen
beneath it no longer shows through with keys that do nothing here)."""

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


class ConfirmBase(AppModalScreen):
    """A confirmation: dismisses with True (the confirm button, `action_answer(True)`) or False.
    The cancel button is focused first, so a stray Enter never confirms. No keys of its own: a
    subclass binds them (and names its confirm key in `CONFIRM_KEY`, its cancel key in
    `CANCEL_KEY` when the cancel label does not already say it)."""

    CONFIRM_KEY = ""
    CANCEL_KEY = ""
    FIRST_FOCUS = "#no"  # a subclass may focus its body instead (the promote diff, to scroll it)
    CSS_PATH = style("dialogs.tcss")

    def __init__(self, title: str, body: str, confirm_label: str = "Yes", *, cancel_label: str = "No",
                 variant: str = "error", name: str = "confirm") -> None:
        super().__init__(name=name, classes=name)
        self.title_text = title
        self.body_text = body
        self.confirm_label = confirm_label
        self.cancel_label = cancel_label
        self.variant = variant

    def compose(self) -> ComposeResult:
        cancel = f"{self.cancel_label} ({self.CANCEL_KEY})" if self.CANCEL_KEY else self.cancel_label
        with Vertical(id="dialog"):
            yield Static(Text(escape_controls(self.title_text)), id="title", markup=False)
            yield from self.compose_body()
            with Horizontal(classes="buttons"):
                yield Button(Text(cancel), id="no", variant="default")
                yield Button(Text(f"{self.confirm_label} ({self.CONFIRM_KEY})"), id="yes",
                             variant=self.variant)  # type: ignore[arg-type]
        yield AppFooter()

    def compose_body(self) -> ComposeResult:
        yield Static(Text(escape_controls(self.body_text)), id="body", markup=False)

    def on_mount(self) -> None:
        self.query_one(self.FIRST_FOCUS).focus()

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


class ConfirmScreen(ConfirmBase):
    """Dismisses with True (Yes / `y`) or False (No / `n` / escape). No is focused first, so a
    stray Enter never confirms a destructive action. Escape has its own action (`close`), so the
    footer lists it beside `n`."""

    CONFIRM_KEY = "y"
    CANCEL_KEY = "n"
    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n", "answer(False)", "No", id="confirm.no"),
        Binding("escape", "close", "Close", id="confirm.cancel"),
    ]
