"""Base screens: every worker state change is handed to the App, the one place that reports
worker errors (Textual delivers `Worker.StateChanged` only to the node that ran the worker).

They also hold the rules every screen shares (issue 20, item 3):

* typing: `typing_target` names the widget printable keys go to (the App routes them there,
  `tui/typing.py`): by default the focused text field, so a letter typed into a field never
  fires a screen's key;
* the screen's field: a screen with a search field (`FIELD`) focuses it whenever it is shown (the
  App's `show` calls `focus_home`; coming back from a dialog keeps the focus it had), after
  Escape, and when its own F-key is pressed again;
* Escape means the same everywhere: first it clears the field (`clear_field`), then it leaves."""

from __future__ import annotations

from textual import events, on
from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.widgets import Input
from textual.worker import Worker

from autopatch_tui.tui.typing import is_text_field


class _SharedRules:
    FIELD: str | None = None  # the selector of the screen's search field, if it has one

    def typing_target(self, event: events.Key) -> Widget | None:
        """Where a printable key goes: the focused text field (None: the key goes its usual way)."""
        focused = self.focused  # type: ignore[attr-defined]
        return focused if is_text_field(focused) else None

    def field(self) -> Input | None:
        if self.FIELD is None:
            return None
        found = self.query(self.FIELD)  # type: ignore[attr-defined]
        widget = found.first() if found else None
        return widget if isinstance(widget, Input) and widget.display else None

    def focus_home(self) -> None:
        """The screen's first place: its field (the screen's own F-key pressed again lands here)."""
        field = self.field()
        if field is not None:
            field.focus()

    def clear_field(self) -> bool:
        """Escape's first step: a field with text is emptied and focused. True when it did."""
        field = self.field()
        if field is None or not field.value:
            return False
        field.value = ""
        field.focus()
        return True


class AppScreen(_SharedRules, Screen):
    @on(Worker.StateChanged)
    def _hand_worker_state_to_app(self, event: Worker.StateChanged) -> None:
        self.app.report_worker_state(event)  # type: ignore[attr-defined]

    back_to: str | None = None  # the screen that opened this one for a look (e.g. the inbox's `j`)

    def action_back(self) -> None:
        """Escape: clear the field first, then back where the user came from — the screen that
        opened this one for a look (`back_to`, once), else chat (queued, so a view may call it directly)."""
        if self.clear_field():
            return
        target, self.back_to = self.back_to or "chat", None
        self.app.call_later(self.app.run_action, f"show({target!r})")


class AppModalScreen(_SharedRules, ModalScreen):
    @on(Worker.StateChanged)
    def _hand_worker_state_to_app(self, event: Worker.StateChanged) -> None:
        self.app.report_worker_state(event)  # type: ignore[attr-defined]
