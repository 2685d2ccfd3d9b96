"""The Memory browser's three views — "To review (N)" (the inbox), "Items", "Audit" — and how it
switches between them: the tabs, F4 pressed on the browser (the next view), and opening on the
inbox while items await review; and what every view reaches: the duplicate-store dialog and the
jump to a source turn in the history. A mixin of `MemoryBrowserScreen` (which provides `services`,
`healthy`, `table`, `_run`, `query_text`, `selected`, `reload`). It also holds the browser's part of
the shared field rules (`screens/base.py`): only the Items view has a field."""

from __future__ import annotations

import inspect
import logging

from textual.widgets import ContentSwitcher, Input, Tab, Tabs

from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.tui.screens.memory_audit import AuditView
from autopatch_tui.tui.screens.memory_inbox import InboxView
from autopatch_tui.tui.screens.memory_refused import RefusedView

log = logging.getLogger(__name__)


class BrowserViews:
    VIEWS = ("inbox", "items", "audit", "refused")
    view = "items"
    review_count = 0

    def opened(self) -> None:
        """F4 opened the browser: it opens on "To review (N)" while N > 0 (asked in a worker)."""
        mgr = self.services.manager

        def work() -> None:
            try:
                count = mgr.review.count() if mgr.readable else 0
            except (AutopatchError, OSError) as exc:  # unreadable marks: the inbox says so when opened
                log.info("review count unavailable: %s", type(exc).__name__)
                count = 1
            self.app.call_from_thread(self._open_on, count)

        self._run(work, "mb-open")

    def _open_on(self, count: int) -> None:
        """While items await review the browser opens on them; otherwise it stays on its last view."""
        self._set_count(count)
        if count > 0 and self.healthy is not False:
            self.show_view("inbox")

    def _set_count(self, count: int) -> None:
        self.review_count = count
        self.query_one("#view-inbox", Tab).label = f"To review ({count})" if count else "To review"

    def show_view(self, view: str) -> None:
        if view not in self.VIEWS:
            return
        self.view = view
        self.query_one("#mb-switch", ContentSwitcher).current = {"inbox": "mb-inbox", "items": "mb-browser",
                                                                 "audit": "mb-audit", "refused": "mb-refused"}[view]
        tabs = self.query_one("#mb-views", Tabs)
        if tabs.active != f"view-{view}":
            tabs.active = f"view-{view}"
        if view == "inbox":
            self.query_one(InboxView).reload()
            self.query_one(InboxView).focus_list()
        elif view == "audit":
            self.query_one(AuditView).reload()
            self.query_one(AuditView).focus_list()
        elif view == "refused":
            self.query_one(RefusedView).reload()
            self.query_one(RefusedView).focus_list()
        else:
            self.focus_home()  # the Items view is ready for typing: its search field (issue 20)
        self.refresh_bindings()

    def focus_home(self) -> None:
        """Shown again: the Items view's search field (the inbox and the audit keep their lists)."""
        if self.view == "items":
            super().focus_home()  # type: ignore[misc]

    def clear_field(self) -> bool:
        """Escape's first step in the Items view: clear the search (its text, and its results: the
        list comes back), focus stays in the field."""
        field = self.query_one("#mb-search", Input)
        if self.view != "items" or (not field.value and not self.query_text):
            return False
        field.value = ""
        if self.query_text:
            self.query_text = ""
            self.selected = None
            self.reload()
        field.focus()
        return True

    def action_next_view(self) -> None:
        """F4 on the browser: the next view."""
        self.show_view(self.VIEWS[(self.VIEWS.index(self.view) + 1) % len(self.VIEWS)])

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        view = (event.tab.id or "").removeprefix("view-")
        if event.tabs.id == "mb-views" and view != self.view:
            self.show_view(view)

    def on_inbox_view_counted(self, event: InboxView.Counted) -> None:
        self._set_count(event.count)
        self.app.review_count = event.count  # type: ignore[attr-defined]  # the status bar at once, not at the next state read

    def action_duplicates(self) -> None:
        """Find duplicate project stores (the merge dialog)."""
        from autopatch_tui.tui.screens.merge_dialog import MergeDialog
        from autopatch_tui.tui.screens.stores import (
            current_store_name,
            make_store_service,
        )

        self.app.push_screen(MergeDialog(make_store_service(self.services),
                                         current_store=current_store_name(self.services)))


async def open_turn_in_history(app: object, turn_id: str, *, back_to: str | None = "memory") -> None:
    """Show the history screen and ask it to show `turn_id` (runs on the App's message loop, so
    the browser may be popped meanwhile). Escape there comes back to `back_to` (the Memory browser,
    in the view it was left in: the inbox's `j` returns to the inbox)."""
    await app.run_action("show('history')")  # type: ignore[attr-defined]
    screen = app.screen  # type: ignore[attr-defined]
    show_turn = getattr(screen, "show_turn", None)
    if screen.name != "history" or show_turn is None:
        app.notify("The thread history cannot show that turn.", severity="warning")  # type: ignore[attr-defined]
        return
    screen.back_to = back_to
    result = show_turn(turn_id)
    if inspect.isawaitable(result):
        await result
