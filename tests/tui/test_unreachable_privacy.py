"""An endpoint the model call could not reach (contracts §6: no private endpoint in any error): the
message names `host:port` only for a loopback host (127.0.0.0/8, ::1, localhost); any other host is
"the configured endpoint (AUTOPATCH_LLM_BASE_URL)". The loopback case in the app is
tests/tui/test_prompt_keys.py::test_an_unreachable_endpoint_says_where_and_why_without_path_or_key."""

from __future__ import annotations

import asyncio

import pytest

from autopatch_tui.core.llm.errors import ProviderError
from autopatch_tui.core.llm.reach import is_loopback, unreachable_text
from tests.tui.test_chat import SIZE, make_app, notes, type_and_send, unreachable_settings, wait_idle

CONFIGURED = "cannot reach the model at the configured endpoint (AUTOPATCH_LLM_BASE_URL) (connection refused)"


def refused() -> ProviderError:
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused to llm.corp.internal:8443")
        except ConnectionRefusedError:
            raise RuntimeError("ConnectError") from None  # like httpx: the OS error is the context
    except RuntimeError:
        try:
            raise ProviderError("transient_provider", exc_type="APIConnectionError") from None
        except ProviderError as exc:
            return exc


@pytest.mark.parametrize("url, shown", [
    ("http://127.0.0.1:11434/v1", "127.0.0.1:11434"),
    ("http://127.8.9.10:8080/v1", "127.8.9.10:8080"),
    ("http://[::1]:8080/v1", "[::1]:8080"),
    ("http://localhost:1234/v1", "localhost:1234"),
    ("http://LOCALHOST./v1", "localhost.:80"),
])
def test_a_loopback_endpoint_is_named(url: str, shown: str) -> None:
    assert is_loopback(url)
    assert unreachable_text(refused(), url) == f"cannot reach the model at {shown} (connection refused)"


@pytest.mark.parametrize("url", ["https://llm.corp.internal:8443/v1", "http://10.1.2.3:8000/v1",
                                 "http://192.168.0.5/v1", "http://0.0.0.0:9/v1", "http://[fd00::1]:80/v1",
                                 "http://localhost.corp.internal:80/v1", "http://127.0.0.1.evil.test/v1",
                                 "https://user:sk-KEY@api.example.test/v1?key=x"])
def test_any_other_endpoint_is_the_configured_endpoint(url: str) -> None:
    assert not is_loopback(url)
    text = unreachable_text(refused(), url)
    assert text == CONFIGURED
    for secret in ("corp", "10.1", "192.168", "0.0.0.0", "fd00", "evil", "example", "sk-KEY", "8443"):
        assert secret not in text


def test_the_app_never_shows_a_non_loopback_endpoint(repo) -> None:
    settings, port = unreachable_settings("0.0.0.0")  # connects locally, but is not loopback
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "hello")
            await wait_idle(pilot, app)
            text = notes(app)[-1]
            assert CONFIGURED in text, text
            assert "0.0.0.0" not in text and str(port) not in text and "secret-path" not in text
            assert "SECRET-KEY" not in text

    asyncio.run(run())
