"""The model as a second reader (issue 29, deliverable 2; contracts §3.1 `evidence`): a candidate is
kept only when neither the gate nor the model's own reading refuses it; the model's refusal is the
rule `model_reading`, counted and readable like every rule; where the readers disagree the job's
verdict records it (rule names only) and `memory audit` lists the items of such a turn; a reply
without `evidence` is judged by the gate alone."""

from __future__ import annotations

import json

import pytest

from autopatch_tui.core.errors import MemoryContractError
from autopatch_tui.core.memory.job_table import read_job_table
from autopatch_tui.core.memory.refusal_words import RULE_WORDS
from autopatch_tui.core.memory.refusals import parse_disagreements, parse_verdict, refusal_counts
from autopatch_tui.core.pipeline.contracts import CandidateOut, ExtractionOut, validate_reply
from autopatch_tui.core.pipeline.extraction_rules import job_verdict
from autopatch_tui.core.pipeline.model_reading import second_reading
from tests.support.pipeline_helpers import (
    add_turn,
    cand,
    candidates,
    create_all,
    ext_reply,
    extract_step,
    job_of_turn,
    src,
)

USER_LASTING = {"speaker": "user", "stance": "asserted", "scope": "lasting"}


def _ev(**changes: str) -> dict[str, str]:
    return {**USER_LASTING, **changes}


def _with(c: dict, evidence: object) -> dict:
    return {**c, "evidence": evidence}


def _step(pipe, stub, *cands):
    out = extract_step(pipe, stub, *cands)
    assert out is not None and out.kind == "extraction"
    return out


# --------------------------------------------------------------------------- the contract


@pytest.mark.parametrize("evidence", [
    {"speaker": "user", "stance": "asserted"},  # scope missing
    {**USER_LASTING, "confidence": "high"},  # an extra key
    _ev(stance="sarcastic"),  # a value outside the enum
    _ev(speaker="User"),
    "user/asserted/lasting",  # not an object
    [USER_LASTING],
])
def test_a_malformed_evidence_is_a_schema_violation(evidence):
    reply = ext_reply(_with(cand(src("t1", "user", "Use ruff.")), evidence))
    with pytest.raises(MemoryContractError) as exc:
        validate_reply(ExtractionOut, reply)
    assert exc.value.rule == "schema"


def test_evidence_is_optional_and_null_means_absent():
    plain = validate_reply(ExtractionOut, ext_reply(cand(src("t1", "user", "Use ruff."))))
    null = validate_reply(ExtractionOut, ext_reply(_with(cand(src("t1", "user", "Use ruff.")), None)))
    assert plain.candidates[0].evidence is None and null.candidates[0].evidence is None


def test_a_malformed_evidence_goes_through_the_one_repair(pipe, llm_stub):
    t = add_turn(pipe, "Always pin exact versions in requirements.txt.", "OK.")
    good = cand(src(t, "user", "Always pin exact versions in requirements.txt."), subject="version pinning",
                statement="Pin exact versions in requirements.txt.")
    llm_stub.script("extraction", ext_reply(_with(good, _ev(scope="forever"))))
    llm_stub.script("extraction_repair", ext_reply(_with(good, USER_LASTING)))
    assert pipe.runner.step(force=True).status == "succeeded"
    [repair] = llm_stub.requests_for("extraction_repair")
    violations = json.loads(repair.messages[-1]["content"])["violations"]
    assert violations and all(v["rule"] == "schema" for v in violations)
    assert [c["subject"] for c in candidates(pipe, "pending")] == ["version pinning"]


# --------------------------------------------------------------------------- the reading itself


def _cand(kind: str = "user_preference", origin: str = "explicit", evidence: dict | None = None) -> CandidateOut:
    raw = cand(src("t1", "user", "Use ruff."), kind=kind, origin=origin)
    return validate_reply(CandidateOut, raw if evidence is None else _with(raw, evidence))


@pytest.mark.parametrize("gate_rule", [None, "code_fact", "one_off_scope"])
@pytest.mark.parametrize("gate_lasting", [False, True])
def test_without_evidence_the_gate_alone_judges(gate_rule, gate_lasting):
    for kind in ("user_preference", "project_decision", "discussion_context"):
        reading = second_reading(_cand(kind), gate_rule, gate_lasting)
        assert (reading.refuses, reading.disagreement) == (False, None)


@pytest.mark.parametrize("evidence,refuses", [
    (USER_LASTING, False),
    (_ev(scope="conditional"), False),
    (_ev(speaker="relayed"), True),
    (_ev(scope="this_task"), True),
    *[(_ev(stance=s), True) for s in ("asked", "hedged", "withdrawn", "ironic")],
])
def test_the_model_refuses_relayed_unasserted_or_task_only_words(evidence, refuses):
    reading = second_reading(_cand(evidence=evidence), None, True)
    assert reading.refuses is refuses
    assert reading.disagreement == ("model_reading" if refuses else None)


def test_a_discussion_is_asked_by_nature_only_withdrawn_or_ironic_refuses_it():
    assert not second_reading(_cand("discussion_context", evidence=_ev(stance="asked")), None, False).refuses
    assert not second_reading(_cand("discussion_context", evidence=_ev(stance="hedged", scope="this_task")),
                              None, False).refuses
    assert second_reading(_cand("discussion_context", evidence=_ev(stance="withdrawn")), None, False).refuses


def test_disagreements_name_the_refusing_reader_or_the_standing():
    # the model reads the user's lasting assertion, the gate refuses: the gate's rule
    assert second_reading(_cand(evidence=USER_LASTING), "code_fact", False).disagreement == "code_fact"
    # both refuse: no disagreement
    assert second_reading(_cand(evidence=_ev(stance="hedged")), "hedged", False).disagreement is None
    # both keep; only the model reads it as lasting
    assert second_reading(_cand(evidence=USER_LASTING), None, False).disagreement == "lasting"
    assert second_reading(_cand(evidence=USER_LASTING), None, True).disagreement is None
    # conditional never raises the standing, and is no disagreement with a lasting gate reading
    assert second_reading(_cand(evidence=_ev(scope="conditional")), None, True).disagreement is None
    assert second_reading(_cand(evidence=_ev(scope="conditional")), None, False).disagreement is None


def test_the_job_verdict_keeps_room_for_the_disagreement():
    from collections import Counter

    many = Counter({f"rule_number_{n}": 1 for n in range(9)})
    text = job_verdict(many, Counter({"model_reading": 2}))
    assert len(text) <= 64 and text.endswith("d-model_reading:2")
    assert parse_disagreements(text) == {"model_reading": 2}
    assert "model_reading" not in parse_verdict(text)  # a disagreement is never counted as a refusal
    assert job_verdict(Counter(), Counter()) is None
    assert job_verdict(Counter({"hedged": 1}), Counter()) == "hedged:1"  # unchanged without a disagreement


# --------------------------------------------------------------------------- through the pipeline


def test_the_gate_keeps_a_rule_the_model_reads_as_withdrawn_the_model_refuses_it(pipe, llm_stub):
    """The model may see what the gate cannot (a withdrawal in words no mechanism knows, a later
    turn outside the batch): its reading alone refuses, with its own rule."""
    text = "Always use pnpm for installs."
    t = add_turn(pipe, text, "OK.")
    c = cand(src(t, "user", text), subject="package manager", statement="Use pnpm.")
    # the gate alone keeps it (a reply without evidence: judged as before)
    assert _step(pipe, llm_stub, c).status == "succeeded"
    assert [x["subject"] for x in candidates(pipe, "pending")] == ["package manager"]

    t2 = add_turn(pipe, text, "OK.")
    c2 = cand(src(t2, "user", text), subject="package manager 2", statement="Use pnpm.")
    out = _step(pipe, llm_stub, _with(c2, _ev(stance="withdrawn")))
    assert out.status == "succeeded_no_output"
    assert [x["subject"] for x in candidates(pipe, "pending")] == ["package manager"]
    job = job_of_turn(pipe, t2)
    assert job["no_output_reason"] == "all_rejected" and job["failure_category"] is None
    assert parse_verdict(job["failure_rule"]) == {"model_reading": 1}
    assert parse_disagreements(job["failure_rule"]) == {"model_reading": 1}
    assert refusal_counts(pipe.store.conn()) == {"model_reading": 1}
    assert pipe.status().refusals == {"model_reading": 1}
    # the turn's "not remembered" note names it in words, the disagreement is no second note
    notes = pipe.turn_memory([t2.turn_id])[t2.turn_id]
    assert [(n.outcome, n.reason, n.count) for n in notes] == [("not_remembered", RULE_WORDS["model_reading"], 1)]
    assert dict(read_job_table(pipe.paths.db).refusals) == {"model_reading": 1}  # the Jobs screen's counts


def test_the_model_reads_a_lasting_rule_the_gate_refuses_both_are_recorded(pipe, llm_stub):
    t = add_turn(pipe, "The worker pool has eight threads.", "OK.")
    c = cand(src(t, "user", "The worker pool has eight threads."), subject="worker pool",
             statement="The worker pool has eight threads.")
    assert _step(pipe, llm_stub, _with(c, USER_LASTING)).status == "succeeded_no_output"
    rule = job_of_turn(pipe, t)["failure_rule"]
    assert parse_verdict(rule) == {"code_fact": 1}
    assert parse_disagreements(rule) == {"code_fact": 1}


def test_agreeing_readers_record_no_disagreement(pipe, llm_stub):
    t = add_turn(pipe, "For this answer, keep it short. Always pin exact versions in requirements.txt.", "OK.")
    short = cand(src(t, "user", "For this answer, keep it short."), subject="answer length", statement="Be short.")
    pin = cand(src(t, "user", "Always pin exact versions in requirements.txt."), subject="version pinning",
               statement="Pin exact versions in requirements.txt.")
    assert _step(pipe, llm_stub, _with(short, _ev(scope="this_task")), _with(pin, USER_LASTING)).status == "succeeded"
    [kept] = candidates(pipe, "pending")
    assert (kept["subject"], kept["strength"], kept["recall_mode"]) == ("version pinning", "hard", "always")
    assert job_of_turn(pipe, t)["failure_rule"] == "one_off_scope:1"


def test_audit_lists_the_items_of_a_turn_where_the_readers_disagreed(pipe, llm_stub, capsys):
    calm = add_turn(pipe, "Always pin exact versions in requirements.txt.", "OK.")
    mixed = add_turn(pipe, "Always run ruff before a commit. Always use pnpm for installs.", "OK.")
    llm_stub.default("consolidation", create_all)
    _step(pipe, llm_stub,
          _with(cand(src(calm, "user", "Always pin exact versions in requirements.txt."), subject="version pinning",
                     statement="Pin exact versions."), USER_LASTING),
          _with(cand(src(mixed, "user", "Always run ruff before a commit."), subject="ruff before commit",
                     statement="Run ruff before every commit."), USER_LASTING),
          _with(cand(src(mixed, "user", "Always use pnpm for installs."), subject="package manager",
                     statement="Use pnpm."), _ev(stance="withdrawn")))
    assert pipe.runner.step(force=True).kind == "consolidation"
    items = {i.subject: i.id for i in pipe.list_items()}
    assert set(items) == {"version pinning", "ruff before commit"}
    report = pipe.audit()
    assert [(d.id, d.rules) for d in report.disagreements] == [(items["ruff before commit"], ("model_reading",))]
    doc = report.as_json()
    assert doc["reader_disagreements"] == [{"id": items["ruff before commit"], "rules": ["model_reading"]}]
    assert {"checked", "duplicates", "conflicts", "stale_paths"} <= set(doc)  # the earlier document, unchanged
    # the CLI's text lists it too, by ID and rule names only
    import argparse

    from autopatch_tui.cli.review_cmds import cmd_audit

    capsys.readouterr()
    assert cmd_audit(pipe, argparse.Namespace(json=False, limit=None, after=None)) == 0
    text = capsys.readouterr().out
    assert "1 item(s) the two readers disagreed on" in text
    assert f"readers:   {items['ruff before commit']} — the gate and the model read its source turn differently" \
           " (model_reading)" in text
