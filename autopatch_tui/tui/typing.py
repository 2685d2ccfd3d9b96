"""Where typed text goes, and how much work each key costs (issue 20, items 2 and 5).

* Routing: a printable key goes to the current screen's typing target (`typing_target`): on the
  chat screen always the prompt, whatever widget has focus (the log, a failed turn's note, the
  completion list), so text typed there is never lost and a letter never fires a screen action;
  elsewhere the focused text field, if any. Non-printable keys (ctrl+…, F-keys, Escape, Enter)
  go their usual way.
* Coalescing: printable keys of one burst reach their field as one insert (`TypedText`, a Paste
  event). A terminal without bracketed paste types a paste key by key; inserting them one by one
  re-wrapped and re-measured the whole prompt per key, so a 122 KB paste froze the app for
  minutes. The App holds printable keys and delivers them when the keys already queued have been
  read (a callback queued behind them) or before any other input event, so order is kept and a
  single typed key still arrives at once.

The App calls `hold` for every input key it receives (before bindings) and `flush` before every
other input event; nothing here imports screens."""

from __future__ import annotations

from collections.abc import Callable

from textual import events
from textual.widget import Widget
from textual.widgets import Input, TextArea


class TypedText(events.Paste):
    """Printable keys of one burst, delivered to their text field as one insert: fields handle it
    as the paste it is (`_on_paste`); the App ignores it when it bubbles back up. `series`: the
    keystroke run its keys came in (`key_bursts.py`; pieces of one paste share it), or None."""

    def __init__(self, text: str, series: int | None = None) -> None:
        super().__init__(text)
        self.series = series


TypedText.handler_name = events.Paste.handler_name  # dispatched to `_on_paste` / `on_paste`


def is_text_field(widget: Widget | None) -> bool:
    """A widget that takes typed text (an editable Input or TextArea)."""
    if isinstance(widget, TextArea):
        return not widget.read_only
    return isinstance(widget, Input) and not widget.disabled


def typed_character(event: events.Key) -> str | None:
    """The text a key types, or None (ctrl+…, F-keys, Enter, Tab, arrows…)."""
    return event.character if event.is_printable and event.character else None


class TypingBuffer:
    """The App's held printable keys: one target, one pending delivery."""

    def __init__(self, schedule: Callable[[Callable[[], None]], object]) -> None:
        self._schedule = schedule  # App.call_later: runs after the messages already queued
        self._target: Widget | None = None
        self._chars: list[str] = []
        self._scheduled = False
        self._series: int | None = None

    @property
    def pending(self) -> int:
        return len(self._chars)

    def hold(self, target: Widget, text: str, series: int | None = None) -> None:
        """Hold `text` (a key's character, or a burst's of keystroke run `series`) for `target`."""
        if target is not self._target or series != self._series:
            self.flush()
            self._target, self._series = target, series
        self._chars.append(text)
        if not self._scheduled:
            self._scheduled = True
            self._schedule(self._scheduled_flush)

    def _scheduled_flush(self) -> None:
        self._scheduled = False
        self.flush()

    def flush(self) -> None:
        """Deliver the held text to its field now (as one insert)."""
        if not self._chars:
            return
        text, target = "".join(self._chars), self._target
        self._chars.clear()
        if target is not None and target.is_attached:
            target.post_message(TypedText(text, self._series))

    def drop(self) -> None:
        """Forget the held text (the app is quitting: nothing typed after that is kept)."""
        self._chars.clear()
