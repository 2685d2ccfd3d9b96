"""Fixtures of the Memory pipeline tests.

* `make_manager(clock=None, repo=None, stub=True, **env)` – a `MemoryManager` whose model is the
  `llm_stub` server (SDK retries 0, 5 s timeout); `env` are AUTOPATCH_* overrides such as
  `MEMORY_LEASE_SECONDS=1`. Every manager is closed after the test (the stub first, so no call
  stays blocked on a `wait_event`).
* `_fast_ssl_context` (autouse) – every model client here talks plain HTTP to 127.0.0.1, so the
  TLS trust store that the SDK's HTTP layer loads per client (~0.15 s each) is loaded once.
* `pipe` – one such manager on `repo` with a default consolidation reply that creates one item per
  candidate.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpcore2
import pytest

from autopatch_tui.core.manager import MemoryManager
from tests.support.llm_stub import StubLLMServer
from tests.support.pipeline_helpers import create_all, stub_settings

_shared_ssl_context = functools.lru_cache(maxsize=None)(httpcore2.default_ssl_context)


@pytest.fixture(autouse=True)
def _fast_ssl_context(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(httpcore2, "default_ssl_context", _shared_ssl_context)


@pytest.fixture
def make_manager(repo: Path, llm_stub: StubLLMServer) -> Iterator[Callable[..., MemoryManager]]:
    made: list[MemoryManager] = []

    def make(clock: Any = None, repo_path: Path | None = None, *, stub: bool = True, max_retries: int = 0,
             timeout: float = 5.0, **env: Any) -> MemoryManager:
        settings = stub_settings(llm_stub if stub else None, max_retries=max_retries, timeout=timeout, **env)
        mgr = MemoryManager(repo_path or repo, settings, clock=clock)
        made.append(mgr)
        return mgr

    yield make
    llm_stub.close()  # releases every reply still waiting, so no manager thread stays blocked
    for mgr in reversed(made):
        mgr.close(join_timeout=5)


@pytest.fixture
def pipe(make_manager: Callable[..., MemoryManager], llm_stub: StubLLMServer) -> MemoryManager:
    llm_stub.default("consolidation", create_all)
    return make_manager()
