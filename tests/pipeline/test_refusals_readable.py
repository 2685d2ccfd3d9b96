"""Every refusal is readable (issue 19, deliverable 5; contracts §8): each refused candidate's rule is
recorded on the extraction job of the turn its first batch user source belongs to, `memory status`
(text and `--json`) sums them by rule, the job table carries the same counts for the Jobs screen,
and the log names the rules — never a candidate, a quote or a statement."""

from __future__ import annotations

import logging

from autopatch_tui.core.memory.refusals import parse_verdict, refusal_counts
from autopatch_tui.core.memory.render import render_status
from tests.support.pipeline_helpers import add_turn, cand, candidates, ext_reply, job_of_turn, src


def _batch(pipe, stub, turns, *cands):
    """One extraction step over every pending job (the turns form one batch)."""
    stub.script("extraction", ext_reply(*cands))
    out = pipe.runner.step(force=True)
    assert out is not None and out.kind == "extraction" and len(out.job_ids) == len(turns)
    return out


def test_a_refusal_lands_on_the_job_of_its_own_turn(pipe, llm_stub):
    first = add_turn(pipe, "Use ruff for linting from now on.", "OK.")
    second = add_turn(pipe, "For this reply, skip the examples. The worker pool has eight threads.", "OK.")
    third = add_turn(pipe, "Maybe we should move to Bazel.", "OK.")
    _batch(pipe, llm_stub, [first, second, third],
           cand(src(first, "user", "Use ruff for linting from now on."), subject="linter", statement="Use ruff."),
           cand(src(second, "user", "For this reply, skip the examples."), subject="examples",
                statement="Skip the examples."),
           cand(src(second, "user", "The worker pool has eight threads."), subject="worker pool",
                statement="The worker pool has eight threads."),
           cand(src(third, "user", "Maybe we should move to Bazel."), subject="build tool", statement="Use Bazel."))
    assert [c["subject"] for c in candidates(pipe)] == ["linter"]
    # the batch's first job holds no verdict of the other turns: each turn reads its own refusals
    assert job_of_turn(pipe, first)["failure_rule"] is None
    assert parse_verdict(job_of_turn(pipe, second)["failure_rule"]) == {"one_off_scope": 1, "code_fact": 1}
    assert job_of_turn(pipe, third)["failure_rule"] == "hedged:1"
    assert all(job_of_turn(pipe, t)["failure_category"] is None for t in (first, second, third))
    assert refusal_counts(pipe.store.conn()) == {"code_fact": 1, "hedged": 1, "one_off_scope": 1}


def test_a_candidate_without_a_batch_user_source_falls_back_to_the_first_job(pipe, llm_stub):
    first = add_turn(pipe, "Thanks.", "We should always pin versions.")
    second = add_turn(pipe, "ok", "Done.")
    _batch(pipe, llm_stub, [first, second],
           cand(src(first, "assistant", "We should always pin versions."), subject="pinning",
                statement="Always pin versions."))
    assert job_of_turn(pipe, first)["failure_rule"] == "current_batch_source:1"
    assert job_of_turn(pipe, second)["failure_rule"] is None


def test_status_reports_refusals_by_rule_in_text_and_json(pipe, llm_stub, caplog):
    caplog.set_level(logging.DEBUG)
    t = add_turn(pipe, "Today only, use the staging API. We're on Node 20. Should we try Deno?", "OK.")
    _batch(pipe, llm_stub, [t],
           cand(src(t, "user", "Today only, use the staging API."), subject="staging API", statement="Use staging."),
           cand(src(t, "user", "We're on Node 20."), subject="QUOTE-NODE-MARKER", statement="Node 20 runtime."),
           cand(src(t, "user", "Should we try Deno?"), subject="Deno", statement="Try Deno."))
    report = pipe.status()
    assert report.refusals == {"code_fact": 1, "one_off_scope": 1, "undecided": 1}
    doc = report.model_dump(mode="json")
    assert doc["refusals"] == {"code_fact": 1, "one_off_scope": 1, "undecided": 1}
    assert list(doc).index("refusals") == list(doc).index("failures_total") + 1  # next to the failures
    text = "\n".join(render_status(report))
    assert "refused candidates (not remembered), by rule: code_fact 1 · one_off_scope 1 · undecided 1" in text
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "refused code_fact:1.one_off_scope:1.undecided:1" in logged
    for secret in ("QUOTE-NODE-MARKER", "staging", "Deno", "Node 20"):  # §6: rules and counts only
        assert secret not in logged and secret not in repr(doc["refusals"])


def test_no_refusal_no_line_and_an_empty_map(pipe, llm_stub):
    t = add_turn(pipe, "Always write docstrings.", "OK.")
    _batch(pipe, llm_stub, [t], cand(src(t, "user", "Always write docstrings."), subject="docstrings"))
    report = pipe.status()
    assert report.refusals == {} and report.model_dump()["refusals"] == {}
    assert not any("refused" in line for line in render_status(report))


def test_a_hostile_verdict_is_never_passed_through(pipe):
    conn = pipe.store.conn()
    job = conn.execute("SELECT id FROM memory_jobs LIMIT 1").fetchone()
    if job is None:
        add_turn(pipe, "hello", "hi")
        job = conn.execute("SELECT id FROM memory_jobs LIMIT 1").fetchone()
    conn.execute("UPDATE memory_jobs SET failure_rule = ? WHERE id = ?", ("one_off_scope:2.x:.:3.a-b:1.ok:0", job[0]))
    conn.commit()
    assert refusal_counts(conn) == {"one_off_scope": 2}
    assert parse_verdict("code_fact:1" * 10) == {}  # longer than the column allows: not a verdict
    assert parse_verdict(None) == {} and parse_verdict("hedged:01.hedged:2") == {"hedged": 3}
