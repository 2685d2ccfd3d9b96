"""A Memory item's detail, as plain `Text` (never parsed as markup): its fields, its revision chain,
and every provenance quote shown inside its source turn (`SourceList`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.style import Style
from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from autopatch_tui.core.errors import MemoryNotFoundError
from autopatch_tui.core.memory.history import TurnInfo
from autopatch_tui.core.memory.item_history import ItemHistory
from autopatch_tui.core.memory.models import ItemDetail, SourceQuote
from autopatch_tui.core.memory.word_diff import Segment
from autopatch_tui.core.terminal_text import escape_controls

if TYPE_CHECKING:
    from autopatch_tui.core.manager import MemoryManager

QUOTE_CONTEXT = 240
"""Characters of the source turn shown on each side of a quote in a long turn."""


def short_time(iso: str) -> str:
    """`2027-01-15T08:02:05.000Z` → `2027-01-15 08:02:05Z` (the full stamp is in the fields)."""
    return iso[:19].replace("T", " ") + "Z" if len(iso) >= 19 else iso


def locate_quote(text: str, quote: str) -> tuple[int, int] | None:
    """Where `quote` sits in `text`: exactly, else ignoring case and runs of whitespace."""
    if not quote.strip():
        return None
    start = text.find(quote)
    if start >= 0:
        return start, start + len(quote)
    words = quote.split()
    pattern = r"\s+".join(re.escape(w) for w in words)
    match = re.search(pattern, text, flags=re.IGNORECASE)
    return (match.start(), match.end()) if match else None


def quote_in_turn(turn_text: str, quote: str, quote_style: Style | str, *,
                  context: int = QUOTE_CONTEXT) -> tuple[Text, bool]:
    """The turn text (a window around the quote when long) with the quote as a style span.
    Returns (text, found)."""
    where = locate_quote(turn_text, quote)  # in the raw text; each piece shown is escaped
    if where is None:
        return Text(escape_controls(turn_text)), False
    start, end = where
    lo = max(0, start - context)
    hi = min(len(turn_text), end + context)
    out = Text()
    if lo > 0:
        out.append("… ")
    out.append(escape_controls(turn_text[lo:start]))
    out.append(escape_controls(turn_text[start:end]), style=quote_style)
    out.append(escape_controls(turn_text[end:hi]))
    if hi < len(turn_text):
        out.append(" …")
    return out, True


def fields_text(d: ItemDetail) -> Text:
    t = Text()
    t.append(escape_controls(d.statement), style="bold")
    t.append("\n\n")

    def field(label: str, value: str, value_style: str = "") -> None:
        t.append(f"{label:<10}", style="dim")
        t.append(escape_controls(value, one_line=True) or "—", style=value_style)
        t.append("\n")

    field("ID", d.id)
    field("Status", f"{d.status} (revision {d.revision})", "bold" if d.status != "active" else "")
    field("Kind", d.kind)
    field("Subject", d.subject)
    field("Strength", d.strength)
    field("Origin", d.origin)
    field("Recall", d.recall_mode)
    field("Paths", ", ".join(d.applies_to_paths) if d.applies_to_paths else "(whole project)")
    field("Aliases", ", ".join(d.aliases))
    field("Keywords", ", ".join(d.keywords))
    if d.thread_id:
        field("Thread", d.thread_id)
    field("Updated", d.updated_at)
    t.append("\nContent\n", style="dim")
    t.append(escape_controls(d.content) or "—")
    return t


def revisions_text(d: ItemDetail) -> Text:
    t = Text()
    for n, r in enumerate(d.revisions):
        if n:
            t.append("\n")
        t.append(f"r{r.revision} ", style="bold" if r.revision == d.revision else "")
        t.append(f"{r.status:<10} ", style="dim" if r.status != "active" else "")
        t.append(f"{short_time(r.updated_at)}  ", style="dim")
        t.append(escape_controls(" ".join(r.statement.split()), one_line=True))
    return t


def history_text(history: ItemHistory) -> Text:
    """The supersession around an item: what it replaced (items, with their dates and statements),
    what replaced it, and for an item no longer active a sentence saying so."""
    t = Text()
    if history.state_note:
        t.append(history.state_note, style="bold")
    for link in history.replaced:
        if t:
            t.append("\n")
        t.append("replaced ", style="dim")
        t.append(f"{link.id} r{link.revision} ")
        t.append(f"{short_time(link.updated_at)}  ", style="dim")
        t.append(escape_controls(" ".join(link.statement.split()), one_line=True), style="strike")
    if history.replaced_by is not None:
        link = history.replaced_by
        if t:
            t.append("\n")
        t.append("replaced by ", style="dim")
        t.append(f"{link.id} r{link.revision} ")
        t.append(f"{short_time(link.updated_at)}  ", style="dim")
        t.append(escape_controls(" ".join(link.statement.split()), one_line=True))
    return t


def diff_text(segments: list[Segment], deleted: Style | str, added: Style | str) -> Text:
    """A word diff: removed words struck through, added words marked."""
    t = Text()
    previous = None
    for seg in segments:
        if previous is not None and previous.op == "del" and seg.op == "add" \
                and not previous.text[-1:].isspace() and not seg.text[:1].isspace():
            t.append(" ")  # "~~public~~ every", not "~~public~~every": the words stay apart on screen
        t.append(escape_controls(seg.text), style=deleted if seg.op == "del" else added if seg.op == "add" else "")
        previous = seg
    return t


@dataclass(frozen=True)
class Provenance:
    source: SourceQuote
    turn: TurnInfo | None


def load_provenance(manager: MemoryManager, sources: list[SourceQuote]) -> list[Provenance]:
    """(In a worker) each quote with its source turn (None when the turn is gone)."""
    turns: dict[str, TurnInfo | None] = {}
    for s in sources:
        if s.turn_id not in turns:
            try:
                turns[s.turn_id] = manager.turn_info(s.turn_id)
            except MemoryNotFoundError:
                turns[s.turn_id] = None
    return [Provenance(s, turns[s.turn_id]) for s in sources]


class SourceList(OptionList):
    """Provenance quotes, each shown inside its source turn."""

    COMPONENT_CLASSES = OptionList.COMPONENT_CLASSES | {"sourcelist--quote", "sourcelist--head",
                                                        "sourcelist--missing"}

    def show_provenance(self, provenance: list[Provenance]) -> None:
        """Add one option per quote (ids `src-0`, `src-1`, …) and highlight the first."""
        self.add_options(self._source_options(provenance))
        if provenance:
            self.highlighted = 0

    def _source_options(self, provenance: list[Provenance]) -> list[Option]:
        quote_style = self.get_component_rich_style("sourcelist--quote")
        head_style = self.get_component_rich_style("sourcelist--head")
        missing_style = self.get_component_rich_style("sourcelist--missing")
        options = []
        for n, p in enumerate(provenance):
            text = Text()
            s, turn = p.source, p.turn
            if turn is None:
                text.append(f"{s.role} · turn not found (it may have been merged away)\n", style=head_style)
                text.append(escape_controls(s.quote), style=quote_style)
            else:
                text.append(f"{s.role} · turn {turn.sequence} · {turn.state} · {short_time(turn.created_at)}\n",
                            style=head_style)
                body = turn.user_text if s.role == "user" else turn.assistant_text
                shown, found = quote_in_turn(body, s.quote, quote_style)
                text.append_text(shown)
                if not found:
                    text.append("\nquote (not found verbatim in the turn): ", style=missing_style)
                    text.append(escape_controls(s.quote), style=quote_style)
            if n < len(provenance) - 1:
                text.append("\n")
            options.append(Option(text, id=f"src-{n}"))
        return options
