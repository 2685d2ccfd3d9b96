"""The merge dialog (FR-056/FR-057 in the app): merge-scan the known project stores in a thread
worker with progress ("judged N of M", cancellable), list the proposals — both stores' labels,
roots and fact counts, the confidence, who judged and the reason — and merge one at a time.

* The swap of a proposal's direction is keyed by the PAIR of store names, never by row, so it
  survives re-rendering when another proposal disappears.
* While a merge runs (in a thread worker) every Merge button is disabled.
* After a merge, every proposal touching either store disappears, the result is reported with
  `notify`, and the listener (the store list) receives `StoresChanged`.
* `no_model` shows the deterministic proposals plus how to configure a model; `truncated` says that
  one scan judged only part of the pairs.

Store labels, roots and the model's reason are shown as plain `Text`, never parsed as markup.
The store files are read and written only in thread workers; results come back as messages."""

from __future__ import annotations

import threading
from functools import partial
from typing import Any, Protocol

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.events import DescendantFocus
from textual.message import Message
from textual.message_pump import MessagePump
from textual.widgets import Button, ProgressBar, Static
from textual.worker import Worker, WorkerState

from autopatch_tui.core.stores.scan import Proposal, ScanResult, judge_words
from autopatch_tui.core.stores.service import reorg_words
from autopatch_tui.core.terminal_text import escape_controls
from autopatch_tui.tui.resources import style
from autopatch_tui.tui.screens.base import AppModalScreen
from autopatch_tui.tui.screens.confirm import ConfirmScreen
from autopatch_tui.tui.screens.merge_text import after_merge_status, confirm_body
from autopatch_tui.tui.widgets.footer import AppFooter

Pair = frozenset[str]

NO_MODEL_HINT = ("No Memory model is configured, so only checkouts with the same origin remote are proposed. "
                 "To let a model judge the other stores, set AUTOPATCH_LLM_BASE_URL and AUTOPATCH_LLM_MODEL "
                 "(or AUTOPATCH_MEMORY_MODEL) and start the app again.")
TRUNCATED_NOTICE = "More pairs than one scan judges; scan again after merging."
WORKER_GROUPS = ("merge-scan", "merge-run")


class StoreServiceLike(Protocol):
    def scan(self, *, progress: Any = None, cancel: threading.Event | None = None) -> ScanResult: ...

    def merge(self, source: str, target: str, *, organize: bool = True) -> Any: ...


def pair_key(proposal: Proposal) -> Pair:
    return frozenset((proposal.source, proposal.target))


def plain(value: object, default: str = "-") -> str:
    """One line of a store's label, root or a model's reason: whitespace folded, control characters
    shown as escapes."""
    text = escape_controls(" ".join(str(value).split()), one_line=True) if value is not None else ""
    return text or default


class StoresChanged(Message):
    """Posted to the dialog's listener (the store list) after a merge changed the stores."""

    def __init__(self, source: str, target: str) -> None:
        super().__init__()
        self.source = source
        self.target = target


class ProposalRow(Vertical):
    """One proposal: the two stores in the current direction, confidence, judge, reason, and its
    Swap and Merge buttons. The row knows its pair; the dialog owns the swap state."""

    can_focus = True

    def __init__(self, proposal: Proposal, swapped: bool, *, merge_disabled: bool) -> None:
        super().__init__(classes="proposal")
        self.proposal = proposal
        self.pair: Pair = pair_key(proposal)
        self.swapped = swapped
        self._merge_disabled = merge_disabled

    # --- direction ----------------------------------------------------------------------
    @property
    def source(self) -> str:
        return self.proposal.target if self.swapped else self.proposal.source

    @property
    def target(self) -> str:
        return self.proposal.source if self.swapped else self.proposal.target

    def evidence(self, store: str) -> dict[str, Any]:
        p = self.proposal
        return dict(p.source_evidence if store == p.source else p.target_evidence)

    def display_name(self, store: str) -> str:
        """How people know the store: its label, else its checkout root, else its name."""
        ev = self.evidence(store)
        return plain(ev.get("label"), "") or plain(ev.get("root"), "") or store

    def describe(self, store: str) -> str:
        """One line for the confirmation: label, root, facts and the store name (each only once)."""
        ev = self.evidence(store)
        parts = [plain(ev.get("label"), ""), plain(ev.get("root"), "")]
        facts = ev.get("fact_count")
        if facts is not None:
            parts.append(f"{facts} facts")
        parts.append(store)
        return " · ".join(p for p in parts if p)

    # --- widgets ------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(classes="proposal-head"):
            yield Static(self.meta_text(), classes="proposal-meta")
            yield Button(Text("Swap (s)"), classes="swap", compact=True)
            yield Button(Text("Merge (m)"), classes="merge", variant="warning", compact=True,
                         disabled=self._merge_disabled)
        yield Static(self.stores_table(), classes="proposal-stores")
        yield Static(self.reason_text(), classes="proposal-reason")

    def meta_text(self) -> Text:
        p = self.proposal
        text = Text()
        text.append("confidence ", style="dim")
        text.append(plain(p.confidence), style="bold")
        text.append("  ·  judged by ", style="dim")
        text.append(plain(judge_words(p.judged_by)), style="bold")
        if self.swapped:
            text.append("  ·  direction swapped", style="italic")
        return text

    def stores_table(self) -> Table:
        grid = Table.grid(padding=(0, 2), expand=True)
        grid.add_column(no_wrap=True, width=5)
        grid.add_column(no_wrap=True, ratio=1, overflow="ellipsis")  # label
        grid.add_column(no_wrap=True, min_width=34)  # store name
        grid.add_column(ratio=2, overflow="fold")  # root: a long path wraps, never hides its end
        grid.add_column(no_wrap=True, justify="right", width=9)
        for role, store in (("merge", self.source), ("into", self.target)):
            ev = self.evidence(store)
            facts = ev.get("fact_count")
            grid.add_row(Text(role, style="bold"), Text(plain(ev.get("label"))), Text(store),
                         Text(plain(ev.get("root")), overflow="fold"),
                         Text(f"{facts if facts is not None else '?'} facts"))
            # the evidence the proposal rests on: the origin remote under the root
            grid.add_row(Text(""), Text(""), Text(""),
                         Text(f"remote {plain(ev.get('remote'), '') or 'unknown'}", style="dim", overflow="fold"),
                         Text(""))
        return grid

    def reason_text(self) -> Text:
        text = Text("reason: ", style="dim")
        text.append(Text(plain(self.proposal.reason)))
        return text

    def set_swapped(self, swapped: bool) -> None:
        self.swapped = swapped
        self.query_one(".proposal-meta", Static).update(self.meta_text())
        self.query_one(".proposal-stores", Static).update(self.stores_table())

    def set_merge_disabled(self, disabled: bool) -> None:
        self._merge_disabled = disabled
        for button in self.query(".merge").results(Button):
            button.disabled = disabled


class MergeDialog(AppModalScreen):
    CSS_PATH = style("stores.tcss")
    BINDINGS = [
        Binding("escape", "cancel", "Close", id="merge.cancel"),
        Binding("s", "swap", "Swap direction", id="merge.swap"),
        Binding("m", "merge", "Merge", id="merge.merge"),
        Binding("r", "rescan", "Scan again", id="merge.rescan"),
        Binding("down", "move(1)", "Next", id="merge.next", show=False, priority=True),
        Binding("up", "move(-1)", "Previous", id="merge.previous", show=False, priority=True),
    ]

    class ScanProgress(Message):
        def __init__(self, done: int, total: int) -> None:
            super().__init__()
            self.done = done
            self.total = total

    class ScanDone(Message):
        def __init__(self, result: ScanResult, cancelled: bool) -> None:
            super().__init__()
            self.result = result
            self.cancelled = cancelled

    class MergeDone(Message):
        def __init__(self, source: str, target: str, result: Any) -> None:
            super().__init__()
            self.source = source
            self.target = target
            self.result = result

    def __init__(self, service: StoreServiceLike, *, result: ScanResult | None = None,
                 listener: MessagePump | None = None, current_store: str | None = None,
                 organize: bool = True, confirm: bool = True) -> None:
        """`result`: a precomputed scan (tests, snapshots) shown instead of running a scan.
        `confirm`: ask before each merge (a merge retires its source)."""
        super().__init__(name="merge", classes="merge-dialog")
        self.service = service
        self.listener = listener
        self.current_store = current_store
        self.organize = organize
        self.confirm = confirm
        self.result: ScanResult | None = None
        self.proposals: list[Proposal] = []
        self.swapped: set[Pair] = set()
        self.scanning = False
        self.merging: Pair | None = None
        self.judged: tuple[int, int] | None = None
        self.highlighted: Pair | None = None
        self._cancel: threading.Event | None = None
        self._initial = result
        self._merge_names: tuple[str, str] | None = None
        self.merged_since_scan = False  # a merge changed the stores: this scan's "none found" is stale

    # --- layout -------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Vertical(id="merge-box"):
            yield Static(Text("Find duplicate stores"), id="merge-title")
            yield Static(Text(""), id="merge-status")
            yield ProgressBar(id="merge-progress", show_eta=False)
            yield Static(Text(""), id="merge-hint", classes="notice")
            yield Static(Text(""), id="merge-truncated", classes="notice")
            yield VerticalScroll(id="merge-proposals")
            with Horizontal(id="merge-buttons"):
                yield Button(Text("Cancel scan"), id="merge-cancel-scan", variant="error")
                yield Button(Text("Scan again (r)"), id="merge-rescan")
                yield Button(Text("Close"), id="merge-close")
        yield AppFooter()

    async def on_mount(self) -> None:
        for wid in ("#merge-hint", "#merge-truncated", "#merge-progress"):
            self.query_one(wid).display = False
        if self._initial is not None:
            await self._show_result(self._initial, cancelled=False)
        else:
            self.start_scan()

    def on_unmount(self) -> None:
        if self._cancel is not None:
            self._cancel.set()  # a scan still running stops asking the model

    # --- scan ---------------------------------------------------------------------------
    def start_scan(self) -> None:
        self.scanning = True
        self.merged_since_scan = False
        self.judged = None
        self._cancel = cancel = threading.Event()
        self._set_status("Reading the known stores…")
        bar = self.query_one(ProgressBar)
        bar.update(total=None, progress=0)
        bar.display = True
        self._sync_buttons()
        self.run_worker(partial(self._scan_work, cancel), thread=True, group="merge-scan", exclusive=True,
                        exit_on_error=False)

    def _scan_work(self, cancel: threading.Event) -> None:
        def progress(done: int, total: int) -> None:
            self.post_message(self.ScanProgress(done, total))

        result = self.service.scan(progress=progress, cancel=cancel)
        self.post_message(self.ScanDone(result, cancel.is_set()))

    @on(ScanProgress)
    def _progress(self, message: ScanProgress) -> None:
        message.stop()
        if not self.scanning:
            return
        self.judged = (message.done, message.total)
        self.query_one(ProgressBar).update(total=max(message.total, 1), progress=message.done)
        if self._cancel is not None and self._cancel.is_set():
            self._set_status(f"Cancelling… judged {message.done} of {message.total} pairs")
        else:
            self._set_status(f"Asking the model: judged {message.done} of {message.total} pairs")

    @on(ScanDone)
    async def _scan_done(self, message: ScanDone) -> None:
        message.stop()
        self.scanning = False
        await self._show_result(message.result, cancelled=message.cancelled)

    async def _show_result(self, result: ScanResult, *, cancelled: bool) -> None:
        self.result = result
        self.proposals = list(result.proposals)
        hint = self.query_one("#merge-hint", Static)
        hint.update(Text(NO_MODEL_HINT))
        hint.display = result.engine == "no_model"
        truncated = self.query_one("#merge-truncated", Static)
        truncated.update(Text(TRUNCATED_NOTICE))
        truncated.display = bool(result.truncated)
        self.query_one(ProgressBar).display = self.judged is not None
        if self.judged is not None and not cancelled:
            done, total = self.judged
            self.query_one(ProgressBar).update(total=max(total, 1), progress=done)
        self._set_status(self._result_status(cancelled))
        await self._render_proposals()
        self._sync_buttons()

    def _result_status(self, cancelled: bool) -> str:
        n = len(self.proposals)
        found = f"{n} proposal(s)" if n else "no duplicate stores found"
        if cancelled:
            done, total = self.judged or (0, 0)
            return f"Scan cancelled after judging {done} of {total} pairs; {found} so far."
        if self.judged is not None:
            done, total = self.judged
            return f"Scan finished: judged {done} of {total} pairs; {found}."
        return f"Scan finished: {found}."

    # --- proposals ----------------------------------------------------------------------
    def direction(self, proposal: Proposal) -> tuple[str, str]:
        """(source, target) as currently chosen for this proposal's pair."""
        if pair_key(proposal) in self.swapped:
            return proposal.target, proposal.source
        return proposal.source, proposal.target

    def rows(self) -> list[ProposalRow]:
        return list(self.query(ProposalRow).results(ProposalRow))

    def row_for(self, pair: Pair) -> ProposalRow | None:
        return next((r for r in self.rows() if r.pair == pair), None)

    async def _render_proposals(self) -> None:
        box = self.query_one("#merge-proposals", VerticalScroll)
        had_focus = self.focused is not None and box in self.focused.ancestors_with_self
        await box.remove_children()
        rows = [ProposalRow(p, pair_key(p) in self.swapped, merge_disabled=self.merging is not None or self.scanning)
                for p in self.proposals]
        if rows:
            await box.mount_all(rows)
        elif self.result is not None:
            empty = ("No proposals of this scan are left. Scan again (r): the merged store may match another."
                     if self.merged_since_scan else "Nothing to merge.")
            await box.mount(Static(Text(empty), classes="proposal-empty"))
        pairs = [r.pair for r in rows]
        if self.highlighted not in pairs:
            self.highlighted = pairs[0] if pairs else None
        if had_focus or self.focused is None:
            row = self.row_for(self.highlighted) if self.highlighted else None
            if row is not None:
                row.focus(scroll_visible=True)
        self._mark_highlight()

    def _mark_highlight(self) -> None:
        for r in self.rows():
            r.set_class(r.pair == self.highlighted, "-highlight")

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        row = next((a for a in event.widget.ancestors_with_self if isinstance(a, ProposalRow)), None)
        if row is not None and row.pair != self.highlighted:
            self.highlighted = row.pair
            self._mark_highlight()

    def _row_of(self, widget: Any) -> ProposalRow | None:
        return next((a for a in widget.ancestors_with_self if isinstance(a, ProposalRow)), None)

    def action_move(self, step: int) -> None:
        rows = self.rows()
        if not rows:
            return
        pairs = [r.pair for r in rows]
        index = pairs.index(self.highlighted) if self.highlighted in pairs else -1
        index = max(0, min(len(rows) - 1, index + step))
        self.highlighted = pairs[index]
        rows[index].focus(scroll_visible=True)
        self._mark_highlight()

    # --- swap ---------------------------------------------------------------------------
    def swap(self, pair: Pair) -> None:
        if pair == self.merging:
            self.notify("This merge is already running.", severity="warning")
            return
        if pair in self.swapped:
            self.swapped.discard(pair)
        else:
            self.swapped.add(pair)
        row = self.row_for(pair)
        if row is not None:
            row.set_swapped(pair in self.swapped)

    def action_swap(self) -> None:
        if self.highlighted is not None:
            self.swap(self.highlighted)

    @on(Button.Pressed, ".swap")
    def _swap_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        row = self._row_of(event.button)
        if row is not None:
            self.highlighted = row.pair
            self._mark_highlight()
            self.swap(row.pair)

    # --- merge --------------------------------------------------------------------------
    def merge(self, pair: Pair) -> None:
        if self.merging is not None:
            self.notify("A merge is running; wait for it to finish.", severity="warning")
            return
        if self.scanning:
            self.notify("Wait for the scan to finish (or cancel it) before merging.", severity="warning")
            return
        proposal = next((p for p in self.proposals if pair_key(p) == pair), None)
        if proposal is None:
            return
        source, target = self.direction(proposal)
        row = self.row_for(pair)
        src_name, tgt_name = (row.display_name(source), row.display_name(target)) if row else (source, target)
        if not self.confirm:
            self._start_merge(pair, source, target, src_name, tgt_name)
            return
        body = confirm_body(src_name, tgt_name, row.describe(source) if row else source,
                            row.describe(target) if row else target, own=source == self.current_store)

        def answered(yes: bool | None) -> None:
            if yes:
                self._start_merge(pair, source, target, src_name, tgt_name)

        self.app.push_screen(ConfirmScreen("Merge stores", body, "Merge"), answered)

    def _start_merge(self, pair: Pair, source: str, target: str, src_name: str, tgt_name: str) -> None:
        if self.merging is not None or self.scanning or not any(pair_key(p) == pair for p in self.proposals):
            return
        self.merging = pair
        self._merge_names = (src_name, tgt_name)
        self._sync_buttons()
        self._set_status(f"Merging {src_name} into {tgt_name}…")
        self.run_worker(partial(self._merge_work, source, target), thread=True, group="merge-run",
                        exit_on_error=False)

    def _merge_work(self, source: str, target: str) -> None:
        result = self.service.merge(source, target, organize=self.organize)
        self.post_message(self.MergeDone(source, target, result))

    def action_merge(self) -> None:
        if self.highlighted is not None:
            self.merge(self.highlighted)

    @on(Button.Pressed, ".merge")
    def _merge_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        row = self._row_of(event.button)
        if row is not None:
            self.highlighted = row.pair
            self._mark_highlight()
            self.merge(row.pair)

    @on(MergeDone)
    async def _merge_done(self, message: MergeDone) -> None:
        message.stop()
        source, target, result = message.source, message.target, message.result
        self.merging = None
        touched = {source, target}
        self.proposals = [p for p in self.proposals if not (pair_key(p) & touched)]
        self.swapped = {pair for pair in self.swapped if not (pair & touched)}
        turns = getattr(result, "merged_turns", 0)
        items = getattr(result, "merged_items", 0)
        status = reorg_words(str(getattr(result, "reorg_status", "?")))
        into = getattr(result, "target", target)
        self.notify(f"Merged {source} into {into}: {turns} turn(s) and {items} item(s) moved; organize: {status}.",
                    title="Stores merged", timeout=8, markup=False)
        if source == self.current_store:
            self.current_store = into
            follow = getattr(self.app, "follow_store_merge", None)
            if follow is not None:
                follow()  # the app reopens its checkout, which now leads to the holder
            else:
                self.notify(f"This app's store was merged into {into}. Restart autopatch-tui to continue with it.",
                            severity="warning", timeout=12)
        elif target == self.current_store and hasattr(self.app, "memory_version"):
            self.app.memory_version += 1  # open views of this app's Memory reload
        if self.listener is not None:
            self.listener.post_message(StoresChanged(source, target))
        src_name, tgt_name = self._merge_names or (source, into)
        self._merge_names = None
        self.merged_since_scan = True
        self._set_status(after_merge_status(src_name, tgt_name, len(self.proposals)))
        await self._render_proposals()
        self._sync_buttons()

    # --- buttons, status, cancel --------------------------------------------------------
    def _sync_buttons(self) -> None:
        busy = self.merging is not None or self.scanning
        for row in self.rows():
            row.set_merge_disabled(busy)
        cancel = self.query_one("#merge-cancel-scan", Button)
        cancel.display = self.scanning
        cancel.disabled = self._cancel is not None and self._cancel.is_set()
        self.query_one("#merge-rescan", Button).disabled = busy
        self.query_one("#merge-close", Button).disabled = self.merging is not None

    def _set_status(self, text: str) -> None:
        self.query_one("#merge-status", Static).update(Text(text))

    def cancel_scan(self) -> None:
        if self.scanning and self._cancel is not None and not self._cancel.is_set():
            self._cancel.set()
            done, total = self.judged or (0, 0)
            self._set_status(f"Cancelling… judged {done} of {total} pairs; waiting for the calls in flight")
            self._sync_buttons()

    def action_cancel(self) -> None:
        if self.scanning:
            self.cancel_scan()
        elif self.merging is not None:
            self.notify("A merge is running; wait for it to finish.", severity="warning")
        else:
            self.dismiss(None)

    def action_rescan(self) -> None:
        if self.scanning or self.merging is not None:
            return
        self.start_scan()

    @on(Button.Pressed, "#merge-cancel-scan")
    def _cancel_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.cancel_scan()

    @on(Button.Pressed, "#merge-rescan")
    def _rescan_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_rescan()

    @on(Button.Pressed, "#merge-close")
    def _close_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if self.merging is None:
            if self._cancel is not None:
                self._cancel.set()
            self.dismiss(None)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group not in WORKER_GROUPS or event.state not in (WorkerState.ERROR, WorkerState.CANCELLED):
            return
        if event.worker.group == "merge-scan":
            self.scanning = False
            self.query_one(ProgressBar).display = False
            self._set_status("The scan stopped with an error (see the notification)."
                             if event.state == WorkerState.ERROR else "The scan was stopped.")
        else:
            self.merging = None
            self._set_status("The merge failed (see the notification).")
        self._sync_buttons()
