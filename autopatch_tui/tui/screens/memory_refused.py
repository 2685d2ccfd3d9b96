"""The "Not remembered" view of the Memory browser (issue 31.2): the last refused candidates (the
private rescue file, newest first) with the rule in words, the statement, your quote and its turn.
Enter keeps the highlighted one anyway, as your decision (consolidation, marked kept, its history
names the rule); `j` opens its turn in the history. No other letter acts here (issue #20).

Every manager call runs in a thread worker; store text is plain `Text` with its controls escaped."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Static

from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.core.memory.refused_store import Refused
from autopatch_tui.core.terminal_text import one_line, printable
from autopatch_tui.tui.screens.memory_list_view import MemoryListView
from autopatch_tui.tui.screens.memory_list import KIND_SHORT
from autopatch_tui.tui.services import Services
from autopatch_tui.tui.widgets.responsive_table import Col, ResponsiveTable

COLUMNS = (Col("rule", "Why not", 18), Col("quote", "Your words", 12, flex=1))
EMPTY = ("Nothing refused lately. When Memory does not keep something you said (a one-off, a question, a "
         "fact about the code), it waits here for a while: Enter keeps it anyway.")


def refused_detail_text(e: Refused) -> Text:
    t = Text()
    kind = KIND_SHORT.get(str(e.candidate.get("kind", "")), str(e.candidate.get("kind", "")))
    t.append(f"not remembered · {e.words} ({one_line(e.rule)})\n", style="dim")
    t.append(printable(str(e.candidate.get("statement", ""))), style="bold")
    t.append(f"\n{kind}\n\n", style="dim")
    t.append("Your words: ", style="dim")
    t.append(f"“{printable(e.quote)}”")
    t.append(f"\nturn {one_line(e.turn_id)} (j opens it)\n\n", style="dim")
    t.append("Enter keeps it anyway, as your decision: it is stored with your quote, marked kept, and its "
             "history says it was kept over this rule.", style="italic")
    return t


class RefusedView(MemoryListView):
    TABLE_ID = "rf-items"
    LOAD_GROUP = "rf-list"

    BINDINGS = [
        Binding("enter", "keep", "Keep anyway", id="refused.keep", priority=True,
                tooltip="keep the highlighted refused candidate anyway, as your decision"),
        Binding("j", "open_turn", "Its turn", id="refused.turn", tooltip="open the turn it came from"),
    ]

    def __init__(self, services: Services, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.services = services
        self.entries: list[Refused] = []
        self._gen = 0

    def compose(self) -> ComposeResult:
        yield Static(Text(""), id="rf-title", markup=False)
        with Horizontal(id="rf-body"):
            yield ResponsiveTable(id="rf-items", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="rf-detail"):
                yield Static(Text(""), id="rf-fields", markup=False)

    def on_mount(self) -> None:
        self.table.set_spec(COLUMNS)

    def _load(self, gen: int) -> None:
        from autopatch_tui.core.memory import steering

        try:
            entries = steering.refused(self.services.manager)
        except (AutopatchError, OSError) as exc:
            self.app.call_from_thread(self._show, gen, [], str(exc))
            return
        self.app.call_from_thread(self._show, gen, entries, "")

    def _show(self, gen: int, entries: list[Refused], problem: str) -> None:
        if gen != self._gen:
            return
        old = self.table.cursor_row if self.entries else 0
        self.entries = entries
        title = problem or (f"Not remembered: the last {len(entries)} refused, newest first · Enter keeps one "
                            "anyway · j opens its turn" if entries else "Not remembered")
        self.query_one("#rf-title", Static).update(Text(title, style="dim"))
        table = self.table
        table.clear()
        for e in entries:
            table.add_row(Text(one_line(e.words)), Text(f"“{one_line(e.quote)}”"), key=e.key)
        if not entries:
            self.query_one("#rf-fields", Static).update(Text(EMPTY, style="italic"))
            self.app.refresh_bindings()
            return
        index = min(old, len(entries) - 1)
        table.move_cursor(row=index, animate=False)
        self._detail(index)

    def _detail(self, index: int) -> None:
        if 0 <= index < len(self.entries):
            self.query_one("#rf-fields", Static).update(refused_detail_text(self.entries[index]))

    @on(DataTable.RowHighlighted, "#rf-items")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row == event.data_table.cursor_row:
            self._detail(event.cursor_row)

    def _current(self) -> Refused | None:
        row = self.table.cursor_row
        return self.entries[row] if self.entries and 0 <= row < len(self.entries) else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "keep" and not self.table.has_focus:
            return False
        if action in ("keep", "open_turn"):
            return True if self._current() is not None else None
        return True

    def action_keep(self) -> None:
        entry = self._current()
        if entry is None:
            return
        self.query_one("#rf-fields", Static).update(Text("keeping…", style="italic"))

        def work() -> None:
            from autopatch_tui.core.memory import steering

            try:
                item = steering.keep_refused_key(self.services.manager, entry.key)
            except AutopatchError as exc:
                self.app.call_from_thread(self.app.notify, f"Not kept: {exc}", severity="warning", markup=False)
            else:
                self.app.call_from_thread(self.app.notify, f"Kept anyway: {one_line(item.id)}", markup=False)
            self.app.call_from_thread(self.reload)

        self._run(work, "rf-write")

    def action_open_turn(self) -> None:
        entry = self._current()
        if entry is None:
            return
        from autopatch_tui.tui.screens.memory_views import open_turn_in_history

        self.app.call_later(open_turn_in_history, self.app, entry.turn_id)
