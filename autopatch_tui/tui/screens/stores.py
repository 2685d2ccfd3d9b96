"""The store list: every project store this user's app knows (name, label, root, fact count,
retired), and the way into the merge dialog ("Find duplicate stores").

The registry and the store files are read in a thread worker; the rows come back as a message.
Labels and roots are shown as plain `Text`, never parsed as markup."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from rich.console import JustifyMethod
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button, DataTable, Static
from textual.worker import Worker, WorkerState

from autopatch_tui.core.stores.scan import ScanResult
from autopatch_tui.core.errors import UsageError
from autopatch_tui.core.stores.service import MergeError, StoreService
from autopatch_tui.core.terminal_text import escape_controls
from autopatch_tui.tui.resources import style
from autopatch_tui.tui.screens.base import AppScreen
from autopatch_tui.tui.screens.merge_dialog import MergeDialog, StoresChanged
from autopatch_tui.tui.screens.text_prompt import TextPromptScreen
from autopatch_tui.tui.services import Services
from autopatch_tui.tui.widgets.footer import AppFooter
from autopatch_tui.tui.widgets.responsive_table import Col, ResponsiveTable

WORKER_GROUPS = ("stores-load",)
# Label and Root take the free width (Root twice Label's share); on a narrow terminal Facts leaves
# first, then Label; the store name and its state (live, current, retired) never do. A long root is
# cut from the left: two checkouts' roots differ at their end (…/src/shop-api, …/old/shop-api)
COLUMNS = (Col("store", "Store", 34), Col("label", "Label", 10, flex=1, drop=1), Col("root", "Root", 12, flex=2, cut_left=True),
           Col("facts", "Facts", 6, drop=2), Col("state", "State", 7))


def current_store_name(services: Services) -> str | None:
    """The store this app writes to: the living holder when the checkout was merged away."""
    mgr = services.manager
    redirect = getattr(mgr, "redirect", None)
    if redirect is not None:
        return redirect.holder
    store = getattr(mgr, "store", None)
    identity = getattr(store, "identity", None)
    return getattr(identity, "store_name", None)


def make_store_service(services: Services) -> StoreService:
    """The service the CLI builds (`cli.store_cmds.store_service`), with the app's model and clock."""
    mgr = services.manager
    return StoreService(services.settings, clock=mgr.clock, model=mgr.memory_model)


@dataclass(frozen=True)
class StoreRow:
    store: str
    label: str
    root: str
    fact_count: int
    retired: bool

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StoreRow:
        return cls(str(d.get("store") or ""), str(d.get("label") or ""), str(d.get("root") or ""),
                   int(d.get("fact_count") or 0), bool(d.get("retired")))


def cell(text: str, *, justify: JustifyMethod = "left") -> Text:
    """A table cell: plain text on one line (never markup, control characters shown as escapes),
    cut with an ellipsis."""
    return Text(escape_controls(" ".join(text.split()), one_line=True) or "-", no_wrap=True, overflow="ellipsis",
                justify=justify)


class StoresScreen(AppScreen):
    CSS_PATH = style("stores.tcss")
    BINDINGS = [
        Binding("escape", "back", "Back", id="stores.back"),
        Binding("d", "scan", "Duplicates", id="stores.scan", tooltip="find duplicate stores (the merge scan)"),
        Binding("r", "reload", "Reload", id="stores.reload"),
        Binding("a", "add", "Add store", id="stores.add"),
        Binding("l", "label", "Label", id="stores.label"),
    ]

    class Loaded(Message):
        def __init__(self, rows: list[StoreRow]) -> None:
            super().__init__()
            self.rows = rows

    def __init__(self, services: Services, *, store_service: StoreService | None = None) -> None:
        super().__init__(name="stores")
        self.services = services
        self.store_service = store_service if store_service is not None else make_store_service(services)
        self.current = current_store_name(services)
        self.rows: list[StoreRow] = []
        self.loading = False

    def compose(self) -> ComposeResult:
        yield Static(Text("Project stores"), id="stores-title")
        yield Static(Text("Reading the store registry…"), id="stores-summary")
        yield ResponsiveTable(id="stores-table", cursor_type="row", zebra_stripes=True)
        with Horizontal(id="stores-actions"):
            yield Button(Text("Find duplicate stores (d)"), id="stores-scan", variant="primary")
            yield Button(Text("Reload (r)"), id="stores-reload")
            yield Button(Text("Add store (a)"), id="stores-add")
            yield Button(Text("Label (l)"), id="stores-label")
        yield AppFooter()

    def on_mount(self) -> None:
        table = self.query_one(ResponsiveTable)
        table.set_spec(COLUMNS)
        table.focus()
        if hasattr(self.app, "store_generation"):
            self.watch(self.app, "store_generation", self._store_reopened, init=False)
        self.reload()

    def _store_reopened(self, _generation: int) -> None:
        """The app reopened on the holder of its merged-away store: the old manager's model client is
        closed, so the store service (and an open merge dialog's) is rebuilt on the new one."""
        self.store_service = make_store_service(self.services)
        self.current = current_store_name(self.services)
        for screen in self.app.screen_stack:
            if isinstance(screen, MergeDialog):
                screen.service = self.store_service
                screen.current_store = self.current
        self.reload()

    # --- loading ------------------------------------------------------------------------
    def reload(self) -> None:
        self.loading = True
        self.run_worker(self._load, thread=True, group="stores-load", exclusive=True, exit_on_error=False)

    def _load(self) -> None:
        rows = [StoreRow.from_dict(d) for d in self.store_service.stores()]
        rows.sort(key=lambda r: (r.retired, not r.label, r.label.lower(), r.store))  # live, labelled first
        self.post_message(self.Loaded(rows))

    @on(Loaded)
    def _loaded(self, message: Loaded) -> None:
        message.stop()
        self.loading = False
        self.rows = message.rows
        table = self.query_one(DataTable)
        cursor_key = None
        if table.row_count and 0 <= table.cursor_row < table.row_count:
            cursor_key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        table.clear()
        for r in self.rows:
            state = "retired" if r.retired else "current" if r.store == self.current else "live"
            table.add_row(cell(r.store), cell(r.label), cell(r.root), cell(str(r.fact_count), justify="right"),
                          cell(state), key=r.store)
        if cursor_key is not None and cursor_key in {r.store for r in self.rows}:
            table.move_cursor(row=table.get_row_index(cursor_key))
        self.query_one("#stores-summary", Static).update(self._summary())

    def _summary(self) -> Text:
        if not self.rows:
            return Text("No known project stores yet: a store is registered when the app or a command opens a "
                        "checkout, or with `autopatch-tui memory stores add PATH`.")
        retired = sum(1 for r in self.rows if r.retired)
        live = len(self.rows) - retired
        text = f"{len(self.rows)} known store(s): {live} live, {retired} retired (kept as backups)."
        if live > 1:
            text += " Press d to find stores that are the same project."
        return Text(text)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group not in WORKER_GROUPS or event.state not in (WorkerState.ERROR, WorkerState.CANCELLED):
            return
        self.loading = False
        if event.state == WorkerState.ERROR:
            self.query_one("#stores-summary", Static).update(Text("The store list could not be read "
                                                                  "(see the notification)."))

    # --- actions ------------------------------------------------------------------------
    def open_merge_dialog(self, *, result: ScanResult | None = None) -> MergeDialog:
        dialog = MergeDialog(self.store_service, result=result, listener=self, current_store=self.current)
        self.app.push_screen(dialog)
        return dialog

    def action_scan(self) -> None:
        self.open_merge_dialog()

    def action_reload(self) -> None:
        self.reload()

    def highlighted_row(self) -> StoreRow | None:
        table = self.query_one(ResponsiveTable)
        if not table.row_count or not 0 <= table.cursor_row < table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return next((r for r in self.rows if r.store == key), None)

    def action_add(self) -> None:
        """Register a checkout (or a copied memory.db), as `memory stores add PATH`."""
        self.app.push_screen(TextPromptScreen("Add a store", "The folder of a checkout, or a memory.db file copied "
                                              "from another machine. Its store joins this list (nothing is merged).",
                                              placeholder="~/src/project"), self._add_answer)

    def _add_answer(self, path: str | None) -> None:
        if path and path.strip():
            self._write(partial(self.store_service.add, path.strip()), "Added")

    def action_label(self) -> None:
        row = self.highlighted_row()
        if row is None:
            self.notify("Highlight a store first.", severity="warning")
            return
        if row.retired:
            self.notify("A retired store keeps its label; label the store it was merged into.", severity="warning",
                        markup=False)
            return
        self.app.push_screen(TextPromptScreen(f"Label {row.store}", f"A short name for this store (root: "
                                              f"{row.root or '-'}), shown in this list and in merge proposals.",
                                              value=row.label), partial(self._label_answer, row.store))

    def _label_answer(self, store: str, label: str | None) -> None:
        if label is not None:
            self._write(partial(self.store_service.set_label, store, label), "Labelled")

    def _write(self, fn: Callable[[], object], verb: str) -> None:
        """Run a registry write in a thread worker; a refused one (bad path, bad label) is a warning."""

        def work() -> None:
            try:
                result = fn()
            except (UsageError, MergeError) as exc:
                self.app.call_from_thread(self.notify, str(exc), severity="warning", markup=False)
                return
            name = getattr(result, "store_name", None) or getattr(result, "name", None)
            done = f"{verb} store {name}." if name else f"{verb} the store."
            if getattr(result, "holds_something", True) is False:
                done += " It holds nothing yet: this list shows it once it holds a turn or an item."
            self.app.call_from_thread(self.notify, done, markup=False)
            self.app.call_from_thread(self.reload)

        self.run_worker(work, thread=True, group="stores-write", exit_on_error=False)


    @on(Button.Pressed, "#stores-scan")
    def _scan_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_scan()

    @on(Button.Pressed, "#stores-reload")
    def _reload_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.reload()

    @on(Button.Pressed, "#stores-add")
    def _add_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_add()

    @on(Button.Pressed, "#stores-label")
    def _label_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_label()

    @on(StoresChanged)
    def _stores_changed(self, message: StoresChanged) -> None:
        message.stop()
        if message.source == self.current:
            self.current = message.target  # this app's checkout now leads to the merge target
        self.reload()
