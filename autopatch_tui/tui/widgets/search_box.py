"""A search field that keeps focus after Enter (typing more never fires the screen's letter keys);
Down moves focus to the results, visibly, as the placeholder says."""

from __future__ import annotations

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input


class SearchBox(Input):
    BINDINGS = [Binding("down", "to_results", "Results", id="search.results", show=False,
                        tooltip="move from the search field to its results")]

    class ToResults(Message):
        """The user asked to leave the field for the results (Down)."""

        def __init__(self, box: SearchBox) -> None:
            super().__init__()
            self.box = box

        @property
        def control(self) -> SearchBox:
            return self.box

    def action_to_results(self) -> None:
        self.post_message(self.ToResults(self))
