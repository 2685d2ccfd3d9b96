"""The job diagnostics screen (issue 5 §5): counts per job state, the live chart, the job table with
the safe failure structure and never content (contracts §6), "process pending jobs now" through the
stub model with live progress, the no-model and degraded messages, the read API in
`core.memory.job_table`, and snapshots (empty, populated with failures, degraded) at 120×40."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import DataTable, ProgressBar, Sparkline

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory.job_table import SAFE_COLUMNS, read_job_counts, read_job_table
from autopatch_tui.core.settings import Settings
from autopatch_tui.tui.app import AutopatchApp
from autopatch_tui.tui.screens.chat import ChatScreen
from autopatch_tui.tui.screens.confirm import ConfirmScreen
from autopatch_tui.tui.screens.diagnostics import CountBox, DiagnosticsScreen
from autopatch_tui.tui.services import Services
from tests.support.fixtures import bootstrap_healthy, raw_connect
from tests.support.llm_stub import Reply, StubLLMServer
from tests.support.pipeline_helpers import add_turn, cand, create_all, ext_reply, src, stub_settings
from tests.support.tui_wait import poll as dg_poll, settle as dg_wait  # noqa: E402
from tests.support.tui_text import plain, screen_text
from tests.tui.layouts import with_sizes

pytestmark = pytest.mark.anyio

SIZE = (120, 40)
T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z
THREAD = "thr-01DIAGTHREAD0000000000000"
OTHER_OWNER = "otherhost:1:0000000000"
MARKERS = ("SECRET-PROMPT-MARKER", "SECRET-REPLY-MARKER", "SECRET-QUOTE-MARKER")

# (id, kind, status, attempts, provider_calls, category, phase, stage, rule, no_output_reason)
JOBS = [
    ("job-01DIAG00000000000000000001", "extraction", "succeeded", 1, 1, None, None, None, None, None),
    ("job-01DIAG00000000000000000002", "extraction", "succeeded_no_output", 1, 1, None, None, None, None,
     "no_candidates"),
    ("job-01DIAG00000000000000000003", "extraction", "failed", 2, 2, "contract_violation", "validate", "repair",
     "quote_not_verbatim", None),
    ("job-01DIAG00000000000000000004", "consolidation", "retry_wait", 1, 1, "rate_limit", "provider", "primary",
     None, None),
    ("job-01DIAG00000000000000000005", "extraction", "pending", 0, 0, None, None, None, None, None),
    ("job-01DIAG00000000000000000006", "consolidation", "leased", 1, 0, None, None, None, None, None),
    ("job-01DIAG00000000000000000007", "consolidation", "failed", 1, 1, "auth", "provider", "primary", None, None),
]


# --------------------------------------------------------------------------- data


def dg_seed(repo: Path, settings: Settings, jobs: list[tuple[Any, ...]]) -> Path:
    """A healthy store with fixed IDs: every extraction job gets a turn whose text holds content
    markers, and one candidate quotes a marker; the jobs are inserted by direct SQL."""
    db = bootstrap_healthy(repo, settings)
    conn = raw_connect(db)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE threads SET id = ?, created_at = ? WHERE status = 'active'", (THREAD, T0))
        for n, (job_id, kind, status, attempts, calls, category, phase, stage, rule, reason) in enumerate(jobs, 1):
            created = T0 + 60 * n
            turn_id = None
            if kind == "extraction":
                turn_id = f"turn-01DIAG{n:020d}"
                conn.execute(
                    "INSERT INTO turns (id, thread_id, sequence, intent, state, user_text, assistant_text,"
                    " created_at, ended_at) VALUES (?, ?, ?, 'general_chat', 'completed', ?, ?, ?, ?)",
                    (turn_id, THREAD, n, f"{MARKERS[0]} [bold]question {n}[/bold]", f"{MARKERS[1]} answer {n}",
                     created - 5, created),
                )
            done = created + 30 if status in ("succeeded", "succeeded_no_output", "failed") else None
            leased = status == "leased"
            conn.execute(
                "INSERT INTO memory_jobs (id, kind, status, thread_id, turn_id, sequence, attempts, provider_calls,"
                " lease_owner, lease_expires_at, lease_generation, available_at, created_at, updated_at,"
                " completed_at, no_output_reason, failure_category, failure_phase, failure_stage, failure_rule)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (job_id, kind, status, THREAD, turn_id, n if turn_id else 0, attempts, calls,
                 OTHER_OWNER if leased else None, T0 + 10_000_000 if leased else None, 1 if leased else None,
                 created + 3600 if status == "retry_wait" else created, created, done or created, done, reason,
                 category, phase, stage, rule),
            )
        conn.execute(
            "INSERT INTO memory_candidates (id, job_id, thread_id, status, kind, subject, statement, content,"
            " strength, origin, recall_mode, created_at) VALUES ('cand-01DIAG', ?, ?, 'rejected', 'user_preference',"
            " ?, ?, ?, 'soft', 'explicit', 'on_match', ?)",
            (jobs[0][0] if jobs else None, THREAD, MARKERS[2], MARKERS[2], MARKERS[2], T0),
        )
        conn.execute("INSERT INTO candidate_sources (candidate_id, ordinal, turn_id, role, quote)"
                     " VALUES ('cand-01DIAG', 0, 'turn-x', 'user', ?)", (MARKERS[2],))
        conn.execute("COMMIT")
    finally:
        conn.close()
    return db


def dg_degrade(repo: Path, settings: Settings) -> None:
    db = bootstrap_healthy(repo, settings)
    conn = raw_connect(db)
    conn.execute("UPDATE threads SET status = 'archived', archived_at = 2.0")
    conn.close()


def dg_app(mgr: MemoryManager, settings: Settings) -> AutopatchApp:
    return AutopatchApp(Services(mgr, settings))


# --------------------------------------------------------------------------- pilot helpers




async def open_jobs(pilot: Pilot) -> DiagnosticsScreen:
    await dg_wait(pilot)
    await pilot.press("f5")
    screen = pilot.app.screen
    assert isinstance(screen, DiagnosticsScreen)
    await dg_wait(pilot, lambda: screen.loaded or not screen.manager.healthy)
    return screen


def counts_shown(screen: DiagnosticsScreen) -> dict[str, int]:
    shown = {}
    for box in screen.query(CountBox):
        content = box.content
        shown[box.state_name] = int(content.plain if isinstance(content, Text) else str(content))
    return shown


def table_text(table: DataTable) -> list[list[str]]:
    return [[c.plain if isinstance(c, Text) else str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]




@pytest.fixture
def no_chart_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The chart samples on changes only (deterministic tests and snapshots)."""
    monkeypatch.setattr(DiagnosticsScreen, "SAMPLE_SECONDS", None)


# --------------------------------------------------------------------------- the read API


def test_job_table_reads_safe_columns_newest_first_and_bounded(repo: Path, settings: Settings) -> None:
    db = dg_seed(repo, settings, JOBS)
    table = read_job_table(db)
    assert [r.id for r in table.rows] == [j[0] for j in reversed(JOBS)]
    assert table.total == len(JOBS) and table.open_jobs == 3
    assert dict(table.counts) == read_job_counts(db) == {
        "pending": 1, "leased": 1, "succeeded": 1, "succeeded_no_output": 1, "retry_wait": 1, "failed": 2}
    failed = next(r for r in table.rows if r.id == JOBS[2][0])
    assert (failed.category, failed.phase, failed.stage, failed.rule) == (
        "contract_violation", "validate", "repair", "quote_not_verbatim")
    assert failed.completed_at == T0 + 60 * 3 + 30 and failed.attempts == 2 and failed.provider_calls == 2
    no_output = next(r for r in table.rows if r.id == JOBS[1][0])
    assert no_output.no_output_reason == "no_candidates"
    assert read_job_table(db, limit=2).rows == table.rows[:2]
    assert "thread_id" not in SAFE_COLUMNS and "turn_id" not in SAFE_COLUMNS
    assert not any(m in repr(table) for m in MARKERS)


# --------------------------------------------------------------------------- the screen


async def test_counts_per_state_and_the_job_table(repo: Path, settings: Settings, no_chart_timer: None) -> None:
    dg_seed(repo, settings, JOBS)
    app = dg_app(MemoryManager.open(repo, settings), settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_jobs(pilot)
        assert counts_shown(screen) == {"pending": 1, "leased": 1, "retry_wait": 1, "failed": 2, "succeeded": 1,
                                        "succeeded_no_output": 1}
        rows = table_text(screen.query_one("#jobs", DataTable))
        assert len(rows) == len(JOBS)
        assert [r[0] for r in rows] == [j[1] for j in reversed(JOBS)]
        assert [r[1] for r in rows] == ["failed", "running", "pending", "retry_wait", "failed", "no output",
                                        "succeeded"]
        assert "newest first, 7 of 7" in plain(screen, "#jobs-title")
        assert list(screen.open_samples) == [3.0]
        chart = list(screen.query_one("#open-chart", Sparkline).data or [])
        assert chart[0] == 0.0 and chart[-1] == 3.0 and set(chart[:-1]) == {0.0}
        assert "No Memory model" in plain(screen, "#note")


async def test_a_failed_job_shows_its_safe_structure_and_never_content(repo: Path, settings: Settings,
                                                                      no_chart_timer: None) -> None:
    dg_seed(repo, settings, JOBS)
    app = dg_app(MemoryManager.open(repo, settings), settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_jobs(pilot)
        table = screen.query_one("#jobs", DataTable)
        row = table_text(table)[table.get_row_index(JOBS[2][0])]
        assert row == ["extraction", "failed", "2", "2", "01-15 08:03:30", "contract_violation", "validate",
                       "repair", "quote_not_verbatim"]
        retry = table_text(table)[table.get_row_index(JOBS[3][0])]
        assert retry[1] == "retry_wait" and retry[5:8] == ["rate_limit", "provider", "primary"]
        table.move_cursor(row=table.get_row_index(JOBS[2][0]))
        await dg_wait(pilot, lambda: JOBS[2][0] in plain(screen, "#job-detail"))
        detail = plain(screen, "#job-detail")
        assert "category contract_violation, phase validate, stage repair, rule quote_not_verbatim" in detail
        cells = " ".join(" ".join(r) for r in table_text(table))
        await pilot.pause(0.1)
        shown = screen_text(app)
        assert "contract_violation" in shown and "quote_not_verbatim" in shown
        for marker in MARKERS:
            assert marker not in cells and marker not in shown and marker not in detail
        # every cell is a plain Text built from safe columns only
        for key in table.rows:
            for cell in table.get_row(key):
                assert isinstance(cell, Text)


REFUSING_JOBS = JOBS[:1] + [
    ("job-01DIAG00000000000000000008", "extraction", "succeeded_no_output", 1, 1, None, None, None,
     "one_off_scope:2.code_fact:1", "all_rejected"),
    ("job-01DIAG00000000000000000009", "extraction", "succeeded", 1, 1, None, None, None, "hedged:1", None),
    # a failed job's rule is its failure, no refusal
    ("job-01DIAG00000000000000000010", "extraction", "failed", 2, 2, "contract_violation", "validate", "repair",
     "quote_not_verbatim", None),
]


async def test_the_refusal_counts_by_rule_are_shown(repo: Path, settings: Settings, no_chart_timer: None) -> None:
    dg_seed(repo, settings, REFUSING_JOBS)
    app = dg_app(MemoryManager.open(repo, settings), settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_jobs(pilot)
        line = plain(screen, "#refusals")
        assert line == "Not remembered (refused by the Memory gate), by rule: one_off_scope 2 · code_fact 1 · hedged 1"
        assert screen.query_one("#refusals").display and screen.query_one("#refusals").has_class("-shown")
        await pilot.pause(0.1)
        assert "one_off_scope 2" in screen_text(app)
        for marker in MARKERS:
            assert marker not in line


async def test_no_refusal_line_without_refusals(repo: Path, settings: Settings, no_chart_timer: None) -> None:
    dg_seed(repo, settings, JOBS)
    app = dg_app(MemoryManager.open(repo, settings), settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_jobs(pilot)
        assert not screen.query_one("#refusals").display and plain(screen, "#refusals") == ""


async def test_process_pending_runs_jobs_through_the_model_with_live_progress(
        repo: Path, llm_stub: StubLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(DiagnosticsScreen, "SAMPLE_SECONDS", 0.1)
    settings = stub_settings(llm_stub)
    mgr = MemoryManager.open(repo, settings)
    quote = "I prefer tabs for indentation"
    handle = add_turn(mgr, f"{quote} in every Python file.", "Noted: tabs.")
    release = threading.Event()
    reply = ext_reply(cand(src(handle, "user", quote), statement="Use tabs for indentation."))
    llm_stub.script("extraction", Reply(content=json.dumps(reply), wait_event=release))
    llm_stub.default("consolidation", create_all)
    app = dg_app(mgr, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_jobs(pilot)
        assert counts_shown(screen)["pending"] == 1
        assert screen.query_one("#note").display is False  # a model is configured
        await pilot.press("p")  # asks first: it calls the model for every open job
        await dg_poll(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert not screen.processing and llm_stub.requests_for("extraction") == []
        await pilot.press("y")
        await dg_poll(pilot, lambda: llm_stub.pending("extraction") == 0 and screen.counts["leased"] == 1)
        # live while the worker runs: the job is running, progress shows
        assert screen.processing and screen.query_one("#progress", ProgressBar).display
        assert "Processing pending jobs" in plain(screen, "#process-status")
        await dg_poll(pilot, lambda: counts_shown(screen)["leased"] == 1 and counts_shown(screen)["pending"] == 0)
        release.set()
        await dg_wait(pilot, lambda: not screen.processing and counts_shown(screen)["succeeded"] == 2)
        assert counts_shown(screen)["pending"] == 0 and counts_shown(screen)["leased"] == 0
        # the derived consolidation job may be taken by the background worker instead: 1 or 2 here
        status = plain(screen, "#process-status")
        assert re.fullmatch(r"Processed pending jobs: [12] succeeded, 0 without output, 0 to retry, 0 failed; "
                            r"0 still pending\.", status), status
        assert any(n.message == status for n in app._notifications)
        assert not screen.query_one("#progress", ProgressBar).display
        statuses = [r[1] for r in table_text(screen.query_one("#jobs", DataTable))]
        assert statuses == ["succeeded", "succeeded"]
        assert len(llm_stub.requests_for("extraction")) == 1 and len(llm_stub.requests_for("consolidation")) == 1
        samples = list(screen.open_samples)
        assert 1.0 in samples and samples[-1] == 0.0  # the queue over time: one open job, then none
        assert list(screen.query_one("#open-chart", Sparkline).data or [])[-len(samples):] == samples
        assert app.job_events >= 2


async def test_the_retry_key_requeues_the_selected_failed_job_only(repo: Path, settings: Settings,
                                                                   no_chart_timer: None) -> None:
    db = dg_seed(repo, settings, JOBS)
    app = dg_app(MemoryManager.open(repo, settings), settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_jobs(pilot)
        table = screen.query_one("#jobs", DataTable)
        table.move_cursor(row=table.get_row_index(JOBS[0][0]))  # a succeeded job: no retry
        await dg_wait(pilot, lambda: screen.selected is not None and screen.selected.id == JOBS[0][0])
        assert screen.check_action("retry", ()) is False
        await pilot.press("t")
        await dg_wait(pilot)
        assert read_job_counts(db)["failed"] == 2
        table.move_cursor(row=table.get_row_index(JOBS[2][0]))  # the failed extraction
        await dg_wait(pilot, lambda: screen.selected is not None and screen.selected.id == JOBS[2][0])
        assert screen.check_action("retry", ()) is True
        await pilot.press("t")  # asks first: a retry writes a fresh job
        await dg_wait(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")
        await dg_wait(pilot, lambda: app.screen is screen)
        assert read_job_counts(db)["failed"] == 2
        await pilot.press("t")
        await dg_wait(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await dg_wait(pilot, lambda: JOBS[2][0] not in [r.id for r in screen.rows])
        assert read_job_counts(db)["failed"] == 1 and read_job_counts(db)["pending"] == 2
        assert "queued again as job-" in plain(screen, "#process-status")
        assert any("queued again" in n.message for n in app._notifications)


async def test_without_a_model_the_action_says_so(repo: Path, settings: Settings, no_chart_timer: None) -> None:
    dg_seed(repo, settings, JOBS[4:5])
    app = dg_app(MemoryManager.open(repo, settings), settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_jobs(pilot)
        await pilot.press("p")
        await dg_wait(pilot)
        status = plain(screen, "#process-status")
        assert status.startswith("No Memory model: no model configured") and "AUTOPATCH_LLM_BASE_URL" in status
        assert not screen.processing and counts_shown(screen)["pending"] == 1
        assert any("No Memory model" in n.message for n in app._notifications)


async def test_degraded_store_shows_the_diagnostic(repo: Path, settings: Settings, no_chart_timer: None) -> None:
    dg_degrade(repo, settings)
    app = dg_app(MemoryManager.open(repo, settings), settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_jobs(pilot)
        assert "Memory is degraded: expected exactly one active thread" in plain(screen, "#note")
        assert screen.query_one("#jobs", DataTable).row_count == 0
        assert not screen.query_one("#jobs", DataTable).display and not screen.query_one("#counts").display
        await pilot.press("p")
        await dg_wait(pilot)
        assert "degraded" in plain(screen, "#process-status")
        assert not any(n.severity == "error" for n in app._notifications)


async def test_escape_goes_back_to_chat(repo: Path, settings: Settings, no_chart_timer: None) -> None:
    app = dg_app(MemoryManager.open(repo, settings), settings)
    async with app.run_test(size=SIZE) as pilot:
        await open_jobs(pilot)
        await pilot.press("escape")
        await dg_wait(pilot, lambda: isinstance(app.screen, ChatScreen))


# --------------------------------------------------------------------------- snapshots


@with_sizes(["empty", "populated", "degraded", "refusing"], "populated", SIZE)
def test_diagnostics_snapshot(state: str, size: tuple[int, int], repo: Path, settings: Settings, snap_compare: Any,
                              no_chart_timer: None) -> None:
    if state == "degraded":
        dg_degrade(repo, settings)
    else:
        dg_seed(repo, settings, {"populated": JOBS, "refusing": REFUSING_JOBS}.get(state, []))
    app = dg_app(MemoryManager.open(repo, settings), settings)

    async def run_before(pilot: Pilot) -> None:
        pilot.app.theme = "textual-dark"
        screen = await open_jobs(pilot)
        if state in ("populated", "refusing"):
            table = screen.query_one("#jobs", DataTable)
            table.move_cursor(row=table.get_row_index((JOBS if state == "populated" else REFUSING_JOBS)[2][0]))
        await dg_wait(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_every_diagnostics_binding_has_an_id() -> None:
    ids = [b.id for b in DiagnosticsScreen.BINDINGS]  # type: ignore[union-attr]
    assert ids == ["jobs.back", "jobs.process", "jobs.refresh", "jobs.retry"]
