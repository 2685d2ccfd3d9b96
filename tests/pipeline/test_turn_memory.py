"""What a turn's Memory work did (issue 21.3), read back through the real pipeline (extraction and
consolidation over the stub): nothing until the work has landed; then "remembered" with the item,
"updated" with the statement it replaced, "not remembered" with the gate's rule in words (the
turn's own extraction verdict) or the consolidation's rejection. The words come from one table
with a readable fallback for a rule it does not know."""

from __future__ import annotations

import re
from pathlib import Path

from autopatch_tui.core.memory.refusal_words import RULE_WORDS, rule_words
from autopatch_tui.core.memory.refusals import parse_verdict
from tests.support.pipeline_helpers import (
    add_turn,
    jobs,
    cand,
    consolidate_with,
    ext_reply,
    op,
    op_from_candidate,
    seed_item,
    src,
)


def test_remembered_then_updated_with_the_old_statement(make_manager, llm_stub) -> None:
    mgr = make_manager()
    t1 = add_turn(mgr, "From now on always use type hints in every module.", "Noted.")
    assert mgr.turn_memory([t1.turn_id]) == {}  # extraction still pending: nothing has landed
    llm_stub.script("extraction", ext_reply(cand(src(t1, "user", "always use type hints in every module"),
                                                 subject="type hints", statement="Always use type hints.",
                                                 strength="hard")))
    mgr.runner.step(force=True)
    assert mgr.turn_memory([t1.turn_id]) == {}  # a candidate waits for consolidation
    llm_stub.script("consolidation", consolidate_with(lambda p: [op_from_candidate("create", p["candidates"][0])]))
    mgr.runner.step(force=True)
    [note] = mgr.turn_memory([t1.turn_id])[t1.turn_id]
    assert (note.outcome, note.kind, note.statement) == ("remembered", "user_preference", "Always use type hints.")
    item = note.item_id

    t2 = add_turn(mgr, "Actually, from now on type hints only in public functions.", "OK.")
    llm_stub.script("extraction", ext_reply(cand(src(t2, "user", "type hints only in public functions"),
                                                 subject="type hints", statement="Type hints in public functions.")))
    mgr.runner.step(force=True)
    llm_stub.script("consolidation", consolidate_with(lambda p: [
        op_from_candidate("revise", p["candidates"][0], item)]))
    mgr.runner.step(force=True)
    notes = mgr.turn_memory([t1.turn_id, t2.turn_id])
    [updated] = notes[t2.turn_id]
    assert (updated.outcome, updated.statement, updated.old_statement, updated.item_id) == (
        "updated", "Type hints in public functions.", "Always use type hints.", item)
    assert notes[t1.turn_id][0].outcome == "remembered"  # what happened then, not what the item is now


def test_a_refused_candidate_says_why_in_words_and_a_rejected_one_says_so(make_manager, llm_stub) -> None:
    mgr = make_manager()
    seed_item(mgr, subject="indentation", statement="Use four spaces.")
    t = add_turn(mgr, "For this answer keep it short. Going forward, use tabs in Makefiles.", "ok")
    llm_stub.script("extraction", ext_reply(
        cand(src(t, "user", "For this answer keep it short"), subject="answer length",
             statement="Keep answers short."),
        cand(src(t, "user", "use tabs in Makefiles"), subject="makefile tabs", statement="Use tabs in Makefiles.")))
    mgr.runner.step(force=True)
    llm_stub.script("consolidation", consolidate_with(lambda p: [op("reject", [p["candidates"][0]["candidate_id"]])]))
    mgr.runner.step(force=True)
    notes = mgr.turn_memory([t.turn_id])[t.turn_id]
    [verdict] = [j["failure_rule"] for j in jobs(mgr, "extraction") if j["turn_id"] == t.turn_id]
    [(rule, count)] = parse_verdict(verdict).items()  # the gate's reading of the one-off clause
    assert [(n.outcome, n.reason, n.count) for n in notes] == [
        ("not_remembered", "set aside when merged into Memory", 1),
        ("not_remembered", RULE_WORDS[rule], count),  # the turn's own verdict, in words
    ]


def test_a_turn_with_nothing_to_remember_has_no_note(make_manager, llm_stub) -> None:
    mgr = make_manager()
    t = add_turn(mgr, "How does the parser work?", "It tokenizes first.")
    llm_stub.script("extraction", ext_reply())
    mgr.runner.step(force=True)
    assert mgr.turn_memory([t.turn_id]) == {t.turn_id: []}


def test_every_documented_rule_has_words_and_an_unknown_rule_still_reads() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "memory.md").read_text(encoding="utf-8")
    table = doc[doc.index("Every rule an extraction refusal can carry"):]
    table = table[:table.index("\n\n", table.index("| rule |"))]
    documented = set(re.findall(r"`([a-z0-9_]+)`", table))
    assert documented and documented <= set(RULE_WORDS), documented - set(RULE_WORDS)
    for rule, words in RULE_WORDS.items():
        assert words and "_" not in words, rule
    assert rule_words("brand_new_rule") == "refused (brand new rule)"
