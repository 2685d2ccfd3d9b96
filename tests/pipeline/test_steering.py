"""Memory the user steers (issue 31.1, 31.2) through the real pipeline over the stub: `remember`
stores the RAW turn first and answers with a receipt at once; the gate still refuses a code fact;
without a model the turn is kept for later; a refused candidate lands in the private rescue file
(bounded, newest first, never the text of a `secret` refusal), and keeping it goes through
consolidation, marks the item kept and records the rule it was kept over — across a restart."""

from __future__ import annotations

import json
import os
import stat
from typing import Any

import pytest

from autopatch_tui.core.memory import refused_store, steering
from autopatch_tui.core.memory.refused_store import MAX_REFUSED
from tests.support.pipeline_helpers import (
    add_turn,
    cand,
    candidates,
    create_all,
    ext_reply,
    rows,
    src,
)


def _turn_of(payload: dict[str, Any]) -> dict[str, Any]:
    return payload["turns"][-1]


def remember_reply(quote: str, **fields: Any):
    """An extraction reply citing `quote` in the batch's last turn (the remember turn)."""
    def reply(req) -> dict:
        turn = _turn_of(json.loads(req.messages[-1]["content"]))
        return ext_reply(cand(src(turn["turn_id"], "user", quote), **fields))
    return reply


def test_remember_stores_the_raw_turn_first_and_answers_with_a_receipt(make_manager, llm_stub) -> None:
    mgr = make_manager()
    llm_stub.default("consolidation", create_all)
    llm_stub.script("extraction", remember_reply("always use pnpm for installs", kind="project_decision",
                                                 subject="package manager", statement="Use pnpm for installs."))
    receipt = steering.remember(mgr, "From now on always use pnpm for installs.")
    [turn] = rows(mgr, "SELECT * FROM turns WHERE id = ?", (receipt.turn_id,))
    assert turn["user_text"] == "/remember From now on always use pnpm for installs."  # the RAW turn, as typed
    assert json.loads(turn["evidence_keys"]) == ["remember"]  # marked as an explicit request
    sent = json.loads(llm_stub.requests_for("extraction")[0].messages[-1]["content"])
    assert sent["turns"][-1]["evidence_keys"] == ["remember"]
    [item] = receipt.remembered
    assert (item.kind, item.statement) == ("project_decision", "Use pnpm for installs.")
    assert receipt.refused == [] and receipt.waiting is None
    assert mgr.review.review_state([item.id]) == {item.id: "kept"}  # the receipt showed it: kept
    doc = receipt.as_json()
    assert set(doc) == {"turn_id", "remembered", "refused"} and doc["remembered"][0]["id"] == item.id


def test_a_code_fact_is_still_refused_and_can_be_rescued_as_the_users_decision(make_manager, llm_stub) -> None:
    mgr = make_manager()
    llm_stub.default("consolidation", create_all)
    llm_stub.script("extraction", remember_reply("the parser module lives in src/parse.py",
                                                 kind="project_decision", subject="parser module",
                                                 statement="The parser module lives in src/parse.py."))
    receipt = steering.remember(mgr, "the parser module lives in src/parse.py")
    assert receipt.remembered == []
    [refusal] = receipt.refused
    assert refusal.rule == "code_fact" and refusal.words == "a fact about the code, not a decision"
    assert rows(mgr, "SELECT * FROM memory_items") == []

    [entry] = steering.refused(mgr)
    assert (entry.n, entry.rule, entry.turn_id, entry.quote) == (1, "code_fact", receipt.turn_id,
                                                               "the parser module lives in src/parse.py")
    assert entry.as_json()["statement"] == "The parser module lives in src/parse.py."
    st = os.lstat(mgr.paths.refused)
    assert stat.S_IMODE(st.st_mode) == 0o600

    kept = steering.keep_refused(mgr, 1)
    assert kept.statement == "The parser module lives in src/parse.py." and kept.origin == "explicit"
    assert mgr.review.review_state([kept.id]) == {kept.id: "kept"}
    [over] = steering.kept_over(mgr, kept.id)
    assert (over.rule, over.turn_id) == ("code_fact", receipt.turn_id)
    assert steering.refused(mgr) == []  # kept: no longer in the list
    # the item's provenance is still an exact quote of the user's RAW turn
    [c] = [c for c in candidates(mgr) if c["status"] == "accepted"]
    assert c["sources"] == [{"turn_id": receipt.turn_id, "role": "user",
                             "quote": "the parser module lives in src/parse.py"}]

    mgr.close()
    again = make_manager()  # a restart: the item, its mark and its history stay
    assert again.review.review_state([kept.id]) == {kept.id: "kept"}
    assert [k.rule for k in steering.kept_over(again, kept.id)] == ["code_fact"]


def test_without_a_model_the_turn_is_kept_for_later(make_manager) -> None:
    mgr = make_manager(stub=False)
    receipt = steering.remember(mgr, "Always use tabs in Makefiles.")
    assert receipt.remembered == [] and receipt.waiting and "no Memory model" in receipt.waiting
    [job] = rows(mgr, "SELECT status FROM memory_jobs WHERE turn_id = ?", (receipt.turn_id,))
    assert job["status"] == "pending"


def test_refused_candidates_survive_a_restart_newest_first_and_stay_bounded(make_manager, llm_stub) -> None:
    mgr = make_manager()
    first = add_turn(mgr, "maybe we could try ruff sometime")
    llm_stub.script("extraction", ext_reply(cand(src(first, "user", "maybe we could try ruff sometime"),
                                                 subject="linter", statement="Use ruff.")))
    mgr.runner.step(force=True)
    second = add_turn(mgr, "for this answer keep it short")
    llm_stub.script("extraction", ext_reply(cand(src(second, "user", "for this answer keep it short"),
                                                 subject="answers", statement="Keep answers short.")))
    mgr.runner.step(force=True)
    mgr.close()
    again = make_manager()
    entries = steering.refused(again)
    assert [e.turn_id for e in entries] == [second.turn_id, first.turn_id]
    assert [e.n for e in entries] == [1, 2]
    conn = again.store.conn()
    many = [refused_store.for_file("hedged", first.turn_id, {"kind": "user_preference", "statement": f"s{n}",
                                                            "sources": []}, key=f"k{n}", at=float(n))
            for n in range(MAX_REFUSED + 5)]
    refused_store.add(again.paths, conn, many)
    entries = steering.refused(again)
    assert len(entries) == MAX_REFUSED and entries[0].candidate["statement"] == f"s{MAX_REFUSED + 4}"


def test_a_secret_refusal_is_stored_masked_and_never_kept(make_manager) -> None:
    mgr = make_manager()
    t = add_turn(mgr, "my key is sk-live-abcdefghijklmnop1234")
    secret = "sk-live-abcdefghijklmnop1234"
    entry = refused_store.for_file("secret", t.turn_id, {
        "kind": "user_preference", "subject": "key", "statement": f"The key is {secret}", "content": secret,
        "aliases": [secret], "keywords": [], "sources": [{"turn_id": t.turn_id, "role": "user", "quote": secret}]},
        key="k1", at=1.0)
    refused_store.add(mgr.paths, mgr.store.conn(), [entry])
    assert secret not in mgr.paths.refused.read_text(encoding="utf-8")
    with pytest.raises(steering.RescueError):
        steering.keep_refused(mgr, 1)


def test_clear_empties_the_refused_file(make_manager, llm_stub) -> None:
    mgr = make_manager()
    t = add_turn(mgr, "maybe we could try ruff sometime")
    llm_stub.script("extraction", ext_reply(cand(src(t, "user", "maybe we could try ruff sometime"),
                                                 subject="linter", statement="Use ruff.")))
    mgr.runner.step(force=True)
    assert steering.refused(mgr)
    mgr.clear(confirm=True)
    assert steering.refused(mgr) == [] and not mgr.paths.refused.exists()


def test_keep_of_a_number_not_listed_fails_and_changes_nothing(make_manager) -> None:
    mgr = make_manager()
    from autopatch_tui.core.errors import MemoryNotFoundError

    with pytest.raises(MemoryNotFoundError):
        steering.keep_refused(mgr, 1)
    assert rows(mgr, "SELECT * FROM memory_jobs") == []


def test_a_refused_file_that_is_not_ours_gives_a_sentence_and_the_pipeline_goes_on(make_manager, llm_stub,
                                                                                  caplog) -> None:
    from autopatch_tui.core.errors import AutopatchError

    mgr = make_manager()
    mgr.paths.refused.mkdir(parents=True)  # a folder where the file should be: never parsed, never replaced
    t = add_turn(mgr, "maybe we could try ruff sometime SECRET-QUOTE-41")
    llm_stub.script("extraction", ext_reply(cand(src(t, "user", "maybe we could try ruff sometime SECRET-QUOTE-41"),
                                                 subject="linter", statement="Use ruff.")))
    outcome = mgr.runner.step(force=True)
    assert outcome is not None and outcome.status == "succeeded_no_output"  # the job itself is done
    assert "SECRET-QUOTE-41" not in caplog.text
    with pytest.raises(AutopatchError, match="not a regular file"):
        steering.refused(mgr)
    assert mgr.paths.refused.is_dir()


def test_keeping_fails_when_the_turn_no_longer_holds_the_quote(make_manager) -> None:
    mgr = make_manager()
    t = add_turn(mgr, "for this release keep the old API")
    entry = refused_store.for_file("one_off_scope", t.turn_id, {
        "kind": "project_decision", "subject": "api", "statement": "Keep the old API.", "content": "",
        "strength": "soft", "origin": "explicit", "recall_mode": "on_match", "applies_to_paths": [], "aliases": [],
        "keywords": [], "sources": [{"turn_id": t.turn_id, "role": "user", "quote": "words the turn never had"}]},
        key="k1", at=1.0)
    refused_store.add(mgr.paths, mgr.store.conn(), [entry])
    with pytest.raises(steering.RescueError, match="no longer holds"):
        steering.keep_refused(mgr, 1)
    assert rows(mgr, "SELECT * FROM memory_candidates") == [] and len(steering.refused(mgr)) == 1


def test_a_secret_in_a_candidate_refused_for_another_rule_is_masked_and_never_kept(make_manager) -> None:
    mgr = make_manager()
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    t = add_turn(mgr, f"for this deploy use the token {secret}")
    entry = refused_store.for_file("one_off_scope", t.turn_id, {
        "kind": "project_decision", "subject": "deploy", "statement": f"Use the token {secret}.", "content": "",
        "strength": "soft", "origin": "explicit", "recall_mode": "on_match", "applies_to_paths": [],
        "aliases": [secret], "keywords": [], "sources": [{"turn_id": t.turn_id, "role": "user",
                                                          "quote": f"use the token {secret}"}]},
        key="k1", at=1.0)
    refused_store.add(mgr.paths, mgr.store.conn(), [entry])
    assert secret not in mgr.paths.refused.read_text(encoding="utf-8")
    [listed] = steering.refused(mgr)
    assert secret not in json.dumps(listed.as_json())
    with pytest.raises(steering.RescueError, match="secret"):
        steering.keep_refused(mgr, 1)
