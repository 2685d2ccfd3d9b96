"""One turn in full, in a scrolling pane: its header, scope, the user's text and the assistant's
answer. The user's text is a plain `Text`, never markup; the assistant's answer is rendered as
Markdown, as the chat shows it (Markdown never interprets Rich markup)."""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Markdown, Static

from autopatch_tui.core.memory.history import TurnInfo
from autopatch_tui.core.terminal_text import escape_controls
from autopatch_tui.tui.widgets.history_tables import short_time
from autopatch_tui.tui.widgets.markdown_view import markdown_view


def turn_detail_text(turn: TurnInfo) -> Text:
    out = Text()
    out.append(f"Turn {turn.sequence}", style="bold")
    out.append(f"  ·  {turn.intent}  ·  {turn.state}  ·  {short_time(turn.created_at)} UTC  ·  {turn.id}\n",
               style="dim")
    if turn.memory_used:  # issue 31.3: what shaped this answer, by ID (the chat's line shows the quotes)
        out.append(f"Memory used: {len(turn.memory_used)}", style="bold")
        out.append(" · " + " · ".join(
            f"{u.how} {escape_controls(u.id)} r{u.revision}" + (f" via {escape_controls(u.via)}" if u.via else "")
            for u in turn.memory_used) + "\n", style="dim")
    if turn.scope_paths:
        out.append("Scope: ", style="bold")
        out.append(escape_controls(", ".join(turn.scope_paths)) + "\n")
    out.append("User\n", style="bold underline")
    out.append(escape_controls(turn.user_text) + "\n")
    out.append("Assistant", style="bold underline")
    if not turn.assistant_text:
        out.append(f"\n(no answer: turn {turn.state})", style="italic")
    return out


class TurnDetail(VerticalScroll):
    """The pane; it holds a `Static` (the header, the user's text, or a notice) and a `Markdown`
    (the answer), both composed by its screen."""

    _shown: tuple[TurnInfo | None, Text | None] | None = None

    def show(self, turn: TurnInfo | None, empty: Text) -> None:
        """Show `turn` from its top, or the `empty` notice when there is none. Showing what is
        already shown does nothing (a screen's first open asked for the same turn twice: its
        Markdown re-parsed and re-mounted, one more layout; issue 14)."""
        key = (turn, empty if turn is None else None)
        if key == self._shown:
            return
        self._shown = key
        text = self.query_one(Static)
        answer = self.query_one(Markdown)
        if turn is None:
            text.update(empty)
            answer.display = False
            return
        text.update(turn_detail_text(turn))
        answer.display = bool(turn.assistant_text)
        answer.update(markdown_view(escape_controls(turn.assistant_text or "")))
        self.scroll_home(animate=False)
