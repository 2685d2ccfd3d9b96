"""The ordinary prompt (spec "普通 thread 跨重启延续"): checkpoint, the Memory Map as a synthetic
message, recent history projected by token budget, the current message verbatim exactly once — and
none of the synthetic context in the turns table."""

from __future__ import annotations

import json

import pytest

from autopatch_tui.core.agent import context as ctx
from autopatch_tui.core.agent.chat import ChatService
from autopatch_tui.core.llm.tokens import estimate_messages_tokens
from autopatch_tui.core.memory.sqlite import write_txn
from tests.support.fixtures import make_git_repo
from tests.support.llm_stub import Reply
from tests.support.recall_seed import active_thread, add_turn, seed_item

from .conftest import chat_requests

ODD_TEXT = "  What is our retry policy?\n\tＦｕｌｌｗｉｄｔｈ  and   spaces kept  "


def set_checkpoint(mgr, text: str) -> None:
    conn = mgr.store.conn()
    with write_txn(conn):
        conn.execute("UPDATE threads SET checkpoint = ? WHERE status = 'active'", (text,))


def test_prompt_layout_and_nothing_synthetic_is_persisted(chat_mgr, chat, llm_stub) -> None:
    conn = chat_mgr.store.conn()
    add_turn(chat_mgr, "earlier question about caching", "earlier answer about caching")
    add_turn(chat_mgr, "second question about queues", "second answer about queues")
    set_checkpoint(chat_mgr, "CKPT-42: the user is tuning retries.")
    item = seed_item(conn, subject="retry policy", statement="Retries stop after five attempts.")
    llm_stub.script("chat", Reply(tool_calls=[("memory_read", json.dumps({"id": item.logical_id}))]),
                    "FINAL: five attempts.")

    result = chat.ask(ODD_TEXT, intent="general_chat")
    assert result.answer == "FINAL: five attempts." and result.state == "completed"

    first, second = chat_requests(llm_stub)
    msgs = first.messages
    assert msgs[0]["role"] == "system" and "CKPT-42: the user is tuning retries." in msgs[0]["content"]
    assert ctx.COMMON_RULES in msgs[0]["content"]  # current instructions and current source beat Memory
    # the Memory Map follows the prompt in the same (only) system message: local chat templates
    # (Gemma, Mistral) refuse a second system message
    prompt, _, memory_map = msgs[0]["content"].partition("\n\nProject Memory Map")
    assert ctx.COMMON_RULES in prompt and memory_map and item.logical_id in memory_map
    assert sum(m["role"] == "system" for m in msgs) == 1
    assert [(m["role"], m["content"]) for m in msgs[1:5]] == [
        ("user", "earlier question about caching"), ("assistant", "earlier answer about caching"),
        ("user", "second question about queues"), ("assistant", "second answer about queues")]
    assert msgs[-1] == {"role": "user", "content": ODD_TEXT}  # verbatim, last
    for request in (first, second):
        assert sum(1 for m in request.messages if m.get("content") == ODD_TEXT) == 1
        assert sum(1 for m in request.messages if ODD_TEXT.strip() in (m.get("content") or "")) == 1
    # the tool trace lives only in the request
    assert any(m["role"] == "tool" and "Retries stop after five attempts." in m["content"] for m in second.messages)

    rows = conn.execute("SELECT user_text, assistant_text, state FROM turns ORDER BY sequence").fetchall()
    assert [tuple(r) for r in rows][-1] == (ODD_TEXT, "FINAL: five attempts.", "completed")
    stored = " ".join(f"{r['user_text']} {r['assistant_text']}" for r in rows)
    for synthetic in ("Project Memory Map", "CKPT-42", item.logical_id, "Retries stop", "memory_read",
                      ctx.COMMON_RULES[:40]):
        assert synthetic not in stored


def test_no_map_message_when_nothing_matches(chat_mgr, chat, llm_stub) -> None:
    seed_item(chat_mgr.store.conn(), subject="retry policy", statement="Five attempts.")
    llm_stub.default("chat", "hello")
    chat.ask("good morning", intent="general_chat")
    msgs = chat_requests(llm_stub)[0].messages
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert "Memory Map" not in json.dumps(msgs)


def _history_run(mgr, llm_stub, size: int, monkeypatch) -> tuple[int, int, list[int]]:
    """30 completed turns of `size`-char messages, then one request. Returns (kept pairs, history
    budget, costs of all pairs newest first)."""
    budgets = []
    real = ctx.budget_for
    monkeypatch.setattr(ctx, "budget_for", lambda *a, **k: budgets.append(real(*a, **k)) or budgets[-1])
    for i in range(30):
        add_turn(mgr, f"q{i:02d} " + "u" * size, f"a{i:02d} " + "v" * size)
    before = len(chat_requests(llm_stub))
    ChatService(mgr).ask("what next?", intent="general_chat")
    msgs = chat_requests(llm_stub)[before].messages
    history = [m for m in msgs[1:-1] if m["role"] in ("user", "assistant")]
    assert len(history) % 2 == 0
    kept = len(history) // 2
    # the kept pairs are the newest ones, oldest first, contiguous
    assert [m["content"][:3] for m in history[::2]] == [f"q{i:02d}" for i in range(30 - kept, 30)]
    pair_costs = [estimate_messages_tokens([{"role": "user", "content": f"q{i:02d} " + "u" * size},
                                            {"role": "assistant", "content": f"a{i:02d} " + "v" * size}])
                  for i in reversed(range(30))]
    return kept, budgets[-1].history_tokens, pair_costs


def test_history_is_cut_oldest_first_by_tokens_not_by_count(repo, tmp_path, open_manager, llm_stub,
                                                            monkeypatch) -> None:
    monkeypatch.setenv("AUTOPATCH_LLM_CONTEXT_WINDOW", "6000")
    llm_stub.default("chat", "ok")
    short_kept, short_budget, short_costs = _history_run(open_manager(repo), llm_stub, 20, monkeypatch)
    long_kept, long_budget, long_costs = _history_run(open_manager(make_git_repo(tmp_path / "other")), llm_stub,
                                                      900, monkeypatch)
    assert short_kept == 30  # small messages: the whole thread fits
    assert 1 <= long_kept < 10 < short_kept  # same number of turns, big messages: only the newest few
    assert sum(long_costs[:long_kept]) <= long_budget < sum(long_costs[: long_kept + 1])
    assert sum(short_costs) <= short_budget


def test_failed_and_other_thread_turns_are_not_history(chat_mgr, chat, llm_stub) -> None:
    add_turn(chat_mgr, "OLD-THREAD question", "OLD-THREAD answer")
    chat_mgr.new_thread(timeout=5)
    h = chat_mgr.begin_turn("FAILED question")
    chat_mgr.fail_turn(h)
    add_turn(chat_mgr, "KEPT question", "KEPT answer")
    add_turn(chat_mgr, "REPAIR question", "REPAIR answer", intent="code_audit")
    llm_stub.default("chat", "ok")
    chat.ask("now?", intent="general_chat")
    text = json.dumps(chat_requests(llm_stub)[0].messages)
    assert "KEPT question" in text and "KEPT answer" in text
    for absent in ("OLD-THREAD", "FAILED question", "REPAIR question"):
        assert absent not in text


def test_context_overflow_fails_the_turn_and_keeps_the_text(repo, open_manager, llm_stub, monkeypatch) -> None:
    monkeypatch.setenv("AUTOPATCH_LLM_CONTEXT_WINDOW", "3000")
    mgr = open_manager(repo)
    huge = "word " * 20000
    with pytest.raises(ctx.ContextOverflowError):
        ChatService(mgr).ask(huge, intent="general_chat")
    row = mgr.store.conn().execute("SELECT state, user_text FROM turns").fetchone()
    assert row["state"] == "failed" and row["user_text"] == huge
    assert chat_requests(llm_stub) == []
    assert active_thread(mgr.store.conn())
