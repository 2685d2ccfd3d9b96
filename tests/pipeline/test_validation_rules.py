"""Validation of extraction candidates (spec: Memory 内容必须可追溯且受类型约束; 单纯 apply 不产生记忆).

Every test drives the real HTTP path: turns through the manager, a scripted model reply, one
pipeline step, then the candidate rows in SQLite. Policy rejections drop a candidate without a
repair call; contract violations (provable against the payload) get the single repair call."""

from __future__ import annotations

import pytest

from tests.support.pipeline_helpers import (
    add_turn,
    cand,
    candidates,
    ext_reply,
    extract_step,
    job_of_turn,
    payload_of,
    src,
)

_extract = extract_step


def _prior(mgr, stub, user, assistant, **kw):
    """A turn that is processed (no candidates) so that it becomes the adjacent/evidence turn."""
    h = add_turn(mgr, user, assistant, **kw)
    stub.script("extraction", ext_reply())
    assert mgr.runner.step(force=True).status == "succeeded_no_output"
    return h


def _accepted(mgr):
    return candidates(mgr, "pending")


def _assert_rejected(mgr, stub, turn):
    assert _accepted(mgr) == []
    job = job_of_turn(mgr, turn)
    assert job["status"] == "succeeded_no_output" and job["no_output_reason"] == "all_rejected"
    assert stub.requests_for("extraction_repair") == []


# --------------------------------------------------------------------------- explicit


def test_explicit_preference_with_exact_user_quote_is_accepted(pipe, llm_stub):
    t = add_turn(pipe, "以后所有 Python 代码都用四个空格缩进。", "好的。")
    out = _extract(pipe, llm_stub, cand(src(t, "user", "以后所有 Python 代码都用四个空格缩进"),
                                        strength="hard", recall_mode="always", aliases=["indentation"]))
    assert out.status == "succeeded"
    [c] = _accepted(pipe)
    assert (c["kind"], c["origin"], c["strength"], c["recall_mode"]) == ("user_preference", "explicit", "hard", "always")
    assert c["sources"] == [{"turn_id": t.turn_id, "role": "user", "quote": "以后所有 Python 代码都用四个空格缩进"}]
    assert c["thread_id"] == t.thread_id


@pytest.mark.parametrize("bad_quote", [
    "以后所有 Python 代码都用 4 个空格缩进",  # paraphrase
    "好的",  # exists, but in the assistant text, cited as user
])
def test_a_quote_that_is_not_verbatim_user_text_is_a_violation(pipe, llm_stub, bad_quote):
    t = add_turn(pipe, "以后所有 Python 代码都用四个空格缩进。", "好的。")
    out = _extract(pipe, llm_stub, cand(src(t, "user", bad_quote)), repair=ext_reply())
    assert out.status == "succeeded_no_output"
    [req] = llm_stub.requests_for("extraction_repair")
    assert payload_of(req)["violations"] == [{"rule": "quote_not_found", "where": "candidates[0].sources[0]"}]
    assert _accepted(pipe) == []


def test_unknown_source_turn_is_a_violation(pipe, llm_stub):
    t = add_turn(pipe, "Always use tabs.", "ok")
    out = _extract(pipe, llm_stub, cand(src("turn-not-in-payload", "user", "Always use tabs.")),
                   repair=ext_reply(cand(src(t, "user", "Always use tabs."))))
    assert out.status == "succeeded"
    assert payload_of(llm_stub.requests_for("extraction_repair")[0])["violations"] == [
        {"rule": "source_turn_unknown", "where": "candidates[0].sources[0]"}]


@pytest.mark.parametrize("where", ["adjacent", "evidence"])
def test_old_user_turns_alone_cannot_support_a_non_inferred_candidate(pipe, llm_stub, where):
    if where == "evidence":
        old = _prior(pipe, llm_stub, "Never use var in this project.", "ok", intent="code_audit",
                     evidence_keys=["s:1"])
        _prior(pipe, llm_stub, "unrelated ordinary chat", "sure")
        t = add_turn(pipe, "revise the patch please", "revised", intent="patch_revise")
    else:
        old = _prior(pipe, llm_stub, "Never use var in this project.", "ok")
        t = add_turn(pipe, "thanks", "you're welcome")
    for kind in ("user_preference", "project_decision", "discussion_context"):
        llm_stub.script("extraction", ext_reply(cand(src(old, "user", "Never use var in this project."), kind=kind,
                                                     subject=f"var {kind}")))
    sent = None
    out = pipe.runner.step(force=True)
    sent = payload_of(llm_stub.requests_for("extraction")[-1])
    if where == "evidence":
        assert old.turn_id in [e["turn_id"] for e in sent["recent_repair_evidence"]]
    else:
        assert sent["adjacent_previous_turn"]["turn_id"] == old.turn_id
    assert out.status == "succeeded_no_output"
    _assert_rejected(pipe, llm_stub, t)


def test_non_inferred_candidate_with_current_user_source_may_also_cite_older_turns(pipe, llm_stub):
    old = _prior(pipe, llm_stub, "Should we log in JSON?", "JSON logs are easier to parse.")
    t = add_turn(pipe, "Yes: from now on all logs must be JSON.", "Done.")
    out = _extract(pipe, llm_stub, cand(src(old, "user", "Should we log in JSON?"),
                                        src(t, "user", "from now on all logs must be JSON"),
                                        kind="project_decision", subject="log format"))
    assert out.status == "succeeded" and len(_accepted(pipe)) == 1


# --------------------------------------------------------------------------- adopted proposals


def test_adopted_proposal_needs_the_assistant_proposal_and_the_user_confirmation(pipe, llm_stub):
    prop = _prior(pipe, llm_stub, "How should we version the API?",
                  "I propose we version the API in the URL path, like /v2/users.")
    t = add_turn(pipe, "同意，就按这个方案定下来。", "好的，已记录。")
    out = _extract(pipe, llm_stub, cand(
        src(prop, "assistant", "I propose we version the API in the URL path"),
        src(t, "user", "同意，就按这个方案定下来"),
        kind="project_decision", origin="adopted_proposal", subject="API versioning",
        statement="Version the API in the URL path.", aliases=["api versioning"]))
    assert out.status == "succeeded"
    [c] = _accepted(pipe)
    assert c["origin"] == "adopted_proposal" and {s["role"] for s in c["sources"]} == {"user", "assistant"}


@pytest.mark.parametrize("missing", ["assistant", "user", "proposal_after_confirmation"])
def test_adopted_proposal_missing_either_source_is_rejected(pipe, llm_stub, missing):
    prop = _prior(pipe, llm_stub, "How should we version the API?",
                  "I propose we version the API in the URL path, like /v2/users.")
    t = add_turn(pipe, "同意，就按这个方案定下来。", "好的，已经决定在 URL path 里做版本号。")
    sources = {
        "assistant": [src(t, "user", "同意，就按这个方案定下来")],
        "user": [src(prop, "assistant", "I propose we version the API in the URL path")],
        # the assistant text of the confirming turn is its reply, not the adopted proposal
        "proposal_after_confirmation": [src(t, "assistant", "已经决定在 URL path 里做版本号"),
                                        src(t, "user", "同意，就按这个方案定下来")],
    }[missing]
    out = _extract(pipe, llm_stub, cand(*sources, kind="project_decision", origin="adopted_proposal",
                                        subject="API versioning", statement="Version the API in the URL path.",
                                        aliases=["api versioning"]))
    assert out.status == "succeeded_no_output"
    _assert_rejected(pipe, llm_stub, t)


def test_adopting_a_proposal_presented_with_here_is_fine(pipe, llm_stub):
    prop = _prior(pipe, llm_stub, "How should errors be reported?",
                  "Here is my proposal: every error response uses RFC 7807 problem details.")
    t = add_turn(pipe, "同意，就按这个方案定下来。", "好的。")
    out = _extract(pipe, llm_stub, cand(src(prop, "assistant", "every error response uses RFC 7807 problem details"),
                                        src(t, "user", "同意，就按这个方案定下来"), kind="project_decision",
                                        origin="adopted_proposal", subject="error responses"))
    assert out.status == "succeeded" and len(_accepted(pipe)) == 1


def test_adopting_a_proposal_limited_to_this_patch_stays_local(pipe, llm_stub):
    prop = _prior(pipe, llm_stub, "fix the crash", "For this patch only, I propose we skip the null check.",
                  intent="code_audit", evidence_keys=["s:1"])
    t = add_turn(pipe, "同意，就这么办。", "Done.", intent="patch_revise")
    out = _extract(pipe, llm_stub, cand(src(prop, "assistant", "I propose we skip the null check"),
                                        src(t, "user", "同意，就这么办"), kind="project_decision",
                                        origin="adopted_proposal", subject="null checks"))
    assert out.status == "succeeded_no_output"
    _assert_rejected(pipe, llm_stub, t)


@pytest.mark.parametrize("confirmation", ["apply", "/apply", "Apply the patch", "应用补丁", "ok"])
def test_applying_a_proposed_patch_never_becomes_memory(pipe, llm_stub, confirmation):
    prop = _prior(pipe, llm_stub, "fix the null check", "Here is a patch that always validates inputs first.",
                  intent="code_audit", evidence_keys=["s:1"])
    t = add_turn(pipe, confirmation, "Patch applied; tests pass.", intent="patch_explain")
    out = _extract(pipe, llm_stub,
                   cand(src(prop, "assistant", "always validates inputs first"), src(t, "user", confirmation),
                        kind="project_decision", origin="adopted_proposal", subject="input validation"),
                   cand(src(t, "user", confirmation), kind="user_preference", subject="apply patches"),
                   cand(src(t, "user", confirmation), kind="project_decision", subject="verification",
                        statement="Tests pass after the patch."))
    assert out.status == "succeeded_no_output"
    _assert_rejected(pipe, llm_stub, t)


@pytest.mark.parametrize("kind", ["user_preference", "project_decision"])
def test_assistant_only_claims_never_become_preferences_or_decisions(pipe, llm_stub, kind):
    t = add_turn(pipe, "what do you think about the cache?",
                 "We have decided to always use Redis for caching from now on.")
    out = _extract(pipe, llm_stub, cand(src(t, "assistant", "We have decided to always use Redis for caching"),
                                        kind=kind, subject="cache backend", strength="hard"))
    assert out.status == "succeeded_no_output"
    _assert_rejected(pipe, llm_stub, t)


# --------------------------------------------------------------------------- local corrections

LOCAL = [
    ("这里不要用 var，改成 let。", "不要用 var，改成 let", "patch_revise"),
    ("本次补丁先跳过空值检查。", "先跳过空值检查", "patch_revise"),
    ("Just for this patch, keep the old logger.", "keep the old logger", "patch_revise"),
    ("Use let here instead of var.", "Use let", "code_audit"),
    ("这次不要改测试文件。", "不要改测试文件", "general_chat"),
]


@pytest.mark.parametrize("user,quote,intent", LOCAL)
def test_local_corrections_never_become_durable_items(pipe, llm_stub, user, quote, intent):
    prop = _prior(pipe, llm_stub, "review this", "Proposed patch: replace var with let.", intent="code_audit",
                  evidence_keys=["s:1"])
    t = add_turn(pipe, user, "Updated.", intent=intent, evidence_keys=["s:2"])
    common = {"statement": "Prefer let over var.", "aliases": ["let"]}
    out = _extract(pipe, llm_stub,
                   cand(src(t, "user", quote), kind="user_preference", subject="local pref", **common),
                   cand(src(t, "user", quote), kind="project_decision", subject="local decision", **common),
                   cand(src(prop, "assistant", "replace var with let"), src(t, "user", quote),
                        kind="project_decision", origin="adopted_proposal", subject="adopted local", **common),
                   cand(src(t, "user", quote), kind="discussion_context", subject="local discussion", **common))
    # a one-off instruction is no open point either: the discussion is refused too (discussion_not_open)
    assert out.status == "succeeded_no_output"
    _assert_rejected(pipe, llm_stub, t)


def test_local_clause_beside_a_lasting_one_only_the_lasting_one_counts(pipe, llm_stub):
    t = add_turn(pipe, "这里先用 let。以后所有新代码都不要用 var！", "好的。", intent="patch_revise")
    out = _extract(pipe, llm_stub,
                   cand(src(t, "user", "以后所有新代码都不要用 var"), subject="var keyword", strength="hard",
                        recall_mode="always"),
                   cand(src(t, "user", "先用 let"), subject="let here"))
    assert out.status == "succeeded"
    [c] = _accepted(pipe)
    assert c["subject"] == "var keyword" and c["strength"] == "hard" and c["recall_mode"] == "always"


# --------------------------------------------------------------------------- inferred repetition

REPEAT = "Don't use var; use let for block scope."


def _three_findings(pipe, *, keys=("scan-1:F1", "scan-1:F2", "scan-2:F7"), paths=("src/a.js", "src/b.js", "src/c.js"),
                    texts=(REPEAT, REPEAT, REPEAT)):
    return [add_turn(pipe, texts[i], "Patched.", intent="patch_revise", scope_paths=[paths[i]],
                     evidence_keys=[keys[i]] if keys[i] else []) for i in range(3)]


def _inferred(turns, *, quotes=None, kind="user_preference", strength="soft", recall_mode="on_match"):
    quotes = quotes or ["use let"] * len(turns)
    return cand(*(src(t, "user", q) for t, q in zip(turns, quotes, strict=True)), kind=kind,
                origin="inferred_repetition", subject="let over var", statement="Prefer let over var.",
                content="Use let instead of var for block scope.", strength=strength, recall_mode=recall_mode,
                keywords=["let", "var"])


def test_inferred_repetition_across_three_findings_and_two_files_is_soft_on_match(pipe, llm_stub):
    turns = _three_findings(pipe)
    out = _extract(pipe, llm_stub, _inferred(turns, strength="hard", recall_mode="always"))
    assert out.status == "succeeded"
    [c] = _accepted(pipe)
    assert (c["origin"], c["strength"], c["recall_mode"]) == ("inferred_repetition", "soft", "on_match")
    assert sorted(s["turn_id"] for s in c["sources"]) == sorted(t.turn_id for t in turns)


def test_inferred_repetition_may_use_the_adjacent_turn_and_repair_evidence(pipe, llm_stub):
    t1, t2 = (_prior(pipe, llm_stub, REPEAT, "Patched.", intent="patch_revise", scope_paths=[p],
                     evidence_keys=[k]) for p, k in (("src/a.js", "scan-1:F1"), ("src/b.js", "scan-1:F2")))
    t3 = add_turn(pipe, REPEAT, "Patched.", intent="patch_revise", scope_paths=["src/b.js"],
                  evidence_keys=["scan-1:F3"])
    out = _extract(pipe, llm_stub, _inferred([t1, t2, t3]))
    sent = payload_of(llm_stub.requests_for("extraction")[-1])
    assert [e["turn_id"] for e in sent["recent_repair_evidence"]] == [t1.turn_id]
    assert sent["adjacent_previous_turn"]["turn_id"] == t2.turn_id
    assert out.status == "succeeded" and len(_accepted(pipe)) == 1


@pytest.mark.parametrize("case", [
    "two_turns", "one_path", "shared_key", "keys_without_finding", "no_keys", "quote_off_meaning",
    "not_a_preference",
])
def test_inferred_repetition_without_the_evidence_is_rejected(pipe, llm_stub, case):
    kw = {}
    if case == "one_path":
        kw["paths"] = ("src/a.js",) * 3
    elif case == "shared_key":
        kw["keys"] = ("scan-1:F1",) * 3
    elif case == "keys_without_finding":
        kw["keys"] = ("F1", "F2", "F3")
    elif case == "no_keys":
        kw["keys"] = ("scan-1:F1", "scan-1:F2", "")
    elif case == "quote_off_meaning":
        kw["texts"] = (REPEAT, REPEAT, "Thanks, looks good to me.")
    turns = _three_findings(pipe, **kw)
    if case == "two_turns":
        c = _inferred([turns[0], turns[1], turns[1]], quotes=["use let", "use let", "Don't use var"])
    elif case == "quote_off_meaning":
        c = _inferred(turns, quotes=["use let", "use let", "Thanks, looks good to me."])
    elif case == "not_a_preference":
        c = _inferred(turns, kind="project_decision")
    else:
        c = _inferred(turns)
    out = _extract(pipe, llm_stub, c)
    assert out.status == "succeeded_no_output"
    _assert_rejected(pipe, llm_stub, turns[-1])


def test_one_to_one_binding_of_sources_to_evidence_keys(pipe, llm_stub):
    # turn 1 holds two keys, turns 2 and 3 share one of them: a one-to-one binding still exists
    t = [add_turn(pipe, REPEAT, "Patched.", intent="patch_revise", scope_paths=[p], evidence_keys=k)
         for p, k in (("src/a.js", ["s:1", "s:2"]), ("src/b.js", ["s:1"]), ("src/c.js", ["s:2", "s:3"]))]
    assert _extract(pipe, llm_stub, _inferred(t)).status == "succeeded"
    # three turns, but only two distinct keys among them: no binding
    u = [add_turn(pipe, REPEAT, "Patched.", intent="patch_revise", scope_paths=[p], evidence_keys=k)
         for p, k in (("src/a.js", ["s:1", "s:2"]), ("src/b.js", ["s:1"]), ("src/c.js", ["s:2"]))]
    assert _extract(pipe, llm_stub, _inferred(u)).status == "succeeded_no_output"
    # distinct keys, but only one of them names a finding (`<scan>:<finding>`): no binding either
    v = [add_turn(pipe, REPEAT, "Patched.", intent="patch_revise", scope_paths=[p], evidence_keys=k)
         for p, k in (("src/a.js", ["s:1", "x"]), ("src/b.js", ["s:1", "y"]), ("src/c.js", ["s:1", "s:"]))]
    assert _extract(pipe, llm_stub, _inferred(v)).status == "succeeded_no_output"


# --------------------------------------------------------------------------- discussions


def test_undecided_user_proposal_becomes_a_discussion(pipe, llm_stub):
    t = add_turn(pipe, "我在考虑要不要把配置从 YAML 换成 TOML，还没想好，下次继续讨论。",
                 "TOML is simpler; I recommend switching now.")
    out = _extract(pipe, llm_stub, cand(src(t, "user", "要不要把配置从 YAML 换成 TOML，还没想好"),
                                        kind="discussion_context", subject="config format",
                                        statement="Open question: move config from YAML to TOML?",
                                        strength="hard", recall_mode="always"))
    assert out.status == "succeeded"
    [c] = _accepted(pipe)
    assert (c["kind"], c["strength"], c["recall_mode"]) == ("discussion_context", "soft", "on_match")
    assert pipe.runner.step(force=True).status == "succeeded"  # consolidation
    item = pipe.list_items(kind="discussion_context")[0]
    assert pipe.show_item(item.id).thread_id == t.thread_id


@pytest.mark.parametrize("fact", ["`load_config()` returns a dict", "parse_args(argv) is defined in cli.py",
                                  "see config.py:42", "第 12 行抛出异常"])
def test_discussion_with_code_facts_is_rejected(pipe, llm_stub, fact):
    t = add_turn(pipe, "Should we change how config is loaded? Let's keep discussing.", "Sure.")
    base = {"subject": "config loading", "statement": "Open question about config loading.", "content": "Undecided."}
    cands = []
    for field in ("subject", "statement", "content"):  # the filter covers all three together
        fields = dict(base)
        fields[field] = fact
        cands.append(cand(src(t, "user", "Should we change how config is loaded?"), kind="discussion_context",
                          **fields))
    out = _extract(pipe, llm_stub, *cands)
    assert out.status == "succeeded_no_output"
    _assert_rejected(pipe, llm_stub, t)


def test_discussion_citing_the_assistant_is_rejected(pipe, llm_stub):
    t = add_turn(pipe, "Should we switch to TOML? Not sure yet.", "We have decided: TOML it is.")
    out = _extract(pipe, llm_stub, cand(src(t, "user", "Should we switch to TOML?"),
                                        src(t, "assistant", "We have decided: TOML it is."),
                                        kind="discussion_context", subject="config format",
                                        statement="TOML was chosen."))
    assert out.status == "succeeded_no_output"
    _assert_rejected(pipe, llm_stub, t)


def test_assistant_decision_on_an_open_question_is_not_a_decision(pipe, llm_stub):
    t = add_turn(pipe, "Should we switch to TOML? Not sure yet.", "We have decided: TOML it is.")
    out = _extract(pipe, llm_stub,
                   cand(src(t, "assistant", "We have decided: TOML it is."), kind="project_decision",
                        subject="config format", statement="Use TOML."),
                   cand(src(t, "user", "Should we switch to TOML?"), kind="discussion_context",
                        subject="config format question", statement="Open question: switch to TOML?"))
    assert out.status == "succeeded"
    assert [c["kind"] for c in _accepted(pipe)] == ["discussion_context"]


# --------------------------------------------------------------------------- strength and recall


@pytest.mark.parametrize("user,quote", [
    ("Use tabs in Makefiles.", "Use tabs in Makefiles."),
    ("I like tabs.", "I like tabs."),
    ("From now on, always use tabs.", "always use tabs"),
    ("以后都用 tab 缩进。", "都用 tab 缩进"),
    ("Never commit generated files.", "Never commit generated files."),
])
def test_a_kept_explicit_statement_is_hard_and_always_never_lowered(pipe, llm_stub, user, quote):
    """Issue 29: no "kept but lowered": a standing rule stated without a limit lasts, whatever the
    model proposed (soft/on_match here); a limited one is refused, not stored soft."""
    t = add_turn(pipe, user, "ok")
    # the statement restates the user's words (the semantic gate refuses a candidate off their meaning)
    out = _extract(pipe, llm_stub, cand(src(t, "user", quote), strength="soft", recall_mode="on_match",
                                        subject="indentation", statement=quote))
    assert out.status == "succeeded"
    [c] = _accepted(pipe)
    assert (c["strength"], c["recall_mode"]) == ("hard", "always")


def test_a_limited_statement_is_refused_not_lowered(pipe, llm_stub):
    t = add_turn(pipe, "Use tabs in this Makefile for now.", "ok")
    out = _extract(pipe, llm_stub, cand(src(t, "user", "Use tabs in this Makefile for now."), strength="hard",
                                        recall_mode="always", subject="indentation", statement="Use tabs."))
    assert out.status == "succeeded_no_output"
    assert _accepted(pipe) == []


# --------------------------------------------------------------------------- Chinese decisions

ZH = "旧 memory schema 不兼容，直接删除。"


@pytest.mark.parametrize("aliases", [[], ["memory schema"], ["旧 schema"]])
def test_chinese_decision_without_english_recall_alias_gets_one_repair(pipe, llm_stub, aliases):
    t = add_turn(pipe, ZH, "好的，删除旧 schema。")
    decision = {"kind": "project_decision", "subject": "旧 memory schema", "statement": "旧 memory schema 不兼容，直接删除",
                    "strength": "hard"}
    out = _extract(pipe, llm_stub, cand(src(t, "user", "旧 memory schema 不兼容，直接删除"), aliases=aliases, **decision),
                   repair=ext_reply(cand(src(t, "user", "旧 memory schema 不兼容，直接删除"),
                                         aliases=["backward compatibility", "delete legacy schema"], **decision)))
    assert out.status == "succeeded"
    [req] = llm_stub.requests_for("extraction_repair")
    violations = payload_of(req)["violations"]
    assert violations == [{"rule": "cjk_decision_needs_english_alias", "where": "candidates[0].aliases"}]
    [c] = _accepted(pipe)
    assert c["aliases"] == ["backward compatibility", "delete legacy schema"]
    assert c["strength"] == "hard"  # an explicit decision without a limit: kept, so hard + always

    # consolidation keeps the recall aliases even when its operation drops them
    llm_stub.script("consolidation", lambda req: {"operations": [{
        "operation": "create", "candidate_ids": [payload_of(req)["candidates"][0]["candidate_id"]], "target_id": None,
        "kind": "project_decision", "subject": "旧 memory schema", "statement": "旧 memory schema 不兼容，直接删除",
        "content": "", "strength": "soft", "origin": "explicit", "recall_mode": "on_match",
        "applies_to_paths": [], "aliases": [], "keywords": []}]})
    assert pipe.runner.step(force=True).status == "succeeded"
    [item] = pipe.list_items()
    detail = pipe.show_item(item.id)
    assert {"backward compatibility", "delete legacy schema"} <= set(detail.aliases)
    terms = {r[0] for r in pipe.store.conn().execute(
        "SELECT d.term FROM recall_postings p JOIN recall_dict d ON d.id = p.term_id"
        " JOIN memory_items m ON m.row_id = p.item_row_id WHERE m.logical_id = ? AND p.field = 3", (item.id,))}
    assert {"backward", "compatibility"} <= terms
    from autopatch_tui.core.recall.cli_search import search_memory

    assert [r["id"] for r in search_memory(pipe, "backward compatibility")] == [item.id]


def test_chinese_decision_with_a_proper_english_alias_needs_no_repair(pipe, llm_stub):
    t = add_turn(pipe, ZH, "好的。")
    out = _extract(pipe, llm_stub, cand(src(t, "user", "旧 memory schema 不兼容，直接删除"), kind="project_decision",
                                        subject="旧 memory schema", statement="旧 memory schema 不兼容，直接删除",
                                        aliases=["backward compatibility"]))
    assert out.status == "succeeded" and llm_stub.requests_for("extraction_repair") == []


def test_a_repair_that_does_not_repair_the_aliases_stores_nothing(pipe, llm_stub):
    """The repaired reply goes through every rule again: the same object-only aliases are refused
    (counted in the job's verdict), never tolerated; the rest of the reply commits."""
    t = add_turn(pipe, ZH + " Always run the tests first.", "好的。")
    c = cand(src(t, "user", "旧 memory schema 不兼容，直接删除"), kind="project_decision", subject="旧 memory schema",
             statement="旧 memory schema 不兼容，直接删除", aliases=["memory schema"])
    other = cand(src(t, "user", "Always run the tests first."), subject="tests first", statement="Run tests first.")
    out = _extract(pipe, llm_stub, c, other, repair=ext_reply(c, other))
    assert out.status == "succeeded" and [x["subject"] for x in _accepted(pipe)] == ["tests first"]
    assert len(llm_stub.requests_for("extraction_repair")) == 1
    assert job_of_turn(pipe, t)["failure_rule"] == "cjk_decision_needs_english_alias:1"


def test_a_repair_that_names_the_trade_off_is_kept(pipe, llm_stub):
    t = add_turn(pipe, ZH, "好的。")
    c = cand(src(t, "user", "旧 memory schema 不兼容，直接删除"), kind="project_decision", subject="旧 memory schema",
             statement="旧 memory schema 不兼容，直接删除", aliases=["old"])
    fixed = cand(src(t, "user", "旧 memory schema 不兼容，直接删除"), kind="project_decision", subject="旧 memory schema",
                 statement="旧 memory schema 不兼容，直接删除", aliases=["backward compatibility"])
    out = _extract(pipe, llm_stub, c, repair=ext_reply(fixed))
    assert out.status == "succeeded" and len(_accepted(pipe)) == 1


def test_a_quote_with_nul_characters_is_a_contract_violation_not_damage(pipe, llm_stub):
    """RAW text may contain NUL (pasted binary); SQLite's length() stops at NUL, so such a quote
    would break the provenance CHECK at commit. It is refused as a contract violation instead of
    degrading the whole store."""
    t = add_turn(pipe, "pasted:\x00 always use tabs", "ok")
    out = _extract(pipe, llm_stub, cand(src(t, "user", "\x00 always use tabs")),
                   repair=ext_reply(cand(src(t, "user", "always use tabs"))))
    assert out.status == "succeeded" and pipe.healthy
    assert payload_of(llm_stub.requests_for("extraction_repair")[0])["violations"] == [
        {"rule": "schema", "where": "reply"}]
    assert [c["sources"][0]["quote"] for c in _accepted(pipe)] == ["always use tabs"]


@pytest.mark.parametrize("aliases", [[], ["旧结构"]])
def test_a_repair_still_without_any_english_alias_keeps_the_decision_and_notes_it(pipe, llm_stub, aliases):
    """Issue 29, round two: aliases *missing* after the one repair (none, or only Chinese ones) keep the
    user's explicit decision — never refused, never a refusal in the job's verdict — while wrong
    aliases (above) are still refused."""
    t = add_turn(pipe, ZH, "好的。")
    c = cand(src(t, "user", "旧 memory schema 不兼容，直接删除"), kind="project_decision", subject="旧 memory schema",
             statement="旧 memory schema 不兼容，直接删除", aliases=aliases)
    out = _extract(pipe, llm_stub, c, repair=ext_reply(c))
    assert out.status == "succeeded" and [x["subject"] for x in _accepted(pipe)] == ["旧 memory schema"]
    assert len(llm_stub.requests_for("extraction_repair")) == 1  # the repair is still asked for, once
    assert job_of_turn(pipe, t)["failure_rule"] is None


def test_the_missing_alias_note_is_counted_not_refused():
    from autopatch_tui.core.pipeline.contracts import CandidateOut
    from autopatch_tui.core.pipeline.extraction_rules import ALIAS_MISSING_NOTE, _aliases_missing

    base = {"kind": "project_decision", "subject": "部署脚本", "statement": "部署脚本统一放到 deploy 目录", "content": "",
            "strength": "hard", "origin": "explicit", "recall_mode": "always", "applies_to_paths": [], "keywords": [],
            "sources": [{"turn_id": "t1", "role": "user", "quote": "部署脚本统一放到 deploy 目录"}]}
    assert ALIAS_MISSING_NOTE == "english_alias_missing"
    assert _aliases_missing(CandidateOut(**base, aliases=[]))
    assert _aliases_missing(CandidateOut(**base, aliases=["部署脚本"]))
    assert not _aliases_missing(CandidateOut(**base, aliases=["deploy"]))  # present (if wrong): not missing


def test_an_alias_that_adds_a_number_the_user_never_said_is_refused(pipe, llm_stub):
    t = add_turn(pipe, "合并前必须有人 review。 Always run the tests first.", "好的。")
    c = cand(src(t, "user", "合并前必须有人 review"), kind="project_decision", subject="合并前 review",
             statement="合并前必须有人 review", aliases=["require two approvals before merging"])
    other = cand(src(t, "user", "Always run the tests first."), subject="tests first", statement="Run tests first.")
    out = _extract(pipe, llm_stub, c, other)
    assert out.status == "succeeded" and [x["subject"] for x in _accepted(pipe)] == ["tests first"]
    assert job_of_turn(pipe, t)["failure_rule"] == "alias_adds:1"
    assert llm_stub.requests_for("extraction_repair") == []  # a refusal, not a contract violation


@pytest.mark.parametrize("aliases, sources, adds", [
    (["use redis with a 1h ttl"], ["缓存统一用 Redis"], True),           # a duration
    (["require two approvals"], ["合并前必须有人 review"], True),          # a number word
    (["expire sessions daily"], ["会话统一放 Redis"], True),              # a unit
    (["retry with max_retries"], ["外部请求统一加重试"], True),            # a code-like token
    (["use s3 for uploads"], ["上传文件统一放对象存储"], True),             # an identifier with a digit
    (["require two reviewers"], ["每个 PR 都要两个人 review"], False),     # said as a Chinese numeral
    (["run a full backup daily"], ["每天做一次全量备份"], False),          # said as a Chinese unit
    (["paginate public API responses"], ["对外接口统一返回分页结构"], False),  # an acronym translates 接口
    (["expire cache after 30 minutes"], ["缓存 30 分钟过期"], False),       # the digits are the user's
])
def test_alias_adds(aliases, sources, adds):
    from autopatch_tui.core.pipeline.alias_facts import alias_adds

    assert alias_adds(aliases, sources) is adds
