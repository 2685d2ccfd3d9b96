"""The Jobs screen (F5) shows an extraction's refusal verdict (issue 9): the semantic gate's
`rule:count` pairs in the rule column and the detail line, as a refusal, not as a failure."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import Settings
from tests.support.tui_text import plain
from tests.support.tui_wait import settle
from tests.tui.test_diagnostics import SIZE, dg_app, dg_seed, no_chart_timer, open_jobs, table_text  # noqa: F401

pytestmark = pytest.mark.anyio

JOB = ("job-01DIAG00000000000000000001", "extraction", "succeeded_no_output", 1, 1, None, None, None,
       "one_off_scope:2.undecided:1", "all_rejected")


async def test_the_refusal_verdict_is_shown_as_a_refusal(repo: Path, settings: Settings, no_chart_timer: None) -> None:
    dg_seed(repo, settings, [JOB])
    app = dg_app(MemoryManager.open(repo, settings), settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_jobs(pilot)
        table = screen.query_one("#jobs", DataTable)
        row = table_text(table)[table.get_row_index(JOB[0])]
        assert row[1] == "no output" and row[5:] == ["", "", "", "one_off_scope:2.undecided:1"]
        table.move_cursor(row=table.get_row_index(JOB[0]))
        await settle(pilot, lambda: JOB[0] in plain(screen, "#job-detail"))
        detail = plain(screen, "#job-detail")
        assert "refused: one_off_scope:2.undecided:1" in detail and "failure" not in detail
        assert "no output: all_rejected" in detail


DISAGREED = ("job-01DIAG00000000000000000002", "extraction", "succeeded_no_output", 1, 1, None, None, None,
             "code_fact:1.model_reading:1.d-model_reading:1.d-code_fact:1", "all_rejected")


async def test_the_readers_disagreement_is_shown_apart_from_the_refusals(repo: Path, settings: Settings,
                                                                          no_chart_timer: None) -> None:
    dg_seed(repo, settings, [DISAGREED])
    app = dg_app(MemoryManager.open(repo, settings), settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_jobs(pilot)
        table = screen.query_one("#jobs", DataTable)
        table.move_cursor(row=table.get_row_index(DISAGREED[0]))
        await settle(pilot, lambda: DISAGREED[0] in plain(screen, "#job-detail"))
        detail = plain(screen, "#job-detail")
        assert "refused: code_fact:1.model_reading:1  ·  readers disagreed: model_reading 1 · code_fact 1" in detail
        # the disagreements are not refusals: the counts line holds the two refused candidates only
        assert "by rule: code_fact 1 · model_reading 1" in plain(screen, "#refusals")
