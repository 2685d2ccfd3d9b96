"""The semantic gate (issue 9; spec: Memory 内容必须可追溯且受类型约束): every plausible-but-wrong
candidate of the issue is refused with a named rule, through the real HTTP path (turns through the
manager, a scripted model reply, one pipeline step). The refusal verdict is recorded on the
extraction job (`failure_rule` without a failure category: the job diagnostics' rule column).

Each of these tests fails on the validator before the gate: it stored the candidate."""

from __future__ import annotations

import pytest

from tests.support.pipeline_helpers import (
    add_turn,
    cand,
    candidates,
    ext_reply,
    extract_step,
    job_of_turn,
    jobs,
    op,
    payload_of,
    seed_consolidation,
    src,
)


_extract = extract_step


def _refused(mgr, stub, turn, verdict):
    """Nothing accepted, no repair call, and the job's safe verdict names the rule(s)."""
    assert candidates(mgr, "pending") == []
    job = job_of_turn(mgr, turn)
    assert (job["status"], job["no_output_reason"]) == ("succeeded_no_output", "all_rejected")
    assert (job["failure_category"], job["failure_rule"]) == (None, verdict)
    assert stub.requests_for("extraction_repair") == []


# --------------------------------------------------------------------------- code facts


@pytest.mark.parametrize("user,subject,statement", [
    ("pom.xml 里现在配置的是 Java 17。", "Java 17 配置", "项目使用 Java 17"),
    ("build.gradle currently targets Java 21.", "Java 21 target", "The build targets Java 21."),
])
def test_a_code_fact_is_never_a_decision(pipe, llm_stub, user, subject, statement):
    t = add_turn(pipe, user, "好的。")
    quote = user.rstrip("。.")
    out = _extract(pipe, llm_stub, cand(src(t, "user", quote), kind="project_decision", subject=subject,
                                        statement=statement, aliases=["java version build target"]),
                   cand(src(t, "user", quote), kind="user_preference", subject=subject, statement=statement))
    assert out.status == "succeeded_no_output"
    _refused(pipe, llm_stub, t, "code_fact:2")


def test_the_same_words_as_an_instruction_are_kept(pipe, llm_stub):
    t = add_turn(pipe, "From now on the build targets Java 21.", "OK.")
    out = _extract(pipe, llm_stub, cand(src(t, "user", "From now on the build targets Java 21."),
                                        kind="project_decision", subject="Java version",
                                        statement="The build targets Java 21."))
    assert out.status == "succeeded" and len(candidates(pipe, "pending")) == 1
    assert job_of_turn(pipe, t)["failure_rule"] is None


def test_a_file_name_is_no_subject(pipe, llm_stub):
    t = add_turn(pipe, "Keep pom.xml tidy and sorted.", "OK.")
    _extract(pipe, llm_stub, cand(src(t, "user", "Keep pom.xml tidy and sorted."), subject="pom.xml",
                                  statement="Keep pom.xml tidy and sorted."))
    _refused(pipe, llm_stub, t, "code_fact:1")


def test_a_discussion_stating_what_the_code_currently_is_is_refused(pipe, llm_stub):
    t = add_turn(pipe, "Should we change how config is loaded? Let's keep discussing it.", "Sure.")
    _extract(pipe, llm_stub, cand(src(t, "user", "Should we change how config is loaded?"), kind="discussion_context",
                                  subject="config loading",
                                  statement="Currently config is loaded from YAML by the loader; switch formats?"))
    _refused(pipe, llm_stub, t, "code_fact:1")


# --------------------------------------------------------------------------- one-off scope


def test_a_one_off_instruction_is_not_a_preference(pipe, llm_stub):
    t = add_turn(pipe, "For this answer, keep it short.", "Sure.")
    _extract(pipe, llm_stub, cand(src(t, "user", "For this answer, keep it short."), subject="Short answers",
                                  statement="Keep answers short."),
             cand(src(t, "user", "keep it short"), kind="project_decision", subject="answer length",
                  statement="Keep it short."))
    _refused(pipe, llm_stub, t, "one_off_scope:2")


# --------------------------------------------------------------------------- undecided


def test_an_open_question_is_no_decision_but_may_be_a_discussion(pipe, llm_stub):
    user = "We have not decided whether to use a vector database."
    t = add_turn(pipe, user, "OK.")
    out = _extract(pipe, llm_stub,
                   cand(src(t, "user", user), kind="project_decision", subject="vector database",
                        statement="Use a vector database."),
                   cand(src(t, "user", user), kind="discussion_context", subject="vector database question",
                        statement="Open question: whether to use a vector database."))
    assert out.status == "succeeded"
    assert [c["kind"] for c in candidates(pipe, "pending")] == ["discussion_context"]
    assert job_of_turn(pipe, t)["failure_rule"] == "undecided:1"


# --------------------------------------------------------------------------- assistant-only conclusions


def test_a_decision_the_assistant_drew_from_the_users_question_is_refused(pipe, llm_stub):
    t = add_turn(pipe, "Should we switch to TOML? Not sure yet.", "We have decided: TOML it is.")
    _extract(pipe, llm_stub, cand(src(t, "user", "Should we switch to TOML?"), kind="project_decision",
                                  subject="config format", statement="The project uses TOML for configuration."))
    _refused(pipe, llm_stub, t, "assistant_conclusion:1")


def test_a_bare_continue_does_not_carry_a_decision(pipe, llm_stub):
    add_turn(pipe, "缩进用什么好？", "我建议项目统一使用 tabs 缩进。")
    llm_stub.script("extraction", ext_reply())
    assert pipe.runner.step(force=True).status == "succeeded_no_output"
    t = add_turn(pipe, "继续吧", "好的。")
    _extract(pipe, llm_stub, cand(src(t, "user", "继续吧"), kind="project_decision", subject="缩进",
                                  statement="项目统一使用 tabs 缩进", aliases=["tab indentation policy"]))
    _refused(pipe, llm_stub, t, "acknowledgement_only:1")


def test_the_same_continue_may_adopt_the_quoted_proposal(pipe, llm_stub):
    prop = add_turn(pipe, "缩进用什么好？", "我建议项目统一使用 tabs 缩进。")
    llm_stub.script("extraction", ext_reply())
    assert pipe.runner.step(force=True).status == "succeeded_no_output"
    t = add_turn(pipe, "继续吧", "好的。")
    out = _extract(pipe, llm_stub, cand(src(prop, "assistant", "我建议项目统一使用 tabs 缩进"), src(t, "user", "继续吧"),
                                        kind="project_decision", origin="adopted_proposal", subject="缩进",
                                        statement="项目统一使用 tabs 缩进", aliases=["tab indentation policy"]))
    assert out.status == "succeeded" and len(candidates(pipe, "pending")) == 1


def test_a_discussion_carrying_the_assistants_verdict_is_refused(pipe, llm_stub):
    t = add_turn(pipe, "Should we switch to TOML? Not sure yet.", "We have decided: TOML it is.")
    _extract(pipe, llm_stub, cand(src(t, "user", "Should we switch to TOML?"), kind="discussion_context",
                                  subject="config format", statement="TOML was chosen by the assistant; it is decided."))
    _refused(pipe, llm_stub, t, "assistant_conclusion:1")


# --------------------------------------------------------------------------- origins


def test_an_adopted_discussion_without_an_assistant_source_is_refused(pipe, llm_stub):
    t = add_turn(pipe, "Should we add a plugin system? Let's come back to it.", "Maybe.")
    _extract(pipe, llm_stub, cand(src(t, "user", "Should we add a plugin system?"), kind="discussion_context",
                                  origin="adopted_proposal", subject="plugin system",
                                  statement="Open question: add a plugin system?"))
    _refused(pipe, llm_stub, t, "discussion_origin:1")


@pytest.mark.parametrize("fields,rule", [
    ({"origin": "adopted_proposal"}, "origin_escalation"),
    ({"subject": "???"}, "empty_identity"),
    ({"statement": "\u200b"}, "empty_identity"),
])
def test_consolidation_cannot_raise_an_origin_or_empty_an_identity(make_manager, llm_stub, fields, rule):
    mgr = make_manager()
    _, [cid] = seed_consolidation(mgr, [cand(src("turn-x", "user", "all logs must be JSON"), kind="project_decision",
                                             subject="log format", statement="All logs must be JSON.")])
    good = {"kind": "project_decision", "subject": "log format", "statement": "All logs must be JSON.",
            "content": "", "strength": "soft", "origin": "explicit", "recall_mode": "on_match",
            "applies_to_paths": [], "aliases": [], "keywords": []}
    llm_stub.script("consolidation", {"operations": [op("create", [cid], None, **{**good, **fields})]})
    llm_stub.script("consolidation_repair", {"operations": [op("create", [cid], None, **good)]})
    assert mgr.runner.step(force=True).status == "succeeded"
    [req] = llm_stub.requests_for("consolidation_repair")
    assert payload_of(req)["violations"] == [{"rule": rule, "where": "validate"}]
    [item] = mgr.list_items()
    assert (item.origin, item.subject) == ("explicit", "log format")
    [job] = jobs(mgr, "consolidation")  # the refused primary reply stays as the job's verdict
    assert (job["status"], job["failure_category"], job["failure_rule"]) == ("succeeded", None, f"{rule}:1")


def test_consolidation_adopted_origin_needs_both_quotes(make_manager, llm_stub):
    mgr = make_manager()
    # an adopted candidate without the assistant quote (e.g. carried over by a store merge)
    _, [cid] = seed_consolidation(mgr, [cand(src("turn-x", "user", "同意"), kind="project_decision",
                                             origin="adopted_proposal", subject="API versioning",
                                             statement="Version the API in the URL path.")])
    bad = {"operations": [op("create", [cid], None, kind="project_decision", subject="API versioning",
                             statement="Version the API in the URL path.", content="", strength="soft",
                             origin="adopted_proposal", recall_mode="on_match", applies_to_paths=[], aliases=[],
                             keywords=[])]}
    llm_stub.script("consolidation", bad)
    llm_stub.script("consolidation_repair", bad)
    assert mgr.runner.step(force=True).status == "failed"
    [job] = jobs(mgr, "consolidation")
    assert job["failure_rule"] == "adopted_needs_assistant_and_user"
    assert mgr.list_items() == []


def test_consolidation_cannot_write_a_verdict_into_a_discussion(make_manager, llm_stub):
    mgr = make_manager()
    _, [cid] = seed_consolidation(mgr, [cand(src("turn-x", "user", "Should we adopt GraphQL?"),
                                             kind="discussion_context", subject="GraphQL",
                                             statement="Open question: adopt GraphQL?")])
    bad = {"operations": [op("create", [cid], None, kind="discussion_context", subject="GraphQL",
                             statement="GraphQL was rejected; decided to stay on REST.", content="",
                             strength="soft", origin="explicit", recall_mode="on_match", applies_to_paths=[],
                             aliases=[], keywords=[])]}
    llm_stub.script("consolidation", bad)
    llm_stub.script("consolidation_repair", bad)
    assert mgr.runner.step(force=True).status == "failed"
    assert jobs(mgr, "consolidation")[0]["failure_rule"] == "assistant_conclusion"


# --------------------------------------------------------------------------- empty identity and empty proof


@pytest.mark.parametrize("subject", ["\u200b", "???", "---", "   "])
def test_a_subject_that_normalizes_to_nothing_is_refused(pipe, llm_stub, subject):
    t = add_turn(pipe, "Always use tabs.", "OK.")
    _extract(pipe, llm_stub, cand(src(t, "user", "Always use tabs."), subject=subject, statement="Always use tabs."))
    _refused(pipe, llm_stub, t, "empty_identity:1")
    assert pipe.list_items() == []


@pytest.mark.parametrize("quote", ["   ", "!!!"])
def test_a_quote_without_a_word_is_no_proof(pipe, llm_stub, quote):
    t = add_turn(pipe, "Always use tabs!!!   Really.", "OK.")
    _extract(pipe, llm_stub, cand(src(t, "user", quote), subject="indentation", statement="Always use tabs."))
    _refused(pipe, llm_stub, t, "quote_without_word:1")


# --------------------------------------------------------------------------- Chinese decisions' aliases

ZH = "旧 memory schema 不兼容，直接删除。"


@pytest.mark.parametrize("aliases", [["old"], ["legacy"], ["old legacy"]])
def test_a_chinese_decision_needs_english_aliases_for_object_and_action(pipe, llm_stub, aliases):
    t = add_turn(pipe, ZH, "好的。")
    decision = {"kind": "project_decision", "subject": "旧 memory schema", "statement": "旧 memory schema 不兼容，直接删除"}
    quote = src(t, "user", "旧 memory schema 不兼容，直接删除")
    out = _extract(pipe, llm_stub, cand(quote, aliases=aliases, **decision),
                   repair=ext_reply(cand(quote, aliases=["backward compatibility"], **decision)))
    assert out.status == "succeeded"
    [req] = llm_stub.requests_for("extraction_repair")
    assert payload_of(req)["violations"] == [{"rule": "cjk_decision_needs_english_alias", "where": "candidates[0].aliases"}]
    assert pipe.runner.step(force=True).status == "succeeded"  # consolidation
    from autopatch_tui.core.recall.cli_search import search_memory

    assert [r["subject"] for r in search_memory(pipe, "backward compatibility")] == ["旧 memory schema"]


@pytest.mark.parametrize("aliases", [["backward compatibility"], ["delete legacy schema"], ["drop"]])
def test_aliases_naming_the_action_pass_without_a_repair(pipe, llm_stub, aliases):
    t = add_turn(pipe, ZH, "好的。")
    out = _extract(pipe, llm_stub, cand(src(t, "user", "旧 memory schema 不兼容，直接删除"), kind="project_decision",
                                        subject="旧 memory schema", statement="旧 memory schema 不兼容，直接删除",
                                        aliases=aliases))
    assert out.status == "succeeded" and llm_stub.requests_for("extraction_repair") == []


# --------------------------------------------------------------------------- inferred repetition

REPEAT = "Don't use var; use let for block scope."


def test_a_later_review_keeping_the_original_is_a_counter_example(pipe, llm_stub):
    turns = [add_turn(pipe, REPEAT, "Patched.", intent="patch_revise", scope_paths=[p], evidence_keys=[k])
             for p, k in (("src/a.js", "scan-1:F1"), ("src/b.js", "scan-1:F2"), ("src/c.js", "scan-2:F7"))]
    last = add_turn(pipe, "Keep var in src/d.js, it is intentional.", "Kept.", intent="patch_revise",
                    scope_paths=["src/d.js"], evidence_keys=["scan-2:F9"])
    inferred = cand(*(src(t, "user", "use let") for t in turns), origin="inferred_repetition", subject="let over var",
                    statement="Prefer let over var.", keywords=["let", "var"])
    out = _extract(pipe, llm_stub, inferred)
    assert out.status == "succeeded_no_output" and candidates(pipe, "pending") == []
    first_job = job_of_turn(pipe, turns[0])
    assert first_job["failure_rule"] == "inferred_counter_example:1"
    assert job_of_turn(pipe, last)["failure_rule"] is None  # the verdict sits on the batch's first job


def test_the_verdict_lists_every_rule_most_frequent_first(pipe, llm_stub):
    t = add_turn(pipe, "For this answer, keep it short. Should we use tabs?", "OK.")
    _extract(pipe, llm_stub,
             cand(src(t, "user", "For this answer, keep it short."), subject="short answers", statement="Keep it short."),
             cand(src(t, "user", "keep it short"), subject="answer length", statement="Keep answers short."),
             cand(src(t, "user", "Should we use tabs?"), subject="tabs", statement="Use tabs."))
    assert job_of_turn(pipe, t)["failure_rule"] == "one_off_scope:2.undecided:1"


def test_the_verdict_is_in_the_job_diagnostics_and_holds_no_content(pipe, llm_stub):
    from autopatch_tui.core.memory.job_table import read_job_table
    from autopatch_tui.core.memory.status import failure_from_row

    t = add_turn(pipe, "For this answer, keep it short.", "Sure.")
    _extract(pipe, llm_stub, cand(src(t, "user", "For this answer, keep it short."), subject="Short answers",
                                  statement="Keep answers short."))
    [row] = [r for r in read_job_table(pipe.paths.db).rows if r.kind == "extraction"]
    assert (row.status, row.category, row.rule, row.no_output_reason) == (
        "succeeded_no_output", None, "one_off_scope:1", "all_rejected")
    # a refusal verdict is no failure: `memory status` lists no failure for it
    job = job_of_turn(pipe, t)
    assert failure_from_row(job) is None and pipe.status().failures == []
