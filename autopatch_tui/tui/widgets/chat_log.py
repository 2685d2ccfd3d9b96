"""The conversation view. User text and notes are plain `Text` (never markup); the assistant's
answer is Markdown, streamed (`assistant_message.py`, imported with the first answer shown, not
before the first frame: issue 23). Text from the store or the model is shown with its control
characters escaped (`core.terminal_text`), never written raw to the terminal.

Follow mode, as in every chat app: the view follows new output at the bottom. Scrolling away stops
following; scrolling back to the bottom (wheel, PageDown, the scrollbar), `follow()` (sending a
message, a slash command's output, ctrl+end, a click on the marker) resumes it. While not
following, a marker over the bottom row says "↓ new output" (it sits on a layer of its own, so
showing it changes no scroll geometry). (Textual's anchor alone stayed released when a scroll at
the bottom changed nothing, so the chat stopped following for good.)"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from autopatch_tui.core.terminal_text import escape_controls

if TYPE_CHECKING:
    from textual.widgets.markdown import MarkdownStream

    from autopatch_tui.core.memory.turn_memory import MemoryNote
    from autopatch_tui.tui.widgets.assistant_message import AssistantMessage
    from autopatch_tui.tui.widgets.memory_turn_note import MemoryTurnNote


def __getattr__(name: str) -> Any:
    if name == "AssistantMessage":
        from autopatch_tui.tui.widgets.assistant_message import AssistantMessage

        return AssistantMessage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


FOLLOW_HINT = " · scroll down, ctrl+end or click here to follow"


class UserMessage(Static):
    def __init__(self, text: str) -> None:
        super().__init__(Text(escape_controls(text)), markup=False)


class NoteMessage(Static):
    """A safe, plain-text note from the app (command output, warnings)."""

    def __init__(self, text: str, *, level: str = "info") -> None:
        super().__init__(Text(escape_controls(text)), markup=False)
        self.add_class(f"-{level}")

    def update(self, content: Any = "", *, layout: bool = True) -> None:  # type: ignore[override]
        if isinstance(content, Text):
            content = Text(escape_controls(content.plain), style=content.style)
        super().update(content, layout=layout)


class FailedTurnNote(NoteMessage):
    """A failed turn's note. It can take focus (Shift+Tab from the prompt): Enter resends `line`,
    the text the user sent, as a new turn. Letters typed while it has focus go to the prompt."""

    can_focus = True
    BINDINGS = [Binding("enter", "screen.retry", "Send again", id="chat.retry",
                        tooltip="send the focused failed turn again as a new turn (also: /retry)")]

    def __init__(self, text: str, line: str) -> None:
        super().__init__(text, level="error")
        self.line = line


class FollowMarker(Static):
    """"↓ new output" under the conversation while it does not follow; a click follows again."""

    class Clicked(Message):
        """The user clicked the marker: follow the conversation again."""

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.post_message(self.Clicked())


class ChatLog(VerticalScroll):
    DEFAULT_CSS = """
    ChatLog { layers: conversation marker; }
    ChatLog > FollowMarker { layer: marker; dock: bottom; }
    """

    class NeedOlder(Message):
        """The view reached its top while older turns of the thread are not shown yet."""

    class FollowChanged(Message):
        def __init__(self, following: bool, unseen: bool) -> None:
            super().__init__()
            self.following = following
            self.unseen = unseen  # output arrived since the view stopped following

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.following = True
        self.unseen = False
        self._released = False  # a scroll released Textual's anchor since the last `follow()`
        self.has_older = False  # the thread has older turns than those shown (the screen pages them in)

    def compose(self):  # type: ignore[no-untyped-def]
        yield FollowMarker(Text(""))

    def on_mount(self) -> None:
        self.query_one(FollowMarker).display = False
        self.anchor()

    def on_follow_marker_clicked(self, message: FollowMarker.Clicked) -> None:
        message.stop()
        self.follow()

    # --- follow mode --------------------------------------------------------------------
    def follow(self) -> None:
        """Follow the bottom again (and scroll there)."""
        self.anchor()
        self._released = False
        self._set_follow(True, False)

    def release_anchor(self) -> None:
        """Textual calls this for every scroll the user (or a focus change) makes."""
        super().release_anchor()
        self._released = True
        self.call_after_refresh(self._settle)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._settle()
        if self.has_older and round(new_value) <= 0 and old_value > new_value:
            self.post_message(self.NeedOlder())

    def watch_virtual_size(self, old_size: Size, new_size: Size) -> None:
        if new_size.height > old_size.height and not self.following:
            self._set_follow(False, True)

    def at_bottom(self) -> bool:
        bottom = self.max_scroll_y
        if bottom <= 0:  # nothing to scroll (a shrinking view can leave scroll_y below 0 for a while)
            return True
        return round(self.scroll_y) >= bottom and round(self.scroll_target_y) >= bottom

    def _settle(self) -> None:
        """After a scroll: at the bottom it follows again; elsewhere it does not."""
        if not self.is_attached:
            return
        if self.at_bottom():
            if self._released or not self.following:
                self.follow()  # also re-anchors after a scroll at the bottom that changed nothing
        elif self.following:
            self._set_follow(False, self.unseen)

    def _set_follow(self, following: bool, unseen: bool) -> None:
        if (following, unseen) != (self.following, self.unseen):
            self.following, self.unseen = following, unseen
            marker = self.query_one(FollowMarker)
            marker.display = not following
            marker.update(Text(("↓ new output" if unseen else "↓ more below") + FOLLOW_HINT))
            self.post_message(self.FollowChanged(following, unseen))

    # --- content ------------------------------------------------------------------------
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

    async def add_assistant(self, markdown: str, *, reveal: bool = False) -> AssistantMessage:
        from autopatch_tui.tui.widgets.assistant_message import AssistantMessage

        widget = AssistantMessage(markdown)
        await self.mount(widget)
        if reveal:
            self.follow()
        return widget

    async def add_note(self, text: str, *, level: str = "info", reveal: bool = False) -> NoteMessage:
        """`reveal`: the note answers the user (a slash command's output): follow to show it."""
        note = NoteMessage(text, level=level)
        await self.mount(note)
        if reveal:
            self.follow()
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

    def entries(self) -> list[Widget]:
        return [c for c in self.children if not isinstance(c, FollowMarker)]

    def first_entry(self) -> Widget | None:
        """The topmost entry of the conversation (not the follow marker), if any."""
        return next((c for c in self.children if not isinstance(c, FollowMarker)), None)

    async def mount_history(self, widgets: list[Widget], *, before: Widget | None) -> None:
        """Restored turns, in order, above `before` (what was sent or shown meanwhile stays below
        them), or at the end. Scrolled away from the bottom, the entry that was at the top stays put."""
        if not widgets:
            return
        top = self.first_entry() if not self.following else None
        old_height = self.virtual_size.height
        await self.mount_all(widgets, before=before) if before is not None else await self.mount_all(widgets)
        if top is not None:
            def keep_place() -> None:
                self.scroll_to(y=self.scroll_y + self.virtual_size.height - old_height, animate=False,
                               immediate=True)
            self.call_after_refresh(keep_place)

    async def clear(self) -> None:
        await self.remove_children([c for c in self.children if not isinstance(c, FollowMarker)])
        self.follow()
