"""Events the manager reports to whoever listens (the TUI turns them into Textual messages).

Callbacks run on the thread that produced the event (often a worker thread): listeners must only
hand the event over (e.g. `App.post_message`), never touch UI state directly."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autopatch_tui.core.agent.prompt_report import PromptReport

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MemoryChanged:
    """Items, threads or health changed; screens should reload what they show."""

    reason: str


@dataclass(frozen=True)
class JobStarted:
    job_id: str
    kind: str


@dataclass(frozen=True)
class JobFinished:
    job_id: str
    kind: str
    status: str
    category: str | None = None


@dataclass(frozen=True)
class QueueCounts:
    pending: int
    leased: int
    retry_wait: int
    failed: int


@dataclass(frozen=True)
class FlushProgress:
    done: int
    total: int
    timed_out: bool = False


@dataclass(frozen=True)
class Notice:
    """A safe, user-facing warning (never content)."""

    level: str  # "info" | "warning" | "error"
    text: str


@dataclass(frozen=True)
class PromptMeasured:
    """A chat or repair request was sent (or ended): its prompt by part, in tokens, never text."""

    report: PromptReport


Event = MemoryChanged | JobStarted | JobFinished | QueueCounts | FlushProgress | Notice | PromptMeasured
Listener = Callable[[Event], None]


class EventHub:
    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def emit(self, event: Event) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(event)
            except Exception:  # a broken listener must not break the worker that reports
                log.exception("event listener failed for %s", type(event).__name__)
