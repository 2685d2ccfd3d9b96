"""Time, injectable so tests can move it (fencing and lease expiry)."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch (wall clock; stored in SQLite for leases)."""

    def monotonic(self) -> float:
        """Seconds on a monotonic clock (deadlines inside one process)."""

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def iso_utc(ts: float) -> str:
    """ISO-8601 UTC with milliseconds, e.g. 2026-11-29T22:34:45.123Z."""
    from datetime import UTC, datetime  # imported when first used: most commands print no time

    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(ts * 1000) % 1000:03d}Z"
