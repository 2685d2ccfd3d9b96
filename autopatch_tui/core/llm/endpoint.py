"""What a model endpoint can do, as far as this process has seen: JSON mode, tool calling, and
usage in a stream (`stream_options.include_usage`, refused by a few strict servers).

`AUTOPATCH_LLM_JSON_MODE` / `AUTOPATCH_LLM_TOOLS` are `auto` (default), `on` or `off`. In `auto`
a server that rejects `response_format`, or that is seen to ignore (or refuse) tools, is
remembered here — per base URL and model, in this process only — so later calls go straight to
the fallback. Nothing here is persisted, and nothing about an endpoint (URL, model) leaves this
module: callers only ask yes/no questions.
"""

from __future__ import annotations

import threading

MODES: tuple[str, ...] = ("auto", "on", "off")


def check_mode(value: str, what: str) -> str:
    mode = value.strip().lower() if isinstance(value, str) else value
    if mode not in MODES:
        raise ValueError(f"{what} must be one of {', '.join(MODES)}")
    return mode


class EndpointMemory:
    """Thread-safe flags per (base URL, model)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._no_json_mode: set[tuple[str, str]] = set()
        self._no_tools: set[tuple[str, str]] = set()
        self._no_stream_usage: set[tuple[str, str]] = set()

    @staticmethod
    def _key(base_url: str | None, model: str) -> tuple[str, str]:
        return ((base_url or "").rstrip("/"), model)

    def json_mode_rejected(self, base_url: str | None, model: str) -> bool:
        with self._lock:
            return self._key(base_url, model) in self._no_json_mode

    def reject_json_mode(self, base_url: str | None, model: str) -> None:
        with self._lock:
            self._no_json_mode.add(self._key(base_url, model))

    def tools_unusable(self, base_url: str | None, model: str) -> bool:
        with self._lock:
            return self._key(base_url, model) in self._no_tools

    def mark_tools_unusable(self, base_url: str | None, model: str) -> None:
        with self._lock:
            self._no_tools.add(self._key(base_url, model))

    def stream_usage_rejected(self, base_url: str | None, model: str) -> bool:
        with self._lock:
            return self._key(base_url, model) in self._no_stream_usage

    def reject_stream_usage(self, base_url: str | None, model: str) -> None:
        with self._lock:
            self._no_stream_usage.add(self._key(base_url, model))

    def forget(self) -> None:
        """Forget everything (tests)."""
        with self._lock:
            self._no_json_mode.clear()
            self._no_tools.clear()
            self._no_stream_usage.clear()


ENDPOINTS = EndpointMemory()
