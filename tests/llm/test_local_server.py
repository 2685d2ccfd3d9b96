"""Against the servers people run locally (issue 12), at the client level: bounded output, strict
message shapes, validation 500s that are not transient, JSON mode with a remembered fallback, no
SDK retry behind a Memory call, and the LLM settings from the environment."""

from __future__ import annotations

import json
import traceback

import pytest

from autopatch_tui.core.errors import ConfigError
from autopatch_tui.core.llm.bounds import chat_output_bound, memory_output_bound
from autopatch_tui.core.llm.client import LLMClient
from autopatch_tui.core.llm.endpoint import ENDPOINTS
from autopatch_tui.core.llm.errors import ProviderError
from autopatch_tui.core.llm.json_mode import complete_memory
from autopatch_tui.core.llm.profiles import resolve_profile
from autopatch_tui.core.llm.shapes import strict_messages
from autopatch_tui.core.settings import load_settings
from tests.support.llm_stub import Reply, Strict, StubLLMServer

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "{}"}]


@pytest.fixture
def strict() -> StubLLMServer:
    server = StubLLMServer(strict=Strict())
    yield server
    server.close()


def client_for(stub: StubLLMServer, **kw) -> LLMClient:
    kw.setdefault("max_retries", 0)
    return LLMClient(base_url=stub.base_url, api_key="k", timeout=5.0, **kw)


# --- bounds ------------------------------------------------------------------------------------
def test_chat_bound_is_the_output_budget_and_shrinks_with_the_prompt_never_past_the_window():
    profile = resolve_profile("local", context_window=8192, max_output_tokens=2048)
    assert chat_output_bound(profile, 100) == 2048
    room = 8192 - profile.safety_margin
    grown = chat_output_bound(profile, room - 700)  # tool results filled most of the window
    assert grown == 700 and (room - 700) + grown == room
    assert chat_output_bound(profile, room + 5000) == 256  # overflowing prompt: still a positive bound


def test_memory_bounds_fit_the_contract_the_setting_and_grow_once_after_truncation():
    profile = resolve_profile("gpt-4o", context_window=None, max_output_tokens=None)  # 16k output budget
    assert memory_output_bound(profile, "extraction", 1000) == 4096
    assert memory_output_bound(profile, "merge_judge", 1000) == 512
    assert memory_output_bound(profile, "extraction", 1000, configured=1500) == 1500
    assert memory_output_bound(profile, "merge_judge", 1000, configured=1500) == 512  # a verdict stays short
    assert memory_output_bound(profile, "extraction_repair", 1000, after_truncation=True) == 8192
    small = resolve_profile("local", context_window=4096, max_output_tokens=1024)
    assert memory_output_bound(small, "extraction", 500) == 1024  # never past the profile's budget
    room = 4096 - small.safety_margin - 2500
    assert memory_output_bound(small, "extraction_repair", 2500, after_truncation=True) == min(2048, room)
    # the window leaves less room than the bound: the bound is what fits, never past the window
    assert memory_output_bound(small, "extraction_repair", 4096 - small.safety_margin - 900,
                               after_truncation=True) == 900


# --- strict shapes -----------------------------------------------------------------------------
def test_strict_shapes_turn_null_content_into_strings_and_keep_the_callers_list():
    calls = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": None}}]
    original = [{"role": "assistant", "content": None, "tool_calls": calls, "name": None},
                {"role": "tool", "tool_call_id": "c1", "content": {"rows": 2}},
                {"role": "assistant", "content": "x", "tool_calls": []}]
    shaped = strict_messages(original)
    assert shaped[0] == {"role": "assistant", "content": "",
                         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    assert shaped[1]["content"] == '{"rows": 2}'
    assert shaped[2] == {"role": "assistant", "content": "x"}
    assert original[0]["content"] is None and original[0]["tool_calls"][0]["function"]["arguments"] is None


def test_a_strict_server_accepts_what_the_client_sends_for_a_tool_call_step(strict):
    strict.default("chat", "ok")
    client = client_for(strict)
    messages = [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "result"}]
    assert client.stream(task="chat", model="m", messages=messages, on_delta=lambda _: None,
                         max_tokens=50).content == "ok"
    [sent] = strict.requests
    assert sent.messages[1]["content"] == ""


def test_a_validation_500_is_bad_request_not_transient_not_retried_and_never_leaks_its_body(strict):
    marker = "BODY-MARKER-91c"
    strict.default("chat", Reply(status=500, error_body={"error": {
        "message": f"1 validation error\nmessages.2.content\n  Input should be a valid string {marker}"}}))
    client = client_for(strict, max_retries=2)
    with pytest.raises(ProviderError) as info:
        client.stream(task="chat", model="m", messages=MESSAGES, on_delta=lambda _: None, max_tokens=10)
    err = info.value
    assert (err.category, err.status_code, err.retryable) == ("bad_request", 500, False)
    assert len(strict.requests) == 1  # the SDK retries 500s; a validation error is never sent again
    shown = str(err) + repr(err) + "".join(traceback.format_exception(err))
    assert marker not in shown and "valid string" not in shown


def test_an_ordinary_500_stays_transient(llm_stub):
    llm_stub.default("chat", Reply(status=500, error_body={"error": {"message": "out of memory"}}))
    with pytest.raises(ProviderError) as info:
        client_for(llm_stub).complete(task="chat", model="m", messages=MESSAGES, max_tokens=5)
    assert info.value.category == "transient_provider"


def test_max_tokens_must_be_positive(llm_stub):
    with pytest.raises(ValueError):
        client_for(llm_stub).complete(task="chat", model="m", messages=MESSAGES, max_tokens=0)
    assert llm_stub.requests == []


# --- JSON mode ---------------------------------------------------------------------------------
def test_json_mode_auto_asks_then_remembers_a_refusal_per_endpoint_and_model():
    server = StubLLMServer(strict=Strict(json_mode="rejected"))
    try:
        server.default("extraction", {"ok": True})
        client = client_for(server)
        done = complete_memory(client, task="extraction", model="m1", messages=MESSAGES, max_tokens=64)
        assert json.loads(done.content) == {"ok": True}
        first, second = server.requests
        assert first.body["response_format"] == {"type": "json_object"} and "response_format" not in second.body
        assert second.body["max_tokens"] == 64 and second.body["temperature"] == 0
        complete_memory(client, task="extraction", model="m1", messages=MESSAGES, max_tokens=64)
        assert len(server.requests) == 3 and "response_format" not in server.requests[2].body  # remembered
        complete_memory(client, task="extraction", model="m2", messages=MESSAGES, max_tokens=64)
        assert server.requests[3].body["response_format"] == {"type": "json_object"}  # another model: asked
    finally:
        server.close()


def test_json_mode_on_never_drops_it_and_off_never_asks(strict):
    server = StubLLMServer(strict=Strict(json_mode="rejected"))
    try:
        server.default("extraction", {"ok": True})
        with pytest.raises(ProviderError) as info:
            complete_memory(client_for(server, json_mode="on"), task="extraction", model="m", messages=MESSAGES,
                            max_tokens=64)
        assert info.value.category == "bad_request" and len(server.requests) == 1
    finally:
        server.close()
    strict.default("extraction", {"ok": True})
    complete_memory(client_for(strict, json_mode="off"), task="extraction", model="m", messages=MESSAGES,
                    max_tokens=64)
    assert "response_format" not in strict.requests[0].body


def test_json_mode_is_not_dropped_for_an_unrelated_refusal(llm_stub):
    llm_stub.default("extraction", Reply(status=400, error_body={"error": {"message": "model not loaded"}}))
    with pytest.raises(ProviderError):
        complete_memory(client_for(llm_stub), task="extraction", model="m", messages=MESSAGES, max_tokens=64)
    assert len(llm_stub.requests) == 1
    assert not ENDPOINTS.json_mode_rejected(llm_stub.base_url, "m")


# --- no SDK retry behind a Memory call ----------------------------------------------------------
def test_a_timed_out_memory_call_is_not_retried_by_the_sdk_but_chat_keeps_its_retries(llm_stub):
    llm_stub.default("extraction", Reply(content="{}", delay=2.0))
    llm_stub.default("classify", Reply(status=503))
    client = LLMClient(base_url=llm_stub.base_url, api_key="k", timeout=0.3, max_retries=2)
    with pytest.raises(ProviderError) as info:
        complete_memory(client, task="extraction", model="m", messages=MESSAGES, max_tokens=64)
    assert info.value.category == "timeout"
    assert len(llm_stub.requests_for("extraction")) == 1
    with pytest.raises(ProviderError):
        client.complete(task="classify", model="m", messages=MESSAGES, max_tokens=8)
    assert len(llm_stub.requests_for("classify")) == 3  # the configured SDK retries still apply elsewhere


# --- settings ----------------------------------------------------------------------------------
def test_llm_settings_come_from_the_environment_and_bad_values_are_clear(isolated_env):
    s = load_settings({"AUTOPATCH_HOME": str(isolated_env), "AUTOPATCH_LLM_TIMEOUT_SECONDS": "45",
                       "AUTOPATCH_LLM_MAX_RETRIES": "0", "AUTOPATCH_LLM_JSON_MODE": " OFF ",
                       "AUTOPATCH_LLM_TOOLS": "on", "AUTOPATCH_MEMORY_MAX_OUTPUT_TOKENS": "1500"})
    assert (s.llm_timeout_seconds, s.llm_max_retries, s.llm_json_mode, s.llm_tools,
            s.memory_max_output_tokens) == (45.0, 0, "off", "on", 1500)
    blank = load_settings({"AUTOPATCH_HOME": str(isolated_env), "AUTOPATCH_LLM_TIMEOUT_SECONDS": "",
                           "AUTOPATCH_LLM_TOOLS": ""})
    assert (blank.llm_timeout_seconds, blank.llm_tools) == (120.0, "auto")  # blank: the default
    (isolated_env / "config.toml").write_text('llm_json_mode = "off"\nllm_tools = "off"\n', encoding="utf-8")
    s = load_settings({"AUTOPATCH_HOME": str(isolated_env)})
    assert (s.llm_json_mode, s.llm_tools) == ("off", "off")
    client = LLMClient.from_settings(s.with_overrides(llm_base_url="http://127.0.0.1:9/v1"))
    assert (client.json_mode, client.tools_mode) == ("off", "off")
    client.close()
    for var, value in (("AUTOPATCH_LLM_TOOLS", "sometimes"), ("AUTOPATCH_LLM_TIMEOUT_SECONDS", "-1"),
                       ("AUTOPATCH_LLM_MAX_RETRIES", "lots")):
        with pytest.raises(ConfigError, match="invalid setting"):
            load_settings({"AUTOPATCH_HOME": str(isolated_env), var: value})


def test_the_strict_stub_streams_without_usage_and_cuts_at_max_tokens(strict, llm_stub):
    for server in (strict, llm_stub):
        server.default("chat", Reply(content="abcdefghij" * 10, usage=(5, 7)))
    loose = client_for(llm_stub).stream(task="chat", model="m", messages=MESSAGES, on_delta=lambda _: None,
                                        max_tokens=5)
    assert loose.usage is not None and loose.finish_reason == "stop" and len(loose.content) == 100
    cut = client_for(strict).stream(task="chat", model="m", messages=MESSAGES, on_delta=lambda _: None,
                                    max_tokens=5)
    assert cut.usage is None and cut.finish_reason == "length" and cut.content == "abcdefghij" * 2


def test_a_validation_500_naming_response_format_drops_json_mode_without_sdk_retries(llm_stub):
    body = {"error": {"message": "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n"
                                 "  Input should be 'text' or 'json_object'", "type": "internal_server_error"}}
    llm_stub.script("extraction", Reply(status=500, error_body=body), {"ok": 1})
    done = complete_memory(client_for(llm_stub, max_retries=2), task="extraction", model="m", messages=MESSAGES,
                           max_tokens=64)
    assert json.loads(done.content) == {"ok": 1}
    first, second = llm_stub.requests_for("extraction")
    assert "response_format" in first.body and "response_format" not in second.body
