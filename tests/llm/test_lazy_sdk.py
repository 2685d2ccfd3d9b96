"""The model SDK is built on the first request, not when the client is constructed: the app
constructs its client while it opens, before its first frame, and importing + building the SDK
costs ~0.5 s of CPU. Built once however many threads ask at the same time; never after close."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest

from autopatch_tui.core.llm.client import LLMClient
from autopatch_tui.core.llm.errors import ProviderError
from tests.support.llm_stub import StubLLMServer, free_port

OPEN_WITH_MODEL = """
import json, sys
from pathlib import Path
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import load_settings
settings = load_settings({"AUTOPATCH_HOME": sys.argv[2], "AUTOPATCH_LLM_BASE_URL": sys.argv[3],
                          "AUTOPATCH_LLM_MODEL": "m", "AUTOPATCH_LLM_API_KEY": "sk-test"})
mgr = MemoryManager.open(Path(sys.argv[1]), settings)
h = mgr.begin_turn("we always use tabs")  # a turn written before any model call
mgr.complete_turn(h, "ok")
out = {"client": mgr.client is not None, "sdk_ready": mgr.client.sdk_ready,
       "loaded": [m for m in ("openai", "httpx") if m in sys.modules]}
mgr.close()
print(json.dumps(out))
"""


def test_opening_with_a_model_configured_imports_no_sdk(repo, isolated_env) -> None:
    base = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens: building the client must not call it
    out = subprocess.run([sys.executable, "-c", OPEN_WITH_MODEL, str(repo), str(isolated_env), base],
                         capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"client": True, "sdk_ready": False, "loaded": []}


def test_the_first_request_builds_the_sdk_and_it_answers(llm_stub: StubLLMServer) -> None:
    llm_stub.default("chat", "hello")
    with LLMClient(base_url=llm_stub.base_url, api_key="k", max_retries=0) as client:
        assert not client.sdk_ready
        assert client.complete(task="chat", model="m", messages=[{"role": "user", "content": "hi"}]).content == "hello"
        assert client.sdk_ready


def test_racing_first_requests_build_one_sdk_client(llm_stub: StubLLMServer, monkeypatch) -> None:
    llm_stub.default("chat", "hello")
    client = LLMClient(base_url=llm_stub.base_url, api_key="k", max_retries=1)
    built: list[object] = []
    real_build = client._build_sdk
    gate = threading.Barrier(6)

    def slow_build():  # slow enough that the other racers reach _sdk() while it builds
        time.sleep(0.2)
        pair = real_build()
        built.append(pair)
        return pair

    monkeypatch.setattr(client, "_build_sdk", slow_build)
    answers: list[str | None] = []
    errors: list[BaseException] = []

    def ask() -> None:
        gate.wait(5)
        try:
            answers.append(client.complete(task="chat", model="m", messages=[{"role": "user", "content": "hi"}],
                                           sdk_retries=len(answers) % 2 == 0).content)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    client.close()
    assert errors == [] and answers == ["hello"] * 6
    assert len(built) == 1  # one connection pool, shared by the retrying and the no-retry view


def test_a_closed_client_fails_as_a_provider_error_and_builds_nothing(llm_stub: StubLLMServer) -> None:
    client = LLMClient(base_url=llm_stub.base_url, api_key="k", max_retries=0)
    client.close()
    with pytest.raises(ProviderError) as info:
        client.complete(task="chat", model="m", messages=[{"role": "user", "content": "hi"}])
    assert info.value.category == "transient_provider"
    assert not client.sdk_ready
    assert llm_stub.requests == []
