"""`provider_calls` counts every HTTP request a job made: when a server refuses JSON mode, the
refused request and its repetition without `response_format` are two requests inside one Memory
call, and the job records both (it once recorded 1)."""

from __future__ import annotations


from tests.support.llm_stub import Strict
from tests.support.pipeline_helpers import (
    add_turn,
    cand,
    create_all,
    ext_reply,
    job_of_turn,
    src,
)

USER = "From now on always use tabs."


def test_a_json_mode_fallback_counts_both_requests(make_manager, llm_stub):
    llm_stub.strict = Strict(json_mode="rejected")
    llm_stub.default("consolidation", create_all)
    mgr = make_manager()
    t1 = add_turn(mgr, USER, "ok")
    llm_stub.script("extraction", ext_reply(cand(src(t1, "user", "always use tabs"), subject="indentation"),
                                            checkpoint="CP"))
    mgr.process_pending()
    assert len(llm_stub.requests_for("extraction")) == 2  # refused, then repeated without JSON mode
    job = job_of_turn(mgr, t1)
    assert (job["status"], job["provider_calls"], job["attempts"]) == ("succeeded", 2, 1)
    # the endpoint is remembered: the next job sends one request and counts one
    t2 = add_turn(mgr, "Also prefer pathlib over os.path.", "ok")
    llm_stub.script("extraction", ext_reply(cand(src(t2, "user", "prefer pathlib"), subject="paths"),
                                            checkpoint="CP2"))
    mgr.process_pending()
    job = job_of_turn(mgr, t2)
    assert job["status"].startswith("succeeded") and job["provider_calls"] == 1
