"""One running chat request seen from the UI: its cancel switch, and the live steps shown while it
runs (from the callbacks and progress the request already reports).

Cancelling abandons the request at once (issue 30, item 5): the turn's `AbortScope` shuts the
connection of the model request running on the worker thread down (`core/llm/abort.py`), also
while it waits for the first token, and sets a switch that the request's own callbacks check: the
blocked read, or the next streamed token, tool call or workflow step, raises `RequestCancelled`,
which — through the manager's `failing_turn` — ends the turn `failed` with its RAW text kept."""

from __future__ import annotations

import threading

from autopatch_tui.core.llm.abort import AbortScope, RequestCancelled

__all__ = ["RequestCancelled", "TurnControl", "tool_step"]

TOOL_STEPS = {
    "memory_search": "searching Memory",
    "memory_read": "reading a Memory item",
    "read_file": "reading a file",
    "list_files": "listing a folder",
    "search_text": "searching the code",
}


def tool_step(name: str) -> str:
    """A tool call as a step for people (`read_file` → `reading a file`)."""
    return TOOL_STEPS.get(name, f"using {name}")


class TurnControl:
    def __init__(self) -> None:
        self._cancel = threading.Event()
        self.scope = AbortScope()  # the worker runs the turn inside it (`scope.active()`)

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self) -> None:
        self._cancel.set()
        self.scope.abort()  # the model request running now is abandoned: its connection closed

    def check(self) -> None:
        """Called on the worker thread at every callback: raises once the user cancelled."""
        if self._cancel.is_set():
            raise RequestCancelled()
