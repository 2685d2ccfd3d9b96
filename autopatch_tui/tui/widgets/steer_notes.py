"""The chat's lines for Memory the user steers (issue 31): the receipt of `/remember`, the "not
remembered" line that keeps a refused candidate anyway (Enter on it: it takes focus with Shift+Tab
from the prompt, like a failed turn's note), and the quiet "Memory used: N · F4" line under an
answer, which Enter expands to the items with their quotes (and folds again).

Plain `Text`, never markup; every store text has its control characters escaped. A widget only
posts a message; the chat screen does the work in a thread worker."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Static

from autopatch_tui.core.memory.memory_used import UsedDetail, UsedItem
from autopatch_tui.core.terminal_text import one_line

KIND_WORDS = {"user_preference": "preference", "project_decision": "decision", "discussion_context": "discussion"}
MAX_TEXT = 140


def _short(text: str) -> str:
    text = one_line(" ".join(text.split()))
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"


def receipt_text(remembered: list, waiting: str | None) -> Text:  # remembered: [ItemSummary]
    """"remembered · preference · <statement> · mem-…" per item; the reason nothing ran yet."""
    t = Text()
    for n, item in enumerate(remembered):
        if n:
            t.append("\n")
        t.append("remembered", style="bold")
        t.append(f" · {KIND_WORDS.get(item.kind, item.kind)} · ")
        t.append(_short(item.statement))
        t.append(f" · {one_line(item.id)}", style="dim")
    if waiting:
        if remembered:
            t.append("\n")
        t.append("not yet remembered", style="bold")
        t.append(f" · {one_line(waiting)}")
    return t


class ReceiptNote(Static):
    """The receipt of a `/remember` (what was stored; refusals come as `RefusedNote`s)."""

    def __init__(self, text: Text) -> None:
        super().__init__(text, markup=False)


class RefusedNote(Static):
    """"not remembered · <rule in words>" for one refused candidate; Enter keeps it anyway."""

    can_focus = True
    BINDINGS = [Binding("enter", "keep_anyway", "Keep anyway", id="chat.keep_refused",
                        tooltip="keep the focused refused candidate anyway, as your decision (it goes through "
                                "consolidation and is marked kept)")]

    class Keep(Message):
        def __init__(self, note: RefusedNote) -> None:
            super().__init__()
            self.note = note

    def __init__(self, key: str | None, words: str, statement: str = "") -> None:
        self.key = key  # the rescue file's entry (None: not kept for rescue, e.g. a secret)
        self.words = words
        self.statement = statement
        self.done = False
        super().__init__(self._text(), markup=False)

    def _text(self, outcome: str = "") -> Text:
        t = Text()
        t.append("not remembered", style="bold")
        t.append(f" · {one_line(self.words)}")
        if self.statement:
            t.append(f" · {_short(self.statement)}")
        if outcome:
            t.append(f"  {outcome}", style="bold")
        elif self.key is not None:
            t.append("  (Enter on this line keeps it anyway)", style="dim")
        return t

    def action_keep_anyway(self) -> None:
        if self.key is not None and not self.done:
            self.post_message(self.Keep(self))

    def show_outcome(self, outcome: str) -> None:
        self.done = True
        self.update(self._text(outcome))


class MemoryUsedNote(Static):
    """"Memory used: 3 · F4" under an answer; Enter shows the items (how, what, the quote), again folds."""

    can_focus = True
    BINDINGS = [Binding("enter", "toggle", "Show / fold", id="chat.memory_used",
                        tooltip="show the Memory items that reached this answer (how, what they say, your quote); "
                                "again: fold them")]

    class Expand(Message):
        def __init__(self, note: MemoryUsedNote) -> None:
            super().__init__()
            self.note = note

    def __init__(self, turn_id: str, items: list[UsedItem]) -> None:
        self.turn_id = turn_id
        self.items = items
        self.details: list[UsedDetail] | None = None
        self.expanded = False
        super().__init__(used_text(items, None), markup=False)

    def action_toggle(self) -> None:
        if self.expanded:
            self.expanded = False
            self.update(used_text(self.items, None))
        elif self.details is None:
            self.post_message(self.Expand(self))
        else:
            self.show_details(self.details)

    def show_details(self, details: list[UsedDetail]) -> None:
        self.details = details
        self.expanded = True
        self.update(used_text(self.items, details))


def used_text(items: list[UsedItem], details: list[UsedDetail] | None) -> Text:
    t = Text()
    t.append(f"Memory used: {len(items)} · F4", style="dim")
    if details is None:
        t.append("  (Enter shows them)", style="dim")
        return t
    for d in details:
        t.append("\n  ")
        t.append(d.item.how, style="bold")
        kind = KIND_WORDS.get(d.kind, d.kind)
        t.append(f" · {kind} · " if kind else " · ")
        t.append(_short(d.statement))
        if d.quote:
            t.append(f" · “{_short(d.quote)}”", style="italic")
        t.append(f" · {one_line(d.item.id)} r{d.item.revision}", style="dim")
        if d.item.via:
            t.append(f" · via {one_line(d.item.via)} (promoted)", style="dim")
        if not d.current:
            t.append(" · since revised or forgotten", style="dim")
    return t
