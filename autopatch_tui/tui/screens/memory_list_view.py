"""What the Memory browser's list views share (To review, Audit, Not remembered): one list table,
focused as the view's list, loaded by a thread worker whose result a newer load supersedes (the
view's `_gen`, set to 0 by its `__init__`; its `_load(gen)` shows a result only when `gen` is still
current)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import ClassVar

from textual.containers import Vertical

from autopatch_tui.tui.widgets.responsive_table import ResponsiveTable


class MemoryListView(Vertical):
    TABLE_ID: ClassVar[str]  # the list table's id
    LOAD_GROUP: ClassVar[str]  # the worker group of a load
    _gen: int

    @property
    def table(self) -> ResponsiveTable:
        return self.query_one(f"#{self.TABLE_ID}", ResponsiveTable)

    def focus_list(self) -> None:
        self.table.focus()

    def _run(self, fn: Callable[[], None], group: str) -> None:
        self.run_worker(fn, thread=True, group=group, exit_on_error=False)

    def reload(self) -> None:
        self._gen += 1
        self._run(partial(self._load, self._gen), self.LOAD_GROUP)

    def _load(self, gen: int) -> None:
        raise NotImplementedError
