"""The prompt: Enter sends, ctrl+j inserts a newline; `/command` and `@path` completion."""

from __future__ import annotations

import re
from collections.abc import Callable

from textual import events
from textual.message import Message
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option

MENTION = re.compile(r"(?:^|\s)@([^\s@]+)")
MAX_SUGGESTIONS = 12


def mentioned_paths(text: str) -> list[str]:
    return list(dict.fromkeys(m.group(1) for m in MENTION.finditer(text)))


class PromptInput(TextArea):
    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class Typed(Message):
        def __init__(self, token: str) -> None:
            super().__init__()
            self.token = token

    def __init__(self, **kwargs: object) -> None:
        super().__init__(soft_wrap=True, show_line_numbers=False, tab_behavior="focus", **kwargs)  # type: ignore[arg-type]

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            text = self.text
            if text.strip():
                self.post_message(self.Submitted(text))
            return
        if event.key == "ctrl+j":
            event.stop()
            event.prevent_default()
            start, end = self.selection
            self._replace_via_keyboard("\n", start, end)
            return
        await super()._on_key(event)

    def current_token(self) -> str:
        """The word being typed at the cursor (for completion)."""
        row, col = self.cursor_location
        line = self.document.get_line(row)[:col]
        if line.startswith("/") and row == 0:
            return line
        m = re.search(r"@[^\s@]*$", line)
        return m.group(0) if m else ""

    def replace_token(self, token: str, replacement: str) -> None:
        row, col = self.cursor_location
        start = (row, col - len(token))
        self.replace(replacement, start, (row, col))


class Suggestions(OptionList):
    """Completion choices under the prompt; hidden when empty."""

    def show(self, items: list[str], describe: Callable[[str], str] | None = None) -> None:
        self.clear_options()
        for item in items[:MAX_SUGGESTIONS]:
            self.add_option(Option(f"{item}  {describe(item)}" if describe else item, id=item))
        self.display = bool(items)
