"""Auditing semantic items: list, show, forget ("用户可审计和管理 Memory")."""

from __future__ import annotations

from pathlib import Path

import pytest

from autopatch_tui.core.errors import MemoryNotFoundError, UsageError
from autopatch_tui.core.manager import MemoryManager
from tests.support.fixtures import db_path, query, scalar
from tests.support.memory_factory import add_item, add_turns

T0 = 1_800_000_000.0


@pytest.fixture
def seeded(manager: MemoryManager):
    """Three active items of different kinds and ages, one superseded chain, one already forgotten."""
    conn = manager.store.conn()
    turns = add_turns(manager, 3)
    t1, t2, t3 = (h.turn_id for h in turns)
    items = {
        "old_pref": add_item(conn, kind="user_preference", subject="Error messages",
                             statement="Write error messages in English.", strength="hard",
                             sources=[(t1, "user", "always write error messages in English")],
                             aliases=["error text"], keywords=["english"], now=T0 + 1),
        "decision": add_item(conn, kind="project_decision", subject="Legacy schema",
                             statement="Old memory schemas are not migrated; they are deleted.",
                             sources=[(t2, "assistant", "we could drop the old schema"),
                                      (t2, "user", "yes, delete the legacy schema")],
                             origin="adopted_proposal", aliases=["backward compatibility"],
                             applies_to_paths=["autopatch_tui/core/memory/"], now=T0 + 3),
        "discussion": add_item(conn, kind="discussion_context", subject="Retry policy",
                               statement="Still weighing one or two retries.", strength="soft",
                               sources=[(t3, "user", "should we retry twice?")], now=T0 + 2),
        "forgotten": add_item(conn, kind="project_decision", subject="Tabs", statement="Use tabs.",
                              status="forgotten", sources=[(t1, "user", "use tabs")], now=T0 + 4),
    }
    chain = add_item(conn, kind="project_decision", subject="Line length", statement="Lines up to 100.",
                     sources=[(t1, "user", "keep lines under 100")], now=T0 + 5)
    rev2 = add_item(conn, kind="project_decision", subject="Line length", statement="Lines up to 120.",
                    sources=[(t3, "user", "actually 120 is fine")], logical_id=chain.logical_id, revision=2,
                    now=T0 + 6)
    items["chain_r1"], items["chain"] = chain, rev2
    return items, turns


def test_list_shows_active_items_newest_first(manager: MemoryManager, seeded) -> None:
    items, _ = seeded
    listed = manager.list_items()
    assert [i.id for i in listed] == [items["chain"].logical_id, items["decision"].logical_id,
                                      items["discussion"].logical_id, items["old_pref"].logical_id]
    # a revised item is listed once, with its current revision
    chain = next(i for i in listed if i.id == items["chain"].logical_id)
    assert chain.statement == "Lines up to 120."
    decision = next(i for i in listed if i.id == items["decision"].logical_id)
    assert decision.model_dump() == {
        "id": items["decision"].logical_id, "kind": "project_decision", "subject": "Legacy schema",
        "statement": "Old memory schemas are not migrated; they are deleted.", "strength": "hard",
        "origin": "adopted_proposal", "recall_mode": "on_match",
        "applies_to_paths": ["autopatch_tui/core/memory/"], "updated_at": decision.updated_at,
    }
    assert decision.updated_at.endswith("Z") and decision.updated_at.startswith("2027-01-15T08:00:03")


def test_list_kind_filter(manager: MemoryManager, seeded) -> None:
    items, _ = seeded
    assert [i.id for i in manager.list_items(kind="user_preference")] == [items["old_pref"].logical_id]
    assert [i.id for i in manager.list_items(kind="discussion_context")] == [items["discussion"].logical_id]
    assert [i.id for i in manager.list_items(kind="project_decision")] == [items["chain"].logical_id,
                                                                            items["decision"].logical_id]
    with pytest.raises(UsageError):
        manager.list_items(kind="repair_procedure")


def test_show_returns_any_status_with_revisions_and_sources(manager: MemoryManager, seeded) -> None:
    items, turns = seeded
    detail = manager.show_item(items["chain"].logical_id)
    assert detail.status == "active" and detail.revision == 2
    assert detail.statement == "Lines up to 120."
    assert [(r.revision, r.status, r.statement) for r in detail.revisions] == [
        (1, "superseded", "Lines up to 100."), (2, "active", "Lines up to 120.")]
    # provenance of the current revision
    assert [(s.turn_id, s.role, s.quote) for s in detail.sources] == [(turns[2].turn_id, "user",
                                                                      "actually 120 is fine")]

    decision = manager.show_item(items["decision"].logical_id)
    assert [(s.role, s.quote) for s in decision.sources] == [("assistant", "we could drop the old schema"),
                                                              ("user", "yes, delete the legacy schema")]
    assert decision.aliases == ["backward compatibility"] and decision.thread_id is None
    assert decision.content == decision.statement

    discussion = manager.show_item(items["discussion"].logical_id)
    assert discussion.thread_id == turns[0].thread_id

    forgotten = manager.show_item(items["forgotten"].logical_id)
    assert forgotten.status == "forgotten"
    assert set(forgotten.model_dump()) == {
        "id", "kind", "subject", "statement", "strength", "origin", "recall_mode", "applies_to_paths",
        "updated_at", "status", "revision", "content", "aliases", "keywords", "thread_id", "revisions", "sources"}


def test_show_resolves_unique_prefixes_and_rejects_ambiguous_ones(manager: MemoryManager) -> None:
    conn = manager.store.conn()
    h = add_turns(manager, 1)[0]
    a = add_item(conn, subject="A one", statement="a1", logical_id="mem-AAAA1111",
                 sources=[(h.turn_id, "user", "a1")])
    add_item(conn, subject="A two", statement="a2", logical_id="mem-AAAA2222", sources=[(h.turn_id, "user", "a2")])
    b = add_item(conn, subject="B", statement="b", logical_id="mem-B_9", sources=[(h.turn_id, "user", "b")])

    assert manager.show_item("mem-AAAA1").id == a.logical_id
    assert manager.show_item("  mem-AAAA1111 ").id == a.logical_id
    assert manager.show_item("mem-B").id == b.logical_id
    with pytest.raises(UsageError):
        manager.show_item("mem-AAAA")
    with pytest.raises(UsageError):
        manager.show_item("mem-")
    with pytest.raises(UsageError):
        manager.show_item("   ")
    with pytest.raises(MemoryNotFoundError):
        manager.show_item("mem-ZZZZ")
    # LIKE wildcards in the typed ID are literal characters, not patterns
    with pytest.raises(MemoryNotFoundError):
        manager.show_item("mem-%")
    with pytest.raises(MemoryNotFoundError):
        manager.show_item("mem-_AAA")


def test_forget_removes_the_item_everywhere_but_keeps_raw_turns(manager: MemoryManager, repo: Path,
                                                                seeded) -> None:
    items, turns = seeded
    db = db_path(repo)
    target = items["decision"]
    turns_before = [tuple(r) for r in query(db, "SELECT * FROM turns ORDER BY sequence")]
    other_terms = scalar(db, "SELECT count(*) FROM recall_postings WHERE item_row_id != ?", (target.row_id,))
    assert scalar(db, "SELECT count(*) FROM recall_postings WHERE item_row_id = ?", (target.row_id,)) > 0
    data_version = scalar(db, "SELECT data_version FROM memory_meta")

    assert manager.forget(target.logical_id[:-2]) == target.logical_id  # a unique prefix works here too

    assert target.logical_id not in [i.id for i in manager.list_items()]
    assert len(manager.list_items()) == 3
    detail = manager.show_item(target.logical_id)
    assert detail.status == "forgotten"
    assert [r.status for r in detail.revisions] == ["forgotten"]
    assert detail.sources  # provenance stays auditable
    assert scalar(db, "SELECT status FROM memory_candidates WHERE id = ?", (target.candidate_id,)) == "suppressed"
    assert scalar(db, "SELECT count(*) FROM recall_postings WHERE item_row_id = ?", (target.row_id,)) == 0
    assert scalar(db, "SELECT count(*) FROM recall_item_postings WHERE item_row_id = ?", (target.row_id,)) == 0
    assert scalar(db, "SELECT count(*) FROM recall_postings WHERE item_row_id != ?", (target.row_id,)) == other_terms
    assert [tuple(r) for r in query(db, "SELECT * FROM turns ORDER BY sequence")] == turns_before
    assert scalar(db, "SELECT data_version FROM memory_meta") > data_version
    assert manager.status().active_items == 3
    # other items' candidates are untouched
    assert scalar(db, "SELECT count(*) FROM memory_candidates WHERE status = 'suppressed'") == 1

    with pytest.raises(MemoryNotFoundError):
        manager.forget(target.logical_id)
    with pytest.raises(MemoryNotFoundError):
        manager.forget("mem-does-not-exist")


def test_forget_a_revised_item_suppresses_every_revisions_candidates(manager: MemoryManager, repo: Path,
                                                                     seeded) -> None:
    items, _ = seeded
    db = db_path(repo)
    manager.forget(items["chain"].logical_id)
    statuses = {r["id"]: r["status"] for r in query(db, "SELECT id, status FROM memory_candidates")}
    assert statuses[items["chain"].candidate_id] == "suppressed"
    assert statuses[items["chain_r1"].candidate_id] == "suppressed"
    assert statuses[items["old_pref"].candidate_id] == "accepted"
    detail = manager.show_item(items["chain"].logical_id)
    assert [(r.revision, r.status) for r in detail.revisions] == [(1, "superseded"), (2, "forgotten")]


def test_cli_audit_commands(repo: Path, manager: MemoryManager, seeded, invoke_cli) -> None:
    items, _ = seeded
    manager.close()  # the CLI process does the work

    rc, out, err = invoke_cli("memory", "list", json=True)
    assert rc == 0, err
    assert set(out) == {"items", "next"} and out["next"] is None
    assert [i["id"] for i in out["items"]] == [items["chain"].logical_id, items["decision"].logical_id,
                                               items["discussion"].logical_id, items["old_pref"].logical_id]
    assert all(set(i) == {"id", "kind", "subject", "statement", "strength", "origin", "recall_mode",
                          "applies_to_paths", "updated_at", "review"} for i in out["items"])  # + contracts §8
    assert {i["review"] for i in out["items"]} == {"new"}

    rc, out, err = invoke_cli("memory", "list", "--kind", "user_preference", json=True)
    assert rc == 0 and [i["id"] for i in out["items"]] == [items["old_pref"].logical_id]

    rc, out, err = invoke_cli("memory", "show", items["decision"].logical_id, json=True)
    assert rc == 0, err
    assert out["status"] == "active" and out["sources"][1] == {
        "turn_id": out["sources"][1]["turn_id"], "role": "user", "quote": "yes, delete the legacy schema"}

    rc, out, err = invoke_cli("memory", "forget", items["decision"].logical_id)
    assert rc == 0, err
    assert items["decision"].logical_id in out
    assert "raw" in out.lower() and "kept" in out.lower()

    rc, out, err = invoke_cli("memory", "forget", items["decision"].logical_id)
    assert rc == 1, (out, err)
    assert "not active" in err

    rc, out, err = invoke_cli("memory", "show", items["decision"].logical_id, json=True)
    assert rc == 0 and out["status"] == "forgotten"

    rc, out, err = invoke_cli("memory", "show", "mem-")
    assert rc == 2, (out, err)
    assert "ambiguous" in err
