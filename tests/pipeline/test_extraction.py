"""Extraction: the payload of contracts §3.1, the adjacent turn, the previous checkpoint, bounded
repair evidence, capacity offload and projection, the atomic commit, and no-output success
(spec: durable 两阶段 Memory 处理; provenance 受实际 extraction 投影约束)."""

from __future__ import annotations

import re

import pytest

from autopatch_tui.core.errors import MemoryBusyError
from autopatch_tui.core.llm.json_reply import dump_json_payload
from autopatch_tui.core.llm.tokens import estimate_tokens
from autopatch_tui.core.pipeline import extraction as extraction_mod
from autopatch_tui.core.pipeline.extraction_payload import (
    MAX_EVIDENCE_TOKENS,
    MAX_EVIDENCE_TURNS,
    ExtractionInput,
    TurnView,
    fit,
)
from tests.support.pipeline_helpers import (
    add_turn,
    cand,
    candidates,
    checkpoint,
    ext_reply,
    job_of_turn,
    jobs,
    payload_of,
    rows,
    src,
)

PAYLOAD_KEYS = {"thread_id", "previous_checkpoint", "adjacent_previous_turn", "turns", "recent_repair_evidence"}
TURN_KEYS = {"turn_id", "sequence", "intent", "state", "user", "assistant", "scope_paths", "evidence_keys"}
MARKER = re.compile(r"\[\.\.\. (\d+) chars omitted \.\.\.\]")


def _thread(mgr) -> str:
    return mgr.status().active_thread_id


# --------------------------------------------------------------------------- the payload


def test_payload_matches_the_contract_exactly(make_manager, llm_stub):
    mgr = make_manager()
    llm_stub.script("extraction", ext_reply(checkpoint="  CP after the first batch  "))
    llm_stub.default("extraction", ext_reply(checkpoint="CP two"))
    t0 = add_turn(mgr, "first: how is config loaded?", "From config.toml.")
    assert mgr.runner.step(force=True).status == "succeeded_no_output"
    t1 = add_turn(mgr, "second question", "second answer", scope_paths=["src/a.py", "src/b.py"],
                  evidence_keys=["scan-1:F1"])
    t2 = add_turn(mgr, "third question", "third answer")
    assert mgr.runner.step().status == "succeeded_no_output"

    req = llm_stub.requests_for("extraction")[-1]
    assert req.headers["x-autopatch-task"] == "extraction"
    assert req.body["temperature"] == 0 and not req.body.get("stream")
    assert req.body["model"] == "gpt-4o"
    assert [m["role"] for m in req.messages] == ["system", "user"]
    p = payload_of(req)
    assert set(p) == PAYLOAD_KEYS
    assert p["thread_id"] == _thread(mgr)
    assert p["previous_checkpoint"] == "CP after the first batch"  # stored stripped
    assert set(p["adjacent_previous_turn"]) == TURN_KEYS
    assert p["adjacent_previous_turn"]["turn_id"] == t0.turn_id
    assert p["recent_repair_evidence"] == []
    assert [set(t) for t in p["turns"]] == [TURN_KEYS, TURN_KEYS]
    assert p["turns"][0] == {"turn_id": t1.turn_id, "sequence": 2, "intent": "general_chat", "state": "completed",
                             "user": "second question", "assistant": "second answer",
                             "scope_paths": ["src/a.py", "src/b.py"], "evidence_keys": ["scan-1:F1"]}
    assert p["turns"][1]["turn_id"] == t2.turn_id
    assert checkpoint(mgr, _thread(mgr)) == ("CP two", 3)


def test_scope_paths_in_the_payload_use_the_bounded_projection(make_manager, llm_stub):
    mgr = make_manager()
    llm_stub.default("extraction", ext_reply())
    paths = [f"src/m{i}.py" for i in range(14)]
    add_turn(mgr, "a question", "an answer", scope_paths=paths)
    mgr.runner.step(force=True)
    assert payload_of(llm_stub.requests_for("extraction")[0])["turns"][0]["scope_paths"] == paths[:10]


def test_adjacent_is_the_last_completed_turn_before_the_batch(make_manager, llm_stub):
    mgr = make_manager()
    llm_stub.default("extraction", ext_reply())
    t0 = add_turn(mgr, "completed before", "answer")
    mgr.runner.step(force=True)
    failed = mgr.begin_turn("this one failed")
    mgr.fail_turn(failed)
    mgr.runner.step(force=True)
    t2 = add_turn(mgr, "the batch", "answer")
    mgr.runner.step(force=True)
    p = payload_of(llm_stub.requests_for("extraction")[-1])
    assert p["adjacent_previous_turn"]["turn_id"] == t0.turn_id
    assert [t["turn_id"] for t in p["turns"]] == [t2.turn_id]
    failed_payload = payload_of(llm_stub.requests_for("extraction")[1])
    assert failed_payload["turns"][0]["state"] == "failed" and failed_payload["turns"][0]["assistant"] == ""


def test_first_batch_has_no_adjacent_turn_and_empty_checkpoint(make_manager, llm_stub):
    mgr = make_manager()
    llm_stub.default("extraction", ext_reply())
    add_turn(mgr, "hello", "hi")
    mgr.runner.step(force=True)
    p = payload_of(llm_stub.requests_for("extraction")[0])
    assert p["adjacent_previous_turn"] is None and p["previous_checkpoint"] == ""


def test_repair_evidence_only_for_repair_batches_and_at_most_20_turns(make_manager, llm_stub):
    mgr = make_manager()
    llm_stub.default("extraction", ext_reply())
    audits = [add_turn(mgr, f"review finding {i}", f"patch {i}", intent="code_audit",
                       scope_paths=[f"src/f{i}.py"], evidence_keys=[f"scan-1:F{i}"]) for i in range(23)]
    while mgr.runner.step(force=True) is not None:
        pass
    ordinary = add_turn(mgr, "an ordinary question", "an ordinary answer")
    mgr.runner.step(force=True)
    assert payload_of(llm_stub.requests_for("extraction")[-1])["recent_repair_evidence"] == []

    repair = add_turn(mgr, "revise the patch", "revised", intent="patch_revise")
    mgr.runner.step(force=True)
    p = payload_of(llm_stub.requests_for("extraction")[-1])
    assert [t["turn_id"] for t in p["turns"]] == [repair.turn_id]
    assert p["adjacent_previous_turn"]["turn_id"] == ordinary.turn_id
    ev = p["recent_repair_evidence"]
    assert len(ev) == MAX_EVIDENCE_TURNS
    assert [t["turn_id"] for t in ev] == [a.turn_id for a in audits[-len(ev):]]  # the newest, oldest first
    assert all(t["intent"] == "code_audit" and t["evidence_keys"] for t in ev)


def test_repair_evidence_is_bounded_by_32k_estimated_tokens(make_manager, llm_stub):
    mgr = make_manager()
    llm_stub.default("extraction", ext_reply())
    big = "x" * 16_000  # ~4000 tokens each
    for i in range(12):
        add_turn(mgr, f"finding {i} " + big, "ok", intent="code_audit", evidence_keys=[f"s:{i}"])
    while mgr.runner.step(force=True) is not None:
        pass
    gap = add_turn(mgr, "not a repair turn", "answer")
    mgr.runner.step(force=True)
    add_turn(mgr, "the repair batch", "done", intent="code_audit")
    mgr.runner.step(force=True)
    ev = payload_of(llm_stub.requests_for("extraction")[-1])["recent_repair_evidence"]

    def cost(t):
        return estimate_tokens(t["user"]) + estimate_tokens(t["assistant"])

    assert 0 < len(ev) < 12
    assert [t["user"].split(" ")[1] for t in ev] == [str(i) for i in range(12 - len(ev), 12)]  # the newest
    assert sum(cost(t) for t in ev) <= MAX_EVIDENCE_TOKENS
    assert sum(cost(t) for t in ev) + cost(ev[0]) > MAX_EVIDENCE_TOKENS - 16 * (len(ev) + 1)  # one more: too much
    assert gap.turn_id not in [t["turn_id"] for t in ev]


def test_evidence_belongs_to_the_same_thread(make_manager, llm_stub):
    mgr = make_manager()
    llm_stub.default("extraction", ext_reply())
    add_turn(mgr, "old thread finding", "patch", intent="code_audit", evidence_keys=["s:1"])
    mgr.new_thread(timeout=5)
    add_turn(mgr, "new thread finding", "patch", intent="code_audit", evidence_keys=["s:2"])
    mgr.runner.step(force=True)
    p = payload_of(llm_stub.requests_for("extraction")[-1])
    assert p["recent_repair_evidence"] == [] and p["adjacent_previous_turn"] is None


# --------------------------------------------------------------------------- commit


def test_no_candidates_is_success_and_the_turn_is_never_reprocessed(make_manager, llm_stub):
    mgr = make_manager()
    llm_stub.default("extraction", ext_reply())
    t1 = add_turn(mgr, "just chatting", "sure")
    outcome = mgr.runner.step(force=True)
    assert outcome.status == "succeeded_no_output"
    job = job_of_turn(mgr, t1)
    assert job["status"] == "succeeded_no_output" and job["no_output_reason"] == "no_candidates"
    assert job["completed_at"] is not None and job["provider_calls"] == 1 and job["attempts"] == 1
    assert checkpoint(mgr, _thread(mgr))[1] == t1.sequence
    assert jobs(mgr, "consolidation") == []
    # never again: not by a step, not by the exit flush, not by a new manager
    assert mgr.runner.step(force=True) is None
    assert mgr.process_pending().as_dict() == {"succeeded": 0, "succeeded_no_output": 0, "retry_wait": 0,
                                                "failed": 0, "pending": 0}
    assert make_manager().process_pending().succeeded_no_output == 0
    t2 = add_turn(mgr, "next question", "answer")
    mgr.runner.step(force=True)
    p = payload_of(llm_stub.requests_for("extraction")[-1])
    assert [t["turn_id"] for t in p["turns"]] == [t2.turn_id]
    assert len(llm_stub.requests_for("extraction")) == 2


def test_checkpoint_candidates_and_job_states_commit_in_one_transaction(make_manager, llm_stub, monkeypatch):
    mgr = make_manager()
    llm_stub.script("extraction", ext_reply(checkpoint="CP one"))
    add_turn(mgr, "warm up", "ok")
    mgr.runner.step(force=True)
    t = add_turn(mgr, "From now on always use tabs. Also never use var.", "Noted.")
    reply = ext_reply(
        cand(src(t, "user", "From now on always use tabs."), subject="indentation"),
        cand(src(t, "user", "never use var"), subject="var keyword", statement="Never use var."),
        checkpoint="CP two",
    )
    llm_stub.script("extraction", reply, reply)
    real = extraction_mod.insert_candidate
    calls = []

    def flaky_insert(*args, **kwargs):  # the second candidate's insert hits a lock
        calls.append(1)
        if len(calls) == 2:
            raise MemoryBusyError("the Memory store stayed locked by another writer")
        return real(*args, **kwargs)

    monkeypatch.setattr(extraction_mod, "insert_candidate", flaky_insert)
    outcome = mgr.runner.step(force=True)
    assert outcome.status == "retry_wait" and outcome.category == "sqlite_lock"
    assert checkpoint(mgr, _thread(mgr)) == ("CP one", 1)  # not advanced
    assert candidates(mgr) == [] and jobs(mgr, "consolidation") == []
    job = job_of_turn(mgr, t)
    assert (job["status"], job["failure_category"], job["failure_phase"], job["failure_stage"]) == (
        "retry_wait", "sqlite_lock", "commit", "primary")

    monkeypatch.setattr(extraction_mod, "insert_candidate", real)
    conn = mgr.store.conn()
    conn.execute("UPDATE memory_jobs SET available_at = 0 WHERE id = ?", (job["id"],))
    outcome = mgr.runner.step(force=True, only={job["id"]})
    assert outcome.status == "succeeded"
    assert checkpoint(mgr, _thread(mgr)) == ("CP two", 2)
    cands = candidates(mgr)
    assert len(cands) == 2 and {c["status"] for c in cands} == {"pending"}
    cons = jobs(mgr, "consolidation")
    assert len(cons) == 1 and all(c["consolidation_job_id"] == cons[0]["id"] for c in cands)
    assert cons[0]["parent_job_id"] == job["id"]


def test_an_older_batch_committing_late_never_rolls_the_checkpoint_back(make_manager, llm_stub):
    from tests.support.fixtures import FakeClock
    from tests.support.llm_stub import Reply

    clock = FakeClock()
    mgr = make_manager(clock=clock)
    t1 = add_turn(mgr, "first question", "answer")
    llm_stub.script("extraction", Reply(status=503))
    assert mgr.runner.step(force=True).status == "retry_wait"
    t2 = add_turn(mgr, "second question", "answer")
    llm_stub.script("extraction", ext_reply(checkpoint="CP after turn 2"))
    assert mgr.runner.step(force=True).status == "succeeded_no_output"  # t1 is not due yet
    p = payload_of(llm_stub.requests_for("extraction")[-1])
    assert [t["turn_id"] for t in p["turns"]] == [t2.turn_id]
    assert p["adjacent_previous_turn"]["turn_id"] == t1.turn_id
    clock.advance(10)
    llm_stub.script("extraction", ext_reply(checkpoint="CP after turn 1"))
    assert mgr.runner.step(force=True).status == "succeeded_no_output"
    assert checkpoint(mgr, _thread(mgr)) == ("CP after turn 2", 2)


# --------------------------------------------------------------------------- capacity: fit() order


def _tv(tid: str, seq: int, user: str, assistant: str = "", intent: str = "code_audit") -> TurnView:
    return TurnView(tid, seq, intent, "completed", user, assistant, ["a.py"], [f"s:{seq}"])


def _input() -> ExtractionInput:
    ev = [_tv(f"e{i}", i, f"evidence {i} " + "e" * 400) for i in range(1, 4)]
    adj = _tv("adj", 4, "adjacent " + "a" * 400, "adjacent answer")
    batch = [_tv("b1", 5, "HEAD of the user text. " + "m" * 3000 + " TAIL of the user text.", "short answer")]
    return ExtractionInput("thr", "checkpoint " + "c" * 400, adj, batch, ev)


def _size(inp: ExtractionInput) -> int:
    return estimate_tokens(dump_json_payload(inp.payload()))


def _measure(text: str) -> int:
    return estimate_tokens(text)


def test_fit_offloads_the_oldest_evidence_first():
    probe = _input()
    probe.evidence.pop(0)
    inp = _input()
    assert fit(inp, _size(probe), _measure)
    assert [t.turn_id for t in inp.evidence] == ["e2", "e3"]
    assert inp.adjacent is not None and inp.checkpoint and inp.offloaded == ["repair_evidence"]
    assert inp.sent[("b1", "user")] == (inp.batch[0].user,)
    assert ("e1", "user") not in inp.sent


def test_fit_offloads_evidence_then_adjacent_then_checkpoint():
    probe = _input()
    probe.evidence, probe.adjacent = [], None
    inp = _input()
    assert fit(inp, _size(probe), _measure)
    assert inp.evidence == [] and inp.adjacent is None and inp.checkpoint.startswith("checkpoint")
    assert inp.offloaded == ["repair_evidence", "adjacent_turn"]

    probe.checkpoint = ""
    inp = _input()
    assert fit(inp, _size(probe), _measure)
    assert inp.checkpoint == "" and inp.offloaded == ["repair_evidence", "adjacent_turn", "previous_checkpoint"]
    assert inp.projected == {}


def test_fit_projects_primary_texts_last_keeping_head_and_tail():
    probe = _input()
    probe.evidence, probe.adjacent, probe.checkpoint = [], None, ""
    capacity = _size(probe) - 300
    inp = _input()
    raw = inp.batch[0].user
    assert fit(inp, capacity, _measure)
    assert inp.offloaded == ["repair_evidence", "adjacent_turn", "previous_checkpoint", "primary_projection"]
    assert _size(inp) <= capacity
    sent_user = inp.payload()["turns"][0]["user"]
    m = MARKER.search(sent_user)
    assert m and sent_user.startswith("HEAD of the user text.") and sent_user.endswith("TAIL of the user text.")
    head, tail = inp.sent[("b1", "user")]
    assert raw.startswith(head) and raw.endswith(tail)
    assert int(m.group(1)) == len(raw) - len(head) - len(tail)
    assert inp.batch[0].user == raw  # the loaded RAW text itself is not shortened


def test_fit_gives_up_when_the_frame_alone_does_not_fit():
    inp = _input()
    assert not fit(inp, 40, _measure)


# --------------------------------------------------------------------------- capacity: end to end

SMALL = {"LLM_CONTEXT_WINDOW": 3000, "LLM_MAX_OUTPUT_TOKENS": 500}


def _long_text() -> str:
    head = "HEAD: From now on always use tabs for indentation. "
    middle = "filler sentence number. " * 200 + "MIDDLE-ONLY: never use semicolons anywhere. " + \
             "more filler words here. " * 200
    tail = " TAIL: thanks."
    return head + middle + tail


def test_oversized_payload_offloads_and_projects_but_keeps_raw_text(make_manager, llm_stub):
    mgr = make_manager(**SMALL)
    llm_stub.default("extraction", ext_reply(checkpoint="C" * 1200))
    for i in range(2):
        add_turn(mgr, f"finding {i} " + "evidence text. " * 60, "ok", intent="code_audit", evidence_keys=[f"s:{i}"])
        mgr.runner.step(force=True)
    text = _long_text()
    t = add_turn(mgr, text, "I will " + "explain at length. " * 150, intent="code_audit",
                 evidence_keys=["s:9"])
    outcome = mgr.runner.step(force=True)
    assert outcome.status == "succeeded_no_output"
    p = payload_of(llm_stub.requests_for("extraction")[-1])
    assert p["recent_repair_evidence"] == [] and p["adjacent_previous_turn"] is None
    assert p["previous_checkpoint"] == ""
    sent = p["turns"][0]
    assert MARKER.search(sent["user"]) and MARKER.search(sent["assistant"])
    assert sent["user"].startswith("HEAD: From now on always use tabs")
    assert "MIDDLE-ONLY" not in sent["user"]
    assert rows(mgr, "SELECT user_text FROM turns WHERE id = ?", (t.turn_id,))[0]["user_text"] == text
    # the capacity profile really was respected (estimate of what was sent)
    assert mgr.memory_model.measure(extraction_mod.REPAIR_SYSTEM, p) <= mgr.memory_model.capacity


def test_quote_only_in_the_omitted_middle_is_refused(make_manager, llm_stub):
    mgr = make_manager(**SMALL)
    text = _long_text()
    t = add_turn(mgr, text, "ok")
    middle = cand(src(t, "user", "MIDDLE-ONLY: never use semicolons anywhere."), subject="semicolons")
    head = cand(src(t, "user", "From now on always use tabs for indentation."), subject="tabs")
    llm_stub.script("extraction", ext_reply(middle))
    llm_stub.script("extraction_repair", ext_reply(head))
    assert mgr.runner.step(force=True).status == "succeeded"
    repair = payload_of(llm_stub.requests_for("extraction_repair")[0])
    assert {"rule": "quote_not_found", "where": "candidates[0].sources[0]"} in repair["violations"]
    assert [c["subject"] for c in candidates(mgr)] == ["tabs"]


@pytest.mark.parametrize("quote_kind", ["middle", "marker", "across_marker", "head_ok"])
def test_projected_quotes_never_become_provenance(make_manager, llm_stub, quote_kind):
    mgr = make_manager(**SMALL)
    text = _long_text()
    t = add_turn(mgr, text, "ok")

    def reply(req):  # quote computed from what was actually sent
        sent_user = payload_of(req)["turns"][0]["user"]
        m = MARKER.search(sent_user)
        assert m
        quote = {"middle": "MIDDLE-ONLY: never use semicolons",
                 "marker": m.group(0),
                 "across_marker": sent_user[m.start() - 12:m.end() + 5],
                 "head_ok": "From now on always use tabs for indentation"}[quote_kind]
        assert quote_kind != "head_ok" or quote in sent_user[:m.start()]
        # each quote is a directive sharing the candidate's terms, so only provenance decides
        return ext_reply(cand(src(t, "user", quote), subject="semicolons and tabs",
                              statement="Never use semicolons; always use tabs for indentation."))

    llm_stub.default("extraction", reply)
    llm_stub.default("extraction_repair", reply)
    outcome = mgr.runner.step(force=True)
    if quote_kind == "head_ok":
        assert outcome.status == "succeeded" and len(candidates(mgr)) == 1
        assert llm_stub.requests_for("extraction_repair") == []
        return
    assert outcome.status == "failed" and outcome.rule == "quote_not_found"
    assert len(llm_stub.requests_for("extraction_repair")) == 1
    assert candidates(mgr) == []
    assert rows(mgr, "SELECT user_text FROM turns WHERE id = ?", (t.turn_id,))[0]["user_text"] == text


def test_when_even_the_projection_cannot_fit_the_job_ends_without_a_call(make_manager, llm_stub):
    mgr = make_manager(LLM_CONTEXT_WINDOW=1200, LLM_MAX_OUTPUT_TOKENS=100)
    t = add_turn(mgr, "From now on always use tabs.", "Noted.")
    outcome = mgr.runner.step(force=True)
    assert outcome.status == "succeeded_no_output" and outcome.rule == "capacity"
    assert llm_stub.requests == []
    job = job_of_turn(mgr, t)
    assert (job["status"], job["no_output_reason"], job["provider_calls"]) == ("succeeded_no_output", "capacity", 0)
    assert job["completed_at"] is not None
    assert candidates(mgr) == []
    assert rows(mgr, "SELECT user_text FROM turns WHERE id = ?", (t.turn_id,))[0]["user_text"] == \
        "From now on always use tabs."
