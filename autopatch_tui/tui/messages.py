"""App-level messages. Worker threads only `post_message` these (or `call_from_thread`); handlers
on the App or a screen turn them into reactive state and widgets."""

from __future__ import annotations

from textual.message import Message

from autopatch_tui.core.events import Event


class CoreEvent(Message):
    """An event from the shared manager, re-posted on the UI thread."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class StreamDelta(Message):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class StreamReset(Message):
    """The text streamed so far was a tool-calling step, not the final answer."""


class ToolUsed(Message):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class WorkflowProgress(Message):
    """A repair workflow's step (scanning, drafting F2 …), shown in the status bar."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class TurnDone(Message):
    def __init__(self, answer: str, turn_id: str, intent: str) -> None:
        super().__init__()
        self.answer = answer
        self.turn_id = turn_id
        self.intent = intent


class TurnFailed(Message):
    def __init__(self, error: str, *, saved: bool = True, cancelled: bool = False) -> None:
        super().__init__()
        self.error = error
        self.saved = saved  # the RAW user text was stored (the turn is `failed`)
        self.cancelled = cancelled  # the user cancelled it (Escape)


class OpenTurnInHistory(Message):
    """Jump to a turn (from a provenance quote) in the history screen."""

    def __init__(self, turn_id: str) -> None:
        super().__init__()
        self.turn_id = turn_id
