"""One running chat request seen from the UI: its cancel switch, and the live steps shown while it
runs (from the callbacks and progress the request already reports).

Cancelling cannot interrupt a blocking HTTP read from the UI thread; it sets a switch that the
request's own callbacks check on the worker thread: the next streamed token, tool call or
workflow step raises `RequestCancelled`, which closes the stream and — through the manager's
`failing_turn` — ends the turn `failed` with its RAW text kept."""

from __future__ import annotations

import threading

from autopatch_tui.core.errors import AutopatchError

TOOL_STEPS = {
    "memory_search": "searching Memory",
    "memory_read": "reading a Memory item",
    "read_file": "reading a file",
    "list_files": "listing a folder",
    "search_text": "searching the code",
}


class RequestCancelled(AutopatchError):
    """The user cancelled the running request (Escape)."""

    def __init__(self) -> None:
        super().__init__("cancelled by you (Escape)")


def tool_step(name: str) -> str:
    """A tool call as a step for people (`read_file` → `reading a file`)."""
    return TOOL_STEPS.get(name, f"using {name}")


class TurnControl:
    def __init__(self) -> None:
        self._cancel = threading.Event()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self) -> None:
        self._cancel.set()

    def check(self) -> None:
        """Called on the worker thread at every callback: raises once the user cancelled."""
        if self._cancel.is_set():
            raise RequestCancelled()
