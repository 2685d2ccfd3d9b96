"""The thread history's plain-`Text` notices and titles: the degraded notice, the detail pane when
no turn is shown and the turns pane's title (a thread's window, or a search). User text is never
parsed as markup."""

from __future__ import annotations

from rich.text import Text

from autopatch_tui.core.memory.history import ThreadInfo
from autopatch_tui.core.terminal_text import escape_controls


def degraded_notice_text(diagnostic: str) -> Text:
    return Text(f"Memory is degraded: {diagnostic}. The thread history is unavailable; open the Memory "
                "browser (F4) to export or clear it.")


def empty_detail_text(mode: str, loading: bool, thread_id: str | None) -> Text:
    """The detail pane when no turn is shown."""
    empty = ("Loading turns…" if mode == "thread" and loading else
             "No turns in this thread yet." if mode == "thread" and thread_id else
             "No matching turns." if mode == "search" else "")
    return Text(empty, style="italic")


def search_title_text(search_text: str, count: int, limit: int) -> Text:
    text = Text("Search “", style="bold")
    text.append(escape_controls(search_text, one_line=True))
    more = f" (first {limit})" if count >= limit else ""
    text.append(f"”: {count} matching turn(s){more}, newest first — Enter opens a turn in its thread",
                style="bold")
    return text


def thread_title_text(info: ThreadInfo, window_start: int, shown: int, has_more: bool) -> Text:
    text = Text(f"Thread {info.id}", style="bold")
    text.append(f"  ·  {info.status}  ·  {info.turns} turn(s)")
    if shown:
        text.append(f"  ·  showing {window_start + 1}–{window_start + shown}")
    if has_more:
        text.append("  (m: more)", style="dim")
    if window_start > 0:
        text.append("  (b: earlier)", style="dim")
    return text
