"""The status bar: model, Memory health and the items awaiting review, live job counts, the active
thread, and what the last request's prompt held — its context use ("ctx 38% of 32k"; "~ctx" when the
figure is the app's estimate because the server reported no usage) and the instruction files it
loaded ("AGENTS.md ×2")."""

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
    context: reactive[str] = reactive("")  # "ctx 38% of 32k" (`prompt_report.context_label`)
    instructions: reactive[str] = reactive("")  # "AGENTS.md ×2" (`prompt_report.instructions_label`)
    to_review: reactive[int] = reactive(0)  # Memory items awaiting review (contracts §8)

    def render(self) -> Text:
        """The full line, or — when the terminal is too narrow for it — the same facts shorter
        (the thread and a running step stay readable; the model name is cut first)."""
        width = self.size.width or 10_000
        for compact in (0, 1, 2):
            text = self._line(compact)
            if text.cell_len <= width:
                return text
        return text

    def _line(self, compact: int) -> Text:
        sep = "  │  " if compact == 0 else " │ "
        t = Text(no_wrap=True, overflow="ellipsis")
        model = self.model_label
        if compact < 2:
            t.append(" model: ", style="dim")
        else:
            t.append(" ")
            model = model if len(model) <= 14 else model[:13] + "…"
        t.append(model, style="bold" if self.model_label != "no model" else "italic")
        t.append(f"{sep}Memory: " if compact < 2 else f"{sep}mem ", style="dim")
        if self.health == "healthy" and self.to_review:  # healthy goes without saying: what waits for you
            t.append(f"{self.to_review} to review", style="bold")
        else:
            t.append(self.health, style="bold" if self.health == "healthy" else "bold reverse")
        t.append(f"{sep}jobs: " if compact < 2 else f"{sep}jobs ", style="dim")
        t.append(f"{self.pending} pending" if compact < 2 else f"{self.pending}")
        if self.failed:
            t.append(f", {self.failed} failed" if compact < 2 else f"+{self.failed}✗", style="bold")
        if self.thread_id:
            t.append(f"{sep}thread: ", style="dim")
            t.append(self.thread_id[-8:])
        if self.context:
            t.append(sep, style="dim")
            t.append(self.context)
        if self.instructions and compact < 2:
            t.append(" · " if self.context else sep, style="dim")
            t.append(self.instructions)
        if self.busy:
            t.append(sep, style="dim")
            t.append(self.busy, style="italic")
        return t
