"""Base screens: every worker state change is handed to the App, the one place that reports
worker errors (Textual delivers `Worker.StateChanged` only to the node that ran the worker)."""

from __future__ import annotations

from textual import on
from textual.screen import ModalScreen, Screen
from textual.worker import Worker


class AppScreen(Screen):
    @on(Worker.StateChanged)
    def _hand_worker_state_to_app(self, event: Worker.StateChanged) -> None:
        self.app.report_worker_state(event)  # type: ignore[attr-defined]


class AppModalScreen(ModalScreen):
    @on(Worker.StateChanged)
    def _hand_worker_state_to_app(self, event: Worker.StateChanged) -> None:
        self.app.report_worker_state(event)  # type: ignore[attr-defined]
