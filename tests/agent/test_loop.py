"""The function-calling loop: bounded steps, the repeated-call guard, streaming to the caller, tool
errors as results; and intent routing (explicit wins, otherwise one `classify` call)."""

from __future__ import annotations

import itertools
import json

import pytest

from autopatch_tui.core.agent.chat import ChatService
from autopatch_tui.core.agent.loop import MAX_STEPS, AgentCallbacks
from autopatch_tui.core.errors import ConfigError, NoModelError, UsageError
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import load_settings
from tests.support.llm_stub import CapturedRequest, Reply
from tests.support.recall_seed import seed_item

from .conftest import chat_requests



def tool_messages(request: CapturedRequest) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "tool"]


def test_steps_are_bounded_then_one_final_answer_without_tools(chat, llm_stub) -> None:
    counter = itertools.count()

    def reply(request: CapturedRequest):
        if "tools" in request.body:
            return Reply(tool_calls=[("memory_search", json.dumps({"query": f"topic {next(counter)}"}))])
        return "FINAL after the step limit"

    llm_stub.default("chat", reply)
    result = chat.ask("keep searching", intent="general_chat")
    requests = chat_requests(llm_stub)
    assert len(requests) == MAX_STEPS + 1
    assert all("tools" in r.body for r in requests[:-1]) and "tools" not in requests[-1].body
    assert requests[-1].messages[-1]["role"] == "system"  # "answer now"
    assert result.answer == "FINAL after the step limit"
    # searches past the 4th distinct query were refused as tool results, not as failures
    assert sum("at most 4" in t for t in tool_messages(requests[-1])) == MAX_STEPS - 4


def test_repeated_identical_tool_calls_are_guarded(chat, llm_stub, sessions) -> None:
    seed_item(chat.manager.store.conn(), subject="retry policy", statement="Five attempts.")

    def reply(request: CapturedRequest):
        if "tools" in request.body:  # the same call, its keys in another order every other time
            args = {"query": "retry policy", "limit": 3}
            if len(request.messages) % 2:
                args = dict(reversed(list(args.items())))
            return Reply(tool_calls=[("memory_search", json.dumps(args))])
        return "stopped looping"

    llm_stub.default("chat", reply)
    result = chat.ask("what is the retry policy", intent="general_chat")
    requests = chat_requests(llm_stub)
    assert len(requests) == 4  # call, repeat (refused), repeat (forces the end), final
    tools = tool_messages(requests[-1])
    assert len(tools) == 3 and '"results"' in tools[0]
    assert all("already made" in t for t in tools[1:])
    assert result.answer == "stopped looping"
    assert len(sessions) == 1 and sessions[0].closed


def test_streaming_deltas_reach_the_callback_and_tool_steps_reset(chat, llm_stub) -> None:
    llm_stub.script("chat", Reply(content="let me look", tool_calls=[("memory_search", '{"query": "x"}')]),
                    "The final answer, streamed in several pieces.")
    deltas: list[str] = []
    resets: list[int] = []
    tools: list[str] = []
    cb = AgentCallbacks(on_delta=deltas.append, on_reset=lambda: resets.append(len(deltas)),
                        on_tool=tools.append)
    result = chat.ask("hi", intent="general_chat", callbacks=cb)
    assert all(r.stream for r in chat_requests(llm_stub))
    assert len(resets) == 1 and tools == ["memory_search"]
    cut = resets[0]
    assert "".join(deltas[:cut]) == "let me look"  # streamed, then reset: it was not the answer
    final = deltas[cut:]
    assert len(final) >= 2 and "".join(final) == result.answer == "The final answer, streamed in several pieces."


def test_tool_errors_are_results_and_the_request_goes_on(chat, llm_stub) -> None:
    llm_stub.script("chat", Reply(tool_calls=[("memory_read", '{"id": "mem-GUESSED"}'),
                                              ("memory_search", "not json"),
                                              ("read_file", '{"path": "x"}'),
                                              ("memory_search", '{"query": ""}')]), "done")
    assert chat.ask("hi", intent="general_chat").answer == "done"
    tools = tool_messages(chat_requests(llm_stub)[-1])
    assert tools[0].startswith("error: memory_read only accepts IDs")
    assert tools[1] == "error: tool arguments must be a JSON object"
    assert tools[2] == "error: unknown tool read_file"  # no source tools for general_chat
    assert tools[3].startswith("error:")


# --------------------------------------------------------------------------- routing


def test_explicit_intent_wins_without_a_classify_call(chat, llm_stub) -> None:
    llm_stub.default("chat", "ok")
    result = chat.ask("explain src/app.py", intent="code_explain")
    assert result.intent == "code_explain" and llm_stub.requests_for("classify") == []
    names = {t["function"]["name"] for t in chat_requests(llm_stub)[0].body["tools"]}
    assert names == {"memory_search", "memory_read", "read_file", "list_files", "search_text"}


@pytest.mark.parametrize(("classified", "expected"), [
    ("code_explain", "code_explain"), ("general_chat", "general_chat"), ("`code_explain`.", "code_explain"),
    ("code_audit", "general_chat"), ("I think you want to chat", "general_chat"), (Reply(status=500), "general_chat"),
])
def test_without_an_explicit_intent_one_classify_call_routes(chat, llm_stub, classified, expected) -> None:
    llm_stub.default("classify", classified)
    llm_stub.default("chat", "ok")
    result = chat.ask("how does the parser work?")
    assert result.intent == expected
    assert len(llm_stub.requests_for("classify")) == 1
    row = chat.manager.store.conn().execute("SELECT intent, state FROM turns").fetchone()
    assert tuple(row) == (expected, "completed")
    names = {t["function"]["name"] for t in chat_requests(llm_stub)[0].body["tools"]}
    assert ("read_file" in names) == (expected == "code_explain")


def test_an_unknown_explicit_intent_is_a_usage_error_and_stores_nothing(chat, llm_stub) -> None:
    with pytest.raises(UsageError):
        chat.ask("hi", intent="code_audit")
    assert chat.manager.store.conn().execute("SELECT count(*) FROM turns").fetchone()[0] == 0
    assert llm_stub.requests == []


def test_without_a_model_nothing_is_guessed_or_stored(repo, llm_stub) -> None:
    mgr = MemoryManager.open(repo, load_settings())
    try:
        with pytest.raises(NoModelError, match="AUTOPATCH_LLM_BASE_URL"):
            ChatService(mgr).ask("hello")
        assert mgr.store.conn().execute("SELECT count(*) FROM turns").fetchone()[0] == 0
    finally:
        mgr.close()
    assert llm_stub.requests == []


def test_unknown_model_without_a_window_is_a_clear_config_error(repo, open_manager, llm_stub, monkeypatch) -> None:
    monkeypatch.setenv("AUTOPATCH_LLM_MODEL", "my-local-model")
    mgr = open_manager(repo)
    with pytest.raises(ConfigError, match="AUTOPATCH_LLM_CONTEXT_WINDOW"):
        ChatService(mgr).ask("hello", intent="general_chat")
    assert mgr.store.conn().execute("SELECT count(*) FROM turns").fetchone()[0] == 0
    assert llm_stub.requests == []
    monkeypatch.setenv("AUTOPATCH_LLM_CONTEXT_WINDOW", "16384")
    llm_stub.default("chat", "fine")
    assert ChatService(open_manager(repo)).ask("hello", intent="general_chat").answer == "fine"
