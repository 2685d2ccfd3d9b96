"""Shared test setup: every test runs with an isolated environment.

* every `AUTOPATCH_*` variable of the outer environment is removed, and `AUTOPATCH_HOME` points at a
  fresh temporary folder, so no test ever reads or writes the developer's real per-user state;
* the fixtures `repo`, `settings`, `manager` and `run_cli` live in `tests/support/fixtures.py`;
* the scripted LLM server fixture `llm_stub` lives in `tests/support/llm_stub.py`;
* what the process learned about endpoints (no JSON mode, no tools: `core.llm.endpoint`) is
  forgotten before and after every test.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autopatch_tui.core.llm.endpoint import ENDPOINTS

pytest_plugins = ["tests.support.llm_stub", "tests.support.fixtures"]


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """No `AUTOPATCH_*` variable leaks in from outside; `AUTOPATCH_HOME` is a private tmp folder."""
    for name in list(os.environ):
        if name.startswith("AUTOPATCH_"):
            monkeypatch.delenv(name, raising=False)
    home = tmp_path_factory.mktemp("autopatch-home")
    monkeypatch.setenv("AUTOPATCH_HOME", str(home))
    return home


@pytest.fixture(autouse=True)
def forgotten_endpoints() -> None:
    """The endpoint memory is process-wide (one per base URL and model): no test inherits another's."""
    ENDPOINTS.forget()
    yield
    ENDPOINTS.forget()
