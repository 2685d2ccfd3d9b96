"""A DataTable whose columns size to the terminal.

Each column has a width; text columns (`flex` > 0) take the remaining width in proportion to their
flex, never below their own width. When even the widths do not fit, the columns with the highest
`drop` rank leave first (0 = never dropped: the identifying column and the failure reason); the
documented order is each screen's column spec. Rows are kept with all their cells, so a column
that left comes back when the terminal grows again."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import events
from textual.widgets import DataTable

from autopatch_tui.tui.textual_compat import remeasure_columns

SCROLLBAR = 2  # the vertical scrollbar's cells, kept free so a growing table does not shift columns


@dataclass(frozen=True)
class Col:
    key: str
    label: str
    width: int  # the column's width (a text column's minimum)
    flex: int = 0  # > 0: a text column, shares the remaining width
    drop: int = 0  # > 0: dropped on narrow terminals, the highest rank first; 0: never
    cut_left: bool = False  # a text too long loses its head ("…src/shop-api"): paths differ at their end


def cut_head(value: Any, width: int) -> Any:
    """`value` (a str or `Text`) cut from the left to `width` cells with a leading "…"."""
    from rich.cells import cell_len

    text = value if isinstance(value, Text) else Text(str(value))
    if width < 2 or cell_len(text.plain) <= width:
        return value
    plain = text.plain
    while plain and cell_len(plain) > width - 1:
        plain = plain[1:]
    return Text("…" + plain, style=text.style, no_wrap=True, overflow="crop", justify=text.justify)


def fit_columns(spec: Sequence[Col], available: int, padding: int = 1) -> list[tuple[Col, int]]:
    """The columns shown in `available` cells and their widths (each cell adds 2 × `padding`)."""
    shown = list(spec)

    def need(cols: list[Col]) -> int:
        return sum(c.width + 2 * padding for c in cols)

    for victim in sorted((c for c in spec if c.drop), key=lambda c: -c.drop):
        if need(shown) <= available:
            break
        shown.remove(victim)
    spare = max(0, available - need(shown))
    flex_total = sum(c.flex for c in shown)
    widths = []
    given = 0
    flexed = [c for c in shown if c.flex]
    for c in shown:
        extra = 0
        if c.flex and flex_total:
            extra = spare * c.flex // flex_total
            if c is flexed[-1]:
                extra = spare - given  # the rounding remainder goes to the last text column
            given += extra
        widths.append((c, c.width + extra))
    return widths


class ResponsiveTable(DataTable):
    """Call `set_spec` instead of `add_column`; `add_row` takes one cell per spec column."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.spec: tuple[Col, ...] = ()
        self.shown: list[tuple[Col, int]] = []
        self._cells: dict[Any, tuple[Any, ...]] = {}

    @property
    def shown_keys(self) -> list[str]:
        return [c.key for c, _ in self.shown]

    def _available(self) -> int:
        return max(0, self.size.width - SCROLLBAR)

    def set_spec(self, spec: Sequence[Col]) -> None:
        """New columns (the rows go with them)."""
        self.spec = tuple(spec)
        self._cells = {}
        super().clear(columns=True)
        self.shown = fit_columns(self.spec, self._available() or sum(c.width + 2 for c in spec), self.cell_padding)
        for col, width in self.shown:
            self.add_column(Text(col.label), key=col.key, width=width)

    def add_row(self, *cells: Any, key: Any = None, **kwargs: Any) -> Any:  # type: ignore[override]
        if self.spec:
            self._cells[key] = cells
            index = {c.key: i for i, c in enumerate(self.spec)}
            cells = tuple(cut_head(cells[index[c.key]], width) if c.cut_left else cells[index[c.key]]
                          for c, width in self.shown)
        return super().add_row(*cells, key=key, **kwargs)

    def set_cell(self, row_key: Any, column_key: str, value: Any) -> None:
        """Change one cell of a row, shown or not (a later refit keeps the new value)."""
        cells = self._cells.get(row_key)
        index = next((i for i, c in enumerate(self.spec) if c.key == column_key), None)
        if cells is None or index is None:
            return
        self._cells[row_key] = cells[:index] + (value,) + cells[index + 1:]
        shown = next(((c, w) for c, w in self.shown if c.key == column_key), None)
        if shown is not None:
            self.update_cell(row_key, column_key, cut_head(value, shown[1]) if shown[0].cut_left else value)

    def clear(self, columns: bool = False) -> DataTable:  # type: ignore[override]
        self._cells = {}
        if columns:
            self.spec = ()
            self.shown = []
        return super().clear(columns=columns)

    def on_resize(self, event: events.Resize) -> None:
        self.refit()

    def refit(self) -> None:
        if not self.spec or not self._available():
            return
        fitted = fit_columns(self.spec, self._available(), self.cell_padding)
        if fitted == self.shown:
            return
        if [c.key for c, _ in fitted] == self.shown_keys and not any(c.cut_left for c, _ in fitted):
            for col, width in fitted:  # the same columns: widths change in place
                column = self.columns[col.key]  # type: ignore[index]
                column.width = width
                column.auto_width = False
            self.shown = fitted
            remeasure_columns(self)
            self.refresh()
            return
        self._rebuild(fitted)

    def _rebuild(self, fitted: list[tuple[Col, int]]) -> None:
        """Another set of columns: rebuild with every row's kept cells, the cursor on the same row."""
        cursor_key = None
        if self.row_count and 0 <= self.cursor_row < self.row_count:
            cursor_key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        rows = list(self._cells.items())
        spec = self.spec
        super().clear(columns=True)
        self.spec = spec
        self.shown = fitted
        self._cells = {}
        for col, width in fitted:
            self.add_column(Text(col.label), key=col.key, width=width)
        for key, cells in rows:
            self.add_row(*cells, key=key)
        if cursor_key is not None and cursor_key in self.rows:
            self.move_cursor(row=self.get_row_index(cursor_key), animate=False)
