"""Instruction files in ordinary requests, over the stub (contracts §9): the AGENTS.md cascade in the
one system message, marked as the project's instructions, after the order of authority and ahead of
the checkpoint and the Memory Map; absent when confined out; re-read when changed; never a Memory
source; an item a loaded file already holds is not repeated in the Map; the prompt's parts and the
server's usage reported as tokens only."""

from __future__ import annotations

import json
from pathlib import Path

from autopatch_tui.core.agent.chat import ChatService
from autopatch_tui.core.agent.prompt_report import context_label, context_lines, instructions_label
from autopatch_tui.core.agent.request_context import AUTHORITY
from autopatch_tui.core.events import PromptMeasured
from autopatch_tui.core.instructions import files as inst
from autopatch_tui.core.instructions import section
from autopatch_tui.core.memory.sqlite import write_txn
from tests.support.llm_stub import Reply
from tests.support.recall_seed import add_turn, revise_item, seed_item

from .conftest import chat_requests


def put(repo: Path, rel: str, text: str) -> None:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")


def system_of(request) -> str:
    (system,) = [m["content"] for m in request.messages if m["role"] == "system"]
    return system


def test_the_cascade_reaches_the_prompt_in_order_ahead_of_the_map(repo, chat_mgr, chat, llm_stub) -> None:
    inst.clear_cache()
    put(repo, "AGENTS.md", "ROOT-RULE: run make check before proposing a patch.")
    put(repo, "src/AGENTS.md", "SRC-RULE: src uses tabs.")
    put(repo, "src/net/AGENTS.md", "NET-RULE: every socket has a timeout.")
    put(repo, "src/net/client.py", "def connect():\n    pass\n")
    add_turn(chat_mgr, "earlier question", "earlier answer")
    with write_txn(chat_mgr.store.conn()):
        chat_mgr.store.conn().execute("UPDATE threads SET checkpoint = 'CKPT-7' WHERE status = 'active'")
    item = seed_item(chat_mgr.store.conn(), subject="socket timeout", statement="Timeouts are 5 s.",
                     recall_mode="always")
    llm_stub.default("chat", "ok")
    chat.ask("how does connect work?", intent="general_chat", scope_paths=["src/net/client.py"])
    (request,) = chat_requests(llm_stub)
    system = system_of(request)
    assert request.messages[0]["role"] == "system" and request.messages[-1]["role"] == "user"
    marks = [AUTHORITY, "Project instructions:", 'file="AGENTS.md"', "ROOT-RULE", 'file="src/AGENTS.md"',
             "SRC-RULE", 'file="src/net/AGENTS.md"', "NET-RULE", "CKPT-7", "Project Memory Map", item.logical_id]
    at = [system.find(m) for m in marks]
    assert -1 not in at and at == sorted(at), list(zip(marks, at, strict=True))
    # the history and the message are not mixed with the instructions
    assert "ROOT-RULE" not in json.dumps(request.messages[1:])


def test_confined_out_files_are_absent_and_the_order_of_authority_stays(repo, tmp_path, chat_mgr, chat,
                                                                        llm_stub) -> None:
    inst.clear_cache()
    outside = tmp_path / "outside"
    put(outside, "AGENTS.md", "OUTSIDE-RULE")
    (repo / "AGENTS.md").symlink_to(outside / "AGENTS.md")
    put(repo, ".git/AGENTS.md", "GIT-RULE")
    (repo / "vendor").symlink_to(outside)
    llm_stub.default("chat", "ok")
    chat.ask("hello", intent="general_chat", scope_paths=["vendor/AGENTS.md", ".git/x"])
    system = system_of(chat_requests(llm_stub)[0])
    assert "OUTSIDE-RULE" not in system and "GIT-RULE" not in system and "Project instructions" not in system
    assert AUTHORITY in system  # the order of authority is stated with or without files


def test_a_changed_file_reaches_the_next_request_and_never_becomes_memory(repo, chat_mgr, chat, llm_stub) -> None:
    inst.clear_cache()
    put(repo, "AGENTS.md", "FIRST-RULE: use tabs.")
    llm_stub.default("chat", "ok")
    chat.ask("one", intent="general_chat")
    put(repo, "AGENTS.md", "SECOND-RULE: use four spaces, always.")
    chat.ask("two", intent="general_chat")
    first, second = chat_requests(llm_stub)
    assert "FIRST-RULE" in system_of(first) and "SECOND-RULE" in system_of(second)
    assert "FIRST-RULE" not in system_of(second)
    # the turns keep only what the user typed and the answer; extraction never sees the files
    rows = chat_mgr.store.conn().execute("SELECT user_text, assistant_text FROM turns").fetchall()
    assert [tuple(r) for r in rows] == [("one", "ok"), ("two", "ok")]
    chat_mgr.process_pending()
    extraction = llm_stub.requests_for("extraction")
    assert extraction, "the extraction job ran"
    for request in extraction:
        sent = json.dumps(request.messages)
        assert "FIRST-RULE" not in sent and "SECOND-RULE" not in sent and "Project instructions" not in sent


def test_an_item_held_by_a_loaded_file_is_not_repeated_in_the_map(repo, chat_mgr, chat, llm_stub,
                                                                  invoke_cli) -> None:
    inst.clear_cache()
    conn = chat_mgr.store.conn()
    held = seed_item(conn, subject="make check", statement="Run make check before a patch.", recall_mode="always")
    other = seed_item(conn, subject="tabs", statement="Indent with tabs.", recall_mode="always")
    rc, _, err = invoke_cli("memory", "promote", held.logical_id, "--yes")
    assert rc == 0, err
    llm_stub.default("chat", Reply(tool_calls=[("memory_search", json.dumps({"query": "make check"}))]))
    llm_stub.script("chat", Reply(tool_calls=[("memory_search", json.dumps({"query": "make check"}))]), "ok")
    chat.ask("what should I run?", intent="general_chat")
    first, second = chat_requests(llm_stub)
    system = system_of(first)
    in_file, _, memory_map = system.partition("Project Memory Map")
    assert f"<!-- memory:{held.logical_id} -->" in in_file  # the file holds it …
    assert held.logical_id not in memory_map and other.logical_id in memory_map  # … so the Map does not
    assert "omitted" not in memory_map  # and it is not counted as left out
    found = [m["content"] for m in second.messages if m["role"] == "tool"]
    assert held.logical_id in found[0]  # an explicit search still finds it

    # revised since it was promoted: the file no longer says what Memory says, so the Map shows it
    revise_item(conn, held.logical_id, subject="make check", statement="Run make check and make lint.",
                recall_mode="always")
    llm_stub.default("chat", "ok")
    chat.ask("and now?", intent="general_chat")
    assert held.logical_id in system_of(chat_requests(llm_stub)[-1]).partition("Project Memory Map")[2]


def tool_results(request) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "tool"]


def test_the_model_can_read_a_promoted_item_by_the_id_it_sees_in_the_file(repo, open_manager, llm_stub, invoke_cli,
                                                                         monkeypatch) -> None:
    inst.clear_cache()
    monkeypatch.setenv("AUTOPATCH_MEMORY_APPROVAL", "review")
    mgr = open_manager(repo)
    chat = ChatService(mgr)
    conn = mgr.store.conn()
    held = seed_item(conn, subject="make check", statement="Run make check before a patch.", recall_mode="always",
                     content="HELD-CONTENT: make check runs ruff and the tests.")
    waiting = seed_item(conn, subject="lint", statement="Run make lint before a patch.", recall_mode="always",
                        content="WAITING-CONTENT")
    mgr.review.keep([held.logical_id])  # approval mode: `waiting` is not kept, so recall never shows it
    rc, _, err = invoke_cli("memory", "promote", held.logical_id, "--yes")
    assert rc == 0, err
    # `waiting`'s bullet written by hand (promote would keep it: the diff is its review)
    agents = repo / "AGENTS.md"
    bullet = f"- Run make lint before a patch. <!-- memory:{waiting.logical_id} -->\n"
    agents.write_text(agents.read_text("utf-8").replace(section.END, bullet + section.END), "utf-8")
    reads = [Reply(tool_calls=[("memory_read", json.dumps({"id": i}))])
             for i in (held.logical_id, waiting.logical_id, "mem-NOT-IN-ANY-FILE")]
    llm_stub.script("chat", *reads, "ok")
    chat.ask("what should I run?", intent="general_chat")
    requests = chat_requests(llm_stub)
    system = system_of(requests[0])
    assert f"<!-- memory:{held.logical_id} -->" in system and f"<!-- memory:{waiting.logical_id} -->" in system
    assert held.logical_id not in system.partition("Project Memory Map")[2]  # held by the file, not in the Map
    read_held, read_waiting, read_unseen = (tool_results(r)[-1] for r in requests[1:4])
    assert "HELD-CONTENT" in read_held  # the ID the model sees in AGENTS.md is readable …
    assert "WAITING-CONTENT" not in read_waiting and "not available" in read_waiting  # … under the review policy
    assert "only accepts IDs shown" in read_unseen  # an ID the prompt never showed stays unreadable


def test_the_prompt_is_reported_by_part_with_the_servers_usage(repo, chat_mgr, chat, llm_stub) -> None:
    inst.clear_cache()
    put(repo, "AGENTS.md", "REPORT-ROOT-RULE " * 40)
    put(repo, "src/AGENTS.md", "REPORT-SRC-RULE")
    put(repo, "src/a.py", "x = 1\n")
    (repo / "src" / "sub").mkdir()
    (repo / "src" / "sub" / "AGENTS.md").write_bytes(b"\xff\xfe U\x00T\x00F\x00-16")  # found, not read
    put(repo, "src/sub/b.py", "y = 2\n")
    seed_item(chat_mgr.store.conn(), subject="style", statement="Prefer small functions.", recall_mode="always")
    add_turn(chat_mgr, "earlier", "answer")
    reports: list = []
    chat_mgr.events.subscribe(lambda e: reports.append(e.report) if isinstance(e, PromptMeasured) else None)
    llm_stub.script("chat", Reply(tool_calls=[("memory_search", json.dumps({"query": "style"}))]),
                    Reply(content="final answer", usage=(20_480, 512)))
    chat.ask("explain a.py", intent="general_chat", scope_paths=["src/a.py", "src/sub/b.py"])
    sent, final = reports[0], reports[-1]
    assert not sent.ended and final.ended and final.steps == 2
    assert final.server_prompt_tokens == 20_480 and final.server_completion_tokens == 512
    assert final.window == 128_000 and context_label(final) == "ctx 16% of 128k"  # gpt-4o
    assert final.instruction_files == ("AGENTS.md", "src/AGENTS.md")
    assert instructions_label(final.instruction_files) == "AGENTS.md ×2"
    labels = [p.label for p in final.parts]
    assert labels[:3] == ["system prompt", "AGENTS.md", "src/AGENTS.md"]
    for label in ("Memory Map (1 item)", "history (1 turn)", "current message", "tool schemas",
                  "tool calls and results (1)"):
        assert label in labels, labels
    assert "tool calls and results (1)" not in [p.label for p in sent.parts]  # not sent yet at first
    assert sum(p.tokens for p in final.parts) == final.estimated_tokens
    lines = "\n".join(context_lines(final))
    assert "src/AGENTS.md" in lines and "20,480 prompt + 512 reply" in lines
    assert "Not read: src/sub/AGENTS.md (not UTF-8 text)." in lines
    for text in (repr(final), lines):  # figures and paths, never the text of a part
        assert "REPORT-ROOT-RULE" not in text and "explain a.py" not in text and "small functions" not in text

    # a server that reports no usage: the app's own estimate, marked as one
    llm_stub.default("chat", "ok")
    chat.ask("again", intent="general_chat")
    last = reports[-1]
    assert last.server_prompt_tokens is None and last.used_tokens == last.estimated_tokens + 1
    assert context_label(last).startswith("~ctx ")


def test_usage_is_asked_for_in_the_stream_and_a_refusal_is_remembered(repo, chat_mgr, chat, llm_stub) -> None:
    llm_stub.default("chat", Reply(content="ok", usage=(100, 5)))
    chat.ask("one", intent="general_chat")
    (first,) = chat_requests(llm_stub)
    assert first.body["stream"] is True and first.body["stream_options"] == {"include_usage": True}

    def strict(request):  # a server whose request model forbids the field
        if "stream_options" in request.body:
            return Reply(status=400, error_body="Unrecognized request argument supplied: stream_options")
        return "fine"

    llm_stub.default("chat", strict)
    assert chat.ask("two", intent="general_chat").answer == "fine"
    assert chat.ask("three", intent="general_chat").answer == "fine"
    later = chat_requests(llm_stub)[1:]
    assert ["stream_options" in r.body for r in later] == [True, False, False]  # refused once, then not asked
