"""Chat and the tool loop against a strict local server (issue 12): `max_tokens` on every step and
within the window, `""` content next to tool calls, a forced first read for code_explain with a
scoped file, servers that ignore or refuse tools (files in the prompt, remembered per endpoint,
said in the footer), `AUTOPATCH_LLM_TOOLS=off`, the truncation note, repair needs tools."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from autopatch_tui.core.agent.chat import ChatService
from autopatch_tui.core.agent.loop import AgentCallbacks, AgentLoop
from autopatch_tui.core.agent.tool_mode import ToolsRequiredError
from autopatch_tui.core.llm.profiles import resolve_profile
from autopatch_tui.core.llm.tokens import estimate_messages_tokens, estimate_tokens
from autopatch_tui.core.repair.workflows import RepairService
from autopatch_tui.core.repair.workspace import ReviewState
from tests.support.fixtures import db_path, query
from tests.support.llm_stub import CapturedRequest, Reply, Strict

from .conftest import MODEL, chat_requests

APP = "def start():\n    return 'APP-MARKER-31'\n"
SECRET = "SECRET-MARKER-77"


def write(repo: Path, rel: str, text: str) -> Path:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def within_window(request: CapturedRequest, window: int) -> bool:
    tools = sum(estimate_tokens(str(t)) for t in request.body.get("tools") or ())
    bound = request.body["max_tokens"]
    return bound > 0 and estimate_messages_tokens(request.messages) + tools + bound <= window - int(window * 0.05)


def sent(request: CapturedRequest) -> str:
    return json.dumps(request.body, ensure_ascii=False)


def test_the_tool_loop_runs_against_a_strict_server(repo, chat, llm_stub) -> None:
    llm_stub.strict = Strict()  # tools ignored unless forced, null content refused, no usage
    write(repo, "src/app.py", APP)

    def reply(request: CapturedRequest):
        if request.tools_forced:
            return Reply(tool_calls=[("read_file", {"path": "src/app.py"})])
        return Reply(content="start() returns a marker.", tool_calls=[("list_files", {"path": "."})])

    llm_stub.default("chat", reply)
    deltas: list[str] = []
    result = chat.ask("explain start", intent="code_explain", scope_paths=["src/app.py"],
                      callbacks=AgentCallbacks(on_delta=deltas.append))
    first, second = chat_requests(llm_stub)
    assert first.body["tool_choice"] == {"type": "function", "function": {"name": "read_file"}}
    assert "tool_choice" not in second.body  # only the first step is forced
    assistant = [m for m in second.messages if m["role"] == "assistant"][-1]
    assert assistant["content"] == "" and assistant["tool_calls"][0]["function"]["name"] == "read_file"
    [tool] = [m for m in second.messages if m["role"] == "tool"]
    assert isinstance(tool["content"], str) and "APP-MARKER-31" in tool["content"]
    assert result.answer == "start() returns a marker." == "".join(deltas)  # no footer: tools worked
    assert llm_stub.unbounded == []
    profile = resolve_profile(MODEL, context_window=None, max_output_tokens=None)
    assert all(r.body["max_tokens"] == profile.max_output_tokens for r in (first, second))


def test_max_tokens_shrinks_as_tool_results_fill_a_small_window(repo, open_manager, llm_stub, monkeypatch) -> None:
    monkeypatch.setenv("AUTOPATCH_LLM_CONTEXT_WINDOW", "8192")
    monkeypatch.setenv("AUTOPATCH_LLM_MAX_OUTPUT_TOKENS", "2048")
    llm_stub.strict = Strict(tools="honoured")
    write(repo, "big.txt", "\n".join(f"line {n} " + "x" * 40 for n in range(400)))  # ~5k tokens per read
    steps = iter([Reply(tool_calls=[("read_file", {"path": "big.txt"})]), "done"])
    llm_stub.default("chat", lambda request: next(steps))
    ChatService(open_manager(repo)).ask("read it", intent="code_explain")
    first, second = chat_requests(llm_stub)
    assert first.body["max_tokens"] == 2048
    assert 256 <= second.body["max_tokens"] < 2048
    assert within_window(first, 8192) and within_window(second, 8192)


def test_a_server_that_ignores_tools_gets_the_scoped_files_in_the_prompt_and_is_remembered(
        repo, chat, llm_stub, tmp_path) -> None:
    llm_stub.strict = Strict(tools="ignored")  # even a forced tool call is answered in text
    write(repo, "src/app.py", APP)
    write(repo, "src/vendor/.git/config", SECRET)  # a nested repository's metadata
    write(repo, "src/.autopatch-j/notes.txt", SECRET)
    write(repo, ".git/info/secret", SECRET)
    outside = write(tmp_path, "outside.txt", SECRET)
    os.symlink(outside, repo / "src" / "link.txt")

    def reply(request: CapturedRequest):
        if request.body.get("tools"):
            return Reply(content="I will guess without reading.", tool_calls=[("read_file", {"path": "src/app.py"})])
        user = request.messages[-1]["content"]
        return "It returns APP-MARKER-31." if "APP-MARKER-31" in user else "I could not see the file."

    llm_stub.default("chat", reply)
    deltas: list[str] = []
    resets: list[int] = []
    cb = AgentCallbacks(on_delta=deltas.append, on_reset=lambda: resets.append(len(deltas)))
    result = chat.ask("explain start", intent="code_explain", scope_paths=["src/app.py", "src", ".git"],
                      callbacks=cb)
    first, second = chat_requests(llm_stub)
    assert first.body.get("tool_choice") and "tools" not in second.body
    assert result.answer.startswith("It returns APP-MARKER-31.")
    assert "Tools were off for this answer: 1 file(s) in scope were put into the prompt" in result.answer
    assert resets and "".join(deltas[resets[-1]:]) == result.answer  # the ignored attempt was reset
    for request in chat_requests(llm_stub):
        assert SECRET not in sent(request)
    saved = query(db_path(repo), "SELECT assistant_text FROM turns")[0][0]
    assert saved == result.answer
    # remembered for this endpoint and model: the next request goes straight to the files
    chat.ask("and again", intent="code_explain", scope_paths=["src/app.py"])
    third = chat_requests(llm_stub)[2]
    assert "tools" not in third.body and "APP-MARKER-31" in third.messages[-1]["content"]
    assert third.messages[-1]["content"].endswith("\n\n---\n\nand again")  # the user's text, verbatim, last
    assert len(chat_requests(llm_stub)) == 3


def test_a_template_without_a_tool_role_falls_back_to_files_after_the_forced_read(repo, chat, llm_stub) -> None:
    llm_stub.strict = Strict(tool_role=False)  # the second step (with a tool result) gets HTTP 500
    write(repo, "src/app.py", APP)
    llm_stub.default("chat", lambda r: Reply(tool_calls=[("read_file", {"path": "src/app.py"})])
                     if r.tools_forced else "From the prompt: APP-MARKER-31.")
    result = chat.ask("explain", intent="code_explain", scope_paths=["src/app.py"])
    requests = chat_requests(llm_stub)
    assert len(requests) == 3 and "tools" not in requests[2].body
    assert result.answer.startswith("From the prompt") and "Tools were off" in result.answer


def test_a_server_that_refuses_tools_still_chats_without_them(repo, chat, llm_stub) -> None:
    llm_stub.strict = Strict(tools="refused")  # HTTP 400 "does not support tools", like Ollama
    llm_stub.default("chat", "Hello without tools.")
    assert chat.ask("hi", intent="general_chat").answer == "Hello without tools."
    first, second = chat_requests(llm_stub)
    assert first.body.get("tools") and "tools" not in second.body
    assert chat.ask("hi again", intent="general_chat").answer == "Hello without tools."
    assert len(chat_requests(llm_stub)) == 3  # remembered: no refused attempt the second time


def test_tools_on_trusts_the_server_and_never_falls_back(repo, open_manager, llm_stub, monkeypatch) -> None:
    monkeypatch.setenv("AUTOPATCH_LLM_TOOLS", "on")
    llm_stub.strict = Strict(tools="ignored")
    write(repo, "src/app.py", APP)
    llm_stub.default("chat", "An answer without reading.")
    result = ChatService(open_manager(repo)).ask("explain", intent="code_explain", scope_paths=["src/app.py"])
    assert result.answer == "An answer without reading."
    [only] = chat_requests(llm_stub)
    assert only.body["tools"] and "APP-MARKER-31" not in sent(only)


def test_tools_off_sends_no_schemas_and_bounds_the_files_by_the_budget(repo, open_manager, llm_stub,
                                                                       monkeypatch) -> None:
    monkeypatch.setenv("AUTOPATCH_LLM_TOOLS", "off")
    monkeypatch.setenv("AUTOPATCH_LLM_MODEL", "local-model")
    monkeypatch.setenv("AUTOPATCH_LLM_CONTEXT_WINDOW", "4096")
    llm_stub.strict = Strict(drop_system=True)  # like llama.cpp's `gemma` chat format
    write(repo, "src/a.py", APP)
    write(repo, "src/b.py", "\n".join(f"value_{n} = {n}  # " + "y" * 60 for n in range(2000)))  # far too big
    write(repo, "src/c.py", "C-MARKER = 1\n")
    llm_stub.default("chat", lambda r: "explained" if r.messages[0]["role"] == "user" else "saw a system message")
    chat = ChatService(open_manager(repo))
    result = chat.ask("explain src", intent="code_explain", scope_paths=["src"])
    [request] = chat_requests(llm_stub)
    assert "tools" not in request.body and "tool_choice" not in request.body
    assert [m["role"] for m in request.messages] == ["system", "user"]
    files = request.messages[-1]["content"]  # in the user turn: a template that drops system messages keeps them
    assert files.endswith("\n\n---\n\nexplain src") and "### src/a.py" in files and "APP-MARKER-31" in files
    assert "### src/b.py" in files and "rest of the file omitted" in files and "C-MARKER" not in files
    assert within_window(request, 4096)
    assert result.answer.startswith("explained\n\n---\n*Tools were off for this answer: 2 file(s)")
    assert "the last one cut short, 1 left out" in result.answer
    assert chat.ask("hi", intent="general_chat").answer == "explained"  # no footer outside code_explain
    assert "tools" not in chat_requests(llm_stub)[-1].body
    chat.ask("explain", intent="code_explain")  # nothing in scope: the footer says the source was not read
    assert "not based on the source" in query(db_path(repo), "SELECT assistant_text FROM turns ORDER BY sequence"
                                              " DESC LIMIT 1")[0][0]


def test_an_answer_cut_at_the_cap_says_so_in_the_saved_answer_and_the_stream(repo, open_manager, llm_stub,
                                                                              monkeypatch, invoke_cli) -> None:
    monkeypatch.setenv("AUTOPATCH_LLM_MAX_OUTPUT_TOKENS", "300")
    llm_stub.strict = Strict()
    llm_stub.default("chat", "word " * 1000)
    deltas: list[str] = []
    result = ChatService(open_manager(repo)).ask("ramble", intent="general_chat",
                                                 callbacks=AgentCallbacks(on_delta=deltas.append))
    assert chat_requests(llm_stub)[0].body["max_tokens"] == 300
    assert result.answer.endswith("*The answer was cut off at its output limit (300 tokens).*")
    assert "".join(deltas) == result.answer
    assert query(db_path(repo), "SELECT assistant_text FROM turns")[0][0] == result.answer
    rc, out, err = invoke_cli("ask", "ramble again", "--intent", "general_chat")
    assert rc == 0, err
    assert out.rstrip().endswith("*The answer was cut off at its output limit (300 tokens).*")


def test_a_finished_answer_has_no_truncation_note(repo, chat, llm_stub) -> None:
    llm_stub.strict = Strict()
    llm_stub.default("chat", Reply(content="short", finish_reason="stop"))
    assert chat.ask("hi", intent="general_chat").answer == "short"


def test_repair_workflows_say_they_need_a_tool_capable_model(repo, open_manager, llm_stub, monkeypatch) -> None:
    monkeypatch.setenv("AUTOPATCH_LLM_TOOLS", "off")
    mgr = open_manager(repo)
    with pytest.raises(ToolsRequiredError, match="needs a model server with tool calling.*AUTOPATCH_LLM_TOOLS is off"):
        AgentLoop(mgr.client, MODEL, require_tools=True)
    write(repo, "src/a.py", "def load(path):\n    try:\n        return open(path).read()\n    except:\n        pass\n")
    with pytest.raises(ToolsRequiredError, match="tool calling"):
        RepairService(mgr, ReviewState()).audit("audit src", ["src"])
    assert chat_requests(llm_stub) == []


def test_repair_on_a_server_seen_to_ignore_tools_is_refused_clearly(repo, chat, llm_stub) -> None:
    llm_stub.strict = Strict(tools="refused")
    llm_stub.default("chat", "plain")
    chat.ask("hi", intent="general_chat")  # learns that this endpoint refuses tools
    with pytest.raises(ToolsRequiredError, match="seen to ignore or refuse tools"):
        AgentLoop(chat.manager.client, MODEL, require_tools=True)


def test_scoped_files_stay_in_the_repository_and_out_of_state_folders(repo, tmp_path) -> None:
    from autopatch_tui.core.agent.scoped_files import scoped_files

    write(repo, "src/app.py", APP)
    write(repo, "src/.autopatch-j/notes.txt", SECRET)
    write(repo, "src/vendor/.git/config", SECRET)
    (repo / "src" / "blob.bin").write_bytes(b"\x00\x01" + SECRET.encode())
    outside = write(tmp_path, "elsewhere/secret.py", SECRET)
    os.symlink(outside.parent, repo / "src" / "linked")  # a directory link out of the repository
    os.symlink(outside, repo / "src" / "linked.py")
    scope = ["../elsewhere/secret.py", str(outside), "src/.autopatch-j/notes.txt", "src/vendor/.git/config",
             "src/vendor/.git", "src/linked", "src/linked.py", "src/blob.bin", "src", "src/app.py"]
    files = scoped_files(repo, scope, 10_000)
    assert files.included == ("src/app.py",) and SECRET not in files.text and "APP-MARKER-31" in files.text
    assert files.omitted >= 8
    assert scoped_files(repo, ["src/app.py"], 10).included == ()  # no budget: nothing, and no crash
