"""An assistant's answer in the chat log: Markdown, streamed, its control characters escaped
(`core.terminal_text`): model text is never written raw to the terminal."""

from __future__ import annotations

from typing import Any

from textual.await_complete import AwaitComplete
from textual.widgets import Markdown

from autopatch_tui.core.terminal_text import escape_controls
from autopatch_tui.tui.widgets.markdown_view import markdown_view


class AssistantMessage(Markdown):
    """An answer. `source` is exactly the saved text; what is drawn is its `markdown_view`."""

    def __init__(self, markdown: str = "", **kwargs: Any) -> None:
        self._saved: str | None = markdown
        super().__init__(markdown_view(escape_controls(markdown)), **kwargs)

    def update(self, markdown: str) -> AwaitComplete:
        self._saved = markdown
        return super().update(markdown_view(escape_controls(markdown)))

    def append(self, markdown: str) -> AwaitComplete:
        self._saved = None  # streaming: the source is what has arrived
        return super().append(escape_controls(markdown))

    @property
    def source(self) -> str:
        return self._saved if self._saved is not None else super().source
