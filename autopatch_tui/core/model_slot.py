"""The model client and the Memory model of one manager, built when first used.

A command that makes no model call (`memory status`, `list`, …) never imports the client, its
endpoint handling or the pipeline's model I/O (issue 23); the app builds them on its first request
or its worker's first job. Building is thread-safe (the worker and a request may race)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from autopatch_tui.core.errors import ConfigError

if TYPE_CHECKING:
    from autopatch_tui.core.llm.client import LLMClient
    from autopatch_tui.core.pipeline.model_io import MemoryModel
    from autopatch_tui.core.settings import Settings

NO_MODEL = "no model configured: set AUTOPATCH_LLM_BASE_URL (and AUTOPATCH_LLM_MODEL)"


def build_memory_model(settings: Settings, client: LLMClient | None) -> tuple[MemoryModel | None, str | None]:
    """The Memory model, or None with a safe reason (no model configured, unknown context)."""
    if client is None:
        return None, NO_MODEL
    model = settings.effective_memory_model
    if not model:
        return None, "no model name configured: set AUTOPATCH_LLM_MODEL or AUTOPATCH_MEMORY_MODEL"
    from autopatch_tui.core.llm.profiles import resolve_profile
    from autopatch_tui.core.pipeline.model_io import MemoryModel

    try:
        profile = resolve_profile(model, context_window=settings.context_window,
                                  max_output_tokens=settings.max_output_tokens)
    except ConfigError as exc:
        return None, str(exc)
    return MemoryModel(client, model, profile, settings.memory_max_output_tokens), None


class ModelSlot:
    def __init__(self, settings: Settings, client: LLMClient | None = None) -> None:
        self.settings = settings
        self._client = client  # given (tests), or built from the settings on first use
        self._model: tuple[MemoryModel | None, str | None] | None = None
        self._lock = threading.Lock()

    def _build(self) -> tuple[MemoryModel | None, str | None]:
        with self._lock:
            if self._model is None:
                if self._client is None and self.settings.has_model:
                    from autopatch_tui.core.llm.client import LLMClient

                    self._client = LLMClient.from_settings(self.settings)
                self._model = build_memory_model(self.settings, self._client)
            return self._model

    @property
    def client(self) -> LLMClient | None:
        self._build()
        return self._client

    @property
    def memory_model(self) -> MemoryModel | None:
        return self._build()[0]

    @property
    def problem(self) -> str | None:
        return self._build()[1]

    @property
    def built_client(self) -> LLMClient | None:
        """The client if there is one already (closing closes it; it never builds one)."""
        return self._client
