"""The help screen (F1, or `?` where no text field has focus): the keys of the screen it was opened
on, by binding id, generated from that screen's live bindings (a user keymap shows its keys), then
the keys that work everywhere. The chat screen adds the prompt's own keys."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from autopatch_tui.tui.keys_doc import PROMPT_KEYS, KeyRow, key_label, row
from autopatch_tui.tui.resources import style
from autopatch_tui.tui.screens.base import AppModalScreen
from autopatch_tui.tui.textual_compat import app_keymap, node_bindings
from autopatch_tui.tui.widgets.footer import AppFooter


def live_rows(screen: Screen) -> tuple[list[KeyRow], list[KeyRow]]:
    """(this screen's keys, the keys of everywhere): every binding with an id of the focused
    widget's chain, the screen and the App, with the key it has now (after the user's keymap).
    Letter keys are listed even while a text field has focus (Textual leaves them out of the live
    chain then, because they type instead)."""
    app = screen.app
    focused = screen.focused
    chain = list(focused.ancestors_with_self) if focused is not None else []
    nodes = [n for n in chain if n is not screen and n is not app] + [screen, app]
    own: list[KeyRow] = []
    everywhere: list[KeyRow] = []
    seen: set[str] = set()
    for node in nodes:
        target = everywhere if node is app else own
        bindings = node_bindings(node)
        keymap = app_keymap(app)
        if keymap:
            bindings.apply_keymap(keymap)
        for key, group in bindings.key_to_bindings.items():
            for binding in group:
                if binding.id and binding.id not in seen:
                    seen.add(binding.id)
                    target.append(row(binding, key))
    return own, everywhere


def rows_table(rows: list[KeyRow]) -> Table:
    table = Table(box=None, padding=(0, 2), expand=True, show_header=True, header_style="bold")
    table.add_column("key", no_wrap=True)
    table.add_column("name", no_wrap=True)
    table.add_column("does", ratio=1)
    table.add_column("id", no_wrap=True, style="dim")
    for r in rows:
        table.add_row(Text(r.key, style="bold"), Text(r.name), Text(r.does), Text(r.id))
    return table


class HelpScreen(AppModalScreen):
    CSS_PATH = style("dialogs.tcss")
    BINDINGS = [Binding("escape", "close", "Close", id="help.close")]

    def __init__(self, screen: Screen, title: str) -> None:
        super().__init__(name="help", classes="help")
        self.own, self.everywhere = live_rows(screen)
        self.title_text = title
        self.prompt_keys = screen.name == "chat"

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            yield Static(Text(f"Keys — {self.title_text}", style="bold"), id="help-title")
            with VerticalScroll(id="help-body"):
                yield Static(rows_table(self.own) if self.own else Text("This screen has no keys of its own."),
                             id="help-screen-keys")
                if self.prompt_keys:
                    yield Static(Text("The prompt", style="bold"), classes="help-section")
                    prompt = Table(box=None, padding=(0, 2), expand=True, show_header=False)
                    prompt.add_column(no_wrap=True)
                    prompt.add_column(ratio=1)
                    for key, text in PROMPT_KEYS:
                        prompt.add_row(Text(key_label(key), style="bold"), Text(text))
                    yield Static(prompt, id="help-prompt-keys")
                yield Static(Text("Everywhere", style="bold"), classes="help-section")
                yield Static(rows_table(self.everywhere), id="help-app-keys")
        yield AppFooter()

    def action_close(self) -> None:
        self.dismiss(None)
