"""Quitting: run the exit flush with visible progress and a time bound, warn about retries and
failures, then exit whatever happened."""

from __future__ import annotations

import threading

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import LoadingIndicator, Static

from autopatch_tui.core.pipeline.flush import ExitFlushResult
from autopatch_tui.tui.resources import style
from autopatch_tui.tui.screens.base import AppModalScreen
from autopatch_tui.tui.services import Services

EXIT_FLUSH_SECONDS = 30.0


class ExitFlushScreen(AppModalScreen):
    CSS_PATH = style("dialogs.tcss")

    def __init__(self, services: Services, *, limit: float = EXIT_FLUSH_SECONDS) -> None:
        super().__init__(name="exit")
        self.services = services
        self.limit = limit

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text("Saving Memory before exit…"), id="title")
            yield LoadingIndicator()
            yield Static(Text(""), id="detail")

    def on_mount(self) -> None:
        self.run_worker(self._flush, thread=True, group="exit", exit_on_error=False)

    def _flush(self) -> None:
        mgr = self.services.manager
        box: dict[str, ExitFlushResult] = {}
        runner = threading.Thread(target=lambda: box.setdefault("r", mgr.process_pending()), daemon=True)
        runner.start()
        runner.join(self.limit)
        result = box.get("r")
        self.app.call_from_thread(self._done, result)

    async def _done(self, result: ExitFlushResult | None) -> None:
        if result is None:
            self.app.notify("Memory flush took too long; pending jobs resume at the next start.", severity="warning")
        else:
            if result.retry_wait:
                self.app.notify(f"{result.retry_wait} Memory job(s) will be retried at the next start.",
                                severity="warning")
            if result.failed:
                self.app.notify(f"{result.failed} Memory job(s) failed; see `memory status`.", severity="warning")
        self.app.exit()
