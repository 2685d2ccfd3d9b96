"""Agent tests: a MemoryManager whose model is the scripted stub (`llm_stub`), SDK retries off."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from autopatch_tui.core.agent import request_context as request_module
from autopatch_tui.core.agent.chat import ChatService
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.recall.session import RecallSession
from autopatch_tui.core.settings import load_settings
from tests.support.llm_stub import CapturedRequest, StubLLMServer

MODEL = "gpt-4o"


def extraction_ok(request: CapturedRequest) -> dict:
    """A valid extraction reply: a checkpoint naming the batch, no candidates."""
    payload = json.loads(request.messages[-1]["content"])
    seqs = ",".join(str(t["sequence"]) for t in payload["turns"])
    return {"thread_checkpoint": f"CHECKPOINT after turns {seqs}", "candidates": []}


@pytest.fixture
def model_env(llm_stub: StubLLMServer, isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The stub as the configured model; `llm_max_retries = 0` (config.toml only) so failures are fast."""
    (isolated_env / "config.toml").write_text("llm_max_retries = 0\nllm_timeout_seconds = 30\n", encoding="utf-8")
    env = {"AUTOPATCH_LLM_BASE_URL": llm_stub.base_url, "AUTOPATCH_LLM_MODEL": MODEL,
           "AUTOPATCH_LLM_API_KEY": "test-key"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    llm_stub.default("extraction", extraction_ok)
    return env


@pytest.fixture
def open_manager(model_env: dict[str, str]) -> Iterator[Callable[[Path], MemoryManager]]:
    opened: list[MemoryManager] = []

    def open_(repo: Path) -> MemoryManager:
        mgr = MemoryManager.open(repo, load_settings())
        opened.append(mgr)
        return mgr

    yield open_
    for mgr in opened:
        mgr.close()


@pytest.fixture
def chat_mgr(repo: Path, open_manager: Callable[[Path], MemoryManager]) -> MemoryManager:
    return open_manager(repo)


@pytest.fixture
def chat(chat_mgr: MemoryManager) -> ChatService:
    return ChatService(chat_mgr)


def chat_requests(stub: StubLLMServer) -> list[CapturedRequest]:
    return stub.requests_for("chat")


@pytest.fixture
def sessions(monkeypatch: pytest.MonkeyPatch) -> list[RecallSession]:
    """Every RecallSession a request creates (to inspect it after the request)."""
    made: list[RecallSession] = []

    class Spy(RecallSession):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(request_module, "RecallSession", Spy)
    return made
