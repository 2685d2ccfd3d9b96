"""Quitting: run the exit flush with visible progress and a time bound, warn about retries and
failures, then exit whatever happened."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import LoadingIndicator, Static

from autopatch_tui.core.logs import log_path
from autopatch_tui.core.pipeline.exit_once import EXIT_FLUSH_SECONDS, ExitFlush, ExitOutcome
from autopatch_tui.tui.resources import style
from autopatch_tui.tui.screens.base import AppModalScreen
from autopatch_tui.tui.services import Services


class ExitFlushScreen(AppModalScreen):
    CSS_PATH = style("dialogs.tcss")

    def __init__(self, services: Services, *, flush: ExitFlush | None = None, reason: str = "quit",
                 limit: float = EXIT_FLUSH_SECONDS) -> None:
        """`flush`: the app's one ExitFlush (so two exit paths flush once); a fresh one otherwise."""
        super().__init__(name="exit")
        self.services = services
        self.flush = flush if flush is not None else ExitFlush(lambda: services.manager, limit=limit)
        self.reason = reason

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text("Saving Memory before exit…"), id="title")
            yield LoadingIndicator()
            yield Static(Text(""), id="detail")

    def on_mount(self) -> None:
        self.run_worker(self._flush, thread=True, group="exit", exit_on_error=False)

    def _flush(self) -> None:
        outcome = self.flush.run(self.reason)
        if outcome is None:  # another exit path flushes: wait for it within the same bound
            outcome = self.flush.wait(self.flush.limit)
        self.app.call_from_thread(self._done, outcome)

    async def _done(self, outcome: ExitOutcome | None) -> None:
        result = outcome.result if outcome is not None else None
        if outcome is None or outcome.timed_out:
            self.app.notify("Memory flush took too long; pending jobs resume at the next start.", severity="warning")
        elif result is None:
            where = log_path(self.services.settings.home)
            self.app.notify(f"Memory flush failed; pending jobs resume at the next start. See the log at {where}.",
                            severity="warning", markup=False)
        else:
            if result.retry_wait:
                self.app.notify(f"{result.retry_wait} Memory job(s) will be retried at the next start.",
                                severity="warning")
            if result.failed:
                self.app.notify(f"{result.failed} Memory job(s) failed; see `memory status`.", severity="warning")
        self.app.exit()
