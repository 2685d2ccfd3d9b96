"""The note under the chat prompt: one line about the prompt itself (a line that was kept, a paste
kept with its line breaks, a paste refused and where it was saved). Hidden while it has nothing to
say; plain text, never markup (it may name a path)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from autopatch_tui.core.terminal_text import escape_controls


class PromptHint(Static):
    def __init__(self, **kwargs: object) -> None:
        super().__init__("", markup=False, **kwargs)  # type: ignore[arg-type]
        self.while_text: str | None = None  # shown only while the prompt holds this text
        self.shown = ""

    def on_mount(self) -> None:
        self.display = False

    def show(self, text: str, *, level: str = "info", while_text: str | None = None) -> None:
        self.shown, self.while_text = text, while_text
        self.set_class(level == "warning", "-warning")
        self.update(Text(escape_controls(text)))
        self.display = bool(text)

    def hide(self) -> None:
        if self.display:
            self.show("")
