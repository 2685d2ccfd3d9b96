"""The status bar: model, Memory health, live job counts and the active thread."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static


class StatusBar(Static):
    model_label: reactive[str] = reactive("no model")
    health: reactive[str] = reactive("healthy")
    pending: reactive[int] = reactive(0)
    failed: reactive[int] = reactive(0)
    thread_id: reactive[str] = reactive("")
    busy: reactive[str] = reactive("")

    def render(self) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(" model: ", style="dim")
        t.append(self.model_label, style="bold" if self.model_label != "no model" else "italic")
        t.append("  │  Memory: ", style="dim")
        t.append(self.health, style="bold" if self.health == "healthy" else "bold reverse")
        t.append("  │  jobs: ", style="dim")
        t.append(f"{self.pending} pending")
        if self.failed:
            t.append(f", {self.failed} failed", style="bold")
        if self.thread_id:
            t.append("  │  thread: ", style="dim")
            t.append(self.thread_id[-8:])
        if self.busy:
            t.append("  │  ", style="dim")
            t.append(self.busy, style="italic")
        return t
