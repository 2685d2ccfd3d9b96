"""Findings feed Memory as before: the rule IDs of every analyzer — Ruff's codes (`S324`, `B006`,
`BLE001`) and Semgrep's dotted IDs (`java.weak-md5`) — are check IDs for recall, so a preference
keyed to one is found by a repair request about that rule and by a query that names it, and not
by one about a look-alike."""

from __future__ import annotations

import pytest

from autopatch_tui.core.recall.query import RecallQuery, policy_for
from autopatch_tui.core.recall.session import RecallSession
from autopatch_tui.core.recall.terms import is_check_id
from autopatch_tui.core.repair.analyzers.semgrep import rule_ids
from tests.support.recall_seed import active_thread, seed_item


@pytest.mark.parametrize("token", ["S324", "B006", "BLE001", "F821", "java.weak-md5", "js.eval-dynamic-code",
                                   "go.tls-insecure-skip-verify", "JAVA.Weak-MD5",
                                   "java.lang.security.audit.crypto.use-of-md5.use-of-md5"])
def test_analyzer_rule_ids_are_check_ids(token: str) -> None:
    assert is_check_id(token)


@pytest.mark.parametrize("token", ["java.util", "go.mod", "config.yaml", "src/app.js", "app.min-js", "json.dump",
                                   "user_config.py", "weak-md5", "java-weak-md5"])
def test_dotted_names_and_paths_are_not(token: str) -> None:
    assert not is_check_id(token)


def test_every_rule_of_our_pack_is_a_check_id() -> None:
    assert all(is_check_id(rule) for rule in rule_ids())


def repair_session(mgr, check_id: str, path: str, text: str = "") -> RecallSession:
    query = RecallQuery("code_audit", text, (path,), finding_path=path, check_id=check_id, finding_message="m")
    return RecallSession(mgr.store.conn, query, policy_for("code_audit", active_thread(mgr.store.conn())))


def test_a_preference_keyed_to_a_rule_id_is_recalled_for_findings_of_that_rule(manager) -> None:
    conn = manager.store.conn()
    md5 = seed_item(conn, kind="user_preference", subject="Hash choice", statement="Use SHA-256 via our helper.",
                    keywords=["java.weak-md5"], applies_to_paths=["src"])
    s324 = seed_item(conn, kind="user_preference", subject="Python hashing", statement="hashlib.sha256 only.",
                     keywords=["S324"])
    java = repair_session(manager, "java.weak-md5", "src/main/App.java")
    assert [(m.row["logical_id"], m.match_type) for m in java.memory_map().relevant] == [(md5.logical_id,
                                                                                          "check_id")]
    python = repair_session(manager, "S324", "tools/h.py")
    assert [m.row["logical_id"] for m in python.memory_map().relevant] == [s324.logical_id]
    # a different rule of the same family or a look-alike name finds neither
    assert repair_session(manager, "S311", "tools/h.py").memory_map().empty
    assert repair_session(manager, "js.weak-md5", "src/app.js").memory_map().empty
    # the user's own words naming the rule find it too
    named = RecallSession(manager.store.conn, RecallQuery("general_chat", "why does java.weak-md5 fire here?", ()),
                          policy_for("general_chat", active_thread(conn)))
    assert md5.logical_id in named.memory_map().ids
