"""Columns size to the terminal: text columns take the remaining width, narrow terminals drop the
least useful columns in the documented order, never the failure reason (issue 15)."""

from __future__ import annotations

import asyncio

from textual.app import App, ComposeResult

from autopatch_tui.tui.screens.diagnostics import JOB_COLUMNS
from autopatch_tui.tui.screens.memory_list import LIST_COLUMNS
from autopatch_tui.tui.screens.stores import COLUMNS as STORE_COLUMNS
from autopatch_tui.tui.widgets.history_tables import TURN_COLUMNS
from autopatch_tui.tui.widgets.responsive_table import Col, ResponsiveTable, fit_columns


def keys(fitted: list[tuple[Col, int]]) -> list[str]:
    return [c.key for c, _ in fitted]


def used(fitted: list[tuple[Col, int]]) -> int:
    return sum(w + 2 for _, w in fitted)


def test_text_columns_take_the_remaining_width_in_proportion():
    wide = fit_columns(LIST_COLUMNS, 236)
    widths = dict((c.key, w) for c, w in wide)
    assert used(wide) == 236  # the whole width is used
    assert widths["kind"] == 10  # a fixed column keeps its width
    assert widths["subject"] > 60 and widths["statement"] > widths["subject"]  # not cut at ~18


def test_narrow_terminals_drop_columns_in_the_documented_order_never_the_reason():
    assert keys(fit_columns(JOB_COLUMNS, 200)) == [c.key for c in JOB_COLUMNS]
    seen = []
    for width in range(200, 40, -1):
        shown = keys(fit_columns(JOB_COLUMNS, width))
        assert {"kind", "status", "category", "rule"} <= set(shown), width  # the failure reason never leaves
        for key in [c.key for c in JOB_COLUMNS if c.key not in shown]:
            if key not in seen:
                seen.append(key)
        fitted = fit_columns(JOB_COLUMNS, width)
        assert used(fitted) <= width or not any(c.drop for c, _ in fitted)
    assert seen == ["calls", "attempts", "when", "stage", "phase"]
    assert keys(fit_columns(TURN_COLUMNS, 76)) == ["seq", "state", "created", "text"]  # Intent leaves first
    assert keys(fit_columns(STORE_COLUMNS, 76)) == ["store", "label", "root", "state"]  # Facts leaves first
    # the live/retired state never leaves (issue 20: at 80 columns it did, the first of all)
    assert keys(fit_columns(STORE_COLUMNS, 56)) == ["store", "root", "state"]


class TableApp(App):
    def compose(self) -> ComposeResult:
        yield ResponsiveTable(id="t")

    def on_mount(self) -> None:
        table = self.query_one(ResponsiveTable)
        table.set_spec(JOB_COLUMNS)
        for n in range(3):
            table.add_row(*[f"{c.key}{n}" for c in JOB_COLUMNS], key=f"job{n}")
        table.move_cursor(row=2)


def test_a_resize_refits_the_columns_keeps_the_rows_and_the_cursor_and_brings_columns_back():
    app = TableApp()

    async def run() -> None:
        async with app.run_test(size=(200, 10)) as pilot:
            await pilot.pause()
            table = app.query_one(ResponsiveTable)
            assert table.shown_keys == [c.key for c in JOB_COLUMNS]
            await pilot.resize_terminal(80, 10)
            await pilot.pause()
            assert "calls" not in table.shown_keys and "rule" in table.shown_keys
            assert table.row_count == 3 and table.cursor_row == 2
            assert str(table.get_cell("job2", "rule")) == "rule2"
            await pilot.resize_terminal(200, 10)
            await pilot.pause()
            assert table.shown_keys == [c.key for c in JOB_COLUMNS]
            assert str(table.get_cell("job1", "calls")) == "calls1"

    asyncio.run(run())


class BarApp(App):
    def compose(self) -> ComposeResult:
        from autopatch_tui.tui.widgets.status_bar import StatusBar

        yield StatusBar()


def test_the_status_bar_keeps_the_thread_readable_at_80_columns():
    from autopatch_tui.tui.widgets.status_bar import StatusBar

    app = BarApp()

    async def run() -> None:
        async with app.run_test(size=(80, 3)) as pilot:
            bar = app.query_one(StatusBar)
            bar.model_label = "qwen2.5-coder:32b-instruct-q8_0"
            bar.pending, bar.failed, bar.thread_id = 12, 3, "thr-01HISTACTIVE00000000ABCDEFGH"
            bar.busy = "reading a file…"
            await pilot.pause()
            line = bar.render().plain
            assert len(line) <= 80 and "thread: ABCDEFGH" in line and "reading a file" in line
            await pilot.resize_terminal(200, 3)
            await pilot.pause()
            assert "model: qwen2.5-coder:32b-instruct-q8_0" in bar.render().plain  # wide: the full line

    asyncio.run(run())
