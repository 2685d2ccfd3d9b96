"""The Memory pipeline against a strict local server (issue 12): JSON mode and `max_tokens` on every
Memory call, a reply cut at its bound is the failure rule `truncated` (one repair with a larger
bound, then a safe failure that status shows), a server that refuses JSON mode, a chat template
that drops system messages, and the exit flush of `ask`."""

from __future__ import annotations

import json


from tests.support.llm_stub import CapturedRequest, Strict
from tests.support.pipeline_helpers import add_turn, cand, create_all, ext_reply, job_of_turn, src, stub_env

USER = "From now on always use tabs."


def good(t, checkpoint: str = "CP") -> dict:
    return ext_reply(cand(src(t, "user", "always use tabs"), subject="indentation"), checkpoint=checkpoint)


def test_memory_calls_ask_for_json_mode_with_a_bound_and_commit_against_a_strict_server(make_manager, llm_stub):
    llm_stub.strict = Strict()
    llm_stub.default("consolidation", create_all)
    mgr = make_manager()
    t = add_turn(mgr, USER, "ok")
    llm_stub.script("extraction", good(t))
    mgr.process_pending()
    assert job_of_turn(mgr, t)["status"] == "succeeded"
    calls = llm_stub.requests_for("extraction") + llm_stub.requests_for("consolidation")
    assert len(calls) == 2
    for request in calls:
        assert request.body["response_format"] == {"type": "json_object"}
        assert request.body["max_tokens"] == 4096 and request.body["temperature"] == 0
        assert not request.stream
    assert llm_stub.unbounded == []
    assert mgr.status().active_items == 1


def test_a_truncated_reply_is_its_own_rule_and_the_repair_gets_a_larger_bound(make_manager, llm_stub):
    llm_stub.strict = Strict()
    mgr = make_manager(MEMORY_MAX_OUTPUT_TOKENS=300)
    t = add_turn(mgr, USER, "ok")
    long_checkpoint = "C" * 1600  # about 1,700 characters of JSON: cut at 300 tokens, fits in 600
    llm_stub.script("extraction", good(t, long_checkpoint))
    llm_stub.script("extraction_repair", good(t, long_checkpoint))
    outcome = mgr.runner.step(force=True)
    assert outcome.status == "succeeded"
    [primary] = llm_stub.requests_for("extraction")
    [repair] = llm_stub.requests_for("extraction_repair")
    assert primary.body["max_tokens"] == 300 and repair.body["max_tokens"] == 600
    assert json.loads(repair.messages[-1]["content"])["violations"] == [{"rule": "truncated", "where": "reply"}]


def test_truncated_twice_fails_safely_with_the_rule_in_status(make_manager, llm_stub, run_cli):
    llm_stub.strict = Strict()
    mgr = make_manager(MEMORY_MAX_OUTPUT_TOKENS=300)
    t = add_turn(mgr, USER, "ok")
    huge = good(t, "QUOTE-MARKER " * 400)
    llm_stub.script("extraction", huge)
    llm_stub.script("extraction_repair", huge)
    outcome = mgr.runner.step(force=True)
    assert (outcome.status, outcome.category, outcome.rule) == ("failed", "contract_violation", "truncated")
    [failure] = mgr.status().failures
    assert (failure.category, failure.stage, failure.rule) == ("contract_violation", "repair", "truncated")
    rc, out, _ = run_cli("memory", "status", json=True, env=stub_env(llm_stub))
    assert rc == 0 and out["failures"][0]["rule"] == "truncated" and "QUOTE-MARKER" not in json.dumps(out)


def test_a_server_that_refuses_json_mode_is_asked_once_per_process(make_manager, llm_stub):
    llm_stub.strict = Strict(json_mode="rejected")
    llm_stub.default("consolidation", create_all)
    mgr = make_manager()
    t1 = add_turn(mgr, USER, "ok")
    llm_stub.script("extraction", good(t1))
    mgr.process_pending()
    assert job_of_turn(mgr, t1)["status"] == "succeeded"
    asked = [r for r in llm_stub.requests if "response_format" in r.body]
    assert len(asked) == 1 and asked[0].task == "extraction"  # refused once, then never asked again
    assert len(llm_stub.requests) == 3  # extraction refused + repeated, consolidation without it


def test_a_template_that_drops_system_messages_ends_in_a_safe_outcome(make_manager, llm_stub):
    llm_stub.strict = Strict(drop_system=True)
    seen: list[list[str]] = []

    def model(request: CapturedRequest) -> dict:
        seen.append([m["role"] for m in request.messages])
        has_instructions = any(m["role"] == "system" for m in request.messages)
        return {"thread_checkpoint": "ok", "candidates": []} if has_instructions else {"summary": "a guess"}

    llm_stub.default("extraction", model)
    llm_stub.default("extraction_repair", model)
    mgr = make_manager()
    t = add_turn(mgr, USER, "ok")
    outcome = mgr.runner.step(force=True)
    assert seen == [["user"], ["user"]]  # the model never saw the instructions
    assert (outcome.status, outcome.category) == ("failed", "contract_violation")
    assert job_of_turn(mgr, t)["failure_rule"] and mgr.status().state == "healthy"


def test_ask_and_its_exit_flush_work_against_a_strict_server(repo, llm_stub, invoke_cli):
    llm_stub.strict = Strict()

    def extraction(request: CapturedRequest) -> dict:
        payload = json.loads(request.messages[-1]["content"])
        return {"thread_checkpoint": f"CP {payload['turns'][0]['turn_id']}", "candidates": []}

    llm_stub.default("extraction", extraction)
    llm_stub.default("chat", "A local answer.")
    env = stub_env(llm_stub, LLM_MAX_RETRIES=0)
    rc, out, err = invoke_cli("ask", "hello", "--intent", "general_chat", json=True, env=env)
    assert rc == 0, err
    assert out["answer"] == "A local answer." and out["state"] == "completed"
    [extraction_call] = llm_stub.requests_for("extraction")
    assert extraction_call.body["response_format"] == {"type": "json_object"}
    assert llm_stub.unbounded == [] and llm_stub.errors == []
