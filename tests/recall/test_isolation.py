"""Ordinary vs repair recall (spec "ordinary 与 repair 上下文隔离"): one project store, request-local
policies. Repair requests see only path-applicable preferences and decisions — enforced inside the
queries, so guessed or forced IDs are refused too."""

from __future__ import annotations

import dataclasses

import pytest

from autopatch_tui.core import constants as C
from autopatch_tui.core.errors import UsageError
from autopatch_tui.core.recall.query import RecallQuery, policy_for
from autopatch_tui.core.recall.session import RecallLimitError, RecallSession
from tests.support.recall_seed import active_thread, revise_item, seed_item

REPAIR = ("code_audit", "zero_finding_review", "patch_explain", "patch_revise")


@pytest.fixture
def store(manager):
    """A thread's discussion, an old thread's discussion and project items, all about retries."""
    conn = manager.store.conn()
    old_thread = active_thread(conn)
    old_talk = seed_item(conn, kind="discussion_context", subject="retry budget debate", strength="soft",
                         statement="Still weighing retry budgets per client.", keywords=["retry"])
    manager.new_thread(timeout=0)
    thread = active_thread(conn)
    items = {
        "talk": seed_item(conn, kind="discussion_context", subject="retry jitter question", strength="soft",
                          statement="Open question: jitter or not for retries.", keywords=["retry"]),
        "old_talk": old_talk,
        "pref_here": seed_item(conn, kind="user_preference", subject="retry helper", keywords=["retry"],
                               statement="Use the shared retry helper.", applies_to_paths=["src/net"]),
        "decision_all": seed_item(conn, subject="retry limit", keywords=["retry"],
                                  statement="Retries stop after five attempts."),
        "decision_glob": seed_item(conn, subject="java retry style", keywords=["retry"],
                                   statement="Java code retries via the annotation.",
                                   applies_to_paths=["**/*.java"]),
        "pref_elsewhere": seed_item(conn, kind="user_preference", subject="docs retry wording", keywords=["retry"],
                                    statement="Docs say 'try again'.", applies_to_paths=["docs"]),
    }
    return manager, thread, old_thread, {k: v.logical_id for k, v in items.items()}


def repair_session(mgr, intent: str, path: str = "src/net/Client.java") -> RecallSession:
    query = RecallQuery(intent, "", finding_path=path, check_id="java:S2142", finding_message="retry loop swallows")
    return RecallSession(mgr.store.conn, query, policy_for(intent, None))


def test_policies_are_immutable_and_typed_per_intent() -> None:
    for intent in C.ORDINARY_INTENTS:
        p = policy_for(intent, "thr-1")
        assert p.include_history and p.discussion_thread == "thr-1" and set(p.kinds) == set(C.ITEM_KINDS)
        assert not p.require_path_applicability and not p.repair
    for intent in REPAIR:
        p = policy_for(intent, "thr-1")  # a repair policy drops the thread even when given one
        assert p.repair and not p.include_history and p.thread_id is None and p.discussion_thread is None
        assert p.kinds == C.PROJECT_KINDS and p.require_path_applicability
        with pytest.raises(dataclasses.FrozenInstanceError):
            p.kinds = C.ITEM_KINDS  # type: ignore[misc]
    with pytest.raises(UsageError):
        policy_for("made_up", None)


@pytest.mark.parametrize("intent", REPAIR)
def test_repair_map_search_and_read_return_only_path_applicable_preferences_and_decisions(store, intent) -> None:
    mgr, _, _, ids = store
    s = repair_session(mgr, intent)
    allowed = {ids["pref_here"], ids["decision_all"], ids["decision_glob"]}
    assert set(s.memory_map().ids) == allowed
    assert {r["id"] for r in s.search("retry")} == allowed
    for key in ("pref_here", "decision_all", "decision_glob"):
        assert s.read(ids[key])["id"] == ids[key]
    # guessed IDs: a discussion of the current thread, an old one, a non-applicable item
    for key in ("talk", "old_talk", "pref_elsewhere"):
        with pytest.raises(RecallLimitError):
            s.read(ids[key])
    # even if an ID were forced into the allowlist, the query itself refuses it
    s.readable.update({ids["talk"], ids["old_talk"], ids["pref_elsewhere"]})
    for key in ("talk", "old_talk", "pref_elsewhere"):
        with pytest.raises(RecallLimitError, match="not available"):
            s.read(ids[key])


def test_repair_read_rechecks_applicability_after_a_revision(store) -> None:
    mgr, _, _, ids = store
    s = repair_session(mgr, "patch_revise")
    assert ids["pref_here"] in {r["id"] for r in s.search("retry helper")}
    revise_item(mgr.store.conn(), ids["pref_here"], kind="user_preference", subject="retry helper",
                keywords=["retry"], statement="Use the shared retry helper (docs only).", applies_to_paths=["docs"])
    with pytest.raises(RecallLimitError, match="not available"):
        s.read(ids["pref_here"])


def test_repair_without_a_scope_sees_only_project_wide_items(store) -> None:
    mgr, _, _, ids = store
    s = RecallSession(mgr.store.conn, RecallQuery("code_audit", "retry"), policy_for("code_audit", None))
    assert set(s.memory_map().ids) == {ids["decision_all"]}


def test_ordinary_profile_sees_its_thread_discussion_and_project_items_only(store) -> None:
    mgr, thread, old_thread, ids = store
    s = RecallSession(mgr.store.conn, RecallQuery("general_chat", "how do we retry"),
                      policy_for("general_chat", thread))
    found = {r["id"] for r in s.search("retry")}
    assert ids["talk"] in found and ids["old_talk"] not in found
    assert {ids["pref_here"], ids["decision_all"], ids["decision_glob"], ids["pref_elsewhere"]} <= found
    assert s.read(ids["talk"])["kind"] == "discussion_context"
    s.readable.add(ids["old_talk"])
    with pytest.raises(RecallLimitError, match="not available"):
        s.read(ids["old_talk"])
    # a request still bound to the old thread sees the old discussion and not the new one
    old = RecallSession(mgr.store.conn, RecallQuery("code_explain", "retry"), policy_for("code_explain", old_thread))
    old_found = {r["id"] for r in old.search("retry budget")}
    assert ids["old_talk"] in old_found and ids["talk"] not in old_found


def test_memory_search_cli_applies_the_intent_policy_and_path(store, invoke_cli) -> None:
    mgr, _, _, ids = store
    mgr.close()
    rc, out, _ = invoke_cli("memory", "search", "retry", json=True)
    assert rc == 0 and {r["id"] for r in out["results"]} >= {ids["talk"], ids["pref_elsewhere"]}
    assert ids["old_talk"] not in {r["id"] for r in out["results"]}
    rc, out, _ = invoke_cli("memory", "search", "retry", "--intent", "code_audit", "--path", "src/net/A.java",
                            json=True)
    assert rc == 0
    assert {r["id"] for r in out["results"]} == {ids["pref_here"], ids["decision_all"], ids["decision_glob"]}
    assert all(set(r) == {"id", "kind", "subject", "statement", "match_type"} for r in out["results"])
