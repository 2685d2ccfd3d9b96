"""A repair request (code_audit, zero-finding review, patch_explain, patch_revise) built by the same
agent: no history, no checkpoint, no discussion, no RAW turn of other requests in its messages; its
Map and tools see only path-applicable project preferences and decisions."""

from __future__ import annotations

import json

import pytest

from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.recall.query import RecallQuery
from tests.support.llm_stub import CapturedRequest, Reply
from tests.support.recall_seed import add_turn, seed_item

REPAIR = ("code_audit", "zero_finding_review", "patch_explain", "patch_revise")


@pytest.mark.parametrize("intent", REPAIR)
def test_repair_request_messages_are_isolated(chat, chat_mgr, llm_stub, intent) -> None:
    conn = chat_mgr.store.conn()
    add_turn(chat_mgr, "RAW-ORDINARY: how do retries work here?", "RAW-ANSWER: with the helper")
    with write_txn(conn):
        conn.execute("UPDATE threads SET checkpoint = 'CKPT-SECRET' WHERE status = 'active'")
    talk = seed_item(conn, kind="discussion_context", subject="retry debate", strength="soft",
                     statement="DISCUSSION-TEXT: still open", keywords=["retry"])
    applicable = seed_item(conn, kind="user_preference", subject="retry helper", keywords=["retry"],
                           statement="PREF-TEXT: use the shared helper", applies_to_paths=["src/net"])
    elsewhere = seed_item(conn, subject="docs retry wording", keywords=["retry"],
                          statement="ELSEWHERE-TEXT", applies_to_paths=["docs"])

    def reply(request: CapturedRequest):
        tools = [m for m in request.messages if m["role"] == "tool"]
        if not tools:
            return Reply(tool_calls=[("memory_search", json.dumps({"query": "retry"})),
                                     ("memory_read", json.dumps({"id": talk.logical_id})),
                                     ("memory_read", json.dumps({"id": elsewhere.logical_id})),
                                     ("memory_read", json.dumps({"id": applicable.logical_id}))])
        return "REPAIR-ANSWER-1" if len(llm_stub.requests_for("chat")) <= 2 else "REPAIR-ANSWER-2"

    llm_stub.default("chat", reply)
    runs = []
    for n in range(2):  # two repair requests in a row: nothing of the first reaches the second
        text = f"Explain the patch for finding {n} in src/net/Client.java"
        handle = chat_mgr.begin_turn(text, intent=intent, scope_paths=["src/net/Client.java"])
        query = RecallQuery(intent, text, handle.scope_paths, finding_path="src/net/Client.java",
                            check_id="java:S2142", finding_message="retry loop swallows the interrupt")
        run = chat.respond(handle, intent, text, query=query)
        chat_mgr.complete_turn(handle, run.answer)
        runs.append(run)

    requests = llm_stub.requests_for("chat")
    assert len(requests) == 4
    for request in requests:
        sent = json.dumps(request.messages, ensure_ascii=False)
        for leaked in ("RAW-ORDINARY", "RAW-ANSWER", "CKPT-SECRET", "DISCUSSION-TEXT", "ELSEWHERE-TEXT"):
            assert leaked not in sent, leaked
        assert {t["function"]["name"] for t in request.body["tools"]} == {"memory_search", "memory_read"}
    first = requests[0].messages
    assert [m["role"] for m in first] == ["system", "user"]  # prompt + Map, the request
    assert applicable.logical_id in first[0]["content"] and talk.logical_id not in first[0]["content"]
    tools = [m["content"] for m in requests[1].messages if m["role"] == "tool"]
    assert {r["id"] for r in json.loads(tools[0])["results"]} == {applicable.logical_id}
    assert tools[1].startswith("error:") and tools[2].startswith("error:")
    assert json.loads(tools[3])["statement"] == "PREF-TEXT: use the shared helper"
    second_request = json.dumps(requests[2].messages, ensure_ascii=False)
    assert "finding 0" not in second_request and "REPAIR-ANSWER-1" not in second_request
