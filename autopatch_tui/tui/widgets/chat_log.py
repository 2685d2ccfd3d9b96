"""The conversation view. User text and notes are plain `Text` (never markup); the assistant's
answer is Markdown, streamed. The view follows the bottom until the user scrolls up."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.await_complete import AwaitComplete
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Markdown, Static
from textual.widgets._markdown import MarkdownStream

from autopatch_tui.core.memory.turn_memory import MemoryNote
from autopatch_tui.tui.widgets.markdown_view import markdown_view
from autopatch_tui.tui.widgets.memory_turn_note import MemoryTurnNote


class UserMessage(Static):
    def __init__(self, text: str) -> None:
        super().__init__(Text(text), markup=False)


class NoteMessage(Static):
    """A safe, plain-text note from the app (command output, warnings)."""

    def __init__(self, text: str, *, level: str = "info") -> None:
        super().__init__(Text(text), markup=False)
        self.add_class(f"-{level}")


class FailedTurnNote(NoteMessage):
    """A failed turn's note. It can take focus (Shift+Tab from the prompt): `r` resends `line`,
    the text the user sent, as a new turn."""

    can_focus = True

    def __init__(self, text: str, line: str) -> None:
        super().__init__(text, level="error")
        self.line = line


class AssistantMessage(Markdown):
    """An answer. `source` is exactly the saved text; what is drawn is its `markdown_view`."""

    def __init__(self, markdown: str = "", **kwargs: Any) -> None:
        self._saved: str | None = markdown
        super().__init__(markdown_view(markdown), **kwargs)

    def update(self, markdown: str) -> AwaitComplete:
        self._saved = markdown
        return super().update(markdown_view(markdown))

    def append(self, markdown: str) -> AwaitComplete:
        self._saved = None  # streaming: the source is what has arrived
        return super().append(markdown)

    @property
    def source(self) -> str:
        return self._saved if self._saved is not None else super().source


class ChatLog(VerticalScroll):
    def on_mount(self) -> None:
        self.anchor()

    async def add_user(self, text: str) -> UserMessage:
        widget = UserMessage(text)
        await self.mount(widget)
        return widget

    async def add_memory_note(self, turn_id: str, notes: list[MemoryNote], *, after: Widget) -> MemoryTurnNote:
        """What a turn's Memory work did, right under the turn (`after`: its answer or note)."""
        note = MemoryTurnNote(turn_id, notes)
        await self.mount(note, after=after)
        return note

    async def add_assistant(self, markdown: str) -> AssistantMessage:
        widget = AssistantMessage(markdown)
        await self.mount(widget)
        return widget

    async def add_note(self, text: str, *, level: str = "info") -> NoteMessage:
        note = NoteMessage(text, level=level)
        await self.mount(note)
        return note

    async def add_failed(self, text: str, line: str) -> FailedTurnNote:
        note = FailedTurnNote(text, line)
        await self.mount(note)
        return note

    async def start_answer(self) -> tuple[AssistantMessage, MarkdownStream]:
        widget = await self.add_assistant("")
        stream = Markdown.get_stream(widget)
        return widget, stream

    async def clear(self) -> None:
        await self.remove_children()
