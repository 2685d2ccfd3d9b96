"""Spec "/new 建立干净工作边界", scenario "已开始请求保持 thread binding": a request that began keeps
its thread for history, Map, search and read while `/new` runs meanwhile; it completes in the old
thread; its request-local state is cleared when it ends. A later request sees the new thread only."""

from __future__ import annotations

import json


from tests.support.llm_stub import CapturedRequest, Reply
from tests.support.recall_seed import active_thread, add_turn, seed_item



def test_new_during_a_request_does_not_move_it(chat, chat_mgr, llm_stub, sessions) -> None:
    conn = chat_mgr.store.conn()
    old_thread = active_thread(conn)
    add_turn(chat_mgr, "OLD-HISTORY: we talked about retry budgets", "OLD-ANSWER: budgets per client")
    talk = seed_item(conn, kind="discussion_context", subject="retry budget debate", strength="soft",
                     statement="OPEN: per-client or global retry budgets?", keywords=["retry"])
    decision = seed_item(conn, subject="retry limit", statement="DECISION: five attempts.", keywords=["retry"])
    new_threads: list[str] = []

    def classify(request: CapturedRequest) -> str:
        # another control flow runs /new after begin_turn, before the context is built
        new_threads.append(chat_mgr.new_thread(timeout=10).new_thread_id)
        return "general_chat"

    def chat_reply(request: CapturedRequest):
        step = sum(1 for m in request.messages if m["role"] == "tool")
        if step == 0:
            new_threads.append(chat_mgr.new_thread(timeout=10).new_thread_id)  # and once more mid-request
            return Reply(tool_calls=[("memory_search", json.dumps({"query": "retry budget"}))])
        if step == 1:
            return Reply(tool_calls=[("memory_read", json.dumps({"id": talk.logical_id}))])
        return "ANSWER in the old thread"

    llm_stub.default("classify", classify)
    llm_stub.default("chat", chat_reply)
    result = chat.ask("what did we say about retry budgets?")

    assert len(new_threads) == 2 and active_thread(conn) == new_threads[-1] != old_thread
    assert result.thread_id == old_thread and result.answer == "ANSWER in the old thread"
    first, *_, last = llm_stub.requests_for("chat")
    text = json.dumps(first.messages, ensure_ascii=False)
    assert "OLD-HISTORY" in text and "OLD-ANSWER" in text  # history of the bound thread
    assert talk.logical_id in first.messages[0]["content"]  # the Map (in the system message) still has its discussion
    tools = [m["content"] for m in last.messages if m["role"] == "tool"]
    assert {r["id"] for r in json.loads(tools[0])["results"]} == {talk.logical_id, decision.logical_id}
    assert json.loads(tools[1])["statement"] == "OPEN: per-client or global retry budgets?"
    # the turn completed in the old thread
    row = conn.execute("SELECT thread_id, state, assistant_text FROM turns WHERE id = ?", (result.turn_id,)).fetchone()
    assert tuple(row) == (old_thread, "completed", "ANSWER in the old thread")
    # the request-local binding was cleared when the request ended
    assert len(sessions) == 1
    s = sessions[0]
    assert s.closed and not s.readable and not s.searches and not s.reads
    assert s.policy.thread_id == old_thread  # it was bound to the old thread throughout

    # a new request lives in the new thread: old history and discussion are gone, decisions stay
    llm_stub.default("classify", "general_chat")
    llm_stub.script("chat", Reply(tool_calls=[("memory_search", json.dumps({"query": "retry budget"}))]), "NEW")
    after = chat.ask("and retries again?")
    assert after.thread_id == new_threads[-1]
    req = llm_stub.requests_for("chat")[-1]
    text = json.dumps(req.messages, ensure_ascii=False)
    assert "OLD-HISTORY" not in text and "OPEN: per-client" not in text
    found = {r["id"] for m in req.messages if m["role"] == "tool" for r in json.loads(m["content"])["results"]}
    assert found == {decision.logical_id}
