"""The Memory browser's item list: its filters (kind, status), its columns for a listing and for a
search, one row per item as plain-`Text` cells, and the summary line and empty-list notice."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

from autopatch_tui.core import constants as C
from autopatch_tui.core.terminal_text import escape_controls
from autopatch_tui.tui.widgets.responsive_table import Col

KIND_OPTIONS: list[tuple[str, str]] = [
    ("All kinds", "all"),
    ("Preferences", "user_preference"),
    ("Decisions", "project_decision"),
    ("Discussions", "discussion_context"),
]
STATUS_OPTIONS: list[tuple[str, str]] = [(s.capitalize(), s) for s in C.ITEM_STATUSES]
KIND_SHORT = {"user_preference": "preference", "project_decision": "decision", "discussion_context": "discussion"}

# text columns share the free width (the statement twice the subject's share); on a narrow terminal
# the search's Match column leaves first, then Kind
LIST_COLUMNS = (Col("kind", "Kind", 10, drop=1), Col("subject", "Subject", 14, flex=1),
                Col("statement", "Statement", 18, flex=2))
SEARCH_COLUMNS = (*LIST_COLUMNS, Col("match", "Match", 8, drop=2))


@dataclass(frozen=True)
class Row:
    id: str
    kind: str
    subject: str
    statement: str
    match_type: str = ""


WORDS_KEY = "__words__"
"""The key of the label row between the recalled items and those that merely contain the words."""


def words_label(query_text: str) -> Row:
    return Row(WORDS_KEY, "", "Not recalled,", f"but containing {query_text!r}:", "")


def one_line(text: str) -> Text:
    """A table cell: plain text on one line, cut with an ellipsis."""
    return Text(escape_controls(" ".join(text.split()), one_line=True), no_wrap=True, overflow="ellipsis")


def row_cells(row: Row, *, with_match: bool) -> list[Text]:
    if row.id == WORDS_KEY:  # the label between the recalled items and those that only contain the words
        cells = [Text(""), Text(row.subject, style="italic"), Text(row.statement, style="italic", no_wrap=True,
                                                                    overflow="ellipsis")]
        return cells + [Text("")] if with_match else cells
    cells = [Text(KIND_SHORT.get(row.kind, row.kind)), one_line(row.subject), one_line(row.statement)]
    if with_match:
        cells.append(Text(row.match_type))
    return cells


def empty_text(query_text: str, problem: str, kind: str, status: str) -> str:
    """The detail pane's notice when the list (or the search) is empty."""
    if query_text:
        return problem or f"No active Memory item matches {query_text!r}."
    kind_ = "" if kind == "all" else f" {KIND_SHORT[kind]}"
    if status == "active":
        return (f"No active{kind_} Memory items yet. Memory forms in the background from your conversations: "
                "stated preferences, decisions and ongoing discussions.")
    return f"No {status}{kind_} Memory items."


def summary_text(query_text: str, problem: str, n: int, more: bool, kind: str, status: str,
                 words_at: int | None = None) -> Text:
    """The line above the list: how many items (or results) it shows, and of what."""
    if query_text:
        recalled, words = n, 0
        if words_at is not None:
            recalled, words = words_at, n - words_at - 1
        text = Text(f"Search {query_text!r}: {recalled} recalled (what the assistant would recall)"
                    + (f", {words} more contain the words" if words else "") + "; filters do not apply")
        if problem:
            text = Text(f"Search {query_text!r}: {problem}" + (f"; {words} item(s) contain the words" if words else ""))
        return text
    kind_ = "all kinds" if kind == "all" else KIND_SHORT[kind] + "s"
    return Text(f"{n}{'+' if more else ''} {status} item{'s' if n != 1 else ''} · {kind_}")
