"""The conversation view. User text and notes are plain `Text` (never markup); the assistant's
answer is Markdown, streamed (`assistant_message.py`). The view follows the bottom until the user
scrolls up. Textual's Markdown widget (and its parser) is imported with the first answer shown,
not before the first frame (issue 23): `AssistantMessage` is this module's lazily."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

if TYPE_CHECKING:
    from textual.widgets._markdown import MarkdownStream

    from autopatch_tui.core.memory.turn_memory import MemoryNote
    from autopatch_tui.tui.widgets.assistant_message import AssistantMessage
    from autopatch_tui.tui.widgets.memory_turn_note import MemoryTurnNote


def __getattr__(name: str) -> Any:
    if name == "AssistantMessage":
        from autopatch_tui.tui.widgets.assistant_message import AssistantMessage

        return AssistantMessage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


class ChatLog(VerticalScroll):
    def on_mount(self) -> None:
        self.anchor()

    async def add_user(self, text: str) -> UserMessage:
        widget = UserMessage(text)
        await self.mount(widget)
        return widget

    async def add_memory_note(self, turn_id: str, notes: list[MemoryNote], *, after: Widget) -> MemoryTurnNote:
        """What a turn's Memory work did, right under the turn (`after`: its answer or note)."""
        from autopatch_tui.tui.widgets.memory_turn_note import MemoryTurnNote

        note = MemoryTurnNote(turn_id, notes)
        await self.mount(note, after=after)
        return note

    async def add_assistant(self, markdown: str) -> AssistantMessage:
        from autopatch_tui.tui.widgets.assistant_message import AssistantMessage

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
        from textual.widgets import Markdown

        widget = await self.add_assistant("")
        stream = Markdown.get_stream(widget)
        return widget, stream

    async def clear(self) -> None:
        await self.remove_children()
