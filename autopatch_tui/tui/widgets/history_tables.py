"""The thread history's two tables: the threads (one row per thread) and the turns of a thread or of
a search (one row per turn, keyed by turn id), with the plain-`Text` cells they show. Turn text is
user and model content: it is always a plain `Text`, never markup."""

from __future__ import annotations

from rich.text import Text

from autopatch_tui.core.memory.history import ThreadInfo, TurnInfo
from autopatch_tui.core.terminal_text import escape_controls
from autopatch_tui.tui.widgets.responsive_table import Col, ResponsiveTable

PREVIEW_CHARS = 240

STATE_MARKS = {"completed": ("✓", ""), "failed": ("✗", "bold"), "interrupted": ("⊘", "italic"),
               "open": ("○", "dim italic")}


def short_time(iso: str | None) -> str:
    """`2027-01-15T08:00:00.000Z` → `2027-01-15 08:00` (UTC, as stored)."""
    if not iso:
        return ""
    return iso[:16].replace("T", " ")


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = escape_controls(" ".join(text.split()), one_line=True)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def state_text(state: str) -> Text:
    mark, style_ = STATE_MARKS.get(state, ("?", ""))
    return Text(f"{mark} {state}", style=style_, no_wrap=True)


def thread_cells(t: ThreadInfo) -> list[Text]:
    status = Text(("● " if t.status == "active" else "○ ") + t.status,
                  style="bold" if t.status == "active" else "")
    return [Text(t.id), status, Text(short_time(t.created_at)), Text(short_time(t.archived_at)),
            Text(short_time(t.last_turn_at)), Text(str(t.turns), justify="right")]


def turn_cells(t: TurnInfo, *, with_thread: bool = False) -> list[Text]:
    cells = [Text(str(t.sequence), justify="right"), Text(t.intent), state_text(t.state),
             Text(short_time(t.created_at)),
             Text(preview(t.user_text), no_wrap=True, overflow="ellipsis")]
    if with_thread:
        cells.insert(0, Text("…" + t.thread_id[-10:]))
    return cells


# on a narrow terminal Archived leaves first, then Created; the thread, its status, its last turn
# and its turn count stay
THREAD_COLUMNS = (Col("id", "Thread", 30), Col("status", "Status", 10), Col("created", "Created (UTC)", 16, drop=2),
                  Col("archived", "Archived", 16, drop=3), Col("last", "Last turn", 16, drop=1),
                  Col("turns", "Turns", 5))


class ThreadTable(ResponsiveTable):
    """Active and archived threads with dates and turn counts, keyed by thread id."""

    def add_thread_columns(self) -> None:
        self.set_spec(THREAD_COLUMNS)

    def show_threads(self, threads: list[ThreadInfo]) -> None:
        self.clear()
        for t in threads:
            self.add_row(*thread_cells(t), key=t.id)


# the Text column takes the free width; on a narrow terminal Intent leaves first, then Created, then #
TURN_COLUMNS = (Col("seq", "#", 6, drop=1), Col("intent", "Intent", 19, drop=3), Col("state", "State", 13),
                Col("created", "Created (UTC)", 16, drop=2), Col("text", "Text", 20, flex=1))
SEARCH_COLUMNS = (Col("thread", "Thread", 12), *TURN_COLUMNS)


class TurnTable(ResponsiveTable):
    """Turns keyed by turn id: a thread's loaded window, or search results (with a Thread column)."""

    def set_turn_columns(self, mode: str) -> None:
        self.set_spec(SEARCH_COLUMNS if mode == "search" else TURN_COLUMNS)

    def add_turn_rows(self, turns: list[TurnInfo], *, with_thread: bool = False) -> None:
        for t in turns:
            if t.id not in self.rows:
                self.add_row(*turn_cells(t, with_thread=with_thread), key=t.id)

    def show_turns(self, turns: list[TurnInfo], focus: str | None, *, with_thread: bool = False) -> int | None:
        """Show exactly `turns`; the cursor goes to `focus` when it is one of them (its row is returned)."""
        self.clear()
        self.add_turn_rows(turns, with_thread=with_thread)
        index = {t.id: i for i, t in enumerate(turns)}
        if focus not in index:
            return None
        self.move_cursor(row=index[focus], animate=False, scroll=True)
        return index[focus]

    def center_row(self, row: int) -> None:
        if row < self.row_count:
            target = max(0, row - max(0, self.scrollable_content_region.height // 2))
            self.scroll_to(y=target, animate=False)

    def cursor_key(self) -> str | None:
        if self.row_count == 0:
            return None
        try:
            return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except Exception:  # noqa: BLE001 - an empty or rebuilt table has no cursor cell
            return None
