"""The line(s) under a chat turn that say what its Memory work did, once it has landed:

    remembered · preference · Always use type hints  (F4 to review)
    updated · decision · ~~Lint with flake8.~~ → Lint with ruff.  (F4 to review)
    not remembered · one-off request

Plain `Text` (never markup); the statements are the user's own data, shown in their own chat only."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from autopatch_tui.core.memory.turn_memory import MemoryNote

KIND_WORDS = {"user_preference": "preference", "project_decision": "decision", "discussion_context": "discussion"}
MAX_STATEMENT = 160


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_STATEMENT else text[:MAX_STATEMENT - 1] + "…"


def note_text(notes: list[MemoryNote]) -> Text:
    t = Text()
    for n, note in enumerate(notes):
        if n:
            t.append("\n")
        kind = KIND_WORDS.get(note.kind, note.kind)
        if note.outcome == "remembered":
            t.append("remembered", style="bold")
            t.append(f" · {kind} · ")
            t.append(_short(note.statement))
            t.append("  (F4 to review)", style="dim")
        elif note.outcome == "updated":
            t.append("updated", style="bold")
            t.append(f" · {kind} · ")
            t.append(_short(note.old_statement), style="strike")
            t.append(" → ")
            t.append(_short(note.statement))
            t.append("  (F4 to review)", style="dim")
        elif note.outcome == "failed":
            t.append("not processed", style="bold")
            t.append(f" · {note.reason}")
        else:
            t.append("not remembered", style="bold")
            t.append(f" · {note.reason}" + (f" (×{note.count})" if note.count > 1 else ""))
    return t


class MemoryTurnNote(Static):
    def __init__(self, turn_id: str, notes: list[MemoryNote]) -> None:
        super().__init__(note_text(notes), markup=False)
        self.turn_id = turn_id
        self.notes = notes
