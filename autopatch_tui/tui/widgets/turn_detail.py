"""One turn in full, in a scrolling pane: its header, scope, the user's text and the assistant's
answer. Turn text is user and model content: it is always a plain `Text`, never markup."""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from autopatch_tui.core.memory.history import TurnInfo
from autopatch_tui.tui.widgets.history_tables import short_time


def turn_detail_text(turn: TurnInfo) -> Text:
    out = Text()
    out.append(f"Turn {turn.sequence}", style="bold")
    out.append(f"  ·  {turn.intent}  ·  {turn.state}  ·  {short_time(turn.created_at)} UTC  ·  {turn.id}\n",
               style="dim")
    if turn.scope_paths:
        out.append("Scope: ", style="bold")
        out.append(", ".join(turn.scope_paths) + "\n")
    out.append("User\n", style="bold underline")
    out.append(turn.user_text + "\n")
    out.append("Assistant\n", style="bold underline")
    if turn.assistant_text:
        out.append(turn.assistant_text)
    else:
        out.append(f"(no answer: turn {turn.state})", style="italic")
    return out


class TurnDetail(VerticalScroll):
    """The pane; it holds one `Static` (composed by its screen) that shows the turn or a notice."""

    def show(self, turn: TurnInfo | None, empty: Text) -> None:
        """Show `turn` from its top, or the `empty` notice when there is none."""
        text = self.query_one(Static)
        if turn is None:
            text.update(empty)
            return
        text.update(turn_detail_text(turn))
        self.scroll_home(animate=False)
