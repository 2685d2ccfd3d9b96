"""`autopatch-tui ask` (contracts §4): a headless ordinary turn — RAW turn saved before the model call,
the final answer saved, the exit flush — and its failure modes; restart continuity across processes."""

from __future__ import annotations

import json

from tests.support.fixtures import db_path, is_error_doc, query
from tests.support.llm_stub import CapturedRequest, Reply


def turns(repo) -> list[tuple]:
    return [tuple(r) for r in query(db_path(repo), "SELECT state, intent, user_text, assistant_text FROM turns"
                                                    " ORDER BY sequence")]


def test_ask_saves_the_raw_turn_first_then_the_answer_and_flushes(repo, model_env, llm_stub, invoke_cli) -> None:
    seen_during_call: list[list[tuple]] = []

    def chat(request: CapturedRequest) -> str:
        seen_during_call.append(turns(repo))  # read the store while the model is "thinking"
        if isinstance(request.body.get("tool_choice"), dict):  # a tool-capable server honours the forced read
            return Reply(tool_calls=[("read_file", json.dumps({"path": "src/parser.py"}))])
        return "The parser is a Pratt parser."

    llm_stub.default("chat", chat)
    (repo / "src").mkdir()
    (repo / "src" / "parser.py").write_text("def parse(): ...\n")  # a --path must exist in the repository
    rc, out, err = invoke_cli("ask", "How does the parser work?", "--intent", "code_explain", "--path",
                              "src/parser.py", json=True)
    assert rc == 0, err
    # both model calls (the forced read of the scoped file, then the answer) saw the RAW turn saved and open
    assert seen_during_call == [[("open", "code_explain", "How does the parser work?", None)]] * 2
    assert set(out) == {"turn_id", "thread_id", "answer", "state", "memory_used"}
    assert out["answer"] == "The parser is a Pratt parser." and out["state"] == "completed"
    assert turns(repo) == [("completed", "code_explain", "How does the parser work?", "The parser is a Pratt parser.")]
    row = query(db_path(repo), "SELECT id, thread_id, scope_paths FROM turns")[0]
    assert (row["id"], row["thread_id"]) == (out["turn_id"], out["thread_id"])
    assert json.loads(row["scope_paths"]) == ["src/parser.py"]
    # the exit flush gave the new turn its extraction
    extraction = llm_stub.requests_for("extraction")
    assert len(extraction) == 1
    assert json.loads(extraction[0].messages[-1]["content"])["turns"][0]["turn_id"] == out["turn_id"]
    assert query(db_path(repo), "SELECT checkpoint FROM threads WHERE id = ?", (out["thread_id"],))[0][0] \
        == "CHECKPOINT after turns 1"
    assert llm_stub.requests_for("classify") == []


def test_ask_prints_the_answer_and_classifies_without_intent(repo, model_env, llm_stub, invoke_cli) -> None:
    llm_stub.default("classify", "general_chat")
    llm_stub.default("chat", "Hello there.")
    rc, out, err = invoke_cli("ask", "hi")
    assert rc == 0, err
    assert out == "Hello there.\n"
    assert len(llm_stub.requests_for("classify")) == 1


def test_model_failure_exits_1_marks_the_turn_failed_and_keeps_the_text(repo, model_env, llm_stub,
                                                                        invoke_cli) -> None:
    marker = "PROVIDER-BODY-7f3a"
    llm_stub.default("chat", Reply(status=500, error_body={"error": {"message": marker, "type": marker}}))
    rc, out, err = invoke_cli("ask", "Why is CI red?", "--intent", "general_chat", json=True)
    assert rc == 1 and is_error_doc(out, 1) and marker not in str(out)
    assert marker not in err and "model provider error" in err and "500" in err
    assert turns(repo) == [("failed", "general_chat", "Why is CI red?", None)]
    assert len(llm_stub.requests_for("chat")) == 1  # SDK retries are off (config.toml)
    assert len(llm_stub.requests_for("extraction")) == 1  # the exit flush still ran
    status = query(db_path(repo), "SELECT count(*) FROM memory_jobs WHERE kind = 'extraction'")[0][0]
    assert status == 1


def test_no_model_explains_configuration_and_stores_nothing(repo, invoke_cli, llm_stub) -> None:
    rc, out, err = invoke_cli("ask", "hello", json=True)
    assert rc == 1 and is_error_doc(out, 1)
    assert "AUTOPATCH_LLM_BASE_URL" in err and "AUTOPATCH_LLM_MODEL" in err
    assert turns(repo) == []
    assert llm_stub.requests == []


def test_unknown_model_without_window_exits_1_with_a_clear_message(repo, model_env, llm_stub, invoke_cli) -> None:
    rc, _, err = invoke_cli("ask", "hello", env={"AUTOPATCH_LLM_MODEL": "my-local-model"})
    assert rc == 1 and "AUTOPATCH_LLM_CONTEXT_WINDOW" in err and "my-local-model" in err
    assert turns(repo) == [] and llm_stub.requests_for("chat") == []


def test_ask_usage_errors_exit_2(repo, model_env, invoke_cli) -> None:
    rc, _, _ = invoke_cli("ask", "hi", "--intent", "code_audit")
    assert rc == 2


def test_restart_continuity_a_new_process_sees_history_and_checkpoint(repo, model_env, llm_stub, run_cli) -> None:
    llm_stub.default("classify", "general_chat")
    llm_stub.script("chat", "FIRST-ANSWER: use exponential backoff.", "SECOND-ANSWER")
    rc, first, err = run_cli("ask", "FIRST-QUESTION: how should retries work?", json=True, env=model_env)
    assert rc == 0, err
    rc, second, err = run_cli("ask", "and what about timeouts?", json=True, env=model_env)
    assert rc == 0, err
    assert second["thread_id"] == first["thread_id"]  # the active thread is reused
    request = llm_stub.requests_for("chat")[1]
    msgs = request.messages
    assert "CHECKPOINT after turns 1" in msgs[0]["content"]
    pairs = [(m["role"], m["content"]) for m in msgs if m["role"] in ("user", "assistant")]
    assert pairs == [("user", "FIRST-QUESTION: how should retries work?"),
                     ("assistant", "FIRST-ANSWER: use exponential backoff."),
                     ("user", "and what about timeouts?")]
