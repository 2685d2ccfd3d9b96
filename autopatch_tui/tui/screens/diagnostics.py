"""Job diagnostics: counts per job state, a small live chart of the queue over time, the newest
jobs with their safe failure structure, and an action that gives every pending job its processing
chance now.

Contracts §6: this screen shows structure only — kind, state, counters, times, and for failures
the category, phase, stage and rule (or the no-output reason). It never reads a prompt, reply,
quote or provider body: the job table's query names only safe columns (`core.memory.job_table`).

SQLite and model calls run in thread workers. Reads use a short-lived read-only connection
(`read_job_table` / `read_job_counts`), so polling holds no connection per worker thread."""

from __future__ import annotations

from collections import deque
from datetime import UTC, datetime

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.timer import Timer
from textual.widgets import DataTable, ProgressBar, Sparkline, Static
from textual.worker import Worker, WorkerState

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory.job_table import (
    MAX_ROWS,
    OPEN_STATES,
    JobRow,
    JobTable,
    read_job_counts,
    read_job_table,
)
from autopatch_tui.core.memory.refusals import parse_disagreements, refusals_line
from autopatch_tui.core.pipeline.flush import ExitFlushResult
from autopatch_tui.tui.resources import style
from autopatch_tui.tui.screens.base import AppScreen
from autopatch_tui.tui.screens.confirm import ConfirmScreen
from autopatch_tui.tui.services import Services
from autopatch_tui.tui.widgets.footer import AppFooter
from autopatch_tui.tui.widgets.responsive_table import Col, ResponsiveTable

COUNT_LABELS = {
    "pending": "pending",
    "leased": "running",
    "retry_wait": "retry wait",
    "failed": "failed",
    "succeeded": "succeeded",
    "succeeded_no_output": "no output",
}
STATUS_LABELS = {"succeeded_no_output": "no output", "leased": "running"}
# the job table's columns; the rule / no-output reason takes the free width. On a narrow terminal
# Calls leaves first, then Att, When, Stage and Phase; Kind, Status, Category and the reason stay
# (the highlighted job's line below the table always shows all of them)
JOB_COLUMNS = (Col("kind", "Kind", 13), Col("status", "Status", 10), Col("attempts", "Att", 3, drop=4),
               Col("calls", "Calls", 5, drop=5), Col("when", "When (UTC)", 14, drop=3),
               Col("category", "Category", 18), Col("phase", "Phase", 8, drop=1), Col("stage", "Stage", 7, drop=2),
               Col("rule", "Rule / reason", 14, flex=1))
CHART_SAMPLES = 60
SECTIONS = ("#counts", "#charts", "#process", "#jobs-title", "#jobs", "#job-detail")  # "#refusals": shown when any
WORKER_GROUPS = ("jobs-read", "jobs-sample", "jobs-process", "jobs-retry")


def short_stamp(ts: float | None) -> str:
    """Seconds since the epoch → `MM-DD HH:MM:SS` (UTC)."""
    if ts is None:
        return ""
    return datetime.fromtimestamp(ts, UTC).strftime("%m-%d %H:%M:%S")


def result_text(result: ExitFlushResult) -> str:
    return (f"Processed pending jobs: {result.succeeded} succeeded, {result.succeeded_no_output} without output, "
            f"{result.retry_wait} to retry, {result.failed} failed; {result.pending} still pending.")


def chart_data(samples: deque[float]) -> list[float]:
    """The chart's window: zeros before the first sample, and a leading zero so the bars scale from
    zero (Sparkline scales between the window's minimum and maximum)."""
    return [0.0] * (1 + CHART_SAMPLES - len(samples)) + list(samples)


class CountBox(Static):
    """One job state and its count."""

    def __init__(self, status: str) -> None:
        super().__init__(id=f"count-{status}", classes=f"count -{status}", markup=False)
        self.state_name = status
        self.amount = 0
        self.border_title = COUNT_LABELS[status]

    def on_mount(self) -> None:
        self.set_count(0)

    def set_count(self, value: int) -> None:
        self.amount = value
        self.update(Text(str(value), style="bold", justify="center"))
        self.set_class(value > 0, "-nonzero")


class DiagnosticsScreen(AppScreen):
    CSS_PATH = style("diagnostics.tcss")
    AUTO_FOCUS = "#jobs"
    SAMPLE_SECONDS: float | None = 1.0  # the chart's sampling timer; None = sample on changes only
    BINDINGS = [
        Binding("escape", "back", "Back", id="jobs.back"),
        Binding("p", "process", "Process jobs", id="jobs.process", tooltip="process pending jobs now"),
        Binding("r", "refresh", "Reload", id="jobs.refresh"),
        Binding("t", "retry", "Retry job", id="jobs.retry"),
    ]

    def __init__(self, services: Services) -> None:
        super().__init__(name="jobs")
        self.services = services
        self.counts: dict[str, int] = {s: 0 for s in COUNT_LABELS}
        self.rows: tuple[JobRow, ...] = ()
        self.total = 0
        self.open_samples: deque[float] = deque(maxlen=CHART_SAMPLES)
        self.done_samples: deque[float] = deque(maxlen=CHART_SAMPLES)
        self.processing = False
        self.selected: JobRow | None = None
        self.loaded = False
        self._events_seen = 0
        self._events_at_start = 0
        self._reading = False
        self._dirty = False
        self._sampling = False
        self._timer: Timer | None = None

    @property
    def manager(self) -> MemoryManager:
        return self.services.manager

    # --- layout -------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(Text(""), id="note", markup=False)
        with Horizontal(id="counts"):
            for status in COUNT_LABELS:
                yield CountBox(status)
        with Horizontal(id="charts"):
            with Vertical(classes="chart"):
                yield Static(Text("Open jobs (pending, running, retry wait) over time"), classes="chart-title")
                yield Sparkline([], id="open-chart")
            with Vertical(classes="chart"):
                yield Static(Text("Jobs finished per sample"), classes="chart-title")
                yield Sparkline([], id="done-chart")
        with Horizontal(id="process"):
            yield Static(Text(""), id="process-status", markup=False)
            yield ProgressBar(total=1, show_eta=False, id="progress")
        yield Static(Text("Jobs"), id="jobs-title", markup=False)
        yield Static(Text(""), id="refusals", markup=False)
        yield ResponsiveTable(id="jobs", cursor_type="row", zebra_stripes=True)
        yield Static(Text(""), id="job-detail", markup=False)
        yield AppFooter()

    def on_mount(self) -> None:
        self.query_one("#jobs", ResponsiveTable).set_spec(JOB_COLUMNS)
        self.query_one("#progress").display = False
        self._events_seen = self.app.job_events  # type: ignore[attr-defined]
        self._show_note()
        self.watch(self.app, "job_counts", self._counts_changed, init=False)
        self.watch(self.app, "job_events", self._job_finished, init=False)
        self.watch(self.app, "memory_version", self._memory_changed, init=False)
        if self.manager.healthy:
            self.refresh_jobs()
        else:
            self._show_degraded()
        if self.SAMPLE_SECONDS:
            self._timer = self.set_interval(self.SAMPLE_SECONDS, self._tick)

    def _show_sections(self, visible: bool) -> None:
        for selector in SECTIONS:
            self.query_one(selector).display = visible

    def _show_note(self) -> None:
        note = self.query_one("#note", Static)
        mgr = self.manager
        if not mgr.healthy:
            diag = mgr.store.health.diagnostic or "unknown"
            note.update(Text(f"Memory is degraded: {diag}. Job diagnostics are unavailable; open the Memory "
                             "browser (F4) to export or clear it."))
            note.set_classes("-error")
            note.display = True
        elif not mgr.has_model:
            note.update(Text(f"No Memory model: {mgr.model_problem}. Pending jobs wait until a model is "
                             "configured."))
            note.set_classes("-warning")
            note.display = True
        else:
            note.display = False

    def _show_degraded(self) -> None:
        self._show_note()
        self._show_sections(False)
        self._apply_table(JobTable(counts={s: 0 for s in COUNT_LABELS}, rows=(), total=0), sample=False)

    # --- reading ------------------------------------------------------------------------
    def refresh_jobs(self) -> None:
        """Reload counts and the table (coalesced: one read at a time, one more if asked meanwhile)."""
        if not self.manager.healthy:
            self._show_degraded()
            return
        if self._reading:
            self._dirty = True
            return
        self._reading = True
        self.run_worker(self._read, thread=True, group="jobs-read", exit_on_error=False)

    def _read(self) -> None:
        table = read_job_table(self.manager.store.db_path, limit=MAX_ROWS)
        self.app.call_from_thread(self._apply_read, table)

    def _apply_read(self, table: JobTable) -> None:
        self._reading = False
        self.loaded = True
        self._show_sections(True)
        self._apply_table(table, sample=True)
        if self._dirty:
            self._dirty = False
            self.refresh_jobs()

    def _apply_table(self, table: JobTable, *, sample: bool) -> None:
        self._apply_counts(dict(table.counts), sample=sample)
        self.rows = table.rows
        self.total = table.total
        jobs = self.query_one("#jobs", DataTable)
        key = self._cursor_key(jobs)
        jobs.clear()
        for row in table.rows:
            jobs.add_row(*self._cells(row), key=row.id)
        if key is not None and key in jobs.rows:
            jobs.move_cursor(row=jobs.get_row_index(key), animate=False)
        current = self._cursor_key(jobs)
        self._show_job(next((r for r in table.rows if r.id == current), None))
        shown = len(table.rows)
        title = f"Jobs — newest first, {shown} of {table.total}" if table.total else "Jobs — none yet"
        if table.total > shown:
            title += f" (the newest {shown} are listed)"
        self.query_one("#jobs-title", Static).update(Text(title, style="bold"))
        refusals = self.query_one("#refusals", Static)
        line = refusals_line(dict(table.refusals))
        refusals.update(Text(f"Not remembered (refused by the Memory gate), by rule: {line}" if line else ""))
        refusals.set_class(bool(line), "-shown")  # hidden by default (styles/diagnostics.tcss)

    @on(DataTable.RowHighlighted, "#jobs")
    def _job_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row != event.data_table.cursor_row:
            return
        row = next((r for r in self.rows if r.id == event.row_key.value), None)
        self._show_job(row)

    def _show_job(self, row: JobRow | None) -> None:
        """The highlighted job in full: its ID, times and safe failure structure (never content)."""
        self.selected = row
        self.refresh_bindings()
        detail = self.query_one("#job-detail", Static)
        if row is None:
            detail.update(Text(""))
            return
        text = Text(row.id, style="bold")
        text.append(f"  ·  {row.kind}  ·  {row.status}  ·  attempts {row.attempts}  ·  provider calls "
                    f"{row.provider_calls}\ncreated {short_stamp(row.created_at)}")
        if row.completed_at is not None:
            text.append(f"  ·  completed {short_stamp(row.completed_at)}")
        if row.category:
            text.append(f"  ·  failure: category {row.category}, phase {row.phase}, stage {row.stage}")
            text.append(f", rule {row.rule}" if row.rule else "")
        elif row.rule:  # no failure: the semantic gate's refusal verdict (rule:count pairs)
            refused = ".".join(part for part in row.rule.split(".") if not part.startswith("d-"))
            text.append(f"  ·  refused: {refused}" if refused else "")
            disagreed = refusals_line(parse_disagreements(row.rule))  # the gate vs the model's own reading
            text.append(f"  ·  readers disagreed: {disagreed}" if disagreed else "")
        if row.no_output_reason:
            text.append(f"  ·  no output: {row.no_output_reason}")
        detail.update(text)

    @staticmethod
    def _cursor_key(table: DataTable) -> str | None:
        if table.row_count == 0:
            return None
        try:
            return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        except Exception:  # noqa: BLE001 - no cursor cell
            return None

    @staticmethod
    def _cells(row: JobRow) -> list[Text]:
        failed = row.status in ("failed", "retry_wait")
        when = row.completed_at if row.completed_at is not None else row.created_at
        return [
            Text(row.kind),
            Text(STATUS_LABELS.get(row.status, row.status), style="bold" if row.status == "failed" else ""),
            Text(str(row.attempts), justify="right"),
            Text(str(row.provider_calls), justify="right"),
            Text(short_stamp(when)),
            Text(row.category or "", style="bold" if failed else ""),
            Text(row.phase or ""),
            Text(row.stage or ""),
            Text(row.rule or row.no_output_reason or "", no_wrap=True, overflow="ellipsis"),
        ]

    def _apply_counts(self, counts: dict[str, int], *, sample: bool) -> None:
        changed = counts != self.counts
        self.counts = {s: counts.get(s, 0) for s in COUNT_LABELS}
        for box in self.query(CountBox):
            box.set_count(self.counts[box.state_name])
        if sample and (changed or not self.open_samples):
            self._sample()
        if self.processing:
            self._update_progress()

    def _sample(self) -> None:
        self.open_samples.append(float(sum(self.counts[s] for s in OPEN_STATES)))
        events = self.app.job_events  # type: ignore[attr-defined]
        self.done_samples.append(float(max(0, events - self._events_seen)))
        self._events_seen = events
        self.query_one("#open-chart", Sparkline).data = chart_data(self.open_samples)
        self.query_one("#done-chart", Sparkline).data = chart_data(self.done_samples)

    # --- live ---------------------------------------------------------------------------
    def _tick(self) -> None:
        """The chart's clock: sample the queue once per interval (counts only, cheap)."""
        if self._sampling or not self.manager.healthy:
            return
        self._sampling = True
        self.run_worker(self._read_counts, thread=True, group="jobs-sample", exit_on_error=False)

    def _read_counts(self) -> None:
        counts = read_job_counts(self.manager.store.db_path)
        self.app.call_from_thread(self._apply_sample, counts)

    def _apply_sample(self, counts: dict[str, int]) -> None:
        self._sampling = False
        changed = {s: counts.get(s, 0) for s in COUNT_LABELS} != self.counts
        self.counts = {s: counts.get(s, 0) for s in COUNT_LABELS}
        for box in self.query(CountBox):
            box.set_count(self.counts[box.state_name])
        self._sample()
        if self.processing:
            self._update_progress()
        if changed:
            self.refresh_jobs()

    def _counts_changed(self, _counts: tuple[int, int, int, int]) -> None:
        self.refresh_jobs()

    def _job_finished(self, _events: int) -> None:
        if self.processing:
            self._update_progress()
        self.refresh_jobs()

    def _memory_changed(self, _version: int) -> None:
        self._show_note()
        self.refresh_jobs()

    def action_refresh(self) -> None:
        self._show_note()
        self.refresh_jobs()

    # --- process pending now ------------------------------------------------------------
    def action_process(self) -> None:
        """Asks first: it calls the Memory model for every open job (a letter never does that alone)."""
        if not self._can_process():
            return
        open_jobs = sum(self.counts[s] for s in OPEN_STATES)
        body = (f"Every open job ({open_jobs} now) gets one processing chance now: each is a call to the Memory "
                "model. The background worker would process them too, one by one.")
        self.app.push_screen(ConfirmScreen("Process pending jobs now?", body, "Process"),
                             callback=lambda yes: self._start_processing() if yes else None)

    def _can_process(self) -> bool:
        mgr = self.manager
        if not mgr.healthy:
            self._set_status("Memory is degraded: no job can run.", "-error")
            return False
        if not mgr.has_model:
            text = f"No Memory model: {mgr.model_problem}. Pending jobs wait until a model is configured."
            self._set_status(text, "-warning")
            self.notify(text, severity="warning", markup=False)
            return False
        if self.processing:
            self.notify("Pending jobs are already being processed.", markup=False)
            return False
        return True

    def _start_processing(self) -> None:
        if not self._can_process():
            return
        self.processing = True
        self._events_at_start = self.app.job_events  # type: ignore[attr-defined]
        progress = self.query_one("#progress", ProgressBar)
        progress.update(total=max(1, sum(self.counts[s] for s in OPEN_STATES)), progress=0)
        progress.display = True
        self._set_status("Processing pending jobs…", "-busy")
        self.run_worker(self._process, thread=True, group="jobs-process", exit_on_error=False)

    def _process(self) -> None:
        result = self.manager.process_pending()
        self.app.call_from_thread(self._processed, result)

    def _processed(self, result: ExitFlushResult) -> None:
        self._stop_processing()
        text = result_text(result)
        level = "-warning" if result.failed or result.retry_wait else "-done"
        self._set_status(text, level)
        self.notify(text, title="Memory jobs", severity="warning" if level == "-warning" else "information",
                    markup=False)
        self.refresh_jobs()

    def _stop_processing(self) -> None:
        self.processing = False
        self.query_one("#progress").display = False

    def _update_progress(self) -> None:
        done = max(0, self.app.job_events - self._events_at_start)  # type: ignore[attr-defined]
        open_now = sum(self.counts[s] for s in ("pending", "leased"))
        progress = self.query_one("#progress", ProgressBar)
        progress.update(total=max(1, done + open_now, int(progress.total or 1)), progress=done)
        self._set_status(f"Processing pending jobs… {done} finished", "-busy")

    def _set_status(self, text: str, level: str) -> None:
        status = self.query_one("#process-status", Static)
        status.update(Text(text))
        status.set_classes(level)

    # --- retry a failed job ---------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Textual 8: False hides a binding. "Retry job" shows only on a selected failed job."""
        if action == "retry":
            return self.selected is not None and self.selected.status == "failed" and self.manager.healthy
        return True

    def action_retry(self) -> None:
        """Asks first: the failed job runs again as a fresh job (a write no letter does alone)."""
        row = self.selected
        if row is None or row.status != "failed":
            return
        body = (f"Job {row.id} ({row.kind}) runs again as a fresh job for the same input; the failed one is "
                "replaced.")

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_worker(lambda: self._retry(row.id), thread=True, group="jobs-retry", exit_on_error=False)

        self.app.push_screen(ConfirmScreen("Retry this failed job?", body, "Retry"), callback=answered)

    def _retry(self, job_id: str) -> None:
        new_job = self.manager.retry_job(job_id)
        self.app.call_from_thread(self._retried, new_job)

    def _retried(self, new_job: str) -> None:
        text = f"Failed job queued again as {new_job}."
        self._set_status(text, "-done")
        self.notify(text, title="Memory jobs", markup=False)
        self.refresh_jobs()

    # --- worker outcome -----------------------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # the App reports the error; the screen only leaves its busy state
        if event.worker.group not in WORKER_GROUPS or event.state not in (WorkerState.ERROR, WorkerState.CANCELLED):
            return
        if event.worker.group == "jobs-read":
            self._reading = False
        elif event.worker.group == "jobs-sample":
            self._sampling = False
        elif event.worker.group == "jobs-retry":
            self._set_status("The job was not retried (see the notification).", "-error")
        else:
            self._stop_processing()
            self._set_status("Processing stopped with an error (see the notification).", "-error")
