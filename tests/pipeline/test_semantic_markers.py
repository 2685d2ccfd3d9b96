"""The semantic gate's clause classifiers (markers.py, semantic_gate.py) on their own: for every rule
the forms it must refuse and the legitimate look-alikes it must keep (a careless marker match gets
these wrong). Pure functions, no store, no HTTP."""

from __future__ import annotations

import pytest

from autopatch_tui.core.pipeline import markers as M
from autopatch_tui.core.pipeline.clauses import CONTEXT, segments
from autopatch_tui.core.pipeline.reading import read_quote
from autopatch_tui.core.pipeline.semantic_gate import (
    aliases_cover_decision,
    classify_user_clause,
    empty_identity,
)

REFUSED = [  # (clause, rule)
    ("pom.xml 里现在配置的是 Java 17。", "code_fact"),
    ("build.gradle currently targets Java 21.", "code_fact"),
    ("The timeout is set to 30 seconds in settings.py.", "code_fact"),
    ("我们的 package.json 现在用的是 React 18。", "code_fact"),
    ("We have not decided whether to use a vector database.", "undecided"),
    ("还没决定要不要上 Redis", "undecided"),
    ("是否要把日志改成 JSON 格式？", "undecided"),
    ("Should we drop Python 3.8 support?", "undecided"),
    ("What indentation does this project use?", "user_question"),
    ("项目里的缩进用什么？", "user_question"),
    ("Could you fix the bug?", "user_question"),
    ("Is it ok?", "user_question"),
    ("以后都用 tabs 吗", "user_question"),
    ("用 tabs 好么", "user_question"),
    ("Tell me how config loading works.", "request_for_info"),
    ("解释一下这个缓存是怎么工作的。", "request_for_info"),
    ("Maybe we should use Poetry for packaging.", "hedged"),
    ("Maybe always use tabs", "hedged"),
    ("也许可以试试 Ruff 做 lint。", "hedged"),
    ("我觉得可以用 uv 试试。", "hedged"),
    ("We could try uv for packaging.", "hedged"),
    ("I guess tabs are fine.", "hedged"),
    ("继续吧", "acknowledgement_only"),
    ("Sounds good.", "acknowledgement_only"),
    ("好的，谢谢", "acknowledgement_only"),
    ("同意，就按这个方案定下来。", "acknowledgement_only"),
    ("OK, let's do that!", "acknowledgement_only"),
]
KEPT = [
    "From now on the build targets Java 21.",
    "以后统一用 Java 21 编译。",
    "Tests should target the public API.",
    "Always use tabs, OK?",
    "以后都用四个空格缩进，好吗？",
    "Could you please always reply in English from now on?",
    "Always check whether the input is None before using it.",
    "始终检查输入是否为空。",
    "Never use eval because it might be unsafe.",
    "尽可能用类型注解。",
    "This kind of error must be logged.",
    "Do not use eval.",
    "Don't use var.",
    "When in doubt, use tabs.",
    "We'll go with PostgreSQL for the main database.",
    "Please use snake_case for all Python function names.",
    "不要在代码里写死密钥。",
    "src/api/ 下面的代码不要用 print，用 logging。",
    "OK, and always use tabs.",
    "好的，以后都用 tabs。",
    "I like tabs.",
    "I think we should always pin dependencies.",
    "用 ruff 替代 flake8，以后都这样。",
    "Try to keep functions under 50 lines.",
    "就用 tabs 嘛。",
    "以后就这么写。",
]


@pytest.mark.parametrize("clause,rule", REFUSED)
def test_clauses_that_carry_no_intent_are_named(clause, rule):
    assert classify_user_clause(clause) == rule


@pytest.mark.parametrize("clause", KEPT)
def test_legitimate_forms_assert_an_intent(clause):
    assert classify_user_clause(clause) is None


@pytest.mark.parametrize("subject,empty", [
    ("\u200b", True), ("???", True), ("---", True), ("   ", True), ("。。。", True), ("\u200bx", False),
    ("缩进", False), ("C#", False),
])
def test_identity_that_normalizes_to_nothing(subject, empty):
    assert empty_identity(subject, "Use tabs.") is empty
    assert empty_identity("tabs", subject) is empty


@pytest.mark.parametrize("quote,word", [("   ", False), ("!!!", False), ("\u200b", False), ("——", False),
                                        ("a", True), ("缩", True), ("3", True)])
def test_a_quote_needs_a_word(quote, word):
    assert M.has_word(quote) is word


@pytest.mark.parametrize("aliases,ok", [
    (["backward compatibility"], True), (["delete legacy schema"], True), (["drop"], True),
    (["old"], False), (["legacy"], False), (["old legacy"], False), (["memory schema"], False), (["旧 schema"], False),
    ([], False),
])
def test_chinese_decision_aliases_cover_object_and_action(aliases, ok):
    assert aliases_cover_decision("旧 memory schema", "旧 memory schema 不兼容，直接删除", "", aliases) is ok


@pytest.mark.parametrize("aliases,ok", [
    # L. words sharing a stem are one concept: aliases that name the object alone and then restate it
    # as an "action" ("caching" beside "cache layer") cover no action; a distinct action does
    (["caching", "cache layer", "cache"], False), (["cache layer", "caching"], False), (["cache", "caching layer"], False),
    (["logging", "log format"], False), (["validations", "validate"], False), (["naming", "names"], False),
    (["cache api responses", "response cache"], True), (["use redis for caching"], True),
    (["plain text logs", "log format"], True), (["store responses in redis", "caching"], True),
])
def test_aliases_restating_the_object_are_no_action(aliases, ok):
    assert aliases_cover_decision("缓存层", "接口响应统一加缓存层", "", aliases) is ok


@pytest.mark.parametrize("a,b,same", [
    ("caching", "cache", True), ("cached", "caches", True), ("validation", "validate", True), ("naming", "names", True),
    ("logging", "logs", True), ("pagination", "paginated", True), ("deployment", "deploy", True),
    ("cache", "layer", False), ("user", "use", False), ("test", "text", False),
])
def test_alias_concepts_by_stem(a, b, same):
    assert (M.concept(a) == M.concept(b)) is same


@pytest.mark.parametrize("text,claims", [
    ("TOML was chosen by the assistant; it is decided.", True), ("已决定换成 TOML", True),
    ("The assistant recommends Redis.", True), ("Open question, not decided yet.", False),
    ("Undecided: vector database.", False), ("还没决定要不要上 Redis", False), ("是否引入 Redis 尚未决定", False),
])
def test_conclusion_claims(text, claims):
    assert M.claims_conclusion(text) is claims


@pytest.mark.parametrize("text,keeps", [
    ("Keep var in src/d.js, it is intentional.", True), ("这里保留 var，不要改。", True), ("Revert that change.", True),
    ("Don't use var; use let for block scope.", False), ("Use let instead.", False),
])
def test_counter_example_keeps_the_original(text, keeps):
    assert M.keeps_original(text) is keeps


def test_a_huge_clause_is_cut_around_the_quote():
    """A pasted log without punctuation is one clause: it is read CONTEXT characters on each side of
    the quote, so a marker far away does not govern the quote and reading stays cheap."""
    text = "这次 " + "x" * 100_000 + " always use tabs " + "y" * 100_000
    [seg] = segments(text, "always use tabs")
    assert len(seg.raw) <= len("always use tabs") + 2 * CONTEXT
    assert not read_quote(text, "always use tabs").local
    assert read_quote("这次 always use tabs", "always use tabs").refusal() == "one_off_scope"
